"""A plain archive's TOC taken apart and laid out again, every reference and CRC recomputed."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import msgspec

from msglc.format.fuse import fuse_layout
from msglc.format.hash_index import block_count
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, Trailer, unpack_trailer
from msglc.format.nodes import (
    BlockHashMapNode,
    CompactMapNode,
    DirectMapNode,
    FuseMapNode,
    HashMapNode,
    MapNode,
    PagedListNode,
    frame_node,
    unframe_node,
    unframe_page,
)

# ---- the TOC, laid out again ----------------------------------------------------------------------


@dataclass
class TocItem:
    pos: int  # absolute offset in the archive
    size: int
    kind: str  # "node", "page" (of a paged list), "region" (a hash index) or "gap" (bytes nothing refers to)
    node: Any = None
    owner: int = -1  # for a region: the position of its node
    compact: bool = False  # a dict node stored as type 8 (key and value lengths): laid out again so


def toc_layout(data: bytes) -> tuple[list[TocItem], int] | None:
    """The TOC of a valid archive as items in file order, with the root's position; None if
    it has no nodes or its items overlap (nothing to lay out again)."""
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), data[:HEADER_SIZE])
    if not t.root_len:
        return None
    root = t.toc_off + t.root_pos
    items: dict[int, TocItem] = {}
    stack = [(root, t.root_len)]
    while stack:
        pos, size = stack.pop()
        if pos in items:
            continue
        node = unframe_node(data[pos : pos + size], pos)
        compact = isinstance(node, MapNode) and msgspec.msgpack.decode(data[pos : pos + size - 4])[0] == 8
        items[pos] = TocItem(pos, size, "node", node, compact=compact)
        for back, length in getattr(node, "kids", {}).values():
            stack.append((pos - back, length))
        for back, length in node.pages if isinstance(node, PagedListNode) else ():
            at = pos - back
            page = unframe_page(data[at : at + length], at)
            items[at] = TocItem(at, length, "page", page, owner=pos)
            stack.extend((at - b, n) for b, n in page.kids.values())
        if isinstance(node, HashMapNode):
            at = pos - node.index[0]
            items[at] = TocItem(at, node.index[1], "region", owner=pos)
    ordered = sorted(items.values(), key=lambda it: it.pos)
    out: list[TocItem] = []
    here = t.toc_off
    for it in ordered:
        if it.pos < here:
            return None
        if it.pos > here:
            out.append(TocItem(here, it.pos - here, "gap"))
        out.append(it)
        here = it.pos + it.size
    if here < t.toc_off + t.toc_len:
        out.append(TocItem(here, t.toc_off + t.toc_len - here, "gap"))
    return out, root


def relayout(data: bytes, items: list[TocItem], root: int, edit: Any = None) -> bytes:
    """The archive with its TOC written again item by item: every child reference and index
    reference recomputed, each node framed with its CRC, the trailer's TOC fields and CRC
    recomputed. ``edit(item, node, new_pos, new_len, here)`` may return an item's new bytes
    (None: unchanged) and sees the new positions of everything before it."""
    header = data[:HEADER_SIZE]
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), header)
    new_pos: dict[int, int] = {}
    new_len: dict[int, int] = {}
    region_bytes: dict[int, bytes] = {}  # owner node -> its region's new bytes
    out = bytearray()
    for it in items:
        here = t.toc_off + len(out)
        new_pos[it.pos] = here
        blob = None
        if it.kind in ("node", "page"):
            node = it.node
            if getattr(node, "kids", None):
                node = msgspec.structs.replace(
                    node, kids={k: (here - new_pos[it.pos - b], new_len[it.pos - b]) for k, (b, _) in node.kids.items()}
                )
            if isinstance(node, PagedListNode):
                pages = [(here - new_pos[it.pos - b], new_len[it.pos - b]) for b, _ in node.pages]
                node = msgspec.structs.replace(node, pages=pages)
            if isinstance(node, HashMapNode):
                at = it.pos - node.index[0]
                node = msgspec.structs.replace(node, index=(here - new_pos[at], new_len[at]))
                if it.pos in region_bytes:  # an edited region: its CRCs in the node follow it
                    node = region_crcs(node, region_bytes[it.pos])
            if edit is not None:
                blob = edit(it, node, new_pos, new_len, here)
            if blob is None:
                blob = frame_node(CompactMapNode.of(node) if it.compact else node)
        else:
            if edit is not None:
                blob = edit(it, None, new_pos, new_len, here)
            if blob is None:
                blob = data[it.pos : it.pos + it.size]
            elif it.kind == "region":
                region_bytes[it.owner] = blob
        out += blob
        new_len[it.pos] = len(blob)
    fields = msgspec.structs.astuple(t)
    t2 = Trailer(
        fields[0], fields[1], fields[2], len(out), new_pos[root] - t.toc_off, new_len[root], fields[6], fields[7]
    )
    return data[: t.toc_off] + bytes(out) + t2.pack(header)


def region_crcs(node: HashMapNode, region: bytes) -> HashMapNode:
    """``node`` with the CRCs it holds of its index ``region`` computed from it: the entry or
    block offsets' (``offs_crc``), and a fuse's chunk CRCs' (``crcs_crc``); a direct index
    (type 10) holds none of its region (its chunks carry their own)."""
    if isinstance(node, DirectMapNode):
        return node
    width = node.offs_width
    count = block_count(node.n, node.block_bits) if isinstance(node, BlockHashMapNode) else node.n
    node = msgspec.structs.replace(node, offs_crc=zlib.crc32(region[: (count + 1) * width]))
    if isinstance(node, FuseMapNode):
        crcs, slots, _ = fuse_layout(node.n, node.block_bits, width, node.slot_bits, node.seg_bits, node.seg_count)
        node = msgspec.structs.replace(node, crcs_crc=zlib.crc32(region[crcs:slots]))
    return node
