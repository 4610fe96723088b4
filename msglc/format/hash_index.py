"""The hash index of a big dict, as stored in the TOC: where a key's entry is found by
reading one small page. Hashes are CRC-32 of the keys' msgpack encodings (stable across
processes); records are sorted by hash, so page p = hash >> (32 - page_bits) holds a
contiguous run of them. Two layouts (docs/format.md):

Block index (node type 6, what writers write): block offsets ((nb+1) x u32|u64: where each
block of 2**block_bits entries starts, then the end) | page table ((P+1) x (u32 first record,
u32 CRC-32 of the page's records); the last slot's CRC checks the table) | records (n x (u8
fingerprint, the entry's block as a ``block_width``-byte integer)). A lookup reads one page and
one block (about a KB), and finds the entry in the block by skipping msgpack items: about 3.4
bytes per entry instead of 12.

Entry index (node type 3, read and verified, no longer written): entry offsets ((n+1) x
u32|u64) | page table | records (n x u64: key hash << 32 | entry).

Layouts and pure functions on bytes only: the lookups that read a region are in
``read/dict_index.py``."""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate, repeat
from operator import lshift, or_
from typing import Literal, NamedTuple

import msgspec

from msglc.format.layout import U32
from msglc.format.msgpack import array_header
from msglc.util import accel

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


# a page-table slot and the next slot's first record: (first record, CRC-32 of the page's records, end)
PAGE_SLOT = struct.Struct("<III")
OFFSET_PAIRS = {4: struct.Struct("<II"), 8: struct.Struct("<QQ")}  # an entry's offset and the next one's


class Region(NamedTuple):
    """An index region as its three parts (entry or block offsets, page table, records), and
    the fields its node records about it."""

    parts: tuple[bytes | memoryview, bytes, bytes | memoryview]
    page_bits: int
    width: int  # bytes per entry or block offset: 4 or 8
    offs_crc: int  # CRC-32 of the offsets
    block_bits: int | None  # entries per block 2**block_bits (a block index), None (an entry index)

    @property
    def size(self) -> int:
        return sum(len(part) for part in self.parts)


# ---- the block index (node type 6) ------------------------------------------------------------
BLOCK_BYTES = 1024  # about how many bytes of entries a lookup reads: blocks are cut to hold about this
# ... in a compressed archive, where a lookup decompresses a whole frame (several KB) anyway:
# larger blocks cost a slightly longer skip through the block, and save a block offset each
COMPRESSED_BLOCK_BYTES = 2048
MAX_BLOCK_BITS = 6  # writers put at most 64 entries in a block
READ_MAX_BLOCK_BITS = 16  # readers accept blocks of up to 65536 entries


def writer_block_bytes(compressed: bool) -> int:
    """The block size writers aim at: ``COMPRESSED_BLOCK_BYTES`` in a compressed archive whose
    frames are cut at block starts (``dump``'s; elsewhere a larger block spans frames more often)."""
    return COMPRESSED_BLOCK_BYTES if compressed else BLOCK_BYTES


def block_bits_for(koffs: Sequence[int], block_bytes: int = BLOCK_BYTES) -> int:
    """The writers' block size for entries at these offsets (plus the end): as many entries as
    make about ``block_bytes`` on average, a power of two, at most 2**MAX_BLOCK_BITS."""
    n = len(koffs) - 1
    mean = (koffs[-1] - koffs[0]) / max(n, 1)
    bits = 0
    while bits < MAX_BLOCK_BITS and (2 << bits) * mean <= block_bytes:
        bits += 1
    return bits


def block_count(n: int, block_bits: int) -> int:
    return (n + (1 << block_bits) - 1) >> block_bits


