"""Pick the ``Source`` for what a reader is given: a path, bytes, a memory map, a file
object, or a remote archive. It sits above both local sources (``source``) and remote ones
(``remote``), so neither needs to know of the other."""

from __future__ import annotations

import io
import mmap
import os
import stat
from typing import Any

from msglc.io.base import Counter, Source
from msglc.io.local import BufferSource, FileSource, MappedSource, StreamSource
from msglc.io.names import RemotePath, is_local, resolve_name
from msglc.io.remote import open_remote


def _is_plain_file(f: Any) -> bool:
    """True for an ``open(path, "rb")`` object, whose descriptor holds the archive's bytes
    (unlike a gzip or other wrapping file object that also has a ``fileno()``)."""
    raw = getattr(f, "raw", f)
    return isinstance(raw, io.FileIO)


def _open_path(path: Any) -> FileSource:
    """Open a path for reading without hanging on a FIFO; refuse what is not a regular file."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TypeError(f"LazyReader needs a regular file, not {os.fspath(path)!r}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return FileSource(fd)
    except BaseException:
        os.close(fd)
        raise


def open_source(
    source: Any,
    counter: Counter | None = None,
    fs: Any = None,
    storage_options: dict[str, Any] | None = None,
    **remote: Any,
) -> Source:
    """A ``Source`` for a path, a bytes-like object, a memory map, a readable seekable binary
    file, or a remote archive (a URL, a ``upath.UPath``, a path with an fsspec ``fs``, an open
    fsspec file); ``remote``: ``RemoteSource`` options (``block_size``, ``cache_blocks``)."""
    source = resolve_name(source, fs, storage_options)
    if isinstance(source, RemotePath):
        return open_remote(source.fs, source.path, counter=counter, **remote)
    if (
        hasattr(source, "read")
        and hasattr(source, "fs")
        and isinstance(getattr(source, "path", None), str)
        and not is_local(source.fs)
    ):
        # an open fsspec file: read by ranges, not through its buffer
        return open_remote(source.fs, source.path, size=getattr(source, "size", None), counter=counter, **remote)
    if remote:
        raise TypeError(f"{', '.join(sorted(remote))} apply to remote archives only")
    if isinstance(source, (str, os.PathLike)):
        return _open_path(source)
    if isinstance(source, mmap.mmap):
        return MappedSource(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return BufferSource(source)
    if hasattr(source, "read") and hasattr(source, "seek"):
        if isinstance(source, io.TextIOBase):
            raise TypeError("LazyReader needs a binary file, not a text file (open it with 'rb')")
        if hasattr(source, "seekable") and not source.seekable():
            raise TypeError("LazyReader needs a seekable file; read a pipe or socket into bytes first")
        if _is_plain_file(source):
            # a descriptor of our own: the caller may close its file, and the number be reused
            # for another file, while this reader is still open
            return FileSource(os.dup(source.fileno()))
        return StreamSource(source)
    raise TypeError(
        f"LazyReader source must be a path, a URL, bytes-like object or binary file, not {type(source).__name__}"
    )
