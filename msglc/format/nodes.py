"""TOC nodes: their types, their framing (length and CRC-32 around msgpack), and the checks a
node must pass before a reader trusts it."""

from __future__ import annotations

import zlib
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, chain
from typing import Any

import msgspec

from msglc.errors import (
    CorruptedError,
    UnsupportedVersionError,
)
from msglc.format import direct
from msglc.format.fuse import MAX_SEG_BITS, fuse_layout, slot_count
from msglc.format.hash_index import READ_MAX_BLOCK_BITS, block_count, block_layout, le_view, region_layout
from msglc.format.layout import U32
from msglc.util import accel


def whole_max(threshold: int) -> int:
    """The longest container encoding that writers store without a node of its own under the
    small-object ``threshold``: a container shorter than the threshold is read whole (the
    published msglc's meaning), and so is an empty one, which has nothing to index. So 0
    and 1 both give every non-empty container a node."""
    return max(threshold - 1, 1)


# ---- TOC nodes -------------------------------------------------------------------------------
# A reference to a node is (distance back from the referring node's start, framed length).
Ref = tuple[int, int]


class ListNode(msgspec.Struct, array_like=True, tag=1, frozen=True, forbid_unknown_fields=True):
    """A list cut into spans. Span k holds items starts[k]..starts[k+1]-1 at bytes
    offs[k]..offs[k+1] (relative to the list's first byte); a span in ``kids`` is one large
    container item with a node of its own."""

    n: int
    starts: list[int]
    offs: list[int]
    kids: dict[int, Ref]


class PagedListNode(msgspec.Struct, array_like=True, tag=11, frozen=True, forbid_unknown_fields=True):
    """A list whose span table is kept in pages (docs/format.md, node types 11 and 12): page p
    (a ``SpanPage`` at ``pages[p]``) holds the spans of items firsts[p].. at bytes
    offs[p]..offs[p + 1], so that opening a long list reads a small node and an item one
    page. It describes the list of the ``ListNode`` its pages make (``whole_list``)."""

    n: int
    firsts: list[int]
    offs: list[int]
    pages: list[Ref]


class SpanPage(msgspec.Struct, array_like=True, tag=12, frozen=True, forbid_unknown_fields=True):
    """A page of a ``PagedListNode``: spans as a ``ListNode``'s (item ``starts`` counted from
    the list's first item, ``offs`` from the list's first byte, one more than ``starts``), with
    ``kids`` referenced from the page's own position."""

    starts: list[int]
    offs: list[int]
    kids: dict[int, Ref]


PAGE_SPANS = 1024  # writers page a list of more spans than this, in pages of this many


class MapNode(msgspec.Struct, array_like=True, tag=2, frozen=True, forbid_unknown_fields=True):
    """A dict with its keys inline: entry j starts at koffs[j], its value at voffs[j] and it
    ends at koffs[j + 1]. ``kids``, ``koffs`` and ``voffs`` are read by name in _speedups.c."""

    keys: list[str | int]
    koffs: list[int]
    voffs: list[int]
    kids: dict[int, Ref]


class CompactMapNode(msgspec.Struct, array_like=True, tag=8, frozen=True, forbid_unknown_fields=True):
    """A ``MapNode`` as compressed archives store it (type 8): the first key's offset and each
    key's and value's length instead of the offsets, which compress to a third. Readers turn
    it into the ``MapNode`` it stands for (``expanded``)."""

    keys: list[str | int]
    first: int
    klens: list[int]
    vlens: list[int]
    kids: dict[int, Ref]

    @classmethod
    def of(cls, node: MapNode) -> CompactMapNode:
        koffs, voffs = node.koffs, node.voffs
        klens = list(map(int.__sub__, voffs, koffs))
        vlens = list(map(int.__sub__, koffs[1:], voffs))
        return cls(keys=node.keys, first=koffs[0], klens=klens, vlens=vlens, kids=node.kids)

    def expanded(self, where: int) -> MapNode:
        n = len(self.keys)
        speedups = accel.speedups
        if speedups is not None and len(self.klens) == n:  # (in C: a node of 1,000 keys 120 -> 8 us)
            got = speedups.expand_map(self.first, self.klens, self.vlens)
            if got is not NotImplemented:
                return MapNode(keys=self.keys, koffs=got[0], voffs=got[1], kids=self.kids)
        if len(self.klens) != n or len(self.vlens) != n or min(self.klens + self.vlens, default=1) < 1:
            raise CorruptedError(f"TOC node at offset {where} is malformed: inconsistent key and value lengths")
        ends = list(accumulate(map(int.__add__, self.klens, self.vlens), initial=self.first))
        voffs = list(map(int.__add__, ends, self.klens))
        return MapNode(keys=self.keys, koffs=ends, voffs=voffs, kids=self.kids)


