"""A data section compressed as independent zstd frames plus their seek table
(``format.frames``; design: docs/compression.md). Frames are compressed in a thread pool
(zstd releases the GIL), each thread with its own compressor (one is not thread-safe)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from msglc.format.frames import MAX_FRAME, MIN_FRAME_SIZE, pack_seek_table
from msglc.util.optional import zstandard

THREADS = 2  # compression threads (this machine has 2 cores; more only queue)


def frame_size(threshold: int) -> int:
    """Plain bytes per frame: about the threshold, so a random read decompresses one small
    frame (docs/compression.md measures the trade-off), within the reader's bound."""
    return min(max(threshold, MIN_FRAME_SIZE), MAX_FRAME)


def compressed_section(data: bytes | memoryview, size: int, level: int) -> Iterator[bytes]:
    """The frames of ``data`` cut every ``size`` bytes, compressed at ``level`` with each
    frame's content size and checksum recorded, in order, then the seek table."""
    if not MIN_FRAME_SIZE <= size <= MAX_FRAME:
        raise ValueError(f"frame size must be in [{MIN_FRAME_SIZE}, {MAX_FRAME}], not {size}")
    zstd = zstandard()
    local = threading.local()
    view = memoryview(data).cast("B")
    cuts = list(range(0, len(view), size)) + [len(view)]

    def compress(i: int) -> bytes:
        compressor = getattr(local, "compressor", None)
        if compressor is None:
            compressor = local.compressor = zstd.ZstdCompressor(level=level, write_checksum=True)
        frame: bytes = compressor.compress(view[cuts[i] : cuts[i + 1]])
        return frame

    sizes = []
    with ThreadPoolExecutor(THREADS) as pool:
        for i, frame in enumerate(pool.map(compress, range(len(cuts) - 1))):
            sizes.append((len(frame), cuts[i + 1] - cuts[i]))
            yield frame
    yield pack_seek_table(sizes)


GROUP = 1 << 18  # plain bytes compressed per thread-pool task (many small frames per task: less overhead)


AHEAD = 2 * THREADS  # tasks in flight before the writer waits for the oldest


def raw_frame(content: bytes | bytearray | memoryview) -> bytes:
    """A zstd frame holding ``content`` (at most 255 bytes) uncompressed, in one raw block, with
    its content size and checksum: always ``13 + len(content)`` bytes, whatever the content, so
    that it can be rewritten in place once the content is known (a streamed container's count).
    The checksum (low 32 bits of XXH64) is taken from zstd's own frame of the same content."""
    size = len(content)
    if not 0 < size < 256:
        raise ValueError(f"a raw frame holds 1 to 255 bytes, not {size}")
    checksum: bytes = zstandard().ZstdCompressor(write_checksum=True).compress(bytes(content))[-4:]
    # magic | descriptor: single segment, checksum, 1-byte content size | size | last raw block of size
    head = (0xFD2FB528).to_bytes(4, "little") + bytes((0x24, size)) + (1 | size << 3).to_bytes(3, "little")
    return head + bytes(content) + checksum


class Slot:
    """``size`` plain bytes at plain offset ``at`` whose content ``FrameWriter.fill`` gives
    later. While they are buffered they are patched there; once their frame had to go, they are
    a raw frame of their own (``stored_at`` from the section's start once written)."""

    __slots__ = ("at", "size", "frame", "stored_at")

    def __init__(self, at: int, size: int) -> None:
        self.at = at
        self.size = size
        self.frame: bytearray | None = None
        self.stored_at: int | None = None


