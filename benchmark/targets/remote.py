"""The ``remote`` section (opt-in, ``--remote``): the matrix archive in S3 (moto on loopback,
through s3fs), and behind a fixed latency per request."""

from __future__ import annotations

import random
import time
from pathlib import Path

import msglc

from ..compressed import records
from .common import Row, random_matrix
from .scale import partition_requests, s3_to_archive


def remote_targets(n: int, tmp: Path) -> list[Row]:
    """The matrix archive in S3 (moto on loopback, through s3fs): requests to open and to read
    an element, read_many against one-by-one reads; then behind 20 ms of latency per request."""
    import fsspec

    from tools.remote import LatencyFileSystem, s3_server

    matrix = random_matrix(n)
    rng = random.Random(5)
    points = [f"{rng.randrange(n)}/{rng.randrange(n)}" for _ in range(1000)]
    expected = [matrix[int(p.split("/")[0])][int(p.split("/")[1])] for p in points]
    rows: list[Row] = []
    with s3_server() as so:
        fsspec.filesystem("s3", **so).mkdir("bench")
        url = "s3://bench/matrix.mlc"
        t = time.perf_counter()
        msglc.dump(url, matrix, storage_options=so)
        rows.append(
            Row(f"dump {n}x{n} matrix to S3 (moto)", time.perf_counter() - t, "(reported, s)", True, "streamed upload")
        )
        stats = msglc.LazyStats()
        with msglc.LazyReader(url, storage_options=so, counter=stats) as reader:
            opened = stats.requests
            stats.clear()
            assert reader[n // 3][n // 2] == matrix[n // 3][n // 2]
            element = stats.requests
        rows.append(Row("S3 requests to open the matrix archive", opened, "<= 2", opened <= 2))
        rows.append(Row("S3 requests for one random element after open", element, "<= 2", element <= 2))
        with msglc.LazyReader(url, storage_options=so) as reader:
            t = time.perf_counter()
            assert reader.read_many(points) == expected
            many = time.perf_counter() - t
        sample = 100 if n >= 5000 else 300
        with msglc.LazyReader(url, storage_options=so) as reader:
            t = time.perf_counter()
            assert [reader[p] for p in points[:sample]] == expected[:sample]
            one = (time.perf_counter() - t) / sample * len(points)
        rows.append(
            Row(
                "read_many of 1000 random elements / one by one, S3 (moto)",
                many / one,
                "<= 0.05",
                many / one <= 0.05,
                f"{many:.2f}s vs {one:.1f}s (one by one: {sample} timed, scaled to 1000)",
            )
        )
        runs = "s3://bench/records.mlc"
        msglc.dump(runs, records(100_000), storage_options=so, small_obj_optimization_threshold=8192)
        rows.append(partition_requests(runs, so))
        rows.append(s3_to_archive(so))
    local = tmp / "matrix.mlc"
    msglc.dump(local, matrix)
    slow = LatencyFileSystem(fsspec.filesystem("file"), latency=0.02, bandwidth=100e6)
    with msglc.LazyReader(str(local), fs=slow) as reader:
        t = time.perf_counter()
        assert reader.read_many(points[:100]) == expected[:100]
        trips = (time.perf_counter() - t) / slow.latency
    rows.append(Row("read_many of 100 random elements, 20 ms per request: round trips", trips, "< 10", trips < 10))
    rows += _block_sizes(local, slow, n, rng)
    return rows


def _block_sizes(local: Path, slow: object, n: int, rng: random.Random) -> list[Row]:
    """Read-ahead: random elements and rows in order, 20 ms and 100 MB/s per request."""
    rows = []
    for block in (16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20):
        with msglc.LazyReader(str(local), fs=slow, block_size=block, cached=False) as reader:
            t = time.perf_counter()
            for _ in range(20):
                reader[rng.randrange(n)][rng.randrange(n)]
            random_ms = (time.perf_counter() - t) / 20 * 1e3
            t = time.perf_counter()
            for i in range(100):
                reader[i][n - 1]
            ordered_ms = (time.perf_counter() - t) / 100 * 1e3
        rows.append(
            Row(
                f"block size {block >> 10} KB, 20 ms/request: ms per random element",
                random_ms,
                "(reported)",
                True,
                f"{ordered_ms:.2f} ms per element reading rows in order",
            )
        )
    return rows
