"""The ``tiles`` section (issue 32): a large float64 array in a compressed archive, stored as
N-d tiles (the default for arrays of 1 MiB and more), against h5py with hdf5plugin's Blosc2
(zstd level 3, byte shuffle) and Zstd (level 3) in 128 x 128 chunks, and against the same
archive with its elements in C order (``tiles=False``: what msglc wrote before tiles).

- a 64 x 64 slab at random places, each reader opened once (its caches warm as in use);
- the whole array, ``np.asarray`` with the default ``read_threads``, against ``ds[...]``;
- random elements, against the faster compressed peer;
- write time and size, on random and on smooth data.

Contenders take turns (``interleaved``) and the best of each is kept; the machine is shared.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msglc

from ..compressed import smooth_field
from ..timing import calls, interleaved
from .common import Row, fresh

CHUNKS = (128, 128)  # h5py's chunks: 128 KB of float64, as msglc's tiles at 4000 x 4000
SLAB = 64


def _h5_filters() -> dict[str, dict[str, Any]]:
    import hdf5plugin

    return {
        "blosc2": dict(hdf5plugin.Blosc2(cname="zstd", clevel=3, filters=hdf5plugin.Blosc2.SHUFFLE)),
        "zstd": dict(hdf5plugin.Zstd(clevel=3)),
    }


def tile_targets(n: int, reads: int, tmp: Path) -> list[Row]:
    import numpy as np

    rows: list[Row] = []
    for kind, a in (("random", np.random.default_rng(7).random((n, n))), ("smooth", smooth_field(n, n))):
        rows += _write_rows(kind, a, tmp)
        if kind == "random":
            rows += _read_rows(a, reads, tmp)
    return rows


def _write_rows(kind: str, a: Any, tmp: Path) -> list[Row]:
    import h5py

    filters = _h5_filters()
    paths = {
        "tiles": tmp / "tiles.mlc",
        "c-order": tmp / "c-order.mlc",
        "blosc2": tmp / "blosc2.h5",
        "zstd": tmp / "zstd.h5",
    }

    def h5(name: str) -> None:
        with h5py.File(paths[name], "w") as f:
            f.create_dataset("a", data=a, chunks=CHUNKS, **filters[name])

    best = interleaved(
        {
            "tiles": lambda: msglc.dump(paths["tiles"], a, compression="zstd"),
            "c-order": lambda: msglc.dump(paths["c-order"], a, compression="zstd", tiles=False),
            "blosc2": lambda: h5("blosc2"),
            "zstd": lambda: h5("zstd"),
        },
        rounds=3,
        setup=lambda name: fresh(paths[name]),
    )
    size = {name: p.stat().st_size for name, p in paths.items()}
    what = f"{a.shape[0]}x{a.shape[1]} {kind} float64, zstd"
    return [
        Row(
            f"{what}: dump (tiles) / h5py zstd-3 write",
            best["tiles"] / best["zstd"],
            "<= 1.0",
            best["tiles"] <= best["zstd"],
            f"{best['tiles']:.3f}s vs {best['zstd']:.3f}s; C-order frames {best['c-order']:.3f}s, "
            f"h5py blosc2 {best['blosc2']:.3f}s",
        ),
        Row(
            f"{what}: size (tiles) / h5py blosc2 zstd-3 + shuffle",
            size["tiles"] / size["blosc2"],
            "<= 1.0",
            size["tiles"] <= size["blosc2"],
            f"{size['tiles'] / 1e6:.1f} MB vs {size['blosc2'] / 1e6:.1f} MB; C-order frames "
            f"{size['c-order'] / 1e6:.1f} MB, h5py zstd-3 {size['zstd'] / 1e6:.1f} MB",
        ),
    ]


def _read_rows(a: Any, reads: int, tmp: Path) -> list[Row]:
    import h5py
    import numpy as np

    n = a.shape[0]
    rng = random.Random(11)
    corners = [(rng.randrange(n - SLAB), rng.randrange(n - SLAB)) for _ in range(max(20, reads // 50))]
    points = [(rng.randrange(n), rng.randrange(n)) for _ in range(reads)]
    with (
        msglc.LazyReader(tmp / "tiles.mlc") as tiled_reader,
        msglc.LazyReader(tmp / "c-order.mlc") as c_reader,
        h5py.File(tmp / "blosc2.h5", "r") as fb,
        h5py.File(tmp / "zstd.h5", "r") as fz,
    ):
        tiled, c_order, blosc2, zstd = tiled_reader.read(), c_reader.read(), fb["a"], fz["a"]
        assert tiled.tiles is not None and c_order.tiles is None
        i, j = corners[0]
        for x in (tiled, c_order, blosc2):
            assert np.array_equal(x[i : i + SLAB, j : j + SLAB], a[i : i + SLAB, j : j + SLAB])

        def slab(x: Any) -> Callable[[tuple[int, int]], Any]:
            return lambda c: x[c[0] : c[0] + SLAB, c[1] : c[1] + SLAB]

        def item(x: Any) -> Callable[[tuple[int, int]], Any]:
            return lambda p: x[p]

        slabs = interleaved({name: calls(slab(x), corners) for name, x in _named(tiled, c_order, blosc2, zstd)})
        whole = interleaved(
            {
                "tiles": lambda: np.asarray(tiled),
                "c-order": lambda: np.asarray(c_order),
                "blosc2": lambda: blosc2[...],
                "zstd": lambda: zstd[...],
            },
            rounds=5,
        )
        items = interleaved(
            {name: calls(item(x), points) for name, x in _named(tiled, c_order, blosc2, zstd)}, rounds=3
        )
    us = {name: t / len(corners) * 1e6 for name, t in slabs.items()}
    ius = {name: t / len(points) * 1e6 for name, t in items.items()}
    peer = min(ius["blosc2"], ius["zstd"])
    what = f"{n}x{n} random float64, zstd"
    return [
        Row(
            f"{what}: {SLAB}x{SLAB} slab (tiles) / h5py blosc2 zstd-3 + shuffle (128x128 chunks)",
            us["tiles"] / us["blosc2"],
            "<= 1.0",
            us["tiles"] <= us["blosc2"],
            f"{us['tiles']:.0f}us vs {us['blosc2']:.0f}us; C-order frames {us['c-order']:.0f}us, "
            f"h5py zstd-3 {us['zstd']:.0f}us",
        ),
        Row(
            f"{what}: np.asarray(lazy) (tiles, default read_threads) / h5py blosc2 ds[...]",
            whole["tiles"] / whole["blosc2"],
            "<= 0.8",
            whole["tiles"] <= 0.8 * whole["blosc2"],
            f"{whole['tiles']:.3f}s vs {whole['blosc2']:.3f}s; C-order frames {whole['c-order']:.3f}s, "
            f"h5py zstd-3 {whole['zstd']:.3f}s",
        ),
        Row(
            f"{what}: random element (tiles) / the faster of h5py blosc2, zstd-3",
            ius["tiles"] / peer,
            "<= 0.5",
            ius["tiles"] <= 0.5 * peer,
            f"{ius['tiles']:.1f}us vs {peer:.1f}us; C-order frames {ius['c-order']:.1f}us",
        ),
    ]


def _named(tiled: Any, c_order: Any, blosc2: Any, zstd: Any) -> list[tuple[str, Any]]:
    return [("tiles", tiled), ("c-order", c_order), ("blosc2", blosc2), ("zstd", zstd)]
