"""The indexes of big dicts in compressed archives that need no per-key record: the fuse (node
type 7) and the sorted dict's first keys (type 9, ``SortedIndex``).

The fuse index of a big dict in a compressed archive (node type 7, docs/format.md): a 3-wise
binary fuse filter used as a retrieval table, which maps each key to the block of entries that
holds it in about 1.13 times the bits of a block number and nothing else (no fingerprint, no
per-key record). A lookup reads three slots (in 1 KB chunks, each CRC-checked), the block they
name, and walks the block for the key; a key the dict does not hold maps to some block, in
which it is not found. Region: block offsets ((nb+1) x u32|u64, as in type 6) | chunk CRCs
(u32 per ``CHUNK`` bytes of slots) | slots (``slot_bits`` each, least significant bit first).

Keys are hashed from their msgpack encoding: ``base_hash`` (CRC-32 of the bytes, and of the
bytes reversed: two checks that rarely agree on two keys) mixed with the node's ``seed``
(``mix``, murmur3's finalizer). Construction peels the hypergraph of the keys' slots (in C:
``_speedups.fuse_build``); a seed whose keys do not peel is replaced by the next."""

from __future__ import annotations

import math
import sys
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

import msgspec

from msglc.format.hash_index import BlockIndex, Reads, block_count, le_array
from msglc.util import accel

ARITY = 3
CHUNK = 1024  # bytes of slots per CRC: a lookup reads (and checks) three such chunks
MASK64 = (1 << 64) - 1
SEEDS = 8  # seeds tried before a writer gives up on the fuse (and writes a type-6 index)
MAX_SEG_BITS = 18
FUSE_BLOCK_BYTES = 16 << 10  # entries per block in a fuse- or sorted-indexed dict: about this many bytes ...
SMALL_ENTRY = 256  # ... or, in a lookup table (entries of less than this on average), ...
TABLE_BLOCK_BYTES = 4 << 10  # ... this many: its frames are small (one lookup, one small frame) ...
FUSE_MAX_BLOCK_BITS = 10  # ... and at most 2**10 of them (a lookup walks up to 1024 entries)


def base_hash(key: bytes) -> int:
    """The 64-bit hash of a key's msgpack encoding, before the seed: crc32(key) << 32 |
    crc32(key reversed)."""
    return zlib.crc32(key) << 32 | zlib.crc32(key[::-1])


def mix(base: int, seed: int) -> int:
    """``base`` mixed with ``seed`` (murmur3's 64-bit finalizer), as ``_speedups`` mixes it."""
    x = base ^ (seed * 0x9E3779B97F4A7C15 & MASK64)
    x ^= x >> 33
    x = x * 0xFF51AFD7ED558CCD & MASK64
    x ^= x >> 33
    x = x * 0xC4CEB9FE1A85EC53 & MASK64
    return x ^ (x >> 33)


def layout(n: int) -> tuple[int, int]:
    """(segment bits, segment count) of a binary fuse over ``n`` keys, as Graf and Lemire
    size it (segments of 2**seg_bits slots, seg_count + 2 of them): writers store both, so
    readers never redo this float arithmetic."""
    n = max(n, 2)
    seg_bits = min(MAX_SEG_BITS, math.floor(math.log(n) / math.log(3.33) + 2.25))
    length = 1 << seg_bits
    factor = max(1.125, 0.875 + 0.25 * math.log(1e6) / math.log(n))
    capacity = round(n * factor)
    count = (capacity + length - 1) // length - (ARITY - 1)
    slots = (count + ARITY - 1) * length
    count = (slots + length - 1) // length
    count = 1 if count <= ARITY - 1 else count - (ARITY - 1)
    return seg_bits, count


def slots_of(h: int, seg_bits: int, seg_count: int) -> tuple[int, int, int]:
    """The three slots of mixed hash ``h``: one in each of three consecutive segments."""
    length = 1 << seg_bits
    mask = length - 1
    hi = h * (seg_count * length) >> 64
    return hi, (hi + length) ^ ((h >> 18) & mask), (hi + 2 * length) ^ (h & mask)


def slot_count(seg_bits: int, seg_count: int) -> int:
    return (seg_count + ARITY - 1) << seg_bits


def slot_bits_for(blocks: int) -> int:
    """Bits per slot: the fewest that hold every block number."""
    return max(1, (blocks - 1).bit_length())


