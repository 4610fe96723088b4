"""``FramedSource``: a compressed archive read as if it were plain (docs/compression.md).
Logical offsets inside the framed stream (the data section; in 2.1 the TOC after it) are
served from the zstd frames that hold them, each decompressed at most once while it stays in
a small cache, with the dictionary it names (loaded once); offsets before it (the header) and
after it (2.0: the TOC, the trailer) from the file, shifted by what compression saved."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from msglc.config import current
from msglc.errors import ArchiveChangedError, CorruptedError, MsglcError
from msglc.format.frames import (
    FOOTER_SIZE,
    MAX_DICT,
    MAX_FRAME,
    MIN_FRAME,
    RAW,
    RAW_HEAD,
    SHUFFLE,
    FrameTable,
    Index,
    Page,
    dictionary_frame,
    index_size,
    parse_index,
    parse_page,
    raw_frame_fits,
)
from msglc.format.shuffle import gather, gather_into, unshuffle, unshuffle_into
from msglc.io.base import Counter, Source
from msglc.io.frame_map import FrameMap, paged_map
from msglc.util.optional import zstandard

BULK_BYTES = 1 << 21  # a read of the data this long decompresses its frames in the thread pool (read_into)
BULK_RATIO = 64  # ... when it is at most this many times its frames' stored bytes (else frame by frame)
CACHE_FRAMES = 16  # decompressed data frames kept (at most 16 MB; 16 x 64 KB typically)
WALK_CACHE = 1 << 22  # bytes of decompressed frames kept apart that walks down many levels read again: ...
SMALL_FRAME = 1 << 10  # ... TOC frames, and data frames this small (the heads of big containers)
SMALL_COST = 320  # bytes a kept frame is counted for besides its own: its entry (bytes object, tuple, ordered
# dict node and key: about 260 bytes in CPython 3.11), so that many tiny frames stay within WALK_CACHE
DICT_CACHE = 1 << 26  # bytes of dictionaries kept loaded (but the one in use): writers make them of 1 MB
DECOMPRESSORS_KEPT = 32  # decompressors a thread keeps, one per dictionary (a dictionary per region: 32 at most)
GATHER_MAX = 64  # reads of at most this many bytes of a shuffled frame gather them, unshuffling nothing
TASK_BYTES = 1 << 20  # plain bytes per task of a bulk read (a few frames: the pool's overhead stays small)


Entry = tuple[bytes | bytearray, int]  # a decompressed frame as stored, and its shuffle's element size (0: plain)


_FAR: tuple[int, int, memoryview] = (-1, -1, memoryview(b""))  # no frame read yet


class FramedSource(Source):
    """``raw`` holds ``data_off`` bytes, then the compressed section (``stored`` bytes: its
    frames as ``frames`` maps them, then its tables), then the rest; this source shows
    ``data_off`` bytes, the plain stream (``frames.plain`` bytes), then the rest. ``dicts``:
    each dictionary's (offset in the section of its record, record size, plain size)."""

    def __init__(
        self,
        raw: Source,
        data_off: int,
        frames: FrameMap | FrameTable,
        stored: int,
        dicts: list[tuple[int, int, int]] | None = None,
        counter: Counter | None = None,
        toc_at: int | None = None,
    ) -> None:
        """``counter``: where a reader counts its reads (``raw``'s own when it counts itself).
        ``toc_at``: where the TOC starts in the plain stream (2.1), None when it is not framed:
        the frames from there on are kept in a cache of their own (``WALK_CACHE`` bytes), so that
        data reads do not push out the nodes of the levels above them; small data frames are
        kept there too (``SMALL_FRAME``: writers cut a big container's key and header out as
        one, which every walk through the container checks)."""
        self._zstd = zstandard()
        self.raw = raw
        self.data_off = data_off
        self.table = frames if isinstance(frames, FrameMap) else FrameMap.whole(frames)
        self.plain = self.table.plain
        self.shift = stored - self.plain  # add to a logical offset past the stream to find it in the file
        self.size = raw.size - self.shift
        self.counter = raw.counter if raw.counts_itself else counter
        self.counts_itself = True  # the file's reads are counted (below, or by the file itself)
        self._count = self.counter is not None and not raw.counts_itself
        # read_many: logical ranges are merged only where they touch (their frames are merged
        # below, in stored bytes, with the file's own gap); in memory every read is direct
        self.max_gap = 1 if raw.max_gap else 0
        self.max_request = raw.max_request
        self._frames: OrderedDict[int, Entry] = OrderedDict()
        self._toc_at = self.plain if toc_at is None else toc_at
        self._walk_frames: OrderedDict[int, Entry] = OrderedDict()  # TOC and small frames, least recently
        self._walk_bytes = 0  # used first, ``WALK_CACHE`` bytes of them at most (the newest stays)
        self._lock = threading.Lock()
        self._local = threading.local()
        self._dict_places = dicts or []
        self._dicts: OrderedDict[int, tuple[Any, int]] = OrderedDict()  # number -> (dictionary, its size),
        self._dict_bytes = 0  # least recently used first, ``DICT_CACHE`` bytes of them at most
        self._raw_frames: set[int] = set()  # raw frames whose layout was checked (read in place)
        # the plain bytes of the data frame and of the TOC frame read last (unshuffled ones), as
        # (logical start, end, bytes): a read inside one is a slice, with no lookup
        self._near_data = self._near_toc = _FAR

    def _in_place(self, i: int, page: Page, k: int) -> int:
        """Where raw frame ``i`` (``k``-th of ``page``) holds its plain bytes in the file: its
        layout checked the first time (its size against the table's, its header), so that
        nothing but its own plain bytes is ever read in place for it."""
        at = self.data_off + page.stored[k]
        if i not in self._raw_frames:
            stored, plain = page.stored[k + 1] - page.stored[k], page.logical[k + 1] - page.logical[k]
            if not raw_frame_fits(self._raw(at, RAW_HEAD), stored, plain):
                raise self._not_raw(i, at, stored, plain)
            with self._lock:
                self._raw_frames.add(i)
        return at + RAW_HEAD

    def _not_raw(self, i: int, at: int, stored: int, plain: int) -> MsglcError:
        return self.damaged(
            f"compressed frame {i} at offset {at}: the frame table says it is a raw frame of {plain} bytes "
            f"({plain + RAW_HEAD + 4} stored), but it is {stored} bytes or its header says otherwise"
        )

    def _raw(self, offset: int, size: int, bulk: bool = False) -> bytes | memoryview:
        """A read of the file, counted as one request when the file does not count itself;
        ``bulk``: one of a bulk read's (``Source.read_bulk``)."""
        if self._count and self.counter is not None:
            self.counter.add(size)
        return self.raw.read_bulk(offset, size) if bulk else self.raw.read(offset, size)

    def read(self, offset: int, size: int) -> bytes | memoryview:
        return self._read(offset, size, True)

    def read_checked(self, offset: int, size: int) -> bytes | memoryview:
        """``read``, but no raw frame's bytes taken in place: every frame the bytes lie in is
        decompressed and checked, its zstd checksum included (``verify``)."""
        return self._read(offset, size, False)

    def _read(self, offset: int, size: int, in_place: bool) -> bytes | memoryview:
        near = self._near_data  # the frames last read: a walk reads on in them
        if near[0] <= offset <= offset + size <= near[1]:
            return near[2][offset - near[0] : offset - near[0] + size]
        near = self._near_toc
        if near[0] <= offset <= offset + size <= near[1]:
            return near[2][offset - near[0] : offset - near[0] + size]
        end, data_end = offset + size, self.data_off + self.plain
        if offset < 0 or size < 0 or end > self.size:  # (before any read of the file)
            raise self._short(offset, size, max(0, min(size, self.size - offset)))
        if end <= self.data_off:
            return self._raw(offset, size)
        if offset >= data_end:
            return self._raw(offset + self.shift, size)
        lo = offset - self.data_off
        if lo < 0:
            return self._slice(offset, end, {}, None, in_place)
        page, k, i = self.table.locate(lo)
        if end - self.data_off <= page.logical[k + 1]:  # one frame: the usual small read
            if in_place and page.codes and page.codes[k] == RAW:  # stored as it is: read in place
                return self._raw(self._in_place(i, page, k) + lo - page.logical[k], size)
            entry = self._entry(i)
            a = lo - page.logical[k]
            if not entry[1]:
                view = memoryview(entry[0])
                near = (offset - a, offset - a + len(view), view)
                if page.logical[k] < self._toc_at:
                    self._near_data = near
                else:
                    self._near_toc = near
                return view[a : a + size]
            return self._piece(i, entry, a, a + size)
        if size >= BULK_BYTES and end - self.data_off <= self.plain:  # to_obj, raw_data, ...
            # decompressed in the pool straight into one buffer, allocated before any frame is
            # checked: only for what the frames' stored bytes (in the file) can plausibly hold
            last = self.table.frame_of(end - self.data_off - 1)
            if size <= BULK_RATIO * (self.table.stored(last + 1) - page.stored[k]):
                out = bytearray(size)
                self.read_into(offset, memoryview(out))
                return memoryview(out)
        return self._slice(offset, end, {}, None, in_place)

    def read_into(self, offset: int, out: memoryview, threads: int | None = None) -> None:
        """Fill ``out`` from logical ``offset`` (large NumPy reads): whole frames decompress
        straight into ``out`` (a shuffled one through a scratch buffer), in a pool of
        ``threads`` threads (default ``read_threads``; zstd and the C unshuffle release the
        GIL) when the read spans several tasks' worth; no frame is cached or copied whole."""
        lo = offset - self.data_off
        if lo < 0 or lo + len(out) > self.plain:
            out[:] = self.read(offset, len(out))
            return
        hi = lo + len(out)
        table = self.table
        first, last = table.frame_of(lo), table.frame_of(hi - 1)
        tasks: list[tuple[int, int]] = []  # runs of frames [a, b), each about TASK_BYTES
        for i in range(first, last + 1):
            if tasks and table.logical(i) - table.logical(tasks[-1][0]) < TASK_BYTES:
                tasks[-1] = (tasks[-1][0], i + 1)
            else:
                tasks.append((i, i + 1))

        def fill(task: tuple[int, int]) -> None:
            self._fill(task[0], task[1], lo, hi, out)

        threads = min(current().read_threads if threads is None else threads, len(tasks))
        if threads <= 1:
            for task in tasks:
                fill(task)
            return
        with ThreadPoolExecutor(threads) as pool:
            for _ in pool.map(fill, tasks):  # raises the first task's error
                pass

    def _fill(self, a: int, b: int, lo: int, hi: int, out: memoryview) -> None:
        """Frames [a, b) into ``out``, which holds logical bytes [lo, hi): their stored bytes
        in one read of the file; frames inside ``out`` decompress into it, the part of one at
        its edges is copied (or gathered, from a shuffled one) from the cache or from the
        frame decompressed apart."""
        table = self.table
        stored_a = table.stored(a)
        base = self.data_off + stored_a
        data = memoryview(self._raw(base, table.stored(b) - stored_a, bulk=True))
        for i in range(a, b):
            page, k = table.at(i)
            start, end = page.logical[k], page.logical[k + 1]
            piece = data[page.stored[k] - stored_a : page.stored[k + 1] - stored_a]
            if lo <= start and end <= hi:
                self._decompress_into(i, piece, out[start - lo : end - lo])
                continue
            with self._lock:
                entry = self._kept(i)
            frame, element = entry if entry is not None else self._checked(i, piece, keep=False)
            a_, b_ = max(lo, start), min(hi, end)
            if element:  # the part needed, unshuffled straight into ``out``
                gather_into(frame, element, a_ - start, out[a_ - lo : b_ - lo])
            else:
                out[a_ - lo : b_ - lo] = memoryview(frame)[a_ - start : b_ - start]

    def decode_frames(self, offset: int, size: int, sink: Callable[[int, memoryview, int], None]) -> bool:
        """Hand the frames that make up logical [offset, offset + size) to ``sink(logical
        offset, bytes, element)``, in order, in this thread: their stored bytes in one read,
        each decompressed (and checked) into a buffer of this thread's own that ``sink`` must
        copy from before it returns, as stored: byte-shuffled by ``element`` bytes, or plain
        (0; ``sink`` unshuffles them where they go, in one pass); nothing is cached. False,
        and nothing done, when the range does not begin and end where frames do."""
        lo = offset - self.data_off
        hi = lo + size
        if lo < 0 or size <= 0 or hi > self.plain:
            return False
        table = self.table
        first, last = table.frame_of(lo), table.frame_of(hi - 1)
        if table.logical(first) != lo or table.logical(last + 1) != hi:
            return False
        stored_a = table.stored(first)
        data = memoryview(self._raw(self.data_off + stored_a, table.stored(last + 1) - stored_a, bulk=True))
        for i in range(first, last + 1):
            page, k = table.at(i)
            start, end = page.logical[k], page.logical[k + 1]
            stored = self._scratch(end - start)
            self._decompress_frame_into(i, data[page.stored[k] - stored_a : page.stored[k + 1] - stored_a], stored)
            sink(self.data_off + start, stored, page.shuffle(k) if table.filtered else 0)
        return True

    def _scratch(self, size: int) -> memoryview:
        """A buffer of ``size`` bytes of this thread's own, reused from frame to frame (a
        frame decompressed as stored: ``decode_frames``, or before it is unshuffled)."""
        buf: bytearray | None = getattr(self._local, "scratch", None)
        if buf is None or len(buf) < size:
            buf = self._local.scratch = bytearray(max(size, 1 << 16))
        return memoryview(buf)[:size]

    def frame_at(self, offset: int) -> tuple[int, int, bytes | bytearray, int] | None:
        """The data frame holding logical ``offset``, decompressed and cached as a read caches
        it: (its first logical offset, its end, its bytes, its shuffle's element size or 0 when
        they are plain), or None for a raw frame or an offset outside the frames. A shuffled
        frame is handed out shuffled, as the cache holds it until a larger read unshuffles it
        whole (``_plain``), so that a block of it is unshuffled where it is needed
        (``gather_grid``), not the whole frame."""
        lo = offset - self.data_off
        if not 0 <= lo < self.plain:
            return None
        page, k, i = self.table.locate(lo)
        if page.codes and page.codes[k] == RAW:
            return None
        data, element = self._entry(i)
        return self.data_off + page.logical[k], self.data_off + page.logical[k + 1], data, element

    def _holder(self, i: int) -> OrderedDict[int, Entry] | None:
        """The cache that keeps frame ``i`` (TOC frames have their own), or None (with the lock
        held)."""
        if i in self._frames:
            return self._frames
        return self._walk_frames if i in self._walk_frames else None

    def _kept(self, i: int) -> Entry | None:
        """Frame ``i`` from the cache that keeps it, or None (with the lock held)."""
        holder = self._holder(i)
        return None if holder is None else holder[i]

    def _entry(self, i: int) -> Entry:
        with self._lock:
            holder = self._holder(i)
            if holder is not None:
                holder.move_to_end(i)
                return holder[i]
        page, k = self.table.at(i)
        start, stop = page.stored[k], page.stored[k + 1]
        return self._checked(i, self._raw(self.data_off + start, stop - start), where=(page, k))

    def _plain(self, i: int, entry: Entry) -> bytes | bytearray:
        """The plain bytes of frame ``i`` from its ``entry``; a shuffled frame is unshuffled
        (once: the cache then holds the plain bytes)."""
        data, element = entry
        if not element:
            return data
        plain = unshuffle(data, element)
        with self._lock:
            holder = self._holder(i)
            if holder is not None:
                holder[i] = (plain, 0)
        return plain

    def _piece(self, i: int, entry: Entry, a: int, b: int) -> bytes | memoryview:
        """Bytes [a, b) of frame ``i`` (``entry``): a slice, or gathered from a shuffled frame."""
        data, element = entry
        if element and b - a <= GATHER_MAX:
            return gather(data, element, a, b)
        return memoryview(self._plain(i, entry))[a:b]

    def _check(self, i: int, data: bytes | memoryview, entry: tuple[Page, int] | None = None) -> int:
        """Check frame ``i``'s table entry (``entry``: its page and index there, when known)
        and zstd header (``data``: its stored bytes) before anything is decompressed; returns
        its plain size. (The usual frame in a few steps: anything else is looked at closely,
        for its error.)"""
        page, k = entry or self.table.at(i)
        expected = page.logical[k + 1] - page.logical[k]
        try:
            params = self._zstd.get_frame_parameters(data)
        except self._zstd.ZstdError:
            return self._check_closely(i, data)
        code = page.codes[k] if page.codes else 0
        if code and (code != SHUFFLE or expected % page.params[k]):  # a shuffle's elements divide the frame
            return self._check_closely(i, data)
        if not (params.content_size == expected and params.has_checksum):
            return self._check_closely(i, data)
        if MIN_FRAME <= len(data) and 0 < expected <= MAX_FRAME:
            return expected
        return self._check_closely(i, data)

    def _check_closely(self, i: int, data: bytes | memoryview) -> int:
        """``_check``, each condition with its own error."""
        at = self.data_off + self.table.stored(i)
        why = self.table.check_frame(i, MAX_FRAME)
        if why is not None:
            raise CorruptedError(f"compressed frame {i} at offset {at}: {why}")
        expected = self.table.logical(i + 1) - self.table.logical(i)
        page, k = self.table.at(i)
        if page.codes and page.codes[k] == RAW and not raw_frame_fits(data[:RAW_HEAD], len(data), expected):
            raise self._not_raw(i, at, len(data), expected)  # (read in place elsewhere: refused alike)
        zstd = self._zstd
        try:
            params = zstd.get_frame_parameters(data)
        except zstd.ZstdError as e:
            raise self.damaged(f"compressed frame {i} at offset {at} is not a zstd frame: {e}") from None
        if params.content_size != expected:
            raise self.damaged(
                f"compressed frame {i} at offset {at} declares {params.content_size} bytes where the seek table "
                f"says {expected}"
            )
        if not params.has_checksum:
            raise self.damaged(f"compressed frame {i} at offset {at} carries no checksum")
        return expected

    def _decompressor(self, d: int = 0) -> object:
        """This thread's decompressor for frames of dictionary ``d`` (0: none): one per thread,
        since a decompressor is not thread-safe; a thread keeps one for each of the
        ``DECOMPRESSORS_KEPT`` dictionaries it used last that the dictionary cache still holds
        (each holds its dictionary: a file may name thousands, and they stay within
        ``DICT_CACHE``), so that reads across a file of a dictionary per region do not make
        one a read (about 15 us)."""
        local = self._local
        if not d:
            plain = getattr(local, "plain", None)
            if plain is None:
                plain = local.plain = self._zstd.ZstdDecompressor()
            return plain
        kept: OrderedDict[int, object] | None = getattr(local, "with_dict", None)
        if kept is None:
            kept = local.with_dict = OrderedDict()
        made = kept.get(d)
        if made is None:
            made = self._zstd.ZstdDecompressor(dict_data=self._dictionary(d))
            with self._lock:  # (each holds its dictionary: none the cache has let go of)
                for gone in [k for k in kept if k not in self._dicts]:
                    del kept[gone]
            kept[d] = made
            if len(kept) > DECOMPRESSORS_KEPT:
                kept.popitem(last=False)
        else:
            kept.move_to_end(d)
        return made

    def _dictionary(self, d: int) -> Any:
        """Dictionary ``d`` of the section, read, checked and decompressed when a frame needs
        it (a raw-content dictionary: bytes that frames refer back into), and kept while the
        dictionaries kept take at most ``DICT_CACHE`` bytes: a file may name 65535 of up to
        ``MAX_DICT`` bytes each, from records of a few hundred bytes."""
        with self._lock:
            kept = self._dicts.get(d)
            if kept is not None:
                self._dicts.move_to_end(d)
                return kept[0]
        if not 0 < d <= len(self._dict_places):
            raise CorruptedError(
                f"compressed section: a frame names dictionary {d}; the section has {len(self._dict_places)}"
            )
        at, size, plain = self._dict_places[d - 1]
        frame = dictionary_frame(self._raw(self.data_off + at, size))
        zstd = self._zstd
        try:
            params = zstd.get_frame_parameters(frame)
            if params.content_size != plain or not params.has_checksum or not 0 < plain <= MAX_DICT:
                raise CorruptedError(f"compressed section: dictionary {d} does not declare its {plain} bytes")
            raw = zstd.ZstdDecompressor().decompress(frame, max_output_size=plain, allow_extra_data=False)
        except zstd.ZstdError as e:
            raise self.damaged(f"compressed section: dictionary {d} does not decompress: {e}") from None
        if len(raw) != plain:
            raise self.damaged(f"compressed section: dictionary {d} holds {len(raw)} bytes, not {plain}")
        loaded = zstd.ZstdCompressionDict(raw, dict_type=zstd.DICT_TYPE_RAWCONTENT)
        with self._lock:
            if d not in self._dicts:
                self._dicts[d] = (loaded, plain)
                self._dict_bytes += plain
                while self._dict_bytes > DICT_CACHE and len(self._dicts) > 1:  # (the newest stays)
                    self._dict_bytes -= self._dicts.popitem(last=False)[1][1]
            return self._dicts[d][0]

    def decompress_frame(self, i: int, data: bytes | memoryview) -> bytes | bytearray:
        """The plain bytes of frame ``i`` from its stored bytes ``data``, checked as every read
        checks a frame (a copy of the frame made elsewhere checks it so), not cached."""
        return self._plain(i, self._checked(i, data, keep=False))

    @property
    def dictionaries(self) -> int:
        """How many dictionaries the section holds."""
        return len(self._dict_places)

    def dictionary_bytes(self, d: int) -> bytes:
        """The raw content of the section's dictionary ``d`` (so that a copy of its frames
        can carry it along)."""
        data: bytes = self._dictionary(d).as_bytes()
        return data

    def _checked(
        self, i: int, data: bytes | memoryview, keep: bool = True, where: tuple[Page, int] | None = None
    ) -> Entry:
        """Frame ``i`` from its stored bytes ``data``: checked, decompressed, cached (``keep``);
        ``where``: its page and index there, when the caller has them."""
        page, k = where or self.table.at(i)
        expected = self._check(i, data, (page, k))
        zstd = self._zstd
        d = page.dictionary(k) if self._dict_places else 0
        decompressor: Any = self._decompressor(d)
        try:
            frame: bytes = decompressor.decompress(data, max_output_size=expected, allow_extra_data=False)
        except zstd.ZstdError as e:
            raise self._undecompressable(i, e) from None
        if len(frame) != expected:
            raise self.damaged(
                f"compressed frame {i} at offset {self.data_off + self.table.stored(i)} holds {len(frame)} bytes, "
                f"not {expected}"
            )
        entry = (frame, page.shuffle(k) if self.table.filtered else 0)
        if keep:
            self._keep(i, entry, page.logical[k])
        return entry

    def _keep(self, i: int, entry: Entry, logical: int) -> None:
        """Cache frame ``i`` (starting at ``logical``): a data frame among the last
        ``CACHE_FRAMES``; a TOC frame or a data frame of at most ``SMALL_FRAME`` bytes among the
        last ``WALK_CACHE`` bytes of them."""
        if logical < self._toc_at and len(entry[0]) > SMALL_FRAME:
            frames = self._frames
            with self._lock:
                frames[i] = entry
                if len(frames) > CACHE_FRAMES:
                    frames.popitem(last=False)
            return
        walk = self._walk_frames
        with self._lock:
            if i not in walk:
                walk[i] = entry
                self._walk_bytes += len(entry[0]) + SMALL_COST
                while self._walk_bytes > WALK_CACHE and len(walk) > 1:
                    self._walk_bytes -= len(walk.popitem(last=False)[1][0]) + SMALL_COST

    def _decompress_into(self, i: int, data: bytes | memoryview, out: memoryview) -> None:
        """The plain bytes of frame ``i`` from its stored bytes into ``out``, which is exactly
        its size: straight into it, or for a shuffled frame into this thread's scratch buffer
        and unshuffled from there (in C without the GIL: the pool's threads run together)."""
        element = self.table.shuffle(i) if self.table.filtered else 0
        if not element:
            self._decompress_frame_into(i, data, out)
            return
        scratch = self._scratch(len(out))
        self._decompress_frame_into(i, data, scratch)
        unshuffle_into(scratch, element, out)

    def _decompress_frame_into(self, i: int, data: bytes | memoryview, out: memoryview) -> None:
        """Frame ``i`` as stored (shuffled or not) from its stored bytes straight into ``out``,
        which is exactly its size; the read past its end makes zstd check the content checksum."""
        self._check(i, data)
        decompressor: Any = self._decompressor(self.table.dictionary(i) if self._dict_places else 0)
        zstd = self._zstd
        try:
            reader = decompressor.stream_reader(data, read_across_frames=False)
            got = reader.readinto(out)
            while got < len(out):
                more = reader.readinto(out[got:])
                if not more:
                    break
                got += more
            extra = reader.read(1)
        except zstd.ZstdError as e:
            raise self._undecompressable(i, e) from None
        if got != len(out) or extra:
            raise self.damaged(
                f"compressed frame {i} at offset {self.data_off + self.table.stored(i)} does not hold the "
                f"{len(out)} bytes it declares"
            )

    def _undecompressable(self, i: int, e: Exception) -> MsglcError:
        return self.damaged(
            f"compressed frame {i} at offset {self.data_off + self.table.stored(i)} does not decompress: {e}"
        )

    def cached(self, offset: int, size: int) -> bytes | memoryview | None:
        """The bytes, when the file's cache or the frame cache holds them (batched reads then
        need no request for them)."""
        end, data_end = offset + size, self.data_off + self.plain
        if end <= self.data_off:
            return self.raw.cached(offset, size)
        if offset >= data_end:
            return self.raw.cached(offset + self.shift, size)
        if offset < self.data_off or end > data_end:
            return None
        lo, hi = offset - self.data_off, end - self.data_off
        entries: list[tuple[int, Entry]] = []
        first = self.table.frame_of(lo)
        with self._lock:
            for i in range(first, self.table.frames):
                if self.table.logical(i) >= hi:
                    break
                entry = self._kept(i)
                if entry is None:
                    return None
                entries.append((i, entry))
        parts = [self._cut(i, entry, lo, hi) for i, entry in entries]
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _cut(self, i: int, entry: Entry, lo: int, hi: int) -> bytes | memoryview:
        """The part of logical [lo, hi) (data-relative) that frame ``i`` holds."""
        page, k = self.table.at(i)
        first = page.logical[k]
        return self._piece(i, entry, max(lo - first, 0), min(hi, page.logical[k + 1]) - first)

    def fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes | memoryview]:
        """The logical ranges, with the stored bytes of every frame they need (and the parts
        outside the data section) fetched from the file in one ``fetch_many``."""
        requests, frames_at, held = self._requests(ranges)
        fetched = self.raw.fetch_many(requests) if requests else []
        return self._assemble(ranges, requests, frames_at, held, fetched)

    async def async_fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes | memoryview]:
        import asyncio

        requests, frames_at, held = self._requests(ranges)
        fetched = await self.raw.async_fetch_many(requests) if requests else []
        return await asyncio.to_thread(self._assemble, ranges, requests, frames_at, held, fetched)

    def _requests(
        self, ranges: list[tuple[int, int]]
    ) -> tuple[list[tuple[int, int]], dict[int, int], dict[int, Entry]]:
        """File ranges to fetch: the parts of ``ranges`` outside the data section, and the
        frames inside it that are not cached, merged where they lie within the file's gap.
        Also, for each such frame, the index of the request holding it, and the frames taken
        from the cache (held for this batch: decompressing the others may evict them)."""
        data_end, out = self.data_off + self.plain, []
        needed: set[int] = set()
        for start, end in ranges:
            if start < self.data_off:
                out.append((start, min(end, self.data_off)))
            if end > data_end:
                lo = max(start, data_end) + self.shift
                out.append((lo, end + self.shift))
            lo, hi = max(start, self.data_off) - self.data_off, min(end, data_end) - self.data_off
            if lo < hi:
                needed.update(range(self.table.frame_of(lo), self.table.frame_of(hi - 1) + 1))
        with self._lock:
            held = {i: entry for i in needed if (entry := self._kept(i)) is not None}
        needed.difference_update(held)
        frames_at: dict[int, int] = {}
        gap = self.raw.max_gap  # merged up to the file's max_request
        for i in sorted(needed):
            a, b = self.data_off + self.table.stored(i), self.data_off + self.table.stored(i + 1)
            if frames_at and a - out[-1][1] <= gap and b - out[-1][0] <= self.raw.max_request:
                out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
            frames_at[i] = len(out) - 1
        if self._count and self.counter is not None:
            for a, b in out:
                self.counter.add(b - a)
        return out, frames_at, held

    def _assemble(
        self,
        ranges: list[tuple[int, int]],
        requests: list[tuple[int, int]],
        frames_at: dict[int, int],
        held: dict[int, Entry],
        fetched: list[bytes | memoryview],
    ) -> list[bytes | memoryview]:
        """Decompress the fetched frames, then serve ``ranges`` as ``read`` would (the frames
        of this batch are kept for it even where the cache is smaller)."""
        batch = dict(held)
        for i, k in frames_at.items():
            a = self.data_off + self.table.stored(i) - requests[k][0]
            data = memoryview(fetched[k])[a : a + self.table.stored(i + 1) - self.table.stored(i)]
            batch[i] = self._checked(i, data)
        parts = dict(zip(requests, fetched, strict=True))
        return [self._slice(start, end, batch, parts) for start, end in ranges]

    def _slice(
        self,
        start: int,
        end: int,
        batch: dict[int, Entry],
        parts: dict[tuple[int, int], bytes | memoryview] | None,
        in_place: bool = True,
    ) -> bytes | memoryview:
        """Logical bytes [start, end): frames from ``batch`` or the cache (else read), the rest
        from ``parts`` fetched already (None: read from the file now, raw frames in place
        unless ``in_place`` is false)."""
        data_end = self.data_off + self.plain
        out: list[bytes | memoryview] = []
        if start < self.data_off:
            head = (start, min(end, self.data_off))
            out.append(self._raw(start, head[1] - start) if parts is None else parts[head])
        lo, hi = max(start, self.data_off) - self.data_off, min(end, data_end) - self.data_off
        if lo < hi:
            for i in range(self.table.frame_of(lo), self.table.frames):
                page, k = self.table.at(i)
                if page.logical[k] >= hi:
                    break
                entry = batch.get(i)
                if entry is None and page.codes and page.codes[k] == RAW and parts is None and in_place:
                    a, b = max(lo, page.logical[k]), min(hi, page.logical[k + 1])
                    out.append(self._raw(self._in_place(i, page, k) + a - page.logical[k], b - a))
                    continue
                out.append(self._cut(i, entry or self._entry(i), lo, hi))
        if end > data_end:
            tail = (max(start, data_end) + self.shift, end + self.shift)
            out.append(self._raw(tail[0], tail[1] - tail[0]) if parts is None else parts[tail])
        return out[0] if len(out) == 1 else b"".join(out)

    def damaged(self, message: str) -> MsglcError:
        """``ArchiveChangedError`` when the file changed since the reader opened it (frames are
        read after the open), else ``CorruptedError``."""
        if self.changed_since_open():
            return ArchiveChangedError(f"{message}: the file changed after the reader opened it: open a new reader")
        return CorruptedError(message)

    def stamp(self) -> object:
        return self.raw.stamp()

    def identity(self) -> tuple[int, int] | None:
        return self.raw.identity()

    def close(self) -> None:
        super().close()
        with self._lock:  # a read on another thread may be between finding a frame and using it
            self._frames.clear()
            self._walk_frames.clear()
            self._walk_bytes = 0
        self._near_data = self._near_toc = _FAR
        self.raw.close()


