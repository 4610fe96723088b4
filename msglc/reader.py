"""Open an archive and read parts of it: ``LazyReader``, ``LazyStats``, ``to_obj``."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, NoReturn

import msgspec

from .arrays import ext_hook, parse_head
from .bulk import ParallelCrc, gc_paused
from .errors import ArchiveChangedError, CorruptedError, MsglcError, NotAnArchiveError, TruncatedError, UnsupportedVersionError
from .format import (
    END_MAGIC,
    HEADER_SIZE,
    MAGIC,
    TRAILER_SIZE,
    ArrayNode,
    MapNode,
    StrideNode,
    check_header,
    check_node,
    container_header,
    header_end,
    node_header,
    node_span,
    stride_headers,
    unframe_node,
    unpack_trailer,
)
from .lazy import LazyDict, LazyList, LazyNode, make_view
from .lazy_array import LazyArray
from .open_source import open_source
from .verify import verify_archive

__all__ = ["LazyArray", "LazyReader", "LazyStats", "LazyDict", "LazyList", "to_obj"]

_decoder = msgspec.msgpack.Decoder(ext_hook=ext_hook)


class _NoTrailer(TruncatedError):
    """Internal: the file does not end in a trailer (explained once the open gives up)."""


_MAX_NODE_CACHE = 65536
STALE_SCAN = 1 << 24  # how far back an archive followed by stale bytes is looked for
STALE_CANDIDATES = 64
OPEN_ATTEMPTS = 100  # an open that keeps meeting a file mid-change gives up after this many


class LazyStats:
    """Counts storage requests and bytes: ``stats()`` is the number of bytes read so far,
    ``stats.requests`` the requests made (each ``pread`` of a local file; each ranged GET of
    a remote one, reads served from its block cache not counted). ``calls`` is ``requests``."""

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        return self.requests

    def add(self, size: int, requests: int = 1) -> None:
        with self._lock:
            self.requests += requests
            self.bytes += size

    def __call__(self) -> int:
        return self.bytes

    def clear(self) -> None:
        with self._lock:
            self.requests = 0
            self.bytes = 0

    def __str__(self) -> str:
        return f"{self.requests} requests, {self.bytes} bytes"

    def __repr__(self) -> str:
        return f"<LazyStats {self}>"


def _why(e: BaseException) -> str:
    return "nested too deeply" if isinstance(e, RecursionError) else str(e)


def _closed(offset: int, size: int) -> bytes:
    raise ValueError("I/O operation on a closed LazyReader")


class Archive:
    """State shared by a reader and its lazy views: the source, the trailer, the node cache."""

    def __init__(self, source: Any, cached: bool, counter: LazyStats | None, **where: Any) -> None:
        self.src = open_source(source, counter, **where)
        self.closed = False
        self.cached = cached
        self.counter = counter
        self.nodes: dict[int, Any] = {}
        self.node_sizes: dict[int, int] = {}  # framed length of each cached node
        self.key_maps: dict[int, dict] = {}
        read = self.src.read
        if counter is not None and not self.src.counts_itself:

            def read(offset: int, size: int, _read=self.src.read, _add=counter.add) -> bytes | memoryview:
                _add(size)
                return _read(offset, size)

        self.read = read
        self.root_view: LazyNode | None = None
        self.opened: object = None  # the source's stamp of the state opened
        try:
            self.opened = self._open_consistently()
        except BaseException:
            self.src.close()
            raise

    def _open_consistently(self) -> object:
        """Open (header, trailer, and the root's node and header), reading them again if the
        file changed while they were read and they did not fit: ``append`` moves the trailer
        and switches the header between valid states, and an open that read parts of two
        states must not call a healthy archive damaged. A file that fails with no change
        during the attempt is reported. Returns the source's stamp of the state opened."""
        for attempt in range(OPEN_ATTEMPTS):
            before = self.src.stamp()
            try:
                self._open()
                self.src.opened = before
                return before
            except MsglcError as e:
                self.nodes.clear()
                if before is None or attempt == OPEN_ATTEMPTS - 1 or not self._changed(before):
                    if isinstance(e, _NoTrailer):
                        self._no_trailer(self.size)  # only now: it may read up to STALE_SCAN bytes
                    raise
                time.sleep(min(0.01, 0.0002 * attempt))  # let a writer between two states finish
        raise AssertionError("unreachable")

    def _changed(self, stamp: object) -> bool:
        """Has the file changed since ``stamp`` (or its header since it was read)?"""
        return self.src.stamp() != stamp or bytes(self.src.read(0, min(self.src.size, HEADER_SIZE))) != self.header

    def damaged(self, message: str) -> MsglcError:
        """The error for data that does not fit its TOC: ``ArchiveChangedError`` when the file
        changed since the open (an append overwrites the TOC this reader holds), else
        ``CorruptedError``. Only on the error path: costs one ``fstat``."""
        if self.opened is not None and not self.closed and self._changed(self.opened):
            return ArchiveChangedError(f"{message}; the file changed after this reader opened it (an append?): open a new reader")
        return CorruptedError(message)

    def _open(self) -> None:
        self.size = size = self.src.size  # the archive's end: the file's, or the header's
        head = self.read(0, min(size, HEADER_SIZE))
        self.header = bytes(head)
        if size < HEADER_SIZE + TRAILER_SIZE:
            if bytes(head[: len(MAGIC)]) != MAGIC[: len(head)] or not head:
                raise NotAnArchiveError(f"not an msglc archive: {size} bytes, no msglc magic at offset 0")
            raise TruncatedError(f"file has {size} bytes, an msglc archive has at least {HEADER_SIZE + TRAILER_SIZE}")
        check_header(head)
        end = header_end(head)
        if end:  # an append is under way or died midway: the archive ends where it says
            if not HEADER_SIZE + TRAILER_SIZE <= end <= size:
                raise (TruncatedError if end > size else CorruptedError)(
                    f"the header says the archive ends at offset {end}; the file has {size} bytes"
                )
            self.size = size = end
        tail = self.read(size - TRAILER_SIZE, TRAILER_SIZE)
        if bytes(tail[-len(END_MAGIC) :]) != END_MAGIC:
            raise _NoTrailer(f"no msglc trailer at the end of the file ({size} bytes): truncated or not an archive")
        self.trailer = t = unpack_trailer(tail, size, self.header)
        self.data_end = t.data_off + t.data_len
        self.toc_end = t.toc_off + t.toc_len
        if t.root_len:
            self.root_view = self.view(t.data_off, t.data_len, t.toc_off + t.root_pos, t.root_len)

    def _no_trailer(self, size: int) -> NoReturn:
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
                    unpack_trailer(tail[at + len(END_MAGIC) - TRAILER_SIZE : at + len(END_MAGIC)], end, self.header)
                except MsglcError:
                    continue
                raise CorruptedError(
                    f"the archive ends at offset {end} but the file has {size} bytes: {size - end} bytes follow it "
                    f"(stale bytes of a reused buffer or file? read the first {end} bytes)"
                )
        raise TruncatedError(f"no msglc trailer at the end of the file ({size} bytes): truncated or not an archive")

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.read = _closed
            self.src.close()

    def decode_span(self, offset: int, size: int, prefix: bytes = b"") -> Any:
        """Decode ``size`` data bytes at ``offset`` (after ``prefix``, a container header)."""
        if offset < self.trailer.data_off or offset + size > self.data_end or size <= 0:
            raise self.damaged(f"data span {offset}+{size} lies outside the data section")
        return self.decode(prefix + self.read(offset, size) if prefix else self.read(offset, size), offset)

    def decode(self, data: bytes | memoryview, offset: int) -> Any:
        """Decode data bytes read from ``offset``, naming the offset if they are not msgpack."""
        try:
            return _decoder.decode(data)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as e:
            raise self.damaged(f"data at offset {offset} ({len(data)} bytes) is not valid msgpack: {_why(e)}") from None
        except (CorruptedError, UnsupportedVersionError) as e:  # from the NumPy array hook
            raise type(e)(f"data at offset {offset} ({len(data)} bytes): {e}") from None

    def read_into(self, offset: int, out: Any) -> None:
        """Fill the fresh C-contiguous NumPy array ``out`` with data bytes from ``offset``."""
        if self.closed:
            raise ValueError("I/O operation on a closed LazyReader")
        buf = memoryview(out.reshape(-1).view("u1"))
        if offset < self.trailer.data_off or offset + len(buf) > self.data_end:
            raise CorruptedError(f"data span {offset}+{len(buf)} lies outside the data section")
        self._fill(offset, buf)

    def _fill(self, offset: int, buf: memoryview) -> None:
        if self.counter is not None and not self.src.counts_itself:
            self.counter.add(len(buf))
        self.src.read_into(offset, buf)

    def node(self, pos: int, size: int) -> Any:
        node = self.nodes.get(pos)
        if node is None:
            if not (self.trailer.toc_off <= pos and pos + size <= self.toc_end):
                raise self.damaged(f"TOC node {pos}+{size} lies outside the TOC")
            if size < 5:
                raise CorruptedError(f"TOC node at offset {pos} is {size} bytes, too short")
            try:
                node = unframe_node(self.read(pos, size), pos)
                check_node(node, pos, self.trailer.toc_off)
            except CorruptedError as e:
                raise self.damaged(str(e)) from None
            if len(self.nodes) >= _MAX_NODE_CACHE:
                self.nodes.clear()
                self.node_sizes.clear()
                self.key_maps.clear()
            self.nodes[pos] = node
            self.node_sizes[pos] = size
        return node

    def child(self, base: int, span: int, parent_pos: int, ref: tuple[int, int]) -> LazyNode:
        """The lazy view of a container at ``base`` (``span`` bytes) whose node the parent
        node at ``parent_pos`` references with ``ref``."""
        return self.view(base, span, self.referred(parent_pos, ref), ref[1])

    @staticmethod
    def referred(parent_pos: int, ref: tuple[int, int]) -> int:
        """The position of the node that the node at ``parent_pos`` references with ``ref``,
        which must precede it (so no walk over references can loop)."""
        back, size = ref
        pos = parent_pos - back
        if back <= 0 or pos + size > parent_pos:
            raise CorruptedError(f"TOC node at offset {parent_pos} references a node at {pos} that does not precede it")
        return pos

    def walk(self, pos: int, size: int) -> Iterator[tuple[int, Any]]:
        """(position, node) of every TOC node reachable from the one at ``pos``, each once,
        reading TOC nodes only."""
        stack, seen = [(pos, size)], {pos}
        while stack:
            here, length = stack.pop()
            node = self.node(here, length)
            yield here, node
            for ref in getattr(node, "kids", {}).values():
                child = self.referred(here, ref)
                if child not in seen:
                    seen.add(child)
                    stack.append((child, ref[1]))

    def view(self, base: int, span: int, pos: int, size: int) -> LazyNode:
        """A lazy view of the container at ``base``; its header must match the node."""
        node = self.node(pos, size)
        if node_span(node) != span or base + span > self.data_end:
            raise self.damaged(f"TOC node at offset {pos} describes {node_span(node)} bytes where {span} are stored at offset {base}")
        if isinstance(node, ArrayNode):
            dtype, shape, start = parse_head(self.read(base, node.head), base, span)
            if start != node.head:
                raise CorruptedError(f"NumPy array at offset {base} does not match its TOC node at offset {pos}")
            view = LazyArray(self, base, pos, span, dtype, shape, start)
        else:
            if isinstance(node, StrideNode):
                heads = stride_headers(node)
                fits = heads is not None and bytes(self.read(base, len(heads))) == heads
            else:
                fits = container_header(self.read(base, min(5, span))) == node_header(node)
            if not fits:
                raise self.damaged(f"container at offset {base} does not match its TOC node at offset {pos}")
            view = make_view(self, base, pos, node)
        view._nsize = size
        return view

    def key_map(self, pos: int, node: MapNode) -> dict:
        keys = self.key_maps.get(pos)
        if keys is None:
            keys = self.key_maps[pos] = {k: j for j, k in enumerate(node.keys)}
        return keys


class LazyReader:
    """Read parts of an archive without loading it.

    ``source``: a path, a bytes-like object, a memory map, a readable seekable binary file, or
    a remote archive: a URL such as ``"s3://bucket/key.msg"`` (``storage_options`` go to its
    fsspec file system), a ``upath.UPath``, a path on the fsspec file system ``fs``, or an open
    fsspec file. ``cached``: keep decoded values in the lazy views so repeated reads are free
    (TOC nodes are always cached). ``counter``: a ``LazyStats`` that counts the requests.
    Remote archives are read in blocks of ``block_size`` bytes (read-ahead for small reads),
    the ``cache_blocks`` most recent kept.
    """

    def __init__(
        self,
        source: str | os.PathLike | bytes | bytearray | memoryview | BinaryIO,
        *,
        cached: bool = True,
        counter: LazyStats | None = None,
        fs: Any = None,
        storage_options: dict | None = None,
        block_size: int | None = None,
        cache_blocks: int | None = None,
    ) -> None:
        remote = {k: v for k, v in (("block_size", block_size), ("cache_blocks", cache_blocks)) if v is not None}
        self._a = Archive(source, cached, counter, fs=fs, storage_options=storage_options, **remote)
        self._root: Any = None

    # -- lifecycle --
    def close(self) -> None:
        self._a.close()
        self._root = None

    def __enter__(self) -> LazyReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<LazyReader {self._a.trailer.data_len} data bytes, TOC {self._a.trailer.toc_len} bytes>"

    # -- the root --
    def _root_obj(self) -> Any:
        root = self._root
        if root is not None:
            return root
        a = self._a
        if a.closed:
            raise ValueError("I/O operation on a closed LazyReader")
        root = a.root_view if a.root_view is not None else root_of(a)
        if a.cached or isinstance(root, LazyNode):
            self._root = root
        return root

    # -- access --
    def read(self, path: Any = None) -> Any:
        """The value at ``path`` ("a/b/3" or ["a", "b", 3]); the root when ``path`` is None."""
        return self[path]

    visit = read

    def __getitem__(self, path: Any) -> Any:
        root = self._root
        if root is None:
            root = self._root_obj()
        if type(path) is int:
            return root[path]
        return resolve(root, split_path(path))

    def __len__(self) -> int:
        return len(self._root_obj())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._root_obj())

    def __contains__(self, key: Any) -> bool:
        return key in self._root_obj()

    def keys(self) -> Any:
        return self._root_dict("keys").keys()

    def values(self) -> Any:
        return self._root_dict("values").values()

    def items(self) -> Any:
        return self._root_dict("items").items()

    def get(self, key: Any, default: Any = None) -> Any:
        return self._root_dict("get").get(key, default)

    def _root_dict(self, method: str) -> Any:
        """The root, for the dict methods: a clear error when it is not a dict."""
        root = self._root_obj()
        if not isinstance(root, (dict, LazyDict)):
            kind = "list" if isinstance(root, (list, LazyList)) else type(root).__name__
            raise TypeError(f"{method}() needs an archive whose root is a dict; this one's root is a {kind}")
        return root

    def read_many(self, paths: Iterable[Any], *, max_gap: int | None = None) -> list[Any]:
        """The values at ``paths``, in the order given, as ``[reader[p] for p in paths]`` would
        return them (and raising what it would raise first), but with the reads of all paths
        made together: reads less than ``max_gap`` bytes apart as one request (default 1 MB
        for remote archives, 4 KB for local files), the others concurrently. A path needing k
        dependent reads (TOC node, index page, value) costs k rounds of requests, for any
        number of paths."""
        from .batch import path_task, run

        return run(self._a, [path_task(p) for p in paths], max_gap)

    async def async_read_many(self, paths: Iterable[Any], *, max_gap: int | None = None) -> list[Any]:
        """``read_many`` for an event loop: requests are awaited (on fsspec's own loop for an
        async file system such as s3fs), decoding runs in a worker thread."""
        from .batch import async_run, path_task

        return await async_run(self._a, [path_task(p) for p in paths], max_gap)

    async def async_read(self, path: Any = None) -> Any:
        """``read`` for an event loop (see ``async_read_many``)."""
        return (await self.async_read_many([path]))[0]

    def to_obj(self) -> Any:
        """The whole stored object as plain Python objects (checks the data checksum)."""
        with gc_paused(True):
            return decode_all(self._a)

    def verify(self, progress: Callable[[int], None] | None = None) -> None:
        """Check the whole archive: the data checksum, and every TOC node against the item
        boundaries, keys and headers found in the data. Raises an ``MsglcError`` naming the first problem. Reads the data section
        into memory once; lazy reads check only what they touch. ``progress(n)`` is called as
        the data is read."""
        verify_archive(self._a, progress)

    def raw_data(self) -> bytes:
        """The archive's own bytes."""
        return bytes(self._a.read(0, self._a.size))

    def protocol_raw_data(self) -> bytes:
        """The data section alone: plain msgpack of the stored object."""
        t = self._a.trailer
        return bytes(self._a.read(t.data_off, t.data_len))


