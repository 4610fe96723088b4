"""``Source``: the one thing a reader needs from storage, ``read(offset, size)`` and friends,
with no shared seek position."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from msglc.errors import ArchiveChangedError, TruncatedError


class Counter(Protocol):
    """Counts reads (``LazyStats``): ``size`` bytes in ``requests`` requests."""

    def add(self, size: int, requests: int = 1) -> None: ...


GRID_READ_INTO = 1 << 20  # Source.read_grid: pieces this large are read into the output directly


def grid(offset: int, counts: tuple[int, ...], strides: tuple[int, ...]) -> Iterator[int]:
    """The offsets of ``read_grid``'s pieces, in C order."""
    if not counts:
        yield offset
        return
    inner = counts[-1], strides[-1]
    for at in grid(offset, counts[:-1], strides[:-1]):
        yield from range(at, at + inner[0] * inner[1], inner[1]) if inner[1] else [at] * inner[0]


def closed_error() -> ValueError:
    return ValueError("I/O operation on a closed LazyReader")


class Source:
    """Random access to ``size`` bytes."""

    size: int
    closed = False
    zero_copy = False  # read() returns views of memory that stays valid (arrays may keep them)
    counts_itself = False  # counts its requests in ``counter`` (else the reader counts reads)
    counter: Counter | None = None
    opened: object = None  # the stamp of the state a reader opened, once it has
    # read_many: ranges closer than max_gap are read as one, up to max_request bytes; 0: read
    # every path directly (memory needs no batching)
    max_gap = 4096
    local = True  # a read costs about a microsecond (False: a request over the network)
    max_request = 4 << 20
    # a TOC node read also takes up to this many bytes before the node, where the next
    # nodes a walk reads (its kids) lie; for sources where a read is a system call
    node_window = 0

    def read(self, offset: int, size: int) -> bytes | memoryview:
        raise NotImplementedError

    def read_bulk(self, offset: int, size: int) -> bytes | memoryview:
        """``read``, for one of the many reads of a bulk read (a pool's, or a large batch):
        a source whose ``read`` may wait holding the GIL (a local file's memory map) reads
        these in a way that lets other threads run meanwhile."""
        return self.read(offset, size)

    def cached(self, offset: int, size: int) -> bytes | memoryview | None:
        """The bytes, if the source holds them without a request (a remote block cache)."""
        return None

    def stamp(self) -> object:
        """A value that changes when the bytes may have changed, ``size`` brought up to date;
        None for a source that cannot change (opening then needs no second look)."""
        return None

    def identity(self) -> tuple[int, int] | None:
        """(device, inode) of a local file, to tell when an output is this input."""
        return None

    def fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes | memoryview]:
        """The bytes of each ``(start, end)`` range, read together."""
        return [self.read(start, end - start) for start, end in ranges]

    async def async_fetch_many(self, ranges: list[tuple[int, int]]) -> list[bytes | memoryview]:
        import asyncio

        return await asyncio.to_thread(self.fetch_many, ranges)

    def read_into(self, offset: int, out: memoryview) -> None:
        """Fill the byte buffer ``out`` from ``offset`` (large array reads: one copy)."""
        out[:] = self.read(offset, len(out))

    def read_grid(
        self, offset: int, counts: tuple[int, ...], strides: tuple[int, ...], size: int, out: memoryview
    ) -> None:
        """Fill the byte buffer ``out`` with the pieces of ``size`` bytes at ``offset + sum(i *
        stride)`` for every index ``i`` below ``counts``, in C order, one after the other (a
        block of an array: a piece per row). Here a read per piece: small pieces by ``read``,
        so that a compressed source decompresses a frame that several pieces share once (and
        keeps it), large ones by ``read_into``, without a copy. Local files and remote
        objects read them with fewer calls or requests."""
        for k, at in enumerate(grid(offset, counts, strides)):
            if size < GRID_READ_INTO:
                out[k * size : (k + 1) * size] = self.read(at, size)
            else:
                self.read_into(at, out[k * size : (k + 1) * size])

    def close(self) -> None:
        self.closed = True

    def changed_since_open(self) -> bool:
        """Whether the file is not in the state a reader opened (a local file's size and time
        now); False before an open and after a close (its descriptor may be gone, or another
        file's)."""
        if self.opened is None or self.closed:
            return False
        try:
            return self.stamp() != self.opened
        except OSError:  # closed by another thread meanwhile
            return False

    def _short(self, offset: int, size: int, got: int) -> ValueError:
        if self.closed:  # a read racing a close (its descriptor may be gone, or another file's)
            return closed_error()
        changed = self.changed_since_open()
        end = offset + got if got else min(offset, self.size)  # a read past the end gets nothing
        message = f"file ended at {end} while reading {size} bytes at offset {offset}"
        if changed:
            return ArchiveChangedError(
                f"{message}: the file changed after the reader opened it (an append?): open a new reader"
            )
        return TruncatedError(f"{message} (was it truncated?)")
