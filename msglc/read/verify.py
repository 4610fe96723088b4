"""Check a whole archive: the data checksum, every TOC node against the data it describes,
and every value as the reader would decode it, in bounded memory.

Lazy reads check what they touch (node CRCs, bounds, container headers, keys). ``verify``
is the thorough pass for archives fetched from cold storage or from untrusted places. It
reads the data section once, in order, a piece of ``CHUNK`` bytes at a time (the checksum is
computed as it goes), and walks the TOC nodes in the same order: a node's header and spans
are checked against the bytes as they pass, a child with a node of its own is checked when
its bytes come, never twice. The checks do not depend on the threshold: the parts of a
combined archive may have been written with different ones.

- A span is checked by decoding it (``walk.check_items``): it must be exactly the items the
  node says, and every value must decode as the reader decodes it (UTF-8 strings, hashable
  map keys, valid NumPy headers and timestamps). So a verified archive reads without error.
- A dict's keys are checked against its node: an inline dict's listed keys, a hash-indexed
  dict's index region rebuilt from its keys' CRCs as the writer builds it (a few bytes per
  key are kept for that), its keys unique and each encoded as a lookup encodes it.
- A fixed-stride list is proven from its bytes a window of rows at a time; a NumPy array's
  header is checked and its elements are skipped (or checked, for str elements).
- What is longer than a window (a node-less span, a long str, bytes or array value) or nested
  deeper than msgspec goes is walked item by item (``format.walk``): never held whole, never
  recursed on.

In a compressed archive every frame is decompressed and checked (its zstd checksum too, where
reads take a raw frame's bytes in place): the data's as they are read, then the TOC's.

Every failure is an ``MsglcError``. A failed check of damaged data reports the checksum
mismatch (the rest of the data is read for it), as an archive damaged in storage would.
"""

from __future__ import annotations

import contextlib
import sys
import zlib
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from operator import and_
from typing import Any

import msgspec

from msglc.errors import CorruptedError, MsglcError
from msglc.format import direct
from msglc.format.fuse import (
    block_offsets,
    fuse_layout,
    mix,
    slot_bits_for,
    slot_value,
    slots_of,
    sorted_region,
)
from msglc.format.fuse import layout as fuse_layout_of
from msglc.format.fuse import region as fuse_region
from msglc.format.hash_index import MAP_INLINE_MAX, block_count, hash_page_bits, hash_records, region_of
from msglc.format.msgpack import (
    STR_MARKERS,
    array_header,
    container_header,
    gets_node,
    scalar_size,
)
from msglc.format.nodes import (
    ArrayNode,
    BlockHashMapNode,
    DirectMapNode,
    FuseMapNode,
    HashMapNode,
    ListNode,
    MapNode,
    SortedMapNode,
    StrideNode,
    node_header,
    node_span,
    span_end,
)
from msglc.format.numpy_ext import parse_head
from msglc.format.strides import stride_proven, stride_template, template_dims
from msglc.format.walk import (
    DECODE_ERRORS,
    PIECE,
    check_array,
    check_items,
    check_utf8,
    raw_items,
)
from msglc.io.framed import FramedSource
from msglc.read.archive import Archive
from msglc.util import accel
from msglc.util.checksum import data_crc32
from msglc.util.optional import loaded_numpy

CHUNK = 1 << 22  # bytes of the data section read at a time (compressed: a few frames, decompressed in parallel)


ROWS = 1 << 20  # bytes of a fixed-stride list proven at a time (within a piece, mostly: no copy)


_key_decoder: msgspec.msgpack.Decoder[str | int] = msgspec.msgpack.Decoder(str | int)
_keys_decoder: msgspec.msgpack.Decoder[list[str | int]] = msgspec.msgpack.Decoder(list[str | int])


class ReadFailed(Exception):
    """Internal: the data section could not be read (a frame that does not decompress)."""

    def __init__(self, error: MsglcError) -> None:
        self.error = error


