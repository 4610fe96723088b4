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
u32|u64) | page table | records (n x u64: key hash << 32 | entry)."""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import accumulate, repeat
from operator import lshift, or_
from typing import Literal, NamedTuple, Protocol

import msgspec

from msglc.format.container import U32
from msglc.format.msgpack import array_header, item_end
from msglc.util import accel
from msglc.util.accel import BlockProbe

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


TABLES_IN_MEMORY = 1 << 20  # a dict's block offsets and page table up to this size are read once
RECORDS_KEPT = 16 << 20  # a dict's page records up to this size are kept once read (as in _speedups.c)


class Reads(Protocol):
    """What a ``BlockIndex`` lookup reads through (an archive): file reads, and the error for
    bytes that do not fit."""

    def read(self, offset: int, size: int, /) -> bytes | memoryview: ...

    def damaged(self, message: str, /) -> Exception: ...


class BlockIndex:
    """The block index region of one dict, its layout worked out once. ``find`` answers a key
    with one read of its page's records (CRC-checked) and one of its block, whose entries are
    skipped until the key's; the block offsets and the page table (about 4.3 bytes per block
    and 8 per page of 32 keys) are read once and CRC-checked while they take at most
    ``TABLES_IN_MEMORY``, else a lookup reads its page's slot and its block's offsets too. A
    page's records, once read and checked, are kept while all the dict's records take at most
    ``RECORDS_KEPT`` (about 3 bytes a key): a later lookup in the page reads its block alone.
    Entries whose value has a node of its own (``kids``: their start, end and encoded key, by
    start) are never read: a lookup never asks for them (their keys are in the node)."""

    __slots__ = (
        "region",
        "n",
        "page_bits",
        "width",
        "block_bits",
        "blocks",
        "size",
        "table",
        "records",
        "span",
        "offs",
        "pages",
        "kids",
        "kid_starts",
        "probe",
        "kept",
    )

    def __init__(
        self,
        a: Reads,
        region: int,
        node: tuple[int, int, int, int, int],
        span: tuple[int, int],
        kids: list[tuple[int, int, bytes]],
    ):
        """``node``: (n, page_bits, offs_width, offs_crc, block_bits) of the dict's node;
        ``span``: (first, end) of its entries, which every block must lie in."""
        n, page_bits, width, offs_crc, block_bits = node
        self.region, self.n, self.page_bits, self.width, self.block_bits = region, n, page_bits, width, block_bits
        self.span, self.kids = span, sorted(kids)
        self.kid_starts = [k[0] for k in self.kids]
        self.blocks = block_count(n, block_bits)
        self.size = 1 + block_width(self.blocks)  # bytes per record
        self.table, self.records, _ = block_layout(n, page_bits, width, block_bits)
        self.offs: array[int] | None = None
        self.pages: array[int] | None = None
        self.probe: BlockProbe | None = None
        self.kept: dict[int, bytes] | None = {} if self.size * n <= RECORDS_KEPT else None  # page -> records
        if self.records > TABLES_IN_MEMORY:
            return
        head = memoryview(bytes(a.read(region, self.records)))
        if zlib.crc32(head[: self.table]) != offs_crc:
            raise a.damaged(f"hash index block offsets at offset {region} fail their checksum")
        pages = head[self.table :]
        if zlib.crc32(pages[:-4]) != U32.unpack_from(pages, len(pages) - 4)[0]:
            raise a.damaged(f"hash index page table at offset {region + self.table} fails its checksum")
        self.offs = le_array("I" if width == 4 else "Q", bytes(head[: self.table]))
        self.pages = le_array("I", bytes(pages))
        speedups = accel.speedups
        if speedups is not None:  # the whole lookup in C, with the same reads
            ranges = array("Q", [x for start, end, _ in self.kids for x in (start, end)]).tobytes()
            fields = (self.region + self.records, n, page_bits, self.blocks, block_bits, *span)
            self.probe = speedups.BlockProbe(bytes(pages), bytes(head[: self.table]), width, ranges, *fields)

    def find(self, a: Reads, base: int, key: bytes, h: int) -> tuple[int, bytes | memoryview] | None:
        """(offset, bytes) of the value of the key encoded as ``key`` (hash ``h``) in the dict
        whose first byte is at ``base``, or None if it has no such key."""
        if self.probe is not None and accel.speedups is not None:
            answer = self.probe.find(a.read, base, key, h)
            if answer is not NotImplemented:
                return answer
        for block, count in self._candidates(a, key, h):
            found = self._in_block(a, base, key, h, block, count)
            if found is not None:
                return found
        return None

    def contains(self, a: Reads, base: int, key: bytes, h: int) -> bool:
        """Does the dict hold the key encoded as ``key``? Answered from the index and the keys
        of the blocks it names, checked as ``find`` checks them, without reading any value
        whole: a block larger than ``WALK_OVER`` (it holds a large string or bytes value) is
        walked a window at a time, its values stepped over by their headers."""
        for block, count in self._candidates(a, key, h):
            start, stop = self._block_span(a, block)
            if stop - start <= WALK_OVER:
                if self._in_block(a, base, key, h, block, count) is not None:
                    return True
            elif self._walk_block(a, base, key, h, block, count, start, stop):
                return True
        return False

    def _candidates(self, a: Reads, key: bytes, h: int) -> list[tuple[int, int]]:
        """The blocks that the records of hash ``h``'s page name with its fingerprint, each
        with how many records name it (its page's records read and checked, or kept)."""
        bits, size, pages = self.page_bits, self.size, self.pages
        page = h >> (32 - bits)
        if pages is not None:
            first, page_crc, end = pages[2 * page : 2 * page + 3]
        else:
            first, page_crc, end = _PAGE_SLOT.unpack(a.read(self.region + self.table + 8 * page, 12))
        if not first <= end <= self.n:
            raise a.damaged(f"hash index page {page} has bounds {first}..{end} outside 0..{self.n}")
        at = self.region + self.records + size * first
        recs = self.kept.get(page) if self.kept is not None else None
        if recs is None:
            recs = bytes(a.read(at, size * (end - first)))
            if zlib.crc32(recs) != page_crc:
                raise a.damaged(f"hash index page {page} at offset {at} fails its checksum")
            if self.kept is not None:
                self.kept[page] = recs
        try:
            return page_blocks(recs, size, ((h << bits) & 0xFFFFFFFF) >> 24, self.blocks)  # fingerprint()
        except ValueError as e:
            raise a.damaged(f"hash index page {page} at offset {at}: {e}") from None

    def _block_span(self, a: Reads, block: int) -> tuple[int, int]:
        """(start, stop) of ``block``'s entries, relative to the dict's first byte."""
        offs = self.offs
        if offs is not None:
            start, stop = offs[block], offs[block + 1]
        else:
            start, stop = _OFFSET_PAIRS[self.width].unpack(a.read(self.region + block * self.width, 2 * self.width))
        if not self.span[0] <= start < stop <= self.span[1]:
            raise a.damaged(f"hash index block {block} at offset {self.region} points outside its dict")
        return start, stop

    def _in_block(
        self, a: Reads, base: int, key: bytes, h: int, block: int, sharing: int
    ) -> tuple[int, bytes | memoryview] | None:
        start, stop = self._block_span(a, block)
        entries = min(1 << self.block_bits, self.n - (block << self.block_bits))
        data: bytes | memoryview
        skipped: list[int] = []
        pieces = None  # where the parts of ``data`` lie in the dict, when large values are left out
        if self.kids and (k := bisect_left(self.kid_starts, start)) < len(self.kids) and self.kids[k][0] < stop:
            data, pieces, skipped = self._around_kids(a, base, start, stop, k)
            entries -= len(skipped)
        else:  # the usual block: no large value inside
            data = a.read(base + start, stop - start)
        try:
            found = find_entry(data, entries, key)
            if found is not None:
                if pieces is None:
                    return base + start + found[0], data[found[0] : found[1]]
                joined, where = next((j, w) for j, w in reversed(pieces) if j <= found[0])
                return base + where + found[0] - joined, data[found[0] : found[1]]
            crcs = [*block_key_crcs(data, entries), *skipped]
        except ValueError as e:  # (the block's bytes are not its entries)
            raise a.damaged(f"dict block at offset {base + start}: {e}") from None
        self._check_sharing(a, base + start, h, crcs, sharing)
        return None

    def _check_sharing(self, a: Reads, at: int, h: int, crcs: list[int], sharing: int) -> None:
        """A block without the key: the fingerprint is other keys', and the block at ``at``
        must hold as many keys with it (hashes ``crcs``) as the records say."""
        bits = self.page_bits
        mark = (fingerprint(h, bits), h >> (32 - bits))
        if sum((fingerprint(c, bits), c >> (32 - bits)) == mark for c in crcs) != sharing:
            raise a.damaged(f"dict block at offset {at} does not match its hash index")

    def _walk_block(
        self, a: Reads, base: int, key: bytes, h: int, block: int, sharing: int, start: int, stop: int
    ) -> bool:
        """``contains`` for a large block: its entries walked a window of about ``WALK_OVER``
        bytes at a time (each key compared, each value stepped over by its headers), the
        entries whose value has a node of its own jumped over (their keys are in the node)."""
        entries = min(1 << self.block_bits, self.n - (block << self.block_bits))
        kids = [(kid_start, kid_end, kid_key) for kid_start, kid_end, kid_key in self.kids if start <= kid_start < stop]
        window = _Window(a, base, start, stop)
        crcs, pos, k = [], start, 0
        for _ in range(entries):
            if k < len(kids) and kids[k][0] == pos:  # a large value's entry: its key is in the node
                crcs.append(zlib.crc32(kids[k][2]))
                pos, k = kids[k][1], k + 1
                continue
            key_end = window.item_end(pos)
            stored = window.bytes(pos, key_end)
            if stored == key:
                return True
            crcs.append(zlib.crc32(stored))
            pos = window.item_end(key_end)
            if k < len(kids) and kids[k][0] < pos:
                raise a.damaged(f"dict block at offset {base + start} cuts through a large value's entry")
        if pos != stop or k != len(kids):
            raise a.damaged(f"dict block at offset {base + start} is not {entries} entries")
        self._check_sharing(a, base + start, h, crcs, sharing)
        return False

    def _around_kids(
        self, a: Reads, base: int, start: int, stop: int, k: int
    ) -> tuple[bytes, list[tuple[int, int]], list[int]]:
        """The entries of block [start, stop) but the large values' (from ``self.kids[k]`` on):
        their bytes joined, where each piece starts (in the joined bytes, in the dict), and
        the hashes of the keys left out."""
        parts: list[bytes | memoryview] = []
        pieces: list[tuple[int, int]] = []
        skipped: list[int] = []
        pos, joined = start, 0
        while k < len(self.kids) and self.kids[k][0] < stop:
            kid_start, kid_end, kid_key = self.kids[k]
            if kid_end > stop or kid_start < pos:
                raise a.damaged(f"dict block at offset {base + start} cuts through a large value's entry")
            if kid_start > pos:
                parts.append(a.read(base + pos, kid_start - pos))
                pieces.append((joined, pos))
                joined += kid_start - pos
            skipped.append(zlib.crc32(kid_key))
            pos, k = kid_end, k + 1
        if pos < stop:
            parts.append(a.read(base + pos, stop - pos))
            pieces.append((joined, pos))
        return b"".join(parts), pieces or [(0, start)], skipped


WALK_OVER = 1 << 20  # a block larger than this (a large string inside) is walked, not read whole


class _Window:
    """Reads of a block's items ``[start, stop)`` of the dict at ``base`` through a window of
    about ``WALK_OVER`` bytes: an item's end is found from its headers, so a large string or
    bytes value is stepped over without being read."""

    def __init__(self, a: Reads, base: int, start: int, stop: int) -> None:
        self.a, self.base, self.start, self.stop = a, base, start, stop
        self.at, self.buf = start, b""  # the dict's bytes from ``at``

    def item_end(self, pos: int) -> int:
        """Where the item at ``pos`` ends (it must end within the block)."""
        if pos >= self.stop:
            raise self._damaged("an entry runs past its end")
        size = WALK_OVER
        while True:
            if 0 <= pos - self.at < len(self.buf):
                try:
                    end = item_end(self.buf, pos - self.at)
                except ValueError as e:
                    raise self._damaged(str(e)) from None
                if end is not None:
                    if self.at + end > self.stop:
                        raise self._damaged("an item runs past its end")
                    return self.at + end
                if self.at + len(self.buf) >= self.stop:
                    raise self._damaged("an item runs past its end")
                size = max(size, 2 * len(self.buf))  # a small container across the window's end
            self.at, self.buf = pos, bytes(self.a.read(self.base + pos, min(size, self.stop - pos)))

    def bytes(self, pos: int, end: int) -> bytes:
        """The block's bytes ``[pos, end)`` (an item found by ``item_end``)."""
        if self.at <= pos and end <= self.at + len(self.buf):
            return self.buf[pos - self.at : end - self.at]
        return bytes(self.a.read(self.base + pos, end - pos))

    def _damaged(self, why: str) -> Exception:
        return self.a.damaged(f"dict block at offset {self.base + self.start}: {why}")


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