def block_width(blocks: int) -> int:
    """Bytes of a record's block number: the fewest that hold the largest."""
    return max(1, ((blocks - 1).bit_length() + 7) // 8)


def fingerprint(h: int, page_bits: int) -> int:
    """The 8 hash bits after the page's (zeros where fewer remain): a page's records are sorted
    by them, and a lookup reads only the blocks of the records whose fingerprint matches."""
    return ((h << page_bits) & 0xFFFFFFFF) >> 24


def block_layout(n: int, page_bits: int, width: int, block_bits: int) -> tuple[int, int, int]:
    """Where the page table and the records start in a block index region over ``n`` entries,
    and the region's size."""
    blocks = block_count(n, block_bits)
    table = (blocks + 1) * width
    records = table + ((1 << page_bits) + 1) * 8
    return table, records, records + (1 + block_width(blocks)) * n


def page_blocks(recs: bytes, size: int, fp: int, blocks: int) -> list[tuple[int, int]]:
    """The blocks named by the records ``recs`` (``size`` bytes each) whose fingerprint is
    ``fp``, in record order, each with how many records name it (in C where available); a
    record naming a block ``>= blocks`` raises ValueError."""
    speedups = accel.speedups
    if speedups is not None:
        return speedups.page_blocks(recs, size, fp, blocks)
    fps = recs[::size]
    sharing: dict[int, int] = {}
    i = fps.find(fp)
    while i >= 0:
        block = int.from_bytes(recs[i * size + 1 : (i + 1) * size], "little")
        if block >= blocks:
            raise ValueError(f"record {i} names block {block} of {blocks}")
        sharing[block] = sharing.get(block, 0) + 1
        i = fps.find(fp, i + 1)
    return list(sharing.items())


def block_records(records: array[int] | memoryview, page_bits: int, block_bits: int, size: int) -> bytes:
    """The block index's records from the sorted ``hash << 32 | entry`` records (native u64):
    each the fingerprint byte and the entry's block in ``size - 1`` little-endian bytes."""
    speedups = accel.speedups
    if speedups is not None:
        raw = memoryview(records).cast("B") if sys.byteorder == "little" else _le_bytes(records)
        return speedups.block_records(raw, page_bits, block_bits, size - 1)
    out = bytearray(size * len(records))
    for i, record in enumerate(records):
        at = size * i
        out[at] = fingerprint(record >> 32, page_bits)
        out[at + 1 : at + size] = ((record & 0xFFFFFFFF) >> block_bits).to_bytes(size - 1, "little")
    return bytes(out)


def _le_bytes(records: array[int] | memoryview) -> bytes:
    swapped = array("Q", records)
    swapped.byteswap()
    return swapped.tobytes()


def find_entry(block: bytes | memoryview, count: int, key: bytes) -> tuple[int, int] | None:
    """(start, end) in ``block`` of the value of the entry whose key is encoded as ``key``,
    among the ``count`` entries (key, value, key, ...) that make ``block``; None if no key is
    ``key``. Items are skipped, not decoded (in C where available). Raises ValueError when the
    block is not exactly ``count`` entries."""
    speedups = accel.speedups
    if speedups is not None:
        return speedups.find_entry(block, count, key)
    raws = _raw_entries(block, count)
    wanted = msgspec.Raw(key)
    for j in range(0, len(raws), 2):
        if raws[j] == wanted:
            start = sum(map(len, raws[: j + 1]))
            return start, start + len(raws[j + 1])
    return None


def block_key_crcs(block: bytes | memoryview, count: int) -> list[int]:
    """The CRC-32 of each key of the ``count`` entries that make ``block`` (in C where
    available: nesting costs no recursion; ValueError if they do not make it)."""
    speedups = accel.speedups
    if speedups is not None:
        return speedups.key_crcs(block, count)
    return [zlib.crc32(r) for r in _raw_entries(block, count)[0::2]]


def _raw_entries(block: bytes | memoryview, count: int) -> list[msgspec.Raw]:
    """Keys and values of the ``count`` entries that make ``block``, as raw items."""
    try:
        raws: list[msgspec.Raw] = _RAW_ITEMS.decode(array_header(2 * count) + bytes(block))
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"not {count} msgpack entries: {e}") from None
    except RecursionError:
        raise ValueError("an entry is nested too deeply to skip without the C accelerator") from None
    return raws


