"""``Archive``: what a reader and its views share. It opens an archive consistently (header,
trailer, root: ``Opened``), reads TOC nodes, keeps them (``NodeCache``) and checks them
against the data they describe, and decodes data spans. It never makes a view: the root's is
made by the ``root`` callback its open is given, and the views it keeps (``Archive.views``)
are the views module's."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from math import prod
from typing import Any, NamedTuple, NoReturn, TypeVar

import msgspec

from msglc.errors import (
    ArchiveChangedError,
    CorruptedError,
    MsglcError,
    NotAnArchiveError,
    TruncatedError,
    UnsupportedVersionError,
)
from msglc.format.frames import FOOTER_SIZE, MAX_FRAME, parse_seek_table, tables_size
from msglc.format.layout import (
    COMPRESSED,
    END_MAGIC,
    HEADER_SIZE,
    MAGIC,
    TRAILER_SIZE,
    Trailer,
    check_header,
    header_end,
    header_version,
    unpack_trailer,
)
from msglc.format.legacy import HEADER_SIZE as LEGACY_HEADER_SIZE
from msglc.format.legacy import MAGIC as LEGACY_MAGIC
from msglc.format.legacy import Header as LegacyHeader
from msglc.format.legacy import is_legacy, parse_header
from msglc.format.msgpack import HEAD_MAX, container_header
from msglc.format.nodes import (
    ArrayNode,
    HashMapNode,
    ListNode,
    MapNode,
    Node,
    PagedListNode,
    StrideNode,
    check_node,
    check_page,
    node_header,
    node_span,
    stride_headers,
    unframe_node,
    unframe_page,
    whole_list,
)
from msglc.format.numpy_ext import ArrayHead, ext_hook, parse_head
from msglc.format.walk import deep_decode
from msglc.io.base import Source
from msglc.io.framed import FramedSource, open_section
from msglc.io.open_source import open_source
from msglc.read.stats import LazyStats
from msglc.util.checksum import ParallelCrc

_decoder = msgspec.msgpack.Decoder(ext_hook=ext_hook)


class _NoTrailer(TruncatedError):
    """Internal: the archive of ``size`` bytes does not end in a trailer (explained once the
    open gives up)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"no msglc trailer at the end of the file ({size} bytes): truncated or not an archive")
        self.size = size


_T = TypeVar("_T")

MAX_NODE_CACHE = 65536
MAX_PAGE_CACHE = 256  # span pages kept: 1024 spans each, about 70 KB decoded (18 MB), a list of 2 GB's
MAX_WHOLES = 64  # whole span tables of paged lists kept (all dropped when full)


STALE_SCAN = 1 << 24  # how far back an archive followed by stale bytes is looked for


STALE_CANDIDATES = 64


OPEN_ATTEMPTS = 100  # an open that keeps meeting a file mid-change gives up after this many


def _closed(offset: int, size: int) -> bytes:
    raise ValueError("I/O operation on a closed LazyReader")


class Location(NamedTuple):
    """Where a container is stored: its encoding (``offset``, ``size`` bytes in the data
    section) and its TOC node (``node``, ``node_size``; both 0 when it has none of its own)."""

    offset: int
    size: int
    node: int
    node_size: int


class Opened(NamedTuple):
    """What one consistent open found: the file's header and trailer (of a compressed
    archive, the trailer of the plain archive it serves), where things end, and the root."""

    header: bytes
    trailer: Trailer
    size: int  # the archive's end: the file's, or the header's (of a compressed one, its plain size)
    file_size: int  # the archive's end in the file
    stored_data_len: int  # the data section's bytes in the file
    data_end: int
    toc_end: int
    legacy: LegacyHeader | None  # set for an archive of the published msglc (format.legacy)
    # what ``root(archive)`` returned: the root's lazy view; or for a root read whole, None
    # (the data section) or, in a published-msglc archive, the root's (offset, size)
    root: Any = None
    stamp: object = None  # the source's stamp of the state opened (``Source.stamp``)


