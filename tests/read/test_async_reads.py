"""The async API against a slow file system: batched reads go out together and never block
the event loop. Needs fsspec (a memory file system behind a fixed latency), no S3 server."""

from __future__ import annotations

import asyncio
import time

import pytest
from archives import RUNS_DOC as DOC

import msglc
from msglc import LazyReader

SMALL = {"small_obj_optimization_threshold": 1024}


@pytest.mark.asyncio
async def test_async_reads_do_not_block_the_loop():
    fsspec = pytest.importorskip("fsspec")
    from tools.remote import LatencyFileSystem  # needs fsspec

    inner = fsspec.filesystem("memory")
    inner.pipe_file("/slow/doc.mlc", msglc.dumps(DOC, **SMALL))
    slow = LatencyFileSystem(inner, latency=0.2)
    with LazyReader("/slow/doc.mlc", fs=slow, block_size=4096) as r:
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        start = time.perf_counter()
        values = await r.async_read_many([f"runs/{i}/energy/{i % 50}" for i in range(0, 300, 7)])
        elapsed = time.perf_counter() - start
        task.cancel()
    assert values == [float(i + i % 50) for i in range(0, 300, 7)]
    assert 0.2 < elapsed < 2  # a few rounds of 0.2 s, not one per path
    assert ticks >= elapsed / 0.01 / 3  # the loop kept running meanwhile