class HashMapNode(msgspec.Struct, array_like=True, tag=3, frozen=True, forbid_unknown_fields=True):
    """A dict too large to list its keys in one node. Entries are grouped into spans for
    ordered iteration (as in ``ListNode``); a hash index answers one key (docs/format.md)."""

    n: int
    starts: list[int]
    offs: list[int]
    kids: dict[int, Ref]
    kid_keys: dict[str | int, int]  # key of a large value -> its span (read by name in _speedups.c)
    page_bits: int
    offs_width: int  # 4 or 8: bytes per entry offset
    offs_crc: int  # CRC-32 of the entry offset table (checked by verify; lookups check keys)
    index: Ref  # the raw index region: entry offsets, page table, records


class BlockHashMapNode(HashMapNode, tag=6, frozen=True):
    """A ``HashMapNode`` whose index is a block index (docs/format.md, node type 6): records
    name blocks of 2**block_bits entries, ``offs_width`` and ``offs_crc`` are those of the
    block offsets. Every other field means what it does in type 3."""

    block_bits: int


class FuseMapNode(BlockHashMapNode, tag=7, frozen=True):
    """A hash-indexed dict whose index is a fuse (docs/format.md, node type 7; written in
    compressed archives): blocks of 2**block_bits entries as in type 6, found through a binary
    fuse of ``slot_bits``-bit slots (``seg_count`` + 2 segments of 2**seg_bits, keys mixed with
    ``seed``) whose chunks' CRCs have the CRC ``crcs_crc``; ``page_bits`` is 0."""

    slot_bits: int
    seed: int
    seg_bits: int
    seg_count: int
    crcs_crc: int


class SortedMapNode(BlockHashMapNode, tag=9, frozen=True):
    """A big dict whose keys ascend (all str, by code point, or all int), in a compressed
    archive (docs/format.md, node type 9; ``order="sorted"``): blocks of 2**block_bits entries
    as in type 6, found by the first key of each block, listed in the region after the block
    offsets as a msgpack array of ``keys_len`` bytes with CRC ``keys_crc``; ``page_bits`` is 0."""

    keys_len: int
    keys_crc: int


class DirectMapNode(HashMapNode, tag=10, frozen=True):
    """A big dict in a plain archive whose records name each key's entry by its offset, in an
    order found from the node alone (docs/format.md, node type 10; ``format.direct``): a
    lookup reads one run of records and the entry. The fields inherited from type 3 mean:
    ``page_bits`` the group bits, ``offs_width`` the bytes a record, ``offs_crc`` the CRC-32
    of ``groups`` (the first record of each group, then n, u32 LE)."""

    off_bits: int
    chunk: int  # records per chunk (each chunk is followed by its CRC-32)
    lo: int  # a record lies at most lo before ...
    hi: int  # ... and hi after its key's estimate
    entry_read: int  # how much a lookup's first read of an entry asks for (a hint: format.direct)
    groups: bytes


class StrideNode(msgspec.Struct, array_like=True, tag=4, frozen=True, forbid_unknown_fields=True):
    """A list whose items all have one encoded size, nested as deep as that holds.
    dims[d] = (header size, item count, item stride) at depth d; the innermost items are
    scalars of ``dims[-1][2]`` bytes. Sub-lists of at least ``lazy_min`` bytes are returned
    lazily."""

    dims: list[tuple[int, int, int]]
    lazy_min: int


