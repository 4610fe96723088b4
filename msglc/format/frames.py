"""The frame table of a compressed data section (format 2.0, in progress: see
docs/compression.md): the data section is a sequence of independent zstd frames, each holding
a run of the plain msgpack, followed by a seek table in a zstd skippable frame laid out as
zstd's seekable format specifies. Standard tools decompress the section to the plain msgpack
(they skip the table); msglc maps a logical (uncompressed) offset to its frame by bisection.

Seek table: skippable-frame magic (u32 0x184D2A5E) | its content size (u32) | one entry per
frame (u32 compressed size, u32 decompressed size) | footer (u32 frame count, u8 descriptor,
u32 seekable magic 0x8F92EAB1). Descriptor bit 7 would add a u32 checksum per entry; msglc
writes it clear (each frame carries zstd's own content checksum instead) and refuses a table
that sets it or any reserved bit (2-6).
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right
from itertools import accumulate
from typing import NamedTuple

from msglc.errors import CorruptedError, UnsupportedVersionError

SKIPPABLE_MAGIC = 0x184D2A5E
SEEKABLE_MAGIC = 0x8F92EAB1
_SKIPPABLE_HEADER = struct.Struct("<II")  # magic, content size
_ENTRY = struct.Struct("<II")  # compressed size, decompressed size
_FOOTER = struct.Struct("<IBI")  # frame count, descriptor, seekable magic
FOOTER_SIZE = _FOOTER.size  # 9
_CHECKSUM_FLAG = 0x80
_RESERVED_BITS = 0x7C
MIN_FRAME = 9  # bytes of the smallest zstd frame (header, one empty block), a bound for the count
MIN_FRAME_SIZE = 4096  # plain bytes per frame that writers use at least (but for the last)
MAX_FRAME = 1 << 20  # plain bytes of any frame: a reader refuses a table claiming more


class FrameTable(NamedTuple):
    """Where each frame is: frame i holds logical bytes [logical[i], logical[i + 1]) of the
    plain data and is stored at [stored[i], stored[i + 1]) from the start of the section."""

    stored: array[int]
    logical: array[int]

    @property
    def frames(self) -> int:
        return len(self.stored) - 1

    def frame_of(self, offset: int) -> int:
        """The frame holding logical ``offset`` (0 <= offset < the logical size)."""
        frame: int = bisect_right(self.logical, offset) - 1
        return frame


def pack_seek_table(sizes: list[tuple[int, int]]) -> bytes:
    """The skippable frame holding the seek table of frames of these (compressed,
    decompressed) sizes."""
    entries = b"".join(_ENTRY.pack(c, d) for c, d in sizes)
    footer = _FOOTER.pack(len(sizes), 0, SEEKABLE_MAGIC)
    return _SKIPPABLE_HEADER.pack(SKIPPABLE_MAGIC, len(entries) + len(footer)) + entries + footer


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


def parse_seek_table(table: bytes | memoryview, section_size: int, max_frame: int) -> FrameTable:
    """The frame table from the seek table ``table`` ending a data section of ``section_size``
    stored bytes. Every size is checked before anything is allocated from it: the frames must
    tile the section up to the table exactly, and no frame may decompress to more than
    ``max_frame`` bytes (a frame claiming more is refused, never decompressed)."""
    size = seek_table_size(table[-FOOTER_SIZE:])
    if len(table) != size or size > section_size:
        raise CorruptedError(
            f"compressed data section: a seek table of {size} bytes does not fit ({section_size} in all)"
        )
    magic, content = _SKIPPABLE_HEADER.unpack_from(table)
    if magic != SKIPPABLE_MAGIC or content != size - _SKIPPABLE_HEADER.size:
        raise CorruptedError("compressed data section: the seek table is not a well-formed skippable frame")
    count = (size - _SKIPPABLE_HEADER.size - FOOTER_SIZE) // _ENTRY.size
    sizes = array("I", bytes(table[_SKIPPABLE_HEADER.size : _SKIPPABLE_HEADER.size + count * _ENTRY.size]))
    if struct.pack("=I", 1) != struct.pack("<I", 1):
        sizes.byteswap()
    compressed, decompressed = sizes[0::2], sizes[1::2]
    if count and (min(compressed) < MIN_FRAME or max(decompressed) > max_frame or min(decompressed) == 0):
        raise CorruptedError(
            f"compressed data section: a frame of the seek table is out of bounds (stored sizes at least "
            f"{MIN_FRAME}, decompressed sizes 1..{max_frame})"
        )
    stored = array("Q", accumulate(compressed, initial=0))
    if stored[-1] + size != section_size:
        raise CorruptedError(
            f"compressed data section: {count} frames of {stored[-1]} bytes and a seek table of {size} do not "
            f"make the section's {section_size} bytes"
        )
    return FrameTable(stored, array("Q", accumulate(decompressed, initial=0)))
