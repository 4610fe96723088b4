"""``LazyWriter``: write an archive whose lists (and dicts) are produced while it is written.

Lists of unknown length (generators, iterators) are written in batches: each batch is encoded
by msgspec in one call and indexed like any list, then its bytes go to the file and only its
span boundaries are kept. The list's msgpack header, whose item count is known only at the
end, is written as a 5-byte array32 header and filled in afterwards, so the target must be a
path or a seekable file. Memory holds one batch plus the TOC, never the data.
"""

from __future__ import annotations

import os
import sys
import zlib
from collections.abc import ItemsView
from contextlib import ExitStack
from itertools import islice
from typing import Any, BinaryIO

import msgspec

from . import validate
from .arrays import ArrayEncoder, DataSection
from .bulk import crc32_combine, data_crc32, gc_paused
from .config import current
from .format import HEADER_SIZE, ListNode, MapNode, Trailer, array_header, container_header_size, frame_node, map_header, pack_header
from .indexer import MAP_INLINE_MAX, TocBuilder
from .remote import RemotePath, resolve_name, spooled_target
from .streamed import Pairs, Streamed, is_streamed
from .writer import _encode, atomic_file, is_named

BATCH = 4096  # at most this many items per msgspec call when streaming a list
BATCH_BYTES = 1 << 22  # and about this many encoded bytes (large items make small batches)
_key_encoder = msgspec.msgpack.Encoder()


