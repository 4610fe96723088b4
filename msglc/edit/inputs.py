"""The inputs of ``combine`` and ``append``: ``FileInfo`` (an archive, or an object to encode,
under a name) opened as ``Input``, and the checks that run before any byte is written."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from msglc.edit.legacy import converted
from msglc.format.layout import Trailer
from msglc.io.uploads import pinned_to_sources
from msglc.read.archive import Archive
from msglc.read.lazy_reader import LazyReader
from msglc.read.part import archive_of
from msglc.read.views import ViewCache
from msglc.write.dump import dumps

COPY_CHUNK = 1 << 24


_MISSING = object()


class FileInfo:
    """One input of ``combine``: an archive (a path, bytes, a binary file or an open
    ``LazyReader``) or, with ``obj=``, a Python object to store; ``name`` is its key (str or
    int) in the combined dict (leave every name out for a list). ``fs``: the fsspec file
    system a path is read from (default: a local path, or a URL's own)."""

    __slots__ = ("path", "name", "obj", "fs")

    def __init__(self, path: Any = None, name: str | int | None = None, *, fs: Any = None, obj: Any = _MISSING) -> None:
        if (path is None) == (obj is _MISSING):
            raise ValueError("FileInfo needs either an archive (path, bytes, file or LazyReader) or obj=, not both")
        if name is not None and (not isinstance(name, (str, int)) or isinstance(name, bool)):
            raise TypeError(f"FileInfo name must be a str or an int (a dict key), not {type(name).__name__}")
        if fs is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"FileInfo fs= is where a path is read from; the input here is a {type(path).__name__}")
        self.path = path
        self.name = name
        self.obj = obj
        self.fs = fs

    def __repr__(self) -> str:
        what = f"obj={type(self.obj).__name__}" if self.path is None else repr(self.path)
        return f"FileInfo({what}, name={self.name!r})"


class Input:
    """An opened input: its archive and whether this module opened it (and must close it)."""

    def __init__(self, info: FileInfo, options: dict[str, Any]) -> None:
        self.name = info.name
        self.given = info.path
        self.label = repr(info)
        self.owned = not isinstance(info.path, LazyReader)
        self.from_archive = info.path is not None  # not an ``obj=`` encoded here
        if info.path is None:
            self.archive = Archive(dumps(info.obj, **options), ViewCache(False), None)
        elif isinstance(info.path, LazyReader):
            self.archive = archive_of(info.path)
            if self.archive.closed:
                raise ValueError(f"{self.label}: the LazyReader is closed")
        else:
            self.archive = Archive(info.path, ViewCache(False), None, fs=info.fs)
        if self.archive.opened.legacy is not None:  # the published msglc's: converted in memory, then copied
            if self.owned:
                self.archive.close()
            if info.fs is None:
                data = converted(info.path, options)
            else:
                with LazyReader(info.path, cached=False, fs=info.fs) as reader:
                    data = converted(reader, options)
            self.archive = Archive(data, ViewCache(False), None)
            self.owned = True
        self.trailer: Trailer = self.archive.opened.trailer

    def close(self) -> None:
        if self.owned:
            self.archive.close()


@contextmanager
def opened(infos: list[FileInfo], options: dict[str, Any]) -> Iterator[list[Input]]:
    """The inputs opened (each checked: header, trailer, version), closed when done."""
    inputs: list[Input] = []
    try:
        for info in infos:
            inputs.append(Input(info, options))
        yield inputs
    finally:
        for part in inputs:
            part.close()


def refuse_target_among(target: Any, inputs: list[Input]) -> None:
    """An output may not be one of its inputs (by file identity, so a symlink or another name
    counts): writing it would replace, or change in place, what is being copied."""
    for part in inputs:
        if part.given is target and not isinstance(target, (str, bytes, os.PathLike)):  # (a BytesIO has no inode)
            raise ValueError(f"{part.label} is the output {_label(target)} itself: write to another file")
    try:
        if isinstance(target, (str, bytes, os.PathLike)):
            st = os.stat(target)
        elif hasattr(target, "fileno"):  # a file object: is it open on an input?
            st = os.fstat(target.fileno())
        else:
            return
    except (OSError, ValueError):  # not there yet, or no descriptor: no input is it
        return
    for part in inputs:
        if part.archive.src.identity() == (st.st_dev, st.st_ino):
            raise ValueError(f"{part.label} is the output {_label(target)} itself: write to another file")


def pin_target(target: Any, inputs: list[Input]) -> Any:
    """A remote target that is also an input, rewritten from itself, pinned to the version
    read (a read-modify-write: another writer's change meanwhile fails the write)."""
    return pinned_to_sources(target, [part.archive.file for part in inputs])


def _label(target: Any) -> str:
    return repr(os.fsdecode(target)) if isinstance(target, (str, bytes, os.PathLike)) else repr(target)


def check_names(infos: list[Any]) -> None:
    if not all(isinstance(info, FileInfo) for info in infos):
        bad = next(info for info in infos if not isinstance(info, FileInfo))
        raise TypeError(f"combine() takes FileInfo inputs, not {type(bad).__name__}")
    named = [info.name is not None for info in infos]
    if any(named) and not all(named):
        raise ValueError("combine() inputs must all have a name (a dict) or none (a list)")
    names = [info.name for info in infos if info.name is not None]
    if len(set(names)) != len(names):
        repeated = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"combine() input name {repeated!r} is used more than once")
