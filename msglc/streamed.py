"""Values written as they are produced: iterators become lists, ``Pairs`` become dicts.

The encoder's hook raises ``Streamed`` when it meets one, which hands the object over to the
streaming writer (``msglc.lazy_writer``); nothing has been consumed at that point.
"""

from __future__ import annotations

import io
from collections.abc import ItemsView, Iterable, Iterator, KeysView, ValuesView
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


def is_streamed(obj: Any) -> bool:
    """Is ``obj`` written by streaming: an iterator (a generator, ``map``, ``zip``...),
    ``range``, a dict view, or ``Pairs``? Open files are iterators too but are refused."""
    if isinstance(obj, (Pairs, range, KeysView, ValuesView, ItemsView)):
        return True
    return isinstance(obj, Iterator) and not isinstance(obj, io.IOBase)
