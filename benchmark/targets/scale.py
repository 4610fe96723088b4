"""The ``dask`` section (issue 19): an archive's NumPy array reduced by 1 and 2 Dask worker
processes (``msglc.dask.to_array``) and by h5py through Dask with the same chunks; a map and
filter over a list of records (``to_bag``) by 1 and 2 workers; ``to_archive`` against writing
its partitions alone. And, with the remote section, the S3 requests of one bag partition."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import msglc

from ..compressed import records
from .common import Row

COLUMNS = 1024


@contextlib.contextmanager
def cluster(workers: int) -> Iterator[Any]:
    from distributed import Client, LocalCluster

    # distributed's LocalCluster and Client, like dask's compute, delayed, from_array and
    # bag.range used below, have no annotations: each call of one is marked no-untyped-call
    with (
        LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,  # type: ignore[no-untyped-call]
    ):
        yield client


def _best(run: Callable[[], Any], repeat: int = 3) -> float:
    run()  # warm: workers started, archives opened once per process, files in the page cache
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t)
    return best


def array_files(array_mb: int, tmp: Path) -> tuple[Path, Path, Any, int]:
    """A random float64 array of about ``array_mb`` MB, rows of ``COLUMNS``, as an archive and
    as an HDF5 file (contiguous); its column sums, to check reductions against; its rows."""
    import h5py
    import numpy as np

    rows_n = max(1, array_mb * (1 << 20) // (8 * COLUMNS))
    data = np.random.default_rng(3).random((rows_n, COLUMNS))
    archive, h5 = tmp / "array.mlc", tmp / "array.h5"
    msglc.dump(archive, {"x": data})
    with h5py.File(h5, "w") as f:
        f["x"] = data
    return archive, h5, data.sum(axis=0), rows_n


def reduce_array(archive: Path, h5: Path | None, want: Any, chunk_rows: int | None = None) -> dict[str, Any]:
    """Best seconds of ``sum(axis=0)`` over the archive's array (``to_array``: ``chunk_rows``
    whole rows a chunk, by default its own) on the current Dask client, and over the HDF5
    dataset with the same chunks."""
    import numpy as np

    import msglc.dask as md

    x = md.to_array(archive, "x", chunks=None if chunk_rows is None else (chunk_rows, COLUMNS))

    def reduce(x: Any = x) -> None:
        assert np.allclose(x.sum(axis=0).compute(), want)

    out: dict[str, Any] = {"msglc": _best(reduce), "chunks": x.chunks}
    if h5 is not None:
        out["h5py"] = _h5py_reduce(h5, x.chunks, want)
    return out


def dask_targets(array_mb: int, n_records: int, tmp: Path) -> list[Row]:
    import msglc.dask as md

    archive, h5, want, _ = array_files(array_mb, tmp)
    recs = tmp / "records.mlc"
    msglc.dump(recs, records(n_records), small_obj_optimization_threshold=8192)
    times: dict[tuple[str, int], float] = {}
    for workers in (1, 2):
        with cluster(workers):
            reduced = reduce_array(archive, h5 if workers == 2 else None, want)
            times["array", workers] = reduced["msglc"]
            chunks = reduced["chunks"]
            bag = md.to_bag(recs, partition_size=max(1, n_records // 16))
            times["bag", workers] = _best(partial(_map_filter_count, bag))
            if workers == 2:
                times["h5py", 2] = reduced["h5py"]
                times["parts", 2], times["to_archive", 2] = _to_archive(bag, tmp)
    speedup = times["array", 1] / times["array", 2]
    vs_h5 = times["array", 2] / times["h5py", 2]
    write = times["to_archive", 2] / times["parts", 2]
    return [
        Row(
            f"{array_mb} MB array sum(axis=0), 2 workers vs 1 (to_array)",
            speedup,
            ">= 1.7",
            speedup >= 1.7,
            f"{times['array', 1]:.2f}s vs {times['array', 2]:.2f}s, chunks {chunks[0][0]} rows",
        ),
        Row(
            "the same, msglc / h5py through Dask (same chunks, 2 workers)",
            vs_h5,
            "<= 1",
            vs_h5 <= 1,
            f"{times['array', 2]:.2f}s vs h5py {times['h5py', 2]:.2f}s",
        ),
        Row(
            f"{n_records:,} records map/filter (to_bag), 2 workers vs 1",
            times["bag", 1] / times["bag", 2],
            "(reported)",
            True,
            f"{times['bag', 1]:.2f}s vs {times['bag', 2]:.2f}s",
        ),
        Row(
            "to_archive of 8 partitions / writing the partitions alone (2 workers)",
            write,
            "<= 1.2",
            write <= 1.2,
            f"{times['to_archive', 2]:.2f}s vs {times['parts', 2]:.2f}s",
        ),
    ]


def _map_filter_count(bag: Any) -> None:
    """The bag figure's work: a map and a filter over the records, computed by a count."""
    bag.map(lambda r: r["score"] * 2).filter(bool).count().compute()


