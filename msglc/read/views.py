"""Lazy views of an archive's large containers: ``LazyList`` and ``LazyDict``.

A view knows where its container starts in the data section and the TOC node describing it;
indexing reads only the span holding the item. Small containers come back as plain objects.
"""

from __future__ import annotations

import operator
import zlib
from bisect import bisect_left, bisect_right
from collections.abc import Callable, ItemsView, Iterator, Mapping, Sequence, ValuesView
from typing import Any, cast

import msgspec

from msglc.errors import CorruptedError
from msglc.format.msgpack import HEAD_MAX, array_header, item_end, map_header, scalar_size
from msglc.format.nodes import (
    BlockHashMapNode,
    DirectMapNode,
    FuseMapNode,
    HashMapNode,
    ListNode,
    MapNode,
    Node,
    PagedListNode,
    SortedMapNode,
    StrideNode,
    exact_key,
    joined_pages,
    page_of,
    span_end,
)
from msglc.format.numpy_ext import ext_hook
from msglc.format.walk import item_ends
from msglc.read.archive import Archive
from msglc.read.array import LazyArray
from msglc.read.dict_index import BlockIndex, DirectIndex, FuseIndex, SortedIndex, entries_of_hash, entry_span
from msglc.read.part import LazyPart
from msglc.util import accel
from msglc.util.optional import loaded_numpy

_enc = msgspec.msgpack.Encoder(enc_hook=exact_key)  # (a numpy.str_ key looks up its str)


MAX_VIEWS = 1024  # lazy views an archive keeps for reuse (their index tables included), all dropped when full


class ViewCache(dict[Any, Any]):
    """The lazy views an archive keeps (``Archive.views``), so that a container looked up again
    reuses its view and the index tables it loaded: by (base, span, pos, size); by (dict's
    base, dict's pos, key) for an inline dict's values (``LazyInlineDict``; read from C, by
    ``_speedups.FastGet``'s "inline"); and by the str path that resolved to one
    (``LazyReader.__getitem__``). ``cached``: whether views keep the values they decode (the
    reader's option); views of a reader that is not cached are kept too, holding no values."""

    __slots__ = ("cached",)

    def __init__(self, cached: bool) -> None:
        super().__init__()
        self.cached = cached

    def keep(self, where: tuple[Any, ...] | str, view: Any) -> None:
        """Keep the view of the container at ``where`` (or a str path to it) for the next lookup."""
        if len(self) >= MAX_VIEWS:
            self.clear()
        self[where] = view

    def fresh(self) -> ViewCache:
        """An empty cache with the same option (a batch's views: ``batch.BatchArchive``)."""
        return ViewCache(self.cached)


_MISSING = object()  # a key the C lookup did not find


def _absent(key: Any) -> Any:
    """The KeyError of a key the C lookup did not find, raised here (not from C)."""
    raise KeyError(key)


_raw_pair = msgspec.msgpack.Decoder(tuple[msgspec.Raw, msgspec.Raw])


_decode = msgspec.msgpack.Decoder(ext_hook=ext_hook).decode


