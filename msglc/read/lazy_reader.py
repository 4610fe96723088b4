"""Open an archive and read parts of it: ``LazyReader``, ``LazyStats``, ``to_obj``."""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO, Literal, overload

from msglc.config import check_codec_arg
from msglc.io.framed import FramedSource
from msglc.read.archive import Archive
from msglc.read.array import LazyArray
from msglc.read.extract import data_chunks
from msglc.read.fetch_rounds import BatchArchive, Task, async_run, path_task, run
from msglc.read.inspect import ArchiveInfo, FrameInfo, NodeInfo, archive_info, frame_infos, walk_tree
from msglc.read.legacy import any_root, combined_msgpack, walk_legacy
from msglc.read.local_many import read_grouped
from msglc.read.part import Bound, LazyPart, archive_of, rebound
from msglc.read.paths import lookup, lookup_below, resolve, split_path
from msglc.read.reopen import Reopen, reopen_spec
from msglc.read.stats import LazyStats
from msglc.read.verify import verify_archive
from msglc.read.views import LazyDict, LazyList, ViewCache, equal
from msglc.util.runtime import gc_paused

CHUNK = 1 << 24  # bytes per piece of raw_data(chunked=True)

__all__ = ["LazyArray", "LazyReader", "LazyStats", "LazyDict", "LazyList", "to_obj"]


