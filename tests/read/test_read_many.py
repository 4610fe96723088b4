"""Batched and async reads of local archives (files and bytes): ``read_many``,
``async_read_many``, ``async_to_obj``. The same engine serves remote archives:
tests/remote/test_s3.py runs these cases against an S3 server."""

from __future__ import annotations

from typing import Any

import pytest
from archives import RUNS_DOC as DOC
from archives import check_async_api, check_read_many, check_read_many_failures

import msglc
from msglc import LazyReader, LazyStats

SMALL: dict[str, Any] = {"small_obj_optimization_threshold": 1024}  # dump's **options


@pytest.fixture(params=["file", "bytes"])
def make(request, tmp_path):
    """Makes a fresh reader of DOC from a local file or from bytes."""
    path = tmp_path / "doc.mlc"
    msglc.dump(path, DOC, **SMALL)
    return (lambda: LazyReader(path)) if request.param == "file" else (lambda: LazyReader(path.read_bytes()))


def test_read_many_answers_in_order(make):
    check_read_many(make)


def test_read_many_raises_the_first_failure_in_order(make):
    check_read_many_failures(make)


def test_read_many_slices_and_counts_local_requests(tmp_path):
    doc = {"a": [{"x": i, "pad": "p" * 40} for i in range(2000)]}
    path = tmp_path / "slices.mlc"
    msglc.dump(path, doc, **SMALL)
    stats = LazyStats()
    paths = ["a/0:20:2000/x", "a/5/x"]
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
        await check_async_api(r)
