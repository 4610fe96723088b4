"""Where an archive's bytes come from, behind one call: ``read(offset, size)``.

Local files are read with ``os.pread`` (no shared seek position, so one reader serves many
threads); bytes-like objects are sliced as zero-copy memoryviews; other file objects are
seeked under a lock.
"""

from __future__ import annotations

import io
import os
import threading
from typing import Any

from .errors import TruncatedError


class Source:
    """Random access to ``size`` bytes."""

    size: int

    def read(self, offset: int, size: int) -> bytes | memoryview:
        raise NotImplementedError

    def close(self) -> None:
        pass


class FileSource(Source):
    """A local file by descriptor; ``owns`` says whether closing the source closes it."""

    def __init__(self, fd: int, owns: bool) -> None:
        self.fd = fd
        self.owns = owns
        self.size = os.fstat(fd).st_size

    def read(self, offset: int, size: int) -> bytes:
        data = os.pread(self.fd, size, offset)
        if len(data) != size:
            raise TruncatedError(f"file ended at {offset + len(data)} while reading {size} bytes at offset {offset} (was it truncated?)")
        return data

    def close(self) -> None:
        if self.owns:
            os.close(self.fd)


class BufferSource(Source):
    def __init__(self, data: Any) -> None:
        self.view = memoryview(data).cast("B")
        self.size = len(self.view)

    def read(self, offset: int, size: int) -> memoryview:
        return self.view[offset : offset + size]

    def close(self) -> None:
        self.view.release()


class StreamSource(Source):
    """A seekable file object without a usable descriptor (e.g. ``io.BytesIO``)."""

    def __init__(self, f: Any) -> None:
        self.f = f
        self.lock = threading.Lock()
        self.size = f.seek(0, io.SEEK_END)

    def read(self, offset: int, size: int) -> bytes:
        with self.lock:
            self.f.seek(offset)
            data = self.f.read(size)
        if len(data) != size:
            raise TruncatedError(f"stream ended at {offset + len(data)} while reading {size} bytes at offset {offset}")
        return data


def open_source(source: Any) -> Source:
    """A ``Source`` for a path, a bytes-like object or a readable, seekable binary file."""
    if isinstance(source, (str, os.PathLike)):
        return FileSource(os.open(source, os.O_RDONLY | getattr(os, "O_BINARY", 0)), owns=True)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return BufferSource(source)
    if hasattr(source, "read") and hasattr(source, "seek"):
        if isinstance(source, io.TextIOBase):
            raise TypeError("LazyReader needs a binary file, not a text file (open it with 'rb')")
        try:
            fd = source.fileno()
            os.pread(fd, 0, 0)
        except (AttributeError, OSError, io.UnsupportedOperation):
            if hasattr(source, "seekable") and not source.seekable():
                raise TypeError("LazyReader needs a seekable file; read a pipe or socket into bytes first") from None
            return StreamSource(source)
        return FileSource(fd, owns=False)
    raise TypeError(f"LazyReader source must be a path, bytes-like object or binary file, not {type(source).__name__}")
