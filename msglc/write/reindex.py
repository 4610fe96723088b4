"""A TOC built from an encoded data section alone: no object, no recursion.

Repacking an archive with another threshold or compression keeps its data bytes as they are
and needs only a new TOC. ``TocBuilder`` builds one from an object and its encoding, following
the object's nesting with Python's recursion; an archive may nest deeper than that (``combine``
nests its inputs one level deeper each time). ``reindex`` builds the same nodes from the bytes
with a loop: the containers that need a node are found as ``TocBuilder`` finds them (the C
accelerator's item scans, else ``msgspec.Raw`` items, else ``walk.item_ends`` for items nested
deeper than msgspec skips), children before parents, in the same order, so the TOC is the one
``dump`` of the decoded value writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from msglc.format.hash_index import MAP_INLINE_MAX, le_array
from msglc.format.msgpack import array_header, container_header, container_header_size, gets_node, scalar_size
from msglc.format.nodes import ArrayNode, MapNode, StrideNode
from msglc.format.numpy_ext import parse_head
from msglc.format.strides import STRIDE_LAZY_MIN, stride_dims
from msglc.format.walk import item_ends
from msglc.util import accel
from msglc.write.indexer import TocBuilder, item_layout, list_raws, map_raws

_keys_decoder: msgspec.msgpack.Decoder[list[str | int]] = msgspec.msgpack.Decoder(list[str | int])


@dataclass
class _Open:
    """A container whose node waits for its children's: where it is, how it is laid out, and
    the children still to index (label, start, end) with the nodes indexed so far."""

    a: int
    kind: str  # "list", "map" (inline), "hash" (Python) or "hash-c" (C arrays)
    n: int
    offs: Any  # item offsets from ``a`` (lists) or entry offsets (dicts), plus the end
    children: list[tuple[int, int, int]]
    voffs: list[int] = field(default_factory=list)
    keys: list[Any] = field(default_factory=list)
    extra: Any = None  # a hash-indexed dict's key encodings (Python), or what its index is built from (C)
    refs: dict[int, tuple[int, int]] = field(default_factory=dict)
    next: int = 0
    label: int = 0


def reindex(
    buf: bytes, threshold: int, block_bytes: int, fuse: bool = False, direct: bool = False
) -> tuple[bytearray, tuple[int, int], list[tuple[int, ...]]]:
    """The TOC of the data section ``buf`` under ``threshold`` (its bytes, the root node's
    position and length, or (0, 0) for a root without one, and its index regions); ``fuse``
    and ``direct``: as ``TocBuilder``'s."""
    builder = TocBuilder(buf, threshold, block_bytes=block_bytes, fuse=fuse, direct=direct)
    root = builder.with_fuses_meanwhile(lambda: _index(builder))
    return builder.toc, root, builder.regions


def _index(builder: TocBuilder) -> tuple[int, int]:
    """Index the whole data section with ``builder``: the root node's position and length,
    or (0, 0) for a root without one."""
    first = _open(builder, 0, len(builder.buf))
    if not isinstance(first, _Open):
        return first or (0, 0)
    stack = [first]
    while True:
        top = stack[-1]
        if top.next < len(top.children):
            label, a, b = top.children[top.next]
            top.next += 1
            got = _open(builder, a, b)
            if isinstance(got, _Open):
                got.label = label
                stack.append(got)
            elif got is not None:
                top.refs[label] = got
            continue
        stack.pop()
        ref = _close(builder, top)
        if not stack:
            return ref
        stack[-1].refs[top.label] = ref


def _open(builder: TocBuilder, a: int, b: int) -> _Open | tuple[int, int] | None:
    """The container at buf[a:b]: None when it needs no node, its node when it has no
    children to index first (a fixed-stride list, a NumPy array), else its layout."""
    buf = builder.buf
    if b - a <= builder.whole or not gets_node(buf, a):
        return None
    h = container_header_size(buf[a])
    if not h:  # a NumPy array
        _, _, start, _ = parse_head(memoryview(buf)[a:b], a, b - a)
        return builder.add_node(ArrayNode(head=start, size=b - a - start))
    is_map, n, h = container_header(memoryview(buf)[a : a + h])
    if not is_map:
        dims = stride_dims(buf, a, h, n, b)
        if dims is not None:
            return builder.add_node(StrideNode(dims=dims, lazy_min=min(builder.whole + 1, STRIDE_LAZY_MIN)))
        return _open_list(builder, a, b, h, n)
    return _open_map(builder, a, b, h, n)