INDEX_READ = 1 << 13  # bytes read from a 2.1 section's end at open: its index, whole below about 10 GB


def open_section(
    raw: Source,
    data_off: int,
    stored: int,
    read: Callable[[int, int], bytes | memoryview] | None = None,
    counter: Counter | None = None,
) -> tuple[FramedSource, Index]:
    """A 2.1 compressed section of ``stored`` bytes at ``data_off`` in ``raw``, opened: its
    index read (one read of the section's last ``INDEX_READ`` bytes; two when it is longer) and
    checked; page tables and dictionaries are read when first needed. ``read``: how the tables
    are read from ``raw`` (a reader's counted reads; default ``raw.read``)."""
    read = raw.read if read is None else read
    end = data_off + stored
    tail = read(end - min(stored, INDEX_READ), min(stored, INDEX_READ))
    size = index_size(tail[-FOOTER_SIZE:], stored)
    if size > len(tail):
        tail = read(end - size, size)
    index = parse_index(tail, stored)

    def load(p: int) -> Page:
        at, first_logical, first_stored, length = index.pages[p]
        count = min(index.per_page, index.frames - p * index.per_page)
        return parse_page(read(data_off + at, length), count, first_logical, first_stored, len(index.dicts))

    frames = paged_map(index, stored - size, load)
    return FramedSource(raw, data_off, frames, stored, index.dicts, counter, index.data), index
