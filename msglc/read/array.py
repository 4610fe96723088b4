"""``LazyArray``: a NumPy array in an archive, read by NumPy-style basic indexing.

A selection is read as a few byte ranges of the C-ordered elements: one read per index of
the outer axes, each covering the selection of the inner axes. Which axes are "outer" is
chosen per selection by a simple cost model (a read costs as much as ``READ_COST`` bytes),
so a 100 x 100 block of a large matrix is 100 row pieces, a column of a narrow table is one
read, and a single element is one read of its bytes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from math import prod
from typing import Any

from msglc.format.numpy_ext import check_text, has_text
from msglc.read.archive import Archive
from msglc.read.node import LazyNode

READ_COST = 4096  # bytes that could be read in the time one more read call costs (local files)


MAX_SPAN = 1 << 24  # largest read through a temporary buffer (a gappy selection's covering range)


class LazyArray(LazyNode):
    """A read-only view of a NumPy array in an archive: ``shape``, ``dtype``, ``a[i, j]``,
    ``a[i:j, ::2]``, ``np.asarray(a)``. Selections return fresh arrays (or NumPy scalars)."""

    __slots__ = ("shape", "dtype", "_np", "_data", "_strides", "_ndim", "_size", "_total", "_void", "_text")

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
    ) -> None:
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
        strides = []
        step = dtype.itemsize
        for n in reversed(shape):
            strides.append(step)
            step *= n
        self._strides = tuple(reversed(strides))

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
        fresh = not self._a.src.zero_copy
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

    # -- indexing --
    def __getitem__(self, key: Any) -> Any:
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

    def _select(self, key: Any) -> Any:
        self._check_open()
        sel, out_shape, flips, scalar = _selection(key if isinstance(key, tuple) else (key,), self.shape)
        np = self._np
        counts = [c for _, c, _ in sel]
        if not all(counts):
            return np.empty(out_shape, self.dtype)
        out = self._read(sel, counts)
        if flips:
            out = out[tuple(slice(None, None, -1) if f else slice(None) for f in flips)]
        out = out.reshape(out_shape)
        return out[()] if scalar else out

    def _read(self, sel: list[tuple[int, int, int]], counts: list[int]) -> Any:
        """Read the elements sel = [(first, count, step >= 1) per axis] into a new array."""
        out = self._np.empty(counts, self.dtype)
        read_selection(self._a, self._data, self._strides, sel, out)
        return self._checked(out, self._data)


def read_selection(a: Archive, data: int, strides: tuple[int, ...], sel: list[tuple[int, int, int]], out: Any) -> None:
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
    counts = []
    steps = []
    first = data
    for (low, count, step), s in zip(sel, strides, strict=True):
        first += low * s
        counts.append(count)
        steps.append(step * s)
    if a.src.zero_copy:  # already in memory: one strided copy out of it
        span = itemsize + sum((c - 1) * st for c, st in zip(counts, steps, strict=True))
        out[...] = np.ndarray(counts, dtype, buffer=a.view(first, span, out.size * itemsize), strides=steps)
        return
    d, extent, per = _outer_axes(counts, steps, itemsize)
    if d < len(counts) and per < counts[d]:  # axis d in runs of `per` indices, a covering read each
        low, count, step = sel[d]
        lead = (slice(None),) * d
        for i in range(0, count, per):
            n = min(per, count - i)
            part = [*sel[:d], (low + i * step, n, step), *sel[d + 1 :]]
            read_selection(a, data, strides, part, out[lead + (slice(i, i + n),)])
        return
    inner = counts[d:]
    whole = out if out.flags.c_contiguous else np.empty(counts, dtype)
    if extent == prod(inner) * itemsize:  # pieces of contiguous elements: straight into the result
        if d:
            a.read_grid(first, tuple(counts[:d]), tuple(steps[:d]), extent, whole)
        else:
            a.read_into(first, whole)
    else:  # pieces with gaps: a block of them at a time into a buffer, then one strided copy
        pieces = whole.reshape(-1, *inner)
        for at, block, k in _blocks(tuple(counts[:d]), tuple(steps[:d]), extent):
            n = prod(block)
            buf = np.empty(n * extent, np.uint8)
            a.read_grid(first + at, block, tuple(steps[:d]), extent, buf)
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
            sel.append((low, count, abs(step)))
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


def _integer(k: Any) -> int:
    if isinstance(k, bool) or type(k).__name__ == "bool_":
        raise IndexError("boolean indices are not supported by LazyArray; read the array first (np.asarray(a)[mask])")
    try:
        i: int = k.__index__()
    except (AttributeError, TypeError):
        raise IndexError(
            f"LazyArray supports integers, slices, ... and None as indices, not {type(k).__name__}; "
            "for fancy indexing read a slice first (a[i:j][[...]])"
        ) from None
    return i
