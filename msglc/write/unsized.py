"""Values whose length is known only once they are consumed, written as they are produced:
iterators become lists, ``Pairs`` become dicts, and so do containers that define their own
iteration.

The encoder's hook raises ``Streamed`` when it meets one, which hands the object over to the
streaming writer (``write.streaming``); nothing has been consumed at that point. msgspec
never calls the hook for subclasses of dict, list, tuple, set and frozenset: it encodes them
from their C storage. So the type check (``validate.kind``) raises ``Streamed`` for the
subclasses whose own ``items()`` or ``__iter__`` would give something else.
"""

from __future__ import annotations

import io
from collections import OrderedDict
from collections.abc import ItemsView, Iterable, Iterator, KeysView, ValuesView
from operator import is_
from typing import Any


class Pairs:
    """An iterable of (key, value) pairs written as a dict, consumed once: a dict too large to
    build in memory, e.g. ``Pairs((f"run{i}", result(i)) for i in range(n))``."""

    __slots__ = ("items",)

    def __init__(self, items: Iterable[tuple[Any, Any]]) -> None:
        self.items = items

    def __repr__(self) -> str:
        return f"Pairs({self.items!r})"


class Streamed(Exception):
    """Internal: the object holds values to be streamed."""


# What a container subclass yields, as Python's own serializers (pickle, json) read it: items()
# for dicts, iteration for the others. Inherited from one of these owners, it yields the C
# storage that msgspec encodes (OrderedDict's in its own order: see ``reordered``).
_ITERATION = ((dict, "items"), (list, "__iter__"), (tuple, "__iter__"), (set, "__iter__"), (frozenset, "__iter__"))


_STORAGE_OWNERS = frozenset({dict, OrderedDict, list, tuple, set, frozenset})


_ITERATES: dict[type, bool] = {}


def iterates(t: type) -> bool:
    """Does a container of type ``t`` yield other than its C storage: a subclass of dict that
    defines its own ``items()``, or of list, tuple, set or frozenset its own ``__iter__``?
    Such values are written from what they yield, streamed (a lazy ``items()`` can produce
    rows that never fit in memory). Cached per type: one dict lookup per container type."""
    found = _ITERATES.get(t)
    if found is None:
        found = _ITERATES[t] = _own_iteration(t)
    return found


def _own_iteration(t: type) -> bool:
    for base, method in _ITERATION:
        if issubclass(t, base):
            for owner in t.__mro__:
                if method in vars(owner):
                    return owner not in _STORAGE_OWNERS
    return False


def reordered(d: dict[Any, Any]) -> bool:
    """Is ``d`` an OrderedDict whose order is no longer its storage's (after ``move_to_end``)?
    msgspec writes the storage order; such a dict is streamed in its own order instead. A C
    pass over the keys, only for OrderedDicts."""
    return isinstance(d, OrderedDict) and not all(map(is_, OrderedDict.keys(d), dict.keys(d)))


def is_streamed(obj: Any) -> bool:
    """Is ``obj`` written by streaming: an iterator (a generator, ``map``, ``zip``...),
    ``range``, a dict view, ``Pairs``, or a container that yields other than its storage
    (``iterates``, ``reordered``)? Open files are iterators too but are refused."""
    if isinstance(obj, (Pairs, range, KeysView, ValuesView, ItemsView)) or iterates(type(obj)):
        return True
    if isinstance(obj, dict):
        return reordered(obj)
    return isinstance(obj, Iterator) and not isinstance(obj, io.IOBase)


def stop_iteration_error() -> RuntimeError:
    """What a ``StopIteration`` escaping a write becomes (chained to it): left as it is, it
    would silently end the loop of whoever called ``dump`` from a generator or ``map``."""
    return RuntimeError(
        "StopIteration raised while writing (by a value's items() or __iter__, or by next() on an exhausted "
        "iterator inside one); raised as RuntimeError so that it cannot silently end an enclosing loop"
    )
