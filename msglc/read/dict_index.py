"""The lookup engines of big dicts' indexes: a key answered by reading a few small pieces of
the index region and one block of entries, through an archive's reads, with the tables and
pages that are worth keeping kept. The regions' layouts and the pure byte functions are in
``format.hash_index`` (node types 3 and 6) and ``format.fuse`` (types 7 and 9).

``BlockIndex`` (type 6), ``FuseIndex`` (type 7) and ``SortedIndex`` (type 9) are made once
per dict, at its first lookup; ``entries_of_hash`` and ``entry_span`` answer a key of a
type-3 index (no longer written) without keeping anything."""

from __future__ import annotations

import sys
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Protocol

import msgspec

from msglc.format import direct
from msglc.format.fuse import CHUNK, ascends, base_hash, fuse_layout, mix, slot_count, slot_value, slots_of
from msglc.format.hash_index import (
    OFFSET_PAIRS,
    PAGE_SLOT,
    block_count,
    block_key_crcs,
    block_layout,
    block_width,
    find_entry,
    fingerprint,
    le_array,
    page_blocks,
    region_layout,
)
from msglc.format.layout import U32
from msglc.format.msgpack import item_end
from msglc.util import accel
from msglc.util.accel import BlockProbe, DirectProbe

_LITTLE_ENDIAN = sys.byteorder == "little"


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
    first, page_crc, end = PAGE_SLOT.unpack(read(slot, 12))
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
    start, stop = OFFSET_PAIRS[width].unpack(read(at, 2 * width)) if entry < n else (0, 0)
    if not span[0] <= start < stop <= span[1]:
        raise damaged(f"hash index entry at offset {at} points outside its dict")
    return start, stop


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
        self.probe: BlockProbe | None = None  # read by name in _speedups.c (FastGet)
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
            fields = (self.region + self.records, n, page_bits, self.blocks, block_bits, *span)
            self.probe = speedups.BlockProbe(bytes(pages), bytes(head[: self.table]), width, self.kid_ranges(), *fields)

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

    def kid_ranges(self) -> bytes:
        """(start, end) of each large value's entry, as native u64 (a ``BlockProbe``'s kids)."""
        return array("Q", [x for start, end, _ in self.kids for x in (start, end)]).tobytes()

    def _candidates(self, a: Reads, key: bytes, h: int) -> list[tuple[int, int]]:
        """The blocks that a lookup of the key encoded as ``key`` (hash ``h``) walks, each with
        how many index records name it: from the C probe, which reads and keeps the index's
        pieces for both paths (a dict keeps them once), else ``_read_candidates``."""
        probe = self.probe
        if probe is not None and accel.speedups is not None:
            found = probe.candidates(a.read, key, h)
            if found is not NotImplemented:
                return found
        return self._read_candidates(a, key, h)

    def _read_candidates(self, a: Reads, key: bytes, h: int) -> list[tuple[int, int]]:
        """The blocks that the records of hash ``h``'s page name with its fingerprint, each
        with how many records name it (its page's records read and checked, or kept)."""
        bits, size, pages = self.page_bits, self.size, self.pages
        page = h >> (32 - bits)
        if pages is not None:
            first, page_crc, end = pages[2 * page : 2 * page + 3]
        else:
            first, page_crc, end = PAGE_SLOT.unpack(a.read(self.region + self.table + 8 * page, 12))
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
            start, stop = OFFSET_PAIRS[self.width].unpack(a.read(self.region + block * self.width, 2 * self.width))
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

    def __init__(self, a: Reads, base: int, start: int, stop: int, first: int = 0) -> None:
        """``first``: how much the first read asks for (``WALK_OVER`` unless given)."""
        self.a, self.base, self.start, self.stop = a, base, start, stop
        self.at, self.buf = start, b""  # the dict's bytes from ``at``
        self.first = first or WALK_OVER

    def item_end(self, pos: int) -> int:
        """Where the item at ``pos`` ends (it must end within the block)."""
        if pos >= self.stop:
            raise self._damaged("an entry runs past its end")
        size = self.first if not self.buf else WALK_OVER
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


def _le_u32(values: array[int]) -> bytes:
    swapped = array("I", values)
    swapped.byteswap()
    return swapped.tobytes()


