"""Copying data sections for ``combine`` and ``append``: a run of an input's plain data into a
plain output, or into a compressed one (``FrameWriter``), where the frames of a compressed
input that the run covers whole are copied as they are, never recompressed. Every byte copied
is checked: the caller compares the CRC-32 of the plain data returned with the input's own;
a copied frame is decompressed for that (much cheaper than compressing it again), with the
checks a reader makes (declared size, checksum flag, zstd's content checksum)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from msglc.format.numpy_ext import TILED_SCAN_OVERLAP, find_tiled
from msglc.io.framed import FramedSource
from msglc.read.archive import Archive
from msglc.util.checksum import data_crc32
from msglc.write.compress import FrameWriter

COPY_FRAMES = 1 << 24  # stored bytes of frames read (and copied) at once


class Sink(Protocol):
    """Where copied bytes go: a binary file, ``append``'s positioned writer, a ``FrameWriter``."""

    def write(self, data: bytes | memoryview, /) -> object: ...


def compressed(archive: Archive) -> bool:
    """Is the archive's data section stored as zstd frames (format 2.x)?"""
    return isinstance(archive.src, FramedSource)


def copy_data(
    archive: Archive, offset: int, size: int, out: Sink, buf: bytearray, progress: Callable[[int], None]
) -> int:
    """Copy ``size`` plain bytes of the archive's data from (logical) ``offset`` to ``out``;
    returns their CRC-32. Into a ``FrameWriter``, the frames of a compressed archive lying
    wholly inside the run are copied as they are (``progress`` counts their plain bytes)."""
    src = archive.src
    if not (isinstance(out, FrameWriter) and isinstance(src, FramedSource)):
        # a compressed archive's data into a plain one: tiled arrays (format 2.1) are refused
        return copy_plain(archive, offset, size, out, buf, progress, tiles_refused=isinstance(src, FramedSource))
    table, lo, hi = src.table, offset - src.data_off, offset + size - src.data_off
    first = table.frame_of(lo) if lo < table.plain else table.frames
    crc, i = 0, first
    if lo < hi and table.logical(first) < lo:  # the run starts inside a frame: its part goes plain
        part = min(table.logical(first + 1), hi) - lo
        crc = copy_plain(archive, offset, part, out, buf, progress)
        i = first + 1
    end = i
    while end < table.frames and table.logical(end + 1) <= hi:
        end += 1
    crc = _copy_frames(archive, src, i, end, out, crc, progress)
    if end < table.frames and table.logical(end) < hi:  # the run ends inside a frame
        part = hi - max(table.logical(end), lo)
        crc = copy_plain(archive, src.data_off + hi - part, part, out, buf, progress, crc)
    return crc


def tiled_into_plain() -> str:
    return (
        "a compressed input holds NumPy arrays stored tile by tile (format 2.1), which a plain archive "
        "(format 1.3) cannot hold as they are: write the result compressed (compression='zstd'), or first "
        "repack the input without tiles: msglc.dump(new, reader, compression=None) stores them in C order"
    )


def copy_plain(
    archive: Archive,
    offset: int,
    size: int,
    out: Sink,
    buf: bytearray,
    progress: Callable[[int], None],
    crc: int = 0,
    checksum: bool = True,
    tiles_refused: bool = False,
) -> int:
    """Copy ``size`` bytes of the archive (logical offsets) from ``offset`` to ``out`` through
    ``buf``; returns ``crc`` extended by their CRC-32 (unless not ``checksum``: then ``crc``).
    ``tiles_refused``: the bytes go into a plain archive, whose format has no tiled NumPy
    arrays: one met raises ``ValueError`` (a format 1.x reader could not read it)."""
    crc32 = data_crc32()
    view = memoryview(buf)
    done = 0
    tail = b""  # the previous chunk's last bytes: a header across two chunks is found too
    while done < size:
        chunk = view[: min(len(view), size - done)]
        archive.src.read_into(offset + done, chunk)
        if tiles_refused:
            seen = tail + bytes(chunk[:64]) if tail else chunk
            if find_tiled(seen) is not None or (tail and find_tiled(chunk) is not None):
                raise ValueError(tiled_into_plain())
            tail = bytes(chunk[-TILED_SCAN_OVERLAP:])
        out.write(chunk)
        if checksum:
            crc = crc32(chunk, crc)
        done += len(chunk)
        progress(len(chunk))
    return crc


def _copy_frames(
    archive: Archive,
    src: FramedSource,
    first: int,
    end: int,
    out: FrameWriter,
    crc: int,
    progress: Callable[[int], None],
) -> int:
    """Frames ``first`` to ``end`` (excluded) of ``src``, copied as stored (with the
    dictionaries they name), a run of about ``COPY_FRAMES`` bytes at a time, each frame checked
    by decompressing it as a reader does."""
    crc32 = data_crc32()
    table = src.table
    adopted: dict[int, int] = {0: 0}  # src's dictionary number -> out's
    i = first
    while i < end:
        j = i + 1
        at = table.stored(i)
        while j < end and table.stored(j + 1) - at <= COPY_FRAMES:
            j += 1
        data = memoryview(archive.file.read(src.data_off + at, table.stored(j) - at))
        entries, filters, dicts = [], [], []
        for k in range(i, j):
            frame = data[table.stored(k) - at : table.stored(k + 1) - at]
            crc = crc32(src.decompress_frame(k, frame), crc)  # the checksum is of the plain data
            d = table.dictionary(k)
            if d not in adopted:
                adopted[d] = out.adopt_dictionary(src.dictionary_bytes(d))
            entries.append((len(frame), table.logical(k + 1) - table.logical(k)))
            filters.append(table.filter(k))  # as it is (a raw frame stays raw: read in place)
            dicts.append(adopted[d])
        out.copy_frames(bytes(data), entries, filters, dicts)
        progress(table.logical(j) - table.logical(i))
        i = j
    return crc
