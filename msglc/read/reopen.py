"""Readers and lazy parts that travel to other processes (``pickle``, Dask workers).

A reader pickles as what opened it (a path, a URL with its options, a file system and a
path, or the bytes themselves) and what it found there (its size and trailer); a lazy part
pickles as that plus where it is stored. Unpickling opens the archive once per process and
shares it among every reader and part unpickled there, and refuses an archive that changed
since (``ArchiveChangedError``). A reader over a file object cannot be pickled: the file is
this process's.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import threading
from typing import Any

import msgspec

from msglc.errors import ArchiveChangedError
from msglc.read.archive import Archive
from msglc.read.legacy import any_root
from msglc.read.part import LazyPart, archive_of
from msglc.read.views import ViewCache, stride_row, view

SHARED_MAX = 16  # archives kept open per process for unpickled readers and parts

_shared: dict[str, Archive] = {}
_lock = threading.Lock()


def shared_archives() -> int:
    """How many archives this process keeps open for the readers and parts unpickled in it
    (at most ``SHARED_MAX``): one per archive, however many of them were unpickled. For tests
    and for watching a worker's open files; not part of the documented API."""
    with _lock:
        return len(_shared)


class Reopen:
    """How an archive is opened again elsewhere: ``source`` (an absolute path, a URL, a UPath,
    bytes), the reader's options, and ``identity`` (its size and trailer) to recognise it."""

    __slots__ = ("source", "options", "identity")

    def __init__(self, source: Any, options: dict[str, Any], identity: tuple[int, ...]) -> None:
        self.source = source
        self.options = options
        self.identity = identity

    def __reduce__(self) -> tuple[Any, ...]:
        source = self.source
        if isinstance(source, (memoryview, bytearray, mmap.mmap)):
            source = bytes(source)  # the bytes themselves travel
        return (Reopen, (source, self.options, self.identity))

    def archive(self) -> Archive:
        """This process's open archive for it (opened on first use, then shared)."""
        source = self.source
        if isinstance(source, (bytes, bytearray, memoryview, mmap.mmap)):
            digest = hashlib.blake2b(source, digest_size=16).digest()
            named: Any = ("bytes", len(source), digest)
        else:
            named = source
        key = repr((os.getpid(), named, sorted(self.options.items()), self.identity))
        with _lock:
            a = _shared.get(key)
            if a is not None and not a.closed:
                return a
            options = dict(self.options)
            a = Archive(source, ViewCache(options.pop("cached", True)), None, any_root, **options)
            if identity_of(a) != self.identity:
                a.close()
                raise ArchiveChangedError(
                    f"{source_name(source)} changed since the reader was pickled: it is not the archive it read"
                )
            a.reopen = self
            if len(_shared) >= SHARED_MAX:
                del _shared[next(iter(_shared))]  # the oldest: closed once nothing uses it
            _shared[key] = a
            return a

    def part(self, where: tuple[Any, ...]) -> LazyPart:
        """The lazy part stored at ``where`` (``LazyPart.where()``) in this process's archive."""
        a = self.archive()
        if where[0] == "row":
            _, base, pos, level = where
            return stride_row(a, base, pos, level, a.views.cached)
        _, base, span, pos, size = where
        return view(a, base, span, pos, size)


class PartRef:
    """A lazy part named by its archive's ``Reopen`` and its place, opened only by ``open()``:
    for tasks, so that a missing or changed archive fails in the task that reads it (as its
    own error), not while the task is unpickled."""

    __slots__ = ("reopen", "where")

    def __init__(self, reopen: Reopen, where: tuple[Any, ...]) -> None:
        self.reopen = reopen
        self.where = where

    def __reduce__(self) -> tuple[Any, ...]:
        return (PartRef, (self.reopen, self.where))

    def open(self) -> LazyPart:
        return self.reopen.part(self.where)


def part_ref(part: LazyPart) -> PartRef:
    """``part`` as a ``PartRef``; TypeError for a part of a reader over a file object."""
    reopen = archive_of(part).reopen
    if reopen is None:
        part.__reduce__()  # its error
    return PartRef(reopen, part.where())


def reopen_spec(source: Any, archive: Archive, options: dict[str, Any]) -> Reopen | None:
    """How to open ``archive`` (opened from ``source`` with the ``Archive`` options ``options``)
    again in another process; None when it cannot be: a file object belongs to this process."""
    if hasattr(source, "read") or hasattr(source, "write"):
        return None
    local = options.get("fs") is None and not hasattr(source, "fs")  # not a UPath, nor a path on fs
    if local and isinstance(source, os.PathLike):
        source = os.fspath(source)
    if local and isinstance(source, str) and "://" not in source:
        source = os.path.abspath(source)  # the same file for a worker started in another directory
    return Reopen(source, {k: v for k, v in options.items() if v is not None}, identity_of(archive))


def identity_of(archive: Archive) -> tuple[int, ...]:
    return (archive.opened.size, *msgspec.structs.astuple(archive.opened.trailer))


def source_name(source: Any) -> str:
    if isinstance(source, (bytes, bytearray, memoryview, mmap.mmap)):
        return f"the archive of {len(source)} bytes"
    return repr(source)
