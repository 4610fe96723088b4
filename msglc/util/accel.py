"""The optional C accelerator ``msglc._speedups``: every user checks ``accel.speedups`` at
call time, so one switch (``MSGLC_PURE_PYTHON=1``, or a test setting it to None) selects
the pure-Python paths, which write and read the same bytes."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from types import NotImplementedType
from typing import Any, Protocol

Big = list[tuple[int, int, int]]  # (item or entry, its value's start, its end) of each large container value


class Probe(Protocol):
    """A dict index's lookups in C: ``_speedups.BlockProbe`` (``BlockIndex.find``) and
    ``_speedups.DirectProbe`` (``DirectIndex.find``)."""

    def find(
        self, read: Callable[[int, int], bytes | memoryview], base: int, key: bytes, h: int, /
    ) -> tuple[int, bytes] | None | NotImplementedType:
        """(offset, value bytes), None for a key not held, NotImplemented: ask the Python path."""
        ...

    def get(self, src: object, base: int, key: object, decode: Callable[[bytes], object], missing: object, /) -> object:
        """The value of ``key`` decoded, ``missing`` for a key not held, NotImplemented: ask
        the Python path. ``src``: a ``File`` or ``read(offset, size)``."""
        ...


class BlockProbe(Probe, Protocol):
    """``_speedups.BlockProbe``: one dict's block or fuse index lookups in C."""

    def candidates(
        self, read: Callable[[int, int], bytes | memoryview], key: bytes, h: int, /
    ) -> list[tuple[int, int]] | NotImplementedType:
        """The (block, count) that a lookup of ``key`` walks, from the index pieces this probe
        reads and keeps (``BlockIndex._candidates``); NotImplemented: ask the Python path."""
        ...


class DirectProbe(Probe, Protocol):
    """``_speedups.DirectProbe``: one dict's direct index lookups in C."""

    def records(self, read: Callable[[int, int], bytes | memoryview], h: int, /) -> bytes | NotImplementedType:
        """The records of the window of ``h`` (``direct.key_hash``), from the chunks this probe
        reads and keeps (``DirectIndex._records``); NotImplemented: ask the Python path."""
        ...


class File(Protocol):
    """``_speedups.File(fd, map_size)``: a local file's descriptor (and a memory map of its first
    ``map_size`` bytes, where reads of it cannot kill the process) for the C reads; or
    ``_speedups.Memory(buffer)``: bytes in memory. ``close()`` refuses reads from then on (the
    descriptor itself is closed by its owner; a buffer is let go)."""

    def close(self) -> None: ...

    def read(self, offset: int, size: int, /) -> bytes | None:
        """``size`` bytes at ``offset`` copied from the memory map, or None when they cannot
        come from it (no map, closed, its last page, msglc's SIGBUS handler no longer the
        process's, the file shorter now): read them by ``pread``, which says why."""
        ...

    def read_grid(
        self, offset: int, counts: tuple[int, ...], strides: tuple[int, ...], size: int, out: memoryview, /
    ) -> int:
        """Read the pieces of ``size`` bytes at ``offset + sum(i * stride)`` for every index
        below ``counts``, in C order, one after the other into ``out``, in one loop of
        ``pread`` without the GIL; returns how many were read whole (it stops at the first
        that was not, for the caller to read again and report)."""
        ...


