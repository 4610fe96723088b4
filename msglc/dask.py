"""Archives as Dask collections: ``to_array``, ``to_bag``, ``to_archive`` (the ``dask`` extra).

Tasks carry pickled lazy parts (a source and a place, msglc.read.reopen): each worker process
opens an archive once, however many tasks read from it. Chunks and partitions follow how the
data is stored, so that each is read with one request of whole blocks.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from typing import Any

from msglc import api
from msglc.edit.inputs import FileInfo
from msglc.io import scratch
from msglc.io.names import RemotePath, resolve_name
from msglc.read.array import LazyArray
from msglc.read.lazy_reader import LazyReader
from msglc.read.part import LazyPart
from msglc.read.reopen import PartRef, part_ref
from msglc.read.views import LazyList
from msglc.util.optional import dask_module, numpy

CHUNK_BYTES = 64 << 20  # default stored bytes per array chunk or bag partition

__all__ = ["to_array", "to_bag", "to_archive"]


def _part(source: Any, path: Any, options: dict[str, Any]) -> tuple[Any, PartRef, str]:
    """The lazy part at ``path``, the reference its tasks open it by (in the worker, when they
    run: a missing or changed archive fails there, as its own error), a name for the tasks."""
    reader = LazyReader(source, cached=False, **options)
    part = reader[path] if path not in (None, "", "/") else reader.unwrap()
    if not isinstance(part, LazyPart):
        raise TypeError(f"{path!r} is stored whole ({type(part).__name__}), not as a lazy part")
    return part, part_ref(part), f"msglc-{uuid.uuid4().hex}"


def to_array(source: Any, path: Any = None, chunks: Any = None, **options: Any) -> Any:
    """A ``dask.array`` over the NumPy array or fixed-stride list of numbers at ``path``.

    ``chunks`` default: whole rows (the stored order), about ``CHUNK_BYTES`` each. ``options``
    go to ``LazyReader`` (``storage_options``, ``fs``, ...)."""
    da = dask_module("dask.array")
    np = numpy()
    part, ref, name = _part(source, path, options)
    if isinstance(part, LazyArray):
        array = _Array(ref, part.shape, part.dtype, stride=False)
    elif isinstance(part, LazyList) and part.block_starts() is None:
        array = _Array(ref, part.shape, _dtype_of(part, np), stride=True)  # type: ignore[attr-defined]
    else:
        raise TypeError(f"{path!r} is not a NumPy array or a fixed-stride list of numbers, but {type(part).__name__}")
    if chunks is None:
        row_bytes = array.dtype.itemsize * _prod(array.shape[1:])
        chunks = (max(1, CHUNK_BYTES // max(1, row_bytes)), *array.shape[1:])
    meta = np.empty((0,) * array.ndim, dtype=array.dtype)
    return da.from_array(array, chunks=chunks, name=name, lock=False, asarray=False, meta=meta)


class _Array:
    """What ``da.from_array`` reads chunks from: a stored NumPy array, or a fixed-stride list
    of numbers (a selection reads the rows it spans with one read, decoded together)."""

    def __init__(self, ref: PartRef, shape: tuple[int, ...], dtype: Any, stride: bool) -> None:
        self.ref, self.shape, self.dtype, self.stride = ref, tuple(shape), dtype, stride
        self.ndim = len(self.shape)

    def __getitem__(self, key: Any) -> Any:
        part: Any = self.ref.open()
        if not self.stride:
            return part[key]
        np = numpy()
        key = key if isinstance(key, tuple) else (key,)
        rows = key[0] if key else slice(None)
        rest = tuple(key[1:])
        if not isinstance(rows, slice):
            i = rows.__index__() % self.shape[0]
            return self[(slice(i, i + 1),) + rest][0]
        start, stop, step = rows.indices(self.shape[0])
        picked = range(start, stop, step)
        if not picked:
            return np.empty((0, *self.shape[1:]), dtype=self.dtype)[(slice(None),) + rest]
        lo, hi = min(picked), max(picked) + 1
        block = np.asarray(part.read_items(lo, hi), dtype=self.dtype).reshape((hi - lo, *self.shape[1:]))
        return block[(slice(start - lo, stop - lo if step > 0 else None, step),) + rest]


def _dtype_of(part: LazyList, np: Any) -> Any:
    """float64 or int64, from the first element (every element has the same encoded size)."""
    first: Any = part
    while isinstance(first, (LazyList, list)):
        if not len(first):
            return np.dtype("float64")
        first = first[0]
    if isinstance(first, bool) or not isinstance(first, (int, float)):
        raise TypeError(f"a fixed-stride list of {type(first).__name__}, not of numbers: no dask array")
    return np.dtype("float64" if isinstance(first, float) else "int64")


def _prod(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def to_bag(source: Any, path: Any = None, partition_size: int | None = None, **options: Any) -> Any:
    """A ``dask.bag`` over the lazy list at ``path``: partitions of whole stored blocks,
    ``partition_size`` items or more each (default: about ``CHUNK_BYTES`` of stored bytes),
    each read with one request."""
    db = dask_module("dask.bag")
    dask = dask_module("dask")
    part, ref, name = _part(source, path, options)
    if not isinstance(part, LazyList):
        raise TypeError(f"{path!r} is not a list stored lazily, but {type(part).__name__}")
    n = len(part)
    bounds = _partitions(part, partition_size)
    read = dask.delayed(_read_items, pure=True)
    parts = [read(ref, a, b, dask_key_name=(name, k)) for k, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))]
    return db.from_delayed(parts) if n else db.from_sequence([], npartitions=1)


def _partitions(part: LazyList, size: int | None) -> list[int]:
    """Item indexes that cut ``part`` into partitions at stored block boundaries."""
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        raise ValueError(f"partition_size must be a number of items (an int >= 1), not {size!r}")
    n = len(part)
    starts = part.block_starts()
    location = part.location()
    if starts is None:  # any item is a boundary
        per = size or max(1, CHUNK_BYTES * n // max(1, location.size))
        return [*range(0, n, per), n] if n else [0]
    bounds = [0]
    per_bytes = CHUNK_BYTES * n // max(1, location.size)  # items in about CHUNK_BYTES
    for start in starts[1:-1]:
        if start - bounds[-1] >= (size or per_bytes):
            bounds.append(start)
    return [*bounds, n] if n else [0]


def _read_items(ref: PartRef, start: int, stop: int) -> list[Any]:
    part: Any = ref.open()
    items: list[Any] = part.read_items(start, stop)
    return items


def to_archive(
    collection: Any,
    target: Any,
    *,
    fs: Any = None,
    storage_options: dict[str, Any] | None = None,
    compute: bool = True,
    **dump_options: Any,
) -> Any:
    """Write a ``dask.bag`` (or a sequence of ``dask.delayed`` lists) as one archive whose root
    list holds every item in order: each partition written as an archive by the worker that
    holds it (in a folder ``TARGET.parts-XXXXXXXXXXXX`` beside ``target``, on storage every
    worker reaches), then joined by copying their bytes (``msglc.concat``: on S3 by
    server-side copy where it can), the parts removed: if they cannot be, an ``OSError`` says
    so (the archive is written then). Parts a killed run left are removed by the next run to
    the same target (``msglc.io.scratch``: at once locally, after ten minutes in S3).
    ``compute=False``: the ``Delayed`` that does it (the parts folder is made now)."""
    dask = dask_module("dask")
    parts = collection.to_delayed() if hasattr(collection, "to_delayed") else list(collection)
    where = resolve_name(target, fs, storage_options)
    folder = scratch.new_folder(where if isinstance(where, RemotePath) else target)
    try:
        lease = scratch.Lease(folder, hold=compute)
    except BaseException as e:  # (a lease written, but its answer lost)
        _remove_after(e, folder)
        raise
    write = dask.delayed(_write_part, pure=False)
    written = [write(p, folder, f"{k:06d}.mlc", dump_options, compute) for k, p in enumerate(parts)]
    joined = dask.delayed(_join, pure=False)(written, target, folder, fs, storage_options, dump_options)
    if not compute:
        return joined
    try:
        with lease:  # (kept alive until the result is in)
            result = joined.compute()
    except _PartsLeft as e:
        try:  # the worker could not remove them: once more from here
            scratch.remove(folder)
        except OSError:
            raise e from e.__cause__
        return target
    except BaseException as e:
        _remove_after(e, folder)
        raise
    if isinstance(folder, tuple):  # a renewal of the lease may have raced the join's removal
        try:
            scratch.remove(folder)
        except OSError as e:
            raise _parts_left(target, folder, e) from e
    return result


class _PartsLeft(OSError):
    """The archive was written, its parts could not be removed."""


def _remove_after(failure: BaseException, folder: Any) -> None:
    """Remove the parts after ``failure``; if they cannot be, say so on it."""
    try:
        scratch.remove(folder)
    except OSError as left:
        if hasattr(failure, "add_note"):  # Python 3.11
            where = scratch.label(folder)
            failure.add_note(f"its parts were left in {where} ({left}): the next to_archive to it removes them")


def _write_part(items: Any, folder: Any, name: str, options: dict[str, Any], watch: bool) -> Any:
    """One partition's part. (Its time renews the folder's lease: nothing in it newer than
    the lease's expiry is what makes a folder a dead writer's.) Dask does not stop a task
    that is running when another fails: with ``watch`` (to_archive computes, and removes the
    folder when a task fails), a part written after the run ended is taken back. Not with
    ``compute=False``: nothing removes its folder while a task runs, and its Delayed may be
    computed again after its folder is gone, when its parts must be written anew."""
    items = list(items)
    where = scratch.piece(folder, name)
    if watch and scratch.ended(folder):
        return where
    if isinstance(where, tuple):
        api.dump(where[1], items, fs=where[0], **options)
    else:
        os.makedirs(os.path.dirname(where), exist_ok=True)
        api.dump(where, items, **options)
    if watch and scratch.ended(folder):
        scratch.remove(folder)
    return where


def _join(names: list[Any], target: Any, folder: Any, fs: Any, storage_options: Any, options: dict[str, Any]) -> Any:
    """The parts concatenated at ``target`` (streamed through this worker), then removed."""
    scratch.renew(folder)
    try:
        infos = [FileInfo(n[1], fs=n[0]) if isinstance(n, tuple) else FileInfo(n) for n in names]
        api.concat(target, infos, fs=fs, storage_options=storage_options, **options)
    except BaseException as e:
        _remove_after(e, folder)
        raise
    try:
        scratch.remove(folder)
    except OSError as e:
        raise _parts_left(target, folder, e) from e
    return target


def _parts_left(target: Any, folder: Any, error: OSError) -> _PartsLeft:
    return _PartsLeft(
        f"{target} was written, but its parts in {scratch.label(folder)} could not be removed ({error}): "
        "the next to_archive to it removes them, or remove them yourself"
    )
