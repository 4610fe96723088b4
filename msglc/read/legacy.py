"""Archives written by the published ``msglc`` package, read lazily through the same
``LazyReader`` (their layout: ``format.legacy``, docs/legacy-format.md). Their lists and dicts
are ``LazyList`` and ``LazyDict`` views like ours; a value reads its own bytes and the TOC
entries on its way, nothing else. Members of a combined archive are their roots, as members
of our combined archives are."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

from msglc.errors import CorruptedError
from msglc.format.legacy import (
    HEADER_SIZE,
    Blocked,
    Combined,
    Entry,
    Indexed,
    Leaf,
    entry,
    parse_header,
)
from msglc.format.msgpack import array_header
from msglc.read.archive import Archive
from msglc.read.node import LazyNode
from msglc.read.views import LazyDict, LazyList, root_view

__all__ = ["any_root", "any_root_of", "walk_legacy"]


class _Owner:
    """One archive (the file's, or a member of a combined one): where its data section
    starts in the file and how long it is; the ranges of its TOC entries are relative to it."""

    __slots__ = ("data", "limit")

    def __init__(self, data: int, limit: int) -> None:
        self.data = data
        self.limit = limit


def any_root(a: Archive) -> LazyNode | None:
    """The root's lazy view (``root_view`` for msglc's own archives), or None for a root
    read whole (``Archive.decode_all`` then reads the range this sets)."""
    if a.legacy is None:
        return root_view(a)
    t = a.trailer
    root = _root_entry(a, _Owner(t.data_off, t.data_len), t.toc_off, t.toc_len)
    if isinstance(root, Leaf):
        a.root_leaf = (t.data_off + root.start, root.end - root.start)
        return None
    value = _value(a, _Owner(t.data_off, t.data_len), root)
    if not isinstance(value, LazyNode):  # a member archive as the root: not written by the published msglc
        raise CorruptedError("the published-msglc TOC's root names a member archive")
    return value


def any_root_of(a: Archive) -> Any:
    """The root: a lazy view when it has entries of its own, else the whole (small) value."""
    root = any_root(a)
    return a.decode_all() if root is None else root


def walk_legacy(a: Archive) -> int:
    """Check a whole published-msglc archive (``verify``): every TOC entry, member header and
    range, each entry's children inside it and in order, every value decoded. It has no
    checksum, so damage inside a value that still decodes goes unseen. Returns the entries."""
    t = a.trailer
    work: list[tuple[_Owner, Entry]] = []
    owner = _Owner(t.data_off, t.data_len)
    work.append((owner, _root_entry(a, owner, t.toc_off, t.toc_len)))
    seen = 0
    while work:
        owner, e = work.pop()
        seen += 1
        if isinstance(e, int):
            work.append(_member_entry(a, owner, e))
        elif isinstance(e, Leaf):
            a.decode_span(owner.data + e.start, e.end - e.start)
        elif isinstance(e, Blocked):
            _BlockedList(a, owner, e).to_obj()
        elif isinstance(e, Combined):
            members = e.members if isinstance(e.members, list) else list(e.members.values())
            work.extend((owner, offset) for offset in members)
        else:
            kids = e.children if isinstance(e.children, list) else list(e.children.values())
            at = e.start
            for k, raw in enumerate(kids):
                kid = entry(raw, owner.limit, f"{k} of the container at offset {owner.data + e.start}")
                first, last = _bounds(kid)
                if not at <= first <= last <= e.end:
                    raise a.damaged(
                        f"published-msglc TOC entry {k} of the container at offset {owner.data + e.start} lies "
                        f"outside it or before the entry it follows"
                    )
                at = last
                work.append((owner, kid))
            a.decode_span(owner.data + e.start, e.end - e.start)
    return seen


def _bounds(e: Entry) -> tuple[int, int]:
    """The data range an entry covers (a member: no range of its own in its parent's data)."""
    if isinstance(e, (Leaf, Indexed)):
        return e.start, e.end
    if isinstance(e, Blocked):
        return e.blocks[0][1], e.blocks[-1][2]
    raise CorruptedError("a published-msglc container entry names a member archive, which only combined TOCs do")


def _root_entry(a: Archive, owner: _Owner, toc_at: int, toc_len: int) -> Entry:
    toc = a.read(toc_at, toc_len)
    return entry(toc, owner.limit, f"at offset {toc_at}")


def _member(a: Archive, owner: _Owner, offset: int) -> Any:
    """The root value of the member archive at ``offset`` in ``owner``'s data section."""
    return _value(a, *_member_entry(a, owner, offset))


def _member_entry(a: Archive, owner: _Owner, offset: int) -> tuple[_Owner, Entry]:
    """The member archive at ``offset`` in ``owner``'s data section, and its root entry: its
    header and TOC must lie inside that section."""
    at = owner.data + offset
    header = parse_header(a.read(at, HEADER_SIZE), at)
    end = offset + HEADER_SIZE + header.toc_start + header.toc_size
    if end > owner.limit:
        raise CorruptedError(
            f"the member archive at offset {at} ends at {owner.data + end}, past the data section holding it "
            f"({owner.data + owner.limit})"
        )
    inner = _Owner(at + HEADER_SIZE, header.toc_start)
    return inner, _root_entry(a, inner, inner.data + header.toc_start, header.toc_size)


def _value(a: Archive, owner: _Owner, e: Entry) -> Any:
    """The value a TOC entry stands for: decoded (a leaf), a lazy view, or a member's root."""
    if isinstance(e, int):
        return _member(a, owner, e)
    if isinstance(e, Leaf):
        return a.decode_span(owner.data + e.start, e.end - e.start)
    if isinstance(e, Indexed):
        if isinstance(e.children, list):
            return _IndexedList(a, owner, e)
        return _IndexedDict(a, owner, e)
    if isinstance(e, Blocked):
        return _BlockedList(a, owner, e)
    if isinstance(e.members, list):
        return _MemberList(a, owner, e)
    return _MemberDict(a, owner, e)


# ---- lists ------------------------------------------------------------------------------------


class _LegacyList(LazyList):
    """A list of a published-msglc archive; ``_kid(j)`` gives item ``j`` (0 <= j < len)."""

    __slots__ = ("_owner", "_entry")

    def __init__(self, a: Archive, owner: _Owner, e: Entry, base: int) -> None:
        LazyNode.__init__(self, a, base, 0)
        self._owner = owner
        self._entry = e

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self._slice(i)
        return self._memo(self._index(i), self._kid)

    def __iter__(self) -> Iterator[Any]:
        for j in range(len(self)):
            yield self[j]

    def _kid(self, j: int) -> Any:
        raise NotImplementedError

    def raw_data(self) -> bytes:
        raise _no_raw_data()


class _IndexedList(_LegacyList):
    __slots__ = ()
    _entry: Indexed

    def __init__(self, a: Archive, owner: _Owner, e: Indexed) -> None:
        super().__init__(a, owner, e, owner.data + e.start)

    def __len__(self) -> int:
        return len(self._entry.children)

    def _span(self) -> int:
        return self._entry.end - self._entry.start

    def _kid(self, j: int) -> Any:
        children = self._entry.children
        assert isinstance(children, list)
        owner = self._owner
        return _value(self._a, owner, entry(children[j], owner.limit, f"{j} of the list at offset {self._base}"))


class _BlockedList(_LegacyList):
    """A list of small items stored in runs: an item decodes its run (kept whole while cached)."""

    __slots__ = ("_ends",)
    _entry: Blocked

    def __init__(self, a: Archive, owner: _Owner, e: Blocked) -> None:
        super().__init__(a, owner, e, owner.data + e.blocks[0][1])
        self._ends = list(accumulate(count for count, _, _ in e.blocks))

    def __len__(self) -> int:
        return self._ends[-1]

    def _span(self) -> int:
        return self._entry.blocks[-1][2] - self._entry.blocks[0][1]

    def _kid(self, j: int) -> Any:
        k = bisect_right(self._ends, j)
        first = self._ends[k - 1] if k else 0
        items = self._run(k)
        if self._cache is not None:
            self._cache.update(zip(range(first, self._ends[k]), items, strict=True))
        return items[j - first]

    def _run(self, k: int) -> list[Any]:
        count, start, end = self._entry.blocks[k]
        at = self._owner.data + start
        items = self._a.decode(array_header(count) + bytes(self._a.read(at, end - start)), at)
        if type(items) is not list or len(items) != count:  # (a run's bytes hold more: decode stops at the last)
            raise self._a.damaged(f"published-msglc list run at offset {at} does not hold {count} items")
        return items

    def to_obj(self) -> Any:
        """The list decoded: its runs are contiguous, so in one call with a header of ours."""
        blocks = self._entry.blocks
        if all(blocks[k][2] == blocks[k + 1][1] for k in range(len(blocks) - 1)):
            at = self._base
            items = self._a.decode(array_header(len(self)) + bytes(self._a.read(at, self._span())), at)
            if type(items) is list and len(items) == len(self):
                return items
            raise self._a.damaged(f"published-msglc list at offset {at} does not hold {len(self)} items")
        return [item for k in range(len(blocks)) for item in self._run(k)]


class _MemberList(_LegacyList):
    """A combined archive of members without names: each item is a member's root."""

    __slots__ = ()
    _entry: Combined

    def __init__(self, a: Archive, owner: _Owner, e: Combined) -> None:
        super().__init__(a, owner, e, owner.data)

    def __len__(self) -> int:
        return len(self._entry.members)

    def _span(self) -> int:
        return self._owner.limit

    def _kid(self, j: int) -> Any:
        members = self._entry.members
        assert isinstance(members, list)
        return _member(self._a, self._owner, members[j])

    def to_obj(self) -> Any:
        return [_plain(item) for item in self]


# ---- dicts ------------------------------------------------------------------------------------


class _LegacyDict(LazyDict):
    """A dict of a published-msglc archive: its keys are in its TOC entry."""

    __slots__ = ("_owner", "_keyed")

    def __init__(self, a: Archive, owner: _Owner, keyed: dict[Any, Any], base: int) -> None:
        LazyNode.__init__(self, a, base, 0)
        self._owner = owner
        self._keyed = keyed

    def __getitem__(self, key: Any) -> Any:  # any key the TOC holds (published archives may key by float)
        return self._memo(key, self._lookup)

    def __len__(self) -> int:
        self._check_open()
        return len(self._keyed)

    def __iter__(self) -> Iterator[Any]:
        self._check_open()
        return iter(self._keyed)

    def __contains__(self, key: object) -> bool:
        try:
            return key in self._keyed
        except TypeError:
            return False

    def _iter_items(self) -> Iterator[tuple[Any, Any]]:
        for key in self._keyed:
            yield key, self[key]

    def raw_data(self) -> bytes:
        raise _no_raw_data()


class _IndexedDict(_LegacyDict):
    __slots__ = ("_entry",)

    def __init__(self, a: Archive, owner: _Owner, e: Indexed) -> None:
        assert isinstance(e.children, dict)
        super().__init__(a, owner, e.children, owner.data + e.start)
        self._entry = e

    def _span(self) -> int:
        return self._entry.end - self._entry.start

    def _lookup(self, key: Any) -> Any:
        raw = self._keyed.get(key)
        if raw is None:
            raise KeyError(key)
        owner = self._owner
        return _value(self._a, owner, entry(raw, owner.limit, f"{key!r} of the dict at offset {self._base}"))


class _MemberDict(_LegacyDict):
    """A combined archive of named members: each value is a member's root."""

    __slots__ = ()

    def __init__(self, a: Archive, owner: _Owner, e: Combined) -> None:
        assert isinstance(e.members, dict)
        super().__init__(a, owner, e.members, owner.data)

    def _span(self) -> int:
        return self._owner.limit

    def _lookup(self, key: Any) -> Any:
        offset = self._keyed.get(key)
        if offset is None:
            raise KeyError(key)
        return _member(self._a, self._owner, offset)

    def to_obj(self) -> Any:
        return {key: _plain(value) for key, value in self.items()}


def _no_raw_data() -> ValueError:
    return ValueError(
        "a part of an archive of the published msglc has no msglc encoding of its own: write it as one with "
        "msglc.dumps(part) or msglc.dump(path, part) (the whole archive: msglc convert)"
    )


def _plain(value: Any) -> Any:
    return value.to_obj() if isinstance(value, LazyNode) else value