class ArrayNode(msgspec.Struct, array_like=True, tag=5, frozen=True, forbid_unknown_fields=True):
    """A NumPy array stored as an msgpack extension value (type ``ARRAY_EXT``): its element
    data starts ``head`` bytes after the value's first byte and is ``size`` bytes long. The
    dtype and shape are in the value's own header, read when the array is opened."""

    head: int
    size: int


Node = (
    ListNode
    | PagedListNode
    | MapNode
    | HashMapNode
    | BlockHashMapNode
    | FuseMapNode
    | SortedMapNode
    | DirectMapNode
    | StrideNode
    | ArrayNode
)


def exact_key(x: Any) -> str | int:
    """A dict key of a str or int subclass (``numpy.str_``...) as the exact str or int that
    msgspec writes for it in a dict, for the encoders that write keys as values (nodes'
    key lists, keys written one by one): msgspec refuses such values."""
    if isinstance(x, str):
        return str.__str__(x)
    if isinstance(x, int) and not isinstance(x, bool):
        return int.__index__(x)
    raise NotImplementedError


_node_encoder = msgspec.msgpack.Encoder(enc_hook=exact_key)


_node_decoder: msgspec.msgpack.Decoder[Node | CompactMapNode] = msgspec.msgpack.Decoder(Node | CompactMapNode)


def frame_node(node: Node | CompactMapNode | SpanPage) -> bytes:
    payload = _node_encoder.encode(node)
    return payload + U32.pack(zlib.crc32(payload))


def _payload(buf: bytes | memoryview, where: int) -> bytes | memoryview:
    """The payload of a framed node read from absolute offset ``where``, its CRC checked."""
    if len(buf) < 5:
        raise CorruptedError(f"TOC node at offset {where} is {len(buf)} bytes, too short")
    payload = buf[:-4]
    if zlib.crc32(payload) != U32.unpack_from(buf, len(buf) - 4)[0]:
        raise CorruptedError(f"TOC node checksum mismatch at offset {where}")
    return payload


def unframe_node(buf: bytes | memoryview, where: int) -> Node:
    """Check the CRC of a framed node read from absolute offset ``where`` and decode it."""
    payload = _payload(buf, where)
    try:
        node = _node_decoder.decode(payload)
        return node.expanded(where) if isinstance(node, CompactMapNode) else node
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError) as e:
        kind = _node_type(payload)
        if kind is not None and kind not in _NODE_TYPES:
            raise UnsupportedVersionError(
                f"TOC node at offset {where} has type {kind}, unknown to this msglc (written by a newer version?)"
            ) from None
        raise CorruptedError(
            f"TOC node at offset {where} is malformed: {'nested too deeply' if isinstance(e, RecursionError) else e}"
        ) from None


_page_decoder = msgspec.msgpack.Decoder(SpanPage)


def unframe_page(buf: bytes | memoryview, where: int) -> SpanPage:
    """``unframe_node`` for a page of a paged list (type 12), which is read only as one."""
    payload = _payload(buf, where)
    try:
        return _page_decoder.decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        raise CorruptedError(
            f"TOC node at offset {where} is not the span page (type 12) its paged list names"
        ) from None


def span_end(node: ListNode | HashMapNode, k: int) -> int:
    """The item after span ``k``'s last: the next span's first, or ``n``."""
    starts = node.starts
    return starts[k + 1] if k + 1 < len(starts) else node.n


def page_bounds(node: PagedListNode, p: int) -> int:
    """The item after page ``p``'s last (the next page's first, or ``n``)."""
    return node.firsts[p + 1] if p + 1 < len(node.firsts) else node.n


