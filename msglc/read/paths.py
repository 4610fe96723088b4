"""Paths into an archive: ``"a/b/3"``, ``["a", "b", 3]``, slices; parsed once and resolved
against lazy views or plain values alike.

A str segment on a list follows the published msglc's syntax: an int (``int()``'s), or a slice
``start:stop`` or ``start:step:stop`` (the middle part is the step), empty parts meaning 0, 1
and the length; out-of-range slice bounds wrap by the length (``normalised_slice``). Python
``slice`` objects and ints in list paths keep Python's meaning, and an int out of range raises
IndexError."""

from __future__ import annotations

import re
from typing import Any, cast

from msglc.read.array import LazyArray
from msglc.read.views import LazyBlockList, LazyDict, LazyList
from msglc.util.optional import is_ndarray


def split_path(path: Any) -> list[Any]:
    if path is None:
        return []
    if isinstance(path, str):
        return [seg for seg in path.split("/") if seg != ""]
    if isinstance(path, (list, tuple)):
        return list(path)
    if (isinstance(path, int) and not isinstance(path, bool)) or isinstance(path, slice):
        return [path]
    raise TypeError(f"a path is a str like 'a/b/3' or a list of keys and indices, not {type(path).__name__}")


def lookup(root: Any, path: str) -> Any:
    """``resolve(root, split_path(path))`` for a str path: its common steps short
    (``short_steps``), the rest of the path from where they stop through ``resolve``."""
    segments = path.split("/")
    if "" in segments:
        segments = [s for s in segments if s]
    obj, depth = short_steps(root, segments)
    return obj if depth == len(segments) else resolve(obj, segments[depth:], tuple(segments[:depth]))


def lookup_below(obj: Any, head: str, seg: str) -> Any:
    """``lookup(root, head + "/" + seg)`` from ``obj``, the value ``lookup(root, head)`` gave
    (``seg`` is not empty and has no "/"): the same value, or the same error."""
    kind = _kinds.get(type(obj))
    if kind is None:
        kind = kind_of(obj)
    if kind is DICT:
        try:
            return obj[seg]
        except KeyError:
            return _missing_key(obj, seg, [*split_path(head), seg])
    return resolve(obj, [seg], tuple(split_path(head)))


def short_steps(obj: Any, segments: list[Any], depth: int = 0) -> tuple[Any, int]:
    """Follow ``segments`` from ``depth`` below ``obj`` while each step is a common one: a str
    key of a dict, a non-negative list index in ASCII digits. Returns
    the value reached and the position of the first segment not taken (``len(segments)``
    when all were); a key a dict does not hold is looked up once (each miss costs reads),
    with the int retry and ``resolve``'s error."""
    n = len(segments)
    while depth < n:
        seg = segments[depth]
        if type(seg) is not str:
            break
        kind = _kinds.get(type(obj))
        if kind is None:
            kind = kind_of(obj)
        if kind is DICT:
            try:
                obj, taken = _look(obj, seg, segments, depth, LazyDict)
                if taken:
                    return obj, n
            except KeyError:
                obj = _missing_key(obj, seg, segments[: depth + 1])
        elif kind is LIST and len(seg) < 19 and seg.isdigit() and seg.isascii():  # (at most 18 digits)
            try:
                obj, taken = _look(obj, int(seg), segments, depth, LazyBlockList)
                if taken:
                    return obj, n
            except IndexError:
                break
        else:
            break
        depth += 1
    return obj, depth


DICT, LIST, OTHER = "dict", "list", "other"


_kinds: dict[type, str] = {}  # type -> DICT, LIST or OTHER: isinstance of the ABCs is slow


def kind_of(obj: Any) -> str:
    """DICT for a dict or lazy dict, LIST for a list or lazy list, else OTHER."""
    kind = _kinds.get(type(obj))
    if kind is None:
        kind = DICT if isinstance(obj, (dict, LazyDict)) else LIST if isinstance(obj, (list, LazyList)) else OTHER
        if len(_kinds) < 256:  # the classes seen: a handful
            _kinds[type(obj)] = kind
    return kind


def resolve(obj: Any, segments: list[Any], done: tuple[Any, ...] = ()) -> Any:
    """The value at ``segments`` below ``obj``; ``done``: the segments that led to ``obj``
    (errors name the whole path). A key of a dict and an int index of a list are taken here
    at the cost of one lookup each; every other step by ``_step``."""
    depth, n = 0, len(segments)
    while depth < n:
        seg = segments[depth]
        kind = _kinds.get(type(obj))
        if kind is None:
            kind = kind_of(obj)
        if kind is DICT:
            try:
                obj, taken = _look(obj, seg, segments, depth, LazyDict)
                if taken:
                    return obj
            except KeyError:
                obj = _missing_key(obj, seg, [*done, *segments[: depth + 1]])
        elif kind is LIST and type(seg) is int:
            try:
                obj, taken = _look(obj, seg, segments, depth, LazyBlockList)
                if taken:
                    return obj
            except IndexError:
                where = [*done, *segments[: depth + 1]]
                raise IndexError(f"index {seg} out of range for a list of {len(obj)} (at {_joined(where)})") from None
        else:
            return _step(obj, segments, depth, done)
        depth += 1
    return obj