class DataStream:
    """The data section, read once from its start to its end in pieces of ``CHUNK`` bytes,
    its CRC-32 computed as they come. ``take(a, b)`` gives bytes [a, b) (offsets relative
    to the section: a view of the piece holding them, else a copy) and lets go of every
    piece before ``a``; bytes passed over are read for the checksum only. It holds the
    pieces under the latest ``take`` and one read ahead."""

    def __init__(self, archive: Archive, progress: Callable[[int], None] | None) -> None:
        t = archive.opened.trailer
        self._read, self._off, self.size = archive.read_checked, t.data_off, t.data_len
        self._pieces: deque[tuple[int, bytes | memoryview]] = deque()  # (start, bytes) from _lo to _hi
        self._hi = 0
        self._crc32, self.crc = data_crc32(), 0
        self._progress = progress
        self._last = 0  # the latest take's start: nothing before it is read again

    def _more(self) -> None:
        """Read the next piece, checksummed."""
        size = min(CHUNK, self.size - self._hi)
        try:
            piece = self._read(self._off + self._hi, size)
        except MsglcError as e:
            raise ReadFailed(e) from None
        self.crc = self._crc32(piece, self.crc)
        self._pieces.append((self._hi, piece))
        self._hi += size
        if self._progress is not None:
            self._progress(size)

    def _drop(self, a: int) -> None:
        """Let go of the pieces that end at or before ``a``."""
        pieces = self._pieces
        while pieces and pieces[0][0] + len(pieces[0][1]) <= a:
            pieces.popleft()

    def take(self, a: int, b: int) -> memoryview:
        if a < self._last:
            raise AssertionError(f"verify read data offset {a} after {self._last}")
        self._last = a
        if b <= a:
            return memoryview(b"")
        self._drop(a)
        while self._hi < b:
            self._more()
            self._drop(a)
        at, piece = self._pieces[0]
        if b <= at + len(piece):
            return memoryview(piece)[a - at : b - at]
        parts = []
        for at, piece in self._pieces:
            if at >= b:
                break
            parts.append(memoryview(piece)[max(0, a - at) : b - at])
        return memoryview(b"".join(parts))

    def skip(self, a: int, b: int) -> None:
        self._last = max(self._last, a)
        while self._hi < b:
            self._pieces.clear()
            self._more()
        self._drop(b)

    def finish(self) -> int:
        """Read what is left; the CRC-32 of the whole section."""
        self.skip(self._hi, self.size)
        return self.crc


def verify_archive(archive: Archive, progress: Callable[[int], None] | None = None) -> None:
    archive.check_open()
    t = archive.opened.trailer
    stream = DataStream(archive, progress)
    try:
        try:
            if not t.root_len:
                check_items(stream, 0, t.data_len, 1, data_off=t.data_off)
            else:
                _walk(archive, stream)
        except MsglcError:
            stream.finish()  # damaged data is reported as such, whatever check it failed first
            if stream.crc != t.data_crc:
                raise _mismatch(archive) from None
            raise
        if stream.finish() != t.data_crc:
            raise _mismatch(archive)
    except ReadFailed as e:
        raise e.error from None
    _check_toc_frames(archive)


def _check_toc_frames(archive: Archive) -> None:
    """A 2.1 archive's TOC frames, every one (and so every page table) decompressed and
    checked a piece at a time, as the data's were: reads took the nodes of raw frames in
    place, and those of frames no node lies in not at all."""
    t, src = archive.opened.trailer, archive.src
    end = t.toc_off + t.toc_len
    if isinstance(src, FramedSource) and end <= src.data_off + src.plain:
        for at in range(t.toc_off, end, CHUNK):
            archive.read_checked(at, min(CHUNK, end - at))


def _mismatch(archive: Archive) -> CorruptedError:
    t = archive.opened.trailer
    return CorruptedError(f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off})")


Child = tuple[int, int, int, int]  # a container (start, end in the data section) and its node (position, size)


def _walk(archive: Archive, stream: DataStream) -> None:
    """Every node reachable from the root, each checked against its container as the data
    passes: a node's check yields its children in data order and resumes after each."""
    t = archive.opened.trailer
    stack = [_checks(archive, stream, (0, t.data_len, t.toc_off + t.root_pos, t.root_len))]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
        else:
            stack.append(_checks(archive, stream, child))


