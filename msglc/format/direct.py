"""The direct index of a big dict in a plain archive (node type 10, docs/format.md): each
key's record names its entry's byte offset, and records sit in an order a reader can find
without a table, so a lookup is one read of the index and one of the entry. That is two
requests over HTTP for the first key of a fresh reader, where the block index (type 6)
needs three: its page table, then the page, then the block.

Records are sorted by the key's 64-bit hash ``h`` (``fuse.mix(base_hash(key), 0)``). The
node holds the first record of each of 2**group_bits groups (the top bits of ``h``); within a
group a key's record lies within ``lo`` before and ``hi`` after the position its hash
interpolates to (both stored, measured by the writer). The records are packed in chunks of
``chunk`` records, each followed by its CRC-32, so that any run of them is checked by the
chunks it touches. A record is ``width`` bytes, little-endian: the entry's offset from the
dict's first byte in its low ``off_bits`` bits, the fingerprint above: the bits of ``h`` that
follow the group's, so that the records of a group ascend by fingerprint and a window is
searched by bisection.

Layouts and pure functions on bytes only: the lookups that read a region are in
``read/dict_index.py``; ``_speedups.direct_build`` builds the same region in C."""

from __future__ import annotations

import sys
import zlib
from array import array
from collections.abc import Collection, Iterable, Sequence
from typing import Any, NamedTuple

from msglc.format.fuse import MASK64, base_hash, block_offsets, mix
from msglc.format.hash_index import le_array
from msglc.util import accel

GROUP_KEYS = 1024  # writers: groups of 1024 to 2047 keys (the node holds 4 bytes a group)
CHUNK_BYTES = 1024  # writers: a chunk of records and its CRC fit in this many bytes
FINGERPRINT_BITS = 16  # writers: at least this many bits of the hash in each record
MAX_GROUP_BITS = 26  # readers refuse more groups than this (a node of 256 MB)
MAX_WIDTH = 8  # bytes a record at most (writers give larger dicts a block index)
FIRST_READ_MAX = 1 << 16  # readers: the first read of an entry asks for at most this much


class Shape(NamedTuple):
    """What a direct index's layout depends on, beside its records."""

    group_bits: int
    width: int  # bytes per record
    off_bits: int  # low bits of a record that hold the entry's offset
    chunk: int  # records per chunk


