"""The frame tables of compressed sections (docs/format.md, "Compressed archives"): format
2.1's index, page tables and dictionary records below ("format 2.1"); first format 2.0's, still
read: the section is a sequence of independent zstd frames, each holding a run of the
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

import itertools
import struct
import zlib
from bisect import bisect_right
from collections.abc import Sequence
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
RAW = 2  # 2.1: a raw frame (one raw block, its plain bytes readable in place: ``RAW_HEAD``)
_FILTER_CODES_2_1 = bytes((NO_FILTER, SHUFFLE, RAW))
_IS_SHUFFLE = bytes([0, 1] + [0] * 254)  # translate: SHUFFLE becomes 1, anything else 0
RAW_HEAD = 12  # a raw frame's plain bytes start this far into it: magic, descriptor, size, block header
RAW_TAIL = 4  # ... and zstd's content checksum follows them
RAW_MAX = 1 << 17  # plain bytes of a raw frame at most (zstd's largest block)
_RAW_DESCRIPTOR = 0xA4  # single segment, content checksum, 4-byte content size


def pack_raw_frame(content: bytes | memoryview, checksum: bytes) -> bytes:
    """A raw frame (filter code 2): a zstd frame holding ``content`` in one raw block, so
    that its plain bytes can be read in place, ``RAW_HEAD`` bytes in; ``checksum``: zstd's
    checksum of the content (the last 4 bytes of any zstd frame of it with a checksum)."""
    size = len(content)
    if not 0 < size <= RAW_MAX:
        raise ValueError(f"a raw frame holds 1 to {RAW_MAX} bytes, not {size}")
    return _raw_head(size) + bytes(content) + checksum


def _raw_head(size: int) -> bytes:
    """The first ``RAW_HEAD`` bytes of a raw frame of ``size`` (1 to ``RAW_MAX``) plain bytes."""
    return (
        _SKIPPABLE_HEADER.pack(0xFD2FB528, 0)[:4]
        + bytes((_RAW_DESCRIPTOR,))
        + size.to_bytes(4, "little")
        + (1 | size << 3).to_bytes(3, "little")
    )


def raw_frame_fits(head: bytes | memoryview, stored: int, size: int) -> bool:
    """Is a frame of ``stored`` bytes that starts with ``head`` (its first ``RAW_HEAD``
    bytes) a raw frame of ``size`` plain bytes as ``pack_raw_frame`` lays it out? A frame the
    tables call raw is read in place only then: another frame's bytes (or bytes past its end)
    would be taken for plain bytes."""
    return 0 < size <= RAW_MAX and stored == size + RAW_HEAD + 4 and bytes(head) == _raw_head(size)


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
        stored, plain = self.stored[i + 1] - self.stored[i], self.logical[i + 1] - self.logical[i]
        return frame_fault("seek table", stored, plain, self.shuffle(i), max_frame)


def frame_fault(table: str, stored: int, plain: int, element: int, max_frame: int) -> str | None:
    """Why a frame of ``stored`` bytes holding ``plain`` bytes (byte-shuffled by ``element``,
    or 0) cannot be read (None: it can), as ``table`` (what lists it) gives it."""
    if stored < MIN_FRAME or not 0 < plain <= max_frame:
        return (
            f"its entry in the {table} is out of bounds ({stored} stored bytes, at least {MIN_FRAME}; "
            f"{plain} plain bytes, 1..{max_frame})"
        )
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


# ---- format 2.1: frames of the data and the TOC, dictionaries, a paged frame table ------------
#
# The compressed section of a 2.1 archive: zstd frames holding the plain data and then the
# plain TOC (one logical stream: data offset x is logical x, TOC offset y is logical D + y; no
# frame holds both), then the dictionaries, then the page tables, then the index, each of
# these a skippable frame (zstd tools skip them, so ``zstd -d`` of the section gives the plain
# data and TOC, given the dictionaries with ``-D``). The index ends the section; it locates
# the rest and ends in a footer shaped as zstd's seekable one whose descriptor has every
# reserved bit set, so a 2.0 reader refuses the section (``UnsupportedVersionError``).

DICT_MAGIC = 0x184D2A5C
PAGE_MAGIC = 0x184D2A5B
INDEX_MAGIC = 0x184D2A5A
DICT_TAG, PAGE_TAG, INDEX_TAG = b"MLCD", b"MLCP", b"MLCI"
INDEX_DESCRIPTOR = 0x7C  # every reserved bit of the seekable descriptor: not a 2.0 seek table
MAX_INDEX = 1 << 20  # bytes of the index a reader accepts (writers keep it under 64 KB)
MAX_PAGE = 1 << 20  # bytes of one page table
MAX_DICT = 1 << 20  # plain bytes of one dictionary: what writers make at most (write.compress.DICT_MAX);
# a read loads it for a frame that needs it, so that it costs no more than a frame (MAX_FRAME)
_INDEX_HEAD = struct.Struct(
    "<II4sQQQIIIII"
)  # magic, size, tag, D, T, root pos, root len, frames, per page, pages, dicts
_INDEX_PAGE = struct.Struct(
    "<QQQI"
)  # stored offset of the page table, first logical offset, first stored offset, its size
_INDEX_DICT = struct.Struct("<QII")  # stored offset of the dictionary's record, its size, plain size
_PAGE_HEAD = struct.Struct("<II4sI")  # magic, size, tag, frame count


class Index(NamedTuple):
    """The index of a 2.1 compressed section: the plain lengths of the data (``data``) and
    the TOC (``toc``), the root node (position in the TOC, length; 0: none), the frames,
    ``per_page`` frames to a page table (the last may hold fewer), each page's (stored
    offset, first logical offset, first frame's stored offset, size of the page table), and
    each dictionary's (stored offset, size of its record, plain size). Offsets are from the
    section's start."""

    data: int
    toc: int
    root: tuple[int, int]
    frames: int
    per_page: int
    pages: list[tuple[int, int, int, int]]
    dicts: list[tuple[int, int, int]]