class FrameWriter:
    """A compressed data section written as it is produced, in bounded memory: plain bytes are
    buffered and compressed in frames of ``size`` bytes (in a thread pool, a few tasks ahead,
    written in order), frames of another archive are copied as they are (``copy_frames``), and
    ``close()`` writes the seek table of them all. ``out`` needs ``write``; ``seek`` and
    ``tell`` only when a ``Slot`` is filled after its frame was written (``base``: where the
    section starts in ``out``)."""

    def __init__(self, out: Any, size: int, level: int, base: int = 0) -> None:
        if not MIN_FRAME_SIZE <= size <= MAX_FRAME:
            raise ValueError(f"frame size must be in [{MIN_FRAME_SIZE}, {MAX_FRAME}], not {size}")
        self._zstd = zstandard()
        self.out = out
        self.size = size
        self.level = level
        self.base = base
        self.group = max(GROUP // size, 1) * size
        self.plain = 0  # plain bytes taken so far
        self.stored = 0  # bytes written to ``out`` so far
        self.entries: list[tuple[int, int]] = []  # (compressed, decompressed) of each frame written
        self._buf = bytearray()
        self._buf_at = 0  # plain offset of _buf[0]
        self._slots: list[Slot] = []  # slots still in _buf
        self._queue: deque[Future[list[tuple[bytes, int]]] | Slot | tuple[bytes | memoryview, list[tuple[int, int]]]]
        self._queue = deque()
        self._pool = ThreadPoolExecutor(THREADS)
        self._local = threading.local()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Plain bytes, appended to the section."""
        self._buf += data
        self.plain += len(data)
        if len(self._buf) >= self.group + self.size:
            self._cut(len(self._buf) - len(self._buf) % self.group)

    def reserve(self, size: int) -> Slot:
        """``size`` plain bytes (zeros for now) that ``fill`` gives later."""
        slot = Slot(self.plain, size)
        self._slots.append(slot)
        self.write(bytes(size))
        return slot

    def fill(self, slot: Slot, content: bytes) -> None:
        """The content of a reserved slot: patched in the buffer, in its queued raw frame, or
        (once written) in ``out`` in place (its raw frame keeps its size)."""
        if len(content) != slot.size:
            raise ValueError(f"a slot of {slot.size} bytes cannot take {len(content)}")
        if slot in self._slots:
            at = slot.at - self._buf_at
            self._buf[at : at + slot.size] = content
            self._slots.remove(slot)
        elif slot.stored_at is None:
            assert slot.frame is not None
            slot.frame[:] = raw_frame(content)
        else:
            back = self.out.tell()
            self.out.seek(self.base + slot.stored_at)
            self.out.write(raw_frame(content))
            self.out.seek(back)

    def copy_frames(self, stored: bytes | memoryview, entries: list[tuple[int, int]]) -> None:
        """Frames of another section, copied as they are: ``stored`` holds them all, ``entries``
        their (compressed, decompressed) sizes. The buffered plain bytes end a frame first."""
        self._cut(len(self._buf))
        self._queue.append((stored, entries))
        self.plain += sum(d for _, d in entries)
        self._buf_at = self.plain
        self._drain(AHEAD)

    def close(self) -> int:
        """Compress what is buffered, write every frame and the seek table; returns the
        section's stored size."""
        if self._slots:
            raise ValueError("a reserved slot was never filled")
        self._cut(len(self._buf))
        self._drain(0)
        self._pool.shutdown()
        table = pack_seek_table(self.entries)
        self.out.write(table)
        self.stored += len(table)
        return self.stored

    def abort(self) -> None:
        """Stop the compression threads (after a failure: nothing more is written)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _cut(self, n: int) -> None:
        """Queue the first ``n`` buffered bytes as frames: runs of ``size`` compressed in the
        pool, and each slot still unfilled among them as a raw frame of its own."""
        if not n:
            return
        at0 = self._buf_at
        for slot in self._slots:  # never cut through a slot: it is written whole, so it is buffered whole
            if slot.at - at0 < n < slot.at - at0 + slot.size:
                n = slot.at - at0 + slot.size
        data = bytes(self._buf[:n])
        del self._buf[:n]
        start = 0
        for slot in [s for s in self._slots if s.at - at0 < n]:
            self._submit(data, start, slot.at - at0)
            slot.frame = bytearray(raw_frame(data[slot.at - at0 : slot.at - at0 + slot.size]))
            self._queue.append(slot)
            self._slots.remove(slot)
            start = slot.at - at0 + slot.size
        self._submit(data, start, n)
        self._buf_at += n
        self._drain(AHEAD)

    def _submit(self, data: bytes, start: int, end: int) -> None:
        for lo in range(start, end, self.group):
            self._queue.append(self._pool.submit(self._compress, data, lo, min(lo + self.group, end)))

    def _compress(self, data: bytes, start: int, end: int) -> list[tuple[bytes, int]]:
        compressor = getattr(self._local, "compressor", None)
        if compressor is None:  # one per thread: a compressor is not thread-safe
            compressor = self._local.compressor = self._zstd.ZstdCompressor(level=self.level, write_checksum=True)
        view = memoryview(data)
        return [
            (compressor.compress(view[lo : min(lo + self.size, end)]), min(lo + self.size, end) - lo)
            for lo in range(start, end, self.size)
        ]

    def _drain(self, ahead: int) -> None:
        """Write queued frames in order until at most ``ahead`` compression tasks remain."""
        queue = self._queue
        while queue and (len(queue) > ahead or not isinstance(queue[0], Future) or queue[0].done()):
            item = queue.popleft()
            if isinstance(item, Future):
                for frame, plain in item.result():
                    self._emit(frame, plain)
            elif isinstance(item, Slot):
                assert item.frame is not None
                item.stored_at = self.stored
                self._emit(bytes(item.frame), item.size)
            else:
                stored, entries = item
                self.out.write(stored)
                self.stored += len(stored)
                self.entries += entries

    def _emit(self, frame: bytes, plain: int) -> None:
        self.out.write(frame)
        self.stored += len(frame)
        self.entries.append((len(frame), plain))