def _h5py_reduce(h5: Path, chunks: Any, want: Any) -> float:
    import dask.array as da
    import h5py
    import numpy as np

    with h5py.File(h5, "r") as f:
        x = da.from_array(f["x"], chunks=chunks, lock=False)  # type: ignore[no-untyped-call]

        def reduce() -> None:
            assert np.allclose(x.sum(axis=0).compute(), want)

        return _best(reduce)


def _to_archive(bag: Any, tmp: Path) -> tuple[float, float]:
    """Seconds to write the bag's 8 partitions as archives (the floor), and to_archive's."""
    from dask.base import compute
    from dask.delayed import delayed

    import msglc.dask as md

    bag = bag.repartition(8)
    folder = tmp / "parts"
    folder.mkdir(exist_ok=True)

    def write(items: Any, k: int) -> None:
        msglc.dump(folder / f"{k}.mlc", list(items))

    def parts_alone() -> None:
        compute(*[delayed(write)(p, k) for k, p in enumerate(bag.to_delayed())])  # type: ignore[no-untyped-call]

    out = tmp / "joined.mlc"
    floor = _best(parts_alone, repeat=2)
    ours = _best(lambda: md.to_archive(bag, out), repeat=2)
    with msglc.LazyReader(out) as r:
        assert len(r.unwrap()) == bag.count().compute()
    return floor, ours


def partition_requests(url: str, storage_options: dict[str, Any]) -> Row:
    """S3 requests of one bag partition read as a worker reads it, its archive already open in
    that process (by the partition before it), against 2 + 1 per MB read. Counted at s3fs's
    ``_call_s3`` (every GetObject), the sync scheduler running the tasks here."""
    import msglc.dask as md

    bag = md.to_bag(url, storage_options=storage_options, partition_size=20_000)
    parts = bag.to_delayed()
    with _s3_gets() as gets:
        first = parts[0].compute(scheduler="sync")
        opened = len(gets)
        gets.clear()
        items = parts[min(1, len(parts) - 1)].compute(scheduler="sync")
        requests, mb = len(gets), sum(gets) / 1e6
    assert first and items
    return Row(
        "S3 requests for one bag partition (to_bag), after open",
        requests,
        "<= 2 + 1/MB",
        requests <= 2 + mb,
        f"{requests} requests for {len(items):,} records, {mb:.1f} MB; the first partition {opened} (with open)",
    )


@contextlib.contextmanager
def _s3_gets() -> Iterator[list[int]]:
    """The sizes of the GetObject answers s3fs receives while the block runs."""
    import s3fs

    sizes: list[int] = []
    inner = s3fs.S3FileSystem._call_s3

    async def counted(self: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        answer = await inner(self, method, *args, **kwargs)
        if method == "get_object":
            sizes.append(int(answer.get("ContentLength", 0)))
        return answer

    s3fs.S3FileSystem._call_s3 = counted
    try:
        yield sizes
    finally:
        s3fs.S3FileSystem._call_s3 = inner


def _record(i: int) -> dict[str, Any]:
    return {"id": i, "name": f"run-{i}", "score": i * 0.5, "tags": ["a", "b"][: i % 3], "text": "x" * 60}


def s3_to_archive(storage_options: dict[str, Any], records_n: int = 400_000) -> Row:
    """``to_archive`` of 8 partitions of about 6 MB into S3 by 2 workers, against the workers
    writing the partitions alone: the join copies them on the server (msglc.io.compose)."""
    import dask.bag as db
    from dask.base import compute
    from dask.delayed import delayed

    import msglc.dask as md

    bag = db.range(records_n, npartitions=8).map(_record)  # type: ignore[no-untyped-call]
    so = storage_options

    def write(items: Any, k: int) -> None:
        msglc.dump(f"s3://bench/alone/{k}.mlc", list(items), storage_options=so)

    def alone() -> None:
        compute(*[delayed(write)(p, k) for k, p in enumerate(bag.to_delayed())])  # type: ignore[no-untyped-call]

    with cluster(2):
        floor = _best(alone, 2)
        ours = _best(lambda: md.to_archive(bag, "s3://bench/joined.mlc", storage_options=so), 2)
    with msglc.LazyReader("s3://bench/joined.mlc", storage_options=so) as r:
        assert len(r.unwrap()) == records_n and r[records_n - 1] == _record(records_n - 1)
        size = r.info().file_size
    return Row(
        "to_archive of 8 partitions into S3 (moto) / writing them alone (2 workers)",
        ours / floor,
        "(reported)",
        True,
        f"{ours:.2f}s vs {floor:.2f}s, {size / 1e6:.0f} MB joined by server-side copy, which moto does "
        "in this process (S3 on its servers); target 3 is the local figure",
    )
