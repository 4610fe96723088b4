"""Check a whole archive: the data checksum, and every TOC node against the data it describes.

Lazy reads check what they touch (node CRCs, bounds, container headers, keys). ``verify``
is the thorough pass for archives fetched from cold storage: it reads the data section once
and checks every node against the item boundaries, keys and headers found in the bytes (with
the writer's own functions), so a TOC that passes its checksums but does not describe its data
is reported too. The checks do not depend on the threshold: the parts of a combined archive
may have been written with different ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from .arrays import parse_head
from .bulk import data_crc32
from .errors import CorruptedError
from .format import ArrayNode, HashMapNode, ListNode, MapNode, StrideNode, container_header, gets_node
from .indexer import MAP_INLINE_MAX, TocBuilder, item_layout, list_raws, map_raws, stride_dims

if TYPE_CHECKING:
    from .reader import Archive

_key_decoder = msgspec.msgpack.Decoder(str | int)
CHUNK = 1 << 24


def verify_archive(a: Archive, progress: Callable[[int], None] | None = None) -> None:
    t = a.trailer
    data = bytearray(t.data_len)
    view = memoryview(data)
    crc32, crc = data_crc32(), 0
    for offset in range(0, t.data_len, CHUNK):  # in pieces, to report progress
        piece = view[offset : offset + CHUNK]
        piece[:] = a.read(t.data_off + offset, len(piece))
        crc = crc32(piece, crc)
        if progress is not None:
            progress(len(piece))
    if crc != t.data_crc:
        raise CorruptedError(f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off})")
    if not t.root_len:
        a.decode(data, t.data_off)
        return
    a.view(t.data_off, t.data_len, t.toc_off + t.root_pos, t.root_len)  # checks header and span
    stack = [(0, len(data), t.toc_off + t.root_pos, t.root_len)]
    while stack:
        start, end, pos, size = stack.pop()
        node = a.node(pos, size)
        children, region = _check(data, node, start, end, f"TOC node at offset {pos}")
        if region is not None and bytes(a.read(pos - node.index[0], node.index[1])) != region:
            raise CorruptedError(f"hash index of the TOC node at offset {pos} does not match its dict")
        for k, (child_start, child_end) in children.items():
            child = a.child(t.data_off + child_start, child_end - child_start, pos, node.kids[k])
            stack.append((child_start, child_end, child._pos, node.kids[k][1]))


def _check(data: bytes | bytearray, node: Any, start: int, end: int, where: str) -> tuple[dict[int, tuple[int, int]], bytes | None]:
    """Check ``node`` against the container at data[start:end]. Returns the data span of each
    child node (by its key in ``node.kids``) and, for a hash-indexed dict, the index region
    the writer writes for it."""
    view = memoryview(data)
    if isinstance(node, ArrayNode):
        _, _, head = parse_head(view[start:end], start, end - start)
        if (node.head, node.size) != (head, end - start - head):
            raise CorruptedError(f"{where} does not describe the NumPy array at data offset {start}")
        return {}, None
    is_map, n, h = container_header(view[start : start + 5])
    if isinstance(node, StrideNode):
        if is_map or [tuple(d) for d in node.dims] != stride_dims(data, start, h, n, end):
            raise CorruptedError(f"{where} does not describe the fixed-stride list at data offset {start}")
        return {}, None
    if is_map:
        raws = map_raws(data, start, h, end, n)
        _, offs = item_layout(raws, h)
        koffs, voffs = offs[0::2], offs[1::2]
    else:
        raws = list_raws(data, start, end)
        _, koffs = item_layout(raws, h)
        voffs = koffs
    if isinstance(node, MapNode):
        keys = [_key_decoder.decode(r) for r in raws[0::2]]
        if (
            not is_map
            or n > MAP_INLINE_MAX
            or node.keys != keys
            or node.koffs != koffs
            or node.voffs != voffs
            or not _kids_ok(data, start, voffs, node.kids)
        ):
            raise CorruptedError(f"{where} does not describe the dict at data offset {start}")
        return {j: (start + voffs[j], start + koffs[j + 1]) for j in node.kids}, None
    # spans: every span starts at an item boundary; a kid span is one item with a node of its own
    entries = [node.starts[k] for k in node.kids]
    if (
        node.n != n
        or is_map != isinstance(node, HashMapNode)
        or node.offs != [koffs[i] for i in node.starts] + [koffs[n]]
        or not _kids_ok(data, start, voffs, dict.fromkeys(entries))
    ):
        raise CorruptedError(f"{where} does not describe the {'dict' if is_map else 'list'} at data offset {start}")
    children = {k: (start + voffs[node.starts[k]], start + koffs[node.starts[k] + 1]) for k in node.kids}
    if isinstance(node, ListNode):
        return children, None
    kid_keys = {_key_decoder.decode(raws[2 * node.starts[k]]): k for k in node.kids}
    scratch = TocBuilder(b"", 0)
    _, length, page_bits, width, offs_crc = scratch._hash_index(raws[0::2], koffs)
    if (
        n <= MAP_INLINE_MAX
        or node.kid_keys != kid_keys
        or (node.page_bits, node.offs_width, node.offs_crc, node.index[1]) != (page_bits, width, offs_crc, length)
    ):
        raise CorruptedError(f"{where} does not describe the dict at data offset {start}")
    return children, bytes(scratch.toc)


def _kids_ok(data: bytes, start: int, voffs: list[int], kids: dict) -> bool:
    """Every child with a node is an array, a map or a NumPy array."""
    return all(gets_node(data, start + voffs[j]) for j in kids)