def _checks(archive: Archive, stream: DataStream, where: Child) -> Iterator[Child]:
    start, end, pos, size = where
    node = archive.node(pos, size)
    label = f"TOC node at offset {pos}"
    if node_span(node) != end - start:
        raise archive.damaged(
            f"{label} describes {node_span(node)} bytes where {end - start} are stored at data offset {start}"
        )
    if isinstance(node, ArrayNode):
        _check_array(archive, stream, node, start, end, label)
        return
    if isinstance(node, StrideNode):
        _check_stride(archive, stream, node, start, end, label)
        return
    is_map, n, h = container_header(stream.take(start, min(end, start + 5)))
    if (is_map, n, h) != node_header(node):
        raise archive.damaged(f"{label} does not describe the container at data offset {start}")
    if isinstance(node, MapNode):
        yield from _check_map(archive, stream, node, start, pos, label)
    elif isinstance(node, HashMapNode):
        yield from _check_hash_map(archive, stream, node, start, end, pos, label)
    else:  # a list; a paged list's spans from its pages (each read and checked as a reader does)
        yield from _check_list(archive, stream, archive.spans(pos, node), start, pos, label)


def _kid(archive: Archive, stream: DataStream, at: int, end: int, pos: int, ref: tuple[int, int], label: str) -> Child:
    """The child with a node of its own whose value spans [at, end): an array, a map or a
    NumPy array value."""
    if not gets_node(stream.take(at, min(end, at + 6)), 0):
        raise archive.damaged(f"{label} gives a node to the value at data offset {at}, which cannot have one")
    return at, end, archive.referred(pos, ref), ref[1]


def _check_list(
    archive: Archive, stream: DataStream, node: ListNode, start: int, pos: int, label: str
) -> Iterator[Child]:
    """Spans in order: a kid span is one value with a node of its own, any other span must be
    exactly its items."""
    starts, offs, kids = node.starts, node.offs, node.kids
    spans = len(starts)
    for k in range(spans):
        a_, b_ = start + offs[k], start + offs[k + 1]
        ref = kids.get(k)
        if ref is not None:
            yield _kid(archive, stream, a_, b_, pos, ref, label)
            continue
        count = span_end(node, k) - starts[k]
        _items(archive, stream, a_, b_, count, False, label)


def _items(archive: Archive, stream: DataStream, start: int, end: int, count: int, is_map: bool, label: str) -> None:
    try:
        check_items(stream, start, end, count, is_map=is_map, data_off=archive.opened.trailer.data_off)
    except CorruptedError as e:
        raise archive.damaged(f"{label}: a span does not hold what the node says ({e})") from None


def _check_map(
    archive: Archive, stream: DataStream, node: MapNode, start: int, pos: int, label: str
) -> Iterator[Child]:
    """An inline dict: its entries where the node says, its keys the node's, in order."""
    keys, koffs, voffs, kids = node.keys, node.koffs, node.voffs, node.kids
    n = len(keys)
    if n > MAP_INLINE_MAX:
        raise archive.damaged(f"{label} lists {n} keys, more than an inline dict holds")
    j = 0
    while j < n:
        ref = kids.get(j)
        if ref is not None:
            key = _key(archive, stream.take(start + koffs[j], start + voffs[j]), start + koffs[j], label)
            if key != keys[j]:
                raise archive.damaged(f"{label} does not describe the dict at data offset {start}")
            yield _kid(archive, stream, start + voffs[j], start + koffs[j + 1], pos, ref, label)
            j += 1
            continue
        stop = j + 1  # a run of entries without kids, in one window
        while stop < n and stop not in kids and koffs[stop + 1] - koffs[j] <= PIECE:
            stop += 1
        _map_run(archive, stream, node, start, j, stop, label)
        j = stop