class Speedups(Protocol):
    """The functions of ``msglc._speedups`` (``_speedups.c``); buffers are msgpack bytes."""

    RECORDS_KEPT: int  # a dict's page records up to this size are kept once read
    FUSE_CHUNK: int  # format/fuse.py CHUNK, FUSE_KEPT and MAX_SEG_BITS, as the fuse probe has them
    FUSE_KEPT: int
    FUSE_MAX_SEG_BITS: int

    def list_index(
        self, buf: bytes | bytearray | memoryview, start: int, n: int, base: int, threshold: int, /
    ) -> tuple[bytes, Big]:
        """(item offsets from ``base`` as u64 LE plus the end, large container items)."""
        ...

    def map_index(
        self, buf: bytes | bytearray | memoryview, start: int, n: int, base: int, threshold: int, page_bits: int, /
    ) -> tuple[bytes, int, bytes, bytes, Big]:
        """(entry offsets as u32|u64 LE, their width, sorted hash records, page starts, large values)."""
        ...

    def map_hashed(
        self, buf: bytes | bytearray | memoryview, start: int, n: int, base: int, threshold: int, /
    ) -> tuple[bytes, int, bytes, Big]:
        """(entry offsets as u32|u64 LE, their width, each key's base hash as u64 LE, large values)."""
        ...

    def block_records(self, records: bytes | memoryview, page_bits: int, block_bits: int, block_width: int, /) -> bytes:
        """The records of a block hash index (fingerprint byte, block number) from LE u64 records."""
        ...

    def page_blocks(self, records: bytes, size: int, fp: int, blocks: int, /) -> list[tuple[int, int]]:
        """The (block, count) of the records whose fingerprint is ``fp``."""
        ...

    def key_crcs(self, block: bytes | memoryview, count: int, /) -> list[int]:
        """CRC-32 of the keys of ``count`` entries."""
        ...

    def find_entry(self, block: bytes | bytearray | memoryview, count: int, key: bytes, /) -> tuple[int, int] | None:
        """(start, end) of the value whose key is encoded as ``key`` among ``count`` entries."""
        ...

    def plain_values(self, obj: object, /) -> bool: ...

    def increasing(self, xs: list[int], /) -> Any:
        """Whether ``xs`` rises strictly; NotImplemented when it is not a list of 64-bit ints."""
        ...

    def expand_map(self, first: int, klens: list[int], vlens: list[int], /) -> Any:
        """(koffs, voffs) of a compact dict node; NotImplemented when Python must decide."""
        ...

    def entries_in_order(self, koffs: list[int], voffs: list[int], /) -> Any:
        """Whether the offsets interleave rising; NotImplemented when Python must decide."""
        ...

    def BlockProbe(  # noqa: N802 (a class of the C module)
        self,
        pages: bytes,
        offs: bytes,
        width: int,
        kids: bytes,
        records_at: int,
        n: int,
        page_bits: int,
        blocks: int,
        block_bits: int,
        span_lo: int,
        span_hi: int,
        fuse: tuple[int, int, int, int, int] | None = None,
        /,
    ) -> BlockProbe:
        """A probe over a block index whose page table and block offsets are in memory; with
        ``fuse`` (slot_bits, seed, seg_bits, seg_count, slots size), over a fuse index whose
        chunk CRCs (``pages``) and block offsets are."""
        ...

    def DirectProbe(  # noqa: N802 (a class of the C module)
        self,
        groups: bytes,
        region_at: int,
        n: int,
        group_bits: int,
        width: int,
        off_bits: int,
        chunk: int,
        lo: int,
        hi: int,
        entry_read: int,
        span_lo: int,
        span_hi: int,
        /,
    ) -> DirectProbe:
        """A probe over a direct index (node type 10): ``find`` and ``get`` as a block probe's."""
        ...

    def direct_build(
        self,
        hashes: bytes,
        offs: bytes,
        offs_width: int,
        kids: bytes,
        group_bits: int,
        width: int,
        off_bits: int,
        chunk: int,
        /,
    ) -> tuple[bytes, bytes, int, int, int]:
        """(region, groups, lo, hi, entry_read) of a direct index (``format.direct.build``)."""
        ...

    def exact_numbers(self, seq: object, depth: int, /) -> bool: ...

    def fuse_build(
        self, hashes: bytes, values: bytes, slot_bits: int, seg_bits: int, seg_count: int, seed: int, /
    ) -> bytes | None:
        """The packed slots of a binary fuse (``fuse.build``), None if the keys do not peel."""
        ...

    def fuse_check(
        self, packed: bytes, hashes: bytes, values: bytes, slot_bits: int, seg_bits: int, seg_count: int, seed: int, /
    ) -> int:
        """The first key the fuse does not map to its value, or -1."""
        ...

    def span_item(
        self, src: object, offset: int, size: int, count: int, j: int, decode: Callable[[bytes], object], /
    ) -> object:
        """Item ``j`` of the ``count`` msgpack items that make the ``size`` bytes at ``offset``,
        decoded; NotImplemented: ask the Python path. ``src`` as for ``BlockProbe.get``."""
        ...

    def span_items(
        self,
        src: object,
        offset: int,
        size: int,
        count: int,
        js: list[int],
        decode: Callable[[bytes], object],
        tails: list[list[Any] | None] | None,
        missing: object,
        /,
    ) -> list[object] | NotImplementedType:
        """Items ``js`` (ascending) of such a span, decoded, as ``span_item``; with ``tails``,
        the value each item's tail of segments names in it (``missing``: resolve it in Python)."""
        ...

    def span_value(
        self,
        src: object,
        offset: int,
        size: int,
        count: int,
        j: int,
        decode: Callable[[bytes], object],
        tail: list[Any],
        /,
    ) -> tuple[object, bool] | NotImplementedType:
        """Item ``j`` of such a span as ``span_item``, and the value ``tail`` names in it:
        (that value, True), or (the item, False) where the C walk does not take the tail."""
        ...

    def descend_value(self, data: bytes | memoryview, tail: list[Any], decode: Callable[[bytes], object], /) -> object:
        """The value the segments ``tail`` name inside the one msgpack value ``data`` holds,
        decoded; NotImplemented: decode ``data`` whole and resolve ``tail`` in Python."""
        ...

    def group_indices(
        self, members: list[tuple[int, list[Any]]], depth: int, n: int, /
    ) -> tuple[list[int], list[list[tuple[int, list[Any]]]], list[list[Any] | None]] | None:
        """read_many's paths under a list of ``n`` items grouped by the item their segment at
        ``depth`` names (ASCII digits, in range): the items ascending, the members naming each,
        the tail of each lone one; None when any segment is otherwise."""
        ...

    def FastGet(  # noqa: N802 (a class of the C module)
        self,
        kind: str,
        cls: type,
        fallback: Callable[[Any, Any], Any],
        decode: Callable[[bytes], object],
        switch: dict[str, Any],
        missing: object = None,
        absent: Callable[[Any], Any] | None = None,
        /,
    ) -> Callable[[Any, Any], Any]:
        """``cls.__getitem__`` in C from ``cls``'s slots, on a view without a cache: ``kind``
        "stride" (an exact int in range: the item, or the row view), "hash"
        (``BlockProbe.get``; ``missing`` its sentinel, ``absent(key)`` raises a miss's
        KeyError) or "inline" (a view kept for the key, or a value without a node, read and
        decoded). ``fallback`` answers everything else, and all calls once
        ``switch["speedups"]`` is None."""
        ...

    def Memory(self, buffer: object, /) -> File:  # noqa: N802 (a class of the C module)
        """The C reads' handle on bytes in memory."""
        ...

    def File(self, fd: int, map_size: int = 0, /) -> File:  # noqa: N802 (a class of the C module)
        """The C reads' handle on a local file: a memory map of its first ``map_size`` bytes
        where reads from it cannot kill the process (Linux), ``pread`` otherwise."""
        ...

    def shuffle(self, src: Any, element: int, /) -> bytes:
        """``src`` byte-shuffled (``format.shuffle.shuffle``)."""
        ...

    def unshuffle_into(self, src: Any, element: int, out: Any, /) -> None:
        """The plain bytes of the byte-shuffled ``src`` into ``out`` (``format.shuffle``)."""
        ...

    def gather_into(self, src: Any, element: int, lo: int, out: Any, /) -> None:
        """Plain bytes [lo, lo + len(out)) of the byte-shuffled ``src`` into ``out``."""
        ...

    def gather_grid(
        self,
        src: Any,
        element: int,
        lo: int,
        counts: tuple[int, ...],
        strides: tuple[int, ...],
        run: int,
        out: Any,
        out_lo: int,
        out_strides: tuple[int, ...],
        /,
    ) -> None:
        """A grid of runs of plain bytes of the byte-shuffled ``src`` into ``out``
        (``format.shuffle.gather_grid``)."""
        ...


API = 22  # the version of ``_speedups`` this code calls (SPEEDUPS_API in _speedups.c)


def _load() -> Speedups | None:
    if os.environ.get("MSGLC_PURE_PYTHON", "").lower() in ("1", "true", "yes"):
        return None
    try:
        import msglc._speedups as _speedups
    except ImportError:  # pragma: no cover - depends on the build
        return None
    if getattr(_speedups, "API", 0) != API:  # a build left from another version (an editable install)
        warnings.warn(
            f"msglc._speedups ({_speedups.__file__}) was built from another version of msglc: msglc uses its "
            "pure-Python path (the same bytes, more slowly); reinstall msglc to rebuild it",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    module: Speedups = _speedups  # a C module, untyped: ``Speedups`` declares its functions
    return module


# read by name in _speedups.c: FastGet looks up "speedups" in vars(accel) at each call, so that
# a test setting it to None turns the C view lookups off too
speedups: Speedups | None = _load()