class _Data:
    """The data section as it is written: its position, and its CRC-32 kept as segments so
    that headers filled in later can be checksummed in place (folded once none is pending)."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.pos = 0
        self.crc32 = data_crc32()
        self.parts: list[list[int]] = []  # [crc, length] of closed segments, in order
        self.pending = 0  # reserved slots not filled yet
        self.crc = 0
        self.length = 0

    def write(self, chunk: Any) -> None:
        self.f.write(chunk)
        self.crc = self.crc32(chunk, self.crc)
        self.length += len(chunk)
        self.pos += len(chunk)

    def reserve(self, size: int) -> tuple[int, list[int]]:
        """Room for ``size`` bytes written later by ``fill``."""
        self.parts.append([self.crc, self.length])
        slot = [0, size]
        self.parts.append(slot)
        self.pending += 1
        self.crc, self.length = 0, 0
        at = self.pos
        self.f.write(bytes(size))
        self.pos += size
        return at, slot

    def fill(self, at: int, slot: list[int], data: bytes) -> None:
        back = self.f.tell()
        self.f.seek(HEADER_SIZE + at)
        self.f.write(data)
        self.f.seek(back)
        slot[0] = zlib.crc32(data)
        self.pending -= 1
        if not self.pending:  # fold: no slot left to fill
            self.crc, self.length = self.checksum(), sum(length for _, length in self.parts) + self.length
            self.parts = []

    def checksum(self) -> int:
        value = 0
        for crc, length in [*self.parts, [self.crc, self.length]]:
            value = crc32_combine(value, crc, length)
        return value


class _Streamer:
    """Writes values at the end of the data section and their nodes into ``toc``."""

    def __init__(self, data: _Data, cfg: Any) -> None:
        self.data = data
        self.threshold = cfg.small_obj_optimization_threshold
        self.numpy_encoder = cfg.numpy_encoder
        self.disable_gc = cfg.disable_gc
        self.toc = bytearray()

    def emit(self, obj: Any) -> tuple[int, tuple[int, int] | None]:
        """Write ``obj``; returns its encoded length and its node (TOC position, length).
        Raises ``validate.Unsupported`` (with the path below ``obj``) for values it refuses."""
        if is_streamed(obj):
            return self._container(obj)
        arrays = ArrayEncoder(self.numpy_encoder)
        try:
            with gc_paused(self.disable_gc):  # only around msgspec and the index: the user's generators run with the GC on
                buf = _encode(obj, arrays)
                section = DataSection(buf, arrays)
                builder = self._builder(buf, section)
                ref = builder.build_root(obj)
        except Streamed:
            return self._container(obj)  # a list or dict holding streamed values
        self.toc += builder.toc
        for chunk in section.chunks():
            self.data.write(chunk)
        return section.size, ref if ref[1] else None

    def _builder(self, buf: bytes, section: DataSection) -> TocBuilder:
        return TocBuilder(buf, self.threshold, section.splices, toc_base=len(self.toc))

    def _container(self, obj: Any) -> tuple[int, tuple[int, int] | None]:
        """A list, tuple, set or dict holding streamed values, or a streamed value itself."""
        return self._dict(obj) if isinstance(obj, (dict, Pairs, ItemsView)) else self._list(obj)

    def _list(self, obj: Any) -> tuple[int, tuple[int, int] | None]:
        d = self.data
        start = d.pos
        reserved = self._open(obj, (list, tuple), array_header)
        starts: list[int] = []
        offs: list[int] = []
        kids: dict[int, tuple[int, int]] = {}
        count = 0
        items = iter(obj)
        size = 16  # items per batch: grown or shrunk so that a batch encodes to about BATCH_BYTES
        while batch := list(islice(items, size)):
            arrays = ArrayEncoder(self.numpy_encoder)
            try:
                with gc_paused(self.disable_gc):
                    buf = _encode(batch, arrays)
            except Streamed:  # items holding streamed values: one at a time
                for item in batch:
                    item_at = d.pos - start
                    try:
                        length, ref = self.emit(item)
                    except validate.Unsupported as e:
                        e.path.append(count)
                        raise
                    if ref is not None or not starts or len(starts) - 1 in kids or item_at + length - offs[-1] > self.threshold:
                        starts.append(count)  # a new span; else the item joins the last one
                        offs.append(item_at)
                    if ref is not None:
                        kids[len(starts) - 1] = ref
                    count += 1
                continue
            section = DataSection(buf, arrays)
            builder = self._builder(buf, section)
            h = container_header_size(buf[0])
            try:
                with gc_paused(self.disable_gc):
                    item_offs, batch_kids = builder.list_items(batch, 0, len(buf), h)
            except validate.Unsupported as e:
                e.path[-1] += count  # the index in the batch, as an index in the list
                raise
            span_starts, span_offs, span_kids = builder._spans(item_offs, len(batch), batch_kids)
            shift = d.pos - start - h  # container offset of the batch's byte 0 (its header is not written)
            kids.update({len(starts) + k: ref for k, ref in span_kids.items()})
            starts += [count + s for s in span_starts]
            offs += [shift + o for o in span_offs[:-1]]
            self.toc += builder.toc
            chunks = section.chunks()
            d.write(memoryview(next(chunks))[h:])
            for chunk in chunks:
                d.write(chunk)
            count += len(batch)
            size = max(1, min(BATCH, size * 2, size * BATCH_BYTES // max(section.size, 1)))
        self._close(reserved, b"\xdd", count)
        total = d.pos - start
        if total <= self.threshold and not kids:
            return total, None
        return total, self._add(ListNode(n=count, starts=starts, offs=[*offs, total], kids=self._refs(kids)))

    def _dict(self, obj: Any) -> tuple[int, tuple[int, int] | None]:
        d = self.data
        start = d.pos
        pairs = obj.items() if isinstance(obj, dict) else obj.items if isinstance(obj, Pairs) else obj  # or an ItemsView
        reserved = self._open(obj, dict, map_header)
        keys: list[Any] = []
        key_raws: list[bytes] = []
        koffs: list[int] = []
        voffs: list[int] = []
        kids: dict[int, tuple[int, int]] = {}
        seen: set = set()
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"a streamed dict takes (key, value) pairs, not {type(pair).__name__} {pair!r:.40}")
            key, value = pair
            if not validate.key_type_ok(type(key)):
                raise validate.bad_key(key)  # the enclosing levels add the path
            if key in seen:
                raise ValueError(f"key {key!r:.40} occurs twice in a streamed dict")
            seen.add(key)
            raw = _key_encoder.encode(key)
            koffs.append(d.pos - start)
            d.write(raw)
            voffs.append(d.pos - start)
            try:
                _, ref = self.emit(value)
            except validate.Unsupported as e:
                e.path.append(key)
                raise
            if ref is not None:
                kids[len(keys)] = ref
            keys.append(key)
            key_raws.append(raw)
        n = len(keys)
        self._close(reserved, b"\xdf", n)
        total = d.pos - start
        koffs.append(total)
        if total <= self.threshold and not kids:
            return total, None
        if n <= MAP_INLINE_MAX:
            return total, self._add(MapNode(keys=keys, koffs=koffs, voffs=voffs, kids=self._refs(kids)))
        builder = TocBuilder(b"", self.threshold, toc_base=len(self.toc))
        ref = builder._hash_node(n, koffs, {j: (keys[j], r) for j, r in kids.items()}, builder._hash_index(key_raws, koffs))
        self.toc += builder.toc
        return total, ref

    def _open(self, obj: Any, sized: Any, header: Any) -> tuple[int, list[int]] | None:
        """Write a container's header: exact when ``obj`` is one of the ``sized`` types, else
        5 bytes reserved for ``_close`` (the count is known at the end)."""
        if isinstance(obj, sized):
            self.data.write(header(len(obj)))
            return None
        return self.data.reserve(5)

    def _close(self, reserved: tuple[int, list[int]] | None, marker32: bytes, count: int) -> None:
        if reserved is not None:
            if count >= 2**32:
                raise ValueError("msglc containers hold fewer than 2**32 items")
            self.data.fill(*reserved, marker32 + count.to_bytes(4, "big"))

    def _refs(self, kids: dict[Any, tuple[int, int]]) -> dict[Any, tuple[int, int]]:
        """Node positions as references from the node written next."""
        here = len(self.toc)
        return {k: (here - pos, size) for k, (pos, size) in kids.items()}

    def _add(self, node: Any) -> tuple[int, int]:
        pos = len(self.toc)
        self.toc += frame_node(node)
        return pos, len(self.toc) - pos


class LazyWriter:
    """Write one object whose lists may be generators or other iterators (and whose dicts may
    be ``msglc.Pairs``), consuming each once, with memory bounded by a batch and the TOC::

        with msglc.LazyWriter("records.mlc") as writer:
            writer.write({"meta": {...}, "records": ({"id": i, "x": f(i)} for i in range(10**7))})

    ``target``: a path (written atomically, like ``dump``) or a seekable binary file (not
    opened for appending). Options as for ``dump``. If the block fails, a path target is left
    as it was; a file object keeps what was written before the failure."""

    def __init__(
        self, target: str | os.PathLike | BinaryIO, *, fs: Any = None, storage_options: dict | None = None, **options: Any
    ) -> None:
        self.cfg = current(**options)
        self.target = target = resolve_name(target, fs, storage_options)
        self.is_path = is_named(target)
        if not self.is_path and not (hasattr(target, "write") and hasattr(target, "seek") and getattr(target, "seekable", lambda: True)()):
            raise TypeError(f"LazyWriter needs a path or a seekable binary file, not {type(target).__name__}")
        if "a" in getattr(target, "mode", ""):
            raise TypeError("LazyWriter cannot write to a file opened for appending: its writes always go to the end")
        self._stack = ExitStack()
        self._data: _Data | None = None
        self._written = False
        self._failed = False

    def __enter__(self) -> LazyWriter:
        try:
            if isinstance(self.target, RemotePath):  # the stream seeks back: spooled locally
                f = self._stack.enter_context(spooled_target(self.target))
            elif self.is_path:
                f = self._stack.enter_context(atomic_file(self.target, self.cfg.durable))
            else:
                f = self.target
            if not self.is_path and f.tell():
                raise ValueError("LazyWriter writes a whole archive: the file must be positioned at its start")
            f.write(pack_header())
        except BaseException:
            self._stack.__exit__(*sys.exc_info())
            raise
        self._data = _Data(f)
        return self

    def write(self, obj: Any) -> None:
        """Write the archive's object (once)."""
        if self._data is None:
            raise ValueError("use LazyWriter as a context manager: with LazyWriter(path) as w: w.write(obj)")
        if self._written:
            raise ValueError("an archive holds one object: LazyWriter.write() was already called")
        self._written = True
        self._failed = True
        self._streamer = _Streamer(self._data, self.cfg)
        try:
            self._root = self._streamer.emit(obj)[1] or (0, 0)
        except validate.Unsupported as e:
            raise e.error() from None
        except RecursionError:
            raise ValueError("object is nested too deeply or contains a reference to itself") from None
        self._failed = False

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is None:
                if not self._written:
                    raise ValueError("LazyWriter closed without write(): no object to store")
                if self._failed:
                    raise ValueError("LazyWriter.write() failed: nothing was written")
                self._finish()
        except BaseException:
            self._stack.__exit__(*sys.exc_info())  # removes a path target's temporary file
            raise
        self._stack.__exit__(exc_type, exc, tb)

    def _finish(self) -> None:
        data, toc = self._data, self._streamer.toc
        data.f.write(toc)
        trailer = Trailer(
            data_off=HEADER_SIZE,
            data_len=data.pos,
            toc_off=HEADER_SIZE + data.pos,
            toc_len=len(toc),
            root_pos=self._root[0],
            root_len=self._root[1],
            data_crc=data.checksum(),
            threshold=self.cfg.small_obj_optimization_threshold,
        )
        data.f.write(trailer.pack(pack_header()))