def writer_shape(n: int, length: int) -> Shape:
    """The shape writers give the index of n keys over a dict encoded in ``length`` bytes."""
    group_bits = max(0, (n // GROUP_KEYS).bit_length() - 1)
    off_bits = max(1, length.bit_length())
    width = (off_bits + FINGERPRINT_BITS + 7) // 8
    return Shape(group_bits, width, off_bits, (CHUNK_BYTES - 4) // width)


def fingerprint_bits(width: int, off_bits: int) -> int:
    """Bits of the hash in a record: the rest of it, at most 32."""
    return min(32, 8 * width - off_bits)


def fingerprint(h: int, group_bits: int, bits: int) -> int:
    """The ``bits`` bits of ``h`` after its group's."""
    return ((h << group_bits) & MASK64) >> (64 - bits)


def key_hash(key: bytes) -> int:
    """The 64-bit hash of a key's smallest msgpack encoding that orders and finds records."""
    return mix(base_hash(key), 0)


def estimate(h: int, firsts: Sequence[int], group_bits: int) -> tuple[int, int, int]:
    """(group start, group end, interpolated position) of hash ``h``: 16 bits of ``h`` after
    the group's pick the position in proportion (exact in float64, for JavaScript)."""
    g = h >> (64 - group_bits)
    first, end = firsts[g], firsts[g + 1]
    f = (h >> (48 - group_bits)) & 0xFFFF
    return first, end, first + ((f * (end - first)) >> 16)


def window(h: int, firsts: Sequence[int], group_bits: int, lo: int, hi: int) -> tuple[int, int]:
    """The records [start, stop) that hold hash ``h``'s, if the dict has its key."""
    first, end, est = estimate(h, firsts, group_bits)
    return max(first, est - lo), min(end, est + hi + 1)


def first_read(entry_read: int, key_len: int) -> int:
    """How much a lookup's first read of an entry asks for: the node's ``entry_read``, at
    least the key and a byte, at most ``FIRST_READ_MAX`` (a node cannot make a lookup
    allocate more; a longer entry is read in more steps)."""
    return min(max(entry_read, key_len + 1), FIRST_READ_MAX)


def region_size(n: int, width: int, chunk: int) -> int:
    """Bytes of the region of n records: each chunk's records, then its CRC-32."""
    return n * width + 4 * (-(-n // chunk))


def chunk_at(c: int, width: int, chunk: int) -> int:
    """Where chunk c starts in the region."""
    return c * (chunk * width + 4)


class Built(NamedTuple):
    """A direct index region and the node fields that go with it."""

    region: bytes
    groups: bytes  # (2**group_bits + 1) u32 LE: the first record of each group, then n
    lo: int
    hi: int
    entry_read: int


def entry_read(lengths: Iterable[int]) -> int:
    """How much a lookup reads for an entry, from the lengths of the entries whose value has
    no node of its own: grouped by bit length and taken from the shortest up until they hold
    at least 999 in 1000 of them, the longest taken (so that one long string does not make
    every lookup read it)."""
    by_bits: dict[int, list[int]] = {}
    for length in lengths:
        by_bits.setdefault(length.bit_length(), []).append(length)
    counted, total, longest = sum(map(len, by_bits.values())), 0, 0
    for bits in sorted(by_bits):
        total += len(by_bits[bits])
        longest = max(longest, *by_bits[bits])
        if total * 1000 >= counted * 999:
            break
    return longest


def build(hashes: Sequence[int], offs: Sequence[int], kids: Collection[int], shape: Shape) -> Built:
    """The region of keys with these mixed hashes (``key_hash``) whose entries start at
    ``offs`` (in entry order, then the dict's end), the entries in ``kids`` having a value
    with a node of its own: the definition that ``_speedups.direct_build`` follows."""
    n = len(hashes)
    group_bits, width, off_bits, chunk = shape
    order = sorted(range(n), key=lambda e: (hashes[e], e))
    firsts = [0] * ((1 << group_bits) + 1)
    for e in order:
        firsts[(hashes[e] >> (64 - group_bits)) + 1] += 1
    for g in range(1 << group_bits):
        firsts[g + 1] += firsts[g]
    lo = hi = 0
    bits = fingerprint_bits(width, off_bits)
    records = bytearray()
    for pos, e in enumerate(order):
        h = hashes[e]
        _, _, est = estimate(h, firsts, group_bits)
        lo, hi = max(lo, est - pos), max(hi, pos - est)
        records += (fingerprint(h, group_bits, bits) << off_bits | offs[e]).to_bytes(width, "little")
    step = chunk * width
    region = bytearray()
    for at in range(0, len(records), step):
        part = records[at : at + step]
        region += part + zlib.crc32(part).to_bytes(4, "little")
    lengths = (offs[e + 1] - offs[e] for e in range(n) if e not in kids)
    groups = b"".join(f.to_bytes(4, "little") for f in firsts)
    return Built(bytes(region), groups, lo, hi, entry_read(lengths))


def build_from_bases(bases: bytes, offs: Sequence[int], kids: Collection[int], shape: Shape) -> Built:
    """``build`` from the keys' base hashes (u64 LE, ``fuse.base_hash``, in entry order): in C
    (``_speedups.direct_build``) when built, which takes ``offs`` as they are when they are a
    little-endian array of u32 or u64 (a streamed dict's), else here."""
    n = len(bases) // 8
    speedups = accel.speedups
    if speedups is None:
        return build([mix(base, 0) for base in le_array("Q", bases)], offs, set(kids), shape)
    packed: Any
    if isinstance(offs, array) and offs.itemsize in (4, 8) and len(offs) == n + 1 and sys.byteorder == "little":
        packed, width = offs, offs.itemsize  # (as they are: no copy of 4 or 8 bytes a key)
    else:
        packed, width = block_offsets(offs, n, 0)
    kid_bytes = array("Q", sorted(kids)).tobytes()
    return Built(*speedups.direct_build(bases, packed, width, kid_bytes, *shape))


def candidates(records: bytes | memoryview, h: int, shape: Shape) -> list[int]:
    """The entry offsets that these records (a window's, ``width`` bytes each, no CRCs) name
    with hash ``h``'s fingerprint: they ascend by fingerprint, so bisection finds the first."""
    _, width, off_bits, _ = shape
    fp = fingerprint(h, shape.group_bits, fingerprint_bits(width, off_bits))
    lo, hi = 0, len(records) // width
    while lo < hi:
        mid = (lo + hi) // 2
        if int.from_bytes(records[mid * width : (mid + 1) * width], "little") >> off_bits < fp:
            lo = mid + 1
        else:
            hi = mid
    found, mask = [], (1 << off_bits) - 1
    for at in range(lo * width, len(records), width):
        r = int.from_bytes(records[at : at + width], "little")
        if r >> off_bits != fp:
            break
        found.append(r & mask)
    return found
