"""The base of every lazy part (``LazyList``, ``LazyDict``, ``LazyArray``): where its bytes
and its TOC node are, and what every part answers alike."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from msglc.read.archive import Archive, Location
from msglc.read.extract import part_archive


class Bound:
    """What reads through an ``Archive``: a reader or a lazy part. The slot is here so that
    one ``archive_of`` answers for both."""

    __slots__ = ("_a",)  # read by name in _speedups.c (FastGet)
    _a: Archive


class LazyPart(Bound):
    """Common base: a container at absolute offset ``_base`` described by the TOC node at
    ``_pos`` (``_nsize`` bytes; 0 for a row of a fixed-stride list, which has none)."""

    __slots__ = ("_base", "_pos", "_nsize", "_cache")  # read by name in _speedups.c (FastGet)

    def __init__(self, archive: Archive, base: int, pos: int, nsize: int = 0) -> None:
        self._a = archive
        self._base = base
        self._pos = pos
        self._nsize = nsize
        self._cache: dict[Any, Any] | None = {} if archive.views.cached else None

    def _span(self) -> int:
        raise NotImplementedError

    def _memo(self, key: Any, compute: Callable[[Any], Any]) -> Any:
        """``compute(key)``, kept in the part's cache while the reader is ``cached``."""
        self._check_open()
        cache = self._cache
        if cache is not None and key in cache:
            return cache[key]
        value = compute(key)
        if cache is not None:
            cache[key] = value
        return value

    def _check_open(self) -> None:
        """For answers that need no read (lengths, keys, cached values): still refuse after close."""
        self._a.check_open()

    def location(self) -> Location:
        """Where this part is stored: its encoding's offset and size in the file, and its TOC
        node's (0 and 0 for a row of a fixed-stride list: its parent's node describes it)."""
        self._check_open()
        return Location(self._base, self._span(), self._pos if self._nsize else 0, self._nsize)

    def to_obj(self) -> Any:
        """The whole container as plain Python objects, decoded in one call."""
        return self._a.decode_span(self._base, self._span())

    def unwrap(self) -> LazyPart:
        """Itself (``LazyReader.unwrap()`` gives its root; the published msglc's parts have this too)."""
        return self

    def raw_data(self) -> bytes:
        """This part as a stand-alone archive (its data and TOC nodes copied, not decoded):
        ``LazyReader(x.raw_data())`` reads what ``x`` holds. The reverse of ``combine``."""
        return b"".join(standalone(self))

    def protocol_raw_data(self) -> bytes:
        """The container's msgpack encoding."""
        return bytes(self._a.read(self._base, self._span()))

    def where(self) -> tuple[Any, ...]:
        """Where the part is, for ``Reopen.part``: ("node", base, span, node, node size)."""
        return ("node", self._base, self._span(), self._pos, self._nsize)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its reader's source and options and its place (msglc.read.reopen)."""
        self._check_open()
        reopen = self._a.reopen
        if reopen is None:
            raise TypeError(
                "a lazy part of a reader opened from a file object cannot be pickled: open the reader "
                "from a path, a URL or bytes"
            )
        return (reopen.part, (self.where(),))

    def __copy__(self) -> LazyPart:
        """The same part with the same state (not reopened, as pickling would)."""
        made = type(self).__new__(type(self))
        for cls in type(self).__mro__:
            for name in getattr(cls, "__slots__", ()):
                if hasattr(self, name):
                    setattr(made, name, getattr(self, name))
        return made

    __hash__ = None  # type: ignore[assignment]


def archive_of(x: Bound) -> Archive:
    """The archive a reader or a lazy part reads from (for the layers above: batch reads,
    repacking, combining, pickling)."""
    return x._a  # noqa: SLF001 (the accessor of this module's Bound slot)


def rebound(part: LazyPart, archive: Archive) -> LazyPart:
    """A copy of ``part`` that reads through ``archive`` (a batch over the same file),
    without a cache."""
    moved = copy.copy(part)
    moved._a = archive  # noqa: SLF001 (this module's LazyPart, copied)
    moved._cache = None  # noqa: SLF001 (as above)
    return moved


def standalone(part: LazyPart) -> Iterator[bytes | memoryview]:
    """The bytes of ``part.raw_data()``, in pieces (see ``extract.part_archive``)."""
    where = part.location()
    count = 0 if where.node_size else len(part)  # type: ignore[arg-type]  # (a row: a list)
    return part_archive(archive_of(part), where, count)
