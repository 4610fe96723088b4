"""The hash index of a big dict, as stored in the TOC: where a key's entry is found by
reading one small page.

Region: entry offsets ((n+1) x u32|u64) | page table ((P+1) x (u32 first record, u32 CRC-32
of the page's records); the last slot's CRC checks the table) | records (n x u64: key hash
<< 32 | entry), sorted, so page p = hash >> (32 - page_bits) holds a contiguous run of
records. Hashes are CRC-32 of the keys' msgpack encodings (stable across processes)."""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import lshift, or_
from typing import Literal, NamedTuple

from msglc.format.container import U32

MAP_INLINE_MAX = 1024  # dicts with more entries get a hash index instead of an inline key list


PAGE_ENTRIES = 32  # average entries per hash-index page


IntCode = Literal["I", "Q"]  # array typecodes of the index: u32, u64


def hash_page_bits(n: int) -> int:
    """Pages of about ``PAGE_ENTRIES`` records: one lookup reads one small page."""
    return max(0, (n // PAGE_ENTRIES).bit_length() - 1)


def hash_records(hashes: list[int]) -> tuple[array[int], list[int]]:
    """The records of a hash index over keys with these hashes, sorted (hash << 32 | entry),
    and the first record of each page (plus the count)."""
    n = len(hashes)
    page_bits = hash_page_bits(n)
    records = list(map(or_, map(lshift, hashes, repeat(32)), range(n)))
    records.sort()
    shift = 64 - page_bits
    firsts = [bisect_left(records, p << shift) for p in range(1 << page_bits)] + [n]
    return array("Q", records), firsts


def le_array(code: IntCode, data: bytes) -> array[int]:
    values = array(code)
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def le_view(code: IntCode, data: bytes) -> memoryview[int] | array[int]:
    """``le_array`` without a copy where the machine is little-endian."""
    return memoryview(data).cast(code) if sys.byteorder == "little" else le_array(code, data)


def region_layout(n: int, page_bits: int, width: int) -> tuple[int, int, int]:
    """Where the page table and the records start in an index region over ``n`` entries, and
    the region's size (see the module docstring)."""
    table = (n + 1) * width
    records = table + ((1 << page_bits) + 1) * 8
    return table, records, records + 8 * n


def entries_of_hash(
    read: Callable[[int, int], bytes | memoryview],
    damaged: Callable[[str], Exception],
    region: int,
    n: int,
    page_bits: int,
    width: int,
    h: int,
) -> list[int]:
    """The entries whose key hash is ``h``, in record order (usually one; more only where keys
    collide), from the index region at ``region`` over ``n`` entries: one read of the page's
    slot in the page table and one of its records, whose CRC-32 is checked. ``read(offset,
    size)`` reads the file; ``damaged(message)`` makes the error for bytes that do not fit."""
    table, records, _ = region_layout(n, page_bits, width)
    page = h >> (32 - page_bits)
    slot = region + table + 8 * page
    first, page_crc, end = _PAGE_SLOT.unpack(read(slot, 12))
    if not first <= end <= n:
        raise damaged(f"hash index page {page} at offset {slot} has bounds {first}..{end} outside 0..{n}")
    at = region + records + 8 * first
    recs = read(at, 8 * (end - first))
    if zlib.crc32(recs) != page_crc:
        raise damaged(f"hash index page {page} at offset {at} fails its checksum")
    page_records = array("Q")
    page_records.frombytes(recs)
    if sys.byteorder == "big":
        page_records.byteswap()
    found = []
    for r in range(bisect_left(page_records, h << 32), len(page_records)):
        record = page_records[r]
        if record >> 32 != h:
            break
        found.append(record & 0xFFFFFFFF)
    return found


def entry_span(
    read: Callable[[int, int], bytes | memoryview],
    damaged: Callable[[str], Exception],
    region: int,
    n: int,
    width: int,
    entry: int,
    span: tuple[int, int],
) -> tuple[int, int]:
    """(start, stop) of ``entry`` (key and value, as offsets from the dict's start), read from
    the region's entry offsets; they must lie in ``span``, the dict's entries."""
    at = region + entry * width
    start, stop = _OFFSET_PAIRS[width].unpack(read(at, 2 * width)) if entry < n else (0, 0)
    if not span[0] <= start < stop <= span[1]:
        raise damaged(f"hash index entry at offset {at} points outside its dict")
    return start, stop


# a page-table slot and the next slot's first record: (first record, CRC-32 of the page's records, end)
_PAGE_SLOT = struct.Struct("<III")
_OFFSET_PAIRS = {4: struct.Struct("<II"), 8: struct.Struct("<QQ")}  # an entry's offset and the next one's


class Region(NamedTuple):
    """An index region as its three parts (entry offsets, page table, records), and the
    fields its ``HashMapNode`` records about it."""

    parts: tuple[bytes | memoryview, bytes, bytes | memoryview]
    page_bits: int
    width: int  # bytes per entry offset: 4 or 8
    offs_crc: int  # CRC-32 of the entry offsets

    @property
    def size(self) -> int:
        return sum(len(part) for part in self.parts)


def region_of_keys(key_raws: Sequence[bytes | bytearray | memoryview], koffs: Sequence[int]) -> Region:
    """The region of a dict whose keys are encoded as ``key_raws``, entry j at ``koffs[j]``."""
    return region_of(*hash_records(list(map(zlib.crc32, key_raws))), koffs)


def region_of(records: array[int] | memoryview[int], firsts: Sequence[int], koffs: Sequence[int]) -> Region:
    """The region from its sorted ``records`` (native u64: an ``array("Q")`` or a memoryview)
    and page starts ``firsts`` (``hash_records``), and the entries' offsets ``koffs``."""
    width = 4 if koffs[-1] < 2**32 else 8
    code: IntCode = "I" if width == 4 else "Q"
    entry_offs = koffs if isinstance(koffs, array) and koffs.typecode == code else array(code, koffs)
    if sys.byteorder == "big":  # copies: the caller's arrays stay as they are
        records, entry_offs = array("Q", records), array(code, entry_offs)
        records.byteswap()
        entry_offs.byteswap()
    page_bits = hash_page_bits(len(records))
    return region_bytes(memoryview(entry_offs).cast("B"), memoryview(records).cast("B"), firsts, page_bits, width)


def region_bytes(
    offs_bytes: bytes | memoryview, rec_bytes: bytes | memoryview, firsts: Sequence[int], page_bits: int, width: int
) -> Region:
    """The region from the little-endian bytes of its entry offsets and records (as
    ``accel.speedups.map_index`` computes them) and the page starts."""
    pages = 1 << page_bits
    rec_view = memoryview(rec_bytes)
    table = array("I", bytes(8 * (pages + 1)))
    table[0::2] = array("I", firsts)
    table[1:-1:2] = array("I", [zlib.crc32(rec_view[8 * a : 8 * b]) for a, b in zip(firsts, firsts[1:], strict=False)])
    if sys.byteorder == "big":
        table.byteswap()
    table_bytes = table.tobytes()
    table_bytes = table_bytes[:-4] + U32.pack(zlib.crc32(table_bytes[:-4]))  # the last slot checks the table
    return Region((offs_bytes, table_bytes, rec_bytes), page_bits, width, zlib.crc32(offs_bytes))