class Page(NamedTuple):
    """The frames of one page table: frame k of the page holds logical bytes [logical[k],
    logical[k + 1]) and is stored at [stored[k], stored[k + 1]) from the section's start;
    ``codes``/``params`` its filter (as in 2.0), ``dicts`` its dictionary (0: none; d: the
    d-th of the index), two bytes each, little-endian."""

    stored: list[int]
    logical: list[int]
    codes: bytes
    params: bytes
    dicts: bytes

    def dictionary(self, k: int) -> int:
        """Frame k's dictionary (0: none; a page without dictionaries lists none)."""
        return self.dicts[2 * k] | self.dicts[2 * k + 1] << 8 if self.dicts else 0

    def shuffle(self, k: int) -> int:
        """The element size frame k is byte-shuffled by, or 0."""
        return self.params[k] if self.codes and self.codes[k] == SHUFFLE else 0


def pack_dictionary(frame: bytes) -> bytes:
    """The record of a dictionary: a skippable frame holding the zstd frame of its bytes."""
    return _SKIPPABLE_HEADER.pack(DICT_MAGIC, 4 + len(frame)) + DICT_TAG + frame


def dictionary_frame(record: bytes | memoryview) -> memoryview:
    """The zstd frame of a dictionary from its record (``pack_dictionary``)."""
    view = memoryview(record)
    if len(view) < 12:
        raise CorruptedError(f"compressed section: a dictionary record of {len(view)} bytes is too short")
    magic, size = _SKIPPABLE_HEADER.unpack_from(view)
    if magic != DICT_MAGIC or size != len(view) - _SKIPPABLE_HEADER.size or bytes(view[8:12]) != DICT_TAG:
        raise CorruptedError("compressed section: a dictionary record is not well formed")
    return view[12:]


def pack_page(sizes: Sequence[tuple[int, int]], filters: Sequence[tuple[int, int]], dicts: Sequence[int]) -> bytes:
    """The page table of frames of these (stored, plain) sizes, (filter code, parameter)
    and dictionaries, with the CRC-32 of all that follows its tag."""
    n = len(sizes)
    body = (
        struct.pack(f"<I{2 * n}I", n, *(x for pair in sizes for x in pair))
        + bytes(c for c, _ in filters)
        + bytes(p for _, p in filters)
        + struct.pack(f"<{n}H", *dicts)
    )
    body += _CRC.pack(zlib.crc32(body))
    return _SKIPPABLE_HEADER.pack(PAGE_MAGIC, 4 + len(body)) + PAGE_TAG + body


def page_size(frames: int) -> int:
    """Bytes of the page table of ``frames`` frames."""
    return _PAGE_HEAD.size + 12 * frames + _CRC.size