def _map_run(archive: Archive, stream: DataStream, node: MapNode, start: int, j: int, stop: int, label: str) -> None:
    """Entries j..stop-1 of an inline dict: their boundaries and keys as the node lists them,
    their values decodable."""
    koffs, voffs = node.koffs, node.voffs
    lo, hi = start + koffs[j], start + koffs[stop]
    if hi - lo > PIECE:  # one entry, too long for a window: its key, then its value walked
        key = _key(archive, stream.take(lo, start + voffs[j]), lo, label)
        if key != node.keys[j]:
            raise archive.damaged(f"{label} does not describe the dict at data offset {start}")
        _items(archive, stream, start + voffs[j], hi, 1, False, label)
        return
    buf = stream.take(lo, hi)
    m = stop - j
    try:
        raws = raw_items.decode(array_header(2 * m) + buf)
    except (*DECODE_ERRORS, RecursionError):
        raws = None
    if raws is not None:
        at, bounds = koffs[j], []
        for raw in raws:
            bounds.append(at)
            at += len(raw)
        if (
            bounds[0::2] != koffs[j:stop]
            or bounds[1::2] != voffs[j:stop]
            or at != koffs[stop]
            or _keys(archive, raws[0::2], lo, label) != node.keys[j:stop]
        ):
            raise archive.damaged(f"{label} does not describe the dict at data offset {start}")
        _items(archive, stream, lo, hi, m, True, label)
        return
    for e in range(j, stop):  # not msgpack, or too deep for msgspec: entry by entry
        _one_entry(archive, stream, node, start, e, label)


def _one_entry(archive: Archive, stream: DataStream, node: MapNode, start: int, j: int, label: str) -> None:
    key = _key(archive, stream.take(start + node.koffs[j], start + node.voffs[j]), start + node.koffs[j], label)
    if key != node.keys[j]:
        raise archive.damaged(f"{label} does not describe the dict at data offset {start}")
    _items(archive, stream, start + node.voffs[j], start + node.koffs[j + 1], 1, False, label)


def _key(archive: Archive, raw: bytes | memoryview, at: int, label: str) -> str | int:
    """A dict key as a node lists it: msglc writes str and int keys only."""
    try:
        return _key_decoder.decode(raw)
    except DECODE_ERRORS:
        raise archive.damaged(f"{label}: the key at data offset {at} is not one str or int") from None


def _keys(archive: Archive, raws: list[Any], at: int, label: str) -> list[str | int]:
    """``_key`` of every raw key, decoded in one C call."""
    try:
        return _keys_decoder.decode(array_header(len(raws)) + b"".join(raws))
    except DECODE_ERRORS:
        raise archive.damaged(f"{label}: the dict at data offset {at} has a key that is not a str or an int") from None


