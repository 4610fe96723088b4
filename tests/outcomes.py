"""What a read gives, as plain comparable objects, and the same read with the C accelerator
and with the pure-Python path (tests of the C read paths); reads over bytes and the memory
lookups keep, for the tests of the dict indexes' C probes."""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Callable

import numpy as np

import msglc
from msglc.read.part import LazyPart
from msglc.util import accel


def plain(v):
    """A value as plain objects, its floats as their bits (so that NaN and -0.0 compare)."""
    if isinstance(v, LazyPart):
        v = v.to_obj()
    if isinstance(v, float):
        return ("float", struct.pack(">d", v))
    if isinstance(v, tuple):
        return tuple(plain(x) for x in v)
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.tolist())
    if isinstance(v, np.generic):
        return ("numpy", v.dtype.str, v.item())
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def answer(f):
    """What ``f()`` gives: ("ok", value as plain objects) or (exception type, message)."""
    try:
        return ("ok", plain(f()))
    except Exception as e:  # the outcome compared, whatever it is
        return (type(e).__name__, str(e))


def both_modes(monkeypatch, run):
    """``run()`` with the C accelerator, then with the pure-Python path."""
    with_c = run()
    with monkeypatch.context() as m:
        m.setattr(accel, "speedups", None)
        pure = run()
    return with_c, pure


class BytesReads:
    """An archive's reads (``dict_index.Reads``) over bytes, counted: an index's lookups
    tested without an archive around them."""

    def __init__(self, data: bytes | bytearray) -> None:
        self.data = data
        self.reads = 0

    def read(self, offset: int, size: int) -> memoryview:
        self.reads += 1
        if offset < 0 or size < 0 or offset + size > len(self.data):
            raise msglc.TruncatedError(f"{size} bytes at {offset}")
        return memoryview(self.data)[offset : offset + size]

    def damaged(self, message: str) -> Exception:
        return msglc.CorruptedError(message)


def traced_growth(*steps: Callable[[], object]) -> list[int]:
    """The bytes of memory each step left allocated (``tracemalloc``), in order: what a
    dict's index keeps as lookups read it."""
    tracemalloc.start()
    try:
        grown, last = [], tracemalloc.get_traced_memory()[0]
        for step in steps:
            step()
            now = tracemalloc.get_traced_memory()[0]
            grown.append(now - last)
            last = now
        return grown
    finally:
        tracemalloc.stop()


def dict_entries(
    header: bytes, keys: list[object], large: Callable[[int], bool], value: Callable[[int], object]
) -> tuple[bytearray, list[int], list[tuple[int, int, bytes]]]:
    """A dict's entries encoded after ``header`` (for crafted indexes): the bytes, each
    entry's offset and then the end, and (start, end, encoded key) of the entries whose value
    is ``large`` (``value(i)``: entry i's value, asked in order)."""
    import msgspec

    body, koffs, kids = bytearray(header), [], []
    for i, key in enumerate(keys):
        koffs.append(len(body))
        kb = msgspec.msgpack.encode(key)
        body += kb + msgspec.msgpack.encode(value(i))
        if large(i):
            kids.append((koffs[-1], len(body), kb))
    koffs.append(len(body))
    return body, koffs, kids
