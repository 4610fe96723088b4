"""Values compared with the truth, and the path semantics of the README, as the harness checks
them."""

from __future__ import annotations

import struct
from typing import Any, cast

import msgspec
import numpy as np

import msglc
from msglc import LazyArray, LazyDict, LazyList

from .common import MISSING

# ---- values: comparison and the path semantics of the README ------------------------------------


def _canon_hook(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return ["\x00ndarray", str(x.dtype.descr), x.dtype.str, list(x.shape), np.ascontiguousarray(x).tobytes()]
    if isinstance(x, np.generic):
        return ["\x00generic", type(x).__name__, str(x.dtype.descr), x.dtype.str, x.tobytes()]
    raise TypeError(type(x).__name__)


_canon = msgspec.msgpack.Encoder(enc_hook=_canon_hook).encode


def canon(x: Any) -> bytes | None:
    """A byte string equal for values ``same`` calls equal (msgpack keeps types, float
    bits and key order), or None where it cannot say."""
    try:
        return _canon(x)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None


def same(a: Any, b: Any, b_canon: bytes | None = None) -> bool:
    """Equal values of the same types (bit-exact floats, NumPy dtype, shape and bytes, dict
    order); lists and tuples alike. ``b_canon``: ``canon(b)`` if known."""
    ca = canon(a)
    if ca is not None:
        cb = b_canon if b_canon is not None else canon(b)
        if cb is not None:
            return ca == cb
    return same_exactly(a, b)


def same_exactly(a: Any, b: Any) -> bool:
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        return (
            type(a) is type(b)
            and a.dtype == b.dtype
            and np.shape(a) == np.shape(b)
            and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
        )
    if isinstance(a, tuple):
        a = list(a)
    if isinstance(b, tuple):
        b = list(b)
    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(map(same_exactly, a, b))
    if type(a) is dict:
        return len(a) == len(b) and all(
            same_exactly(ka, kb) and same_exactly(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    return bool(a == b)


def plain(x: Any) -> Any:
    """What reading back gives for a value written by ``dumps``: tuples as lists, NumPy
    scalars as the plain values they equal (or 0-d arrays where none does)."""
    if isinstance(x, np.generic):
        return x.item() if x.dtype.kind in "biufSU" and x.dtype.itemsize <= 8 or x.dtype.kind in "SU" else np.asarray(x)
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    return x


def _segment(seg: Any, n: int) -> int | slice:
    """A str segment on n items, as the README defines it: ``start:stop`` or
    ``start:step:stop`` (defaults 0, 1, n), a start outside [-n, n) or a stop outside
    [1-n, n] moved by n at a time until inside."""
    if not isinstance(seg, str):
        return cast("int | slice", seg)
    parts = seg.split(":")
    if len(parts) == 1:
        return int(seg)
    if len(parts) == 2:
        parts.insert(1, "")
    start, step, stop = (int(p) if p else d for p, d in zip(parts, (0, 1, n), strict=True))
    while n and start < -n:
        start += n
    while n and start >= n:
        start -= n
    while n and stop < 1 - n:
        stop += n
    while n and stop > n:
        stop -= n
    return slice(start, stop, step)


def expect(obj: Any, segs: list[Any]) -> Any:
    """The value at ``segs`` in the plain value ``obj``, as the README defines paths (an
    independent oracle for ``reader[path]``): raises KeyError, IndexError or TypeError."""
    for d, seg in enumerate(segs):
        if isinstance(obj, np.ndarray):
            take = segs[d : d + max(obj.ndim, 1)]
            return expect(
                obj[tuple(_segment(s, obj.shape[k] if k < obj.ndim else 0) for k, s in enumerate(take))],
                segs[d + len(take) :],
            )
        if isinstance(obj, list):
            index = _segment(seg, len(obj))
            if isinstance(index, slice):
                return [expect(x, segs[d + 1 :]) for x in obj[index]]
            obj = obj[index]
        elif isinstance(obj, dict):
            if seg in obj:
                obj = obj[seg]
            elif isinstance(seg, str) and seg.lstrip("-").isdigit() and int(seg) in obj:
                obj = obj[int(seg)]
            else:
                raise KeyError(seg)
        else:
            raise TypeError(f"cannot look up {seg!r} in a {type(obj).__name__}")
    return obj


class Inconsistent(Exception):
    """Two ways of reading the same part gave different values."""


def walk(x: Any) -> Any:
    """Every part of ``x`` read by indexing (items, negative indices, slices, keys, ``in``,
    ``get``, NumPy selections), as plain values."""
    if isinstance(x, LazyArray):
        return _walk_array(x)
    if isinstance(x, LazyList):
        n = len(x)
        out: Any = [walk(x[i]) for i in range(n)]  # (a dict below)
        if n:  # the other ways in, each compared whole (decoded at once, not walked again)
            require_agreement(whole_value(x[-1]), out[-1], "x[-1]")
            require_agreement(whole_value(x[-n]), out[0], "x[-n]")
            for s in (slice(1, 4), slice(-3, None), slice(None, None, max(1, n // 4)), slice(None, 3, -2)):
                require_agreement([whole_value(v) for v in x[s]], out[s], f"x[{s}]")
        for bad in (n, -n - 1):
            try:
                x[bad]
            except IndexError:
                pass
            else:
                raise Inconsistent(f"x[{bad}] of a list of {n} did not raise IndexError")
        return out
    if isinstance(x, LazyDict):
        keys = list(x)
        if len(keys) != len(x):
            raise Inconsistent(f"len() {len(x)} but {len(keys)} keys")
        out = {}
        for k in keys:
            out[k] = walk(x[k])
            if k not in x:
                raise Inconsistent(f"{k!r} listed but not in")
        for k in keys[:3] + keys[-3:]:
            require_agreement(whole_value(x.get(k)), out[k], f"get({k!r})")
        if "\x00missing" in x or x.get("\x00missing", MISSING) is not MISSING:
            raise Inconsistent("a missing key was found")
        return out
    if type(x) is list and any(isinstance(v, (LazyList, LazyDict, LazyArray, list)) for v in x):
        return [walk(v) for v in x]  # a slice path's list of lazy parts
    return x


def whole_value(x: Any) -> Any:
    """A value read whole: a lazy part decoded in one call (``to_obj``); a list of them (a
    slice path's value) item by item."""
    if isinstance(x, LazyArray):
        return np.array(x.to_obj())
    if isinstance(x, (LazyList, LazyDict)):
        return x.to_obj()
    if type(x) is list and any(isinstance(v, (LazyList, LazyDict, LazyArray, list)) for v in x):
        return msglc.to_obj(x)  # (a loop: the list may be a deep value)
    return x


def _walk_array(x: LazyArray) -> Any:
    whole = np.array(np.asarray(x))
    if whole.shape != x.shape or whole.dtype != x.dtype:
        raise Inconsistent(f"np.asarray gave {whole.shape} {whole.dtype}, the array says {x.shape} {x.dtype}")
    if x.ndim == 0:
        require_agreement(x[()], whole[()], "a[()]")
        return whole
    keys: list[Any] = [(Ellipsis, None), slice(1, 3), slice(None, None, -2)]
    if len(x):
        keys += [0, -1, (0,) * x.ndim, (-1,) * x.ndim]
    if x.ndim >= 2:
        keys += [(slice(None), 0), (slice(None, None, 2), slice(-2, None))] if x.shape[1] else []
    for key in keys:
        require_agreement(x[key], whole[key], f"a[{key}]")
    return whole


def walk_iter(x: Any) -> Any:
    """Every part of ``x`` read by iteration (``iter``, ``items()``, ``values()``) and each
    lazy part's ``to_obj()``, as plain values."""
    if isinstance(x, LazyArray):
        whole = np.array(x.to_obj())
        if x.ndim:
            for i, row in zip(range(200), x, strict=False):  # the first rows (items) one by one
                require_agreement(row, whole[i], f"iter(a)[{i}]")
        return whole
    if isinstance(x, LazyList):
        out: Any = [walk_iter(v) for v in x]  # (a dict below)
    elif isinstance(x, LazyDict):
        out = {k: walk_iter(v) for k, v in x.items()}
        if len(list(x.values())) != len(out):
            raise Inconsistent("values() and items() differ in length")
    else:
        return x
    require_agreement(x.to_obj(), out, "to_obj()")
    return out


def require_agreement(a: Any, b: Any, what: str) -> None:
    if not same(a, b):
        raise Inconsistent(f"{what} gave {brief(a)}, expected {brief(b)}")


def brief(x: Any) -> str:
    try:
        text = repr(x)
    except Exception as e:  # noqa: BLE001 - e.g. a NumPy str array holding invalid code points
        text = f"<{type(x).__name__}: repr raised {type(e).__name__}>"
    return text if len(text) < 120 else text[:117] + "..."
