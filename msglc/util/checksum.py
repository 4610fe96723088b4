"""CRC-32 for the data section and frames: zlib-ng's when installed, CRCs of adjacent pieces
combined without reading them again, and a large CRC computed on another core (the paused GC
is in ``runtime``)."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol, cast, overload

from msglc.util.runtime import join

if TYPE_CHECKING:
    from typing_extensions import Buffer


class Crc32(Protocol):
    """A CRC-32 function, as ``zlib.crc32``: the CRC of ``data`` continuing from ``value``."""

    def __call__(self, data: Buffer, value: int = 0, /) -> int: ...


def data_crc32() -> Crc32:
    """The CRC-32 function for large buffers: zlib-ng's (SIMD, about 5x zlib's speed, same
    values) when the optional ``zlib-ng`` package is installed, else the standard library's.
    Imported on first use, so ``import msglc`` does not load it."""
    global _crc32
    if _crc32 is None:
        try:
            from zlib_ng.zlib_ng import crc32
        except ImportError:
            crc32 = zlib.crc32
        _crc32 = crc32
    return _crc32


_crc32: Crc32 | None = None


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of A + B from crc1 = CRC(A), crc2 = CRC(B) and len2 = len(B), without reading
    either: zlib-ng's function when installed, else the same GF(2) method in Python."""
    global _combine
    if _combine is None:
        try:
            from zlib_ng.zlib_ng import crc32_combine as combine
        except ImportError:
            combine = _crc32_combine
        _combine = combine
    return _combine(crc1, crc2, len2)


_combine: Callable[[int, int, int], int] | None = None


_ZERO_BYTES: list[list[int]] = []  # _ZERO_BYTES[k]: the CRC's operator for 2**k zero bytes


def _gf2_times(matrix: list[int], vector: int) -> int:
    total = 0
    row = 0
    while vector:
        if vector & 1:
            total ^= matrix[row]
        vector >>= 1
        row += 1
    return total


def _crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """Shift crc1 over len2 zero bytes, applying the operator for each power of two in len2
    (squared from the one-zero-bit operator once, then cached), and add crc2."""
    if len2 <= 0:
        return crc1
    if not _ZERO_BYTES:
        op = [0xEDB88320] + [1 << n for n in range(31)]  # one zero bit
        for _ in range(3):
            op = [_gf2_times(op, row) for row in op]  # 2, 4, 8 zero bits: one byte
        for _ in range(64):
            _ZERO_BYTES.append(op)
            op = [_gf2_times(op, row) for row in op]
    k = 0
    while len2:
        if len2 & 1:
            crc1 = _gf2_times(_ZERO_BYTES[k], crc1)
        len2 >>= 1
        k += 1
    return crc1 ^ crc2


class ParallelCrc:
    """CRC-32 of a buffer (or of ``size`` bytes given as an iterable of chunks), computed in a
    thread when large: CRC functions release the GIL, so on a second core the checksum
    overlaps encoding, decoding or I/O."""

    PARALLEL_MIN = 1 << 20

    @overload
    def __init__(self, buf: bytes | memoryview) -> None: ...

    @overload
    def __init__(self, buf: Iterable[Buffer], size: int) -> None: ...

    def __init__(self, buf: bytes | memoryview | Iterable[Buffer], size: int | None = None) -> None:
        self.value = 0
        self.thread: threading.Thread | None = None
        if size is None:  # one buffer (the overloads tell the two forms apart)
            whole = cast("bytes | memoryview", buf)
            chunks: Iterable[Buffer] = (whole,)
            size = len(whole)
        else:
            chunks = cast("Iterable[Buffer]", buf)
        if size < self.PARALLEL_MIN:
            self._run(chunks)
        else:
            self.thread = threading.Thread(target=self._run, args=(chunks,), daemon=True)
            self.thread.start()

    def _run(self, chunks: Iterable[Buffer]) -> None:
        value = 0
        crc32 = data_crc32()
        try:
            for chunk in chunks:
                value = crc32(chunk, value)
        except BaseException as e:  # re-raised by result()
            self.error = e
        self.value = value

    error: BaseException | None = None

    def wait(self) -> None:
        """Wait for the thread (errors are left for ``result``)."""
        join(self.thread)

    def result(self) -> int:
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        if self.error is not None:
            raise self.error
        return self.value