def root_of(a: Archive) -> Any:
    """The root: a lazy view when it has a TOC node, else the whole (small) object."""
    t = a.trailer
    if t.root_len:
        return a.view(t.data_off, t.data_len, t.toc_off + t.root_pos, t.root_len)
    return decode_all(a)


def decode_all(a: Archive) -> Any:
    """The whole data section decoded, its checksum checked (on another core meanwhile)."""
    t = a.trailer
    data = a.read(t.data_off, t.data_len)
    crc = ParallelCrc(data)
    try:
        obj = a.decode(data, t.data_off)
    finally:
        crc_value = crc.result()
    if crc_value != t.data_crc:
        raise CorruptedError(f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off})")
    return obj


# ---- paths -------------------------------------------------------------------------------------


def split_path(path: Any) -> list:
    if path is None:
        return []
    if isinstance(path, str):
        return [seg for seg in path.split("/") if seg != ""]
    if isinstance(path, (list, tuple)):
        return list(path)
    if isinstance(path, int) and not isinstance(path, bool):
        return [path]
    raise TypeError(f"a path is a str like 'a/b/3' or a list of keys and indices, not {type(path).__name__}")


def resolve(obj: Any, segments: list, done: tuple = ()) -> Any:
    """The value at ``segments`` below ``obj``; ``done``: the segments that led to ``obj``
    (errors name the whole path)."""
    for depth, seg in enumerate(segments):
        where = [*done, *segments[: depth + 1]]
        if isinstance(obj, LazyArray) or _is_ndarray(obj):
            # the next ndim segments index the array at once: "m/3/4" is m[3, 4]
            take = segments[depth : depth + max(obj.ndim, 1)]
            index = tuple(_list_index(s, [*done, *segments[: depth + k + 1]]) for k, s in enumerate(take))
            try:
                value = obj[index]
            except IndexError as e:
                raise IndexError(f"{e} (at {_joined([*done, *segments[: depth + len(take)]])})") from None
            return resolve(value, segments[depth + len(take) :], (*done, *segments[: depth + len(take)]))
        if isinstance(obj, (list, LazyList)):
            index = _list_index(seg, where)
            if isinstance(index, slice):
                before = (*done, *segments[:depth])
                positions = range(*index.indices(len(obj)))
                return [resolve(x, segments[depth + 1 :], (*before, i)) for i, x in zip(positions, obj[index], strict=True)]
            try:
                obj = obj[index]
            except IndexError:
                raise IndexError(f"index {index} out of range for a list of {len(obj)} (at {_joined(where)})") from None
        elif isinstance(obj, (dict, LazyDict)):
            obj = _dict_value(obj, seg, where)
        else:
            kind = type(obj).__name__ if obj is not None else "None"
            raise TypeError(f"cannot look up {seg!r} in a {kind} (at {_joined(where[:-1]) or 'the root'})")
    return obj


