"""Build the table of contents from an object and its msgpack encoding.

The object is encoded once, in one msgspec call. This module then looks at the bytes: a
container whose encoding fits the threshold needs no TOC entry; a larger one is split by
decoding one level of it into ``msgspec.Raw`` views (item boundaries at C speed), and only the
large items are visited further. Lists of fixed-size items are proven so from the bytes with
strided slice comparisons and need no per-item entries at all.

Containers are read as msgspec encodes them, from their C storage: a subclass's ``__len__``,
``__iter__`` or ``__getitem__`` is never consulted (one that yields other than its storage
was streamed instead: ``validate.kind`` raises ``Streamed`` for it).
"""

from __future__ import annotations

import sys
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import accumulate, compress
from typing import Any, NamedTuple, TypeVar

import msgspec

from msglc.format import direct, fuse
from msglc.format.fuse import fuse_block_bits
from msglc.format.hash_index import (
    BLOCK_BYTES,
    MAP_INLINE_MAX,
    Region,
    block_bits_for,
    hash_page_bits,
    hash_records,
    le_array,
    le_view,
    region_of,
    region_of_keys,
)
from msglc.format.msgpack import (
    FIXED_SCALAR_SIZE,
    array_header,
    container_header_size,
    gets_node,
)
from msglc.format.nodes import (
    PAGE_SPANS,
    ArrayNode,
    BlockHashMapNode,
    CompactMapNode,
    DirectMapNode,
    FuseMapNode,
    ListNode,
    MapNode,
    Node,
    PagedListNode,
    Ref,
    SortedMapNode,
    SpanPage,
    StrideNode,
    frame_node,
    whole_max,
)
from msglc.format.numpy_ext import parse_head
from msglc.format.strides import STRIDE_LAZY_MIN, stride_dims
from msglc.util import accel
from msglc.util.accel import Big
from msglc.util.optional import is_ndarray, loaded_numpy
from msglc.write import values as validate
from msglc.write.arrays import ArrayEncoder

# a row costs ~15 ns per float, so past ~56 floats one 9-byte read beats decoding the row)
_NUMERIC_MARKERS = frozenset(FIXED_SCALAR_SIZE)


# Errors of a layout on bytes msgspec garbled: a set subclass with its own __iter__ is written
# with the count of its storage and the items of its iteration. Reading them may fail before
# the type check meets the subclass; ``validate.raise_if_streamed`` then tells (Streamed).
GARBLED = (msgspec.DecodeError, ValueError, IndexError)


_raw_list = msgspec.msgpack.Decoder(list[msgspec.Raw])


_L = TypeVar("_L")  # the label of a child: its index in a list, its key in a dict
T = TypeVar("T")


DEFER_KEYS = 1 << 16  # dicts of this many keys at least get their fuse built on another thread
FUSE_THREADS = 2  # threads building fuses while the indexing goes on
PLACEHOLDER_CRC = 0xFFFFFFFF  # a pending fuse's node's CRC of its chunk CRCs: the widest encoding

Built = tuple[int, int, int, int, bytes]  # fuse.build's (seed, slot_bits, seg_bits, seg_count, slots)


class _Pending(NamedTuple):
    """A fuse being built: its region's chunk CRCs (then slots) at ``crcs`` in the TOC being
    written, its node (seed 0, ``PLACEHOLDER_CRC``) at ``node_at``, ``length`` bytes framed."""

    built: Future[Built | None]
    crcs: int
    node: FuseMapNode
    node_at: int
    length: int


