"""The entry points that choose a path through the layers: ``dump`` and ``dumps`` copy the
bytes of a ``LazyReader`` or a lazy part (``edit.repack``) and encode any other value
(``write``); ``combine`` writes a new archive (``edit.combine``) or appends (``edit.append``)."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

from msglc.edit.append import append
from msglc.edit.combine import combine_into
from msglc.edit.concat import concat_into
from msglc.edit.inputs import FileInfo, check_names
from msglc.edit.repack import repack
from msglc.io.atomic import check_target
from msglc.io.names import resolve_name
from msglc.read.lazy_reader import LazyReader
from msglc.read.part import LazyPart
from msglc.write.dump import dump as dump_value
from msglc.write.dump import dumps as dumps_value

__all__ = ["combine", "concat", "dump", "dumps"]


def dump(
    target: str | bytes | os.PathLike[str] | BinaryIO,
    obj: Any,
    *,
    fs: Any = None,
    storage_options: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """Write ``obj`` as an archive to a path (atomically) or to a writable binary file object.

    A ``LazyReader`` or a lazy part of one is copied as its encoded bytes when the threshold
    and the compression are the source's (no decoding; a compressed archive's frames are copied
    as they are), else decoded and written anew. Without ``compression=`` (per call, or a
    configured default other than None) the copy keeps the source's compression.

    A remote target (``"s3://bucket/key"`` with ``storage_options``, a ``upath.UPath``, or a
    path on the fsspec file system ``fs``) is streamed to the object, which appears only once
    it is complete.

    The file object is written sequentially, never seeked, so pipes and sockets work, and only
    once every value is checked. Objects holding generators, ``Pairs`` or containers that
    define their own iteration (dict subclasses with their own ``items()``, list, tuple and set
    subclasses with their own ``__iter__``) are streamed by ``LazyWriter``: a file object must
    then be seekable, and keeps what was written if a value fails midway (a path is still
    replaced only on success). A ``StopIteration`` raised inside becomes a ``RuntimeError``.
    """
    if isinstance(obj, (LazyPart, LazyReader)):
        target = resolve_name(target, fs, storage_options)
        check_target(target, "dump")
        return repack(target, obj, options)
    return dump_value(target, obj, fs=fs, storage_options=storage_options, **options)


def dumps(obj: Any, **options: Any) -> bytes:
    """The archive for ``obj`` as bytes: what ``dump`` writes for it. A ``LazyReader`` or a
    lazy part is repacked as ``dump`` repacks it (copied when the threshold and the
    compression are the source's, its compression kept unless ``compression=`` is given).
    Options: see ``msglc.configure``."""
    if isinstance(obj, (LazyPart, LazyReader)):
        out = io.BytesIO()
        repack(out, obj, options)
        return out.getvalue()
    return dumps_value(obj, **options)


def combine(
    archive: str | os.PathLike[str] | BinaryIO,
    files: FileInfo | Sequence[FileInfo],
    *,
    mode: str = "w",
    validate: bool = True,
    progress: Callable[[int], None] | None = None,
    fs: Any = None,
    storage_options: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """Write one archive holding the archives ``files``: a dict if every ``FileInfo`` has a
    name, a list if none has. Their bytes are copied, never decoded; read the result with the
    same paths as before, under the name or index: ``reader["run1/energy/3"]``.

    ``mode="w"`` writes a new archive (atomically, like ``dump``); ``mode="a"`` is ``append``.
    ``progress(n)`` is called as bytes are copied. ``options``: as for ``dump`` (the
    threshold cuts the new root's spans and encodes ``obj=`` inputs). With ``compression="zstd"``
    the frames of compressed inputs are copied as they are and the rest is compressed; without
    it (per call, or configured) the result is compressed when every archive input is, and
    ``append`` keeps the archive's compression. A remote ``archive``
    (URL with ``storage_options``, ``upath.UPath``, path with ``fs``) is streamed, as by
    ``dump``.

    ``archive`` may be a writable binary file object: ``mode="w"`` writes the archive from its
    current position on, in sequence, as ``dump`` does (read it from there: a reader reads a
    file object from offset 0); ``mode="a"`` appends to the archive it holds from offset 0
    (see ``append``). ``validate``: the published msglc's switch; inputs are always checked
    (False is accepted and changes nothing)."""
    if mode not in ("w", "a"):
        raise ValueError(f"combine() mode must be 'w' (write) or 'a' (append), not {mode!r}")
    archive = resolve_name(archive, fs, storage_options)
    infos = [files] if isinstance(files, FileInfo) else list(files)
    check_names(infos)
    check_target(archive, "combine")
    if mode == "a":
        return append(archive, infos, progress=progress, **options)
    combine_into(archive, infos, None, options, progress)


def concat(
    archive: str | os.PathLike[str] | BinaryIO,
    files: Any,
    *,
    progress: Callable[[int], None] | None = None,
    fs: Any = None,
    storage_options: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """Write one archive whose root list holds the items of the root lists of ``files`` (paths,
    URLs, bytes, ``LazyReader``s or ``FileInfo``s), in order: ``reader.to_obj()`` is the
    concatenation of theirs. Their bytes are copied, never decoded (how
    ``msglc.dask.to_archive`` gathers partitions); ``options`` and targets as for
    ``combine``."""
    archive = resolve_name(archive, fs, storage_options)
    given = [files] if isinstance(files, FileInfo) else list(files)
    infos = [f if isinstance(f, FileInfo) else FileInfo(f) for f in given]
    check_target(archive, "concat")
    concat_into(archive, infos, options, progress)
