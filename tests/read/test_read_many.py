"""Batched and async reads of local archives (files and bytes): ``read_many``,
``async_read_many``, ``async_to_obj``. The same engine serves remote archives:
tests/remote/test_s3.py runs these cases against an S3 server."""

from __future__ import annotations

import random

import pytest

import msglc
from msglc import LazyReader, LazyStats

SMALL = {"small_obj_optimization_threshold": 1024}


DOC = {
    "runs": [{"id": i, "energy": [float(i + j) for j in range(50)], "tag": f"r{i}"} for i in range(300)],
    "m": [[float(i * j) for j in range(120)] for i in range(120)],
    "blob": b"x" * 1000,
}


PATHS = [
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


@pytest.fixture(params=["file", "bytes"])
def make(request, tmp_path):
    """Makes a fresh reader of DOC from a local file or from bytes."""
    path = tmp_path / "doc.mlc"
    msglc.dump(path, DOC, **SMALL)
    return (lambda: LazyReader(path)) if request.param == "file" else (lambda: LazyReader(path.read_bytes()))


def test_read_many_answers_in_order(make):
    with make() as r:
        expected = [msglc.to_obj(r[p]) for p in PATHS]
    with make() as r:
        got = r.read_many(PATHS)
        assert [msglc.to_obj(v) for v in got] == expected
        assert r.read_many([]) == []
        shuffled = random.Random(3).sample(range(300), 300)
        assert r.read_many([f"runs/{i}/id" for i in shuffled]) == shuffled


def test_read_many_raises_the_first_failure_in_order(make):
    with make() as r:
        with pytest.raises(IndexError, match="runs/300"):
            r.read_many(["m/1/1", "runs/300/id", "nope"])
        with pytest.raises(KeyError, match="nope"):
            r.read_many(["m/1/1", "nope", "runs/300/id"])
        assert r.read_many(["m/2/2"]) == [4.0]  # the reader still works


def test_read_many_slices_and_counts_local_requests(tmp_path):
    doc = {"a": [{"x": i, "pad": "p" * 40} for i in range(2000)]}
    path = tmp_path / "slices.mlc"
    msglc.dump(path, doc, **SMALL)
    stats = LazyStats()
    paths = ["a/0:2000:20/x", "a/5/x"]
    with LazyReader(path, counter=stats) as r:
        assert [r[p] for p in paths] == [list(range(0, 2000, 20)), 5]
    loop = stats.requests
    stats.clear()
    with LazyReader(path, counter=stats) as r:
        assert r.read_many(paths) == [list(range(0, 2000, 20)), 5]
    assert loop - 5 <= stats.requests <= loop + 5  # counted like the loop's reads
    two = ["a/5/x", "a/1500/x"]
    with LazyReader(path, counter=stats) as r:
        stats.clear()
        assert [r[p] for p in two] == [5, 1500]
    loop = stats.requests
    with LazyReader(path, counter=stats) as r:
        stats.clear()
        assert r.read_many(two, max_gap=0) == [5, 1500]
        assert stats.requests >= loop  # every read of the batched rounds is counted


@pytest.mark.asyncio
async def test_async_api_local(make):
    with make() as r:
        assert await r.async_read("runs/42/energy/3") == 45.0
        assert await r.async_read_many(["m/2/3", "runs/1/tag"]) == [6.0, "r1"]
        assert await msglc.async_to_obj(r["runs"]) == DOC["runs"]
        assert await msglc.async_to_obj(r) == DOC
        assert await msglc.async_to_obj([r["m"], 5, [r["runs"][3]]]) == [DOC["m"], 5, [DOC["runs"][3]]]
        with pytest.raises(KeyError):
            await r.async_read("runs/1/nope")