def parse_page(buf: bytes | memoryview, frames: int, first_logical: int, first_stored: int, dicts: int) -> Page:
    """A page table of ``frames`` frames, the first at logical ``first_logical`` and stored
    at ``first_stored``, naming at most ``dicts`` dictionaries; its CRC and codes checked
    (each frame's own bounds are checked when it is read)."""
    view = memoryview(buf)
    if len(view) != page_size(frames):
        raise CorruptedError(f"compressed section: a page table of {frames} frames has {len(view)} bytes")
    magic, size, tag, n = _PAGE_HEAD.unpack_from(view)
    if magic != PAGE_MAGIC or size != len(view) - _SKIPPABLE_HEADER.size or tag != PAGE_TAG or n != frames:
        raise CorruptedError("compressed section: a page table is not well formed")
    body = view[12 : len(view) - _CRC.size]
    if zlib.crc32(body) != _CRC.unpack_from(view, len(view) - _CRC.size)[0]:
        raise CorruptedError("compressed section: a page table fails its checksum")
    sizes = struct.unpack_from(f"<{2 * n}I", view, _PAGE_HEAD.size)
    at = _PAGE_HEAD.size + 8 * n
    codes, params, dict_bytes = (
        bytes(view[at : at + n]),
        bytes(view[at + n : at + 2 * n]),
        bytes(view[at + 2 * n : at + 4 * n]),
    )
    _check_filters(codes, params)
    if n and max(struct.unpack(f"<{n}H", dict_bytes)) > dicts:  # (max: no Python step a frame)
        raise CorruptedError(f"compressed section: a frame names a dictionary the section does not have ({dicts})")
    stored = list(accumulate(sizes[0::2], initial=first_stored))
    logical = list(accumulate(sizes[1::2], initial=first_logical))
    k = codes.find(RAW)
    while k >= 0:  # read in place: a raw frame holds exactly its plain bytes, between its head and its checksum
        stored_size, plain_size = sizes[2 * k], sizes[2 * k + 1]
        if stored_size != RAW_HEAD + plain_size + RAW_TAIL or not 0 < plain_size <= RAW_MAX:
            raise CorruptedError(
                f"compressed section: the raw frame at offset {stored[k]} of the section stores {stored_size} "
                f"bytes for {plain_size} plain bytes (a raw frame stores its 1 to {RAW_MAX} plain bytes and "
                f"{RAW_HEAD + RAW_TAIL} more)"
            )
        k = codes.find(RAW, k + 1)
    return Page(stored, logical, codes, params, dict_bytes)


def _check_filters(codes: bytes, params: bytes) -> None:
    """2.1's filter codes: 0 (none), 1 (byte shuffle; its parameter the element size, 2 to
    255), 2 (a raw frame: ``RAW_HEAD``); only a shuffle has a parameter."""
    unknown = codes.translate(None, _FILTER_CODES_2_1)
    if unknown:
        raise UnsupportedVersionError(
            f"compressed data section: frame filter {unknown[0]} is unknown to this msglc (a newer writer?)"
        )
    shuffled = codes.translate(_IS_SHUFFLE)
    if shuffled != params.translate(_NONZERO) or 1 in params:
        raise CorruptedError("compressed data section: a frame filter has a parameter it cannot have")


def pack_index(index: Index) -> bytes:
    """The index record, ending the section: a skippable frame whose last 9 bytes are the
    footer (its own size, the descriptor, the seekable magic), CRC-checked."""
    body = b"".join(_INDEX_PAGE.pack(*page) for page in index.pages) + b"".join(
        _INDEX_DICT.pack(*d) for d in index.dicts
    )
    size = _INDEX_HEAD.size + len(body) + _CRC.size + _FOOTER.size
    head = _INDEX_HEAD.pack(
        INDEX_MAGIC,
        size - _SKIPPABLE_HEADER.size,
        INDEX_TAG,
        index.data,
        index.toc,
        index.root[0],
        index.root[1],
        index.frames,
        index.per_page,
        len(index.pages),
        len(index.dicts),
    )
    crc = zlib.crc32(head[_SKIPPABLE_HEADER.size :] + body)
    return head + body + _CRC.pack(crc) + _FOOTER.pack(size, INDEX_DESCRIPTOR, SEEKABLE_MAGIC)