def check_page(page: SpanPage, node: PagedListNode, p: int, where: int) -> ListNode:
    """A page (at ``where``) must hold spans of a list as type 1 says, between where its
    paged node says it begins and the next page begins. Returns its spans as a ``ListNode``
    whose ``n`` is the item after the page (its last span's end; not a list's node)."""
    starts, offs, kids = page.starts, page.offs, page.kids
    end, spans = page_bounds(node, p), len(starts)
    bad = None
    if not starts or len(offs) != spans + 1:
        bad = f"{spans} spans and {len(offs)} offsets"
    elif starts[0] != node.firsts[p] or starts[-1] >= end:
        bad = f"items {starts[0]} to {starts[-1]}, where the page holds {node.firsts[p]} to {end - 1}"
    elif offs[0] != node.offs[p] or offs[-1] != node.offs[p + 1]:
        bad = f"bytes {offs[0]} to {offs[-1]}, where the page holds {node.offs[p]} to {node.offs[p + 1]}"
    elif not (_increasing(starts) and _increasing(offs)):
        bad = "spans that do not rise"
    elif not all(0 <= k < spans and starts[k] + 1 == (starts[k + 1] if k + 1 < spans else end) for k in kids):
        bad = "a kid on a span of other than one item"
    if bad:
        raise CorruptedError(f"TOC node at offset {where}, span page {p} of its paged list, is malformed: {bad}")
    return ListNode(n=end, starts=starts, offs=offs, kids=kids)


def page_of(node: PagedListNode, i: int) -> int:
    """The page holding item ``i`` (0 <= i < n)."""
    return bisect_right(node.firsts, i) - 1


def joined_pages(pages: Sequence[ListNode]) -> ListNode:
    """Consecutive pages (as ``check_page`` gives them) as one span table of the items they
    hold, without their kids (``n``: the item after the last page)."""
    starts = [s for page in pages for s in page.starts]
    offs = [o for page in pages for o in page.offs[:-1]]
    return ListNode(n=pages[-1].n, starts=starts, offs=[*offs, pages[-1].offs[-1]], kids={})


def whole_list(node: PagedListNode, pos: int, pages: Sequence[tuple[int, ListNode]]) -> ListNode:
    """The ``ListNode`` the paged list at ``pos`` describes, from its pages (each with its
    position, as ``check_page`` gives them): their spans in order, kid references made
    relative to ``pos``."""
    spans = joined_pages([page for _, page in pages])
    kids: dict[int, Ref] = {}
    first = 0  # the span each page's spans are counted from
    for page_pos, page in pages:
        shift = pos - page_pos
        kids.update({first + k: (back + shift, size) for k, (back, size) in page.kids.items()})
        first += len(page.starts)
    return msgspec.structs.replace(spans, kids=kids)


def paged_spans(toc: bytes | bytearray | memoryview, pos: int, node: PagedListNode) -> ListNode:
    """``whole_list`` of the paged list at ``pos`` in the TOC bytes ``toc`` (positions are
    offsets in it), its pages unframed and checked from there: for the writers and tools that
    hold a TOC whole."""
    pages = []
    for p, (back, size) in enumerate(node.pages):
        at = pos - back
        if back <= 0 or at < 0 or at + size > pos:
            raise CorruptedError(f"TOC node at offset {pos} references a node at {at} that does not precede it")
        pages.append((at, check_page(unframe_page(memoryview(toc)[at : at + size], at), node, p, at)))
    return whole_list(node, pos, pages)


_NODE_TYPES = {
    cls.__struct_config__.tag
    for cls in (
        SpanPage,
        PagedListNode,
        ListNode,
        MapNode,
        HashMapNode,
        BlockHashMapNode,
        FuseMapNode,
        SortedMapNode,
        DirectMapNode,
        StrideNode,
        ArrayNode,
        CompactMapNode,
    )
}


def _node_type(payload: bytes | memoryview) -> int | None:
    try:
        value = msgspec.msgpack.decode(payload)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    return value[0] if isinstance(value, list) and value and type(value[0]) is int else None


def node_span(node: Node) -> int:
    """The encoded length of the container a node describes."""
    if isinstance(node, StrideNode):
        h, n, s = node.dims[0]
        return h + n * s
    if isinstance(node, MapNode):
        return node.koffs[-1]
    if isinstance(node, ArrayNode):
        return node.head + node.size
    return node.offs[-1]


def _increasing(xs: list[int]) -> bool:
    """Whether ``xs`` rises strictly: in C when it can (a span table of 12,000 spans is 1 ms of
    an open in Python)."""
    speedups = accel.speedups
    if speedups is not None:
        got = speedups.increasing(xs)
        if got is not NotImplemented:
            return bool(got)
    return all(map(int.__lt__, xs, xs[1:]))