class _Entries:
    """What a hash-indexed dict's check keeps per entry, compactly (16 bytes): where it
    starts, its key's CRC-32 and 32 bits of its key's ``hash()`` (to tell a CRC collision
    from a key held twice)."""

    def __init__(self, fuse: bool = False, block_bits: int | None = None) -> None:
        """``block_bits``: of a sorted dict, whose keys are checked to ascend and whose blocks'
        first keys are kept."""
        self.offs = array("Q")
        self.crcs = array("I")
        self.hashes = array("I")
        self.rcrcs: array[int] | None = array("I") if fuse else None  # a fuse's: CRC of each key reversed
        self.block = 1 << block_bits if block_bits is not None else 0
        self.firsts: list[Any] = []
        self.last: Any = None
        self.disorder: str | None = None  # how a sorted dict's keys fail to ascend

    def add(self, archive: Archive, base: int, starts: list[int], raws: list[Any], label: str) -> list[str | int]:
        """Entries starting at ``starts`` (relative to the dict) with keys encoded as ``raws``:
        the keys must be str or int, encoded as a lookup encodes them."""
        keys = _keys(archive, raws, base + starts[0] if starts else base, label)
        if msgspec.msgpack.encode(keys) != array_header(len(raws)) + b"".join(raws):
            raise archive.damaged(
                f"{label}: a key of the dict at data offset {base} is not encoded as msgpack encodes it"
            )
        self.offs.extend(starts)
        self.crcs.extend(map(zlib.crc32, raws))
        if self.rcrcs is not None:
            self.rcrcs.extend(zlib.crc32(bytes(r)[::-1]) for r in raws)
        self.hashes.extend(map(and_, map(hash, keys), repeat(0xFFFFFFFF)))
        if self.block:
            self._ascending(keys, len(self.offs) - len(keys))
        return keys

    def _ascending(self, keys: list[str | int], first: int) -> None:
        """A sorted dict's keys, entry ``first`` on: each of the first's type and above the one
        before; the first key of each block kept."""
        last, block = self.last, self.block
        for e, key in enumerate(keys, first):
            if last is None:
                last = key
            elif type(key) is not type(last) or not last < key:  # type: ignore[operator]
                self.disorder = self.disorder or f"do not ascend at entry {e}"
                last = key
                continue
            if e % block == 0:
                self.firsts.append(key)
            last = key
        self.last = last

    def records(self) -> tuple[Sequence[int], list[int], list[tuple[int, int]]]:
        """The index's sorted records (``hash_records``: CRC << 32 | entry) and page starts,
        and the pairs of entries whose keys have the same CRC and hash: with NumPy, 8 bytes
        a key (else a Python int a key)."""
        n = len(self.crcs)
        np = loaded_numpy()
        if np is None and n >= 1 << 16:  # worth its import
            with contextlib.suppress(ImportError):
                import numpy as np
        if np is None:
            records, firsts = hash_records(self.crcs.tolist())
            pairs = [
                (b & 0xFFFFFFFF, r & 0xFFFFFFFF)
                for b, r in zip(records, records[1:], strict=False)
                if (b ^ r) >> 32 == 0 and self.hashes[b & 0xFFFFFFFF] == self.hashes[r & 0xFFFFFFFF]
            ]
            return records, firsts, pairs
        recs = np.frombuffer(self.crcs, np.uint32).astype(np.uint64) << np.uint64(32)
        recs |= np.arange(n, dtype=np.uint64)
        recs.sort()
        shift = np.uint64(64 - hash_page_bits(n))
        firsts = np.searchsorted(recs, np.arange(1 << hash_page_bits(n), dtype=np.uint64) << shift).tolist() + [n]
        same = np.flatnonzero((recs[1:] >> np.uint64(32)) == (recs[:-1] >> np.uint64(32)))
        entries = recs & np.uint64(0xFFFFFFFF)
        hashes = np.frombuffer(self.hashes, np.uint32)
        pairs = [(int(entries[i]), int(entries[i + 1])) for i in same if hashes[entries[i]] == hashes[entries[i + 1]]]
        return memoryview(recs).cast("B").cast("Q"), firsts, pairs


def _check_hash_map(
    archive: Archive, stream: DataStream, node: HashMapNode, start: int, end: int, pos: int, label: str
) -> Iterator[Child]:
    """A hash-indexed dict: spans as a list's (of entries), then its index region rebuilt
    from the keys as the writer builds it and compared byte for byte, its kid keys, and its
    keys unique."""
    n = node.n
    if n <= MAP_INLINE_MAX:
        raise archive.damaged(f"{label} indexes a dict of {n} entries, which writers list inline")
    starts, offs, kids = node.starts, node.offs, node.kids
    spans = len(starts)
    entries = _Entries(
        fuse=isinstance(node, (FuseMapNode, DirectMapNode)),
        block_bits=node.block_bits if isinstance(node, SortedMapNode) else None,
    )
    kid_keys: dict[str | int, int] = {}
    k = 0
    while k < spans:
        a_ = start + offs[k]
        ref = kids.get(k)
        if ref is not None:
            head = stream.take(a_, min(end, a_ + 9))
            size = scalar_size(head, 0) if head else None
            if size is None or a_ + size > start + offs[k + 1]:
                raise archive.damaged(f"{label}: the key at data offset {a_} is not one str or int")
            raw = bytes(stream.take(a_, a_ + size))
            key = entries.add(archive, start, [offs[k]], [raw], label)[0]
            kid_keys[key] = k
            yield _kid(archive, stream, a_ + size, start + offs[k + 1], pos, ref, label)
            k += 1
            continue
        stop = k + 1  # a run of spans without kids, in one window
        while stop < spans and stop not in kids and offs[stop + 1] - offs[k] <= PIECE:
            stop += 1
        _hash_run(archive, stream, node, start, k, stop, entries, label)
        k = stop
    if len(entries.offs) != n:
        raise archive.damaged(f"{label} does not describe the dict at data offset {start}")
    if node.kid_keys != kid_keys:
        raise archive.damaged(f"{label} does not describe the dict at data offset {start}")
    entries.offs.append(end - start)
    _check_region(archive, node, start, pos, entries, label)


