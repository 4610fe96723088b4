"""The byte shuffle of filter code 1 (docs/format.md): a frame of ``m`` elements of ``e``
bytes is stored as byte 0 of every element, then byte 1, and so on, so plain byte
``j * e + k`` is stored byte ``k * m + j``. Runs of numbers compress better so.

The Python code here is the definition. With the C accelerator built, the same functions run
in ``_speedups`` (the common element sizes vectorized, the GIL released for large buffers),
so that the compression threads and the ``read_threads`` pool shuffle in parallel."""

from __future__ import annotations

from itertools import product
from math import prod
from operator import index
from typing import Any

from msglc.util import accel

MAX_ELEMENT = 255  # the largest element a shuffle filter names (one byte)


def shuffle(src: Any, element: int) -> bytes:
    """The bytes of ``src`` (any contiguous buffer, a whole number of ``element``-byte
    elements) byte-shuffled."""
    speedups = accel.speedups
    if speedups is not None:
        return speedups.shuffle(src, element)
    data = bytes(_source(src, element, "shuffle"))
    return b"".join(data[k::element] for k in range(element))


def unshuffle(src: Any, element: int) -> bytearray:
    """The plain bytes of the byte-shuffled ``src``, in a new buffer."""
    out = bytearray(_source(src, element, "unshuffle").nbytes)
    unshuffle_into(src, element, out)
    return out


def unshuffle_into(src: Any, element: int, out: Any) -> None:
    """The plain bytes of the byte-shuffled ``src`` into ``out``, a writable contiguous buffer
    of as many bytes (it may overlap ``src``: the result is the same)."""
    speedups = accel.speedups
    if speedups is not None:
        speedups.unshuffle_into(src, element, out)
        return
    view, target = _source_and_target(src, element, out, "unshuffle_into")
    if len(target) != len(view):
        raise ValueError(
            f"unshuffle_into: out holds {len(target)} bytes; the {len(view)} plain bytes of src need as many"
        )
    data = _read_whole(src, view)
    m = len(data) // element
    for k in range(element):
        target[k::element] = data[k * m : (k + 1) * m]


def gather(src: Any, element: int, lo: int, hi: int) -> bytes:
    """Plain bytes [lo, hi) of the byte-shuffled ``src``, picked without unshuffling the rest
    (a point read of a shuffled frame)."""
    size = _source(src, element, "gather").nbytes
    lo, hi = _int(lo, "gather", "lo"), _int(hi, "gather", "hi")
    if not 0 <= lo <= hi <= size:  # checked before anything is allocated
        raise ValueError(f"gather: [{lo}, {hi}) is not a range of the {size} plain bytes of src")
    out = bytearray(hi - lo)
    gather_into(src, element, lo, out)
    return bytes(out)


def gather_into(src: Any, element: int, lo: int, out: Any) -> None:
    """Plain bytes [lo, lo + len(out)) of the byte-shuffled ``src`` into ``out`` (writable,
    contiguous)."""
    speedups = accel.speedups
    if speedups is not None:
        speedups.gather_into(src, element, lo, out)
        return
    view, target = _source_and_target(src, element, out, "gather_into")
    lo = _int(lo, "gather_into", "lo")
    n = len(target)
    if lo < 0 or lo + n > len(view):
        raise ValueError(f"gather_into: {n} bytes from offset {lo} lie outside the {len(view)} plain bytes of src")
    e = index(element)
    m = len(view) // e
    first, last = lo // e, -(-(lo + n) // e)  # the elements that hold the bytes
    part = bytearray((last - first) * e)  # those elements unshuffled, read whole before ``out`` is written
    for k in range(e):
        part[k::e] = view[k * m + first : k * m + last]
    target[:] = part[lo - first * e : lo - first * e + n]


