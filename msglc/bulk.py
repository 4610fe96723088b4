"""Helpers that keep bulk encoding and decoding fast: a paused GC and a CRC on another core."""

from __future__ import annotations

import gc
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused(pause: bool = True) -> Iterator[None]:
    """Pause the cyclic GC: building millions of objects otherwise triggers repeated full scans."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class ParallelCrc:
    """CRC-32 of a buffer, computed in a thread when the buffer is large: ``zlib.crc32``
    releases the GIL, so on a second core the checksum overlaps encoding, decoding or I/O."""

    PARALLEL_MIN = 1 << 20

    def __init__(self, buf: bytes | memoryview) -> None:
        self.value = 0
        self.thread: threading.Thread | None = None
        if len(buf) < self.PARALLEL_MIN:
            self.value = zlib.crc32(buf)
        else:
            self.thread = threading.Thread(target=self._run, args=(buf,), daemon=True)
            self.thread.start()

    def _run(self, buf: bytes | memoryview) -> None:
        self.value = zlib.crc32(buf)

    def result(self) -> int:
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        return self.value