def _hash_run(
    archive: Archive,
    stream: DataStream,
    node: HashMapNode,
    start: int,
    k: int,
    stop: int,
    entries: _Entries,
    label: str,
) -> None:
    """Spans k..stop-1 of a hash-indexed dict, none with a kid: each exactly its entries."""
    starts, offs = node.starts, node.offs
    spans = len(starts)
    lo, hi = start + offs[k], start + offs[stop]
    count = (starts[stop] if stop < spans else node.n) - starts[k]
    try:
        got = check_items(
            stream, lo, hi, count, is_map=True, collect=True, base=start, data_off=archive.opened.trailer.data_off
        )
    except CorruptedError as e:
        raise archive.damaged(f"{label}: a span does not hold what the node says ({e})") from None
    assert got is not None
    item_offs, key_raws = got
    entry_starts = item_offs[0:-1:2]
    for s in range(k + 1, stop):  # every span starts where its first entry does
        if entry_starts[starts[s] - starts[k]] != offs[s]:
            raise archive.damaged(f"{label} does not describe the dict at data offset {start}")
    entries.add(archive, start, entry_starts, key_raws, label)


def _check_region(archive: Archive, node: HashMapNode, start: int, pos: int, entries: _Entries, label: str) -> None:
    """The index region as the writer writes it for these keys, compared with the stored one;
    and no key twice (equal keys have equal encodings, so equal CRCs and hashes)."""
    if isinstance(node, SortedMapNode):
        _check_sorted(archive, node, start, pos, entries, label)
        return
    records, firsts, pairs = entries.records()
    if isinstance(node, DirectMapNode):
        _check_direct(archive, node, pos, entries, label, start)
        _no_key_twice(archive, start, entries, pairs)
        return
    if isinstance(node, FuseMapNode):
        _check_fuse(archive, node, start, pos, entries, label)
        _no_key_twice(archive, start, entries, pairs)
        return
    block_bits = node.block_bits if isinstance(node, BlockHashMapNode) else None
    region = region_of(records, firsts, entries.offs, block_bits)  # type: ignore[arg-type]
    if (node.page_bits, node.offs_width, node.offs_crc, node.index[1]) != (
        region.page_bits,
        region.width,
        region.offs_crc,
        region.size,
    ):
        raise archive.damaged(f"{label} does not describe the dict at data offset {start}")
    back, size = node.index
    stored = archive.read(pos - back, size)
    at = 0
    for part in region.parts:
        if bytes(stored[at : at + len(part)]) != bytes(part):
            raise archive.damaged(f"hash index of the TOC node at offset {pos} does not match its dict")
        at += len(part)
    _no_key_twice(archive, start, entries, pairs)


def _no_key_twice(archive: Archive, start: int, entries: _Entries, pairs: list[tuple[int, int]]) -> None:
    for e1, e2 in pairs:
        if _stored_key(archive, start, entries, e1) == _stored_key(archive, start, entries, e2):
            raise archive.damaged(f"the dict at data offset {start} holds a key twice")


