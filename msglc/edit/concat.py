"""Join archives whose roots are lists into one whose root list holds all their items, in
order, without decoding them: ``concat`` (what ``msglc.dask.to_archive`` gathers with).

The result's data section is a new array header followed by each input's items, copied byte
for byte (each input's own header left out); every input's TOC is copied whole, and a new root
node lists the inputs' spans, moved to where their items now are: a root ``ListNode``'s spans
and large items keep their nodes, a fixed-stride root's items are cut into spans of about the
threshold (rows larger than it a span each, with a node of their own, as ``dump`` reads them
lazily), and a root read whole (a small list) is one span. Fixed-stride roots of one layout
make a fixed-stride root, as ``dump`` of the joined list would. The inputs are checked while
they are copied (their data checksum); compression is as for ``combine``. To S3, uncompressed
archives in S3 are joined on the server (``msglc.io.compose``): only the header, the short
ranges and the new root travel. Their items are then not read, so not checked: a damaged input
is copied as it is, and the result's checksum, made from theirs, fails ``verify()``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from msglc.config import Config, current, refuse_order
from msglc.edit.combine import copy_tocs, result_compression
from msglc.edit.inputs import COPY_CHUNK, FileInfo, Input, opened, pin_target, refuse_target_among
from msglc.edit.sections import Sink, compressed, copy_data
from msglc.errors import CorruptedError
from msglc.format.layout import HEADER_SIZE, Trailer, compressed_header, pack_header
from msglc.format.msgpack import array_header
from msglc.format.nodes import ListNode, PagedListNode, StrideNode, whole_max
from msglc.format.strides import STRIDE_LAZY_MIN, stride_template
from msglc.io.atomic import output
from msglc.io.compose import Span, compose
from msglc.io.names import RemotePath
from msglc.util.checksum import crc32_combine
from msglc.write.compress import HEAD_FRAME, FrameWriter, frame_size
from msglc.write.indexer import TocBuilder

_ARRAY_HEADS = {0xDC: 3, 0xDD: 5}  # array 16 and array 32: header sizes; fixarray: 1
TEMPLATE_BYTES = 1 << 12  # a fixed-stride root's first bytes, which hold its items' template (their headers)


class _Items:
    """One input's root list: its item count, its header's size and the spans of its items
    (item index, offset in its root container, the span's node in the new TOC if it has one)."""

    def __init__(self, part: Input, toc_at: int, threshold: int) -> None:
        a, t = part.archive, part.trailer
        head = bytes(a.read(t.data_off, min(5, t.data_len)))
        if not head or not (0x90 <= head[0] <= 0x9F or head[0] in _ARRAY_HEADS):
            raise TypeError(f"{part.label}: concat joins archives whose root is a list; this one's is not")
        self.head = 1 if head[0] <= 0x9F else _ARRAY_HEADS[head[0]]
        self.count = head[0] & 0x0F if head[0] <= 0x9F else int.from_bytes(head[1 : self.head], "big")
        self.size = t.data_len - self.head  # the items' bytes
        # their CRC-32, from the whole section's (CRC-32 is linear: crc(a + b) = shift(crc(a)) ^ crc(b))
        self.crc = t.data_crc ^ crc32_combine(zlib.crc32(head[: self.head]), 0, self.size)
        self.spans: list[tuple[int, int, tuple[int, int] | None]] = []
        self.stride: StrideNode | None = None  # a fixed-stride root's node
        self.layout: tuple[object, ...] | None = None  # ... its items' (stride_template; verify checks it)
        self.rows: list[tuple[int, int, int]] | None = None  # ... and its rows' dims, when they get nodes
        node = a.node(t.toc_off + t.root_pos, t.root_len) if t.root_len else None
        if isinstance(node, PagedListNode):  # its spans from its pages, kids referenced from the root
            node = a.spans(t.toc_off + t.root_pos, node)
        if isinstance(node, ListNode):
            if node.offs[0] != self.head or node.n != self.count:
                raise CorruptedError(f"{part.label}: its root node does not describe its root list")
            for k, (start, off) in enumerate(zip(node.starts, node.offs, strict=False)):
                kid = node.kids.get(k)
                moved = None if kid is None else (toc_at + t.root_pos - kid[0], kid[1])
                self.spans.append((start, off - self.head, moved))
        elif isinstance(node, StrideNode):
            h, n, s = node.dims[0]
            if h != self.head or n != self.count:
                raise CorruptedError(f"{part.label}: its root node does not describe its root list")
            self.stride = node
            levels = stride_template(bytes(a.read(t.data_off + self.head, min(s, TEMPLATE_BYTES))), 0, s)
            self.layout = None if levels is None else (s, *levels)
            if len(node.dims) > 1 and s > whole_max(threshold):
                self.rows = node.dims[1:]  # a row (a list) is a span with a node, as dump reads it
            per = max(1, threshold // s)
            self.spans = [(i, i * s, None) for i in range(0, n, per)]
        elif node is not None:
            raise TypeError(f"{part.label}: concat joins archives whose root is a list; this one's is not")
        elif self.count:
            self.spans = [(0, 0, None)]  # small: one span


def concat_into(
    archive: Any, infos: list[FileInfo], options: dict[str, Any], progress: Callable[[int], None] | None = None
) -> None:
    """Write the items of the root lists of ``infos``, in order, as one archive at ``archive``."""
    cfg = current(**options)
    refuse_order(options, "concat")
    with opened(infos, options) as inputs:
        refuse_target_among(archive, inputs)
        archive = pin_target(archive, inputs)  # an S3 object rewritten from itself
        if "compression" not in options and cfg.compression is None:
            cfg = replace(cfg, compression=result_compression(inputs))
        _write(archive, inputs, cfg, progress or (lambda n: None))


def _write(path: Any, inputs: list[Input], cfg: Config, progress: Callable[[int], None]) -> None:
    threshold = cfg.small_obj_optimization_threshold
    toc_lens = [part.trailer.live_toc_len for part in inputs]
    lists, toc_at = [], 0
    for part, toc_len in zip(inputs, toc_lens, strict=True):
        lists.append(_Items(part, toc_at, threshold))
        toc_at += toc_len
    count = sum(items.count for items in lists)
    if count >= 2**32:
        raise ValueError(f"concat: {count} items, more than a list in an archive holds (2**32 - 1)")
    header = array_header(count)
    data_len = len(header) + sum(items.size for items in lists)
    root, root_toc = _root_node(lists, len(header), count, data_len, threshold, toc_at)
    crc = zlib.crc32(header)
    for items in lists:
        crc = crc32_combine(crc, items.crc, items.size)
    plain = cfg.compression is None and not any(compressed(part.archive) for part in inputs)
    if plain and isinstance(path, RemotePath):
        head = pack_header()
        trailer = Trailer.contiguous(data_len, toc_at + len(root_toc), root, crc, threshold).pack(head)
        items_at = [
            Span(part.archive.src, part.trailer.data_off + items.head, items.size)
            for part, items in zip(inputs, lists, strict=True)
        ]
        tocs = [Span(part.archive.src, part.trailer.toc_off, n) for part, n in zip(inputs, toc_lens, strict=True)]
        if compose(path, [head + header, *items_at, *tocs, root_toc + trailer], progress):
            return  # put together on the server: the inputs were not read (their checksums carry over)
    with output(path, cfg.durable, 0 if cfg.compression else HEADER_SIZE + data_len + toc_at + len(root_toc)) as f:
        head = compressed_header() if cfg.compression else pack_header()
        f.write(head)
        frames = (
            FrameWriter(f, frame_size(threshold), cfg.compression_level, HEADER_SIZE, head=HEAD_FRAME)
            if cfg.compression
            else None
        )
        out: Sink = f if frames is None else frames
        buf = bytearray(min(COPY_CHUNK, max([1, *toc_lens, *(part.trailer.data_len for part in inputs)])))
        tail = Trailer.contiguous(data_len, toc_at + len(root_toc), root, crc, threshold)
        try:
            out.write(header)
            for part, items in zip(inputs, lists, strict=True):
                _copy_items(part, items, out, buf, progress)
            if frames is not None:
                frames.end_data()  # the TOC follows, framed
            copy_tocs(inputs, out, buf, progress)
            if frames is not None:
                frames.cut()  # the root node starts a frame: opening decompresses no more than it
            out.write(root_toc)
            if frames is not None:
                tail = Trailer.compressed(frames.close(root), crc, threshold)
        finally:
            if frames is not None:
                frames.abort()
        f.write(tail.pack(head))


def _copy_items(part: Input, items: _Items, out: Sink, buf: bytearray, progress: Callable[[int], None]) -> None:
    """Copy an input's items (its data without its root header), checking them against its
    data checksum."""
    crc = copy_data(part.archive, part.trailer.data_off + items.head, items.size, out, buf, progress)
    if crc != items.crc:
        raise CorruptedError(f"{part.label}: data section checksum mismatch; nothing was written")


def _root_node(
    lists: list[_Items], at: int, count: int, end: int, threshold: int, toc_base: int
) -> tuple[tuple[int, int], bytes]:
    """The new root's node (position, length) and the TOC bytes holding it: the inputs' spans
    moved to where their items are (``at``: the first item's offset in the root container)."""
    if not count:
        return (0, 0), b""
    builder = TocBuilder(b"", threshold, toc_base=toc_base)
    lazy_min = min(whole_max(threshold) + 1, STRIDE_LAZY_MIN)  # (as dump's stride nodes)
    layouts = {items.layout for items in lists if items.count}
    alike = next((items.stride for items in lists if items.count), None)
    if len(layouts) == 1 and None not in layouts and alike is not None:
        # fixed-stride lists whose items are alike to their headers and value-type bytes: so is the result
        joined = StrideNode(dims=[(at, count, alike.dims[0][2]), *alike.dims[1:]], lazy_min=lazy_min)
        return builder.add_node(joined), bytes(builder.toc)
    starts: list[int] = []
    offs: list[int] = []
    kids: dict[int, tuple[int, int]] = {}
    first = 0
    for items in lists:
        for start, off, kid in items.spans:
            if items.rows is not None:  # a large row of a fixed-stride input: a node of its own
                kid = builder.add_node(StrideNode(dims=items.rows, lazy_min=lazy_min))
            if kid is not None:
                kids[len(starts)] = kid
            starts.append(first + start)
            offs.append(at + off)
        first += items.count
        at += items.size
    root = builder.add_list(count, starts, [*offs, end], kids)
    return root, bytes(builder.toc)
