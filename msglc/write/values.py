"""Refuse values msglc cannot store faithfully, naming the type and where it sits.

msgspec happily encodes naive datetimes, UUIDs, dataclasses, enums and more, but they would read
back as different types (strs, dicts, plain values). Aware datetimes are stored, as msgpack
timestamps (extension -1, which msgspec decodes to UTC datetimes). The check visits containers
with C-level ``set(map(type, ...))`` passes and descends only into container items, so runs of
scalars cost a few nanoseconds each. ``converted`` applies the ``enc_hook`` option: the user's
conversion of refused values into storable ones.

It reads containers as msgspec encodes them, from their C storage (``dict.items(d)``, never a
subclass's override), and raises ``Streamed`` at a subclass whose own iteration would give
something else (``unsized.iterates``): the writer then streams the object instead.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Callable, Container, Iterable
from contextlib import suppress
from typing import Any

from msglc.util import accel
from msglc.util.optional import loaded_numpy
from msglc.write.unsized import Streamed, is_streamed, iterates, reordered

SCALAR, SEQ, MAP = 1, 2, 3


Seq = list[Any] | tuple[Any, ...]  # a sequence as msgspec encodes it, from its C storage


ITERATED = -1  # a container subclass written from its own iteration: kind() raises Streamed

TOO_DEEP = "object is nested too deeply or contains a reference to itself"  # (a RecursionError, said so)


_KINDS: dict[type, int] = {
    type(None): SCALAR, bool: SCALAR, int: SCALAR, float: SCALAR, str: SCALAR,
    bytes: SCALAR, bytearray: SCALAR, memoryview: SCALAR,
    list: SEQ, tuple: SEQ, set: SEQ, frozenset: SEQ, dict: MAP,
    datetime.datetime: SCALAR,  # an aware one (``naive`` checks each value)
}  # fmt: skip


_CONTAINER_BASES = ((list, SEQ), (tuple, SEQ), (set, SEQ), (frozenset, SEQ), (dict, MAP))


class Unsupported(Exception):
    """Internal: carries the offending type and the path to it, built while unwinding."""

    def __init__(self, what: str, hint: str = "") -> None:
        self.what = what
        self.hint = hint
        self.path: list[Any] = []

    def error(self) -> TypeError:
        where = "/".join(str(p) for p in reversed(self.path)) or "the root"
        return TypeError(
            f"msglc cannot store {self.what} (at {where}){self.hint}: supported are None, bool, int, float, str, "
            "bytes, list, tuple, set, dict with str or int keys, datetimes with a timezone, and NumPy arrays and "
            "scalars; to store other values, pass enc_hook=<function returning a supported value> (per call or to "
            "msglc.configure), e.g. enc_hook=str for UUID and Decimal"
        )


def naive(x: Any) -> bool:
    """A datetime without a UTC offset, which msgspec would write as a str."""
    return type(x) is datetime.datetime and x.utcoffset() is None


def naive_datetime() -> Unsupported:
    return Unsupported(
        "a naive datetime", " (it has no timezone: give it one, e.g. dt.replace(tzinfo=datetime.timezone.utc))"
    )


def kind(t: type) -> int:
    """SCALAR, SEQ or MAP for a storable type, 0 otherwise.

    Mirrors what msgspec writes faithfully: scalars of the exact built-in types, enum members
    that are also ints, strs or floats (``IntEnum``, ``StrEnum``, ``IntFlag``: they are read
    back as their plain values, which compare equal), and subclasses of the containers. Other
    subclasses of scalars msgspec refuses; plain ``Enum`` members it would store as their values,
    which would read back as a different type. NumPy arrays and scalars are leaves here:
    the encoder's hook (``msglc.arrays``) has checked them by the time the TOC is built.

    Raises ``Streamed`` for a container subclass with its own ``items()`` or ``__iter__``:
    msgspec has encoded its C storage, not what it yields, so the object must be streamed."""
    k = _KINDS.get(t)
    if k is None:
        k = _KINDS[t] = _classify(t)
    if k == ITERATED:
        raise Streamed
    return k


def _classify(t: type) -> int:
    np = loaded_numpy()
    if np is not None and issubclass(t, (np.ndarray, np.generic)):
        return SCALAR
    if issubclass(t, enum.Enum):
        return SCALAR if issubclass(t, (int, str, float)) else 0
    k = next((v for base, v in _CONTAINER_BASES if issubclass(t, base)), 0)
    return ITERATED if k and iterates(t) else k


def unsupported_type(t: type) -> Unsupported:
    return Unsupported(
        f"a value of type {t.__module__}.{t.__qualname__}"
        if t.__module__ != "builtins"
        else f"a value of type {t.__name__}"
    )


def check_value(x: Any) -> None:
    k = kind(type(x))
    if k == SEQ:
        check_items(x if isinstance(x, (list, tuple)) else list(x))
    elif k == MAP:
        check_map(x)
    elif not k:
        raise unsupported_type(type(x))
    elif naive(x):
        raise naive_datetime()


def check_items(seq: Seq, skip: Container[int] = frozenset()) -> None:
    """Check every item of ``seq`` except the indices in ``skip`` (checked elsewhere)."""
    if not (accel.speedups is not None and accel.speedups.plain_values(seq)):
        _check_values(seq, lambda: enumerate(seq), skip)


def _check_values(
    values: Iterable[Any], labelled: Callable[[], Iterable[tuple[Any, Any]]], skip: Container[Any]
) -> None:
    """One C-level pass over the value types; a per-item walk only when containers are present.
    ``labelled()`` yields (index or key, value) pairs, for the path in an error."""
    nested = False
    for t in set(map(type, values)):
        k = kind(t)
        if not k:
            e = unsupported_type(t)
            e.path.append(label_of(labelled(), t))
            raise e
        nested = nested or k != SCALAR
        if t is datetime.datetime:
            for label, x in labelled():
                if naive(x):
                    e = naive_datetime()
                    e.path.append(label)
                    raise e
    if nested:
        for label, x in labelled():
            if _KINDS.get(type(x)) != SCALAR and label not in skip:
                try:
                    check_value(x)
                except Unsupported as e:
                    e.path.append(label)
                    raise


def key_type_ok(t: type) -> bool:
    """Dict keys are strs and ints (not bools), or enum members that are."""
    return t is not bool and issubclass(t, (str, int)) and kind(t) == SCALAR


def bad_key(key: Any) -> Unsupported:
    return Unsupported(f"a dict key of type {type(key).__name__} ({key!r:.40})")


def check_keys(d: dict[Any, Any]) -> None:
    keys = dict.keys(d)
    for t in set(map(type, keys)):
        if not key_type_ok(t):
            raise bad_key(label_of(zip(keys, keys, strict=True), t))


def label_of(labelled: Iterable[tuple[Any, Any]], t: type) -> Any:
    """The label of the first value of type ``t`` among (label, value) pairs, to say where an
    error is. Not a bare ``next()``: its StopIteration would end the caller's loop."""
    for label, x in labelled:
        if type(x) is t:
            return label
    raise RuntimeError("a container changed while msglc was writing it")


