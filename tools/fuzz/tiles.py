"""Tiled NumPy arrays (format 2.1) round-tripped against NumPy, and their headers crafted."""

from __future__ import annotations

import random
import struct
from typing import Any

import msgspec
import numpy as np

import msglc
from msglc import LazyArray, MsglcError
from msglc.format.numpy_ext import ext_hook

from .values import same_exactly

# ---- tiled arrays (format 2.1) ----------------------------------------------------------------

_TILE_DTYPES: list[Any] = ["<f8", ">f4", "<i2", ">i8", "u1", "?", "<c8", "S3", "<U2", [("a", "<i2"), ("b", ">f8")]]


def _tile_array(rng: random.Random, shape: tuple[int, ...], dtype: Any) -> Any:
    size = int(np.prod(shape))
    if dtype.kind == "b":
        return np.array([rng.random() < 0.5 for _ in range(size)], dtype).reshape(shape)
    if dtype.kind == "U":
        return (np.arange(size) % 97).astype(dtype).reshape(shape)
    return np.frombuffer(rng.randbytes(size * dtype.itemsize), dtype).reshape(shape).copy()


def _basic_index(rng: random.Random, shape: tuple[int, ...]) -> tuple[Any, ...]:
    key: list[Any] = []
    for n in shape[: rng.randint(0, len(shape))]:
        c = rng.random()
        if c < 0.3 and n:
            key.append(rng.randrange(-n, n))
        else:
            step = rng.choice([1, 1, 2, 3, 5, -1, -4])
            key.append(slice(rng.randint(-n - 2, n + 2), rng.randint(-n - 2, n + 2), step))
    if rng.random() < 0.3:
        key.insert(rng.randint(0, len(key)), Ellipsis)
    if rng.random() < 0.2:
        key.insert(rng.randint(0, len(key)), None)
    return tuple(key)


def _crafted_tiles(rng: random.Random, shape: tuple[int, ...]) -> list[Any]:
    """Array headers' third (and fourth) elements that a reader must refuse."""
    n = len(shape)
    good = [max(1, d) for d in shape]
    k = rng.randrange(n)
    return [
        [*good, 1],  # one size too many
        good[:-1],  # one too few
        [*good[:k], 0, *good[k + 1 :]],  # a size of 0
        [*good[:k], max(shape[k], 1) + 1 + rng.randint(0, 5), *good[k + 1 :]],  # longer than the axis
        [*good[:k], -rng.randint(1, 9), *good[k + 1 :]],
        [*good[:k], float(good[k]), *good[k + 1 :]],
        [*good[:k], True, *good[k + 1 :]],
        [*good[:k], 2**40, *good[k + 1 :]],
        [*good[:k], [good[k]], *good[k + 1 :]],
        "tiles",
        None,
        {"t": good},
    ]


def fuzz_tiles(cases: int = 200, seed: int = 0) -> list[str]:
    """Tiled NumPy arrays (format 2.1): ``cases`` random shapes (2 to 4 axes, some empty),
    tiles and dtypes, written with ``tiles=`` and read back whole, by basic indexing against
    NumPy, and by ``verify()``; and for each, crafted array headers (a tile of the wrong
    length, sizes out of range or of other types, a fourth element) that reads must refuse
    with an ``MsglcError``, before allocating anything. Returns what went wrong."""
    from msglc.format.numpy_ext import parse_head

    rng = random.Random(seed)
    problems: list[str] = []
    for case in range(cases):
        ndim = rng.randint(2, 4)
        shape = tuple(rng.choice([0, 1]) if rng.random() < 0.05 else rng.randint(1, 14) for _ in range(ndim))
        tile = tuple(rng.randint(1, max(n, 1)) for n in shape)
        dtype = np.dtype(rng.choice(_TILE_DTYPES))
        a = _tile_array(rng, shape, dtype)
        where = f"tiles case {seed}:{case} shape {shape} tile {tile} dtype {dtype}"
        try:
            data = msglc.dumps(
                {"a": a}, compression="zstd", tiles=tile, small_obj_optimization_threshold=rng.choice([1, 64, 1 << 20])
            )
            with msglc.LazyReader(data) as r:
                if not same_exactly(r.to_obj()["a"], a):
                    problems.append(f"{where}: to_obj() differs")
                lazy = r["a"]
                if isinstance(lazy, LazyArray):
                    if not same_exactly(np.asarray(lazy), a):
                        problems.append(f"{where}: np.asarray differs")
                    for _ in range(4):
                        key = _basic_index(rng, shape)
                        try:
                            expected = a[key]
                        except IndexError:
                            continue
                        if not same_exactly(np.asarray(lazy[key]), np.asarray(expected)):
                            problems.append(f"{where}: [{key}] differs")
                r.verify()
        except Exception as e:  # noqa: BLE001 (every failure is reported, with its case)
            problems.append(f"{where}: {type(e).__name__}: {e}")
        descr = np.lib.format.dtype_to_descr(dtype)
        elements = a.tobytes()
        for extra in [[c] for c in _crafted_tiles(rng, shape)] + [[list(tile), 1]]:  # (a fourth element last)
            fields = [descr, list(shape), *extra]
            header = msgspec.msgpack.encode(fields)
            value = msgspec.msgpack.encode(msgspec.msgpack.Ext(78, struct.pack("<I", len(header)) + header + elements))
            for read in ("ext_hook", "parse_head"):
                try:
                    if read == "ext_hook":
                        msgspec.msgpack.decode(value, ext_hook=ext_hook)
                    else:
                        parse_head(value, 0, len(value))
                    problems.append(f"{where}: header {fields[2:]!r:.60} read by {read} without error")
                except MsglcError:
                    pass
                except Exception as e:  # noqa: BLE001
                    problems.append(f"{where}: header {fields[2:]!r:.60} gave {type(e).__name__} by {read}: {e}")
    return problems