class TocBuilder:
    """Accumulates framed TOC nodes for one encoded object ``buf``.

    ``splices``: (position, head, array) of the large NumPy arrays that the data section holds
    in place of the placeholders at those positions of ``buf`` (``msglc.arrays``). Navigation
    uses positions in ``buf``; sizes compared with the threshold and offsets written to nodes
    are those of the data section."""

    def __init__(
        self,
        buf: bytes,
        threshold: int,
        splices: Sequence[tuple[int, bytes, Any]] = (),
        toc_base: int = 0,
        block_bytes: int = BLOCK_BYTES,
        fuse: bool = False,
        sorted_keys: bool = False,
        direct: bool = False,
    ) -> None:
        """``fuse``: index big dicts with a fuse (node type 7: for compressed archives, where a
        lookup decompresses a frame of blocks anyway) when the C accelerator can build one;
        ``sorted_keys``: the dicts' keys ascend (``order="sorted"``): a big dict whose keys are
        all str or all int is indexed by the first key of each block (node type 9) instead;
        ``direct``: index big dicts by their entries' offsets (node type 10, plain archives),
        with the C accelerator."""
        self.buf = buf
        self.fuse = fuse
        self.direct = direct and not fuse
        self.sorted_keys = sorted_keys
        # where the TOC's frames are best cut (compressed archives): around each index region,
        # and where its random part (records, slots) starts, which is then stored raw
        self.regions: list[tuple[int, ...]] = []
        self.threshold = threshold  # spans are cut at about this size
        self.whole = whole_max(threshold)  # containers up to this size get no node
        self.block_bytes = block_bytes  # the block index's block size (larger in compressed archives)
        self.toc = bytearray()
        self.toc_base = toc_base  # TOC bytes written before this builder's (combine copies them)
        self.all_plain = False  # every value is a plain one (checked once, in C): no container checks
        self._builds: ThreadPoolExecutor | None = None  # threads building fuses (with_fuses_meanwhile)
        self._pending: list[_Pending] = []
        self._splice_pos = [pos for pos, _, _ in splices]
        self._splice_head = {pos: head for pos, head, _ in splices}
        deltas = (len(head) + arr.nbytes - ArrayEncoder.PLACEHOLDER_SIZE for _, head, arr in splices)
        self._shift = list(accumulate(deltas, initial=0))  # growth of the data before splice k

    def _real(self, p: int) -> int:
        """Position ``p`` of ``buf`` in the data section."""
        return p + self._shift[bisect_left(self._splice_pos, p)] if self._splice_pos else p

    def _spliced(self, a: int, b: int) -> bool:
        """Does buf[a:b] hold a placeholder?"""
        k = bisect_left(self._splice_pos, a)
        return k < len(self._splice_pos) and self._splice_pos[k] < b

    def _real_layout(self, a: int, b: int, lens: list[int], offs: list[int]) -> tuple[list[int], list[int]]:
        """Item lengths and offsets of the container at buf[a:b] as in the data section."""
        if not self._spliced(a, b):
            return lens, offs
        lens = list(lens)
        pos = self._splice_pos
        for k in range(bisect_left(pos, a), bisect_left(pos, b)):
            lens[bisect_right(offs, pos[k] - a) - 1] += self._shift[k + 1] - self._shift[k]
        return lens, list(accumulate(lens, initial=offs[0]))

    # -- entry point ---------------------------------------------------------------------------
    def build_root(self, obj: Any) -> tuple[int, int]:
        """Index the whole object; returns the root node's (position in TOC, length) or (0, 0)."""
        self.all_plain = accel.speedups is not None and accel.speedups.plain_values(obj)
        try:
            ref = self.with_fuses_meanwhile(lambda: self.index(obj, 0, len(self.buf)))
        except GARBLED:
            validate.raise_if_streamed(obj)
            raise
        if ref is None:
            validate.check_value(obj)
            return 0, 0
        return ref

    def index(self, obj: Any, a: int, b: int) -> tuple[int, int] | None:
        """Node for the container encoded at buf[a:b], or None when it needs none."""
        if self._real(b) - self._real(a) <= self.whole:
            return None
        k = validate.kind(type(obj))
        if k == validate.SEQ:
            seq = obj if type(obj) is list or type(obj) is tuple else list(obj)  # a subclass: its storage
            return self._index_list(seq, a, b)
        if k == validate.MAP:
            return self._index_map(obj, a, b)
        if not k:
            raise validate.unsupported_type(type(obj))
        if gets_node(self.buf, a):  # a NumPy array: an extension value, or a list without numpy_encoder
            return self._index_array(a, b) if not container_header_size(self.buf[a]) else self.index(obj.tolist(), a, b)
        return None  # a long str or bytes: a scalar, read whole

    def _index_array(self, a: int, b: int) -> tuple[int, int]:
        head = self._splice_head.get(a)
        total = self._real(b) - self._real(a)
        _, _, start, _ = parse_head(memoryview(self.buf)[a:b] if head is None else head, a, total)
        return self.add_node(ArrayNode(head=start, size=total - start))

    def add_node(self, node: Node | SpanPage) -> tuple[int, int]:
        """Write ``node`` (an inline dict's in its compact form, type 8, in a compressed archive)."""
        pos = self._here()
        framed = frame_node(CompactMapNode.of(node) if self.fuse and isinstance(node, MapNode) else node)
        self.toc += framed
        return pos, len(framed)

    def add_list(
        self, n: int, starts: Sequence[int], offs: Sequence[int], kids: Mapping[int, tuple[int, int]]
    ) -> tuple[int, int]:
        """Write the node of a list of ``n`` items cut into spans (``ListNode``'s ``starts`` and
        ``offs``; ``kids``: span -> the (position, size) of its item's node): type 1, or past
        ``PAGE_SPANS`` spans the pages of a type 11 and then its node."""
        if len(starts) <= PAGE_SPANS:
            return self.add_node(ListNode(n=n, starts=list(starts), offs=list(offs), kids=self.refs(kids)))
        by_page: dict[int, dict[int, tuple[int, int]]] = {}
        for k, kid in kids.items():
            by_page.setdefault(k // PAGE_SPANS, {})[k % PAGE_SPANS] = kid
        cuts = range(0, len(starts), PAGE_SPANS)
        pages = []
        for a in cuts:
            b, page_kids = a + PAGE_SPANS, self.refs(by_page.get(a // PAGE_SPANS, {}))
            pages.append(self.add_node(SpanPage(starts=list(starts[a:b]), offs=list(offs[a : b + 1]), kids=page_kids)))
        here = self._here()
        return self.add_node(
            PagedListNode(
                n=n,
                firsts=[starts[a] for a in cuts],
                offs=[*(offs[a] for a in cuts), offs[-1]],
                pages=[(here - pos, size) for pos, size in pages],
            )
        )

    def refs(self, kids: Mapping[int, tuple[int, int]]) -> dict[int, Ref]:
        """Child positions as distances back from the node about to be written."""
        here = self._here()
        return {k: (here - pos, size) for k, (pos, size) in kids.items()}

    def _here(self) -> int:
        """Position in the TOC of the next byte written."""
        return self.toc_base + len(self.toc)

    # -- lists ---------------------------------------------------------------------------------
    def _index_list(self, seq: validate.Seq, a: int, b: int) -> tuple[int, int]:
        n = len(seq)
        h = container_header_size(self.buf[a])
        dims = None if self._spliced(a, b) else stride_dims(self.buf, a, h, n, b)
        if dims is not None:
            self._check_stride_types(seq, dims, a)
            lazy_min = min(self.whole + 1, STRIDE_LAZY_MIN)
            return self.add_node(StrideNode(dims=dims, lazy_min=lazy_min))
        real_offs, kids = self.list_items(seq, a, b, h)
        starts, span_offs, span_kids = self.spans(real_offs, n, kids)
        return self.add_list(n, starts, span_offs, span_kids)

    def list_items(self, seq: validate.Seq, a: int, b: int, h: int) -> tuple[Sequence[int], dict[int, tuple[int, int]]]:
        """Item offsets (from ``a``, as in the data section, plus the end) of the list at
        buf[a:b] with an h-byte header, and the nodes of its large items; every item checked."""
        real_offs: Sequence[int]
        if accel.speedups is not None and not self._spliced(a, b):  # the same layout without a Python object per item
            offs_bytes, big = accel.speedups.list_index(self.buf, a + h, len(seq), a, self.whole)
            real_offs = le_array("Q", offs_bytes)
            kids = self._index_children((j, seq[j], a + start, a + end) for j, start, end in big)
        else:
            lens, offs = item_layout(list_raws(self.buf, a, b), h)
            real_lens, real_offs = self._real_layout(a, b, lens, offs)
            kids = self._index_children(
                (j, seq[j], a + offs[j], a + offs[j + 1]) for j in self.big_children(a, offs, real_lens)
            )
        if not self.all_plain:
            validate.check_items(seq, skip=kids.keys())
        return real_offs, kids

    def big_children(self, a: int, starts: list[int], lens: list[int]) -> list[int]:
        """Indices of the children that get a node of their own: not shorter than the threshold,
        and arrays, maps or NumPy arrays (the C path decides the same way; ``verify`` asks the
        same). ``starts[j]`` is child j's offset from ``a``, ``lens[j]`` its length."""
        if not lens or max(lens) <= self.whole:
            return []
        long = compress(range(len(lens)), map(self.whole.__lt__, lens))
        return [j for j in long if gets_node(self.buf, a + starts[j])]

    def _index_children(self, children: Iterable[tuple[_L, Any, int, int]]) -> dict[_L, tuple[int, int]]:
        """Nodes for (index or key, value, start, end) children that need one."""
        kids: dict[_L, tuple[int, int]] = {}
        for label, value, start, end in children:
            try:
                ref = self.index(value, start, end)
            except validate.Unsupported as e:
                e.path.append(label)
                raise
            if ref is not None:
                kids[label] = ref
        return kids

    def spans(
        self, offs: Sequence[int], n: int, kids: Mapping[int, tuple[int, int]], size: int | None = None
    ) -> tuple[list[int], list[int], dict[int, tuple[int, int]]]:
        """Cut items 0..n-1 into spans of about ``size`` bytes (the threshold unless given);
        each kid is a span of its own."""
        starts: list[int] = []
        span_kids: dict[int, tuple[int, int]] = {}
        t = self.threshold if size is None else size
        i = 0
        for stop in [*sorted(kids), n]:
            while i < stop:
                j = bisect_right(offs, offs[i] + t, i + 1, stop + 1) - 1
                starts.append(i)
                i = max(j, i + 1)
            if stop < n:
                span_kids[len(starts)] = kids[stop]
                starts.append(stop)
                i = stop + 1
        return starts, [offs[s] for s in starts] + [offs[n]], span_kids

    def _check_stride_types(self, seq: validate.Seq, dims: list[tuple[int, int, int]], a: int) -> None:
        """Sub-lists must be sequences and leaves storable. Numeric leaves (the usual matrix)
        are checked by ``accel.speedups.exact_numbers`` when built: every leaf exactly a float or
        an int, ~2 ns each. Otherwise, and for other leaves, the full type check runs: bytes
        alone prove nothing, since msgspec also writes plain ``Enum`` members and ``Raw``
        values with those markers."""
        if self.all_plain:
            return
        numeric = self.buf[a + sum(d[0] for d in dims)] in _NUMERIC_MARKERS
        if numeric and accel.speedups is not None and accel.speedups.exact_numbers(seq, len(dims)):
            return
        try:
            level: list[validate.Seq] = [seq]
            for _ in dims[1:]:
                for row in level:
                    _check_rows(row)
                # NumPy arrays (stored as lists without numpy_encoder) were checked by the encoder
                level = [
                    r if isinstance(r, (list, tuple)) else list(r) for row in level for r in row if not is_ndarray(r)
                ]
            for row in level:
                validate.check_items(row)
        except validate.Unsupported:
            validate.check_items(seq)  # slower, but finds the full path for the message
            raise

    # -- dicts ---------------------------------------------------------------------------------
    def _index_map(self, d: dict[Any, Any], a: int, b: int) -> tuple[int, int]:
        keys = dict.keys(d)  # the storage msgspec encoded, whatever a subclass overrides
        n = len(keys)
        h = container_header_size(self.buf[a])
        if n > MAP_INLINE_MAX and accel.speedups is not None and not self._spliced(a, b):
            return self._index_hash_map_fast(d, a, h, n)
        if n <= MAP_INLINE_MAX and accel.speedups is not None and not self._spliced(a, b):
            real_offs, kids = self.inline_entries(d, a, h, n)
        else:
            raws, real_offs, kids = self.map_entries(d, a, b, h)
        koffs, voffs = real_offs[0::2], real_offs[1::2]  # entry j: key at koffs[j], value voffs[j]..koffs[j+1]
        if n <= MAP_INLINE_MAX:
            entry_refs = {j: kids[k] for j, k in enumerate(keys) if k in kids}
            return self.add_node(MapNode(keys=list(keys), koffs=koffs, voffs=voffs, kids=self.refs(entry_refs)))
        entry_kids = {j: (k, kids[k]) for j, k in enumerate(keys) if k in kids} if kids else {}
        if self.sorted_keys and (ordered := ascending_keys(keys)) is not None:
            return self.sorted_node(n, koffs, entry_kids, ordered)
        return self.keyed_node(n, koffs, entry_kids, raws[0::2])

    def map_entries(
        self, d: dict[Any, Any], a: int, b: int, h: int
    ) -> tuple[list[msgspec.Raw], list[int], dict[Any, tuple[int, int]]]:
        """The dict encoded at buf[a:b] with an h-byte header: its keys and values alternately
        as ``msgspec.Raw``, their offsets from ``a`` as in the data section (plus the end), and
        the nodes of its large values by key; every key and value checked."""
        raws = map_raws(self.buf, a, h, b, len(dict.keys(d)))
        lens, offs = item_layout(raws, h)
        real_lens, real_offs = self._real_layout(a, b, lens, offs)
        kids = self._big_values(d, a, offs[1::2], offs[0::2], real_lens[1::2])
        if not self.all_plain:
            validate.check_map(d, skip=kids.keys())
        return raws, real_offs, kids

    def inline_entries(self, d: dict[Any, Any], a: int, h: int, n: int) -> tuple[list[int], dict[Any, tuple[int, int]]]:
        """``map_entries`` for a dict of at most ``MAP_INLINE_MAX`` entries, from the C walk of
        its 2n items (``list_index``): no copy of its bytes and no ``msgspec.Raw`` per item, which
        made the Python path cost each byte once per level of nesting."""
        speedups = accel.speedups
        assert speedups is not None  # the caller checked
        offs_bytes, big = speedups.list_index(self.buf, a + h, 2 * n, a, self.whole)
        kids: dict[Any, tuple[int, int]] = {}
        if big:
            items = list(dict.items(d))
            kids = self._index_children(
                (items[e >> 1][0], items[e >> 1][1], a + start, a + end) for e, start, end in big if e & 1
            )
        if not self.all_plain:
            validate.check_map(d, skip=kids.keys())
        return list(le_array("Q", offs_bytes)), kids

    def _index_hash_map_fast(self, d: dict[Any, Any], a: int, h: int, n: int) -> tuple[int, int]:
        """The hash-indexed dict with the arrays computed in C (``_speedups``)."""
        koffs, index, big = self.walk_big_map(a + h, n, a)
        entry_kids: dict[int, tuple[str | int, tuple[int, int]]] = {}
        if big:
            items = list(dict.items(d))
            kids = self._index_children((items[e][0], items[e][1], a + start, a + end) for e, start, end in big)
            entry_kids = {e: (items[e][0], kids[items[e][0]]) for e, _, _ in big if items[e][0] in kids}
        if not self.all_plain:
            validate.check_map(d, skip={key for key, _ in entry_kids.values()})
        if self.sorted_keys and (ordered := ascending_keys(dict.keys(d))) is not None:
            return self.sorted_node(n, koffs, entry_kids, ordered)
        return self.big_map_node(a + h, n, koffs, entry_kids, index)

    def walk_big_map(self, at: int, n: int, base: int) -> tuple[array[int], bytes | tuple[bytes, bytes], Big]:
        """The n entries at ``buf[at]`` of a dict that gets an index, walked in C: their offsets
        from ``base`` (plus the end), what its index is built from (for a fuse or a sorted index,
        each key's hash, ``map_hashed``; for a block index, the sorted hash records and page
        starts, ``map_index``) and its large values."""
        speedups = accel.speedups
        assert speedups is not None  # (the C paths only)
        index: bytes | tuple[bytes, bytes]
        if self.fuse or self.direct:
            offs_bytes, width, index, big = speedups.map_hashed(self.buf, at, n, base, self.whole)
        else:
            offs_bytes, width, rec_bytes, firsts_bytes, big = speedups.map_index(
                self.buf, at, n, base, self.whole, hash_page_bits(n)
            )
            index = (rec_bytes, firsts_bytes)
        return le_array("I" if width == 4 else "Q", offs_bytes), index, big

    def big_map_node(
        self,
        at: int,
        n: int,
        koffs: Sequence[int],
        entry_kids: Mapping[int, tuple[str | int, tuple[int, int]]],
        index: bytes | tuple[bytes, bytes],
    ) -> tuple[int, int]:
        """The node and index of the dict whose n entries at ``buf[at]`` were walked
        (``walk_big_map``): a direct index or a fuse from the keys' hashes, or a block index
        (type 6) where no fuse peels or from the records."""
        if isinstance(index, bytes) and self.direct:
            return self.direct_node(n, koffs, entry_kids, index)
        if isinstance(index, bytes):
            made = self.fuse_node(n, koffs, entry_kids, index)
            if made is not None:
                return made
        records = None if isinstance(index, bytes) else index
        return self.hash_node(n, koffs, entry_kids, self.block_region(at, n, koffs, records))

    def block_region(
        self, at: int, n: int, koffs: Sequence[int], records: tuple[bytes, bytes] | None = None
    ) -> WrittenRegion:
        """Write the block index region (type 6) of the n entries at ``buf[at]`` (offsets
        ``koffs``), from their sorted hash records and page starts (``map_index``), computed
        here when not given (a dict whose fuse did not peel)."""
        if records is None:
            speedups = accel.speedups
            assert speedups is not None  # (only the C paths come here without records)
            _, _, rec_bytes, firsts_bytes, _ = speedups.map_index(self.buf, at, n, 0, 1 << 62, hash_page_bits(n))
            records = (rec_bytes, firsts_bytes)
        rec_bytes, firsts_bytes = records
        firsts = le_array("I", firsts_bytes)
        return self.add_region(
            region_of(le_view("Q", rec_bytes), firsts, koffs, block_bits_for(koffs, self.block_bytes))
        )

    def hash_node(
        self,
        n: int,
        koffs: Sequence[int],
        entry_kids: Mapping[int, tuple[str | int, tuple[int, int]]],
        region: WrittenRegion,
    ) -> tuple[int, int]:
        """Write the node of a hash-indexed dict whose index region is already written."""
        position, length, page_bits, width, offs_crc, block_bits = region
        here = self._here()
        return self.add_node(
            BlockHashMapNode(
                **self._span_fields(n, koffs, entry_kids),
                page_bits=page_bits,
                offs_width=width,
                offs_crc=offs_crc,
                index=(here - position, length),
                block_bits=block_bits,
            )
        )

    def keyed_node(
        self,
        n: int,
        koffs: Sequence[int],
        entry_kids: Mapping[int, tuple[str | int, tuple[int, int]]],
        key_raws: Sequence[bytes] | Sequence[msgspec.Raw],
    ) -> tuple[int, int]:
        """The node and index of a big dict from its keys' encodings (the Python paths): a
        direct index where this builder writes them, else a block index."""
        if not self.direct:
            return self.hash_node(n, koffs, entry_kids, self.hash_index(list(key_raws), koffs))
        return self.direct_node(n, koffs, entry_kids, base_hashes(key_raws))

    def direct_node(
        self,
        n: int,
        koffs: Sequence[int],
        entry_kids: Mapping[int, tuple[str | int, tuple[int, int]]],
        hashes: bytes,
    ) -> tuple[int, int]:
        """The node of a direct-indexed dict (type 10) and its region, from the keys' base
        hashes (u64 LE, ``fuse.base_hash``); its spans are cut at about a 1024th of it (its
        lookups do not use them). A dict of 2**48 bytes or more, whose records would pass 8
        bytes, gets a block index (type 6) from the CRC-32s the base hashes begin with."""
        shape = direct.writer_shape(n, koffs[-1])
        if shape.width > direct.MAX_WIDTH:
            crcs = [base >> 32 for base in le_array("Q", hashes)]
            return self.hash_node(n, koffs, entry_kids, self.hash_index_of(crcs, koffs))
        data, groups, lo, hi, entry_read = direct.build_from_bases(hashes, koffs, entry_kids.keys(), shape)
        position = self._here()
        self.toc += data
        self.regions.append((len(self.toc) - len(data), len(self.toc) - len(data), len(self.toc)))
        index = (self._here() - position, len(data))
        return self.add_node(
            DirectMapNode(
                **self._span_fields(n, koffs, entry_kids, self._coarse(koffs)),
                page_bits=shape.group_bits,
                offs_width=shape.width,
                offs_crc=zlib.crc32(groups),
                index=index,
                off_bits=shape.off_bits,
                chunk=shape.chunk,
                lo=lo,
                hi=hi,
                entry_read=entry_read,
                groups=groups,
            )
        )

    def fuse_node(
        self,
        n: int,
        koffs: Sequence[int],
        entry_kids: Mapping[int, tuple[str | int, tuple[int, int]]],
        hashes: bytes,
    ) -> tuple[int, int] | None:
        """The node of a fuse-indexed dict (type 7) and its region, or None when no fuse can be
        built for these keys (the caller writes a type-6 index). Inside ``with_fuses_meanwhile``
        a big dict's fuse is built on another thread while the indexing goes on: its region's
        slots and the node's seed and CRC are put in place at the end."""
        block_bits = fuse_block_bits(koffs)
        pending: Future[Built | None] | None = None
        if self._builds is not None and n >= DEFER_KEYS:
            pending = self._builds.submit(fuse.build, hashes, n, block_bits)
            seed, (slot_bits, seg_bits, seg_count) = 0, fuse.shape(n, block_bits)
            slots = bytes(fuse.slot_bytes(slot_bits, seg_bits, seg_count))  # (placeholders)
        else:
            built = fuse.build(hashes, n, block_bits)
            if built is None:
                return None
            seed, slot_bits, seg_bits, seg_count, slots = built
        offs_bytes, width = fuse.block_offsets(koffs, n, block_bits)
        data = fuse.region(offs_bytes, slots)
        position = self._here()
        self.toc += data
        start = len(self.toc) - len(data)
        self.regions.append((start, start + len(data) - len(slots), len(self.toc)))
        crcs = data[len(offs_bytes) : len(data) - len(slots)]
        fields = self._block_node_fields(n, koffs, entry_kids, offs_bytes, width, block_bits)
        index = (self._here() - position, len(data))
        node = FuseMapNode(
            **fields,
            index=index,
            slot_bits=slot_bits,
            seed=seed,
            seg_bits=seg_bits,
            seg_count=seg_count,
            crcs_crc=zlib.crc32(crcs) if pending is None else PLACEHOLDER_CRC,
        )
        ref = self.add_node(node)
        if pending is not None:
            self._pending.append(_Pending(pending, start + len(offs_bytes), node, ref[0] - self.toc_base, ref[1]))
        return ref

    def with_fuses_meanwhile(self, index: Callable[[], T]) -> T:
        """``index()`` (which indexes with this builder), the fuses of its big dicts built on
        other threads meanwhile (``fuse_build`` lets the GIL go) and put in place at the end.
        Where that cannot be done in place (no seed peels a dict's keys, which then gets a
        type-6 index; or a node's CRC of the chunk CRCs encodes shorter than the placeholder's,
        once in 65536 dicts) this call's part of the TOC is built again, each fuse on the spot
        (what earlier roots of this builder wrote stays). Called inside itself: ``index()``, the
        outer call putting the fuses in place."""
        if not self.fuse or accel.speedups is None or self._builds is not None:
            return index()
        toc_len, regions_len = len(self.toc), len(self.regions)
        self._builds = ThreadPoolExecutor(FUSE_THREADS)
        try:
            result = index()
            if self._put_in_place():
                return result
        finally:
            self._builds.shutdown(wait=True, cancel_futures=True)
            self._builds = None
            self._pending = []
        del self.toc[toc_len:]
        del self.regions[regions_len:]
        return index()

    def _put_in_place(self) -> bool:
        """Each pending fuse's slots, chunk CRCs and node written over their placeholders;
        False when one cannot be (the caller builds the TOC again)."""
        for p in self._pending:
            built = p.built.result()
            if built is None:
                return False
            seed, slot_bits, seg_bits, seg_count, slots = built
            assert (slot_bits, seg_bits, seg_count) == (p.node.slot_bits, p.node.seg_bits, p.node.seg_count)
            crcs = fuse.chunk_crcs(slots)
            framed = frame_node(msgspec.structs.replace(p.node, seed=seed, crcs_crc=zlib.crc32(crcs)))
            if len(framed) != p.length:
                return False
            self.toc[p.crcs : p.crcs + len(crcs) + len(slots)] = crcs + slots
            self.toc[p.node_at : p.node_at + p.length] = framed
        return True

    def sorted_node(
        self,
        n: int,
        koffs: Sequence[int],
        entry_kids: Mapping[int, tuple[str | int, tuple[int, int]]],
        keys: list[str] | list[int],
    ) -> tuple[int, int]:
        """The node of a dict whose keys ascend (type 9) and its region: the block offsets and
        the first key of each block."""
        block_bits = fuse_block_bits(koffs)
        offs_bytes, width = fuse.block_offsets(koffs, n, block_bits)
        firsts = keys[:: 1 << block_bits]
        data = fuse.sorted_region(offs_bytes, firsts)
        position = self._here()
        self.toc += data  # (no random part: its frames are the TOC's)
        fields = self._block_node_fields(n, koffs, entry_kids, offs_bytes, width, block_bits)
        index = (self._here() - position, len(data))
        keys_part = data[len(offs_bytes) :]
        return self.add_node(
            SortedMapNode(**fields, index=index, keys_len=len(keys_part), keys_crc=zlib.crc32(keys_part))
        )

    def _span_fields(
        self,
        n: int,
        koffs: Sequence[int],
        entry_kids: Mapping[int, tuple[str | int, tuple[int, int]]],
        size: int | None = None,
    ) -> dict[str, Any]:
        """The fields every big dict's node has: its entries cut into spans (of about ``size``
        bytes, the threshold unless given), each large value's span, and their keys. Called
        once its region is written (the references count back from here)."""
        starts, span_offs, span_kids = self.spans(koffs, n, {e: ref for e, (_, ref) in entry_kids.items()}, size)
        span_of_entry = {starts[k]: k for k in span_kids}
        return {
            "n": n,
            "starts": starts,
            "offs": span_offs,
            "kids": self.refs(span_kids),
            "kid_keys": {key: span_of_entry[e] for e, (key, _) in entry_kids.items()},
        }

    def _coarse(self, koffs: Sequence[int]) -> int:
        """Span size for a dict whose lookups use its index, not its spans (types 7, 9, 10):
        about a 1024th of it, so that its node stays a few KB whatever its size (opening a
        compressed archive of a 500 MB dict reads it), the threshold at least."""
        return max(self.threshold, koffs[-1] >> 10)

    def _block_node_fields(
        self,
        n: int,
        koffs: Sequence[int],
        entry_kids: Mapping[int, tuple[str | int, tuple[int, int]]],
        offs_bytes: bytes,
        width: int,
        block_bits: int,
    ) -> dict[str, Any]:
        """The fields that the nodes of types 7 and 9 share with type 6 (``index`` aside); their
        spans cut coarse, as type 10's (``_coarse``)."""
        return {
            **self._span_fields(n, koffs, entry_kids, self._coarse(koffs)),
            "page_bits": 0,
            "offs_width": width,
            "offs_crc": zlib.crc32(offs_bytes),
            "block_bits": block_bits,
        }

    def _big_values(
        self, d: dict[Any, Any], a: int, voffs: list[int], koffs: list[int], vlens: list[int]
    ) -> dict[Any, tuple[int, int]]:
        """Index the values that get a node: key -> node."""
        big = set(self.big_children(a, voffs, vlens))
        if not big:
            return {}
        return self._index_children(
            (key, value, a + voffs[j], a + koffs[j + 1]) for j, (key, value) in enumerate(dict.items(d)) if j in big
        )

    def hash_index(self, key_raws: list[bytes] | list[msgspec.Raw], koffs: Sequence[int]) -> WrittenRegion:
        """Build and write the block index region of a dict (pure Python;
        ``accel.speedups.map_index`` computes the same arrays in C); its layout:
        ``format.hash_index``."""
        return self.add_region(region_of_keys(key_raws, koffs, block_bits_for(koffs, self.block_bytes)))

    def hash_index_of(self, hashes: list[int], koffs: Sequence[int]) -> WrittenRegion:
        """``hash_index`` from the keys' hashes (CRC-32 of their encodings)."""
        return self.add_region(region_of(*hash_records(hashes), koffs, block_bits_for(koffs, self.block_bytes)))

    def add_region(self, region: Region) -> WrittenRegion:
        """Append a block index region to the TOC."""
        if region.block_bits is None:
            raise ValueError("writers write block indexes only (node type 6)")
        pos = self._here()
        start = len(self.toc)
        for part in region.parts:
            self.toc += part
        self.regions.append((start, len(self.toc) - len(region.parts[-1]), len(self.toc)))
        return WrittenRegion(
            pos, self._here() - pos, region.page_bits, region.width, region.offs_crc, region.block_bits
        )


def ascending_keys(keys: Iterable[Any]) -> list[str] | list[int] | None:
    """The keys as a list, when a sorted dict's index can name them (all str or all int, of
    the type itself, ascending), else None (a dict given its keys out of order: ``dump``
    sorts them, other writers keep them as given)."""
    listed = list(keys)
    kinds = set(map(type, listed))
    return listed if (kinds == {str} or kinds == {int}) and fuse.ascends(listed) else None


class WrittenRegion(NamedTuple):
    """Where ``TocBuilder.add_region`` put an index region, and what its node records of it."""

    position: int
    length: int
    page_bits: int
    width: int
    offs_crc: int
    block_bits: int


def list_raws(buf: bytes, a: int, b: int) -> list[msgspec.Raw]:
    """The items of the array encoded at buf[a:b], as ``msgspec.Raw`` views (C speed)."""
    return _raw_list.decode(memoryview(buf)[a:b])


def map_raws(buf: bytes | bytearray, a: int, h: int, b: int, n: int) -> list[msgspec.Raw]:
    """Keys and values, alternately, of the n-entry map encoded at buf[a:b] with an h-byte
    header: its body read as an array of 2n items."""
    return _raw_list.decode(array_header(2 * n) + memoryview(buf)[a + h : b])


def item_layout(raws: Sequence[bytes], h: int) -> tuple[list[int], list[int]]:
    """Lengths of the items, and their starts relative to the container plus the end."""
    lens = list(map(len, raws))
    return lens, list(accumulate(lens, initial=h))


def _check_rows(row: validate.Seq) -> None:
    """Every item of ``row`` must be a sequence (a sub-list of a fixed-stride list): a
    sequence type, or a NumPy array that the encoder wrote as a list."""
    np = loaded_numpy()
    for t in set(map(type, row)):
        if validate.kind(t) != validate.SEQ and not (np is not None and issubclass(t, np.ndarray)):
            e = validate.unsupported_type(t)
            e.path.append(validate.label_of(enumerate(row), t))
            raise e


def key_records(keys: bytes | bytearray, n: int) -> tuple[memoryview | array[int], Sequence[int], Sequence[int]]:
    """``hash_records`` of n keys whose encodings, each followed by a nil byte, make ``keys``
    (a msgpack map body of nil values: how a streamed dict keeps its keys once their values
    are written), and where each key starts in ``keys`` (plus the end). With the C
    accelerator no Python object is made per key."""
    if accel.speedups is not None:
        starts_bytes, width, recs, firsts_bytes, _ = accel.speedups.map_index(keys, 0, n, 0, 1, hash_page_bits(n))
        return le_view("Q", recs), le_array("I", firsts_bytes), le_view("I" if width == 4 else "Q", starts_bytes)
    raws = map_raws(keys, 0, 0, len(keys), n)
    records, firsts = hash_records(list(map(zlib.crc32, raws[0::2])))
    return records, firsts, list(accumulate(map(len, raws), initial=0))[0::2]


def key_hashes(keys: bytes | bytearray, n: int) -> bytes:
    """The base hashes (``fuse.base_hash``, u64 LE) of the n keys whose encodings, each
    followed by a nil byte, make ``keys`` (as in ``key_records``): a direct index's input."""
    if accel.speedups is not None:
        return accel.speedups.map_hashed(keys, 0, n, 0, 1)[2]
    return base_hashes(map_raws(keys, 0, 0, len(keys), n)[0::2])


def base_hashes(key_raws: Iterable[bytes] | Iterable[msgspec.Raw]) -> bytes:
    """The base hashes (``fuse.base_hash``, u64 LE) of these key encodings."""
    hashes = array("Q", (fuse.base_hash(bytes(raw)) for raw in key_raws))
    if sys.byteorder == "big":
        hashes.byteswap()
    return hashes.tobytes()