def _item_offsets(buf: bytes, a: int, h: int, b: int, items: int, raws: Any) -> tuple[list[int], list[int]]:
    """Item lengths and offsets from ``a`` (plus the end), from ``raws()`` (msgspec) or, for
    items nested deeper than msgspec skips, from the walk."""
    try:
        return item_layout(raws(), h)
    except RecursionError:
        offs = [h, *(end - a for end in item_ends(buf, a + h, b, items))]
        return [y - x for x, y in zip(offs, offs[1:], strict=False)], offs


def _open_list(builder: TocBuilder, a: int, b: int, h: int, n: int) -> _Open:
    buf, speedups = builder.buf, accel.speedups
    if speedups is not None:
        offs_bytes, big = speedups.list_index(buf, a + h, n, a, builder.whole)
        return _Open(a, "list", n, le_array("Q", offs_bytes), [(j, a + s, a + e) for j, s, e in big])
    lens, offs = _item_offsets(buf, a, h, b, n, lambda: list_raws(buf, a, b))
    return _Open(a, "list", n, offs, [(j, a + offs[j], a + offs[j + 1]) for j in builder.big_children(a, offs, lens)])


def _open_map(builder: TocBuilder, a: int, b: int, h: int, n: int) -> _Open:
    buf, speedups = builder.buf, accel.speedups
    if n > MAP_INLINE_MAX and speedups is not None:
        entry_offs, index, big = builder.walk_big_map(a + h, n, a)
        children = [(e, a + s, a + end) for e, s, end in big]
        return _Open(a, "hash-c", n, entry_offs, children, extra=index)
    lens, offs = _item_offsets(buf, a, h, b, 2 * n, lambda: map_raws(buf, a, h, b, n))
    koffs, voffs = offs[0::2], offs[1::2]
    key_raws = [buf[a + k : a + v] for k, v in zip(koffs, voffs, strict=False)]
    children = [(j, a + voffs[j], a + koffs[j + 1]) for j in builder.big_children(a, voffs, lens[1::2])]
    kind = "map" if n <= MAP_INLINE_MAX else "hash"
    return _Open(a, kind, n, koffs, children, voffs=voffs, keys=_keys(key_raws), extra=key_raws)


def _keys(raws: list[bytes]) -> list[Any]:
    """The keys of a dict's entries (str or int: what msglc writes and its nodes list)."""
    return _keys_decoder.decode(array_header(len(raws)) + b"".join(raws))


def _close(builder: TocBuilder, top: _Open) -> tuple[int, int]:
    """The node of a container whose children are indexed."""
    if top.kind == "list":
        starts, span_offs, span_kids = builder.spans(top.offs, top.n, top.refs)
        return builder.add_list(top.n, starts, span_offs, span_kids)
    if top.kind == "map":
        return builder.add_node(
            MapNode(keys=top.keys, koffs=top.offs, voffs=top.voffs, kids=builder.refs(dict(sorted(top.refs.items()))))
        )
    if top.kind == "hash":
        entry_kids = {j: (top.keys[j], ref) for j, ref in sorted(top.refs.items())}
        return builder.keyed_node(top.n, top.offs, entry_kids, top.extra)
    keys = _keys([_key_at(builder.buf, top.a + top.offs[e]) for e in sorted(top.refs)])
    entry_kids = {e: (key, top.refs[e]) for e, key in zip(sorted(top.refs), keys, strict=True)}
    at = top.a + container_header_size(builder.buf[top.a])
    return builder.big_map_node(at, top.n, top.offs, entry_kids, top.extra)


def _key_at(buf: bytes, at: int) -> bytes:
    """The encoding of the key (a str or an int) at ``buf[at]``."""
    return buf[at : at + (scalar_size(buf, at) or 1)]
