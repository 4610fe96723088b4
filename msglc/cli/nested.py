"""The command's output forms (JSON, repr, msgpack) of values at any depth.

``json``, ``repr`` and msgspec recurse once per level of nesting and stop at Python's
recursion limit, while an archive may nest deeper (``combine`` of a ``combine`` ..., or a
value written with a raised limit), and reads decode it. Each form is made whole by its usual
function when that works; else the levels too deep for it are written by a loop and every
part shallow enough by the usual function, so the output is the same text or bytes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from msglc.format.msgpack import array_header, map_header
from msglc.write.arrays import ArrayEncoder, DataSection

_CONTAINERS = (list, tuple, dict)


def _children(x: Any) -> Iterator[Any]:
    """The containers directly inside ``x`` (a dict's keys too: a key may be a tuple)."""
    items = [*x.keys(), *x.values()] if isinstance(x, dict) else x
    return (c for c in items if isinstance(c, _CONTAINERS))


def _heights(value: Any) -> dict[int, int]:
    """How many levels of lists, tuples and dicts each container in ``value`` holds,
    itself included, by ``id``: a loop, not a recursion."""
    heights: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        x, children_done = stack.pop()
        if children_done:
            heights[id(x)] = 1 + max((heights[id(c)] for c in _children(x)), default=0)
        elif id(x) not in heights and isinstance(x, _CONTAINERS):
            stack.append((x, True))
            stack.extend((c, False) for c in _children(x))
    return heights


Form = Callable[[Any], list[tuple[bool, Any]]]  # a container's parts: (True, a value) or (False, literal output)


def _pieces(value: Any, whole: Callable[[Any], Any], form: Form) -> list[Any]:
    """The output of ``value`` in pieces: parts no higher than half the recursion limit by
    ``whole``, the levels above them by ``form``."""
    heights = _heights(value)
    budget = max(1, sys.getrecursionlimit() // 2)
    out: list[Any] = []
    stack: list[tuple[bool, Any]] = [(True, value)]
    while stack:
        is_value, x = stack.pop()
        if not is_value:
            out.append(x)
        elif heights.get(id(x), 0) <= budget:
            out.append(whole(x))
        else:
            stack.extend(reversed(form(x)))
    return out


def _joined(x: Any, opening: Any, closing: Any, sep: Any, pair: Any) -> list[tuple[bool, Any]]:
    """``opening``, the items of ``x`` separated by ``sep`` (a dict's as key ``pair`` value),
    ``closing``."""
    parts: list[tuple[bool, Any]] = [(False, opening)]
    if isinstance(x, dict):
        for i, (k, v) in enumerate(x.items()):
            parts.extend([(False, sep)] * bool(i) + [(True, k), (False, pair), (True, v)])
    else:
        for i, v in enumerate(x):
            parts.extend([(False, sep)] * bool(i) + [(True, v)])
    parts.append((False, closing))
    return parts


def json_text(value: Any, default: Callable[[Any], Any]) -> str:
    """``json.dumps(value, default=default)``, at any depth."""
    try:
        return json.dumps(value, default=default)
    except RecursionError:
        pass

    def form(x: Any) -> list[tuple[bool, Any]]:
        if not isinstance(x, dict):
            return _joined(x, "[", "]", ", ", None)
        parts: list[tuple[bool, Any]] = [(False, "{")]
        for i, (k, v) in enumerate(x.items()):
            key = json.dumps({k: 0})[1:-4]  # the key as JSON writes one (str, or a number's text)
            parts.extend([(False, ", ")] * bool(i) + [(False, key + ": "), (True, v)])
        return [*parts, (False, "}")]

    return "".join(_pieces(value, lambda x: json.dumps(x, default=default), form))


def repr_text(value: Any) -> str:
    """``repr(value)``, at any depth."""
    try:
        return repr(value)
    except RecursionError:
        pass

    def form(x: Any) -> list[tuple[bool, Any]]:
        if isinstance(x, dict):
            return _joined(x, "{", "}", ", ", ": ")
        if isinstance(x, tuple):
            return _joined(x, "(", ",)" if len(x) == 1 else ")", ", ", None)
        return _joined(x, "[", "]", ", ", None)

    return "".join(_pieces(value, repr, form))


def msgpack_bytes(value: Any) -> bytes:
    """The msgpack of a value read from an archive (NumPy arrays as msglc stores them), at
    any depth."""

    def whole(x: Any) -> bytes:
        arrays = ArrayEncoder(True)
        return b"".join(DataSection(msgspec.msgpack.Encoder(enc_hook=arrays).encode(x), arrays).chunks())

    try:
        return whole(value)
    except RecursionError:
        pass

    def form(x: Any) -> list[tuple[bool, Any]]:
        if isinstance(x, dict):
            return _joined(x, map_header(len(x)), b"", b"", b"")
        return _joined(x, array_header(len(x)), b"", b"", None)

    return b"".join(_pieces(value, whole, form))
