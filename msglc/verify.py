"""Check a whole archive: the data checksum, and every TOC node against the data it describes.

Lazy reads check what they touch (node CRCs, bounds, container headers, keys). ``verify``
is the thorough pass for archives fetched from cold storage: it reads the data section once
and rebuilds each node's content from the bytes with the writer's own functions, so a TOC that
passes its checksums but does not describe its data is reported too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from .arrays import parse_head
from .bulk import data_crc32
from .errors import CorruptedError
from .format import ArrayNode, HashMapNode, ListNode, MapNode, StrideNode, container_header
from .indexer import MAP_INLINE_MAX, STRIDE_LAZY_MIN, TocBuilder, item_layout, list_raws, map_raws, stride_dims

if TYPE_CHECKING:
    from .reader import Archive

_key_decoder = msgspec.msgpack.Decoder(str | int)


def verify_archive(a: Archive) -> None:
    t = a.trailer
    data = bytes(a.read(t.data_off, t.data_len))
    if data_crc32()(data) != t.data_crc:
        raise CorruptedError(f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off})")
    if not t.root_len:
        a.decode(data, t.data_off)
        return
    a.view(t.data_off, t.data_len, t.toc_off + t.root_pos, t.root_len)  # checks header and span
    builder = TocBuilder(data, t.threshold)
    stack = [(0, len(data), t.toc_off + t.root_pos, t.root_len)]
    while stack:
        start, end, pos, size = stack.pop()
        node = a.node(pos, size)
        children, region = _check(builder, node, start, end, f"TOC node at offset {pos}")
        if region is not None and bytes(a.read(pos - node.index[0], node.index[1])) != region:
            raise CorruptedError(f"hash index of the TOC node at offset {pos} does not match its dict")
        for k, (child_start, child_end) in children.items():
            child = a.child(t.data_off + child_start, child_end - child_start, pos, node.kids[k])
            stack.append((child_start, child_end, child._pos, node.kids[k][1]))


def _check(b: TocBuilder, node: Any, start: int, end: int, where: str) -> tuple[dict[int, tuple[int, int]], bytes | None]:
    """Compare ``node`` with what the writer builds for data[start:end]. Returns the data span
    of each child node (by its key in ``node.kids``) and, for a hash-indexed dict, the index
    region the writer would write."""
    data = memoryview(b.buf)
    if isinstance(node, ArrayNode):
        _, _, head = parse_head(data[start:end], start, end - start)
        if (node.head, node.size) != (head, end - start - head):
            raise CorruptedError(f"{where} does not describe the NumPy array at data offset {start}")
        return {}, None
    is_map, n, h = container_header(data[start : start + 5])
    if isinstance(node, StrideNode):
        expected = stride_dims(b.buf, start, h, n, end)
        if is_map or expected is None or [tuple(d) for d in node.dims] != expected or node.lazy_min != min(b.threshold, STRIDE_LAZY_MIN):
            raise CorruptedError(f"{where} does not describe the fixed-stride list at data offset {start}")
        return {}, None
    if is_map:
        raws = map_raws(b.buf, start, h, end, n)
        lens, offs = item_layout(raws, h)
        koffs, voffs, lens = offs[0::2], offs[1::2], lens[1::2]
    else:
        raws = list_raws(b.buf, start, end)
        lens, koffs = item_layout(raws, h)
        voffs = koffs
    big = b.big_children(start, voffs, lens)
    if isinstance(node, MapNode):
        keys = [_key_decoder.decode(r) for r in raws[0::2]]
        if (
            not is_map
            or n > MAP_INLINE_MAX
            or node.keys != keys
            or node.koffs != koffs
            or node.voffs != voffs
            or set(node.kids) != set(big)
        ):
            raise CorruptedError(f"{where} does not describe the dict at data offset {start}")
        return {j: (start + voffs[j], start + koffs[j + 1]) for j in node.kids}, None
    starts, offs, span_kids = b._spans(koffs, n, dict.fromkeys(big))
    if (
        node.n != n
        or node.starts != starts
        or node.offs != offs
        or set(node.kids) != set(span_kids)
        or is_map != isinstance(node, HashMapNode)
    ):
        raise CorruptedError(f"{where} does not describe the {'dict' if is_map else 'list'} at data offset {start}")
    children = {k: (start + voffs[starts[k]], start + koffs[starts[k] + 1]) for k in node.kids}
    if isinstance(node, ListNode):
        return children, None
    kid_keys = {_key_decoder.decode(raws[2 * starts[k]]): k for k in span_kids}
    scratch = TocBuilder(b"", b.threshold)
    _, length, page_bits, width, offs_crc = scratch._hash_index(raws[0::2], koffs)
    if (
        n <= MAP_INLINE_MAX
        or node.kid_keys != kid_keys
        or (node.page_bits, node.offs_width, node.offs_crc, node.index[1]) != (page_bits, width, offs_crc, length)
    ):
        raise CorruptedError(f"{where} does not describe the dict at data offset {start}")
    return children, bytes(scratch.toc)
