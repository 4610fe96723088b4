"""Archives in object storage (S3 and any fsspec file system): naming them, reading them with
few right-sized requests, and writing them as a stream.

Every read from object storage is a request with tens of milliseconds of latency, so the
``RemoteSource`` reads whole blocks (read-ahead for the many small reads of a lookup) and keeps
the most recent ones, fetches the header and the end of the file (trailer and root TOC node)
together on open, and issues batches of ranges concurrently (``fetch_many``). fsspec is
imported only when a remote archive is named.

An object replaced while a reader has it open must not give values read from the new bytes
through the old table of contents: ``S3Source`` pins the ETag of its first answer and every
later request carries it (``If-Match``); on other file systems a read that comes back short
(the object shrank) is reported. Either raises ``ArchiveChangedError``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from msglc.errors import ArchiveChangedError
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, claimed_size, header_end
from msglc.io.base import Counter, Source, closed_error, grid
from msglc.io.s3 import get_object, is_s3, status_of, transport_error, url_of

if TYPE_CHECKING:
    import asyncio

Range = tuple[int, int | None]  # (start, end) of a ranged request; end None: the last -start bytes

BLOCK_SIZE = 256 * 1024  # read-ahead unit for small reads (docs/performance.md measures it)


CACHE_BLOCKS = 32  # recent blocks kept per reader


MAX_GAP = 1 << 20  # read_many: ranges closer than this are fetched as one request


MAX_REQUEST = 16 << 20  # ... up to this size per request


ROUND_BYTES = 64 << 20  # read_grid: bytes requested at once (a selection of a huge array, in rounds)


MAX_CONCURRENT = 128  # S3 requests in flight per batch (fsspec's default gather batch)


class RemoteSource(Source):
    """An object in an fsspec file system, read in blocks of ``block_size`` bytes (reads as
    large or larger go out as they are), keeping the ``cache_blocks`` most recent."""

    counts_itself = True
    local = False

    def __init__(
        self,
        fs: Any,
        path: str,
        *,
        size: int | None = None,
        counter: Counter | None = None,
        block_size: int = BLOCK_SIZE,
        cache_blocks: int = CACHE_BLOCKS,
    ) -> None:
        if not isinstance(block_size, int) or block_size < 4096:
            raise ValueError(f"block_size must be an int of at least 4096 bytes, got {block_size!r}")
        if not isinstance(cache_blocks, int) or cache_blocks < 2:
            raise ValueError(f"cache_blocks must be an int of at least 2, got {cache_blocks!r}")
        self.fs = fs
        self.path = path
        self.block_size = block_size
        self.cache_blocks = cache_blocks
        self.counter = counter
        self.lock = threading.Lock()
        self.extents: OrderedDict[int, bytes] = OrderedDict()  # start -> bytes, most recent last
        self.max_gap = MAX_GAP
        self.max_request = MAX_REQUEST
        self.ready = False  # once open, a short answer means the object changed
        self._open(size)
        self.ready = True

    def _open(self, size: int | None) -> None:
        """Fetch the first block (header, start of the data: the root's header) and the last
        (trailer and, for most archives, the root TOC node) in one round of two requests. The
        size comes from the trailer; only a file that does not end in one costs a third
        request (its size, for the error)."""
        b = self.block_size
        if size is not None:
            self.size = size
            ranges = [(0, min(b, size))] + ([(max(b, size - b), size)] if size > b else [])
            for (start, _), data in zip(ranges, self._get_ranges(ranges), strict=True):
                self._keep(start, data)
            return
        try:
            head, tail = self._get_ranges([(0, b), (-b, None)], exact=False)
        except (FileNotFoundError, PermissionError):
            raise
        except OSError as e:  # S3 answers a range of an empty object with 416 (not satisfiable)
            if status_of(e) not in (None, 416) or isinstance(e, (ConnectionError, TimeoutError)):
                raise
            self._count(1, 0)
            if self._object_size() != 0:
                raise
            head = tail = b""
        if len(head) < b or len(tail) < b:  # the whole object is shorter than one block
            self.size = len(head)
            self._keep(0, head)
            return
        self._keep(0, head)
        self.size = claimed_size(tail) or 0
        end = header_end(head)
        if HEADER_SIZE + TRAILER_SIZE <= end != self.size:  # an append died midway: the archive ends before the object
            self.size = end
            tail = self._get(max(0, end - b), end)
        elif self.size < len(tail):  # no trailer at the end: ask (the reader then names the problem)
            self.size = self._object_size()
            self._count(1, 0)
        self._keep(self.size - len(tail), tail)

    def _object_size(self) -> int:
        try:
            size: int = self.fs.size(self.path)
        except Exception as e:
            failure = transport_error(e, f"asking the size of {url_of(self.fs, self.path)}")
            if failure is e:
                raise
            raise failure from e
        return size

    # -- the block cache --
    def _keep(self, start: int, data: bytes) -> None:
        with self.lock:
            self.extents[start] = data
            while len(self.extents) > self.cache_blocks:
                self.extents.popitem(last=False)

    def cached(self, offset: int, size: int) -> memoryview | None:
        with self.lock:
            for start in reversed(self.extents):
                data = self.extents[start]
                if start <= offset and offset + size <= start + len(data):
                    self.extents.move_to_end(start)
                    return memoryview(data)[offset - start : offset - start + size]
        return None

    def read(self, offset: int, size: int) -> bytes | memoryview:
        if self.closed:
            raise closed_error()
        if offset < 0 or size < 0 or offset + size > self.size:
            raise self._short(offset, size, max(0, min(size, self.size - offset)))
        hit = self.cached(offset, size)
        if hit is not None:
            return hit
        if size >= self.block_size:
            return self._get(offset, offset + size)
        b = self.block_size
        start = offset // b * b
        end = min(self.size, max(start + b, -(-(offset + size) // b) * b))
        data = self._get(start, end)
        self._keep(start, data)
        return memoryview(data)[offset - start : offset - start + size]

    def read_grid(
        self, offset: int, counts: tuple[int, ...], strides: tuple[int, ...], size: int, out: memoryview
    ) -> None:
        """The pieces as ``read_many`` reads ranges: pieces less than ``max_gap`` apart share
        a request of at most ``max_request`` bytes (a run), and the runs' requests go out
        together, ``ROUND_BYTES`` at most at a time."""
        if self.closed:
            raise closed_error()
        runs: list[tuple[int, int, int]] = []  # (start, end, pieces)
        for at in grid(offset, counts, strides):
            if at < 0 or at + size > self.size:
                raise self._short(at, size, max(0, min(size, self.size - at)))
            if runs:
                start, end, n = runs[-1]
                if 0 <= at - end <= self.max_gap and at + size - start <= self.max_request:
                    runs[-1] = (start, at + size, n + 1)
                    continue
            runs.append((at, at + size, 1))
        pieces = grid(offset, counts, strides)
        k = i = 0
        while i < len(runs):
            first, total = i, 0
            while i < len(runs) and (i == first or total + runs[i][1] - runs[i][0] <= ROUND_BYTES):
                total += runs[i][1] - runs[i][0]
                i += 1
            for (start, _, n), data in zip(runs[first:i], self._runs(runs[first:i]), strict=True):
                for at in islice(pieces, n):
                    out[k * size : (k + 1) * size] = data[at - start : at - start + size]
                    k += 1

    def _runs(self, runs: list[tuple[int, int, int]]) -> list[memoryview]:
        """The bytes from each run's start (at least to its end): from the block cache, else
        requested together. A run shorter than a block is read as ``read`` reads it (whole
        blocks, kept), so that rows read one selection after another still share blocks."""
        found: list[memoryview | None] = [None] * len(runs)
        ask: list[tuple[int, int]] = []
        at: list[int] = []
        b = self.block_size
        for j, (start, end, _) in enumerate(runs):
            found[j] = self.cached(start, end - start)
            if found[j] is None:
                low = start // b * b
                ask.append((low, min(self.size, max(low + b, -(-end // b) * b))) if end - start < b else (start, end))
                at.append(j)
        if ask:
            for j, (low, high), data in zip(at, ask, self._get_ranges(ask), strict=True):
                start, end, _ = runs[j]
                if high - low != end - start:
                    self._keep(low, data)
                found[j] = memoryview(data)[start - low :]
        return [data for data in found if data is not None]

    # -- requests --
    def _count(self, requests: int, size: int) -> None:
        if self.counter is not None:
            self.counter.add(size, requests)

    def _get(self, start: int, end: int) -> bytes:
        return self._checked([(start, end)], self._requests([(start, end)]))[0]

    def _range_args(self, ranges: Sequence[Range]) -> tuple[list[str], list[int], list[int | None]]:
        return [self.path] * len(ranges), [r[0] for r in ranges], [r[1] for r in ranges]

    def _requests(self, ranges: Sequence[Range]) -> list[bytes | BaseException]:
        """One concurrent round of ranged requests: the bytes, or the error, of each."""
        out: list[bytes | BaseException] = self.fs.cat_ranges(*self._range_args(ranges), on_error="return")
        return out

    async def _async_requests(self, ranges: Sequence[Range]) -> list[bytes | BaseException]:
        """``_requests`` as a coroutine on the loop of an async file system."""
        out: list[bytes | BaseException] = await self.fs._cat_ranges(*self._range_args(ranges), on_error="return")
        return out

    def _get_ranges(self, ranges: Sequence[Range], exact: bool = True) -> list[bytes]:
        """One concurrent round of ranged requests; errors are raised, and with ``exact``
        short answers too."""
        return self._checked(ranges, self._requests(ranges), exact)

    def _checked(self, ranges: Sequence[Range], out: list[bytes | BaseException], exact: bool = True) -> list[bytes]:
        """The answers ``out``, once none is an error (and, with ``exact``, none is short:
        ``exact`` needs every range's end)."""
        self._count(len(ranges), sum(len(d) for d in out if isinstance(d, (bytes, bytearray))))
        got: list[bytes] = []
        for (start, end), data in zip(ranges, out, strict=True):
            if isinstance(data, BaseException):  # as an OSError, if the HTTP stack's own
                failure = transport_error(data, f"reading bytes {start}-{end} of {url_of(self.fs, self.path)}")
                if failure is data:
                    raise data
                raise failure from data
            if exact and end is not None and len(data) != end - start:
                if self.ready:  # the object had at least self.size bytes when it was opened
                    raise self.changed(
                        f"a read of {end - start} bytes at offset {start} got {len(data)}: it is shorter now"
                    )
                raise self._short(start, end - start, len(data))
            got.append(data)
        return got

    def changed(self, how: str) -> ArchiveChangedError:
        return ArchiveChangedError(
            f"the object {self.fs.unstrip_protocol(self.path)} changed since it was opened ({how}): open a new reader"
        )

    def fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes | memoryview]:
        if self.closed:
            raise closed_error()
        return list(self._get_ranges(ranges))

    async def async_fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes | memoryview]:
        """``fetch_many`` without blocking the running event loop: on fsspec's own loop for an
        async file system (s3fs, http, ...), in a worker thread for the others."""
        import asyncio

        if self.closed:
            raise closed_error()
        fs = self.fs
        if not getattr(fs, "async_impl", False):
            return list(await asyncio.to_thread(self._get_ranges, ranges))
        coro = self._async_requests(ranges)
        if getattr(fs, "asynchronous", False) and fs.loop is asyncio.get_running_loop():
            out = await coro
        else:
            out = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, fs.loop))
        return list(self._checked(ranges, out))

    def close(self) -> None:
        super().close()
        with self.lock:
            self.extents.clear()