def check_map(d: dict[Any, Any], skip: Container[Any] = frozenset()) -> None:
    """Check keys and values of ``d`` except the values of the keys in ``skip``. Raises
    ``Streamed`` for an OrderedDict whose order is not its storage's (``reordered``)."""
    if accel.speedups is not None and accel.speedups.plain_values(d):
        return
    if type(d) is not dict and reordered(d):
        raise Streamed
    check_keys(d)
    _check_values(dict.values(d), lambda: dict.items(d), skip)


def converted(x: Any, hook: Callable[[Any], Any]) -> Any:
    """``x`` with every value msglc refuses (``kind`` 0, naive datetimes, dict keys other than
    str and int) replaced by ``hook(value)``, converted in turn. Containers are copied only
    where something changed (tuples and sets then become lists, as they read back anyway);
    NumPy values and streamed values are left as they are: the streaming writer converts the
    items it draws."""
    t = type(x)
    k = _KINDS.get(t)
    if k is None:
        k = _KINDS[t] = _classify(t)
    if k == SCALAR:
        return _hooked(x, hook) if t is datetime.datetime and naive(x) else x
    if k == SEQ:
        items = x if t is list or t is tuple else list(x)
        new = [converted(v, hook) for v in items]
        return x if all(map(_same, new, items)) else new
    if k == MAP:
        if t is not dict and reordered(x):
            return x  # streamed in its own order
        # a key msglc refuses goes to the hook whatever its kind (a float or bytes key is a value msglc stores)
        out = {(k2 if key_type_ok(type(k2)) else _hooked(k2, hook)): converted(v, hook) for k2, v in dict.items(x)}
        if len(out) != len(x):
            raise ValueError("enc_hook converted two keys of a dict into the same key")
        return x if all(map(_same, out.items(), dict.items(x))) else out
    if k == ITERATED or is_streamed(x):
        return x
    return _hooked(x, hook)


def _same(a: Any, b: Any) -> bool:
    return a is b or (type(a) is tuple and a[0] is b[0] and a[1] is b[1])


def _hooked(x: Any, hook: Callable[[Any], Any]) -> Any:
    y = hook(x)
    if type(y) is type(x) and (type(x) is not datetime.datetime or naive(y)):
        raise TypeError(f"enc_hook returned a {type(x).__name__} for a {type(x).__name__}: it must convert the value")
    return converted(y, hook)


def find_path(x: Any, bad: Callable[[Any], bool], path: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    """Slow walk used only to explain an encoder error: the path of the first value (or key)
    for which ``bad(value)`` is true."""
    if bad(x):
        return path
    if isinstance(x, dict):
        for k, v in dict.items(x):
            found = find_path(k, bad, (*path, k)) if bad(k) else find_path(v, bad, (*path, k))
            if found is not None:
                return found
    elif isinstance(x, (list, tuple, set, frozenset)):
        for i, v in enumerate(x):
            found = find_path(v, bad, (*path, i))
            if found is not None:
                return found
    return None


def int_out_of_range(x: Any) -> bool:
    return type(x) is int and not -(2**63) <= x < 2**64


def invalid_str(x: Any) -> bool:
    """A str with a lone surrogate, which UTF-8 (and so msgpack) cannot hold."""
    if not isinstance(x, str):
        return False
    try:
        x.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def raise_if_streamed(x: Any) -> None:
    """Raise ``Streamed`` if the full check meets a container written from its own iteration
    (before any refused value). For an encoder failure: it may lie in such a container's C
    storage, which is not what gets written, so the object is streamed instead."""
    with suppress(Unsupported, RecursionError):
        check_value(x)


def check_value_or_raise(x: Any) -> None:
    """Run the full check and raise its ``TypeError`` (used to explain an encoder failure)."""
    try:
        check_value(x)
    except Unsupported as e:
        raise e.error() from None
