"""The ``arrays`` section: a float64 NumPy array stored as typed binary, against numpy.save
and h5py."""

from __future__ import annotations

import random
from pathlib import Path

import msglc

from ..experiment import h5_chunk
from ..timing import best_of, per_call
from .common import Row, fresh


def array_targets(n: int, reads: int, tmp: Path) -> list[Row]:
    """A float64 NumPy array stored as typed binary, against numpy.save and h5py."""
    import h5py
    import numpy as np

    a = np.random.default_rng(5).random((n, n))
    npy, path = tmp / "array.npy", tmp / "array.mlc"
    floor = best_of(lambda: np.save(npy, a), setup=lambda: fresh(npy), repeat=5)
    ours = best_of(lambda: msglc.dump(path, a), setup=lambda: fresh(path), repeat=5)
    rows = [
        Row(
            f"dump {n}x{n} float64 array / numpy.save",
            ours / floor,
            "<= 1.3",
            ours / floor <= 1.3,
            f"{ours:.3f}s vs {floor:.3f}s",
        )
    ]

    rng = random.Random(9)
    points = [(rng.randrange(n), rng.randrange(n)) for _ in range(reads)]
    with msglc.LazyReader(path, cached=False) as reader:
        lazy = reader.read()
        assert all(lazy[i, j] == a[i, j] for i, j in points[:50])
        ours = per_call(lambda p: lazy[p], points)
        for label, chunks in (("auto chunks", True), ("64 KB chunks", h5_chunk(65536, n))):
            h5path = tmp / "array.h5"
            with h5py.File(fresh(h5path), "w") as f:
                f.create_dataset("a", data=a, chunks=chunks)
            with h5py.File(h5path, "r") as f:
                ds = f["a"]
                h5 = per_call(lambda p, d=ds: d[p], points[: max(200, reads // 5)])
                shape = ds.chunks
            full = n >= 5000  # the target's size; a smaller array sits whole in h5py's chunk cache
            rows.append(
                Row(
                    f"random element a[i, j] / h5py ds[i, j] ({label} {shape[0]}x{shape[1]})",
                    ours / h5,
                    "<= 0.2" if full else "(target at 5000x5000)",
                    ours / h5 <= 0.2 or not full,
                    f"{ours * 1e6:.2f}us vs {h5 * 1e6:.2f}us",
                )
            )
    stats = msglc.LazyStats()
    with msglc.LazyReader(path, counter=stats) as reader:
        lazy = reader.read()
        stats.clear()
        i, j = n // 3, n // 2
        block = lazy[i : i + 100, j : j + 100]
        assert np.array_equal(block, a[i : i + 100, j : j + 100])
        rows.append(
            Row(
                "bytes read for a 100x100 block / the block's bytes",
                stats() / block.nbytes,
                "<= 2",
                stats() <= 2 * block.nbytes,
                str(stats),
            )
        )
        whole = best_of(lambda: np.asarray(lazy), repeat=3)
    load = best_of(lambda: np.load(npy), repeat=3)
    rows.append(
        Row(
            "read the whole array np.asarray(lazy) / numpy.load",
            whole / load,
            "(reported)",
            True,
            f"{whole:.3f}s vs {load:.3f}s",
        )
    )
    return rows
