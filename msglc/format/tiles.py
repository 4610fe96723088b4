"""The tiled layout of a NumPy array's elements (format 2.1, docs/format.md, "NumPy arrays").

A tiled array stores its elements tile by tile: the tiles in C order over the tile grid
(``ceil(shape[i] / tile[i])`` tiles along axis i), each tile's elements in C order of its own
shape, the tiles at the far edge of an axis clipped to the array. Pure layout arithmetic on
NumPy arrays: no I/O.

The layout has a property that keeps every copy here a handful of NumPy calls: along each
axis the tiles are either full (``tile[i]`` long) or the one edge tile, and the tiles that
are full or edge on the same axes (a "part" of the grid) lie at offsets linear in their grid
position. So a part is one strided view of the tile-ordered elements, and converting between
the tiled and the C layout takes one strided copy per part: at most ``2 ** ndim`` of them
(``MAX_TILED_NDIM`` bounds ndim), whatever the number of tiles.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from itertools import product
from math import prod
from typing import Any

MAX_TILED_NDIM = 16  # a tiled array has at most this many axes: at most 2**16 parts to copy
TILE_BYTES = 1 << 17  # bytes of a tile that writers choose: about 128 KB, as HDF5's and zarr's guessers aim


def tile_error(tile: Any, shape: tuple[int, ...]) -> str | None:
    """Why ``tile`` is not a valid tile shape of an array of ``shape``, or None: a list of
    ``len(shape)`` ints, each in 1..shape[i] (1 for an empty axis), at most ``MAX_TILED_NDIM``."""
    if not isinstance(tile, (list, tuple)) or len(tile) != len(shape):
        return f"tile {tile!r:.80} is not a list of {len(shape)} sizes (one per axis of shape {shape})"
    if not 1 <= len(shape) <= MAX_TILED_NDIM:
        return f"a tiled array has 1 to {MAX_TILED_NDIM} axes, not {len(shape)}"
    for t, n in zip(tile, shape, strict=True):
        if type(t) is not int or not 1 <= t <= max(n, 1):
            return f"tile {tuple(tile)!r:.80} does not fit shape {shape} (each size in 1..the axis's length)"
    return None


def grid(shape: tuple[int, ...], tile: tuple[int, ...]) -> tuple[int, ...]:
    """Tiles along each axis."""
    return tuple(-(-n // t) for n, t in zip(shape, tile, strict=True))


def extent(n: int, t: int, g: int) -> int:
    """Length along an axis of ``n`` elements of tile ``g`` (of ``t``; the last clipped)."""
    return min(t, n - g * t)


def tile_start(shape: tuple[int, ...], tile: tuple[int, ...], g: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    """(first element of tile ``g`` in the tile order, the tile's extents): tile g lies after
    the sub-slabs before it at every level of the grid, each ``t_k`` times the extents of the
    axes before k (fixed by g) times the lengths of those after."""
    ext = [extent(n, t, i) for n, t, i in zip(shape, tile, g, strict=True)]
    at = 0
    before = 1
    after = prod(shape)
    for k, (n, t, i) in enumerate(zip(shape, tile, g, strict=True)):
        after //= n
        at += i * t * before * after
        before *= ext[k]
    return at, tuple(ext)


def tile_at(shape: tuple[int, ...], tile: tuple[int, ...], e: int) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The tile holding element ``e`` of the tile order: (grid position, extents, its first
    element). The inverse of ``tile_start``, axis by axis: the sub-slabs before the one
    holding ``e`` are full."""
    g, ext = [], []
    at, before, after = 0, 1, prod(shape)
    for n, t in zip(shape, tile, strict=True):
        after //= n
        step = t * before * after
        i = min((e - at) // step, (n - 1) // t) if step else 0
        at += i * step
        x = min(t, n - i * t)
        g.append(i)
        ext.append(x)
        before *= x
    return tuple(g), tuple(ext), at


def _parts(shape: tuple[int, ...], tile: tuple[int, ...]) -> Iterator[tuple[int, list[tuple[int, int, int, int]]]]:
    """The parts of the grid: (first element in the tile order, per axis (first index, tiles,
    tile extent, element stride between tiles))."""
    if not all(shape):
        return
    choices = []
    for n, t in zip(shape, tile, strict=True):
        full, edge = divmod(n, t)
        here = []
        if full:
            here.append((0, full, t))
        if edge:
            here.append((full * t, 1, edge))
        choices.append(here)
    for pick in product(*choices):
        at, before, after = 0, 1, prod(shape)
        axes = []
        for (first, count, ext), n, t in zip(pick, shape, tile, strict=True):
            after //= n
            step = t * before * after
            at += first // t * step
            axes.append((first, count, ext, step))
            before *= ext
        yield at, axes


def _views(flat: Any, arr: Any, tile: tuple[int, ...]) -> Iterator[tuple[Any, Any]]:
    """Pairs (tile-ordered view of ``flat``, the same elements of ``arr``) for each part."""
    np = sys.modules["numpy"]
    item = flat.dtype.itemsize
    shape = arr.shape
    for at, axes in _parts(shape, tile):
        exts = [ext for _, _, ext, _ in axes]
        inner = []
        s = item
        for ext in reversed(exts):
            inner.append(s)
            s *= ext
        inner.reverse()
        tiled = np.lib.stride_tricks.as_strided(
            flat[at:],
            shape=[c for _, c, _, _ in axes] + exts,
            strides=[step * item for _, _, _, step in axes] + inner,
            writeable=flat.flags.writeable,
        )
        region = arr[tuple(slice(first, first + count * ext) for first, count, ext, _ in axes)]
        split = region.reshape([d for _, count, ext, _ in axes for d in (count, ext)])
        n = len(axes)
        yield tiled, split.transpose([*range(0, 2 * n, 2), *range(1, 2 * n, 2)])


def untile(flat: Any, tile: tuple[int, ...], out: Any) -> None:
    """Copy ``flat`` (1-d, the elements of an array of ``out.shape`` in the tile order) into
    ``out`` (any strides)."""
    np = sys.modules["numpy"]
    for tiled, part in _views(flat, out, tile):
        np.copyto(part, tiled)


def to_tiles(arr: Any, tile: tuple[int, ...], flat: Any) -> None:
    """Copy ``arr`` into ``flat`` (1-d, writable, ``arr.size`` elements) in the tile order."""
    np = sys.modules["numpy"]
    for tiled, part in _views(flat, arr, tile):
        np.copyto(tiled, part)


def choose_tile(shape: tuple[int, ...], itemsize: int, target: int = TILE_BYTES) -> tuple[int, ...]:
    """A tile of at most ``target`` bytes (about) for an array of ``shape`` and ``itemsize``:
    as square as the axes allow. Axes shorter than the side a cube of ``target`` bytes would
    have are taken whole (the shortest first, the side then computed again for the others);
    the others get that side, the last of them what is left of the budget. 4000 x 4000
    float64 gives 128 x 128 (128 KB, as h5py's chunks in the benchmark); (10**6, 3) gives
    (5461, 3)."""
    budget = max(1, target // itemsize)
    tile = [max(n, 1) for n in shape]
    free = sorted(range(len(shape)), key=lambda k: tile[k])
    side = 1
    while free:
        side = _root(budget, len(free))
        if tile[free[0]] > side:
            break
        budget = max(1, budget // tile[free.pop(0)])  # a short axis, whole
    for k in free:
        tile[k] = max(1, side)
    if free:
        last = max(free)
        rest = prod(tile[k] for k in free if k != last)
        tile[last] = max(1, min(shape[last], budget // rest))
    return tuple(tile)


def _root(n: int, m: int) -> int:
    """The largest s with s ** m <= n."""
    s = max(1, int(round(n ** (1 / m))))
    while s > 1 and s**m > n:
        s -= 1
    while (s + 1) ** m <= n:
        s += 1
    return s


def is_trivial(shape: tuple[int, ...], tile: tuple[int, ...]) -> bool:
    """Does the tile order equal C order (every axis after the first taken whole)?"""
    return all(t >= n for n, t in zip(shape[1:], tile[1:], strict=True))


def frame_cuts(shape: tuple[int, ...], tile: tuple[int, ...], itemsize: int, least: int) -> list[int]:
    """Byte offsets in the tile-ordered elements where frames start after the first: each
    frame holds whole tiles, one or as many consecutive ones as make at least ``least`` bytes
    (about: a cut is the first tile end at or past each multiple of ``least``), and never
    tiles of two rows of tiles (along the first axis) unless a row of tiles is shorter than
    ``least``: then whole rows of tiles make a frame. A whole-array read, which takes rows of
    tiles at a time, then never meets a frame shared by two of its tasks."""
    np = sys.modules["numpy"]
    if not all(shape):
        return []
    sizes = np.ones((), np.int64)
    for n, t in zip(shape, tile, strict=True):
        ext = np.full(-(-n // t), t, np.int64)
        ext[-1] = n - (len(ext) - 1) * t
        sizes = np.multiply.outer(sizes, ext)
    rows = sizes.reshape(sizes.shape[0], -1) * itemsize
    row_ends = np.cumsum(rows.sum(axis=1))
    total = int(row_ends[-1])
    if int(rows[0].sum()) < least:  # rows of tiles grouped whole
        marks = np.arange(least, total, least, dtype=np.int64)
        return [int(c) for c in np.unique(row_ends[np.searchsorted(row_ends, marks)]) if c < total]
    cuts: list[int] = []
    start = 0
    for row, end in zip(rows, row_ends.tolist(), strict=True):
        ends = start + np.cumsum(row)
        marks = np.arange(start + least, end, least, dtype=np.int64)
        cuts.extend(int(c) for c in np.unique(ends[np.searchsorted(ends, marks)]) if c < end)
        if end < total:
            cuts.append(end)
        start = end
    return cuts