class FuseIndex(BlockIndex):
    """The fuse index of one dict, its tables read once: the block offsets and the chunk CRCs
    (each checked by the node's CRCs); a lookup reads the chunks of its three slots (checked,
    kept while the dict's slots take at most ``FUSE_KEPT``) and its block."""

    __slots__ = ("seed", "slot_bits", "seg_bits", "seg_count", "crcs", "slots_at", "chunks")

    def __init__(
        self,
        a: Reads,
        region_at: int,
        node: tuple[int, int, int, int, int, int, int, int],
        span: tuple[int, int],
        kids: list[tuple[int, int, bytes]],
    ):
        """``node``: (n, offs_width, offs_crc, block_bits, slot_bits, seed, seg_bits, seg_count) of
        the dict's node, whose ``crcs_crc`` the caller checks against ``crcs`` (below)."""
        n, width, offs_crc, block_bits, slot_bits, seed, seg_bits, seg_count = node
        self.region, self.n, self.page_bits, self.width, self.block_bits = region_at, n, 0, width, block_bits
        self.span, self.kids = span, sorted(kids)
        self.kid_starts = [k[0] for k in self.kids]
        self.blocks = block_count(n, block_bits)
        self.size = 0
        self.seed, self.slot_bits, self.seg_bits, self.seg_count = seed, slot_bits, seg_bits, seg_count
        crcs_at, self.slots_at, end = fuse_layout(n, block_bits, width, slot_bits, seg_bits, seg_count)
        self.table, self.records = crcs_at, self.slots_at
        self.pages, self.probe = None, None
        head = memoryview(bytes(a.read(region_at, self.slots_at)))
        if zlib.crc32(head[:crcs_at]) != offs_crc:
            raise a.damaged(f"fuse index block offsets at offset {region_at} fail their checksum")
        self.offs = le_array("I" if width == 4 else "Q", bytes(head[:crcs_at]))
        self.crcs = le_array("I", bytes(head[crcs_at:]))
        slots_size = end - self.slots_at
        self.kept = {} if slots_size <= FUSE_KEPT else None  # chunk -> its bytes, once checked
        self.chunks = (slots_size + CHUNK - 1) // CHUNK
        speedups = accel.speedups
        if speedups is not None:  # the whole lookup in C, with the same reads (a BlockProbe of a fuse)
            fields = (region_at + self.slots_at, n, 0, self.blocks, block_bits, *span)
            shape = (slot_bits, seed, seg_bits, seg_count, slots_size)
            crcs, offs = bytes(head[crcs_at:]), bytes(head[:crcs_at])
            self.probe = speedups.BlockProbe(crcs, offs, width, self.kid_ranges(), *fields, shape)

    def crcs_crc(self) -> int:
        """The CRC-32 of the chunk CRCs (the node holds it)."""
        return zlib.crc32(self.crcs.tobytes() if _LITTLE_ENDIAN else _le_u32(self.crcs))

    def _read_candidates(self, a: Reads, key: bytes, h: int) -> list[tuple[int, int]]:
        block = 0
        for slot in slots_of(mix(base_hash(key), self.seed), self.seg_bits, self.seg_count):
            block ^= self._slot(a, slot)
        return [(block, 1)] if block < self.blocks else []

    def _slot(self, a: Reads, slot: int) -> int:
        bit = slot * self.slot_bits
        first, last = bit >> 3 >> 10, ((bit + self.slot_bits - 1) >> 3) >> 10  # (CHUNK = 1 << 10)
        data = b"".join(self._chunk(a, c) for c in range(first, last + 1))
        return slot_value(data, bit - (first * CHUNK << 3), self.slot_bits)

    def _chunk(self, a: Reads, c: int) -> bytes:
        kept = self.kept.get(c) if self.kept is not None else None
        if kept is not None:
            return kept
        if not 0 <= c < self.chunks:
            raise a.damaged(f"fuse index at offset {self.region}: slot chunk {c} of {self.chunks}")
        at = self.region + self.slots_at + c * CHUNK
        data = bytes(a.read(at, min(CHUNK, self.region + self.records_end() - at)))
        if zlib.crc32(data) != self.crcs[c]:
            raise a.damaged(f"fuse index chunk at offset {at} fails its checksum")
        if self.kept is not None:
            self.kept[c] = data
        return data

    def records_end(self) -> int:
        return self.slots_at + (slot_count(self.seg_bits, self.seg_count) * self.slot_bits + 7) // 8

    def _check_sharing(self, a: Reads, at: int, h: int, crcs: list[int], sharing: int) -> None:
        """A key not in its block is simply absent: a fuse names a block for any key."""


