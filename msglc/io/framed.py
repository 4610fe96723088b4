"""``FramedSource``: a compressed archive read as if its data section were plain (format 2.0,
in progress: docs/compression.md). Logical offsets inside the data section are served from
the zstd frames that hold them, each decompressed at most once while it stays in a small
cache; offsets before it (the header) and after it (TOC, trailer) from the file, shifted by
what compression saved."""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections import OrderedDict
from typing import Any

from msglc.errors import ArchiveChangedError, CorruptedError, MsglcError
from msglc.format.frames import FrameTable
from msglc.io.base import Source

CACHE_FRAMES = 16  # decompressed frames kept (at most 16 MB; 16 x the threshold typically)


def _zstandard() -> Any:
    try:
        import zstandard
    except ImportError:
        raise ImportError("this archive is compressed: pip install 'msglc[zstd]' to read it") from None
    return zstandard


class FramedSource(Source):
    """``raw`` holds ``data_off`` bytes, then the frames of ``table`` (``stored`` bytes with
    the seek table), then the rest; this source shows ``data_off`` bytes, the plain data
    (``table.logical[-1]`` bytes), then the rest."""

    def __init__(self, raw: Source, data_off: int, table: FrameTable, stored: int) -> None:
        self._zstd = _zstandard()
        self.raw = raw
        self.data_off = data_off
        self.table = table
        self.plain = table.logical[-1]
        self.shift = stored - self.plain  # add to a logical offset past the data to find it in the file
        self.size = raw.size - self.shift
        self.counter = raw.counter
        self.counts_itself = True  # the file's reads are counted (below, or by the file itself)
        self._count = raw.counter is not None and not raw.counts_itself
        self.max_gap = raw.max_gap
        self.max_request = raw.max_request
        self._frames: OrderedDict[int, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self._local = threading.local()

    def _raw(self, offset: int, size: int) -> bytes | memoryview:
        """A read of the file, counted as one request when the file does not count itself."""
        if self._count and self.counter is not None:
            self.counter.add(size)
        return self.raw.read(offset, size)

    def read(self, offset: int, size: int) -> bytes | memoryview:
        end, data_end = offset + size, self.data_off + self.plain
        if end <= self.data_off:
            return self._raw(offset, size)
        if offset >= data_end:
            return self._raw(offset + self.shift, size)
        if offset < 0 or size < 0 or end > self.size:
            raise self._short(offset, size, max(0, min(size, self.size - offset)))
        parts: list[bytes | memoryview] = []
        if offset < self.data_off:
            parts.append(self._raw(offset, self.data_off - offset))
        lo, hi = max(offset, self.data_off) - self.data_off, min(end, data_end) - self.data_off
        first = bisect_right(self.table.logical, lo) - 1
        for i in range(first, self.table.frames):
            start = self.table.logical[i]
            if start >= hi:
                break
            frame = self.frame(i)
            parts.append(memoryview(frame)[max(lo - start, 0) : min(hi - start, len(frame))])
        if end > data_end:
            parts.append(self._raw(data_end + self.shift, end - data_end))
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read_into(self, offset: int, out: memoryview) -> None:
        """Fill ``out`` from logical ``offset`` frame by frame (large NumPy reads): no frame is
        kept longer than its copy into ``out`` needs."""
        lo = offset - self.data_off
        if lo < 0 or lo + len(out) > self.plain:
            out[:] = self.read(offset, len(out))
            return
        done, first = 0, bisect_right(self.table.logical, lo) - 1
        for i in range(first, self.table.frames):
            if done == len(out):
                break
            start = self.table.logical[i]
            frame = self.frame(i)
            piece = memoryview(frame)[lo + done - start : min(len(frame), lo + len(out) - start)]
            out[done : done + len(piece)] = piece
            done += len(piece)

    def frame(self, i: int) -> bytes:
        """Frame ``i`` decompressed: from the cache, or read and decompressed (and checked: its
        declared size must be the table's, its zstd checksum must hold)."""
        with self._lock:
            cached = self._frames.get(i)
            if cached is not None:
                self._frames.move_to_end(i)
                return cached
        start, stop = self.table.stored[i], self.table.stored[i + 1]
        at = self.data_off + start
        data = self._raw(at, stop - start)
        expected = self.table.logical[i + 1] - self.table.logical[i]
        zstd = self._zstd
        try:
            params = zstd.get_frame_parameters(data)
        except zstd.ZstdError as e:
            raise self.damaged(f"compressed frame {i} at offset {at} is not a zstd frame: {e}") from None
        if params.content_size != expected:
            raise self.damaged(
                f"compressed frame {i} at offset {at} declares {params.content_size} bytes where the seek table "
                f"says {expected}"
            )
        if not params.has_checksum:
            raise self.damaged(f"compressed frame {i} at offset {at} carries no checksum")
        decompressor = getattr(self._local, "decompressor", None)
        if decompressor is None:  # one per thread: a decompressor is not thread-safe
            decompressor = self._local.decompressor = zstd.ZstdDecompressor()
        try:
            frame: bytes = decompressor.decompress(data, max_output_size=expected, allow_extra_data=False)
        except zstd.ZstdError as e:
            raise self.damaged(f"compressed frame {i} at offset {at} does not decompress: {e}") from None
        if len(frame) != expected:
            raise self.damaged(f"compressed frame {i} at offset {at} holds {len(frame)} bytes, not {expected}")
        with self._lock:
            self._frames[i] = frame
            if len(self._frames) > CACHE_FRAMES:
                self._frames.popitem(last=False)
        return frame

    def damaged(self, message: str) -> MsglcError:
        """``ArchiveChangedError`` when the file changed since the reader opened it (frames are
        read after the open), else ``CorruptedError``."""
        if self.opened is not None and self.stamp() != self.opened:
            return ArchiveChangedError(f"{message}: the file changed after the reader opened it: open a new reader")
        return CorruptedError(message)

    def stamp(self) -> object:
        return self.raw.stamp()

    def identity(self) -> tuple[int, int] | None:
        return self.raw.identity()

    def close(self) -> None:
        super().close()
        self._frames.clear()
        self.raw.close()