def check_node(node: Node, where: int, toc_off: int) -> dict[str | int, int] | None:
    """Structural checks, once per decoded node at absolute offset ``where``, so that later
    arithmetic on it stays in bounds (every offset is then also checked against the
    container's length, and the container's header against the node). Returns an inline
    dict's key map (each key's index), made to find a key listed twice and kept for lookups."""
    if isinstance(node, MapNode):
        return _check_map(node, where)
    bad = None
    if isinstance(node, ArrayNode):
        if not (3 <= node.head <= 6 + 4 + (1 << 20) and 0 <= node.size):  # ext header, H, header of at most 1 MiB
            bad = f"array head {node.head}, size {node.size}"
    elif isinstance(node, StrideNode):
        if not node.dims or node.lazy_min < 0:
            bad = "empty dims"
        else:
            for (h, n, s), inner in zip(node.dims, [*node.dims[1:], None], strict=True):
                if (
                    not 1 <= h <= 5
                    or not 0 < n < 2**32
                    or s < 1
                    or (inner is not None and s != inner[0] + inner[1] * inner[2])
                ):
                    bad = f"inconsistent dims {node.dims}"
                    break
    elif isinstance(node, PagedListNode):
        pages = len(node.firsts)
        ok = pages > 0 and len(node.offs) == pages + 1 and len(node.pages) == pages and node.firsts[0] == 0
        ok = ok and node.firsts[-1] < node.n < 2**32 and node.n <= node.offs[-1] - node.offs[0]
        ok = ok and 1 <= node.offs[0] <= 5 and _increasing(node.firsts) and _increasing(node.offs)
        if not ok:
            bad = "inconsistent pages"
    else:  # ListNode, HashMapNode: spans
        ok = len(node.offs) == len(node.starts) + 1 and bool(node.starts)
        ok = ok and node.starts[0] == 0 and 1 <= node.offs[0] <= 5
        ok = ok and node.starts[-1] < node.n < 2**32 and node.n <= node.offs[-1] - node.offs[0]
        ok = ok and _increasing(node.starts) and _increasing(node.offs)
        spans = len(node.starts)
        ok = ok and all(
            0 <= k < spans and node.starts[k] + 1 == (node.starts[k + 1] if k + 1 < spans else node.n)
            for k in node.kids
        )
        if isinstance(node, HashMapNode):
            back, size = node.index
            region = index_size(node) if 0 <= node.page_bits <= 31 else -1
            widths = range(1, 9) if isinstance(node, DirectMapNode) else (4, 8)
            ok = ok and node.offs_width in widths and size == region and set(node.kid_keys.values()) == set(node.kids)
            ok = ok and len(node.kid_keys) == len(node.kids)  # one key per span: a span is one entry
            ok = ok and back > 0 and where - back >= toc_off and where - back + size <= where
        if not ok:
            bad = "inconsistent spans"
    if bad:
        raise CorruptedError(f"TOC node at offset {where} is malformed: {bad}")
    return None


def _entries_in_order(koffs: list[int], voffs: list[int]) -> bool:
    """Whether each key lies before its value and each value before the next key (koffs has
    one more: the end): in C when it can."""
    speedups = accel.speedups
    if speedups is not None:
        got = speedups.entries_in_order(koffs, voffs)
        if got is not NotImplemented:
            return bool(got)
    return _increasing([*chain.from_iterable(zip(koffs, voffs, strict=False)), koffs[-1]])


def _check_map(node: MapNode, where: int) -> dict[str | int, int]:
    """``check_node`` for an inline dict: entries in order (each key before its value, each
    value before the next key), kids naming entries, no key twice."""
    keys, koffs, voffs, kids = node.keys, node.koffs, node.voffs, node.kids
    n = len(keys)
    ok = len(koffs) == n + 1 and len(voffs) == n and n > 0 and 1 <= koffs[0] <= 5
    ok = ok and _entries_in_order(koffs, voffs)
    if not ok or (kids and not (0 <= min(kids) and max(kids) < n)):
        raise CorruptedError(f"TOC node at offset {where} is malformed: inconsistent key offsets")
    index = dict(zip(keys, range(n), strict=True))
    if len(index) != n:
        raise CorruptedError(f"TOC node at offset {where} is malformed: a key listed twice")
    return index