def entry_hashes(body: bytes | memoryview, n: int, base: int) -> tuple[list[int], list[int]]:
    """The offsets (from ``base`` bytes before ``body``, plus the end) and key hashes of the
    ``n`` entries that make ``body``: what a block index does not store per entry, from the
    entries themselves (ValueError if ``body`` is not ``n`` entries)."""
    speedups = accel.speedups
    if speedups is not None:
        offs_bytes, width, recs, _, _ = speedups.map_index(body, 0, n, 0, 1 << 62, 0)
        offs = le_array("I" if width == 4 else "Q", offs_bytes)
        if len(offs) != n + 1 or offs[-1] != len(body):
            raise ValueError(f"not {n} msgpack entries")
        hashes = [0] * n
        for record in le_array("Q", recs):
            hashes[record & 0xFFFFFFFF] = record >> 32
        return [base + o for o in offs], hashes
    raws = _raw_entries(body, n)
    lens = [len(raws[j]) + len(raws[j + 1]) for j in range(0, 2 * n, 2)]
    return list(accumulate(lens, initial=base)), [zlib.crc32(k) for k in raws[0::2]]


_RAW_ITEMS = msgspec.msgpack.Decoder(list[msgspec.Raw])


# ---- building a region (writers, and verify() comparing a region with what a writer writes) -------
def region_of_keys(
    key_raws: Sequence[bytes | bytearray | memoryview], koffs: Sequence[int], block_bits: int | None
) -> Region:
    """The region of a dict whose keys are encoded as ``key_raws``, entry j at ``koffs[j]``."""
    return region_of(*hash_records(list(map(zlib.crc32, key_raws))), koffs, block_bits)


def region_of(
    records: array[int] | memoryview[int], firsts: Sequence[int], koffs: Sequence[int], block_bits: int | None
) -> Region:
    """The region from its sorted ``records`` (native u64: an ``array("Q")`` or a memoryview),
    page starts ``firsts`` (``hash_records``) and the entries' offsets ``koffs``: a block index
    of 2**block_bits entries per block, or with None the entry index (type 3)."""
    width = 4 if koffs[-1] < 2**32 else 8
    code: IntCode = "I" if width == 4 else "Q"
    page_bits = hash_page_bits(len(records))
    if block_bits is not None:
        n = len(koffs) - 1
        starts = array(code, koffs[0 : n : 1 << block_bits])
        starts.append(koffs[n])
        if sys.byteorder == "big":
            starts.byteswap()
        size = 1 + block_width(block_count(n, block_bits))
        recs = block_records(records, page_bits, block_bits, size)
        return _region(memoryview(starts).cast("B"), recs, size, firsts, page_bits, width, block_bits)
    entry_offs = koffs if isinstance(koffs, array) and koffs.typecode == code else array(code, koffs)
    if sys.byteorder == "big":  # copies: the caller's arrays stay as they are
        records, entry_offs = array("Q", records), array(code, entry_offs)
        records.byteswap()
        entry_offs.byteswap()
    return _region(memoryview(entry_offs).cast("B"), memoryview(records).cast("B"), 8, firsts, page_bits, width, None)


def _region(
    offs_bytes: bytes | memoryview,
    rec_bytes: bytes | memoryview,
    size: int,
    firsts: Sequence[int],
    page_bits: int,
    width: int,
    block_bits: int | None,
) -> Region:
    """The region from the little-endian bytes of its offsets and its records (``size`` bytes
    each) and the page starts: the page table is computed here."""
    pages = 1 << page_bits
    rec_view = memoryview(rec_bytes)
    table = array("I", bytes(8 * (pages + 1)))
    table[0::2] = array("I", firsts)
    crcs = [zlib.crc32(rec_view[size * a : size * b]) for a, b in zip(firsts, firsts[1:], strict=False)]
    table[1:-1:2] = array("I", crcs)
    if sys.byteorder == "big":
        table.byteswap()
    table_bytes = table.tobytes()
    table_bytes = table_bytes[:-4] + U32.pack(zlib.crc32(table_bytes[:-4]))  # the last slot checks the table
    return Region((offs_bytes, table_bytes, rec_bytes), page_bits, width, zlib.crc32(offs_bytes), block_bits)