class LazyReader(Bound):
    """Read parts of an archive without loading it.

    ``source``: a path, a bytes-like object, a memory map, a readable seekable binary file, or
    a remote archive: a URL such as ``"s3://bucket/key.msg"`` (``storage_options`` go to its
    fsspec file system), a ``upath.UPath``, a path on the fsspec file system ``fs``, or an open
    fsspec file. ``cached``: keep decoded values in the lazy views so repeated reads are free
    (TOC nodes are always cached). ``counter``: a ``LazyStats`` that counts the requests.
    Remote archives are read in blocks of ``block_size`` bytes (read-ahead for small reads),
    the ``cache_blocks`` most recent kept. ``unpacker``: the published msglc's codec argument,
    None only (every archive is msgpack).

    ``reader == x`` compares the stored object with ``x`` by value (``x`` may be another
    reader), as the lazy views do; readers are therefore unhashable.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | os.PathLike[bytes] | bytes | bytearray | memoryview | mmap.mmap | BinaryIO,
        *,
        cached: bool = True,
        counter: LazyStats | None = None,
        fs: Any = None,
        storage_options: dict[str, Any] | None = None,
        block_size: int | None = None,
        cache_blocks: int | None = None,
        unpacker: Any = None,
    ) -> None:
        if unpacker is not None:
            check_codec_arg("unpacker", unpacker)
        remote = {k: v for k, v in (("block_size", block_size), ("cache_blocks", cache_blocks)) if v is not None}
        views = ViewCache(cached)
        self._a = Archive(source, views, counter, any_root, fs=fs, storage_options=storage_options, **remote)
        self._a.reopen = reopen_spec(
            source, self._a, {"cached": cached, "fs": fs, "storage_options": storage_options, **remote}
        )
        self._root: Any = None
        self._views = views  # the archive's: ``reader[path]`` looks there first, one step shorter

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its source and options (not its counter): unpickled, it is the archive
        opened again, once per process, and checked to be the same (``msglc.read.reopen``)."""
        self._a.check_open()
        if self._a.reopen is None:
            raise TypeError(
                "a LazyReader opened from a file object cannot be pickled: open it from a path, a URL or bytes"
            )
        return (LazyReader._reopened, (self._a.reopen,))

    @classmethod
    def _reopened(cls, reopen: Reopen) -> LazyReader:
        """A reader over this process's shared archive for ``reopen`` (unpickling a reader)."""
        reader: LazyReader = cls.__new__(cls)
        reader._a = reopen.archive()
        reader._root = None
        reader._views = reader._a.views
        return reader

    # -- lifecycle --
    def close(self) -> None:
        self._a.close()
        self._root = None

    def __enter__(self) -> LazyReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyReader):
            other = other._root_obj()
        return equal(self._root_obj(), other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<LazyReader {self._a.opened.trailer.data_len} data bytes, TOC {self._a.opened.trailer.toc_len} bytes>"

    # -- the root --
    def _root_obj(self) -> Any:
        root = self._root
        if root is not None:
            return root
        a = self._a
        a.check_open()
        root = a.opened.root
        if not isinstance(root, LazyPart):
            root = a.decode_all()
        if a.views.cached or isinstance(root, LazyPart):
            self._root = root
        return root

    # -- access --
    def read(self, path: Any = None) -> Any:
        """The value at ``path`` ("a/b/3" or ["a", "b", 3]); the root when ``path`` is None."""
        return self[path]

    visit = read

    def unwrap(self) -> Any:
        """The root: a lazy view (``LazyDict``, ``LazyList``, ``LazyArray``) or, for a root
        small enough to have no TOC node, the plain value; ``read()`` is the same."""
        return self._root_obj()

    def __getitem__(self, path: Any) -> Any:
        if type(path) is str:  # a str path that led to a lazy view before: that view, at once
            made = self._views.get(path)
            if made is not None:
                return made
        root = self._root
        if root is None:
            root = self._root_obj()
        if type(path) is int:
            return root[path]
        if type(path) is str:
            return self._lookup(root, path)
        return resolve(root, split_path(path))

    def _lookup(self, root: Any, path: str) -> Any:
        """``lookup(root, path)``, with the view a str path led to kept in the archive's views
        (bounded, dropped at close): ``reader["table"]`` again, and ``reader["table/" + k]``,
        start from it."""
        a = self._a
        head, slash, tail = path.rpartition("/")
        parent = a.views.get(head) if slash and tail else None
        value = lookup(root, path) if parent is None else lookup_below(parent, head, tail)
        if isinstance(value, LazyPart):
            a.views.keep(path, value)
        return value

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
        a = self._a
        if max_gap is None and a.file.local:  # a local read costs little: spare the work per path
            a.check_open()
            with gc_paused(True):  # as to_obj: the values kept would trigger repeated full scans
                return read_grouped(self._root_obj(), paths)
        return run(a, [path_task(p) for p in paths], max_gap)

    async def async_read_many(self, paths: Iterable[Any], *, max_gap: int | None = None) -> list[Any]:
        """``read_many`` for an event loop: requests are awaited (on fsspec's own loop for an
        async file system such as s3fs), decoding runs in a worker thread."""
        return await async_run(self._a, [path_task(p) for p in paths], max_gap)

    async def async_read(self, path: Any = None) -> Any:
        """``read`` for an event loop (see ``async_read_many``)."""
        return (await self.async_read_many([path]))[0]

    async_visit = async_read

    def to_obj(self) -> Any:
        """The whole stored object as plain Python objects (checks the data checksum)."""
        with gc_paused(True):
            return self._a.decode_all()

    def verify(self, progress: Callable[[int], None] | None = None) -> None:
        """Check the whole archive: the data checksum, every TOC node against the item
        boundaries, keys and headers found in the data, and every value as a read decodes it
        (so a verified archive reads without error). Raises an ``MsglcError`` naming the first
        problem; lazy reads check only what they touch. The data section is read once, in
        order, in bounded memory: a few MB at a time (pieces of 4 MB, values decoded a MB at a
        time; a hash-indexed dict also keeps 16 bytes per key while it is checked),
        whatever the archive's size. ``progress(n)`` is called as the data is read. An archive of
        the published msglc has no checksum: its TOC entries, their ranges and its values are
        checked (``walk_legacy``, which holds its data section whole)."""
        if self._a.opened.legacy is not None:
            self._a.check_open()
            walk_legacy(self._a)
            return
        verify_archive(self._a, progress)

    @overload
    def raw_data(self, chunked: Literal[False] = False) -> bytes: ...
    @overload
    def raw_data(self, chunked: Literal[True]) -> Iterator[bytes]: ...
    def raw_data(self, chunked: bool = False) -> bytes | Iterator[bytes]:
        """The archive's own bytes (a compressed one's as stored); ``chunked=True``: in
        pieces of at most 16 MB (the published msglc's default; here the whole is)."""
        a = self._a
        a.check_open()
        if chunked:
            return (
                bytes(a.file.read(at, min(CHUNK, a.opened.file_size - at)))
                for at in range(0, a.opened.file_size, CHUNK)
            )
        return bytes(a.file.read(0, a.opened.file_size))

    @overload
    def protocol_raw_data(self, chunked: Literal[False] = False) -> bytes: ...
    @overload
    def protocol_raw_data(self, chunked: Literal[True]) -> Iterator[bytes]: ...
    def protocol_raw_data(self, chunked: bool = False) -> bytes | Iterator[bytes]:
        """The data section alone: plain msgpack of the stored object; ``chunked=True``: in
        pieces (``iter_protocol_raw_data``, its checksum checked as they go)."""
        if chunked:
            return (bytes(chunk) for chunk in self.iter_protocol_raw_data())
        pieces = combined_msgpack(self._a)  # (a combined archive of the published msglc holds archives)
        if pieces is not None:
            return b"".join(pieces)
        t = self._a.opened.trailer
        return bytes(self._a.read(t.data_off, t.data_len))

    def iter_protocol_raw_data(self, progress: Callable[[int], None] | None = None) -> Iterator[bytes | memoryview]:
        """``protocol_raw_data()`` in chunks of 16 MB, for output of any size in bounded memory;
        the data checksum is checked as they go (``CorruptedError`` after the last chunk). A
        combined archive of the published msglc, whose data section holds whole archives, gives
        the msgpack of its members' values instead (``progress`` is not called)."""
        self._a.check_open()
        pieces = combined_msgpack(self._a)
        return data_chunks(self._a, progress or (lambda n: None)) if pieces is None else pieces

    # -- inspection --
    def info(self) -> ArchiveInfo:
        """The archive's layout: format version, sections, threshold, root node."""
        self._a.check_open()
        return archive_info(self._a)

    def frames(self) -> Iterator[FrameInfo]:
        """The zstd frames of a compressed archive (``FrameInfo``: where each is stored, what
        it holds, its filter and dictionary), in order; none for a plain archive."""
        self._a.check_open()
        return frame_infos(self._a)

    def dictionary(self, d: int) -> bytes:
        """The bytes of dictionary ``d`` of a compressed archive (``FrameInfo.dictionary``): a
        raw-content zstd dictionary, as ``zstd -D`` takes it to decompress those frames."""
        self._a.check_open()
        src = self._a.src
        if not isinstance(src, FramedSource) or not 0 < d <= src.dictionaries:
            raise ValueError(f"this archive has no dictionary {d}")
        return src.dictionary_bytes(d)

    def nodes(self, path: Any = None, max_depth: int | None = None) -> Iterator[tuple[int, str, NodeInfo]]:
        """(depth, label, ``NodeInfo``) of the TOC node of the value at ``path`` and of the
        nodes below it, depth first, down to ``max_depth`` levels (None: all); a node several
        parents share is listed under each, expanded once. Nothing for a value without a node
        of its own (small, or a row of a fixed-stride list)."""
        value = self._root_obj() if path is None else self.read(path)
        if not isinstance(value, LazyPart):
            return iter(())
        where = value.location()
        return walk_tree(self._a, where.node, where.node_size, max_depth) if where.node_size else iter(())


def to_obj(x: Any) -> Any:
    """A fully materialized plain object for a lazy view, a reader, or a list holding views."""
    if isinstance(x, (LazyPart, LazyReader)):
        return x.to_obj()
    return _rebuild(x, lambda leaf: leaf.to_obj())


def to_obj_task(x: Any) -> Task:
    """``x.to_obj()`` for a reader or lazy view ``x``, its reads made through the batch."""

    def materialize(batch: BatchArchive) -> Any:
        if isinstance(x, LazyReader):
            return batch.decode_all()
        return rebound(x, batch).to_obj()

    return materialize


def _lazy_in(x: Any) -> Iterator[Any]:
    """The readers and lazy views in ``x`` (itself, or inside nested lists), in order; a
    loop, not a recursion (a list read from an archive may nest at any depth)."""
    stack = [iter((x,))]
    while stack:
        for v in stack[-1]:
            if isinstance(v, (LazyReader, LazyPart)):
                yield v
            elif isinstance(v, list):
                stack.append(iter(v))
                break
        else:
            stack.pop()


def _rebuild(x: Any, replace: Callable[[Any], Any]) -> Any:
    """``x`` with each reader and lazy view ``v`` in it (inside nested lists too) replaced by
    ``replace(v)``, in ``_lazy_in`` order: a list holding lists or views is copied, any other
    value kept. A loop, not a recursion."""
    if not isinstance(x, list):
        return replace(x) if isinstance(x, (LazyReader, LazyPart)) else x
    lazy = (LazyReader, LazyPart, list)
    if not any(isinstance(v, lazy) for v in x):
        return x
    root: list[Any] = []
    stack = [(iter(x), root)]
    while stack:
        items, out = stack[-1]
        for v in items:
            if isinstance(v, (LazyReader, LazyPart)):
                out.append(replace(v))
            elif isinstance(v, list) and any(isinstance(w, lazy) for w in v):
                out.append([])
                stack.append((iter(v), out[-1]))
                break
            else:
                out.append(v)
        else:
            stack.pop()
    return root


async def async_to_obj(x: Any) -> Any:
    """``to_obj(x)`` from an event loop: the bytes are fetched without blocking it and decoded
    in a worker thread. ``x``: a ``LazyReader``, a lazy view, or a list holding views; the
    views of one reader are read together."""
    leaves = list(_lazy_in(x))
    by_archive: dict[int, list[int]] = {}
    for i, leaf in enumerate(leaves):
        by_archive.setdefault(id(archive_of(leaf)), []).append(i)
    groups = list(by_archive.values())
    import asyncio  # only here: importing it costs ~25 ms, and most programs never await

    done = await asyncio.gather(
        *(async_run(archive_of(leaves[g[0]]), [to_obj_task(leaves[i]) for i in g]) for g in groups)
    )
    values: list[Any] = [None] * len(leaves)
    for g, got in zip(groups, done, strict=True):
        for i, value in zip(g, got, strict=True):
            values[i] = value
    done_values = iter(values)
    return _rebuild(x, lambda _: next(done_values))