def index_size(node: HashMapNode) -> int:
    """The size of a hash-indexed dict's index region (-1 for a block size out of bounds)."""
    if isinstance(node, DirectMapNode):
        return direct_size(node)
    if isinstance(node, SortedMapNode):
        blocks = block_count(node.n, node.block_bits) if 0 <= node.block_bits <= READ_MAX_BLOCK_BITS else 0
        if not blocks or node.page_bits or node.keys_len < 1:
            return -1
        return (blocks + 1) * node.offs_width + node.keys_len
    if isinstance(node, FuseMapNode):
        blocks = block_count(node.n, node.block_bits) if 0 <= node.block_bits <= READ_MAX_BLOCK_BITS else 0
        if not (
            blocks
            and node.page_bits == 0
            and 1 <= node.slot_bits <= 32  # (before the shift below: a negative one raises ValueError)
            and blocks <= 1 << node.slot_bits
            and 0 <= node.seg_bits <= MAX_SEG_BITS
            and 1 <= node.seg_count <= 1 << 32
            and slot_count(node.seg_bits, node.seg_count) >= node.n
            and 0 <= node.seed < 1 << 64
        ):
            return -1
        return fuse_layout(node.n, node.block_bits, node.offs_width, node.slot_bits, node.seg_bits, node.seg_count)[2]
    if isinstance(node, BlockHashMapNode):
        if not 0 <= node.block_bits <= READ_MAX_BLOCK_BITS:
            return -1
        return block_layout(node.n, node.page_bits, node.offs_width, node.block_bits)[2]
    return region_layout(node.n, node.page_bits, node.offs_width)[2]


def direct_size(node: DirectMapNode) -> int:
    """The size of a type-10 index region; -1 when the node's fields do not fit together
    (docs/format.md, type 10)."""
    g, groups, n = node.page_bits, node.groups, node.n
    ok = 0 <= g <= direct.MAX_GROUP_BITS and len(groups) == 4 * ((1 << g) + 1)
    ok = ok and 1 <= node.offs_width <= 8 and 1 <= node.off_bits < 8 * node.offs_width
    ok = ok and node.chunk >= 1 and node.lo >= 0 and node.hi >= 0 and node.entry_read >= 0
    if not ok or zlib.crc32(groups) != node.offs_crc:
        return -1
    firsts = le_view("I", groups)
    if firsts[0] != 0 or firsts[-1] != n or not _rising(firsts):
        return -1
    return direct.region_size(n, node.offs_width, node.chunk)


def _rising(xs: Sequence[int]) -> bool:
    """Whether ``xs`` never decreases."""
    return all(map(int.__le__, xs, xs[1:]))


def stride_headers(node: StrideNode) -> bytes | None:
    """The bytes a fixed-stride list starts with: its header, its first row's, that row's first
    row's and so on (the rows' headers are alike at each depth, which ``verify`` checks for
    every row); None if a count does not fit its header size. A lazy view reads them in one
    piece, so a node whose nesting does not match the data is refused."""
    out = b""
    for h, n, _ in node.dims:
        if h == 1 and n < 16:
            out += bytes((0x90 | n,))
        elif h in (3, 5) and n < 1 << 8 * (h - 1):
            out += (b"\xdc" if h == 3 else b"\xdd") + n.to_bytes(h - 1, "big")
        else:
            return None
    return out


def node_header(node: ListNode | PagedListNode | MapNode | HashMapNode | StrideNode) -> tuple[bool, int, int]:
    """The (is_map, item count, header size) the container of ``node`` must start with (an
    ``ArrayNode`` describes an extension value, not a container)."""
    if isinstance(node, StrideNode):
        return False, node.dims[0][1], node.dims[0][0]
    if isinstance(node, MapNode):
        return True, len(node.keys), node.koffs[0]
    return isinstance(node, HashMapNode), node.n, node.offs[0]
