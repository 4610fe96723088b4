"""``msglc-js`` against ``msglc``: the same output, byte for byte, for info, ls and get (JSON
and msgpack), and the same exit statuses and one-line error messages (after the command's
name) for a missing file, a file that is not an archive, a missing key and bad arguments."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsread import ROOT, js_cli, js_cli_many, py_cli

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def g(name: str) -> str:
    return str((GOLDEN / name).relative_to(ROOT))


SAME_OUTPUT = [
    ("info", g("numpy.mlc")),
    ("info", g("appended.mlc")),
    ("info", g("hash-dict-zstd.mlc")),
    ("info", g("scalar.mlc")),
    ("info", g("combined.mlc")),
    ("ls", g("numpy.mlc")),
    ("ls", g("appended.mlc")),
    ("ls", g("hash-dict.mlc"), "--limit", "5"),
    ("ls", g("combined.mlc"), "runs"),
    ("ls", g("int-keys.mlc"), "", "--limit", "3"),
    ("ls", g("matrix.mlc"), "3"),
    ("ls", g("small-dict.mlc")),
    ("get", g("numpy.mlc"), ""),
    ("get", g("numpy.mlc"), "f8/2/3"),
    ("get", g("small-dict.mlc"), "c"),
    ("get", g("int-keys.mlc"), ""),
    ("get", g("appended.mlc"), "z/1:4"),
    ("get", "--indent", "2", g("numpy.mlc"), ""),
    ("get", "--indent", "0", g("combined.mlc"), "x"),
    ("get", "--format", "msgpack", g("appended.mlc"), ""),
    ("get", "--format", "msgpack", g("appended.mlc"), "y"),
    ("get", "--format", "msgpack", g("tiled-zstd.mlc"), ""),
    ("get", "--format", "msgpack", g("tiled-zstd.mlc"), "u2"),
    ("get", "--format", "msgpack", g("streamed.mlc"), "gen"),
    ("get", "--format", "msgpack", g("numpy.mlc"), "rec/3"),
    ("get", "--format", "msgpack", g("matrix.mlc"), "5"),
]


@pytest.fixture(scope="module")
def js_answers():
    """msglc-js's answer to every command of this file, from one node process."""
    commands = SAME_OUTPUT + [args for args, _ in ERRORS]
    return dict(zip(commands, js_cli_many(commands), strict=True))


@pytest.mark.parametrize("args", [SAME_OUTPUT[0], SAME_OUTPUT[-1], ("get", g("small-dict.mlc"))])
def test_the_command_run_alone_answers_as_in_a_batch(js_answers, args):
    """The real process (its exit status, its stdout) gives what main() gives in one."""
    assert js_cli(*args) == js_answers[args]


@pytest.mark.parametrize("args", SAME_OUTPUT, ids=lambda a: " ".join(a))
def test_the_same_output_as_msglc(js_answers, args):
    py = py_cli(*args)
    js = js_answers[args]
    assert js[0] == py[0] == 0, js[2]
    assert js[1] == py[1]


ERRORS = [
    (("get", "no-such-file.mlc", "a"), 1),
    (("get", "README.md", "a"), 1),
    (("get", g("small-dict.mlc"), "zzz"), 1),
    (("get", g("hash-dict.mlc"), "key-12x"), 1),
    (("get", g("block-list.mlc"), "400"), 1),
    (("get", g("scalar.mlc"), "a"), 1),
    (("ls", g("small-dict.mlc"), "a"), 1),
    (("info", "no-such-file.mlc"), 1),
    (("get", g("small-dict.mlc")), 2),
    (("get", "--format", "xml", g("small-dict.mlc"), "a"), 2),
    (("get", "--format", "msgpack", "--indent", "2", g("small-dict.mlc"), "a"), 2),
]


@pytest.mark.parametrize(("args", "status"), ERRORS, ids=lambda a: " ".join(a) if isinstance(a, tuple) else str(a))
def test_the_same_errors_as_msglc(js_answers, args, status):
    py = py_cli(*args)
    js = js_answers[args]
    assert py[0] == js[0] == status
    assert js[1] == b""
    assert js[2].count("\n") == 1, js[2]  # one line
    py_text = py[2].split(": ", 1)[1]
    js_text = js[2].split(": ", 1)[1]
    if args[1] == "README.md":  # the reader's own wording of what it found
        assert js_text.startswith("README.md: not an msglc archive"), js_text
    elif status == 2:
        assert js[2].startswith(f"msglc-js {args[0]}: "), js[2]
    else:
        assert js_text == py_text


@pytest.fixture(scope="module")
def big_dicts(tmp_path_factory):
    """Dicts of more than 10,000 keys: the hint probes keys one edit away instead of listing."""
    import msglc

    path = tmp_path_factory.mktemp("big") / "big.mlc"
    msglc.dump(path, {"table": {f"key{i:06d}": i for i in range(12000)}, "n": {i * 3: 0 for i in range(11000)}})
    return str(path)


MISSING = ["table/key00123x", "table/kye001234", "table/KEY001234", "table/zzzz", "n/301"]


def test_the_same_hint_for_a_missing_key_of_a_big_dict(big_dicts):
    commands = [("get", big_dicts, path) for path in MISSING]
    for args, js in zip(commands, js_cli_many(commands), strict=True):
        py = py_cli(*args)
        assert py[0] == js[0] == 1, args
        assert js[2].split(": ", 1)[1] == py[2].split(": ", 1)[1]