def fuse_layout(
    n: int, block_bits: int, width: int, slot_bits: int, seg_bits: int, seg_count: int
) -> tuple[int, int, int]:
    """Where the chunk CRCs and the slots start in the region, and the region's size."""
    crcs = (block_count(n, block_bits) + 1) * width
    size = (slot_count(seg_bits, seg_count) * slot_bits + 7) // 8
    slots = crcs + 4 * ((size + CHUNK - 1) // CHUNK)
    return crcs, slots, slots + size


def fuse_block_bits(koffs: Sequence[int]) -> int:
    """Entries per block of a fuse- or sorted-indexed dict: about ``FUSE_BLOCK_BYTES`` of them
    (``TABLE_BLOCK_BYTES`` in a lookup table), a power of two, at most 2**FUSE_MAX_BLOCK_BITS."""
    n = len(koffs) - 1
    mean = (koffs[-1] - koffs[0]) / max(n, 1)
    target = TABLE_BLOCK_BYTES if is_table(koffs[-1] - koffs[0], n) else FUSE_BLOCK_BYTES
    bits = 0
    while bits < FUSE_MAX_BLOCK_BITS and (2 << bits) * mean <= target:
        bits += 1
    return bits


def block_offsets(koffs: Sequence[int], n: int, block_bits: int) -> tuple[bytes, int]:
    """The offsets of a dict's blocks of 2**block_bits entries (from the offsets ``koffs`` of
    its n entries and its end), and the end, as u32 LE (u64 when the end needs it); and that
    width. The block offsets of the regions of types 7 and 9."""
    offs = array("I" if koffs[-1] < 1 << 32 else "Q", koffs[0 : n : 1 << block_bits])
    offs.append(koffs[n])
    if sys.byteorder == "big":
        offs.byteswap()
    return offs.tobytes(), offs.itemsize


def is_table(size: int, n: int) -> bool:
    """Is a dict of n entries in ``size`` bytes a lookup table (small entries): small blocks,
    small frames?"""
    return size < SMALL_ENTRY * n


def build(hashes: bytes, n: int, block_bits: int) -> tuple[int, int, int, int, bytes] | None:
    """(seed, slot_bits, seg_bits, seg_count, slots) of a fuse mapping each of the ``n`` keys of
    these base hashes (u64 LE, in entry order) to its block, or None (no C accelerator, or no
    seed of ``SEEDS`` peels: two keys with one base hash)."""
    speedups = accel.speedups
    if speedups is None or not n:
        return None
    blocks = block_count(n, block_bits)
    size = 1 << block_bits  # every entry's value: its block (entry >> block_bits), u32 LE
    data = b"".join(b.to_bytes(4, "little") * size for b in range(blocks))[: 4 * n]
    slot_bits = slot_bits_for(blocks)
    seg_bits, seg_count = layout(n)
    for seed in range(SEEDS):
        slots = speedups.fuse_build(hashes, data, slot_bits, seg_bits, seg_count, seed)
        if slots is not None:
            return seed, slot_bits, seg_bits, seg_count, slots
    return None


_LITTLE = array("H", [1]).tobytes() == b"\x01\x00"


def _le_u32(values: array[int]) -> bytes:
    swapped = array("I", values)
    swapped.byteswap()
    return swapped.tobytes()


def region(offs_bytes: bytes | memoryview, slots: bytes) -> bytes:
    """The fuse index region: the block offsets, the CRC of each chunk of the slots, the slots."""
    crcs = array("I", (zlib.crc32(slots[at : at + CHUNK]) for at in range(0, len(slots), CHUNK)))
    if not _LITTLE:
        crcs.byteswap()
    return bytes(offs_bytes) + crcs.tobytes() + slots


def slot_value(data: bytes | memoryview, first_bit: int, bits: int) -> int:
    """The ``bits``-bit slot whose first bit is bit ``first_bit`` of ``data`` (LSB first)."""
    lo = first_bit >> 3
    word = int.from_bytes(data[lo : lo + ((first_bit & 7) + bits + 7) // 8], "little")
    return (word >> (first_bit & 7)) & ((1 << bits) - 1)


class FuseIndex(BlockIndex):
    """The fuse index of one dict, its tables read once: the block offsets and the chunk CRCs
    (each checked by the node's CRCs); a lookup reads the chunks of its three slots (checked,
    kept while the dict's slots take at most ``RECORDS_KEPT``) and its block."""

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
        self.kept = {} if slots_size <= _KEPT else None  # chunk -> its bytes, once checked
        self.chunks = (slots_size + CHUNK - 1) // CHUNK

    def crcs_crc(self) -> int:
        """The CRC-32 of the chunk CRCs (the node holds it)."""
        return zlib.crc32(self.crcs.tobytes() if _LITTLE else _le_u32(self.crcs))

    def _candidates(self, a: Reads, key: bytes, h: int) -> list[tuple[int, int]]:
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


_KEPT = 16 << 20  # a dict's slots up to this size are kept, chunk by chunk, once read and checked


_keys_decoder: msgspec.msgpack.Decoder[list[str | int]] = msgspec.msgpack.Decoder(list[str | int])
_key_decoder: msgspec.msgpack.Decoder[str | int] = msgspec.msgpack.Decoder(str | int)


def sorted_region(offs_bytes: bytes | memoryview, first_keys: list[str] | list[int]) -> bytes:
    """A sorted dict's index region: the block offsets, then the first key of each block as a
    msgpack array."""
    return bytes(offs_bytes) + msgspec.msgpack.encode(first_keys)


def ascends(keys: Sequence[Any]) -> bool:
    """Do the keys (all str or all int) strictly ascend? (In C: a sorted list is one run to
    ``sorted``; keys of two types do not compare.)"""
    try:
        return list(keys) == sorted(keys) and len(set(keys)) == len(keys)
    except TypeError:
        return False


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
