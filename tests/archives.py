"""Documents and archives that several test modules share: a document of runs for the read,
batch and remote tests, a small-threshold document for the damage and target tests, two runs
for combine and append, a thorough check of a result, and damage that only decoding sees."""

import os
import random
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import msgspec
import pytest

import msglc
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, unpack_trailer

# The documents are values of any shape, as a reader hands them back (msglc types them Any).
RUN1: dict[str, Any] = {
    "energy": [float(i) for i in range(3000)],
    "meta": {"name": "run1", "rows": [[i, i * 2] for i in range(400)]},
}
RUN2: dict[str, Any] = {"energy": [1.5, 2.5], "tags": ["a", "b"]}


# read, batch, async and remote tests (threshold 1 KB)
RUNS_DOC: dict[str, Any] = {
    "runs": [{"id": i, "energy": [float(i + j) for j in range(50)], "tag": f"r{i}"} for i in range(300)],
    "m": [[float(i * j) for j in range(120)] for i in range(120)],
    "blob": b"x" * 1000,
}

RUNS_PATHS = [
    "runs/5/tag",
    "m/3/4",
    "runs/5/tag",
    "blob",
    "runs/299/energy/0",
    "m/119",
    "runs/1:3",
    ["runs", 7, "id"],
    "runs/-1/id",
]

# damage and target tests (threshold 64 bytes: nodes everywhere)
SMALL_DOC: dict[str, Any] = {
    "list": list(range(300)),
    "rows": [[float(i), float(-i)] for i in range(40)],
    "map": {f"k{i}": "v" * (i % 5) for i in range(60)},
    "hash": {f"h{i}": i for i in range(1100)},
    "nested": [{"x": [i] * 10} for i in range(20)],
}


def write_runs(directory: Path) -> Path:
    msglc.dump(directory / "run1.mlc", RUN1, small_obj_optimization_threshold=256)
    msglc.dump(directory / "run2.mlc", RUN2)  # small: no TOC node
    return directory


def check(path: str | os.PathLike[str] | bytes, expected: object) -> None:
    """Everything a reader offers agrees with ``expected``, and the archive verifies."""
    with msglc.LazyReader(path) as r:
        r.verify()
        assert r.to_obj() == expected
        assert msgpack.unpackb(r.protocol_raw_data(), strict_map_key=False) == expected


def check_read_many(make: Callable[[], msglc.LazyReader]) -> None:
    """``read_many`` of a reader of RUNS_DOC (``make()`` opens one) answers like single reads."""
    with make() as r:
        expected = [msglc.to_obj(r[p]) for p in RUNS_PATHS]
    with make() as r:
        got = r.read_many(RUNS_PATHS)
        assert [msglc.to_obj(v) for v in got] == expected
        assert r.read_many([]) == []
        shuffled = random.Random(3).sample(range(300), 300)
        assert r.read_many([f"runs/{i}/id" for i in shuffled]) == shuffled


def check_read_many_failures(make: Callable[[], msglc.LazyReader]) -> None:
    """``read_many`` raises what the first failing path would, and the reader still works."""
    with make() as r:
        with pytest.raises(IndexError, match="runs/300"):
            r.read_many(["m/1/1", "runs/300/id", "nope"])
        with pytest.raises(KeyError, match="nope"):
            r.read_many(["m/1/1", "nope", "runs/300/id"])
        assert r.read_many(["m/2/2"]) == [4.0]


async def check_async_api(r: msglc.LazyReader) -> None:
    """The async API of a reader of RUNS_DOC."""
    assert await r.async_read("runs/42/energy/3") == 45.0
    assert await r.async_read_many(["m/2/3", "runs/1/tag"]) == [6.0, "r1"]
    assert await msglc.async_to_obj(r["runs"]) == RUNS_DOC["runs"]
    assert await msglc.async_to_obj(r) == RUNS_DOC
    assert await msglc.async_to_obj([r["m"], 5, [r["runs"][3]]]) == [RUNS_DOC["m"], 5, [RUNS_DOC["runs"][3]]]
    with pytest.raises(KeyError):
        await r.async_read("runs/1/nope")


def with_data(archive: bytes, change: Callable[[bytearray], object]) -> bytes:
    """``archive`` (plain) with its data section changed in place by ``change(bytearray)``
    (same length) and the data checksum recomputed: only decoding (or the TOC's checks) can tell."""
    header = archive[:HEADER_SIZE]
    t = unpack_trailer(archive[-TRAILER_SIZE:], len(archive), header)
    data = bytearray(archive[t.data_off : t.data_off + t.data_len])
    change(data)
    fixed = msgspec.structs.replace(t, data_crc=zlib.crc32(data))
    return header + bytes(data) + archive[t.toc_off : -TRAILER_SIZE] + fixed.pack(header)


def near_duplicates(families: int = 40, members: int = 6, words: int = 1200, seed: int = 5) -> dict[str, Any]:
    """``{name: document}``: ``families`` groups of ``members`` documents (about 40 KB each)
    that differ in one word, one group after another; groups share nothing but their keys.
    Each document repeats its neighbour, farther back than a frame (as cldr-dates' locales)."""
    rng = random.Random(seed)
    out: dict[str, Any] = {}
    for f in range(families):
        base = [rng.randbytes(16).hex() for _ in range(words)]
        for m in range(members):
            doc = list(base)
            doc[rng.randrange(words)] = "changed"
            out[f"f{f:03d}-m{m}"] = {"family": f, "member": m, "words": doc}
    return out
