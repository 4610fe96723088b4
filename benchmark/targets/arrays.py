"""The ``arrays`` section: a float64 NumPy array stored as typed binary, against numpy.save
and h5py."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msglc

from ..experiment import h5_chunk
from ..timing import best_of, interleaved, per_call
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

                def h5_item(p: tuple[int, int], d: Any = ds) -> Any:
                    return d[p]

                h5 = per_call(h5_item, points[: max(200, reads // 5)])
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
    rows.append(_slab_row(a, path, tmp))
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


SLAB = 64  # the side of a slab read
SLAB_CHUNK = 128  # h5py's chunk side for the slab peer


def _slab_row(a: Any, path: Path, tmp: Path) -> Row:
    """64 x 64 slabs at random places, against h5py with 128 x 128 chunks (1 to 4 chunks
    a slab), in turns."""
    import h5py
    import numpy as np

    n = a.shape[0]
    side = min(SLAB, n)
    rng = random.Random(11)
    corners = [(rng.randrange(n - side + 1), rng.randrange(n - side + 1)) for _ in range(200)]
    h5path = tmp / "array-chunked.h5"
    chunk = min(SLAB_CHUNK, n)
    with h5py.File(fresh(h5path), "w") as f:
        f.create_dataset("a", data=a, chunks=(chunk, chunk))
    with msglc.LazyReader(path, cached=False) as reader, h5py.File(h5path, "r") as f:
        lazy, ds = reader.read(), f["a"]
        i, j = corners[0]
        assert np.array_equal(lazy[i : i + side, j : j + side], ds[i : i + side, j : j + side])

        def ours() -> None:
            for i, j in corners:
                lazy[i : i + side, j : j + side]

        def h5() -> None:
            for i, j in corners:
                ds[i : i + side, j : j + side]

        best = interleaved({"ours": ours, "h5": h5}, rounds=7)
    ratio = best["ours"] / best["h5"]
    per = {k: v / len(corners) * 1e6 for k, v in best.items()}
    return Row(
        f"{side}x{side} slab lazy[i:i+{side}, j:j+{side}] / h5py ({chunk}x{chunk} chunks)",
        ratio,
        "<= 1.0",
        ratio <= 1.0,
        f"{per['ours']:.1f}us vs {per['h5']:.1f}us",
    )
