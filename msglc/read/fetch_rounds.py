"""Reading many values at once in rounds of batched fetches: ``read_many`` of a remote
archive, and the async API (``local_many`` resolves a local archive's paths instead).

Every path is resolved by the ordinary lazy views, against an archive whose reads are answered
from ranges fetched for the batch; a read not fetched yet stops that path (``_Need``). The
ranges all paths stopped at are then fetched together, those close to each other as one
request and the rest concurrently, and the paths are resolved again, until each has its value.
A lookup that needs k dependent reads (TOC node, index page, entry) so costs k rounds of
requests, however many paths there are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from msglc.io.base import grid
from msglc.read.archive import Archive
from msglc.read.legacy import any_root_of
from msglc.read.paths import resolve, split_path

MAX_ROUNDS = 64  # then every path still pending finishes with direct reads


DIRECT_AFTER = 4  # a path that stopped this often (a slice of many values) reads directly


ROUND_BYTES = 64 << 20  # bytes of merged requests in flight at once (the reads kept are extra)


Task = Callable[["BatchArchive"], Any]


_Group = tuple[list[tuple[int, int]], int, int]  # a merged request: its reads (offset, size), start, end


class _Need(BaseException):
    """Batch reads that were not fetched yet (a BaseException: no handler in the lazy views
    may take it for a data error): one, or every missing piece of an array selection."""

    def __init__(self, offset: int, size: int, more: list[tuple[int, int]] | None = None) -> None:
        self.spans = [(offset, size), *(more or ())]


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class BatchArchive(Archive):
    """An archive that reads another's file through a batch: it shares that archive's file,
    source, open state and node cache (``Archive.share``), keeps views of its own, and reads
    from the ranges fetched for the batch (``Batch``). Once the batch is over, reads go to the
    other archive, so the lazy views it returned keep working (and fail once the reader is
    closed)."""

    def __init__(self, main: Archive, batch: Batch) -> None:
        self.share(main, batch.read)
        self.batch = batch

    @property
    def closed(self) -> bool:  # type: ignore[override]
        return self.batch.main.closed

    def frame_at(self, offset: int) -> None:
        """None: a batch reads frames through ``read``, which collects them."""
        return None

    def decode_frames(self, offset: int, size: int, sink: Callable[[int, memoryview, int], None]) -> bool:
        """False: a batch reads frames through ``read``, which collects them."""
        return False

    def fill(self, offset: int, buf: memoryview, threads: int | None = None) -> None:
        self.batch.fill(offset, buf, threads)

    def fill_grid(
        self, offset: int, counts: tuple[int, ...], strides: tuple[int, ...], size: int, buf: memoryview
    ) -> None:
        self.batch.fill_grid(offset, counts, strides, size, buf)

    def root(self) -> Any:
        """The root, found once per batch."""
        batch = self.batch
        if batch.root is None:
            batch.root = any_root_of(self)
        return batch.root


class Batch:
    """The reads of one batch: the ranges fetched so far (``pieces``), which tasks stopped how
    often, and the archive the tasks read through (``archive``)."""

    def __init__(self, main: Archive, max_gap: int | None = None) -> None:
        if main.closed:
            raise ValueError("I/O operation on a closed LazyReader")
        if max_gap is not None and (not isinstance(max_gap, int) or isinstance(max_gap, bool) or max_gap < 0):
            raise ValueError(f"max_gap must be a number of bytes (an int >= 0), not {max_gap!r}")
        self.main = main
        self.src = main.src
        self.max_gap = main.src.max_gap if max_gap is None else max_gap
        self.pieces: dict[tuple[int, int], bytes | memoryview] = {}
        self.direct = not main.src.max_gap  # in memory: nothing to gather
        self.root: Any = None
        self.stops: dict[int, int] = {}  # task -> how often it stopped at a read
        self.archive = BatchArchive(main, self)

    def read(self, offset: int, size: int) -> bytes | memoryview:
        data = self.pieces.get((offset, size))
        if data is None:
            data = self.src.cached(offset, size)
        if data is not None:
            return data
        if self.direct:
            return self.main.read(offset, size)
        raise _Need(offset, size)

    def fill(self, offset: int, buf: memoryview, threads: int | None = None) -> None:
        data = self.pieces.get((offset, len(buf)))
        if data is not None:
            buf[:] = data
        elif self.direct:
            self.main.fill(offset, buf, threads)
        else:
            raise _Need(offset, len(buf))

    def fill_grid(
        self, offset: int, counts: tuple[int, ...], strides: tuple[int, ...], size: int, buf: memoryview
    ) -> None:
        if self.direct:
            self.main.fill_grid(offset, counts, strides, size, buf)
            return
        missing = []  # each piece a read of the batch, all asked for in one round
        for k, at in enumerate(grid(offset, counts, strides)):
            data = self.pieces.get((at, size))
            if data is None:
                missing.append((at, size))
            elif not missing:
                buf[k * size : (k + 1) * size] = data
        if missing:
            raise _Need(*missing[0], missing[1:])

    # -- rounds --
    def rounds(self, tasks: list[Task], results: list[Any]) -> Iterator[list[tuple[int, int]]]:
        """Run the tasks, yielding the reads they stopped at, to be fetched before the next
        round (``fetch``), until each has its result in ``results``."""
        pending = list(range(len(tasks)))
        for _ in range(MAX_ROUNDS):
            needs = self.attempt(tasks, pending, results)
            if not needs:
                return
            yield needs
        self.direct = True
        self.attempt(tasks, pending, results)

    def attempt(self, tasks: list[Task], pending: list[int], results: list[Any]) -> list[tuple[int, int]]:
        """Run the pending tasks; those that stop at a read not fetched yet stay in ``pending``.
        Returns the reads they stopped at."""
        needs: dict[tuple[int, int], None] = {}
        still = []
        batched = self.direct
        for i in pending:
            self.direct = batched or self.stops.get(i, 0) >= DIRECT_AFTER
            try:
                results[i] = tasks[i](self.archive)
            except _Need as need:
                needs.update(dict.fromkeys(need.spans))
                still.append(i)
                self.stops[i] = self.stops.get(i, 0) + 1
            except Exception as e:
                results[i] = _Failed(e)
        self.direct = batched
        pending[:] = still
        return list(needs)

    def plan(self, needs: list[tuple[int, int]]) -> list[list[_Group]]:
        """The reads as rounds of requests: reads closer than the source's ``max_gap`` share a
        request of at most ``max_request`` bytes; a round holds up to ``ROUND_BYTES``."""
        gap, most = self.max_gap, self.src.max_request
        groups: list[_Group] = []
        for offset, size in sorted(needs):
            if groups:
                members, start, end = groups[-1]
                if offset - end <= gap and max(end, offset + size) - start <= most:
                    members.append((offset, size))
                    groups[-1] = (members, start, max(end, offset + size))
                    continue
            groups.append(([(offset, size)], offset, offset + size))
        rounds: list[list[_Group]] = [[]]
        total = 0
        for group in groups:
            if rounds[-1] and total + group[2] - group[1] > ROUND_BYTES:
                rounds.append([])
                total = 0
            rounds[-1].append(group)
            total += group[2] - group[1]
        return rounds

    def keep(self, groups: list[_Group], fetched: list[bytes | memoryview]) -> None:
        """Keep each read's bytes (copies of small parts, so the merged buffers are freed)."""
        for (members, start, end), data in zip(groups, fetched, strict=True):
            if len(members) == 1 and members[0] == (start, end - start):
                self.pieces[members[0]] = data
                continue
            view = memoryview(data)
            for offset, size in members:
                self.pieces[offset, size] = bytes(view[offset - start : offset - start + size])

    def _requests(self, groups: list[_Group]) -> list[tuple[int, int]]:
        """The merged ranges of one round, counted when the source does not count itself."""
        counter = self.main.counter
        if counter is not None and not self.src.counts_itself:
            counter.add(sum(end - start for _, start, end in groups), len(groups))
        return [(start, end) for _, start, end in groups]

    def fetch(self, needs: list[tuple[int, int]]) -> None:
        for groups in self.plan(needs):
            self.keep(groups, self.src.fetch_many(self._requests(groups)))

    async def async_fetch(self, needs: list[tuple[int, int]]) -> None:
        import asyncio

        for groups in self.plan(needs):
            fetched = await self.src.async_fetch_many(self._requests(groups))
            await asyncio.to_thread(self.keep, groups, fetched)

    def finish(self, results: list[Any]) -> list[Any]:
        self.direct = True
        self.pieces = {}
        for r in results:
            if isinstance(r, _Failed):
                raise r.error
        return results


def run(main: Archive, tasks: list[Task], max_gap: int | None = None) -> list[Any]:
    """Each task's result, its reads fetched together; the first failure (in task order) is
    raised, as a loop over the tasks would have raised it."""
    batch = Batch(main, max_gap)
    results: list[Any] = [None] * len(tasks)
    for needs in batch.rounds(tasks, results):
        batch.fetch(needs)
    return batch.finish(results)


async def async_run(main: Archive, tasks: list[Task], max_gap: int | None = None) -> list[Any]:
    """``run`` from an event loop: requests are awaited, the tasks (decoding) run in a worker
    thread."""
    import asyncio

    batch = Batch(main, max_gap)
    results: list[Any] = [None] * len(tasks)
    rounds = batch.rounds(tasks, results)
    while (needs := await asyncio.to_thread(next, rounds, None)) is not None:
        await batch.async_fetch(needs)
    return batch.finish(results)


def path_task(path: Any) -> Task:
    return lambda batch: resolve(batch.root(), split_path(path))
