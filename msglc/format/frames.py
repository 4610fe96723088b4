"""The frame tables of a compressed data section (format 2.0; docs/format.md, "Compressed
archives"): the section is a sequence of independent zstd frames, each holding a run of the
plain msgpack, then msglc's filter table when some frame is filtered, then a seek table laid
out as zstd's seekable format specifies. Standard tools decompress the section (they skip both
tables); msglc maps a logical (uncompressed) offset to its frame by bisection.

Seek table: skippable-frame magic (u32 0x184D2A5E) | its content size (u32) | one entry per
frame (u32 compressed size, u32 decompressed size) | footer (u32 frame count, u8 descriptor,
u32 seekable magic 0x8F92EAB1). Descriptor bit 7 would add a u32 checksum per entry; msglc
writes it clear (each frame carries zstd's own content checksum instead) and refuses a table
that sets it or any reserved bit (2-6).

Filter table (only when some frame is filtered): skippable-frame magic (u32 0x184D2A5D) | its
content size (u32, 12 + 2n) | tag ``MLCF`` | u32 frame count n | n filter codes (u8) | n filter
parameters (u8) | u32 CRC-32 of the codes and parameters (a wrong element size would unshuffle
into other values, silently: the frames' zstd checksums cover the shuffled bytes). Code 0:
none (parameter 0); code 1: byte shuffle of elements of ``parameter`` bytes (2..255,
dividing the frame's plain size): the frame holds byte 0 of every element, then
byte 1 of every element, and so on.
"""

from __future__ import annotations

import struct
import zlib
from bisect import bisect_right
from itertools import accumulate
from typing import NamedTuple

from msglc.errors import CorruptedError, UnsupportedVersionError

SKIPPABLE_MAGIC = 0x184D2A5E
SEEKABLE_MAGIC = 0x8F92EAB1
FILTER_MAGIC = 0x184D2A5D  # another skippable frame: zstd tools skip it as they skip the seek table
FILTER_TAG = b"MLCF"
_SKIPPABLE_HEADER = struct.Struct("<II")  # magic, content size
_ENTRY = struct.Struct("<II")  # compressed size, decompressed size
_FOOTER = struct.Struct("<IBI")  # frame count, descriptor, seekable magic
_FILTER_HEAD = struct.Struct("<II4sI")  # magic, content size, tag, frame count
_CRC = struct.Struct("<I")  # ends the filter table: CRC-32 of its codes and parameters
FOOTER_SIZE = _FOOTER.size  # 9
_CHECKSUM_FLAG = 0x80
_RESERVED_BITS = 0x7C
MIN_FRAME = 9  # bytes of the smallest zstd frame (header, one empty block), a bound for the count
MIN_FRAME_SIZE = 4096  # plain bytes per frame that writers use at least (but for the last)
MAX_FRAME = 1 << 20  # plain bytes of any frame: a reader refuses a table claiming more
NO_FILTER = 0
SHUFFLE = 1  # byte shuffle: parameter = element size
_FILTER_CODES = bytes((NO_FILTER, SHUFFLE))
_NONZERO = bytes([0] + [1] * 255)  # translate: 0 stays 0, anything else becomes 1


class FrameTable(NamedTuple):
    """Where each frame is: frame i holds logical bytes [logical[i], logical[i + 1]) of the
    plain data and is stored at [stored[i], stored[i + 1]) from the start of the section;
    ``codes[i]`` and ``params[i]`` name its filter (empty: no frame is filtered). Each frame's
    own bounds are checked when it is read (``check_frame``), not at open: the table costs
    two C-speed prefix sums, whatever its size."""

    stored: list[int]
    logical: list[int]
    codes: bytes = b""
    params: bytes = b""

    @property
    def frames(self) -> int:
        return len(self.stored) - 1

    def frame_of(self, offset: int) -> int:
        """The frame holding logical ``offset`` (0 <= offset < the logical size)."""
        frame: int = bisect_right(self.logical, offset) - 1
        return frame

    def shuffle(self, i: int) -> int:
        """The element size frame ``i`` is byte-shuffled by, or 0."""
        return self.params[i] if self.codes and self.codes[i] == SHUFFLE else 0

    def check_frame(self, i: int, max_frame: int) -> str | None:
        """Why frame ``i``'s entry cannot be read (None: it can): the bounds of a frame."""
        stored = self.stored[i + 1] - self.stored[i]
        plain = self.logical[i + 1] - self.logical[i]
        if stored < MIN_FRAME or not 0 < plain <= max_frame:
            return (
                f"its entry in the seek table is out of bounds ({stored} stored bytes, at least {MIN_FRAME}; "
                f"{plain} plain bytes, 1..{max_frame})"
            )
        element = self.shuffle(i)
        if element and plain % element:
            return f"its filter shuffles elements of {element} bytes, which do not divide its {plain} bytes"
        return None


def pack_seek_table(sizes: list[tuple[int, int]]) -> bytes:
    """The skippable frame holding the seek table of frames of these (compressed,
    decompressed) sizes."""
    raw = struct.pack(f"<{2 * len(sizes)}I", *(x for pair in sizes for x in pair))
    footer = _FOOTER.pack(len(sizes), 0, SEEKABLE_MAGIC)
    return _SKIPPABLE_HEADER.pack(SKIPPABLE_MAGIC, len(raw) + len(footer)) + raw + footer