class LazyList(LazyPart, Sequence[Any]):
    """A read-only ``Sequence`` over a large list in an archive."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (list, LazyList)):
            return NotImplemented
        return len(self) == len(other) and all(map(equal, self, other))

    def __repr__(self) -> str:
        return f"<LazyList of {len(self)} items>"

    def _index(self, i: Any) -> int:
        n = len(self)
        try:
            j: int = i.__index__()
        except AttributeError:
            raise TypeError(f"list indices must be integers or slices, not {type(i).__name__}") from None
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError(f"list index {i} out of range for {n} items")
        return j

    def _slice(self, s: slice) -> list[Any]:
        return [self[i] for i in range(*s.indices(len(self)))]

    def read_items(self, start: int, stop: int) -> list[Any]:
        """Items ``start`` to ``stop`` (0 <= start <= stop <= len) as plain objects, in as few
        reads as the stored blocks allow (one for a fixed-stride list or a block list)."""
        items = (self[i] for i in range(*self._bounds(start, stop)))
        return [v.to_obj() if isinstance(v, LazyPart) else v for v in items]

    def block_starts(self) -> list[int] | None:
        """Where each stored block of items begins, then ``len``: reading from one to another
        reads whole blocks; None when items can be cut anywhere (a fixed-stride list)."""
        return [0, len(self)]

    def _bounds(self, start: int, stop: int) -> tuple[int, int]:
        n = len(self)
        try:  # (a NumPy int too, as indexing takes)
            start, stop = operator.index(start), operator.index(stop)
        except TypeError:
            raise IndexError(f"items {start!r} to {stop!r} of a list of {n}: not ints") from None
        if not 0 <= start <= stop <= n:
            raise IndexError(f"items {start} to {stop} of a list of {n}")
        return start, stop


class UnstorableKeyError(KeyError, TypeError):
    """A lookup by a key of a type no archive dict stores: a ``TypeError`` that says so, and a
    ``KeyError`` too, so that ``get``, ``in d.items()`` and ``Mapping`` code answer as a plain
    dict does (the value read whole at another threshold is one)."""

    def __str__(self) -> str:
        return str(self.args[0])


def equal(a: Any, b: Any) -> bool:
    """``a == b`` as one bool; NumPy arrays (and lazy ones) compare whole, not elementwise."""
    np = loaded_numpy()
    if np is not None and (_is_array(a, np) or _is_array(b, np)):
        return bool(np.array_equal(a, b))
    return bool(a == b)


def _is_array(x: Any, np: Any) -> bool:
    return isinstance(x, np.ndarray) or (isinstance(x, LazyPart) and hasattr(x, "__array__"))


class LazyBlockList(LazyList):
    """A list cut into spans of about the threshold (``ListNode``)."""

    __slots__ = ("_node",)
    _node: ListNode | PagedListNode

    def __init__(self, archive: Archive, base: int, pos: int, node: ListNode | PagedListNode, nsize: int = 0) -> None:
        super().__init__(archive, base, pos, nsize)
        self._node = node

    def __len__(self) -> int:
        self._check_open()
        return self._node.n

    def _span(self) -> int:
        return self._node.offs[-1]

    def _spans(self) -> ListNode:
        """The whole span table (a paged list's: all its pages)."""
        return cast(ListNode, self._node)

    def _spans_over(self, start: int, stop: int) -> ListNode:
        """Spans covering items ``start`` to ``stop`` (0 <= start < stop <= len): the whole
        table here, a paged list's pages holding them (kids left out)."""
        return self._spans()

    def _locate(self, i: int) -> tuple[ListNode, int, int]:
        """(spans, k, the position their kids are referenced from): item ``i`` (in range) is in
        span ``k`` of ``spans``, the whole table here, its page for a paged list."""
        node = cast(ListNode, self._node)
        return node, bisect_right(node.starts, i) - 1, self._pos

    def __getitem__(self, i: Any) -> Any:
        if type(i) is not int or not 0 <= i < self._node.n:
            self._check_open()
            if isinstance(i, slice):
                return self._slice(i)
            i = self._index(i)
        elif self._a.closed:
            self._check_open()
        spans, k, parent = self._locate(i)
        if k in spans.kids:
            return self._kid(spans, k, parent)
        if self._cache is None:  # one item of the span: its neighbours skipped, not decoded
            speedups, starts = accel.speedups, spans.starts
            if speedups is not None:  # in one C call (the span lies in the view: check_node)
                count = span_end(spans, k) - starts[k]
                start, offs = self._base + spans.offs[k], spans.offs
                value = speedups.span_item(self._a.c_read, start, offs[k + 1] - offs[k], count, i - starts[k], _decode)
                if value is not NotImplemented:
                    return value
            return _decode_item(self._a, self._base, spans, k, i - starts[k])
        return self._block(spans, k)[i - spans.starts[k]]

    def value_at(self, i: int, tail: list[Any]) -> tuple[Any, bool]:
        """For path resolution (``read.paths``), not part of the documented API: item ``i``
        (an int), and whether the segments ``tail`` were taken in it too. An item without a
        node of its own is then not decoded whole (``LazyInlineDict.value_at``): the C walk
        of its span finds what ``tail`` names and decodes that alone."""
        speedups = accel.speedups
        # (an index that is not an int in range: what indexing with it gives, or its error)
        if (
            type(i) is not int
            or not 0 <= i < self._node.n
            or self._cache is not None
            or speedups is None
            or self._a.closed
        ):
            return self[i], False
        spans, k, parent = self._locate(i)
        if k in spans.kids:
            return self._kid(spans, k, parent), False
        starts, offs = spans.starts, spans.offs
        count = span_end(spans, k) - starts[k]
        start, size = self._base + offs[k], offs[k + 1] - offs[k]
        got = speedups.span_value(self._a.c_read, start, size, count, i - starts[k], _decode, tail)
        return (_decode_item(self._a, self._base, spans, k, i - starts[k]), False) if got is NotImplemented else got

    def _kid(self, spans: ListNode, k: int, parent: int) -> Any:
        """The item of span ``k`` of ``spans`` (whose kids are referenced from ``parent``), a
        container with a node of its own; kept by its index."""
        item = spans.starts[k]
        if self._cache is not None and ("k", item) in self._cache:
            self._check_open()
            return self._cache["k", item]
        obj = child(self._a, self._base + spans.offs[k], spans.offs[k + 1] - spans.offs[k], parent, spans.kids[k])
        if self._cache is not None:
            self._cache["k", item] = obj
        return obj

    def _block(self, spans: ListNode, k: int) -> list[Any]:
        """Span ``k`` of ``spans`` decoded; kept by its first item's index."""
        cache, item = self._cache, spans.starts[k]
        if cache is not None and item in cache:
            self._check_open()
            cached: list[Any] = cache[item]
            return cached
        block: list[Any] = _decode_block(self._a, self._base, spans, k, array_header)
        if cache is not None:
            cache[item] = block
        return block

    def __iter__(self) -> Iterator[Any]:
        spans = self._spans()
        for k in range(len(spans.starts)):
            if k in spans.kids:
                yield self._kid(spans, k, self._pos)
            else:
                yield from self._block(spans, k)

    def block_starts(self) -> list[int]:
        self._check_open()
        spans = self._spans()
        return [*spans.starts, spans.n]

    def read_items(self, start: int, stop: int) -> list[Any]:
        start, stop = self._bounds(start, stop)
        if start == stop:
            return []
        node = self._spans_over(start, stop)
        first, last = bisect_right(node.starts, start) - 1, bisect_right(node.starts, stop - 1)
        begin = node.starts[first]
        end = node.starts[last] if last < len(node.starts) else node.n
        items: list[Any] = self._a.decode_span(
            self._base + node.offs[first], node.offs[last] - node.offs[first], array_header(end - begin)
        )
        return items[start - begin : stop - begin] if (start, stop) != (begin, end) else items


class LazyPagedList(LazyBlockList):
    """A list whose span table is in pages (``PagedListNode``): an item reads its page once,
    what reads every span (iteration, ``read_items``) all of them."""

    __slots__ = ()
    _node: PagedListNode

    def _spans(self) -> ListNode:
        return self._a.spans(self._pos, self._node)

    def _locate(self, i: int) -> tuple[ListNode, int, int]:
        where, page = self._a.span_page(self._pos, self._node, page_of(self._node, i))
        return page, bisect_right(page.starts, i) - 1, where

    def _spans_over(self, start: int, stop: int) -> ListNode:
        node = self._node
        first, last = page_of(node, start), page_of(node, stop - 1)
        return joined_pages([self._a.span_page(self._pos, node, p)[1] for p in range(first, last + 1)])


MISSING = object()  # list_items: an item whose tail the C walk left to the Python path


def walks_spans(view: Any) -> bool:
    """Does ``list_items`` read ``view``'s spans in C (and so take tails)?"""
    return type(view) in _BLOCK_LISTS and view._cache is None and accel.speedups is not None  # noqa: SLF001 (this module's class)


_BLOCK_LISTS = (LazyBlockList, LazyPagedList)


def list_items(view: Any, indices: list[int], tails: list[list[Any] | None] | None = None) -> Iterator[Any]:
    """``view[i] for i in indices``, for ascending indexes in range; a block list read
    without a cache (``walks_spans``) reads and walks each span once, in C, for all its
    indexes. ``tails`` (only then): for each index None, or the segments of the value wanted
    inside the item, found in C without decoding the rest (``MISSING``: not found there)."""
    speedups = accel.speedups
    if not walks_spans(view) or speedups is None or view._a.closed:  # noqa: SLF001 (a LazyBlockList: walks_spans)
        yield from (view[i] for i in indices)
        return
    base, src = view._base, view._a.c_read  # noqa: SLF001 (a LazyBlockList: walks_spans)
    at = 0
    while at < len(indices):
        node, k, _ = view._locate(indices[at])  # noqa: SLF001 (a LazyBlockList: walks_spans)
        starts, offs = node.starts, node.offs
        first, end = starts[k], span_end(node, k)
        stop = bisect_left(indices, end, at)
        chunk, ends = indices[at:stop], None if tails is None else tails[at:stop]
        values: Any = NotImplemented
        if k not in node.kids:
            js = [i - first for i in chunk]
            values = speedups.span_items(
                src, base + offs[k], offs[k + 1] - offs[k], end - first, js, _decode, ends, MISSING
            )
        if values is NotImplemented:
            values = (MISSING if ends and ends[n] else view[i] for n, i in enumerate(chunk))
        yield from values
        at = stop


def _decode_block(
    archive: Archive, base: int, node: ListNode | HashMapNode, k: int, header: Callable[[int], bytes]
) -> Any:
    """Span ``k`` of a spanned node, decoded behind an array or map header for its item count."""
    count = span_end(node, k) - node.starts[k]
    return archive.decode_span(base + node.offs[k], node.offs[k + 1] - node.offs[k], header(count))


def _decode_item(archive: Archive, base: int, node: ListNode, k: int, j: int) -> Any:
    """Item ``j`` of span ``k``: the span read as raw items (msgspec skips them at C speed,
    making no objects) and only item ``j`` decoded."""
    count = span_end(node, k) - node.starts[k]
    start, size = base + node.offs[k], node.offs[k + 1] - node.offs[k]
    if start < archive.opened.trailer.data_off or start + size > archive.opened.data_end or size <= 0:
        raise archive.damaged(f"data span {start}+{size} lies outside the data section")
    data = archive.read(start, size)
    try:
        raws = _raw_items.decode(array_header(count) + data)
    except RecursionError:  # an item nested deeper than msgspec skips: stepped over (walk)
        try:
            ends = item_ends(data, 0, size, count, start)
        except CorruptedError as e:
            raise archive.damaged(str(e)) from None
        lo = ends[j - 1] if j else 0
        return archive.decode(data[lo : ends[j]], start + lo)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise archive.damaged(f"data at offset {start} ({size} bytes) is not {count} msgpack items: {e}") from None
    return archive.decode(raws[j], start + sum(map(len, raws[:j])))


_raw_items = msgspec.msgpack.Decoder(list[msgspec.Raw])


# (header size, item count, stride, items read whole, the next level: None for the innermost)
_Level = tuple[int, int, int, bool, "_Level | None"]


def _stride_levels(dims: Sequence[tuple[int, int, int]], lazy_min: int) -> _Level:
    """Per nesting level: (h, n, stride, whole, next level); computed once per node so that
    making a row view is a single unpack. Built in a loop: nesting depth is the file's to set.
    ``dims`` is not empty (``check_node``); the innermost level is read whole."""
    *outer, (h, n, s) = dims
    level: _Level = (h, n, s, True, None)
    for h, n, s in reversed(outer):
        level = (h, n, s, s < lazy_min, level)
    return level


class LazyStrideList(LazyList):
    """A list of fixed-size items (``StrideNode``): item i is at base + h + i * stride.

    Hot path of matrix reads: the bounds of the whole view were checked when it was made, so
    an item costs one read and one decode, and a row view costs one tuple unpack."""

    __slots__ = ("_h", "_n", "_s", "_whole", "_next")  # read by name in _speedups.c (FastGet)

    def __init__(
        self,
        archive: Archive,
        base: int,
        pos: int,
        dims: Sequence[tuple[int, int, int]],
        lazy_min: int,
        nsize: int = 0,
    ) -> None:
        super().__init__(archive, base, pos, nsize)
        self._h, self._n, self._s, self._whole, self._next = _stride_levels(dims, lazy_min)

    @classmethod
    def from_level(cls, archive: Archive, base: int, pos: int, level: _Level, cached: bool) -> LazyStrideList:
        """The view of a row of a fixed-stride list (``level``: its ``_stride_levels``) at
        ``base``, described by the node at ``pos`` of the list it is in; ``cached``: with a
        cache. Made without ``__init__``: a row view costs one tuple unpack."""
        row: LazyStrideList = cls.__new__(cls)
        row._a = archive
        row._base = base
        row._pos = pos
        row._nsize = 0  # no node of its own: its parent's describes it
        row._cache = {} if cached else None
        row._h, row._n, row._s, row._whole, row._next = level
        return row

    def __len__(self) -> int:
        self._check_open()
        return self._n

    def _span(self) -> int:
        return self._h + self._n * self._s

    def __getitem__(self, i: Any) -> Any:
        if type(i) is not int or not 0 <= i < self._n:
            if isinstance(i, slice):
                return self._slice(i)
            i = self._index(i)
        cache = self._cache
        if cache is not None and i in cache:
            self._check_open()
            return cache[i]
        off = self._base + self._h + i * self._s
        if self._whole:
            try:
                value = _decode(self._a.read(off, self._s))
            except RecursionError:  # a row nested deeper than msgspec goes
                value = self._a.decode(self._a.read(off, self._s), off)
            except (msgspec.DecodeError, UnicodeDecodeError) as e:
                raise CorruptedError(f"data at offset {off} ({self._s} bytes) is not valid msgpack: {e}") from None
        else:  # a row view, made without I/O
            self._check_open()
            # not None: only the innermost level has no next, and its items are read whole
            value = stride_row(self._a, off, self._pos, self._next, cache is not None)  # type: ignore[arg-type]
        if cache is not None:
            cache[i] = value
        return value

    @property
    def shape(self) -> tuple[int, ...]:
        """The item count at each level of nesting (a matrix: rows, columns)."""
        self._check_open()
        shape: list[int] = []
        level: _Level | None = (self._h, self._n, self._s, self._whole, self._next)
        while level is not None:
            shape.append(level[1])
            level = level[4]
        return tuple(shape)

    def block_starts(self) -> None:
        return None

    def read_items(self, start: int, stop: int) -> list[Any]:
        start, stop = self._bounds(start, stop)
        if start == stop:
            return []
        items: list[Any] = self._a.decode_span(
            self._base + self._h + start * self._s, (stop - start) * self._s, array_header(stop - start)
        )
        return items

    def where(self) -> tuple[Any, ...]:
        if self._nsize:
            return super().where()
        return ("row", self._base, self._pos, (self._h, self._n, self._s, self._whole, self._next))

    def _slice(self, s: slice) -> list[Any]:
        start, stop, step = s.indices(self._n)
        if step == 1 and self._whole:
            count = max(0, stop - start)
            if not count:
                return []
            off = self._base + self._h + start * self._s
            items: list[Any] = self._a.decode_span(off, count * self._s, array_header(count))
            return items
        return super()._slice(s)

    def __iter__(self) -> Iterator[Any]:
        if self._whole:
            yield from self._slice(slice(None))
        else:
            for i in range(self._n):
                yield self[i]


# a row view's constructor under a plain name: on the hot path (the pure-Python row views) a
# module global costs less than looking the classmethod up on the instance; reopen uses it too
stride_row = LazyStrideList.from_level


class LazyDict(LazyPart, Mapping[Any, Any]):
    """A read-only ``Mapping`` over a large dict in an archive, in its original key order."""

    __slots__ = ("_node",)  # read by name in _speedups.c (FastGet)

    def __init__(self, archive: Archive, base: int, pos: int, node: MapNode | HashMapNode, nsize: int = 0) -> None:
        super().__init__(archive, base, pos, nsize)
        self._node = node

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        if len(self) != len(other):
            return False
        for key, value in self.items():
            try:
                if not equal(value, other[key]):
                    return False
            except KeyError:
                return False
        return True

    def __repr__(self) -> str:
        return f"<LazyDict of {len(self)} keys>"

    def __getitem__(self, key: Any) -> Any:
        if type(key) is not str and (not isinstance(key, (str, int)) or isinstance(key, bool)):
            raise UnstorableKeyError(f"archive dict keys are str or int, not {type(key).__name__}")
        if self._a.closed:
            self._check_open()
        cache = self._cache
        if cache is not None and key in cache:
            return cache[key]
        value = self._lookup(key)
        if cache is not None:
            cache[key] = value
        return value

    def value_at(self, key: Any, tail: list[Any]) -> tuple[Any, bool]:
        """For path resolution (``read.paths``), not part of the documented API: the value of
        ``key``, and whether the segments ``tail`` were taken in it too (here never)."""
        return self[key], False

    def __contains__(self, key: object) -> bool:
        """Answered from the TOC and the keys stored, never by reading a value: a dict's
        value may be a string of gigabytes."""
        if type(key) is not str and (not isinstance(key, (str, int)) or isinstance(key, bool)):
            return False
        if self._a.closed:
            self._check_open()
        cache = self._cache
        if cache is not None and key in cache:
            return True
        return self._has(key)

    def _has(self, key: str | int) -> bool:
        raise NotImplementedError

    def items(self) -> ItemsView[Any, Any]:
        return _Items(self, self._iter_items)

    def values(self) -> ValuesView[Any]:
        return _Values(self, self._iter_items)

    def _lookup(self, key: Any) -> Any:
        raise NotImplementedError

    def _iter_items(self) -> Iterator[tuple[Any, Any]]:
        for key in self:
            yield key, self[key]


class _Items(ItemsView[Any, Any]):
    """A lazy dict's items, in the order and at the cost of its own ``_iter_items``."""

    __slots__ = ("_pairs",)

    def __init__(self, mapping: LazyDict, pairs: Callable[[], Iterator[tuple[Any, Any]]]) -> None:
        super().__init__(mapping)
        self._pairs = pairs

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return self._pairs()


class _Values(ValuesView[Any]):
    """A lazy dict's values, read as its ``_iter_items`` reads them."""

    __slots__ = ("_pairs",)

    def __init__(self, mapping: LazyDict, pairs: Callable[[], Iterator[tuple[Any, Any]]]) -> None:
        super().__init__(mapping)
        self._pairs = pairs

    def __iter__(self) -> Iterator[Any]:
        return (v for _, v in self._pairs())


class LazyInlineDict(LazyDict):
    """A dict whose keys are listed in its node (``MapNode``)."""

    __slots__ = ("_keys",)  # read by name in _speedups.c (FastGet)
    _node: MapNode

    def __init__(self, archive: Archive, base: int, pos: int, node: MapNode, nsize: int = 0) -> None:
        super().__init__(archive, base, pos, node, nsize)
        # each key's index (the archive's ``NodeCache.key_map``), taken at the first lookup;
        # read from C (``FastGet`` "inline"), which leaves a view without it to this code
        self._keys: dict[str | int, int] | None = None

    def _key_map(self) -> dict[str | int, int]:
        keys = self._keys
        if keys is None:
            keys = self._keys = self._a.nodes.key_map(self._pos, self._node)
        return keys

    def __len__(self) -> int:
        self._check_open()
        return len(self._node.keys)

    def __iter__(self) -> Iterator[Any]:
        self._check_open()
        return iter(self._node.keys)

    def _span(self) -> int:
        return self._node.koffs[-1]

    def _has(self, key: str | int) -> bool:
        return key in self._key_map()

    def _lookup(self, key: Any) -> Any:
        a = self._a
        where = (self._base, self._pos, key)  # a value that is a view, kept by key
        made = a.views.get(where)
        if made is not None:
            return made
        j = self._key_map().get(key)
        if j is None:
            raise KeyError(key)
        node = self._node
        start, end = node.voffs[j], node.koffs[j + 1]
        ref = node.kids.get(j)
        if ref is not None:
            made = a.views.get((self._base + start, end - start, self._pos - ref[0], ref[1]))
            if made is None:
                kb, base = _encode_key(key), self._base
                head = _key_and_head(a, base + node.koffs[j], kb, base + start, base + end)
                made = child(a, self._base + start, end - start, self._pos, ref, head)
            a.views.keep(where, made)  # found with one lookup next time (from C: ``FastGet`` "inline")
            return made
        return self._a.decode(self._value_bytes(j, key), self._base + start)

    def _value_bytes(self, j: int, key: Any) -> bytes | memoryview:
        """The encoded value of entry ``j`` (``key``'s, which has no node), read with its key
        in one request and the key checked."""
        node, base = self._node, self._base
        end = base + node.koffs[j + 1]
        return _checked_key(self._a, base + node.koffs[j], _encode_key(key), base + node.voffs[j], end)

    def value_at(self, key: Any, tail: list[Any]) -> tuple[Any, bool]:
        """For path resolution (``read.paths``), not part of the documented API: the value of
        ``key``, and whether the segments ``tail`` were taken in it too. A value without a node
        of its own is then not decoded whole: the C walk finds what ``tail`` names in its bytes
        and decodes that alone (a reader that keeps values decodes it whole, to keep it)."""
        speedups = accel.speedups
        if (type(key) is not str and type(key) is not int) or self._cache is not None or speedups is None:
            return self[key], False
        j = self._key_map().get(key) if not self._a.closed else None
        if j is None or j in self._node.kids:
            return self[key], False
        data = self._value_bytes(j, key)
        value = speedups.descend_value(data, tail, _decode)
        if value is not NotImplemented:
            return value, True
        return self._a.decode(data, self._base + self._node.voffs[j]), False


class LazyHashDict(LazyDict):
    """A dict with a hash index (``HashMapNode``): one key costs one index page and one entry
    (type 3) or one block of entries (type 6)."""

    __slots__ = ("_index",)  # read by name in _speedups.c (FastGet)
    _node: HashMapNode

    def __init__(self, archive: Archive, base: int, pos: int, node: HashMapNode, nsize: int = 0) -> None:
        super().__init__(archive, base, pos, node, nsize)
        self._index: BlockIndex | DirectIndex | None = None

    def loaded_index(self) -> BlockIndex | DirectIndex | None:
        """The dict's index as its lookups loaded it (``dict_index``), None before the first:
        for tests and tools that look at the C lookup (``probe``) or at what a lookup keeps.
        Not part of the documented API."""
        return self._index

    def __len__(self) -> int:
        self._check_open()
        return self._node.n

    def _span(self) -> int:
        return self._node.offs[-1]

    def _kid(self, k: int, key: Any) -> Any:
        """The large value of span ``k``: the span is one entry, the value follows its key."""
        node = self._node
        kb = _encode_key(key)
        start, ref = node.offs[k] + len(kb), node.kids[k]
        made = self._a.views.get((self._base + start, node.offs[k + 1] - start, self._pos - ref[0], ref[1]))
        if made is not None:  # its key was checked when it was made
            return made
        head = _key_and_head(self._a, self._base + node.offs[k], kb, self._base + start, self._base + node.offs[k + 1])
        return child(self._a, self._base + start, node.offs[k + 1] - start, self._pos, ref, head)

    def _block(self, k: int) -> dict[Any, Any]:
        block: dict[Any, Any] = _decode_block(self._a, self._base, self._node, k, map_header)
        return block

    def _iter_items(self) -> Iterator[tuple[Any, Any]]:
        node = self._node
        kid_key = {k: key for key, k in node.kid_keys.items()}
        for k in range(len(node.starts)):
            if k in node.kids:
                yield kid_key[k], self._kid(k, kid_key[k])
            else:
                yield from self._block(k).items()

    def __iter__(self) -> Iterator[Any]:
        return (key for key, _ in self._iter_items())

    def _lookup(self, key: Any) -> Any:
        node = self._node
        k = node.kid_keys.get(key)
        if k is not None:
            return self._kid(k, key)
        kb = _encode_key(key)
        index = self._index
        if index is None:
            if not isinstance(node, (BlockHashMapNode, DirectMapNode)):
                return self._hash_lookup(key, kb)
            index = self._block_index(node)
        a = self._a
        found = index.find(a, self._base, kb, zlib.crc32(kb))
        if found is None:
            raise KeyError(key)
        return a.decode(found[1], found[0])

    def _has(self, key: str | int) -> bool:
        node = self._node
        if key in node.kid_keys:
            return True
        try:
            kb = _encode_key(key)
        except KeyError:
            return False
        if not isinstance(node, (BlockHashMapNode, DirectMapNode)):
            return self._hash_has(kb)
        index = self._index if self._index is not None else self._block_index(node)
        return index.contains(self._a, self._base, kb, zlib.crc32(kb))

    def _hash_has(self, kb: bytes) -> bool:
        """``_has`` in a dict with a type-3 index: each entry its records name is compared
        by its key alone (a key with the same hash must be another key: a true collision)."""
        node, a, h = self._node, self._a, zlib.crc32(kb)
        region = self._pos - node.index[0]
        span = (node.offs[0], node.offs[-1])
        for entry in entries_of_hash(a.read, a.damaged, region, node.n, node.page_bits, node.offs_width, h):
            start, stop = entry_span(a.read, a.damaged, region, node.n, node.offs_width, entry, span)
            head = a.read(self._base + start, min(stop - start, len(kb) + 16))
            if head[: len(kb)] == kb:
                return True
            try:
                end = item_end(head, 0)
            except ValueError:
                end = None
            if end is None or end > stop - start:  # no key there: its check below fails
                stored: bytes | memoryview = b""
            else:
                stored = head[:end] if end <= len(head) else a.read(self._base + start, end)
            if zlib.crc32(stored) != h:
                raise a.damaged(f"dict entry at offset {self._base + start} does not match its hash index record")
        return False

    def _hash_lookup(self, key: Any, kb: bytes) -> Any:
        """A key of a dict with a type-3 index: its hash's records, each naming one entry."""
        node, a, h = self._node, self._a, zlib.crc32(kb)
        region = self._pos - node.index[0]
        span = (node.offs[0], node.offs[-1])
        for entry in entries_of_hash(a.read, a.damaged, region, node.n, node.page_bits, node.offs_width, h):
            start, stop = entry_span(a.read, a.damaged, region, node.n, node.offs_width, entry, span)
            data = a.read(self._base + start, stop - start)
            if data[: len(kb)] == kb:
                return a.decode(data[len(kb) :], self._base + start + len(kb))
            stored_key: msgspec.Raw | bytes
            try:
                stored_key = _raw_pair.decode(b"\x92" + data)[0]
            except RecursionError:  # a value nested deeper than msgspec skips: the key (a scalar) alone
                stored_key = bytes(data[: scalar_size(data, 0) or 0])
            except (msgspec.DecodeError, UnicodeDecodeError):
                stored_key = b""
            if zlib.crc32(stored_key) != h:
                raise a.damaged(f"dict entry at offset {self._base + start} does not match its hash index record")
        raise KeyError(key)

    def _block_index(self, node: BlockHashMapNode | DirectMapNode) -> BlockIndex | DirectIndex:
        """The dict's block index (``dict_index.BlockIndex``; for type 7 its fuse, ``FuseIndex``;
        for type 9 ``SortedIndex``; for type 10 ``DirectIndex``), made at its first lookup."""
        region, span = self._pos - node.index[0], (node.offs[0], node.offs[-1])
        if isinstance(node, DirectMapNode):
            shape = (node.n, node.page_bits, node.offs_width, node.off_bits, node.chunk)
            made = self._index = DirectIndex(region, (*shape, node.lo, node.hi, node.entry_read, node.groups), span)
            return made
        kids = [(node.offs[k], node.offs[k + 1], _encode_key(key)) for key, k in node.kid_keys.items()]
        if isinstance(node, FuseMapNode):
            fuse_fields = (node.n, node.offs_width, node.offs_crc, node.block_bits, node.slot_bits, node.seed)
            fuse = FuseIndex(self._a, region, (*fuse_fields, node.seg_bits, node.seg_count), span, kids)
            if fuse.crcs_crc() != node.crcs_crc:
                raise self._a.damaged(f"fuse index chunk CRCs at offset {region} fail their checksum")
            self._index = fuse
            return fuse
        if isinstance(node, SortedMapNode):
            sorted_fields = (node.n, node.offs_width, node.offs_crc, node.block_bits, node.keys_len, node.keys_crc)
            index: BlockIndex = SortedIndex(self._a, region, sorted_fields, span, kids)
            self._index = index
            return index
        fields = (node.n, node.page_bits, node.offs_width, node.offs_crc, node.block_bits)
        index = self._index = BlockIndex(self._a, region, fields, span, kids)
        return index


def _encode_key(key: Any) -> bytes:
    try:
        return _enc.encode(key)
    except (OverflowError, UnicodeEncodeError):
        raise KeyError(key) from None  # no such key can have been stored


def _checked_key(archive: Archive, entry_at: int, kb: bytes, value_at: int, upto: int) -> bytes | memoryview:
    """Check that the entry at ``entry_at`` holds the encoded key ``kb`` up to ``value_at``,
    where its value begins; returns the value's bytes up to ``upto`` (all of it, or a
    container's header for ``container``), read with the key in one request."""
    data = archive.read(entry_at, upto - entry_at)
    _check_key(data[: value_at - entry_at], kb, entry_at)
    return data[value_at - entry_at :]


def _key_and_head(archive: Archive, entry_at: int, kb: bytes, value_at: int, end: int) -> bytes | memoryview:
    """``_checked_key`` of an entry (ending at ``end``) whose value has a node of its own:
    the value's first bytes, up to a container header's longest."""
    return _checked_key(archive, entry_at, kb, value_at, min(value_at + HEAD_MAX, end))


def _check_key(stored: bytes | memoryview, expected: bytes, where: int) -> None:
    """The key bytes in the data must be the key the TOC says is there."""
    if stored != expected:
        raise CorruptedError(f"dict entry at offset {where} does not hold the key its TOC node names")


def make_view(archive: Archive, base: int, pos: int, node: Node, nsize: int) -> LazyPart:
    if isinstance(node, StrideNode):
        return LazyStrideList(archive, base, pos, node.dims, node.lazy_min, nsize)
    if isinstance(node, ListNode):
        return LazyBlockList(archive, base, pos, node, nsize)
    if isinstance(node, PagedListNode):
        return LazyPagedList(archive, base, pos, node, nsize)
    if isinstance(node, MapNode):
        return LazyInlineDict(archive, base, pos, node, nsize)
    if isinstance(node, HashMapNode):
        return LazyHashDict(archive, base, pos, node, nsize)
    raise CorruptedError(f"unknown TOC node type at offset {pos}")


def view(archive: Archive, base: int, span: int, pos: int, size: int, head: bytes | memoryview = b"") -> LazyPart:
    """The lazy view of the container stored at ``base`` (``span`` bytes) that the TOC node
    at ``pos`` (``size`` bytes) describes; its header must match the node. ``head``: its
    first bytes if the caller has them."""
    where = (base, span, pos, size)
    made: LazyPart | None = archive.views.get(where)
    if made is not None:
        return made
    node, array = archive.container(base, span, pos, size, head)
    if array is not None:
        dtype, shape, start, tile = array
        made = LazyArray(archive, base, pos, span, dtype, shape, start, size, tile)
    else:
        made = make_view(archive, base, pos, node, size)
    archive.views.keep(where, made)
    return made


def child(
    archive: Archive, base: int, span: int, parent_pos: int, ref: tuple[int, int], head: bytes | memoryview = b""
) -> LazyPart:
    """The lazy view of a container at ``base`` (``span`` bytes) whose node the parent node
    at ``parent_pos`` references with ``ref`` (``head``: as ``view``'s)."""
    return view(archive, base, span, archive.referred(parent_pos, ref), ref[1], head)


def root_view(archive: Archive) -> LazyPart | None:
    """The root's lazy view, or None when it has no TOC node (it is small: read whole)."""
    t = archive.opened.trailer
    return view(archive, t.data_off, t.data_len, t.toc_off + t.root_pos, t.root_len) if t.root_len else None


if accel.speedups is not None:  # the hot lookups without a Python frame (``_speedups.FastGet``)
    # a matrix element or row view; a hash-indexed dict's key (its index made on first use);
    # an inline dict's key whose value is a view already made (``reader["table"]``)
    LazyStrideList.__getitem__ = accel.speedups.FastGet(  # type: ignore[method-assign]
        "stride", LazyStrideList, LazyStrideList.__getitem__, _decode, vars(accel)
    )
    LazyHashDict.__getitem__ = accel.speedups.FastGet(  # type: ignore[method-assign]
        "hash", LazyHashDict, LazyDict.__getitem__, _decode, vars(accel), _MISSING, _absent
    )
    LazyInlineDict.__getitem__ = accel.speedups.FastGet(  # type: ignore[method-assign]
        "inline", LazyInlineDict, LazyDict.__getitem__, _decode, vars(accel)
    )
