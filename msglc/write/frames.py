"""A data section compressed as independent zstd frames plus their seek table
(``format.frames``; design: docs/compression.md). Frames are compressed in a thread pool
(zstd releases the GIL), each thread with its own compressor (one is not thread-safe)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

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