def _check_sorted(archive: Archive, node: SortedMapNode, start: int, pos: int, entries: _Entries, label: str) -> None:
    """A sorted dict's index (type 9) as the writer makes it: its keys of one type (str or
    int) and ascending (so none twice), and its region these entries' block offsets and the
    first key of each block (of the node's size: the block size is the writer's choice)."""
    n, bb = node.n, node.block_bits
    if entries.disorder is not None:
        raise archive.damaged(f"{label}: the keys of the sorted dict at data offset {start} {entries.disorder}")
    offs_bytes, width = block_offsets(entries.offs, n, bb)
    region = sorted_region(offs_bytes, entries.firsts)
    keys_len = len(region) - len(offs_bytes)
    if (node.offs_width, node.index[1], node.keys_len) != (width, len(region), keys_len):
        raise archive.damaged(f"{label} does not describe the dict at data offset {start}")
    back, size = node.index
    if bytes(archive.read(pos - back, size)) != region:
        raise archive.damaged(f"sorted index of the TOC node at offset {pos} does not match its dict")
    if (node.offs_crc, node.keys_crc) != (zlib.crc32(offs_bytes), zlib.crc32(region[len(offs_bytes) :])):
        raise archive.damaged(f"{label}: its index checksums are not its index's")


def _check_fuse(archive: Archive, node: FuseMapNode, start: int, pos: int, entries: _Entries, label: str) -> None:
    """A fuse index (type 7) as the writer makes it for these keys, with the node's block size
    (the writer's choice): its fuse shaped as the writer shapes it for this dict, its block
    offsets these entries', and every key's three slots xoring to the key's block (the whole
    region built again and compared, with the C accelerator; key by key without it)."""
    n, bb = node.n, node.block_bits
    offs = entries.offs
    blocks = block_count(n, bb)
    if (node.slot_bits, (node.seg_bits, node.seg_count)) != (slot_bits_for(blocks), fuse_layout_of(n)):
        raise archive.damaged(f"{label}: its fuse is not shaped as the dict's keys call for")
    offs_bytes, width = block_offsets(offs, n, bb)
    if width != node.offs_width:
        raise archive.damaged(f"{label}: its block offsets are not {width} bytes each as the dict's size calls for")
    back, size = node.index
    stored = bytes(archive.read(pos - back, size))
    assert entries.rcrcs is not None
    hashes = array("Q", (c << 32 | r for c, r in zip(entries.crcs, entries.rcrcs, strict=True)))
    if sys.byteorder == "big":
        hashes.byteswap()
    speedups = accel.speedups
    if speedups is not None:
        values = b"".join(b.to_bytes(4, "little") * (1 << bb) for b in range(blocks))[: 4 * n]
        slots = speedups.fuse_build(hashes.tobytes(), values, node.slot_bits, node.seg_bits, node.seg_count, node.seed)
        if slots is None or fuse_region(offs_bytes, slots) != stored:
            raise archive.damaged(f"fuse index of the TOC node at offset {pos} does not match its dict")
    else:
        if stored[: len(offs_bytes)] != offs_bytes:
            raise archive.damaged(f"fuse index of the TOC node at offset {pos} does not match its dict")
        data = memoryview(stored)[
            fuse_layout(n, bb, node.offs_width, node.slot_bits, node.seg_bits, node.seg_count)[1] :
        ]
        for e, base in enumerate(hashes):
            h = mix(base, node.seed)
            got = 0
            for slot in slots_of(h, node.seg_bits, node.seg_count):
                got ^= slot_value(data, slot * node.slot_bits, node.slot_bits)
            if got != e >> bb:
                raise archive.damaged(f"fuse index of the TOC node at offset {pos} does not match its dict")
    slots_at = fuse_layout(n, bb, node.offs_width, node.slot_bits, node.seg_bits, node.seg_count)[1]
    if (zlib.crc32(offs_bytes), zlib.crc32(stored[len(offs_bytes) : slots_at])) != (node.offs_crc, node.crcs_crc):
        raise archive.damaged(f"fuse index of the TOC node at offset {pos} fails its checksums")


