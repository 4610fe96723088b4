"""``msglc.format`` is the file format alone: layouts and pure functions on bytes, no I/O
(docs/architecture.md). Whatever reads a file, or keeps what it read, belongs to ``io`` or
``read``: a lookup engine that reads through an archive's ``read`` (as the hash index's did,
before it moved to ``read/dict_index.py``) is refused here, as is any import beyond the pure
modules below."""

import ast
from pathlib import Path

import pytest

import msglc.format

FORMAT = Path(msglc.format.__path__[0])

# what format code may import: computation on bytes and numbers (numpy only inside functions)
PURE_MODULES = {
    "__future__",
    "array",
    "bisect",
    "codecs",
    "collections.abc",
    "itertools",
    "math",
    "msgpack",  # its Unpacker: msgpack walked a window at a time (walk.py)
    "msgspec",
    "numpy",
    "operator",
    "re",
    "struct",
    "sys",
    "typing",
    "zlib",
    "msglc.errors",
    "msglc.util",  # as ``from msglc.util import accel``: the C accelerator's pure functions
    "msglc.util.accel",
}

# calls that read or write a file, a socket or a source
IO_METHODS = {"read", "readinto", "read_into", "pread", "preadv", "write", "seek", "fetch", "fetch_many", "recv"}


def _problems(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            names = [node.module]
        for name in names:
            assert isinstance(node, ast.stmt)  # an import: it has a line
            if name not in PURE_MODULES and not name.startswith("msglc.format"):
                found.append(f"line {node.lineno}: imports {name}")
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "open":
                found.append(f"line {node.lineno}: calls open()")
            if isinstance(func, ast.Attribute) and func.attr in IO_METHODS:
                found.append(f"line {node.lineno}: calls .{func.attr}()")
    return found


@pytest.mark.parametrize("path", sorted(FORMAT.glob("*.py")), ids=lambda p: p.name)
def test_format_modules_do_no_io(path):
    assert _problems(path) == []


def test_the_check_finds_a_lookup_that_reads_through_a_source(tmp_path):
    engine = tmp_path / "engine.py"
    engine.write_text("import os\n\ndef page(a, at):\n    return a.read(at, 12), open('x'), os.pread(3, 1, 0)\n")
    assert _problems(engine) == [
        "line 1: imports os",
        "line 4: calls .read()",
        "line 4: calls open()",
        "line 4: calls .pread()",
    ]