def gather_grid(
    src: Any,
    element: int,
    lo: int,
    counts: tuple[int, ...],
    strides: tuple[int, ...],
    run: int,
    out: Any,
    out_lo: int,
    out_strides: tuple[int, ...],
) -> None:
    """For every index ``i`` below ``counts`` (C order), plain bytes ``[p, p + run)`` of the
    byte-shuffled ``src``, ``p = lo + sum(i * strides)``, into ``out`` (writable, contiguous) at
    ``out_lo + sum(i * out_strides)``: a block of a tile read from its shuffled frame, only the
    selected bytes unshuffled, straight into place. ``element`` 1 names plain bytes: the runs
    are copied as they are. Every offset and stride is >= 0, every run lies inside both
    buffers (which may overlap: the result is the same), and no two runs overlap in ``out``
    (runs that write more bytes than it holds are refused)."""
    speedups = accel.speedups
    if speedups is not None:
        speedups.gather_grid(src, element, lo, counts, strides, run, out, out_lo, out_strides)
        return
    view, target = _source_and_target(src, element, out, "gather_grid", plain=True)
    n = len(counts) if isinstance(counts, tuple) else -1  # (a subclass too, as C takes it)
    if not 0 <= n <= MAX_GRID_AXES:
        raise TypeError(f"gather_grid: counts must be a tuple of at most {MAX_GRID_AXES} ints")
    counts, strides, out_strides = (
        _grid(counts, "counts", n),
        _grid(strides, "strides", n),
        _grid(out_strides, "out_strides", n),
    )
    lo, run, out_lo = (
        _int(lo, "gather_grid", "lo"),
        _int(run, "gather_grid", "run"),
        _int(out_lo, "gather_grid", "out_lo"),
    )
    if not run or not all(counts):
        return
    if min(lo, run, out_lo) < 0 or not (
        _grid_end(lo, counts, strides, run) <= len(view) and _grid_end(out_lo, counts, out_strides, run) <= len(target)
    ):
        raise ValueError(f"gather_grid: the grid does not fit src ({len(view)} bytes) or out ({len(target)} bytes)")
    if run * prod(counts) > len(target):  # (so the work is bounded by the size of ``out``)
        raise ValueError(f"gather_grid: the grid writes more bytes than out holds ({len(target)}): its runs overlap")
    data = _read_whole(src, view)
    for i in product(*(range(c) for c in counts)):
        p = lo + sum(x * s for x, s in zip(i, strides, strict=True))
        q = out_lo + sum(x * s for x, s in zip(i, out_strides, strict=True))
        if element == 1:
            target[q : q + run] = data[p : p + run]
        else:
            gather_into(data, element, p, target[q : q + run])


MAX_GRID_AXES = 16  # the axes of a grid ``gather_grid`` takes: as many as a tiled array has


def _grid(values: Any, name: str, n: int) -> tuple[int, ...]:
    if not isinstance(values, tuple) or len(values) != n:
        raise TypeError(f"gather_grid: {name} must be a tuple of {n} ints")
    out = tuple(_int(v, "gather_grid", name) for v in values)
    if any(v < 0 for v in out):
        raise ValueError(f"gather_grid: {name} must be ints >= 0")
    return out


def _grid_end(first: int, counts: tuple[int, ...], strides: tuple[int, ...], run: int) -> int:
    return first + sum((c - 1) * s for c, s in zip(counts, strides, strict=True)) + run


def _read_whole(src: Any, view: memoryview) -> bytes:
    """``src``'s bytes (``view``), read whole before ``out`` is written, since the two may
    share memory; a ``bytes`` cannot, and is used as it is (a cached frame: no copy)."""
    return src if type(src) is bytes else bytes(view)


def _source(src: Any, element: Any, fn: str, plain: bool = False) -> memoryview:
    """``src`` as bytes, checked to hold whole elements of a valid size (1, plain bytes, where
    ``plain`` allows it; errors as the C path's)."""
    return _elements(_contiguous(src, fn), element, fn, plain)


def _source_and_target(src: Any, element: Any, out: Any, fn: str, plain: bool = False) -> tuple[memoryview, memoryview]:
    """``_source`` and ``_target``, checked in the C path's order (src's buffer, out's, then
    the element size), so that a call with several faults is refused for the same one."""
    view = _contiguous(src, fn)
    target = _target(out, fn)
    return _elements(view, element, fn, plain), target


def _contiguous(src: Any, fn: str) -> memoryview:
    """``src`` as a contiguous buffer (errors as the C path's)."""
    try:
        view = memoryview(src)
    except TypeError:
        raise TypeError(f"{fn}: src must be a contiguous bytes-like object, not {type(src).__name__}") from None
    if not view.c_contiguous:
        raise TypeError(f"{fn}: src must be a contiguous bytes-like object, not a non-contiguous {type(src).__name__}")
    return view


def _elements(view: memoryview, element: Any, fn: str, plain: bool) -> memoryview:
    """``view`` cast to bytes, checked to hold whole elements of a valid size."""
    e = _int(element, fn, "the element size")
    least = 1 if plain else 2
    if not least <= e <= MAX_ELEMENT:
        raise ValueError(f"{fn}: the element size must be {least} to {MAX_ELEMENT}, not {element!r}")
    if view.nbytes % e:
        raise ValueError(f"{fn}: src holds {view.nbytes} bytes, not a whole number of {e}-byte elements")
    return view.cast("B") if view.ndim != 1 or view.format != "B" else view


def _int(value: Any, fn: str, name: str) -> int:
    try:
        return index(value)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be an int, not {type(value).__name__}") from None


def _target(out: Any, fn: str) -> memoryview:
    """``out`` as writable bytes (errors as the C path's)."""
    expected = f"{fn}: out must be a writable contiguous bytes-like object, not"
    try:
        view = memoryview(out)
    except TypeError:
        raise TypeError(f"{expected} {type(out).__name__}") from None
    if not view.c_contiguous:
        raise TypeError(f"{expected} a non-contiguous {type(out).__name__}")
    if view.readonly:
        raise TypeError(f"{expected} a read-only {type(out).__name__}")
    return view.cast("B") if view.ndim != 1 or view.format != "B" else view
