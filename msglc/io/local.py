"""Where an archive's bytes come from, behind one call: ``read(offset, size)``.

Local files are read with ``os.pread`` (no shared seek position, so one reader serves many
threads); bytes-like objects are sliced as zero-copy memoryviews; other seekable file objects
(compressed files, ``io.BytesIO``) are seeked under a lock.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import Any, Protocol

from msglc.format.layout import HEADER_SIZE
from msglc.io.base import Source, closed_error, grid
from msglc.util import accel

STAMP_BYTES = HEADER_SIZE + 5  # the header and the root's msgpack header
# reads of MAP_READ_MIN to MAP_READ bytes copy from the guarded memory map (docs/performance.md):
MAP_READ_MIN = 1 << 16  # a smaller read costs more from a map whose pages it is the first to touch
MAP_READ = 1 << 20  # a larger one holds the GIL too long (a copy must): pread lets other threads run


class FileSource(Source):
    """A local file by a descriptor of its own, closed with the source."""

    node_window = 4096

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = os.fstat(fd).st_size
        speedups = accel.speedups  # the C lookups read the file directly through this: from a
        # memory map where a file cut short gives a failed read, not a SIGBUS (_speedups.c)
        self.direct: accel.File | None = speedups.File(fd, self.size) if speedups is not None else None
        # a reader dropped without close() still gives its descriptor back
        self._finalizer = weakref.finalize(self, os.close, fd)

    def identity(self) -> tuple[int, int] | None:
        st = os.fstat(self.fd)
        return st.st_dev, st.st_ino

    def stamp(self) -> object:
        st = os.fstat(self.fd)  # not ctime: chmod or rename change it, the bytes stay
        self.size = st.st_size
        return st.st_size, st.st_mtime_ns

    def read(self, offset: int, size: int, bulk: bool = False) -> bytes | memoryview:
        """``bulk``: by ``pread`` whatever the size (``read_bulk``)."""
        direct = self.direct
        if MAP_READ_MIN <= size <= MAP_READ and not bulk and direct is not None and accel.speedups is not None:
            mapped = direct.read(offset, size)  # a copy out of the guarded map: no system call
            if mapped is not None:
                return mapped
        try:  # the usual read, in one call: every key lookup makes two
            data: bytes | memoryview = os.pread(self.fd, size, offset)
        except OSError:
            if self.closed:
                raise closed_error() from None
            raise
        if self.closed:  # closed by another thread mid-read: the descriptor may be reused
            raise closed_error()
        if len(data) == size:
            return data
        if data:  # one call reads at most ~2 GiB on Linux: read the rest
            buf = bytearray(data)
            while len(buf) < size:
                more = self._pread(size - len(buf), offset + len(buf))
                if not more:
                    break
                buf += more
            data = memoryview(buf)  # no copy
        if len(data) != size:
            raise self._short(offset, size, len(data))
        return data

    def _pread(self, size: int, offset: int) -> bytes:
        try:
            data = os.pread(self.fd, size, offset)
        except OSError:
            if self.closed:
                raise closed_error() from None
            raise
        if self.closed:
            raise closed_error()
        return data

    def fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes | memoryview]:
        """Many ranges: spread over a few threads (a cold disk or network file system serves
        concurrent reads in parallel; a read from the page cache costs about a microsecond,
        so small batches stay on this thread)."""
        if len(ranges) < 64:
            return super().fetch_many(ranges)
        workers = min(8, len(ranges) // 32)
        parts = [ranges[k::workers] for k in range(workers)]
        with ThreadPoolExecutor(workers) as pool:
            done = list(pool.map(lambda part: [self.read(a, b - a, True) for a, b in part], parts))
        out: list[Any] = [None] * len(ranges)
        for k, part in enumerate(done):
            out[k::workers] = part
        return out

    def read_bulk(self, offset: int, size: int) -> bytes | memoryview:
        """By ``pread``, never from the map: the system call lets other threads run while it
        waits, where a copy from the map holds the GIL (``MAP_READ``)."""
        return self.read(offset, size, True)

    if hasattr(os, "preadv"):

        def read_into(self, offset: int, out: memoryview) -> None:
            done = 0
            while done < len(out):  # a single call reads at most ~2 GiB on Linux
                try:
                    got = os.preadv(self.fd, [out[done:]], offset + done)
                except OSError:
                    if self.closed:
                        raise closed_error() from None
                    raise
                if not got:  # (or closed by another thread: the number may be another file's now)
                    raise self._short(offset, len(out), done)
                done += got
            if self.closed:
                raise closed_error()

    def read_grid(
        self, offset: int, counts: tuple[int, ...], strides: tuple[int, ...], size: int, out: memoryview
    ) -> None:
        """One ``pread`` per piece in a C loop (a Python call per piece costs five times the
        system call; docs/performance.md): from the first piece it could not read whole, the
        pieces are read again one by one, so a short or failed read is reported as ``read``
        reports it."""
        direct = self.direct
        done = 0
        if direct is not None and accel.speedups is not None:
            done = direct.read_grid(offset, counts, strides, size, out)
        if self.closed:  # closed by another thread mid-read: the descriptor may be reused
            raise closed_error()
        if done * size < len(out):
            for k, at in enumerate(islice(grid(offset, counts, strides), done, None), done):
                self.read_into(at, out[k * size : (k + 1) * size])

    def close(self) -> None:
        if not self.closed:
            super().close()
            if self.direct is not None:
                self.direct.close()
            self._finalizer()


class BufferSource(Source):
    zero_copy = True
    max_gap = 0

    def __init__(self, data: Any) -> None:
        self.view = memoryview(data).cast("B")
        self.size = len(self.view)
        speedups = accel.speedups  # the C lookups copy from the memory directly through this
        self.direct: accel.File | None = speedups.Memory(self.view) if speedups is not None else None

    def read(self, offset: int, size: int) -> memoryview:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise self._short(offset, size, max(0, min(size, self.size - offset)))
        return self.view[offset : offset + size]

    def close(self) -> None:
        super().close()
        if self.direct is not None:
            self.direct.close()
        with contextlib.suppress(BufferError):  # views handed out keep the buffer alive
            self.view.release()


class MappedSource(BufferSource):
    """A memory map of a file, which another process may change meanwhile: an append in
    place rewrites the header (its committed end, the root's count), so those bytes tell a
    reader that the TOC it holds may be gone. (msglc's writers never make a file shorter; a
    file another program truncates kills a process that reads its mapping past the end.)"""

    def stamp(self) -> object:
        return bytes(self.view[:STAMP_BYTES])


class SeekableFile(Protocol):
    """What ``StreamSource`` uses of a binary file object."""

    def tell(self) -> int: ...

    def seek(self, offset: int, whence: int = ..., /) -> int: ...

    def read(self, size: int = ..., /) -> bytes: ...


class StreamSource(Source):
    """A seekable file object without a usable descriptor (e.g. ``io.BytesIO``, ``gzip``)."""

    node_window = 4096

    def __init__(self, f: SeekableFile) -> None:
        self.f = f
        self.lock = threading.Lock()
        position = f.tell()
        self.size = f.seek(0, io.SEEK_END)
        f.seek(position)

    def read(self, offset: int, size: int) -> bytes:
        with self.lock:
            if self.closed:
                raise closed_error()
            position = self.f.tell()
            self.f.seek(offset)
            data = self.f.read(size)
            self.f.seek(position)
        if len(data) != size:
            raise self._short(offset, size, len(data))
        return data