def _joined(path: list) -> str:
    return "/".join(map(str, path))


_INT = re.compile(r"-?[0-9]+")


def _is_ndarray(obj: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, np.ndarray)


def _list_index(seg: Any, where: list) -> int | slice:
    if not isinstance(seg, str):
        return seg
    parts = seg.split(":")
    if len(parts) <= 3 and all(p == "" or _INT.fullmatch(p) for p in parts) and (len(parts) > 1 or parts[0]):
        if len(parts) == 1:
            return int(seg)
        if parts[2:] != ["0"]:
            return slice(*(int(p) if p else None for p in parts))
    raise TypeError(f"list index must be an int or a slice like '1:5', not {seg!r} (at {'/'.join(map(str, where))})")


def _dict_value(d: Any, seg: Any, where: list) -> Any:
    try:
        return d[seg]
    except KeyError:
        if isinstance(seg, str) and _INT.fullmatch(seg):
            try:
                return d[int(seg)]
            except KeyError:
                pass
        raise KeyError(f"{seg!r} not found (at {'/'.join(map(str, where))})") from None


def to_obj(x: Any) -> Any:
    """A fully materialized plain object for a lazy view, a reader, or a list holding views."""
    if isinstance(x, (LazyNode, LazyReader)):
        return x.to_obj()
    if isinstance(x, list) and any(isinstance(v, (LazyNode, list)) for v in x):
        return [to_obj(v) for v in x]
    return x
