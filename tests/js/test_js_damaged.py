"""Damaged archives (bit flips and truncations of plain and compressed ones): the JavaScript
reader gives the right value or one of its documented errors, never another exception, a
hang or a crash.

"Right" is what either Python reader gives: the undamaged archive's value, or the value
Python's reader reads from the same damaged bytes (a flipped bit inside a value that no
checksum covers on a lazy read is read as it is, by both)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from jsread import api_expected, js_read_many, py_comparable, same_value, untag

import msglc

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
ARCHIVES = ["hash-dict.mlc", "hash-dict-zstd.mlc", "matrix.mlc", "numpy-zstd.mlc", "block-list.mlc", "appended.mlc"]
PATHS = {
    "hash-dict": ["", "key-0", "key-7", "key-1199", "key-600", "nope"],
    "matrix": ["", "0", "3/4", "39/39", "-1/-1", "40"],
    "numpy": ["", "f8", "f8/3/4", "i2/7", "u", "rec/2", "scalar"],
    "block-list": ["", "0", "17/tag", "399/id", "-1", "400"],
    "appended": ["", "h/key-3", "x", "y", "z/5", "z/399/tag", "q"],
}
DOCUMENTED = {
    "MsglcError",
    "NotAnArchiveError",
    "UnsupportedVersionError",
    "TruncatedError",
    "CorruptedError",
    "ArchiveChangedError",
    "KeyNotFoundError",
    "IndexOutOfRangeError",
}
FLIPS = 30
CUTS = 10


def _damaged(data: bytes, rng: random.Random) -> list[tuple[str, bytes]]:
    out = []
    for _ in range(FLIPS):
        b = bytearray(data)
        # the header, the trailer and the TOC (at the end) are hit more often than the data
        at = rng.choice([rng.randrange(len(b)), rng.randrange(max(0, len(b) - 600), len(b)), rng.randrange(16)])
        b[at] ^= 1 << rng.randrange(8)
        out.append((f"flip@{at}", bytes(b)))
    for _ in range(CUTS):
        n = rng.choice([rng.randrange(len(data)), len(data) - rng.randrange(1, 80)])
        out.append((f"cut@{n}", data[:n]))
    return out


def _py_value(path: Path, p: str) -> tuple[str, object]:
    try:
        with msglc.LazyReader(str(path)) as r:
            return api_expected(r, p)
    except Exception as e:  # the damaged archive: any failure of Python's means "no value"
        return "error", type(e)


@pytest.mark.parametrize("name", ARCHIVES)
def test_damaged_archives_give_right_values_or_documented_errors(tmp_path, name):
    source = GOLDEN / name
    paths = PATHS[name.removesuffix(".mlc").removesuffix("-zstd")]
    with msglc.LazyReader(str(source)) as r:
        good = [api_expected(r, p) for p in paths]
    rng = random.Random(name)
    cases = []
    for label, data in _damaged(source.read_bytes(), rng):
        path = tmp_path / f"{label}.mlc"
        path.write_bytes(data)
        cases.append((label, path))
    answers = js_read_many([p for _, p in cases], paths, "--api", "--no-cli", "--timeout-ms", "10000", timeout=240)
    problems = []
    for (label, path), got in zip(cases, answers, strict=True):
        for p, want, line in zip(paths, good, got["lines"], strict=True):
            if "apiError" in line:
                cls = line["apiError"]["error"]
                if cls not in DOCUMENTED:
                    problems.append(f"{label} {p!r}: {cls}: {line['apiError']['message']}")
                continue
            value = untag(line["value"])
            if want[0] == "value" and same_value(want[1], value):
                continue
            kind, damaged = _py_value(path, p)
            if kind == "value" and same_value(damaged, value):
                continue
            problems.append(f"{label} {p!r}: a wrong value {str(value)[:120]}")
    assert not problems, f"{len(problems)} wrong answers:\n" + "\n".join(problems[:20])


def test_python_values_compare_as_js_ones():
    """(The comparison the test above relies on.)"""
    assert same_value(py_comparable({"a": [1.0, float("nan")]}), {"a": [1, float("nan")]})