class S3Source(RemoteSource):
    """An object in S3 (s3fs), pinned to the version its first answer came from: every later
    GET carries ``If-Match: <that ETag>`` (S3 answers 412 once the object was replaced) and
    every answer's ETag is compared too (for stores that ignore the condition). The pin costs
    no request; the two requests that open compare their ETags, and an object replaced
    between them is opened again, once."""

    etag: str | None = None
    raced = False  # the opening requests met two versions

    def _open(self, size: int | None) -> None:
        try:
            super()._open(size)
        except ArchiveChangedError:
            if not self.raced or size is not None:  # a given size belongs to the version it came with
                raise
            self.etag, self.raced = None, False
            self.extents.clear()
            super()._open(size)

    def _requests(self, ranges: Sequence[Range]) -> list[bytes | BaseException]:
        from fsspec.asyn import sync

        out: list[bytes | BaseException] = sync(self.fs.loop, self._async_requests, ranges)
        return out

    async def _async_requests(self, ranges: Sequence[Range]) -> list[bytes | BaseException]:
        import asyncio

        limit = asyncio.Semaphore(getattr(self.fs, "batch_size", None) or MAX_CONCURRENT)
        return await asyncio.gather(
            *(self.get_object(start, end, limit) for start, end in ranges), return_exceptions=True
        )

    async def get_object(self, start: int, end: int | None, limit: asyncio.Semaphore) -> bytes:
        """The bytes of one range (``end`` None: the last ``-start`` bytes), pinned. s3fs
        retries the request; a body cut off on the way is asked for again (``s3.get_object``)."""
        if end is not None and end <= start:
            return b""
        async with limit:
            answer = await get_object(
                self.fs,
                self.path,
                start,
                end,
                etag=self.etag,
                on_precondition=lambda e: self.changed(f"ETag {self.etag} no longer matches"),
            )
        self._pin(answer.etag)
        return answer.data

    def _pin(self, etag: str | None) -> None:
        """Keep the first ETag seen; raise if an answer comes from another version. Runs on
        the file system's loop only, so needs no lock."""
        if self.etag is None:
            self.etag = etag
        elif etag is not None and etag != self.etag:
            raise self.changed(f"ETag {self.etag}, now {etag}")

    def changed(self, how: str) -> ArchiveChangedError:
        self.raced = not self.ready
        return super().changed(how)


def open_remote(fs: Any, path: str, **options: Any) -> RemoteSource:
    """A ``RemoteSource`` (an ``S3Source`` on s3fs); ``options``: its keyword arguments."""
    if getattr(fs, "asynchronous", False):
        raise TypeError(
            "LazyReader needs an fsspec file system made with asynchronous=False; "
            "its async methods use the file system's own loop"
        )
    return (S3Source if is_s3(fs) else RemoteSource)(fs, path, **options)
