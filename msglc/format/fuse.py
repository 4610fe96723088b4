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
``_speedups.fuse_build``); a seed whose keys do not peel is replaced by the next.

Layouts and pure functions on bytes only: the lookups are ``read.dict_index.FuseIndex`` and
``SortedIndex``."""

from __future__ import annotations

import math
import sys
import zlib
from array import array
from collections.abc import Sequence
from typing import Any

import msgspec

from msglc.format.hash_index import block_count
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


def shape(n: int, block_bits: int) -> tuple[int, int, int]:
    """(slot_bits, seg_bits, seg_count) of the fuse of ``n`` keys in blocks of 2**block_bits."""
    return (slot_bits_for(block_count(n, block_bits)), *layout(n))


def slot_bytes(slot_bits: int, seg_bits: int, seg_count: int) -> int:
    """The bytes the packed slots take."""
    return (slot_count(seg_bits, seg_count) * slot_bits + 7) // 8


def slot_bits_for(blocks: int) -> int:
    """Bits per slot: the fewest that hold every block number."""
    return max(1, (blocks - 1).bit_length())


def fuse_layout(
    n: int, block_bits: int, width: int, slot_bits: int, seg_bits: int, seg_count: int
) -> tuple[int, int, int]:
    """Where the chunk CRCs and the slots start in the region, and the region's size."""
    crcs = (block_count(n, block_bits) + 1) * width
    size = slot_bytes(slot_bits, seg_bits, seg_count)
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
    slot_bits, seg_bits, seg_count = shape(n, block_bits)
    for seed in range(SEEDS):
        slots = speedups.fuse_build(hashes, data, slot_bits, seg_bits, seg_count, seed)
        if slots is not None:
            return seed, slot_bits, seg_bits, seg_count, slots
    return None


_LITTLE = array("H", [1]).tobytes() == b"\x01\x00"


def region(offs_bytes: bytes | memoryview, slots: bytes) -> bytes:
    """The fuse index region: the block offsets, the CRC of each chunk of the slots, the slots."""
    return bytes(offs_bytes) + chunk_crcs(slots) + slots


def chunk_crcs(slots: bytes) -> bytes:
    """The CRC-32 of each ``CHUNK`` bytes of the slots (the last: the rest), u32 LE."""
    crcs = array("I", (zlib.crc32(slots[at : at + CHUNK]) for at in range(0, len(slots), CHUNK)))
    if not _LITTLE:
        crcs.byteswap()
    return crcs.tobytes()


def slot_value(data: bytes | memoryview, first_bit: int, bits: int) -> int:
    """The ``bits``-bit slot whose first bit is bit ``first_bit`` of ``data`` (LSB first)."""
    lo = first_bit >> 3
    word = int.from_bytes(data[lo : lo + ((first_bit & 7) + bits + 7) // 8], "little")
    return (word >> (first_bit & 7)) & ((1 << bits) - 1)


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