def _look(obj: Any, key: Any, segments: list[Any], depth: int, lazy: type[Any]) -> tuple[Any, bool]:
    """(``obj[key]``, False), ``key`` being ``segments[depth]`` as a key or an index; or, when
    segments follow and ``obj`` is a lazy view of the kind ``lazy``, its ``value_at``: the
    value, and True when it took the rest of the path too (decoding only what that names)."""
    if depth + 1 < len(segments) and type(obj) is not dict and type(obj) is not list and isinstance(obj, lazy):
        value, taken = obj.value_at(key, segments[depth + 1 :])
        return value, taken
    return obj[key], False


def _step(obj: Any, segments: list[Any], depth: int, done: tuple[Any, ...]) -> Any:
    """``resolve`` from ``segments[depth]`` on, where that step is not a dict key or a list's
    int index: an array's index (the next ``ndim`` segments), a list's str index or slice, or
    a step into a value that is not a container (an error)."""
    seg, where = segments[depth], [*done, *segments[: depth + 1]]
    if isinstance(obj, LazyArray) or is_ndarray(obj):
        # the next ndim segments index the array at once: "m/3/4" is m[3, 4]
        take = segments[depth : depth + max(obj.ndim, 1)]
        shape = obj.shape
        key = tuple(
            _list_index(s, shape[k] if k < len(shape) else 0, [*done, *segments[: depth + k + 1]])
            for k, s in enumerate(take)
        )
        try:
            value = obj[key]
        except IndexError as e:
            raise IndexError(f"{e} (at {_joined([*done, *segments[: depth + len(take)]])})") from None
        return resolve(value, segments[depth + len(take) :], (*done, *segments[: depth + len(take)]))
    if kind_of(obj) is LIST:
        index = _list_index(seg, len(obj), where)
        if isinstance(index, slice):
            before = (*done, *segments[:depth])
            try:
                positions = range(*index.indices(len(obj)))
            except ValueError as e:  # a step of 0
                raise ValueError(f"{e} (at {_joined(where)})") from None
            return [resolve(x, segments[depth + 1 :], (*before, i)) for i, x in zip(positions, obj[index], strict=True)]
        try:
            value, taken = _look(obj, index, segments, depth, LazyBlockList)
            if taken:
                return value
        except IndexError:
            raise IndexError(f"index {index} out of range for a list of {len(obj)} (at {_joined(where)})") from None
        return resolve(value, segments[depth + 1 :], tuple(where))
    kind = type(obj).__name__ if obj is not None else "None"
    raise TypeError(f"cannot look up {seg!r} in a {kind} (at {_joined(where[:-1]) or 'the root'})")


def _joined(path: list[Any]) -> str:
    return "/".join(map(str, path))


_INT = re.compile(r"-?[0-9]+")


def _list_index(seg: int | slice | str, n: int, where: list[Any]) -> int | slice:
    """A list segment as an index into a list of ``n``: a str is parsed (published syntax),
    anything else is used as it is."""
    if not isinstance(seg, str):
        return seg
    index = _int(seg)
    if index is not None:
        return index
    parts = seg.split(":")
    if 2 <= len(parts) <= 3:
        start, step, stop = parts[0], parts[1] if len(parts) == 3 else "", parts[-1]
        bounds = (_int(start) if start else 0, _int(step) if step else 1, _int(stop) if stop else n)
        if None not in bounds:
            return normalised_slice(*cast("tuple[int, int, int]", bounds), n)
    raise TypeError(
        f"list index must be an int, 'start:stop' or 'start:step:stop', not {seg!r} (at {'/'.join(map(str, where))})"
    )


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def normalised_slice(start: int, step: int, stop: int, n: int) -> slice:
    """The slice a path segment ``start:step:stop`` means on a list of ``n``, as the published
    msglc computes it: a start outside [-n, n) and a stop outside [1-n, n] are shifted by
    multiples of n into those ranges (so ``"-202:"`` and ``"398:"`` on 200 items both mean the
    last two); the slice then applies as Python's. An empty list has nothing to wrap around."""
    if n:
        if not -n <= start < n:
            start = start % n - (n if start < 0 else 0)
        if not 1 - n <= stop <= n:
            stop = (stop - 1) % n + (1 - n if stop < 0 else 1)
    return slice(start, stop, step)


def _missing_key(d: Any, seg: Any, where: list[Any]) -> Any:
    """For a key ``d`` does not hold: an int-like str segment's int key, else KeyError naming
    the path."""
    key = _int(seg) if isinstance(seg, str) and _INT.fullmatch(seg) else None  # (None: more digits than int() takes)
    if key is not None:
        try:
            return d[key]
        except KeyError:
            pass
    raise KeyError(f"{seg!r} not found (at {'/'.join(map(str, where))})") from None
