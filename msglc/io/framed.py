"""``FramedSource``: a compressed archive read as if its data section were plain (format 2.0,
in progress: docs/compression.md). Logical offsets inside the data section are served from
the zstd frames that hold them, each decompressed at most once while it stays in a small
cache; offsets before it (the header) and after it (TOC, trailer) from the file, shifted by
what compression saved."""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections import OrderedDict

from msglc.errors import ArchiveChangedError, CorruptedError, MsglcError
from msglc.format.frames import FrameTable
from msglc.io.base import Source
from msglc.util.optional import zstandard

CACHE_FRAMES = 16  # decompressed frames kept (at most 16 MB; 16 x the threshold typically)


class FramedSource(Source):
    """``raw`` holds ``data_off`` bytes, then the frames of ``table`` (``stored`` bytes with
    the seek table), then the rest; this source shows ``data_off`` bytes, the plain data
    (``table.logical[-1]`` bytes), then the rest."""

    def __init__(self, raw: Source, data_off: int, table: FrameTable, stored: int) -> None:
        self._zstd = zstandard()
        self.raw = raw
        self.data_off = data_off
        self.table = table
        self.plain = table.logical[-1]
        self.shift = stored - self.plain  # add to a logical offset past the data to find it in the file
        self.size = raw.size - self.shift
        self.counter = raw.counter
        self.counts_itself = True  # the file's reads are counted (below, or by the file itself)
        self._count = raw.counter is not None and not raw.counts_itself
        # read_many: logical ranges are merged only where they touch (their frames are merged
        # below, in stored bytes, with the file's own gap); in memory every read is direct
        self.max_gap = 1 if raw.max_gap else 0
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
        return self._slice(offset, end, {}, None)

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
        return self._decompressed(i, self._raw(self.data_off + start, stop - start))

    def _decompressed(self, i: int, data: bytes | memoryview) -> bytes:
        """Frame ``i`` from its stored bytes ``data``: checked, decompressed, cached."""
        at = self.data_off + self.table.stored[i]
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

    def cached(self, offset: int, size: int) -> bytes | memoryview | None:
        """The bytes, when the file's cache or the frame cache holds them (batched reads then
        need no request for them)."""
        end, data_end = offset + size, self.data_off + self.plain
        if end <= self.data_off:
            return self.raw.cached(offset, size)
        if offset >= data_end:
            return self.raw.cached(offset + self.shift, size)
        if offset < self.data_off or end > data_end:
            return None
        lo, hi = offset - self.data_off, end - self.data_off
        parts: list[bytes | memoryview] = []
        with self._lock:
            for i in range(bisect_right(self.table.logical, lo) - 1, self.table.frames):
                first = self.table.logical[i]
                if first >= hi:
                    break
                frame = self._frames.get(i)
                if frame is None:
                    return None
                parts.append(memoryview(frame)[max(lo - first, 0) : min(hi - first, len(frame))])
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes | memoryview]:
        """The logical ranges, with the stored bytes of every frame they need (and the parts
        outside the data section) fetched from the file in one ``fetch_many``."""
        requests, frames_at, held = self._requests(ranges)
        fetched = self.raw.fetch_many(requests) if requests else []
        return self._assemble(ranges, requests, frames_at, held, fetched)

    async def async_fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes | memoryview]:
        import asyncio

        requests, frames_at, held = self._requests(ranges)
        fetched = await self.raw.async_fetch_many(requests) if requests else []
        return await asyncio.to_thread(self._assemble, ranges, requests, frames_at, held, fetched)

    def _requests(
        self, ranges: list[tuple[int, int]]
    ) -> tuple[list[tuple[int, int]], dict[int, int], dict[int, bytes]]:
        """File ranges to fetch: the parts of ``ranges`` outside the data section, and the
        frames inside it that are not cached, merged where they lie within the file's gap.
        Also, for each such frame, the index of the request holding it, and the frames taken
        from the cache (held for this batch: decompressing the others may evict them)."""
        data_end, out = self.data_off + self.plain, []
        needed: set[int] = set()
        for start, end in ranges:
            if start < self.data_off:
                out.append((start, min(end, self.data_off)))
            if end > data_end:
                lo = max(start, data_end) + self.shift
                out.append((lo, end + self.shift))
            lo, hi = max(start, self.data_off) - self.data_off, min(end, data_end) - self.data_off
            if lo < hi:
                first = bisect_right(self.table.logical, lo) - 1
                last = bisect_right(self.table.logical, hi - 1) - 1
                needed.update(range(first, last + 1))
        with self._lock:
            held = {i: self._frames[i] for i in needed.intersection(self._frames)}
        needed.difference_update(held)
        frames_at: dict[int, int] = {}
        gap, stored = self.raw.max_gap, self.table.stored  # merged up to the file's max_request
        for i in sorted(needed):
            a, b = self.data_off + stored[i], self.data_off + stored[i + 1]
            if frames_at and a - out[-1][1] <= gap and b - out[-1][0] <= self.raw.max_request:
                out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
            frames_at[i] = len(out) - 1
        if self._count and self.counter is not None:
            for a, b in out:
                self.counter.add(b - a)
        return out, frames_at, held

    def _assemble(
        self,
        ranges: list[tuple[int, int]],
        requests: list[tuple[int, int]],
        frames_at: dict[int, int],
        held: dict[int, bytes],
        fetched: list[bytes | memoryview],
    ) -> list[bytes | memoryview]:
        """Decompress the fetched frames, then serve ``ranges`` as ``read`` would (the frames
        of this batch are kept for it even where the cache is smaller)."""
        batch = dict(held)
        for i, k in frames_at.items():
            a = self.data_off + self.table.stored[i] - requests[k][0]
            data = memoryview(fetched[k])[a : a + self.table.stored[i + 1] - self.table.stored[i]]
            batch[i] = self._decompressed(i, data)
        parts = dict(zip(requests, fetched, strict=True))
        return [self._slice(start, end, batch, parts) for start, end in ranges]

    def _slice(
        self,
        start: int,
        end: int,
        batch: dict[int, bytes],
        parts: dict[tuple[int, int], bytes | memoryview] | None,
    ) -> bytes | memoryview:
        """Logical bytes [start, end): frames from ``batch`` or the cache (else read), the rest
        from ``parts`` fetched already (None: read from the file now)."""
        data_end = self.data_off + self.plain
        out: list[bytes | memoryview] = []
        if start < self.data_off:
            head = (start, min(end, self.data_off))
            out.append(self._raw(start, head[1] - start) if parts is None else parts[head])
        lo, hi = max(start, self.data_off) - self.data_off, min(end, data_end) - self.data_off
        if lo < hi:
            for i in range(bisect_right(self.table.logical, lo) - 1, self.table.frames):
                first = self.table.logical[i]
                if first >= hi:
                    break
                frame = batch.get(i) or self.frame(i)
                out.append(memoryview(frame)[max(lo - first, 0) : min(hi - first, len(frame))])
        if end > data_end:
            tail = (max(start, data_end) + self.shift, end + self.shift)
            out.append(self._raw(tail[0], tail[1] - tail[0]) if parts is None else parts[tail])
        return out[0] if len(out) == 1 else b"".join(out)

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
