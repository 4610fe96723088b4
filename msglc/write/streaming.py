"""``LazyWriter``: write an archive whose lists (and dicts) are produced while it is written.

Lists of unknown length (generators, iterators, list subclasses with their own ``__iter__``)
are written in batches: each batch is encoded by msgspec in one call and indexed like any list,
then its bytes go to the file and only its span boundaries are kept. Dicts of unknown length
(``Pairs``, dict subclasses with their own ``items()``) likewise, each batch a dict: only the
keys' encodings and offsets are kept, for the hash index and to refuse a key met twice. The
container's msgpack header, whose count is known only at the end, is written as a 5-byte
array32 or map32 header and filled in afterwards, so the target must be a path or a seekable
file. Memory holds one batch plus the TOC (and the keys), never the data.

Compressed (``compression="zstd"``), the data goes through a ``FrameWriter``: frames are
compressed in a thread pool as the batches come, and a header reserved for later is patched
while its frame is still buffered, or else becomes a raw zstd frame of its own, rewritten in
place once the count is known (it keeps its size).
"""

from __future__ import annotations

import io
import os
import sys
import zlib
from array import array
from collections.abc import Callable, ItemsView, Iterable, Iterator, Sequence, Sized
from contextlib import ExitStack
from itertools import islice
from types import TracebackType
from typing import Any, BinaryIO, TypeVar, cast

import msgspec

from msglc.config import Config, current, refuse_order
from msglc.format.hash_index import BLOCK_BYTES, MAP_INLINE_MAX, block_bits_for, region_of
from msglc.format.layout import HEADER_SIZE, Trailer, compressed_header, pack_header
from msglc.format.msgpack import array_header, container_header_size, map_header
from msglc.format.nodes import MapNode, exact_key, whole_max
from msglc.io.atomic import atomic_file, end_here, is_named
from msglc.io.names import RemotePath, resolve_name
from msglc.io.uploads import spooled_target
from msglc.util import accel
from msglc.util.checksum import crc32_combine, data_crc32
from msglc.util.runtime import gc_paused
from msglc.write import encoder
from msglc.write import values as validate
from msglc.write.arrays import ArrayEncoder, DataSection
from msglc.write.compress import HEAD_FRAME, FrameWriter, Slot, frame_size
from msglc.write.encoder import encode_value
from msglc.write.indexer import GARBLED, TocBuilder, key_hashes, key_records, map_raws
from msglc.write.unsized import Pairs, Streamed, is_streamed, stop_iteration_error

BATCH = 4096  # at most this many items per msgspec call when streaming a list


BATCH_BYTES = 1 << 22  # and about this many encoded bytes (large items make small batches)


_key_encoder = msgspec.msgpack.Encoder(enc_hook=exact_key)


_V = TypeVar("_V")  # a batch: a list of items or a dict of entries


_R = TypeVar("_R")  # what a batch's layout returns