def _check_direct(archive: Archive, node: DirectMapNode, pos: int, entries: _Entries, label: str, start: int) -> None:
    """A direct index (type 10) as the writer makes it for these keys, byte for byte: its
    shape, groups, window bounds and read size, and its region (built in C, or by
    ``format.direct.build`` without the accelerator)."""
    offs, n = entries.offs, node.n
    assert entries.rcrcs is not None
    shape = direct.writer_shape(n, offs[-1])
    bases = array("Q", (c << 32 | r for c, r in zip(entries.crcs, entries.rcrcs, strict=True)))
    if sys.byteorder == "big":
        bases.byteswap()
    built = direct.build_from_bases(bases.tobytes(), offs, [node.starts[k] for k in node.kids], shape)
    fields = (node.page_bits, node.offs_width, node.off_bits, node.chunk, node.lo, node.hi, node.entry_read)
    if fields != (*shape, built.lo, built.hi, built.entry_read) or node.groups != built.groups:
        raise archive.damaged(f"{label}: its direct index is not shaped as the dict's keys call for")
    back, size = node.index
    if size != len(built.region) or bytes(archive.read(pos - back, size)) != built.region:
        raise archive.damaged(f"direct index of the TOC node at offset {pos} does not match its dict")


def _stored_key(archive: Archive, start: int, entries: _Entries, e: int) -> bytes:
    """The encoding of entry ``e``'s key, read again (only for keys whose CRC and hash agree)."""
    at = archive.opened.trailer.data_off + start + entries.offs[e]
    head = archive.read(at, min(9, archive.opened.data_end - at))
    size = scalar_size(head, 0) or 0
    return bytes(archive.read(at, size))


def _check_array(archive: Archive, stream: DataStream, node: ArrayNode, start: int, end: int, label: str) -> None:
    """A NumPy array value: its header as the node says, its str elements code points."""
    off = archive.opened.trailer.data_off
    dtype, _, head, _ = parse_head(stream.take(start, start + node.head), off + start, end - start)
    if (node.head, node.size) != (head, end - start - head):
        raise archive.damaged(f"{label} does not describe the NumPy array at data offset {start}")
    check_array(stream, dtype, start + head, end, off + start)


def _check_stride(archive: Archive, stream: DataStream, node: StrideNode, start: int, end: int, label: str) -> None:
    """A fixed-stride list: the layout of its first item (its leading headers) gives the
    template, which every item must match, proven a window of rows at a time; str leaves
    are decoded too."""
    bad = f"{label} does not describe the fixed-stride list at data offset {start}"
    is_map, n, h = container_header(stream.take(start, min(end, start + 5)))
    if is_map or n == 0 or (end - start - h) % n:
        raise archive.damaged(bad)
    s = (end - start - h) // n
    levels = stride_template(stream.take(start + h, min(end, start + h + min(s, ROWS))), 0, s)
    if levels is None or [tuple(d) for d in node.dims] != template_dims(h, n, s, levels):
        raise archive.damaged(bad)
    leaf = levels[-1][1]
    text = bool(leaf) and leaf[0] in STR_MARKERS
    # (first item, depth, items, stride) of the runs of items left, the next one last; a
    # count of 0 stands for one item too long for a window, taken header first
    work = [(start + h, 0, n, s)]
    while work:
        at, depth, count, stride = work.pop()
        kind, hdr, n1, s1 = levels[depth]
        if count and count * stride <= ROWS:
            if not stride_proven(stream.take(at, at + count * stride), 0, levels, count, stride, depth):
                raise archive.damaged(bad)
            if text:
                _items(archive, stream, at, at + count * stride, count, False, label)
        elif count and stride <= ROWS:  # runs of whole items
            rows = ROWS // stride
            work.extend((at + r * stride, depth, min(rows, count - r), stride) for r in reversed(range(0, count, rows)))
        elif count:  # items longer than a window, one by one
            work.extend((at + r * stride, depth, 0, stride) for r in reversed(range(count)))
        else:
            if bytes(stream.take(at, at + len(hdr))) != hdr:
                raise archive.damaged(bad)
            if kind == "array":
                work.append((at + len(hdr), depth + 1, n1, s1))
            elif text:  # a str longer than a window
                check_utf8(
                    stream, at + len(hdr), at + stride, lambda e: archive.damaged(f"{bad}: a str is not UTF-8 ({e})")
                )
            else:
                stream.skip(at + len(hdr), at + stride)