class NodeCache:
    """The TOC nodes an archive has read, by position, and what was learnt from them: the
    containers checked against their nodes (``Archive.container``), inline dicts' key
    maps (shared by the views of one dict) and the TOC bytes last read around a node
    (``Archive.toc_read``). Emptied with the state an open found."""

    __slots__ = ("nodes", "fitted", "key_maps", "window", "pages", "wholes")

    def __init__(self) -> None:
        self.nodes: dict[int, Node] = {}
        # paged lists' pages, by (the paged node's position, page number): checked against that
        # node (Archive.span_page), so not by the page's own position, which another node may name
        self.pages: dict[tuple[int, int], ListNode] = {}
        self.wholes: dict[int, ListNode] = {}  # paged lists' whole span tables, by the node's position
        self.window: tuple[int, memoryview] | None = None  # TOC bytes read before a node (toc_read)
        # container() results: a node checked against its container's header is not read again
        self.fitted: dict[tuple[int, int, int, int], tuple[Node, ArrayHead | None]] = {}
        self.key_maps: dict[int, dict[str | int, int]] = {}

    def keep(self, pos: int, node: Node, keys: dict[str | int, int] | None = None) -> None:
        """Keep the node at ``pos`` (and an inline dict's key map, if made): every node and
        key map is dropped when ``MAX_NODE_CACHE`` are kept."""
        if len(self.nodes) >= MAX_NODE_CACHE:
            self.nodes.clear()
            self.key_maps.clear()
            self.wholes.clear()
        self.nodes[pos] = node
        if keys is not None:
            self.key_maps[pos] = keys

    def keep_page(self, key: tuple[int, int], page: ListNode) -> None:
        """Keep a checked page: all are dropped when ``MAX_PAGE_CACHE`` are kept."""
        if len(self.pages) >= MAX_PAGE_CACHE:
            self.pages.clear()
        self.pages[key] = page

    def fit(self, where: tuple[int, int, int, int], result: tuple[Node, ArrayHead | None]) -> None:
        if len(self.fitted) >= MAX_NODE_CACHE:
            self.fitted.clear()
        self.fitted[where] = result

    def key_map(self, pos: int, node: MapNode) -> dict[str | int, int]:
        """Each key of the inline dict whose node is at ``pos``, with its index."""
        keys = self.key_maps.get(pos)
        if keys is None:
            keys = self.key_maps[pos] = dict(zip(node.keys, range(len(node.keys)), strict=True))
        return keys

    def clear(self) -> None:
        self.nodes.clear()
        self.fitted.clear()
        self.key_maps.clear()
        self.pages.clear()
        self.wholes.clear()
        self.window = None