class _Data:
    """The data section as it is written: its (plain) position, and its CRC-32 kept as
    segments so that headers filled in later can be checksummed in place (folded once none is
    pending). Compressed, the bytes go to ``frames`` (the file gets zstd frames)."""

    def __init__(self, f: BinaryIO, frames: FrameWriter | None = None) -> None:
        self.f = f
        self.frames = frames
        self.out: Any = f if frames is None else frames
        self.pos = 0
        self.crc32 = data_crc32()
        self.parts: list[list[int]] = []  # [crc, length] of closed segments, in order
        self.pending = 0  # reserved slots not filled yet
        self.crc = 0
        self.length = 0

    def write(self, chunk: bytes | memoryview) -> None:
        self.out.write(chunk)
        self.crc = self.crc32(chunk, self.crc)
        self.length += len(chunk)
        self.pos += len(chunk)

    def reserve(self, size: int) -> tuple[int | Slot, list[int]]:
        """Room for ``size`` bytes written later by ``fill``."""
        self.parts.append([self.crc, self.length])
        slot = [0, size]
        self.parts.append(slot)
        self.pending += 1
        self.crc, self.length = 0, 0
        at: int | Slot = self.pos
        if self.frames is not None:
            at = self.frames.reserve(size)
        else:
            self.f.write(bytes(size))
        self.pos += size
        return at, slot

    def fill(self, at: int | Slot, slot: list[int], data: bytes) -> None:
        if isinstance(at, Slot):
            assert self.frames is not None
            self.frames.fill(at, data)
        else:
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

    def __init__(self, data: _Data, cfg: Config) -> None:
        self.data = data
        self.threshold = cfg.small_obj_optimization_threshold  # spans are cut at about this size
        self.whole = whole_max(self.threshold)  # containers up to this size get no node
        self.numpy_encoder = cfg.numpy_encoder
        self.disable_gc = cfg.disable_gc
        self.enc_hook = cfg.enc_hook
        # plain-archive blocks, compressed too: frames are cut at fixed sizes here, not at block
        # starts, and a block across a cut costs its lookup a second frame (2 KB blocks: 11% slower)
        self.block_bytes = BLOCK_BYTES
        # writes the streamed containers' nodes (and indexes): big dicts of a plain archive get
        # a direct index (type 10) as dump gives them; of a compressed one, a block index
        direct = data.frames is None and encoder.DIRECT_INDEX
        self.nodes = TocBuilder(b"", self.threshold, block_bytes=self.block_bytes, direct=direct)
        self.toc = self.nodes.toc  # the whole TOC: batches' nodes are appended to it in place

    def emit(self, obj: Any) -> tuple[int, tuple[int, int] | None]:
        """Write ``obj``; returns its encoded length and its node (TOC position, length).
        Raises ``validate.Unsupported`` (with the path below ``obj``) for values it refuses."""
        if is_streamed(obj):
            return self._container(obj)
        obj = self._converted(obj)
        arrays = ArrayEncoder(self.numpy_encoder)
        try:
            with gc_paused(
                self.disable_gc
            ):  # only around msgspec and the index: the user's generators run with the GC on
                buf = _encode_value(obj, arrays)
                section = DataSection(buf, arrays)
                builder = self._builder(buf, section)
                ref = builder.build_root(obj)
        except Streamed:
            return self._container(obj)  # a list or dict holding streamed values
        self.toc += builder.toc
        for chunk in section.chunks():
            self.data.write(chunk)
        return section.size, ref if ref[1] else None

    def _converted(self, value: _V) -> _V:
        """``value`` with the values msglc refuses converted by the ``enc_hook`` option."""
        if self.enc_hook is None or (accel.speedups is not None and accel.speedups.plain_values(value)):
            return value
        return cast(_V, validate.converted(value, self.enc_hook))

    def _builder(self, buf: bytes, section: DataSection) -> TocBuilder:
        return TocBuilder(
            buf,
            self.threshold,
            section.splices,
            toc_base=len(self.toc),
            block_bytes=self.block_bytes,
            direct=self.nodes.direct,
        )

    def _container(self, obj: Any) -> tuple[int, tuple[int, int] | None]:
        """A list, tuple, set or dict holding streamed values, or a streamed value itself."""
        return self._dict(obj) if isinstance(obj, (dict, Pairs, ItemsView)) else self._list(obj)

    def _batch(
        self, value: _V, layout: Callable[[TocBuilder, _V, int, int, int], _R]
    ) -> tuple[DataSection, TocBuilder, int, _R] | None:
        """Encode a batch of items (a list) or entries (a dict) in one msgspec call and lay it
        out with ``layout(builder, value, 0, len(buf), h)`` (``TocBuilder.list_items`` or
        ``map_entries``): (section, builder, header size h, layout). None when the batch holds
        streamed values (nothing is written then): its items go one by one."""
        arrays = ArrayEncoder(self.numpy_encoder)
        try:
            with gc_paused(self.disable_gc):
                buf = _encode_value(value, arrays)
                section = DataSection(buf, arrays)
                builder = self._builder(buf, section)
                h = container_header_size(buf[0])
                try:
                    return section, builder, h, layout(builder, value, 0, len(buf), h)
                except GARBLED:
                    validate.raise_if_streamed(value)
                    raise
        except Streamed:
            return None

    def _write_body(self, section: DataSection, builder: TocBuilder, h: int) -> None:
        """Write a batch's bytes without its h-byte header (the container has its own), and
        its nodes."""
        self.toc += builder.toc
        skip = h
        for chunk in section.chunks():
            self.data.write(memoryview(chunk)[skip:])
            skip = 0

    def _list(self, obj: Any) -> tuple[int, tuple[int, int] | None]:
        start = self.data.pos
        reserved = self._open(obj, (list, tuple), array_header)
        spans = _Spans()
        items = iter(obj)
        size = 16  # items per batch: grown or shrunk so that a batch encodes to about BATCH_BYTES
        while batch := list(islice(items, size)):
            size = _next_size(size, self._list_batch(batch, start, spans))
        self._close(reserved, b"\xdd", spans.count)
        total = self.data.pos - start
        if (total <= self.whole or not spans.count) and not spans.kids:
            return total, None
        return total, self.nodes.add_list(spans.count, spans.starts, [*spans.offs, total], spans.kids)

    def _list_batch(self, batch: list[Any], start: int, spans: _Spans) -> int:
        """Write a batch of the list's items (the list starts at ``start``); returns the bytes
        written. One msgspec call, unless items hold streamed values."""
        at = self.data.pos
        batch = self._converted(batch)
        try:
            encoded = self._batch(batch, TocBuilder.list_items)
        except validate.Unsupported as e:
            e.path[-1] += spans.count  # the index in the batch, as an index in the list
            raise
        if encoded is None:
            self._items_one_by_one(batch, start, spans)
        else:
            section, builder, h, (item_offs, batch_kids) = encoded
            spans.add_batch(builder, at - start - h, item_offs, len(batch), batch_kids)
            self._write_body(section, builder, h)
        return self.data.pos - at

    def _items_one_by_one(self, batch: list[Any], start: int, spans: _Spans) -> None:
        """Items holding streamed values, each written by ``emit``."""
        for item in batch:
            at = self.data.pos - start
            try:
                length, ref = self.emit(item)
            except validate.Unsupported as e:
                e.path.append(spans.count)
                raise
            spans.add(at, length, ref, self.threshold)

    def _dict(self, obj: Any) -> tuple[int, tuple[int, int] | None]:
        """A dict from its ``items()``, ``Pairs`` or an items view, in batches: each batch a
        dict encoded in one msgspec call. Memory holds a batch, the keys' encodings and their
        offsets (for the hash index and the check that no key occurs twice), and the TOC."""
        start = self.data.pos
        pairs = iter(obj.items() if isinstance(obj, dict) else obj.items if isinstance(obj, Pairs) else obj)
        reserved = self._open(obj, (dict,), map_header)
        keys = _Keys()
        size = 16
        while batch := list(islice(pairs, size)):
            size = _next_size(size, self._dict_batch(_entries(batch, self._converted), start, keys))
        self._close(reserved, b"\xdf", keys.count)
        total = self.data.pos - start
        return total, self._map_node(keys, total)

    def _dict_batch(self, entries: dict[Any, Any], start: int, keys: _Keys) -> int:
        """Write a batch of the dict's entries (the dict starts at ``start``); returns the
        bytes written. One msgspec call, unless values hold streamed values."""
        at = self.data.pos
        encoded = self._batch(entries, TocBuilder.map_entries)
        if encoded is None:
            self._pairs_one_by_one(entries, start, keys)
        else:
            section, builder, h, (raws, offs, kids) = encoded
            keys.add_batch(
                at - start - h, raws, offs, kids and {j: kids[k] for j, k in enumerate(entries) if k in kids}
            )
            self._write_body(section, builder, h)
        return self.data.pos - at

    def _pairs_one_by_one(self, entries: dict[Any, Any], start: int, keys: _Keys) -> None:
        """Entries holding streamed values, each value written by ``emit``."""
        for key, value in entries.items():
            raw = _key_encoder.encode(key)
            at = self.data.pos - start
            self.data.write(raw)
            try:
                _, ref = self.emit(value)
            except validate.Unsupported as e:
                e.path.append(key)
                raise
            keys.add(at, raw, ref)

    def _map_node(self, keys: _Keys, total: int) -> tuple[int, int] | None:
        """The node of a streamed dict of ``total`` bytes (None if it needs none), once its
        keys are checked: a key that occurs twice is refused."""
        keys.reach(total)
        keys.koffs.append(total)
        if keys.count <= MAP_INLINE_MAX:
            return self._inline_map_node(keys, total)
        records, firsts, starts = key_records(keys.blob, keys.count)
        _refuse_repeated(keys.sharing_hash(records, starts))
        if (total <= self.whole or not keys.count) and not keys.kids:
            return None
        kids = {j: (keys.key(j, starts), ref) for j, ref in keys.kids.items()}
        if self.nodes.direct:
            del starts, records, firsts  # (before the hashes: a streamed dict's peak is its index)
            hashes = key_hashes(keys.blob, keys.count)
            keys.blob = bytearray()
            return self.nodes.direct_node(keys.count, keys.koffs, kids, hashes)
        keys.blob = bytearray()  # not needed for the index: freed before it is written
        del starts
        region = self.nodes.add_region(
            region_of(records, firsts, keys.koffs, block_bits_for(keys.koffs, self.block_bytes))
        )
        del records
        return self.nodes.hash_node(keys.count, keys.koffs, kids, region)

    def _inline_map_node(self, keys: _Keys, total: int) -> tuple[int, int] | None:
        """``_map_node`` of a dict of at most ``MAP_INLINE_MAX`` keys: they are in its node."""
        raws = keys.raws()
        _refuse_repeated(raws)
        if (total <= self.whole or not keys.count) and not keys.kids:
            return None
        koffs = list(keys.koffs)
        voffs = [k + len(raw) for k, raw in zip(koffs, raws, strict=False)]  # koffs has the end too
        return self.nodes.add_node(
            MapNode(
                keys=list(map(msgspec.msgpack.decode, raws)), koffs=koffs, voffs=voffs, kids=self.nodes.refs(keys.kids)
            )
        )

    def _open(
        self, obj: Any, sized: tuple[type[Sized], ...], header: Callable[[int], bytes]
    ) -> tuple[int | Slot, list[int]] | None:
        """Write a container's header: exact when ``obj`` is one of the ``sized`` types and
        yields its storage (whose length the base type's ``__len__`` gives, whatever a
        subclass's says), else 5 bytes reserved for ``_close`` (the count is known at the end)."""
        for base in sized:
            if isinstance(obj, base) and not is_streamed(obj):
                self.data.write(header(base.__len__(obj)))
                return None
        return self.data.reserve(5)

    def _close(self, reserved: tuple[int | Slot, list[int]] | None, marker32: bytes, count: int) -> None:
        if reserved is not None:
            if count >= 2**32:
                raise ValueError("msglc containers hold fewer than 2**32 items")
            self.data.fill(*reserved, marker32 + count.to_bytes(4, "big"))