FUSE_KEPT = 16 << 20  # a dict's slots up to this size are kept, chunk by chunk, once read and checked


_keys_decoder: msgspec.msgpack.Decoder[list[str | int]] = msgspec.msgpack.Decoder(list[str | int])
_key_decoder: msgspec.msgpack.Decoder[str | int] = msgspec.msgpack.Decoder(str | int)


class SortedIndex(BlockIndex):
    """The index of a sorted dict (type 9), read once: its block offsets and the first key of
    each block, both CRC-checked, the keys checked to ascend; a key's block is found by
    bisection, then walked for the key."""

    __slots__ = ("firsts",)

    def __init__(
        self,
        a: Reads,
        region_at: int,
        node: tuple[int, int, int, int, int, int],
        span: tuple[int, int],
        kids: list[tuple[int, int, bytes]],
    ):
        """``node``: (n, offs_width, offs_crc, block_bits, keys_len, keys_crc) of the dict's node."""
        n, width, offs_crc, block_bits, keys_len, keys_crc = node
        self.region, self.n, self.page_bits, self.width, self.block_bits = region_at, n, 0, width, block_bits
        self.span, self.kids = span, sorted(kids)
        self.kid_starts = [k[0] for k in self.kids]
        self.blocks = block_count(n, block_bits)
        self.size, self.pages, self.probe, self.kept = 0, None, None, None
        self.table = (self.blocks + 1) * width
        self.records = self.table + keys_len
        head = memoryview(bytes(a.read(region_at, self.records)))
        if zlib.crc32(head[: self.table]) != offs_crc:
            raise a.damaged(f"sorted dict block offsets at offset {region_at} fail their checksum")
        if zlib.crc32(head[self.table :]) != keys_crc:
            raise a.damaged(f"sorted dict first keys at offset {region_at + self.table} fail their checksum")
        self.offs = le_array("I" if width == 4 else "Q", bytes(head[: self.table]))
        try:
            firsts = _keys_decoder.decode(head[self.table :])
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as e:
            raise a.damaged(f"sorted dict first keys at offset {region_at + self.table}: {e}") from None
        if len(firsts) != self.blocks or not ascends(firsts):
            raise a.damaged(f"sorted dict first keys at offset {region_at + self.table} are not one a block, ascending")
        self.firsts = firsts

    def _candidates(self, a: Reads, key: bytes, h: int) -> list[tuple[int, int]]:
        try:
            wanted = _key_decoder.decode(key)
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
            return []
        firsts = self.firsts
        if not firsts or type(wanted) is not type(firsts[0]):
            return []  # (a str key in a dict of int keys, or the reverse)
        block = bisect_right(firsts, wanted) - 1
        return [(block, 1)] if block >= 0 else []

    def _check_sharing(self, a: Reads, at: int, h: int, crcs: list[int], sharing: int) -> None:
        """A key not in the block its place names is absent (the block's keys ascend)."""
        return  # (a damaged block order is verify's to find)


