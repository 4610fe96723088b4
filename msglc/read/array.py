"""``LazyArray``: a NumPy array in an archive, read by NumPy-style basic indexing.

A selection is read as a few byte ranges of the C-ordered elements: one read per index of
the outer axes, each covering the selection of the inner axes. Which axes are "outer" is
chosen per selection by a simple cost model (a read costs as much as ``READ_COST`` bytes),
so a 100 x 100 block of a large matrix is 100 row pieces, a column of a narrow table is one
read, and a single element is one read of its bytes.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import product
from math import prod
from typing import Any

from msglc.config import current
from msglc.format.numpy_ext import check_text, has_text
from msglc.format.shuffle import gather_grid
from msglc.format.tiles import is_trivial, tile_at, tile_start, untile
from msglc.read.archive import Archive
from msglc.read.part import LazyPart

READ_COST = 4096  # bytes that could be read in the time one more read call costs (local files)


MAX_SPAN = 1 << 24  # largest read through a temporary buffer (a gappy selection's covering range)


TASK_BYTES = 1 << 22  # bytes of rows of tiles a task of a whole-array read reads and reorders


TILE_READS = 4096  # a selection touching at most this many tiles reads each; more, whole rows of tiles


ROWS_READ = 1 << 22  # bytes of rows of tiles read (and reordered) at a time by a large selection


class LazyArray(LazyPart):
    """A read-only view of a NumPy array in an archive: ``shape``, ``dtype``, ``a[i, j]``,
    ``a[i:j, ::2]``, ``np.asarray(a)``. Selections return fresh arrays (or NumPy scalars)."""

    __slots__ = ("shape", "dtype", "_np", "_data", "_strides", "_ndim", "_size", "_total", "_void", "_text", "_tile")

    def __init__(
        self,
        archive: Archive,
        base: int,
        pos: int,
        total: int,
        dtype: Any,
        shape: tuple[int, ...],
        start: int,
        nsize: int = 0,
        tile: tuple[int, ...] | None = None,
    ) -> None:
        """``tile``: the tile shape of an array stored tile by tile (None: C order)."""
        super().__init__(archive, base, pos, nsize)
        self._np = sys.modules["numpy"]
        self.shape = shape
        self.dtype = dtype
        self._data = base + start  # absolute offset of the first element
        self._total = total  # bytes of the whole extension value
        self._ndim = len(shape)
        self._size = prod(shape)
        self._void = dtype.kind == "V"  # structured items are views: copy them out of the read buffer
        self._text = has_text(dtype)  # str elements: their code points are checked as they are read
        self._strides = _c_strides(shape, dtype.itemsize)
        # tiles that lie in C order anyway (every axis after the first whole) are read as C order
        self._tile = None if tile is None or is_trivial(shape, tile) else tile

    @property
    def tiles(self) -> tuple[int, ...] | None:
        """The tile shape the array is stored in (compressed archives), or None: C order."""
        return self._tile

    # -- what NumPy users look for --
    @property
    def ndim(self) -> int:
        return self._ndim

    @property
    def size(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        nbytes: int = self._size * self.dtype.itemsize
        return nbytes

    def __len__(self) -> int:
        self._check_open()
        if not self._ndim:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<LazyArray shape={self.shape} dtype={self.dtype}>"

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def _span(self) -> int:
        return self._total

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        """NumPy's conversion protocol: ``copy=True`` always gives an array of its own,
        ``copy=False`` only succeeds for a zero-copy source and the stored dtype."""
        arr = self.to_obj()
        fresh = not self._a.src.zero_copy or self._tile is not None
        if dtype is not None and self._np.dtype(dtype) != arr.dtype:
            arr, fresh = arr.astype(dtype), True
        if copy is False and fresh:
            raise ValueError("a LazyArray read from a file (or converted) is always a copy; use copy=None")
        return arr.copy() if copy and not fresh else arr

    def to_obj(self) -> Any:
        """The whole array, read with one copy into a fresh array; from an in-memory or
        memory-mapped source, a zero-copy view of it (read-only if the source is)."""
        np = self._np
        a = self._a
        if self._tile is not None:
            return self._checked(self._untiled(), self._data)
        if a.src.zero_copy:
            out = np.frombuffer(a.read(self._data, self.nbytes), self.dtype, count=self._size).reshape(self.shape)
        else:
            out = np.empty(self.shape, self.dtype)
            a.read_into(self._data, out)
        return self._checked(out, self._data)

    def _checked(self, out: Any, where: int) -> Any:
        if self._text:
            check_text(out, where)
        return out

    def _untiled(self) -> Any:
        """The whole tiled array in C order: read a few rows of tiles at a time (a task) on a
        pool of ``read_threads`` threads, each task's frames decompressed into a buffer of
        its thread's own (reused: fresh memory costs page faults) and put in place from there."""
        np = self._np
        tile = self._tile
        assert tile is not None
        out = np.empty(self.shape, self.dtype)
        if not self._size:
            return out
        n0, t0 = self.shape[0], tile[0]
        per = max(1, TASK_BYTES // (self.nbytes // n0 * t0))  # rows of tiles a task
        tasks = [(g, min(n0, g + per * t0)) for g in range(0, n0, per * t0)]
        local = threading.local()
        a = self._a
        row = self._size // n0

        def fill(task: tuple[int, int]) -> None:
            top, bottom = task
            if self._tiles_from_frames(top * row, bottom * row, out):
                return
            scratch = getattr(local, "scratch", None)
            if scratch is None or len(scratch) < (bottom - top) * row:
                scratch = local.scratch = np.empty(per * t0 * row, self.dtype)
            flat = scratch[: (bottom - top) * row]
            a.read_into(self._data + top * row * self.dtype.itemsize, flat, threads=1)
            untile(flat, (min(t0, bottom - top), *tile[1:]), out[top:bottom])

        threads = min(current().read_threads, len(tasks))
        if threads <= 1:
            for task in tasks:
                fill(task)
        else:
            with ThreadPoolExecutor(threads) as pool:
                for _ in pool.map(fill, tasks):  # raises the first task's error
                    pass
        return out

    def _tiles_from_frames(self, first: int, end: int, out: Any) -> bool:
        """Elements [first, end) of the tile order (whole rows of tiles) put in place in
        ``out`` straight from their frames, each tile unshuffled into place in one pass (in C
        without the GIL: the pool's threads run together), when the frames hold whole tiles
        (as writers lay them out); False when they do not (then the caller reads them; what
        was put in place is overwritten)."""
        tile = self._tile
        assert tile is not None
        itemsize = self.dtype.itemsize
        target = memoryview(out.reshape(-1).view("u1"))
        out_strides = out.strides[:-1]

        def sink(at: int, data: memoryview, element: int) -> None:
            e, rem = divmod(at - self._data, itemsize)
            n = len(data) // itemsize
            if rem or len(data) % itemsize:
                raise _NotTiles
            done = 0
            while done < n:
                g, ext, start = tile_at(self.shape, tile, e + done)
                size = prod(ext)
                if start != e + done or done + size > n:
                    raise _NotTiles
                corner = sum(i * t * s for i, t, s in zip(g, tile, out.strides, strict=True))
                inner = _c_strides(ext, itemsize)[:-1]  # (the tile's own C order)
                run = ext[-1] * itemsize
                gather_grid(data, element or 1, done * itemsize, ext[:-1], inner, run, target, corner, out_strides)
                done += size

        try:
            return self._a.decode_frames(self._data + first * itemsize, (end - first) * itemsize, sink)
        except _NotTiles:
            return False

    # -- indexing --
    def __getitem__(self, key: Any) -> Any:
        if self._tile is not None:
            if type(key) is tuple and len(key) == self._ndim:
                for i, n in zip(key, self.shape, strict=True):
                    if type(i) is not int or not -n <= i < n:
                        break
                else:
                    return self._item(
                        self._tiled_offset([i + n if i < 0 else i for i, n in zip(key, self.shape, strict=True)])
                    )
            return self._select(key)
        if type(key) is tuple and len(key) == self._ndim:
            off = self._data
            for i, n, s in zip(key, self.shape, self._strides, strict=True):
                if type(i) is not int or not -n <= i < n:
                    break
                off += (i + n if i < 0 else i) * s
            else:
                return self._item(off)
        elif type(key) is int and self._ndim == 1 and -self._size <= key < self._size:
            return self._item(self._data + (key + self._size if key < 0 else key) * self.dtype.itemsize)
        return self._select(key)

    def _item(self, off: int) -> Any:
        """The NumPy scalar at ``off``: one read of its bytes."""
        items = self._checked(self._np.frombuffer(self._a.read(off, self.dtype.itemsize), self.dtype), off)
        return items.copy()[0] if self._void else items[0]

    def _tiled_offset(self, index: list[int]) -> int:
        """Where element ``index`` of a tiled array is: in its tile, in C order of the tile."""
        tile = self._tile
        assert tile is not None
        at, ext = tile_start(self.shape, tile, tuple(i // t for i, t in zip(index, tile, strict=True)))
        inner = 0
        for i, t, e in zip(index, tile, ext, strict=True):
            inner = inner * e + i % t
        offset: int = self._data + (at + inner) * self.dtype.itemsize
        return offset

    def _select(self, key: Any) -> Any:
        self._check_open()
        sel, out_shape, flips, scalar = _selection(key if isinstance(key, tuple) else (key,), self.shape)
        np = self._np
        if len(out_shape) > _max_dims(np):  # (refused before anything is read, as NumPy refuses it)
            raise IndexError(
                f"the selection would give an array of {len(out_shape)} axes; NumPy arrays have at most {_max_dims(np)}"
            )
        counts = [c for _, c, _ in sel]
        if not all(counts):
            return np.empty(out_shape, self.dtype)
        out = self._read(sel, counts) if self._tile is None else self._read_tiled(sel, counts)
        if flips:
            out = out[tuple(slice(None, None, -1) if f else slice(None) for f in flips)]
        out = out.reshape(out_shape)
        return out[()] if scalar else out

    def _read(self, sel: list[tuple[int, int, int]], counts: list[int]) -> Any:
        """Read the elements sel = [(first, count, step >= 1) per axis] into a new array."""
        out = self._np.empty(counts, self.dtype)
        read_selection(self._a, self._data, self._strides, sel, out)
        return self._checked(out, self._data)

    def _read_tiled(self, sel: list[tuple[int, int, int]], counts: list[int]) -> Any:
        """``_read`` of a tiled array: each tile the selection touches is read (the part of it
        from the first selected element to the last) and its selected elements copied into
        place; a selection touching more than ``TILE_READS`` tiles is read by whole rows of
        tiles, a few MB at a time, put in C order and sliced."""
        np = self._np
        tile = self._tile
        assert tile is not None
        out = np.empty(counts, self.dtype)
        touched = [_touched(f, c, st, t) for (f, c, st), t in zip(sel, tile, strict=True)]
        if prod(len(t) for t in touched) <= TILE_READS:
            self._tile_reads(sel, touched, out)
        else:
            self._row_reads(sel, touched[0], out)
        return self._checked(out, self._data)

    def _tile_reads(self, sel: list[tuple[int, int, int]], touched: list[list[tuple[int, int, int]]], out: Any) -> None:
        """Each tile the selection touches, its selected elements put in place in ``out`` (a
        fresh C-ordered array): from the decompressed frame holding the tile when one does,
        else read as a C-ordered block of its own."""
        tile = self._tile
        assert tile is not None
        # per axis, per tile touched: (its first element along the axis times the elements
        # after the axis, its extent, the selection's first index in it, count, step, and
        # where its part goes in ``out``); a tile's place and shape follow from these
        axes = []
        after = self._size
        for (f, _, st), tiles, n, t, o in zip(sel, touched, self.shape, tile, out.strides, strict=True):
            after //= n
            axes.append(
                [(g * t * after, min(t, n - g * t), f + j0 * st - g * t, j1 - j0, st, j0 * o) for g, j0, j1 in tiles]
            )
        dest = _bytes_of(out)
        itemsize = self.dtype.itemsize
        for pick in product(*axes):
            at, before = 0, 1
            for first, ext, *_ in pick:
                at += first * before
                before *= ext
            strides = _c_strides(tuple(ext for _, ext, *_ in pick), itemsize)  # the tile's own C order
            part = [(f, c, st) for _, _, f, c, st, _ in pick]
            out_lo = sum(o for *_, o in pick)
            if not self._from_frame(at, before, strides, part, out.strides, out_lo, dest):
                where = tuple(slice(o // s, o // s + c) for (*_, c, _, o), s in zip(pick, out.strides, strict=True))
                read_selection(self._a, self._data + at * itemsize, strides, part, out[where])

    def _from_frame(
        self,
        at: int,
        size: int,
        strides: tuple[int, ...],
        part: list[tuple[int, int, int]],
        out_strides: tuple[int, ...],
        out_lo: int,
        dest: Any,
    ) -> bool:
        """Put the elements ``part`` [(first, count, step) per axis] of the tile of ``size``
        elements at element ``at`` (C ``strides``) in place in ``dest`` (the bytes of a
        C-ordered array of ``out_strides``, from byte ``out_lo``), straight from the
        decompressed frame holding the tile: of a shuffled frame only the selected bytes are
        unshuffled (``gather_grid``; unshuffling it whole and copying out took twice as
        long). False when one frame does not hold the whole tile (the caller reads it)."""
        itemsize = self.dtype.itemsize
        start = self._data + at * itemsize
        found = self._a.frame_at(start)
        if found is None:
            return False
        first, end, data, element = found
        if start + size * itemsize > end:
            return False
        lo, counts, steps = _grid(part, strides)
        element = element or 1  # (plain bytes: runs are copied as they are)
        run = itemsize
        if steps[-1] == itemsize:  # runs of the last axis's elements
            run *= counts.pop()
            steps.pop()
            out_strides = out_strides[:-1]
        gather_grid(data, element, start - first + lo, tuple(counts), tuple(steps), run, dest, out_lo, out_strides)
        return True

    def _row_reads(self, sel: list[tuple[int, int, int]], rows: list[tuple[int, int, int]], out: Any) -> None:
        np = self._np
        tile = self._tile
        assert tile is not None
        n0, t0 = self.shape[0], tile[0]
        row_bytes = self.nbytes // n0
        per = max(1, ROWS_READ // (row_bytes * t0))  # rows of tiles read at a time
        f0, _, st0 = sel[0]
        rest = tuple(slice(f, f + (c - 1) * st + 1, st) for f, c, st in sel[1:])
        batches: list[list[tuple[int, int, int]]] = []
        for r in rows:  # runs of consecutive rows of tiles, at most ``per`` each
            if batches and batches[-1][-1][0] + 1 == r[0] and len(batches[-1]) < per:
                batches[-1].append(r)
            else:
                batches.append([r])
        for batch in batches:
            g_first, g_last = batch[0][0], batch[-1][0]
            top, bottom = g_first * t0, min(n0, (g_last + 1) * t0)
            at = tile_start(self.shape, tile, (g_first,) + (0,) * (self._ndim - 1))[0]
            flat = np.empty((bottom - top) * (self._size // n0), self.dtype)
            self._a.read_into(self._data + at * self.dtype.itemsize, flat)
            slab = np.empty((bottom - top, *self.shape[1:]), self.dtype)
            untile(flat, (min(t0, bottom - top), *tile[1:]), slab)
            j0, j1 = batch[0][1], batch[-1][2]
            first = f0 + j0 * st0 - top
            rows_key = slice(first, first + (j1 - j0 - 1) * st0 + 1, st0)
            out[j0:j1] = slab[(rows_key,) + rest]  # noqa: RUF005 (a star in a subscript needs Python 3.11)


class _NotTiles(Exception):
    """The frames of a tiled array do not hold whole tiles: read it another way."""


def _bytes_of(out: Any) -> Any:
    """The bytes of the C-ordered array ``out`` as a uint8 view (never a copy: NumPy raises
    where it cannot view): ``gather_grid``'s pure-Python path takes buffers through
    ``memoryview``, which NumPy refuses for datetime64 and timedelta64 (no buffer format)."""
    return out.view(sys.modules["numpy"].uint8)


def _grid(sel: list[tuple[int, int, int]], strides: tuple[int, ...]) -> tuple[int, list[int], list[int]]:
    """A selection [(first, count, step) per axis] of a C-ordered block of ``strides``: the
    byte offset of its first element, and its counts and byte steps per axis."""
    first = 0
    counts = []
    steps = []
    for (low, count, step), s in zip(sel, strides, strict=True):
        first += low * s
        counts.append(count)
        steps.append(step * s)
    return first, counts, steps


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The strides (bytes) of C order over ``shape``."""
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _touched(first: int, count: int, step: int, t: int) -> list[tuple[int, int, int]]:
    """The tiles (of ``t`` along an axis) that the indices ``first + j * step`` (j < count)
    touch: (tile, first j in it, last j in it + 1), in order."""
    out = []
    j = 0
    while j < count:
        g = (first + j * step) // t
        end = -(-((g + 1) * t - first) // step)  # first j past tile g
        out.append((g, j, min(end, count)))
        j = end
    return out


def read_selection(
    archive: Archive, data: int, strides: tuple[int, ...], sel: list[tuple[int, int, int]], out: Any
) -> None:
    """Fill ``out`` with the elements ``sel`` = [(first, count, step >= 1) per axis] of a
    C-order block of elements of ``out.dtype`` at data offset ``data``, its axes ``strides``
    bytes apart. ``out`` has the selection's shape; it may be a view into a larger result
    (a tile's part of a selection), then the bytes go through a buffer of the selection's
    size. From memory (bytes, a memory map) this is one strided copy; from a file or an
    object store one grid of pieces (``Archive.read_grid``), a piece per index of the axes
    the cost model loops over, each piece read whole (gaps included) when that is cheaper
    than more reads, then copied out with one strided copy."""
    if not out.nbytes:
        return
    np = sys.modules["numpy"]
    dtype = out.dtype
    itemsize = dtype.itemsize
    first, counts, steps = _grid(sel, strides)
    first += data
    if archive.src.zero_copy:  # already in memory: one strided copy out of it
        span = itemsize + sum((c - 1) * st for c, st in zip(counts, steps, strict=True))
        out[...] = np.ndarray(counts, dtype, buffer=archive.view(first, span, out.size * itemsize), strides=steps)
        return
    d, extent, per = _outer_axes(counts, steps, itemsize)
    if d < len(counts) and per < counts[d]:  # axis d in runs of `per` indices, a covering read each
        low, count, step = sel[d]
        lead = (slice(None),) * d
        for i in range(0, count, per):
            n = min(per, count - i)
            part = [*sel[:d], (low + i * step, n, step), *sel[d + 1 :]]
            read_selection(archive, data, strides, part, out[lead + (slice(i, i + n),)])
        return
    inner = counts[d:]
    whole = out if out.flags.c_contiguous else np.empty(counts, dtype)
    if extent == prod(inner) * itemsize:  # pieces of contiguous elements: straight into the result
        if d:
            archive.read_grid(first, tuple(counts[:d]), tuple(steps[:d]), extent, whole)
        else:
            archive.read_into(first, whole)
    else:  # pieces with gaps: a block of them at a time into a buffer, then one strided copy
        pieces = whole.reshape(-1, *inner)
        for at, block, k in _blocks(tuple(counts[:d]), tuple(steps[:d]), extent):
            n = prod(block)
            buf = np.empty(n * extent, np.uint8)
            archive.read_grid(first + at, block, tuple(steps[:d]), extent, buf)
            pieces[k : k + n] = np.ndarray((n, *inner), dtype, buffer=buf, strides=(extent, *steps[d:]))
    if whole is not out:
        out[...] = whole


def _blocks(counts: tuple[int, ...], steps: tuple[int, ...], extent: int) -> Iterator[tuple[int, tuple[int, ...], int]]:
    """The grid of ``counts`` pieces of ``extent`` bytes as blocks of at most ``MAX_SPAN``
    bytes (or of one piece): (offset of the block, its counts, the index of its first piece)."""
    per = prod(counts[1:]) * extent  # bytes of one index of the first axis
    if not counts or counts[0] * per <= MAX_SPAN:
        yield 0, counts, 0
    elif per <= MAX_SPAN:
        rows = MAX_SPAN // per
        for i in range(0, counts[0], rows):
            yield i * steps[0], (min(rows, counts[0] - i), *counts[1:]), i * (per // extent)
    else:
        for i in range(counts[0]):
            for at, block, k in _blocks(counts[1:], steps[1:], extent):
                yield i * steps[0] + at, (1, *block), i * (per // extent) + k


def _outer_axes(counts: list[int], steps: list[int], itemsize: int) -> tuple[int, int, int]:
    """How many leading axes to loop over (each read then covers the selection of the rest),
    the bytes one read covers, and how many indices of the first axis not looped over a read
    covers. Minimizes reads * READ_COST + bytes read (ties go to fewer reads). A read that is
    not contiguous goes through a temporary buffer, so it covers at most ``MAX_SPAN`` bytes:
    a longer one is split along its first axis (a column of a long narrow table: a few
    covering reads, not a read per row); contiguous reads go straight into the result."""
    reads = prod(counts)  # when looping over every axis: one read per element
    best, best_ext, best_per, best_cost = len(counts), itemsize, 1, reads * (READ_COST + itemsize)
    ext = need = itemsize  # bytes one read covers, and the selection's bytes among them
    for d in range(len(counts) - 1, -1, -1):
        c, st, inner = counts[d], steps[d], ext
        ext += (c - 1) * st
        need *= c
        reads //= c
        if ext == need or ext <= MAX_SPAN:
            per, cost = c, reads * (READ_COST + ext)
        elif inner < MAX_SPAN:  # reads of `per` indices of axis d, each at most MAX_SPAN bytes
            per = (MAX_SPAN - inner) // st + 1
            parts = -(-c // per)
            cost = reads * (parts * (READ_COST + inner) + (c - parts) * st)
        else:
            continue
        if cost <= best_cost:
            best, best_ext, best_per, best_cost = d, ext, per, cost
    return best, best_ext, best_per


def _selection(
    key: tuple[Any, ...], shape: tuple[int, ...]
) -> tuple[list[tuple[int, int, int]], list[int], list[bool], bool]:
    """NumPy basic indexing of an array of ``shape`` by ``key``: per axis (lowest index, count,
    positive step); the result's shape; which axes to reverse; whether the result is a scalar."""
    if key and len(key) == len(shape):  # a block (a slice of step 1 per axis): the usual read, quickly
        block = []
        for k, n in zip(key, shape, strict=True):
            if type(k) is not slice:
                break
            start, stop, step = k.indices(n)
            if step != 1:
                break
            block.append((start, max(stop - start, 0), 1))
        else:
            return block, [c for _, c, _ in block], [], False
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(k is not None and k is not Ellipsis for k in key)
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {used} were indexed")
    scalar = not any(k is Ellipsis for k in key)  # all integers, no slice, None or ...
    if scalar:
        key = (*key, Ellipsis)
    sel: list[tuple[int, int, int]] = []
    out_shape: list[int] = []
    flips: list[bool] = []
    axis = 0
    for k in key:
        if k is None:
            out_shape.append(1)
            scalar = False
            continue
        if k is Ellipsis:
            for n in shape[axis : axis + len(shape) - used]:
                sel.append((0, n, 1))
                out_shape.append(n)
                flips.append(False)
            axis += len(shape) - used
            scalar = scalar and len(shape) == used
            continue
        n = shape[axis]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            count = len(range(start, stop, step))
            low = start if step > 0 or not count else start + (count - 1) * step
            sel.append((low, count, abs(step) if count > 1 else 1))  # (a step past the axis selects one)
            out_shape.append(count)
            flips.append(step < 0)
            scalar = False
        else:
            i = _integer(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            sel.append((i + n if i < 0 else i, 1, 1))
            flips.append(False)
        axis += 1
    return sel, out_shape, flips if any(flips) else [], scalar


def _max_dims(np: Any) -> int:
    """The most axes a NumPy array may have: 64 from NumPy 2 on, 32 before."""
    return 64 if int(np.__version__.split(".")[0]) >= 2 else 32


def _integer(k: Any) -> int:
    if isinstance(k, bool) or type(k).__module__ == "numpy" and type(k).__name__ in ("bool", "bool_"):
        raise IndexError("boolean indices are not supported by LazyArray; read the array first (np.asarray(a)[mask])")
    try:
        i: int = k.__index__()
    except (AttributeError, TypeError):
        raise IndexError(
            f"LazyArray supports integers, slices, ... and None as indices, not {type(k).__name__}; "
            "for fancy indexing read a slice first (a[i:j][[...]])"
        ) from None
    return i