class LazyWriter:
    """Write one object whose lists may be generators or other iterators (and whose dicts may
    be ``msglc.Pairs``), consuming each once, with memory bounded by a batch and the TOC::

        with msglc.LazyWriter("records.mlc") as writer:
            writer.write({"meta": {...}, "records": ({"id": i, "x": f(i)} for i in range(10**7))})

    ``target``: a path (written atomically, like ``dump``) or a seekable binary file (not
    opened for appending). Options as for ``dump``. If the block fails, a path target is left
    as it was; a file object keeps what was written before the failure."""

    def __init__(
        self,
        target: str | os.PathLike[str] | BinaryIO,
        *,
        fs: Any = None,
        storage_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        refuse_order(options, "LazyWriter")
        self.cfg = current(**options)
        self.header = compressed_header() if self.cfg.compression else pack_header()
        self.target = target = resolve_name(target, fs, storage_options)
        self.is_path = is_named(target)
        if not self.is_path and not (
            hasattr(target, "write") and hasattr(target, "seek") and getattr(target, "seekable", lambda: True)()
        ):
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
            frames = None
            if self.cfg.compression is not None:
                size = frame_size(self.cfg.small_obj_optimization_threshold)
                frames = FrameWriter(f, size, self.cfg.compression_level, HEADER_SIZE, head=HEAD_FRAME)
                self._stack.callback(frames.abort)
            f.write(self.header)
        except BaseException:
            self._stack.__exit__(*sys.exc_info())
            raise
        self._data = _Data(f, frames)
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
            raise ValueError(validate.TOO_DEEP) from None
        except StopIteration as e:  # from a value's items() or __iter__: it must not end the caller's loop
            raise stop_iteration_error() from e
        self._failed = False

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
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
        data, toc = self._streamer.data, self._streamer.toc  # the streamer writes to self._data
        threshold = self.cfg.small_obj_optimization_threshold
        if data.frames is None:
            data.f.write(toc)
            trailer = Trailer.contiguous(data.pos, len(toc), self._root, data.checksum(), threshold)
        else:  # the TOC is framed after the data
            data.frames.end_data()
            data.frames.write(memoryview(toc)[: self._root[0]])
            data.frames.cut()  # the root node starts a frame: opening decompresses no more than it
            data.frames.write(memoryview(toc)[self._root[0] :])
            trailer = Trailer.compressed(data.frames.close(self._root), data.checksum(), threshold)
        data.f.write(trailer.pack(self.header))
        if not self.is_path:
            end_here(data.f)


def _encode_value(value: Any, arrays: ArrayEncoder) -> bytes:
    """``encode_value``, with a refused type raised as ``validate.Unsupported`` (its path from
    ``value``) so that the enclosing streamed containers add theirs."""
    try:
        return encode_value(value, arrays)
    except TypeError:
        validate.check_value(value)
        raise


def _next_size(size: int, nbytes: int) -> int:
    """Items in the next batch, after one of ``size`` items took ``nbytes``: doubled up to
    ``BATCH``, shrunk when items are large (a batch stays about ``BATCH_BYTES``)."""
    return max(1, min(BATCH, size * 2, size * BATCH_BYTES // max(nbytes, 1)))


def _entries(batch: list[Any], convert: Callable[[dict[Any, Any]], dict[Any, Any]]) -> dict[Any, Any]:
    """A batch of (key, value) pairs as a dict, ``convert``-ed (the ``enc_hook`` option) and
    checked: pairs, str or int keys, none twice in the batch (``_Keys`` finds those repeated
    across batches). C-level passes only."""
    if not all(issubclass(t, (tuple, list)) for t in set(map(type, batch))) or set(map(len, batch)) != {2}:
        raise _bad_pair(batch)
    try:
        entries = dict(batch)
    except TypeError:  # an unhashable key
        for key, _ in batch:
            if not validate.key_type_ok(type(key)):
                raise validate.bad_key(key) from None
        raise
    if len(entries) < len(batch):
        # keys equal in Python are not always one key stored (1, True, 1.0): each pair is
        # converted and checked on its own, and only keys stored alike are repeated ones
        pairs = [next(iter(convert({key: value}).items())) for key, value in batch]
        for key, _ in pairs:
            if not validate.key_type_ok(type(key)):
                raise validate.bad_key(key)
        _refuse_repeated([_key_encoder.encode(key) for key, _ in pairs])
        return dict(pairs)
    entries = convert(entries)
    validate.check_keys(entries)
    return entries


def _bad_pair(batch: list[Any]) -> TypeError:
    for pair in batch:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            return TypeError(f"a streamed dict takes (key, value) pairs, not {type(pair).__name__} {pair!r:.40}")
    return TypeError("a streamed dict takes (key, value) pairs")  # pragma: no cover - a pair changed meanwhile


def _refuse_repeated(raws: Iterable[bytes]) -> None:
    """Keys are distinct: equal keys have equal encodings; refuse the first met twice."""
    seen: set[bytes] = set()
    for raw in map(bytes, raws):
        if raw in seen:
            raise ValueError(f"key {msgspec.msgpack.decode(raw)!r:.40} occurs twice in a streamed dict")
        seen.add(raw)


class _Spans:
    """The spans of a list being streamed (as in ``ListNode``): each span's first item and
    offset, and the nodes of the items that are spans of their own."""

    def __init__(self) -> None:
        self.count = 0
        self.starts: list[int] = []
        self.offs: list[int] = []
        self.kids: dict[int, tuple[int, int]] = {}

    def add(self, at: int, length: int, ref: tuple[int, int] | None, threshold: int) -> None:
        """One item of ``length`` bytes at offset ``at`` with its node (or None): it joins the
        last span unless either has a node or the span would grow past the threshold."""
        if (
            ref is not None
            or not self.starts
            or len(self.starts) - 1 in self.kids
            or at + length - self.offs[-1] > threshold
        ):
            self.starts.append(self.count)
            self.offs.append(at)
        if ref is not None:
            self.kids[len(self.starts) - 1] = ref
        self.count += 1

    def add_batch(
        self, builder: TocBuilder, shift: int, item_offs: Sequence[int], n: int, batch_kids: dict[int, tuple[int, int]]
    ) -> None:
        """A batch of n items laid out by ``TocBuilder.list_items``, its byte 0 at ``shift``."""
        span_starts, span_offs, span_kids = builder.spans(item_offs, n, batch_kids)
        self.kids.update({len(self.starts) + k: ref for k, ref in span_kids.items()})
        self.starts += [self.count + s for s in span_starts]
        self.offs += [shift + o for o in span_offs[:-1]]
        self.count += n


class _Keys:
    """The keys of a dict being streamed: each entry's offset, the keys' encodings each
    followed by a nil byte (a msgpack map body: ``indexer.key_records``), and the nodes of
    large values by entry. 5 bytes per entry (9 past 4 GiB) plus the keys' encodings."""

    def __init__(self) -> None:
        self.count = 0
        self.koffs = array("I")  # u64 once an offset needs it (``reach``)
        self.blob = bytearray()
        self.kids: dict[int, tuple[int, int]] = {}

    def add(self, at: int, raw: bytes, ref: tuple[int, int] | None) -> None:
        """One entry at offset ``at``, its key encoded as ``raw``, its value's node or None."""
        self.reach(at)
        self.koffs.append(at)
        self.blob += raw
        self.blob += b"\xc0"
        if ref is not None:
            self.kids[self.count] = ref
        self.count += 1

    def add_batch(self, shift: int, raws: Sequence[bytes], offs: list[int], kids: dict[int, tuple[int, int]]) -> None:
        """A batch laid out by ``TocBuilder.map_entries`` (keys and values alternately), its
        byte 0 at offset ``shift``; ``kids`` by entry in the batch."""
        n = len(raws) // 2
        self.reach(shift + offs[2 * n - 2])
        self.koffs.extend(map(shift.__add__, offs[0 : 2 * n : 2]))
        self.blob += b"\xc0".join(raws[0::2])
        self.blob += b"\xc0"
        self.kids.update({self.count + j: ref for j, ref in kids.items()})
        self.count += n

    def reach(self, offset: int) -> None:
        """Make room for ``offset`` in ``koffs``: 4 bytes a key below 4 GiB."""
        if offset >= 2**32 and self.koffs.typecode == "I":
            self.koffs = array("Q", self.koffs)

    def raws(self) -> list[msgspec.Raw]:
        """Every key's encoding (``msgspec.Raw``), in order: for dicts of inline keys."""
        return map_raws(self.blob, 0, 0, len(self.blob), self.count)[0::2]

    def key(self, entry: int, starts: Sequence[int]) -> Any:
        """The key of ``entry``, decoded (``starts`` from ``key_records``)."""
        return msgspec.msgpack.decode(self.blob[starts[entry] : starts[entry + 1] - 1])

    def sharing_hash(self, records: memoryview | array[int], starts: Sequence[int]) -> list[bytes]:
        """The encodings of the keys whose hash another key shares: only those can be
        repeated. ``records`` (hash << 32 | entry) are sorted, so equal hashes are adjacent."""
        entries = sorted({records[i + d] & 0xFFFFFFFF for i in _equal_hash_neighbours(records) for d in (0, 1)})
        return [bytes(self.blob[starts[e] : starts[e + 1] - 1]) for e in entries]


def _equal_hash_neighbours(records: memoryview | array[int], chunk: int = 1 << 16) -> Iterator[int]:
    """The indices i where records i and i + 1 have the same hash (high 32 bits), found a
    chunk of hashes at a time: a few MB at most, whatever the number of keys."""
    words = memoryview(records).cast("B").cast("I")
    hashes = words[1 if sys.byteorder == "little" else 0 :: 2]  # a view: nothing copied
    for first in range(0, len(hashes) - 1, chunk):
        for i in _equal_neighbours(hashes[first : first + chunk + 1].tobytes(), 4):
            yield first + i


def _equal_neighbours(items: bytes, width: int) -> Iterator[int]:
    """The indices i where item i equals item i + 1 in ``items``, a run of ``width``-byte
    items: where the items XOR their successors to zero. Big-int arithmetic at C speed,
    without a Python object per item."""
    view = memoryview(items)
    pairs = int.from_bytes(view[:-width], "little") ^ int.from_bytes(view[width:], "little")
    diff = pairs.to_bytes(len(items) - width, "little")
    zero = bytes(width)
    at = diff.find(zero)
    while at >= 0:
        if at % width == 0:
            yield at // width
        at = diff.find(zero, at + 1)


def stream(target: Any, obj: Any, options: dict[str, Any]) -> None:
    """What ``dump`` does with an object holding streamed values (generators, ``Pairs``,
    containers with their own iteration): ``LazyWriter`` writes them as they are produced."""
    with LazyWriter(target, **options) as writer:
        writer.write(obj)


def stream_bytes(obj: Any, options: dict[str, Any]) -> bytes:
    """``dumps`` of such an object."""
    out = io.BytesIO()
    stream(out, obj, options)
    return out.getvalue()