def index_size(footer: bytes | memoryview, section_size: int) -> int:
    """The size of a 2.1 index from its footer (the section's last ``FOOTER_SIZE`` bytes)."""
    size: int
    descriptor: int
    magic: int
    size, descriptor, magic = _FOOTER.unpack(footer)
    if magic != SEEKABLE_MAGIC:
        raise CorruptedError(f"compressed section: no index (expected magic {SEEKABLE_MAGIC:#x}, found {magic:#x})")
    if descriptor != INDEX_DESCRIPTOR:
        raise UnsupportedVersionError(f"compressed section: index descriptor {descriptor:#04x} is not one msglc reads")
    if not _INDEX_HEAD.size + _CRC.size + FOOTER_SIZE <= size <= min(MAX_INDEX, section_size):
        raise CorruptedError(f"compressed section: an index of {size} bytes does not fit ({section_size} in all)")
    return size


def parse_index(buf: bytes | memoryview, section_size: int) -> Index:
    """The index from the section's last bytes ``buf`` (at least ``index_size``), checked: its
    CRC, and that its pages and dictionaries lie in the section before it, in order."""
    size = index_size(buf[-FOOTER_SIZE:], section_size)
    view = memoryview(buf)[len(buf) - size :]
    (magic, content, tag, data, toc, root_pos, root_len, frames, per_page, pages, dicts) = _INDEX_HEAD.unpack_from(view)
    body_end = size - _CRC.size - FOOTER_SIZE
    if (
        magic != INDEX_MAGIC
        or content != size - _SKIPPABLE_HEADER.size
        or tag != INDEX_TAG
        or body_end != _INDEX_HEAD.size + pages * _INDEX_PAGE.size + dicts * _INDEX_DICT.size
    ):
        raise CorruptedError("compressed section: the index is not well formed")
    if zlib.crc32(view[_SKIPPABLE_HEADER.size : body_end]) != _CRC.unpack_from(view, body_end)[0]:
        raise CorruptedError("compressed section: the index fails its checksum")
    page_list = [_INDEX_PAGE.unpack_from(view, _INDEX_HEAD.size + k * _INDEX_PAGE.size) for k in range(pages)]
    at = _INDEX_HEAD.size + pages * _INDEX_PAGE.size
    dict_list = [_INDEX_DICT.unpack_from(view, at + k * _INDEX_DICT.size) for k in range(dicts)]
    _check_index(data, toc, root_pos, root_len, frames, per_page, page_list, dict_list, section_size - size)
    return Index(data, toc, (root_pos, root_len), frames, per_page, page_list, dict_list)


def _check_index(
    data: int,
    toc: int,
    root_pos: int,
    root_len: int,
    frames: int,
    per_page: int,
    pages: list[tuple[int, int, int, int]],
    dicts: list[tuple[int, int, int]],
    end: int,
) -> None:
    """The index's own consistency: frames split into pages of ``per_page``, the pages'
    first offsets ascending from 0 (frames hold at least a byte, so logical offsets rise),
    page tables and dictionaries in the section before ``end`` (where the index starts),
    the root inside the TOC."""
    why = None
    if frames and not per_page or per_page and len(pages) != -(-frames // per_page) or (not frames) != (not pages):
        why = f"{frames} frames do not make {len(pages)} pages of {per_page}"
    elif root_len and not (0 <= root_pos and root_pos + root_len <= toc) or (data + toc == 0) != (not frames):
        why = f"its root node {root_pos}+{root_len} lies outside its TOC ({toc} bytes)"
    elif pages and (pages[0][1] != 0 or pages[0][2] != 0):
        why = "its first page does not start the section"
    elif any(a[1] >= b[1] or a[2] >= b[2] for a, b in itertools.pairwise(pages)) or (
        pages and pages[-1][1] >= data + toc
    ):
        why = "its pages' offsets do not rise"
    elif any(not 0 <= at <= at + size <= end for at, _, _, size in pages) or any(
        not 0 <= at <= at + size <= end for at, size, _ in dicts
    ):
        why = "a page table or a dictionary lies outside the section"
    elif any(not 0 < plain <= MAX_DICT for _, _, plain in dicts):
        why = f"a dictionary is not 1 to {MAX_DICT} bytes"
    elif per_page > MAX_PAGE // 12 or any(
        page_size(min(per_page, frames - k * per_page)) != page[3] for k, page in enumerate(pages)
    ):
        why = "a page table's size does not match its frame count"
    if why is not None:
        raise CorruptedError(f"compressed section: the index is inconsistent: {why}")