def pack_filter_table(filters: list[tuple[int, int]]) -> bytes:
    """The skippable frame naming each frame's (filter code, parameter); writers put it right
    before the seek table, and only when some frame is filtered."""
    n = len(filters)
    body = bytes(c for c, _ in filters) + bytes(p for _, p in filters)
    return _FILTER_HEAD.pack(FILTER_MAGIC, 12 + 2 * n, FILTER_TAG, n) + body + _CRC.pack(zlib.crc32(body))


def filter_table_size(frames: int) -> int:
    """Bytes of the filter table of ``frames`` frames (a reader fetches them with the seek table)."""
    return _FILTER_HEAD.size + 2 * frames + _CRC.size


def seek_table_size(footer: bytes | memoryview) -> int:
    """The size of the whole seek table (skippable frame) whose last ``FOOTER_SIZE`` bytes
    are ``footer``, so that a reader fetches it in one more read."""
    count: int
    descriptor: int
    magic: int
    count, descriptor, magic = _FOOTER.unpack(footer)
    if magic != SEEKABLE_MAGIC:
        raise CorruptedError(
            f"compressed data section: no seek table (expected magic {SEEKABLE_MAGIC:#x}, found {magic:#x})"
        )
    if descriptor & (_CHECKSUM_FLAG | _RESERVED_BITS):
        raise UnsupportedVersionError(
            f"compressed data section: seek table descriptor {descriptor:#04x} is not one msglc reads"
        )
    return _SKIPPABLE_HEADER.size + count * _ENTRY.size + FOOTER_SIZE


def tables_size(footer: bytes | memoryview, section_size: int) -> int:
    """Bytes to read from the end of a section of ``section_size`` bytes to have its tables:
    the seek table, and the filter table it may have (its size follows from the count)."""
    size = seek_table_size(footer)
    if size > section_size:  # refused before anything is read from the claim
        raise CorruptedError(
            f"compressed data section: a seek table of {size} bytes does not fit ({section_size} in all)"
        )
    count = (size - _SKIPPABLE_HEADER.size - FOOTER_SIZE) // _ENTRY.size
    return min(section_size, size + filter_table_size(count))


def parse_seek_table(tables: bytes | memoryview, section_size: int, max_frame: int) -> FrameTable:
    """The frame table from the last bytes ``tables`` of a data section of ``section_size``
    stored bytes: the seek table, and before it the filter table if the section has one (the
    frames must tile the section up to the tables exactly). Nothing is allocated from a size
    before it is checked: each frame's bounds (at most ``max_frame`` plain bytes: a frame
    claiming more is refused, never decompressed) are checked when the frame is read."""
    size = seek_table_size(tables[-FOOTER_SIZE:])
    if len(tables) < size or size > section_size:
        raise CorruptedError(
            f"compressed data section: a seek table of {size} bytes does not fit ({section_size} in all)"
        )
    table = memoryview(tables)[len(tables) - size :]
    magic, content = _SKIPPABLE_HEADER.unpack_from(table)
    if magic != SKIPPABLE_MAGIC or content != size - _SKIPPABLE_HEADER.size:
        raise CorruptedError("compressed data section: the seek table is not a well-formed skippable frame")
    count = (size - _SKIPPABLE_HEADER.size - FOOTER_SIZE) // _ENTRY.size
    sizes = struct.unpack_from(f"<{2 * count}I", table, _SKIPPABLE_HEADER.size)  # ints at C speed
    stored = list(accumulate(sizes[0::2], initial=0))  # lists: built and bisected faster than arrays
    logical = list(accumulate(sizes[1::2], initial=0))
    extra = section_size - size - stored[-1]
    if extra == 0:
        return FrameTable(stored, logical)
    if extra != filter_table_size(count) or len(tables) < size + extra:
        raise CorruptedError(
            f"compressed data section: {count} frames of {stored[-1]} bytes and a seek table of {size} do not "
            f"make the section's {section_size} bytes"
        )
    codes, params = parse_filter_table(memoryview(tables)[len(tables) - size - extra : len(tables) - size], count)
    return FrameTable(stored, logical, codes, params)


def parse_filter_table(data: bytes | memoryview, count: int) -> tuple[bytes, bytes]:
    """The filter codes and parameters of ``count`` frames from their filter table ``data``:
    codes this msglc does not know raise ``UnsupportedVersionError``, any other inconsistency
    ``CorruptedError`` (element sizes are checked against each frame when it is read)."""
    magic, content, tag, n = _FILTER_HEAD.unpack_from(data)
    if magic != FILTER_MAGIC or content != 12 + 2 * count or tag != FILTER_TAG or n != count:
        raise CorruptedError("compressed data section: the frame filter table is not well formed")
    body = bytes(data[_FILTER_HEAD.size : _FILTER_HEAD.size + 2 * count])
    if zlib.crc32(body) != _CRC.unpack_from(data, _FILTER_HEAD.size + 2 * count)[0]:
        raise CorruptedError("compressed data section: the frame filter table fails its checksum")
    codes, params = body[:count], body[count:]
    unknown = codes.translate(None, _FILTER_CODES)
    if unknown:
        raise UnsupportedVersionError(
            f"compressed data section: frame filter {unknown[0]} is unknown to this msglc (a newer writer?)"
        )
    # codes are 0 or 1 now: a frame has a parameter exactly when it is shuffled, and never 1
    if codes != params.translate(_NONZERO) or 1 in params:
        raise CorruptedError("compressed data section: a frame filter has a parameter it cannot have")
    return codes, params