class DirectIndex:
    """The direct index region of one dict (type 10, ``format.direct``). ``find`` answers a
    key with one read of the chunks of records that hold its window (each chunk's CRC
    checked; chunks kept while all the records take at most ``RECORDS_KEPT``) and one read of
    each entry the window's records name with its fingerprint (usually one), of
    ``entry_read`` bytes. Entries whose value has a node of their own are never asked for
    (their keys are in the node); a record naming one is only ever a fingerprint's
    collision, whose key alone is read."""

    __slots__ = ("region", "n", "shape", "firsts", "lo", "hi", "entry_read", "span", "kept", "probe")

    def __init__(
        self, region: int, node: tuple[int, int, int, int, int, int, int, int, bytes], span: tuple[int, int]
    ) -> None:
        """``node``: (n, group_bits, width, off_bits, chunk, lo, hi, entry_read, groups) of a
        node whose fields ``nodes.direct_size`` accepted; ``span``: (first, end) of its
        entries, where every record's offset must lie."""
        n, group_bits, width, off_bits, chunk, lo, hi, entry_read, groups = node
        chunk = min(chunk, n)  # (a chunk of n records or more is the one chunk: the same layout)
        # (bounds past what the dict can need change nothing, and keep them C-sized)
        self.lo, self.hi, self.entry_read = min(lo, n), min(hi, n), min(entry_read, span[1] - span[0])
        self.region, self.n, self.span = region, n, span
        self.shape = direct.Shape(group_bits, width, off_bits, chunk)
        self.firsts = le_array("I", groups)
        self.kept: dict[int, bytes] | None = {} if width * n <= RECORDS_KEPT else None  # chunk -> its records
        self.probe: DirectProbe | None = None  # the lookup in C (read by name in _speedups.c FastGet)
        speedups = accel.speedups
        if speedups is not None:
            fields = (group_bits, width, off_bits, chunk, self.lo, self.hi, self.entry_read, *span)
            self.probe = speedups.DirectProbe(groups, region, n, *fields)

    def find(self, a: Reads, base: int, key: bytes, h: int = 0) -> tuple[int, bytes | memoryview] | None:
        """(offset, bytes) of the value of the key encoded as ``key`` in the dict whose first
        byte is at ``base``, or None if it has no such key (``h`` is not used: the index
        hashes keys its own way)."""
        if self.probe is not None and accel.speedups is not None:
            answer = self.probe.find(a.read, base, key, h)
            if answer is not NotImplemented:
                return answer
        found = self._entry(a, base, key)
        if found is None:
            return None
        window, key_end = found
        end = window.item_end(key_end)
        return base + key_end, window.bytes(key_end, end)

    def contains(self, a: Reads, base: int, key: bytes, h: int = 0) -> bool:
        """Does the dict hold the key encoded as ``key``? Its entry's key is read, not its value."""
        return self._entry(a, base, key) is not None

    def _entry(self, a: Reads, base: int, key: bytes) -> tuple[_Window, int] | None:
        """The window over the entry of ``key`` and where its value starts, or None."""
        h = direct.key_hash(key)
        group_bits, width, off_bits, _ = self.shape
        bits = direct.fingerprint_bits(width, off_bits)
        for offset in direct.candidates(self._records(a, h), h, self.shape):
            if not self.span[0] <= offset < self.span[1]:
                raise a.damaged(f"direct index record at offset {self.region} points outside its dict")
            window = _Window(a, base, offset, self.span[1], direct.first_read(self.entry_read, len(key)))
            key_end = window.item_end(offset)
            stored = window.bytes(offset, key_end)
            if stored == key:
                return window, key_end
            if direct.fingerprint(direct.key_hash(bytes(stored)), group_bits, bits) != direct.fingerprint(
                h, group_bits, bits
            ):
                raise a.damaged(f"dict entry at offset {base + offset} does not match its direct index record")
        return None

    def _records(self, a: Reads, h: int) -> bytes:
        """The records of hash ``h``'s window: from the C probe, which reads and keeps the
        chunks for both paths (a dict keeps them once), else ``_read_records``."""
        probe = self.probe
        if probe is not None and accel.speedups is not None:
            got = probe.records(a.read, h)
            if got is not NotImplemented:
                return got
        return self._read_records(a, h)

    def _read_records(self, a: Reads, h: int) -> bytes:
        """The records of hash ``h``'s window, their chunks read (in one read) and checked
        unless kept."""
        group_bits, width, _, chunk = self.shape
        start, stop = direct.window(h, self.firsts, group_bits, self.lo, self.hi)
        if start >= stop:
            return b""
        c0, c1 = start // chunk, (stop - 1) // chunk
        kept = self.kept
        got = [kept.get(c) for c in range(c0, c1 + 1)] if kept is not None else [None]
        chunks: list[bytes] = [c for c in got if c is not None]
        if len(chunks) < len(got):
            step = chunk * width + 4
            last = min(self.n, (c1 + 1) * chunk) - c1 * chunk
            at = self.region + direct.chunk_at(c0, width, chunk)
            data = bytes(a.read(at, (c1 - c0) * step + last * width + 4))
            chunks = []
            for c in range(c0, c1 + 1):
                part = data[(c - c0) * step : (c - c0) * step + (step if c < c1 else last * width + 4)]
                if zlib.crc32(part[:-4]) != U32.unpack_from(part, len(part) - 4)[0]:
                    raise a.damaged(f"direct index chunk {c} at offset {at + (c - c0) * step} fails its checksum")
                chunks.append(part[:-4])
                if kept is not None:
                    kept[c] = part[:-4]
        records = b"".join(chunks)
        skip = (start - c0 * chunk) * width
        return records[skip : skip + (stop - start) * width]
