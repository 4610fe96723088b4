"""The msglc command run in the test's own process, as a subprocess would see it.

A subprocess per call costs half a second of interpreter start and imports; the tests make
over a hundred calls. ``msglc.cli.main`` keeps no state between calls, so running it here with
its own standard streams and working directory observes the same exit status and output. A
few tests still start ``python -m msglc`` to check the real entry point and pipes.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from msglc.cli import main


class Streams:
    """Standard output as bytes and text (the CLI writes both), standard error as text."""

    def __init__(self, stdin: bytes) -> None:
        self.out = io.BytesIO()
        self.stdout = io.TextIOWrapper(self.out, encoding="utf-8", newline="\n", write_through=True)
        self.stderr = io.StringIO()
        self.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")


@contextmanager
def _redirected(streams: Streams, cwd: str | Path | None) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    here, columns = os.getcwd(), os.environ.get("COLUMNS")
    sys.stdin, sys.stdout, sys.stderr = streams.stdin, streams.stdout, streams.stderr
    os.environ["COLUMNS"] = "80"  # help text wrapped as on a pipe, whatever the terminal
    try:
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(here)
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
        sys.stdin, sys.stdout, sys.stderr = saved


def run_msglc(*args: object, cwd: str | Path | None = None, stdin: bytes = b"") -> tuple[int, bytes, str]:
    """``msglc args`` with ``stdin``, in ``cwd``: (exit status, stdout bytes, stderr)."""
    streams = Streams(stdin)
    with _redirected(streams, cwd):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse's usage errors and --help, as the process would exit
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        streams.stdout.flush()
    return code, streams.out.getvalue(), streams.stderr.getvalue()


_CHILD = """
import base64, json, sys
from cli_runner import run_msglc
for args in json.loads(sys.stdin.read()):
    code, out, err = run_msglc(*args)
    print(json.dumps([code, base64.b64encode(out).decode(), err]), flush=True)
"""


def run_msglc_in_child(commands: list[list[str]], env: dict[str, str] | None = None) -> list[tuple[int, bytes, str]]:
    """``run_msglc`` of each command in one new Python process: for what a fresh process
    brings (its default recursion limit, settings read from the environment at import)."""
    here = str(Path(__file__).parent)
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD], input=json.dumps(commands), capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == len(commands), proc.stderr[-4000:]
    return [(code, base64.b64decode(out), err) for code, out, err in answers]
