"""The JavaScript reader over HTTP: a local Range server (js/test/support/range-server.mjs)
serves archives; the reader reads the same values as from the file, within the issue's request
budget (target 3): opening costs at most 2 requests; one element of a matrix or one key of a
hash-indexed dict at most 2 more; a compressed archive at most 1 more for its seek table."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from jsread import JS, api_expected, js_read, require_dist, same_api

import msglc

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SERVER = JS / "test" / "support" / "range-server.mjs"

# (archive, path, extra requests allowed after opening)
READS = [
    ("matrix.mlc", "17/23", 2),
    ("hash-dict.mlc", "key-777", 2),
    ("matrix-zstd.mlc", "17/23", 3),
    ("hash-dict-zstd.mlc", "key-777", 3),
    ("numpy.mlc", "f8/3/4", 2),
]


@pytest.fixture(scope="module")
def server():
    require_dist()
    if not SERVER.exists():
        pytest.fail(f"{SERVER.relative_to(JS.parent)} is missing (the Range server the HTTP tests use)")
    files = sorted({GOLDEN / name for name, _, _ in READS})
    proc = subprocess.Popen(
        ["node", str(SERVER), *map(str, files)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1"), (
            f"the Range server printed {base!r}: {proc.stderr.read() if proc.poll() is not None else ''}"
        )
        yield base.rstrip("/")
    finally:
        proc.kill()
        proc.wait()


def served(base: str) -> list[dict[str, Any]]:
    """The requests the server logged since the last call (and forget them)."""
    with urllib.request.urlopen(f"{base}/__log?clear=1", timeout=10) as reply:
        log: list[dict[str, Any]] = json.loads(reply.read())
    return log


@pytest.mark.parametrize(("name", "path", "budget"), READS)
def test_one_value_over_http_within_the_request_budget(server, name, path, budget):
    with msglc.LazyReader(str(GOLDEN / name)) as r:
        want = api_expected(r, path)
    served(server)
    (line,), stats = js_read(f"{server}/{name}", [path], "--api", "--no-cli", "--timeout-ms", "20000")
    log = served(server)
    assert len(log) == stats["stats"]["requests"], f"the server saw {len(log)} requests, the reader counted {stats}"
    assert same_api(want, line) is None, same_api(want, line)
    assert stats["opened"]["requests"] <= 2, f"opening took {stats['opened']['requests']} requests"
    extra = stats["stats"]["requests"] - stats["opened"]["requests"]
    assert extra <= budget, f"reading {path!r} took {extra} requests after opening (at most {budget})"


def test_every_value_over_http_is_the_file_s(server):
    name = "numpy.mlc"
    paths = ["", "f8", "i2/-1", "u/0:3", "rec", "scalar", "nope"]
    with msglc.LazyReader(str(GOLDEN / name)) as r:
        want = [api_expected(r, p) for p in paths]
    answers, _ = js_read(f"{server}/{name}", paths, "--api", "--timeout-ms", "20000")
    problems = [f"{p!r}: {d}" for p, w, a in zip(paths, want, answers, strict=True) if (d := same_api(w, a))]
    assert not problems, problems