class Archive:
    """What a reader and its lazy views share: the source and how to read it, the state one
    consistent open found (``opened``), the node cache (``nodes``) and the views kept
    (``views``, which the views module owns). ``closed`` and ``c_read`` are read by name from
    C (``_speedups.FastGet``), as is ``views``."""

    read: Callable[[int, int], bytes | memoryview]
    # what the C lookups read through: the file's descriptor when nothing counts or
    # translates the reads, else ``read`` itself
    c_read: object

    def __init__(
        self,
        source: Any,
        views: Any,
        counter: LazyStats | None,
        root: Callable[[Archive], Any] | None = None,
        **where: Any,
    ) -> None:
        """``views``: the views kept for reuse (``views.ViewCache``, which says whether views
        keep values): the archive only empties it. The open checks the root's TOC node against
        the root container (every user of an archive relies on that); ``root(archive)``, when
        given, does it by making the root's lazy view, kept as ``opened.root``. Both run within
        the consistent open."""
        self.file = self.src = open_source(source, counter, **where)  # ``src`` may put a FramedSource in front
        self.closed = False
        self.counter = counter
        self.nodes = NodeCache()
        self.views = views
        self.reopen: Any = None  # how another process opens it again (``reopen.Reopen``), if it can
        self.opened: Opened
        self.bind(self.src)
        try:
            self._open_consistently(root)
        except BaseException:
            self.src.close()
            raise

    def share(self, main: Archive, read: Callable[[int, int], bytes | memoryview]) -> None:
        """Instead of ``__init__`` (a subclass's: ``batch.BatchArchive``): read the archive
        ``main`` opened, sharing its file, source, open state and node cache, with views of
        its own, its reads through ``read``."""
        self.file, self.src, self.counter, self.opened = main.file, main.src, main.counter, main.opened
        self.nodes, self.views, self.reopen = main.nodes, main.views.fresh(), main.reopen
        self.read = self.c_read = read

    def bind(self, source: Source) -> None:
        """Read through ``source`` from now on (counting the bytes in ``counter``)."""
        self.src = source
        read: Callable[[int, int], bytes | memoryview] = source.read
        counter = self.counter
        if counter is not None and not source.counts_itself:

            def read(
                offset: int,
                size: int,
                _read: Callable[[int, int], bytes | memoryview] = source.read,
                _add: Callable[[int], None] = counter.add,
            ) -> bytes | memoryview:
                _add(size)
                return _read(offset, size)

        self.read = read
        direct = getattr(source, "direct", None)
        self.c_read = direct if direct is not None and read == source.read else read

    def _open_consistently(self, root: Callable[[Archive], Any] | None) -> None:
        """Open (header, trailer, and the root's node and header), reading them again if the
        file changed while they were read and they did not fit: ``append`` moves the trailer
        and switches the header between valid states, and an open that read parts of two
        states must not call a healthy archive damaged. A file that fails with no change
        during the attempt is reported. ``opened.stamp`` is the source's stamp of the state
        opened."""
        for attempt in range(OPEN_ATTEMPTS):
            before = self.src.stamp()
            if self.src is not self.file:  # a second attempt at a compressed archive
                self.bind(self.file)
            size = self.src.size  # the archive's end: the file's, or the header's
            header = bytes(self.read(0, min(size, HEADER_SIZE)))
            try:
                self._open(header, size, root)
                self.src.opened = self.file.opened = before
                self.opened = self.opened._replace(stamp=before)
                return
            except MsglcError as e:
                self.nodes.clear()
                self.views.clear()
                if before is None or attempt == OPEN_ATTEMPTS - 1 or not self._changed(before, header):
                    if isinstance(e, _NoTrailer):
                        self._no_trailer(e.size, header)  # only now: it may read up to STALE_SCAN bytes
                    raise
                time.sleep(min(0.01, 0.0002 * attempt))  # let a writer between two states finish
        raise AssertionError("unreachable")

    def _changed(self, stamp: object, header: bytes) -> bool:
        """Has the file changed since ``stamp`` (or its header since it was read as ``header``)?"""
        return self.src.stamp() != stamp or bytes(self.src.read(0, min(self.src.size, HEADER_SIZE))) != header

    def damaged(self, message: str) -> MsglcError:
        """The error for data that does not fit its TOC: ``ArchiveChangedError`` when the file
        changed since the open (an append overwrites the TOC this reader holds), else
        ``CorruptedError``. Only on the error path: costs one ``fstat``."""
        opened = self.opened
        if opened.stamp is not None and not self.closed and self._changed(opened.stamp, opened.header):
            return ArchiveChangedError(
                f"{message}; the file changed after this reader opened it (an append?): open a new reader"
            )
        return CorruptedError(message)

    def _open(self, header: bytes, size: int, make_root: Callable[[Archive], Any] | None) -> None:
        """One attempt at the open of a file of ``size`` bytes that starts with ``header``:
        sets ``opened``, the root last (making it reads through ``opened``)."""
        if header[:1] == b"\0" and is_legacy(self.read(0, min(size, len(LEGACY_MAGIC)))):
            self.opened = self._open_legacy(header, size)
        else:
            self.opened = self._open_msglc(header, size)
        t = self.opened.trailer
        if (t.root_len or self.opened.legacy is not None) and make_root is not None:
            self.opened = self.opened._replace(root=make_root(self))
        elif t.root_len:
            self.container(t.data_off, t.data_len, t.toc_off + t.root_pos, t.root_len)

    def _open_msglc(self, header: bytes, size: int) -> Opened:
        if size < HEADER_SIZE + TRAILER_SIZE:
            if header[: len(MAGIC)] != MAGIC[: len(header)] or not header:
                raise NotAnArchiveError(f"not an msglc archive: {size} bytes, no msglc magic at offset 0")
            raise TruncatedError(f"file has {size} bytes, an msglc archive has at least {HEADER_SIZE + TRAILER_SIZE}")
        check_header(header)
        end = header_end(header)
        if end:  # an append is under way or died midway: the archive ends where it says
            if not HEADER_SIZE + TRAILER_SIZE <= end <= size:
                raise (TruncatedError if end > size else CorruptedError)(
                    f"the header says the archive ends at offset {end}; the file has {size} bytes"
                )
            size = end
        tail = self.read(size - TRAILER_SIZE, TRAILER_SIZE)
        if bytes(tail[-len(END_MAGIC) :]) != END_MAGIC:
            raise _NoTrailer(size)
        t = unpack_trailer(bytes(tail), size, header)
        file_size, stored = size, t.data_len
        if header_version(header)[0] == COMPRESSED:
            t, size = self._framed(t, header, size)
        return Opened(header, t, size, file_size, stored, t.data_off + t.data_len, t.toc_off + t.toc_len, None)

    def _open_legacy(self, head: bytes, size: int) -> Opened:
        """Open an archive of the published msglc (format.legacy): its TOC must be in the file;
        the trailer this sets says where its data section and TOC are (it has no checksum)."""
        header = parse_header(self.read(0, min(size, LEGACY_HEADER_SIZE)), 0)
        end = LEGACY_HEADER_SIZE + header.toc_start + header.toc_size
        if end > size:
            raise TruncatedError(f"the published-msglc archive's TOC ends at offset {end}; the file has {size} bytes")
        data = LEGACY_HEADER_SIZE
        t = Trailer(data, header.toc_start, data + header.toc_start, header.toc_size, 0, 0, 0, 0)
        return Opened(head, t, size, size, header.toc_start, t.toc_off, end, header)

    def _framed(self, t: Trailer, header: bytes, size: int) -> tuple[Trailer, int]:
        """Serve a compressed archive as the plain one it holds: read the frame tables (2.0:
        the data section's seek table, whole; 2.1: the index at the section's end, which
        locates the page tables and dictionaries, read when first needed), put a
        ``FramedSource`` in front of the file, and return the trailer of that logical view
        (2.0: the data as long as it decompresses to, the TOC right after it; 2.1: the data
        and the TOC, both framed); every check and offset after this one is the same as for a
        plain archive."""
        stored, end = t.data_len, t.data_off + t.data_len
        if stored < FOOTER_SIZE:
            raise CorruptedError(f"compressed data section of {stored} bytes cannot hold its seek table")
        if header_version(header)[1] >= 1:
            return self._framed_2_1(t)
        size = tables_size(self.read(end - FOOTER_SIZE, FOOTER_SIZE), stored)  # with the filter table if any
        table = parse_seek_table(self.read(end - size, size), stored, MAX_FRAME)
        self.bind(FramedSource(self.file, t.data_off, table, stored, counter=self.counter))
        plain = table.logical[-1]
        return msgspec.structs.replace(t, data_len=plain, toc_off=t.toc_off - stored + plain), size - stored + plain

    def _framed_2_1(self, t: Trailer) -> tuple[Trailer, int]:
        """``_framed`` for 2.1 (``open_section``): the index read from the section's end; the
        page tables are read when a frame of theirs is."""
        if t.toc_len or t.root_len:
            raise CorruptedError("a 2.1 archive's trailer names a TOC outside its compressed section")
        source, index = open_section(self.file, t.data_off, t.data_len, self.read, self.counter)  # (counted)
        self.bind(source)
        root_pos, root_len = index.root
        plain = Trailer(
            t.data_off, index.data, t.data_off + index.data, index.toc, root_pos, root_len, t.data_crc, t.threshold
        )
        return plain, t.data_off + index.data + index.toc

    def _no_trailer(self, size: int, header: bytes) -> NoReturn:
        """Say why the file does not end in a trailer: truncated, or bytes after a complete
        archive (a buffer reused for a shorter archive, padding), found by looking back for
        the end magic of a trailer that fits: the error path only, within ``STALE_SCAN`` bytes
        (one block of a remote source) and ``STALE_CANDIDATES`` magics."""
        start = max(HEADER_SIZE, size - min(STALE_SCAN, getattr(self.src, "block_size", STALE_SCAN)))
        tail = bytes(self.read(start, size - start))
        at = len(tail)
        for _ in range(STALE_CANDIDATES):
            at = tail.rfind(END_MAGIC, 0, at)
            if at < 0:
                break
            end = start + at + len(END_MAGIC)
            if at + len(END_MAGIC) >= TRAILER_SIZE and end >= HEADER_SIZE + TRAILER_SIZE:
                try:
                    unpack_trailer(tail[at + len(END_MAGIC) - TRAILER_SIZE : at + len(END_MAGIC)], end, header)
                except MsglcError:
                    continue
                raise CorruptedError(
                    f"the archive ends at offset {end} but the file has {size} bytes: {size - end} bytes follow it "
                    f"(stale bytes of a reused buffer or file? read the first {end} bytes)"
                )
        raise TruncatedError(f"no msglc trailer at the end of the file ({size} bytes): truncated or not an archive")

    def check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on a closed LazyReader")

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.read = self.c_read = _closed
            self.views.clear()
            self.src.close()

    def decode_span(self, offset: int, size: int, prefix: bytes = b"") -> Any:
        """Decode ``size`` data bytes at ``offset`` (after ``prefix``, a container header)."""
        opened = self.opened
        if offset < opened.trailer.data_off or offset + size > opened.data_end or size <= 0:
            raise self.damaged(f"data span {offset}+{size} lies outside the data section")
        return self.decode(prefix + self.read(offset, size) if prefix else self.read(offset, size), offset)

    def decode(self, data: bytes | memoryview, offset: int) -> Any:
        """Decode data bytes read from ``offset``, naming the offset if they are not msgpack.
        A value nested deeper than msgspec goes within the recursion limit is decoded by
        ``walk.deep_decode`` (a valid archive is never refused for its depth)."""
        try:
            return _decoder.decode(data)
        except RecursionError:
            pass
        except (msgspec.DecodeError, UnicodeDecodeError) as e:
            raise self.damaged(f"data at offset {offset} ({len(data)} bytes) is not valid msgpack: {e}") from None
        except (CorruptedError, UnsupportedVersionError) as e:  # from the NumPy array hook
            raise type(e)(f"data at offset {offset} ({len(data)} bytes): {e}") from None
        try:
            return deep_decode(data, offset)
        except CorruptedError as e:
            raise self.damaged(str(e)) from None

    def read_into(self, offset: int, out: Any, threads: int | None = None) -> None:
        """Fill the fresh C-contiguous NumPy array ``out`` with data bytes from ``offset``
        (``threads``: how many decompress a compressed archive's frames; default
        ``read_threads``)."""
        if self.closed:
            raise ValueError("I/O operation on a closed LazyReader")
        buf = memoryview(out.reshape(-1).view("u1"))
        if offset < self.opened.trailer.data_off or offset + len(buf) > self.opened.data_end:
            raise CorruptedError(f"data span {offset}+{len(buf)} lies outside the data section")
        self.fill(offset, buf, threads)

    def frame_at(self, offset: int) -> tuple[int, int, bytes | bytearray, int] | None:
        """In a compressed archive, the data frame holding ``offset``, decompressed, as stored
        (``FramedSource.frame_at``: shuffled or not); None otherwise, or where reads must go
        through ``read``."""
        if self.closed:
            raise ValueError("I/O operation on a closed LazyReader")
        return self.src.frame_at(offset) if isinstance(self.src, FramedSource) else None

    def decode_frames(self, offset: int, size: int, sink: Callable[[int, memoryview, int], None]) -> bool:
        """In a compressed archive, the frames of logical [offset, offset + size) handed to
        ``sink`` as stored, with their shuffle's element size or 0 (``FramedSource.decode_frames``);
        False when they cannot be."""
        if self.closed:
            raise ValueError("I/O operation on a closed LazyReader")
        if offset < self.opened.trailer.data_off or offset + size > self.opened.data_end:
            raise CorruptedError(f"data span {offset}+{size} lies outside the data section")
        return isinstance(self.src, FramedSource) and self.src.decode_frames(offset, size, sink)

    def read_checked(self, offset: int, size: int) -> bytes | memoryview:
        """``read``, but in a compressed archive every frame the bytes lie in is decompressed
        and checked, its zstd checksum included, where reads take a raw frame's bytes in
        place (``verify``: damage there is found too)."""
        if not isinstance(self.src, FramedSource):
            return self.read(offset, size)
        if self.counter is not None and not self.src.counts_itself:
            self.counter.add(size)
        return self.src.read_checked(offset, size)

    def fill(self, offset: int, buf: memoryview, threads: int | None = None) -> None:
        """``read_into`` once checked: ``buf`` filled with the data bytes at ``offset``."""
        if self.counter is not None and not self.src.counts_itself:
            self.counter.add(len(buf))
        if threads is not None and isinstance(self.src, FramedSource):
            self.src.read_into(offset, buf, threads)
        else:
            self.src.read_into(offset, buf)

    def read_grid(self, offset: int, counts: tuple[int, ...], strides: tuple[int, ...], size: int, out: Any) -> None:
        """Fill the fresh C-contiguous NumPy array ``out`` with the pieces of ``size`` data
        bytes at ``offset + sum(i * stride)`` for every index ``i`` below ``counts``, in C
        order (``Source.read_grid``: a block of an array, a piece per row)."""
        if self.closed:
            raise ValueError("I/O operation on a closed LazyReader")
        end = offset + size
        for c, s in zip(counts, strides, strict=True):
            end += (c - 1) * s
        if out.nbytes != prod(counts) * size:
            raise ValueError(f"read_grid: out holds {out.nbytes} bytes, the pieces {prod(counts) * size}")
        if offset < self.opened.trailer.data_off or end > self.opened.data_end:
            raise CorruptedError(f"data span {offset}+{end - offset} lies outside the data section")
        self.fill_grid(offset, counts, strides, size, memoryview(out.reshape(-1).view("u1")))

    def fill_grid(
        self, offset: int, counts: tuple[int, ...], strides: tuple[int, ...], size: int, buf: memoryview
    ) -> None:
        """``read_grid`` once checked: ``buf`` filled with the pieces."""
        if self.counter is not None and not self.src.counts_itself:
            self.counter.add(len(buf), prod(counts))  # a request per piece: each is a read of its own
        self.src.read_grid(offset, counts, strides, size, buf)

    def view(self, offset: int, size: int, used: int) -> memoryview:
        """``size`` data bytes at ``offset`` of a source in memory (``src.zero_copy``), not
        copied: counted as one read of the ``used`` bytes the caller copies out of them."""
        if self.closed:
            raise ValueError("I/O operation on a closed LazyReader")
        if offset < self.opened.trailer.data_off or offset + size > self.opened.data_end:
            raise CorruptedError(f"data span {offset}+{size} lies outside the data section")
        if self.counter is not None and not self.src.counts_itself:
            self.counter.add(used)
        return memoryview(self.src.read(offset, size))

    def node(self, pos: int, size: int) -> Node:
        node = self.nodes.nodes.get(pos)
        if node is None:
            if size < 5:
                raise CorruptedError(f"TOC node at offset {pos} is {size} bytes, too short")
            toc_off = self.opened.trailer.toc_off

            def checked(buf: bytes | memoryview) -> tuple[Node, dict[str | int, int] | None]:
                node = unframe_node(buf, pos)
                return node, check_node(node, pos, toc_off)

            node, keys = self._toc_item(pos, size, checked)
            self.nodes.keep(pos, node, keys)
        return node

    def _toc_item(self, pos: int, size: int, parse: Callable[[bytes | memoryview], _T]) -> _T:
        """``parse`` of the ``size`` TOC bytes at ``pos`` (a node or a page), which must lie in
        the TOC; what it finds wrong is reported as damage (``damaged``)."""
        if not (self.opened.trailer.toc_off <= pos and 0 < size and pos + size <= self.opened.toc_end):
            raise self.damaged(f"TOC node {pos}+{size} lies outside the TOC")
        try:
            return parse(self.toc_read(pos, size))
        except CorruptedError as e:
            raise self.damaged(str(e)) from None

    def toc_read(self, pos: int, size: int) -> bytes | memoryview:
        """The ``size`` TOC bytes at ``pos`` (a node). Where a read is a call to the system
        (``Source.node_window``), it takes the bytes before the node too: the nodes a walk
        reads next, its kids, precede it, and are then read from memory."""
        w = self.nodes.window
        if w is not None and w[0] <= pos and pos + size <= w[0] + len(w[1]):
            return w[1][pos - w[0] : pos - w[0] + size]
        ahead = self.src.node_window
        if not ahead:
            return self.read(pos, size)
        lo = max(self.opened.trailer.toc_off, pos - ahead)
        data = memoryview(self.read(lo, pos + size - lo))
        self.nodes.window = (lo, data)
        return data[pos - lo :]

    @staticmethod
    def referred(parent_pos: int, ref: tuple[int, int]) -> int:
        """The position of the node that the node at ``parent_pos`` references with ``ref``,
        which must precede it (so no walk over references can loop)."""
        back, size = ref
        pos = parent_pos - back
        if back <= 0 or pos + size > parent_pos:
            raise CorruptedError(f"TOC node at offset {parent_pos} references a node at {pos} that does not precede it")
        return pos

    def span_page(self, pos: int, node: PagedListNode, p: int) -> tuple[int, ListNode]:
        """(position, spans) of page ``p`` of the paged list whose node is at ``pos``, read and
        checked against the node once while the node cache keeps it (``check_page``: its
        spans as a ``ListNode`` whose ``n`` is the item after the page)."""
        ref = node.pages[p]
        where = self.referred(pos, ref)
        page = self.nodes.pages.get((pos, p))
        if page is None:
            page = self._toc_item(where, ref[1], lambda buf: check_page(unframe_page(buf, where), node, p, where))
            self.nodes.keep_page((pos, p), page)
        return where, page

    def spans(self, pos: int, node: ListNode | PagedListNode) -> ListNode:
        """The span table of the list whose node is at ``pos``: its own, or a paged list's
        from all its pages (read once while the node cache keeps it)."""
        if isinstance(node, ListNode):
            return node
        whole = self.nodes.wholes.get(pos)
        if whole is None:
            whole = whole_list(node, pos, [self.span_page(pos, node, p) for p in range(len(node.pages))])
            if len(self.nodes.wholes) >= MAX_WHOLES:
                self.nodes.wholes.clear()
            self.nodes.wholes[pos] = whole
        return whole

    def iter_nodes(self, pos: int, size: int) -> Iterator[tuple[int, Node]]:
        """(position, node) of every TOC node reachable from the one at ``pos``, each once,
        reading TOC nodes only (a paged list's pages too)."""
        stack, seen = [(pos, size)], {pos}
        while stack:
            here, length = stack.pop()
            node = self.node(here, length)
            yield here, node
            kids = self.spans(here, node).kids if isinstance(node, PagedListNode) else getattr(node, "kids", {})
            for ref in kids.values():
                child = self.referred(here, ref)
                if child not in seen:
                    seen.add(child)
                    stack.append((child, ref[1]))

    def toc_range(self, pos: int, size: int) -> tuple[int, int]:
        """The TOC range [lo, end) holding the node at ``pos`` and every node it refers to
        (nodes precede the nodes that refer to them)."""
        lo = pos
        for here, node in self.iter_nodes(pos, size):
            if isinstance(node, HashMapNode):
                here -= node.index[0]
            elif isinstance(node, PagedListNode):
                here -= max(back for back, _ in node.pages)
            lo = min(lo, here)
        return lo, pos + size

    def container(
        self, base: int, span: int, pos: int, size: int, head: bytes | memoryview = b""
    ) -> tuple[Node, ArrayHead | None]:
        """The TOC node at ``pos`` (``size`` bytes) checked against the container it describes,
        stored at ``base`` (``span`` bytes): its length and header must match. For a NumPy array
        also its (dtype, shape, start of the elements). Checked once per container while the
        node cache keeps its node. ``head``: the container's first bytes, if the caller read
        them (else they are read here)."""
        fitted = self.nodes.fitted.get((base, span, pos, size))
        if fitted is not None and pos in self.nodes.nodes:
            return fitted
        node = self.node(pos, size)
        if node_span(node) != span or base + span > self.opened.data_end:
            raise self.damaged(
                f"TOC node at offset {pos} describes {node_span(node)} bytes where {span} are stored at offset {base}"
            )
        if isinstance(node, ArrayNode):
            array = parse_head(self.read(base, node.head), base, span)
            if array[2] != node.head:
                raise CorruptedError(f"NumPy array at offset {base} does not match its TOC node at offset {pos}")
            result: tuple[Node, ArrayHead | None] = (node, array)
            self.nodes.fit((base, span, pos, size), result)
            return result
        if isinstance(node, StrideNode):
            heads = stride_headers(node)
            if heads is not None and len(head) < len(heads):
                head = self.read(base, len(heads))
            fits = heads is not None and bytes(head[: len(heads)]) == heads
        else:
            if len(head) < min(HEAD_MAX, span):
                head = self.read(base, min(HEAD_MAX, span))
            fits = container_header(head[:HEAD_MAX]) == node_header(node)
        if not fits:
            raise self.damaged(f"container at offset {base} does not match its TOC node at offset {pos}")
        self.nodes.fit((base, span, pos, size), (node, None))
        return node, None

    def decode_all(self) -> Any:
        """The whole data section decoded, its checksum checked (on another core meanwhile);
        of an archive of the published msglc, its root's range (it has no checksum)."""
        opened = self.opened
        if opened.legacy is not None:  # its root: stored whole, or a lazy view decoded part by part
            root = opened.root
            return self.decode_span(*root) if isinstance(root, tuple) else root.to_obj()
        t = opened.trailer
        data = self.read(t.data_off, t.data_len)
        crc = ParallelCrc(data)
        try:
            obj = self.decode(data, t.data_off)
        finally:
            crc_value = crc.result()
        if crc_value != t.data_crc:
            raise CorruptedError(f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off})")
        return obj
