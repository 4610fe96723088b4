"""Paths into an archive: ``"a/b/3"``, ``["a", "b", 3]``, slices; parsed once and resolved
against lazy views or plain values alike."""

from __future__ import annotations

import re
import sys
from typing import Any

from msglc.read.array import LazyArray
from msglc.read.views import LazyDict, LazyList


def split_path(path: Any) -> list[Any]:
    if path is None:
        return []
    if isinstance(path, str):
        return [seg for seg in path.split("/") if seg != ""]
    if isinstance(path, (list, tuple)):
        return list(path)
    if isinstance(path, int) and not isinstance(path, bool):
        return [path]
    raise TypeError(f"a path is a str like 'a/b/3' or a list of keys and indices, not {type(path).__name__}")


def resolve(obj: Any, segments: list[Any], done: tuple[Any, ...] = ()) -> Any:
    """The value at ``segments`` below ``obj``; ``done``: the segments that led to ``obj``
    (errors name the whole path)."""
    for depth, seg in enumerate(segments):
        where = [*done, *segments[: depth + 1]]
        if isinstance(obj, LazyArray) or _is_ndarray(obj):
            # the next ndim segments index the array at once: "m/3/4" is m[3, 4]
            take = segments[depth : depth + max(obj.ndim, 1)]
            key = tuple(_list_index(s, [*done, *segments[: depth + k + 1]]) for k, s in enumerate(take))
            try:
                value = obj[key]
            except IndexError as e:
                raise IndexError(f"{e} (at {_joined([*done, *segments[: depth + len(take)]])})") from None
            return resolve(value, segments[depth + len(take) :], (*done, *segments[: depth + len(take)]))
        if isinstance(obj, (list, LazyList)):
            index = _list_index(seg, where)
            if isinstance(index, slice):
                before = (*done, *segments[:depth])
                positions = range(*index.indices(len(obj)))
                return [
                    resolve(x, segments[depth + 1 :], (*before, i)) for i, x in zip(positions, obj[index], strict=True)
                ]
            try:
                obj = obj[index]
            except IndexError:
                raise IndexError(f"index {index} out of range for a list of {len(obj)} (at {_joined(where)})") from None
        elif isinstance(obj, (dict, LazyDict)):
            obj = _dict_value(obj, seg, where)
        else:
            kind = type(obj).__name__ if obj is not None else "None"
            raise TypeError(f"cannot look up {seg!r} in a {kind} (at {_joined(where[:-1]) or 'the root'})")
    return obj


def _joined(path: list[Any]) -> str:
    return "/".join(map(str, path))


_INT = re.compile(r"-?[0-9]+")


def _is_ndarray(obj: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, np.ndarray)


def _list_index(seg: int | slice | str, where: list[Any]) -> int | slice:
    if not isinstance(seg, str):
        return seg
    parts = seg.split(":")
    if len(parts) <= 3 and all(p == "" or _INT.fullmatch(p) for p in parts) and (len(parts) > 1 or parts[0]):
        if len(parts) == 1:
            return int(seg)
        if parts[2:] != ["0"]:
            return slice(*(int(p) if p else None for p in parts))
    raise TypeError(f"list index must be an int or a slice like '1:5', not {seg!r} (at {'/'.join(map(str, where))})")


def _dict_value(d: Any, seg: Any, where: list[Any]) -> Any:
    try:
        return d[seg]
    except KeyError:
        if isinstance(seg, str) and _INT.fullmatch(seg):
            try:
                return d[int(seg)]
            except KeyError:
                pass
        raise KeyError(f"{seg!r} not found (at {'/'.join(map(str, where))})") from None
