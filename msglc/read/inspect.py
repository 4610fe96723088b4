"""What an archive holds, for tools and curious users: its layout (``ArchiveInfo``) and its
TOC nodes (``NodeInfo``), read from the TOC only, never from the data."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from msglc.format.layout import COMPRESSED, header_version
from msglc.format.legacy import MAGIC_TEXT
from msglc.format.nodes import ArrayNode, HashMapNode, ListNode, MapNode, PagedListNode, StrideNode, node_span
from msglc.io.framed import FramedSource
from msglc.read.archive import Archive

KINDS = ("list", "fixed-stride list", "dict", "hash-indexed dict", "array")


class NodeInfo(NamedTuple):
    """One TOC node: the container it describes and how it is indexed.

    ``kind``: one of ``KINDS``. ``length``: items or entries (an array: bytes of elements).
    ``blocks``: runs of small items or entries read whole (lists and hash-indexed dicts).
    ``dims``: items per level of a fixed-stride list; ``item_size`` its innermost items'
    bytes. ``children``: how many of its items have nodes of their own."""

    kind: str
    position: int  # of the node in the file
    size: int  # of the node
    encoded_size: int  # bytes of the container it describes
    length: int
    blocks: int
    dims: tuple[int, ...]
    item_size: int
    children: int


class ArchiveInfo(NamedTuple):
    """The layout of an archive (offsets are absolute)."""

    version: tuple[int, int]
    file_size: int
    data_offset: int
    data_size: int  # the data section: plain msgpack of the stored object
    toc_offset: int
    toc_size: int
    free_space: int  # between the data and the TOC (left by ``append``)
    threshold: int
    data_crc: int
    root: NodeInfo | None  # None: the root is small, read whole
    compression: str | None  # None, or "zstd": the data section is stored as zstd frames
    stored_data_size: int  # the data section's bytes in the file (data_size when not compressed)
    format: str = "msglc"  # "msglc-2024": an archive of the published msglc (docs/legacy-format.md)
    slack: int = 0  # bytes of the file past the archive's end (left by ``append``; 0 if unknown)


class FrameInfo(NamedTuple):
    """One zstd frame of a compressed archive: where it is stored (``offset``, ``size`` bytes
    of the file), the logical bytes it holds (``plain_offset``, ``plain_size``: offsets as in a
    plain archive, the data and then, in 2.1, the TOC), its filter (0: none; 1: byte shuffle of
    elements of ``parameter`` bytes; 2: stored raw, read in place) and the dictionary it was
    compressed with (0: none)."""

    offset: int
    size: int
    plain_offset: int
    plain_size: int
    filter: int
    parameter: int
    dictionary: int


LEGACY_FORMAT = MAGIC_TEXT.decode()


def frame_infos(archive: Archive) -> Iterator[FrameInfo]:
    """The frames of a compressed archive, in order (none for a plain one); their page
    tables are read as they are reached."""
    src = archive.src
    if not isinstance(src, FramedSource):
        return
    table = src.table
    for i in range(table.frames):
        page, k = table.at(i)
        yield FrameInfo(
            src.data_off + page.stored[k],
            page.stored[k + 1] - page.stored[k],
            src.data_off + page.logical[k],
            page.logical[k + 1] - page.logical[k],
            page.codes[k] if page.codes else 0,
            page.params[k] if page.codes else 0,
            page.dictionary(k),
        )


def archive_info(archive: Archive) -> ArchiveInfo:
    t = archive.opened.trailer
    return ArchiveInfo(
        version=header_version(archive.opened.header),
        file_size=archive.opened.file_size,
        data_offset=t.data_off,
        data_size=t.data_len,
        compression="zstd" if header_version(archive.opened.header)[0] == COMPRESSED else None,
        stored_data_size=archive.opened.stored_data_len,
        toc_offset=t.toc_off,
        toc_size=t.toc_len,
        free_space=t.toc_off - t.data_off - t.data_len,
        threshold=t.threshold,
        data_crc=t.data_crc,
        root=node_info(archive, t.toc_off + t.root_pos, t.root_len) if t.root_len else None,
        format="msglc" if archive.opened.legacy is None else LEGACY_FORMAT,
        slack=max(0, archive.file.size - archive.opened.file_size) if archive.opened.legacy is None else 0,
    )


def node_info(archive: Archive, pos: int, size: int) -> NodeInfo:
    """The node at ``pos`` (``size`` bytes), checked as every read checks it."""
    return info_of(_node(archive, pos, size), pos, size)


Shown = ListNode | MapNode | HashMapNode | StrideNode | ArrayNode  # what node_info shows (no paged list)


def _node(archive: Archive, pos: int, size: int) -> Shown:
    """The node at ``pos``; of a paged list, the spans of all its pages (a list's node)."""
    node = archive.node(pos, size)
    return archive.spans(pos, node) if isinstance(node, PagedListNode) else node


def info_of(node: Shown, pos: int, size: int) -> NodeInfo:
    span, kids = node_span(node), len(getattr(node, "kids", ()))
    if isinstance(node, StrideNode):
        dims = tuple(n for _, n, _ in node.dims)
        return NodeInfo("fixed-stride list", pos, size, span, dims[0], 0, dims, node.dims[-1][2], 0)
    if isinstance(node, ArrayNode):
        return NodeInfo("array", pos, size, span, node.size, 0, (), 0, 0)
    if isinstance(node, MapNode):
        return NodeInfo("dict", pos, size, span, len(node.keys), 0, (), 0, kids)
    kind = "hash-indexed dict" if isinstance(node, HashMapNode) else "list"
    return NodeInfo(kind, pos, size, span, node.n, len(node.starts) - kids, (), 0, kids)


def walk_tree(
    archive: Archive, pos: int, size: int, max_depth: int | None = None
) -> Iterator[tuple[int, str, NodeInfo]]:
    """(depth, label within its parent, info) of the node at ``pos`` and of the nodes below it,
    depth first in stored order, down to ``max_depth`` levels below it (None: all). A node that
    several parents refer to (``append`` shares one row node among the rows of a matrix) is
    listed under each but expanded once, so the walk is as long as the references, whatever
    the file (count distinct ``position`` values to count nodes)."""
    stack: list[tuple[int, str, int, int, bool]] = [(0, "", pos, size, True)]
    seen = {pos}
    while stack:
        depth, label, here, length, expand = stack.pop()
        node = _node(archive, here, length)
        yield depth, label, info_of(node, here, length)
        if not expand or max_depth is not None and depth >= max_depth or isinstance(node, (StrideNode, ArrayNode)):
            continue
        names = _labels(node)
        below = []
        for k, ref in sorted(node.kids.items()):
            child = archive.referred(here, ref)
            below.append((depth + 1, str(names[k]), child, ref[1], child not in seen))
            seen.add(child)
        stack.extend(reversed(below))


def _labels(node: ListNode | MapNode | HashMapNode) -> dict[int, object]:
    """The key or index of each child that ``node.kids`` refers to."""
    if isinstance(node, MapNode):
        return {k: node.keys[k] for k in node.kids}
    if isinstance(node, HashMapNode):
        return {k: key for key, k in node.kid_keys.items()}
    return {k: node.starts[k] for k in node.kids}
