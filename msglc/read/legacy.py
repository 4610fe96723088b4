"""Archives written by the published ``msglc`` package, read lazily through the same
``LazyReader`` (their layout: ``format.legacy``, docs/legacy-format.md). Their lists and dicts
are ``LazyList`` and ``LazyDict`` views like ours; a value reads its own bytes and the TOC
entries on its way, nothing else. Members of a combined archive are their roots, as members
of our combined archives are."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator
from itertools import accumulate
from typing import Any

import msgspec

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
from msglc.format.msgpack import array_header, container_header, map_header
from msglc.read.archive import Archive
from msglc.read.part import LazyPart
from msglc.read.views import LazyDict, LazyList, root_view

__all__ = ["any_root", "any_root_of", "combined_msgpack", "walk_legacy"]


MAX_MEMBER_DEPTH = 100  # combined archives inside combined archives: deeper is refused, not recursed into
CHUNK = 1 << 24  # bytes per piece when a combined archive's members are copied out as msgpack


class _Owner:
    """One archive (the file's, or a member of a combined one): where its data section
    starts in the file and how long it is; the ranges of its TOC entries are relative to it.
    Its TOC follows the data (``toc_size`` bytes); ``depth``: how many combined archives hold it."""

    __slots__ = ("data", "limit", "toc_size", "depth")

    def __init__(self, data: int, limit: int, toc_size: int, depth: int = 0) -> None:
        self.data = data
        self.limit = limit
        self.toc_size = toc_size
        self.depth = depth


def any_root(archive: Archive) -> LazyPart | tuple[int, int] | None:
    """The root's lazy view (``root_view`` for msglc's own archives); for a root read whole,
    None, or in a published-msglc archive the root's (offset, size), which
    ``Archive.decode_all`` reads (kept as ``Archive.opened.root``)."""
    if archive.opened.legacy is None:
        return root_view(archive)
    t = archive.opened.trailer
    root = _root_entry(archive, _Owner(t.data_off, t.data_len, t.toc_len), t.toc_off, t.toc_len)
    if isinstance(root, Leaf):
        return (t.data_off + root.start, root.end - root.start)
    value = _value(archive, _Owner(t.data_off, t.data_len, t.toc_len), root)
    assert isinstance(value, LazyPart)  # (neither a leaf nor a bare integer: _root_entry)
    return value


def any_root_of(archive: Archive) -> Any:
    """The root: a lazy view when it has entries of its own, else the whole (small) value."""
    root = any_root(archive)
    return root if isinstance(root, LazyPart) else archive.decode_all()


def combined_msgpack(archive: Archive) -> Iterator[bytes | memoryview] | None:
    """The msgpack encoding of a published-msglc archive whose root is combined (its data
    section holds whole member archives, not msgpack): an array or map header, then each
    member's data section (with its name), copied in pieces of at most ``CHUNK`` bytes. None
    for any other archive: its data section is its msgpack."""
    if archive.opened.legacy is None:
        return None
    t = archive.opened.trailer
    top = _Owner(t.data_off, t.data_len, t.toc_len)
    root = _root_entry(archive, top, t.toc_off, t.toc_len)
    return _combined_pieces(archive, top, root) if isinstance(root, Combined) else None


def _combined_pieces(archive: Archive, owner: _Owner, e: Combined) -> Iterator[bytes | memoryview]:
    members = e.members
    if isinstance(members, list):
        yield array_header(len(members))
        named: Iterator[tuple[bytes, int]] = ((b"", offset) for offset in members)
    else:
        yield map_header(len(members))
        named = ((msgspec.msgpack.encode(name), offset) for name, offset in members.items())
    for name, offset in named:
        yield name
        inner, root = _member_entry(archive, owner, offset)
        if isinstance(root, Combined):
            yield from _combined_pieces(archive, inner, root)
            continue
        for at in range(0, inner.limit, CHUNK):
            yield archive.read(inner.data + at, min(CHUNK, inner.limit - at))


def walk_legacy(archive: Archive) -> int:
    """Check a whole published-msglc archive (``verify``): every TOC entry must name exactly
    the bytes of the value it stands for, found by walking the data itself (a container's
    kind, item count and keys as its entry says; a list's runs back to back from its header
    to its end; a combined archive's members back to back, each a whole archive), and every
    value must decode. So whatever a verified archive gives by path, it gives whole too. It
    has no checksum: damage inside a value that still decodes goes unseen. The data section
    is read once; returns the number of entries checked."""
    t = archive.opened.trailer
    top = _Owner(t.data_off, t.data_len, t.toc_len)
    data = memoryview(archive.read(t.data_off, t.data_len)).cast("B")
    work: list[Iterator[_Task]] = [iter([(top, _root_entry(archive, top, t.toc_off, t.toc_len), 0, t.data_len)])]
    seen = 0
    while work:
        task = next(work[-1], None)
        if task is None:
            work.pop()
            continue
        seen += 1
        owner, e, start, end = task
        here = data[owner.data - t.data_off + start : owner.data - t.data_off + end]
        kids = _checked_entry(archive, owner, e, start, end, here)
        if kids is not None:
            work.append(kids)
    return seen


_Task = tuple[_Owner, Entry, int, int]  # an entry and the bytes [start, end) of its owner's data it must name
_raw_items = msgspec.msgpack.Decoder(list[msgspec.Raw])
_key = msgspec.msgpack.Decoder()


def _checked_entry(
    archive: Archive, owner: _Owner, e: Entry, start: int, end: int, here: memoryview
) -> Iterator[_Task] | None:
    """Check the entry ``e`` against ``here``, the value it stands for (``owner``'s data bytes
    [start, end)); the entries below it, to be checked in turn, or None."""
    at = owner.data + start
    if isinstance(e, Combined):
        return _checked_members(archive, owner, e, start, end)
    if isinstance(e, int):
        raise CorruptedError(f"the published-msglc TOC entry of the value at offset {at} names a member archive")
    if isinstance(e, Blocked):
        _check_runs(archive, owner, e, start, end, here)
        return None
    if (e.start, e.end) != (start, end):
        raise CorruptedError(
            f"a published-msglc TOC entry names bytes [{owner.data + e.start}, {owner.data + e.end}) where its "
            f"value lies at [{at}, {owner.data + end})"
        )
    if isinstance(e, Leaf):
        archive.decode(here, at)
        return None
    is_map, count, size = _header(here, at)
    if is_map != isinstance(e.children, dict) or count != len(e.children):
        kind = "dict" if isinstance(e.children, dict) else "list"
        raise CorruptedError(
            f"the published-msglc TOC entry of the value at offset {at} names a {kind} of {len(e.children)} items: "
            f"the data holds {'a map' if is_map else 'an array'} of {count}"
        )
    items = _split(here, is_map, count, size, at)
    offsets = list(accumulate((len(item) for item in items), initial=start + size))
    if not is_map:
        kids = e.children
        assert isinstance(kids, list)
        return (
            (owner, entry(raw, owner.limit, f"{k} of the list at offset {at}"), offsets[k], offsets[k + 1])
            for k, raw in enumerate(kids)
        )
    assert isinstance(e.children, dict)
    return _checked_keys(owner, e.children, items, offsets, at)


def _checked_keys(
    owner: _Owner, kids: dict[Any, msgspec.Raw], items: list[msgspec.Raw], offsets: list[int], at: int
) -> Iterator[_Task]:
    """The children of a dict, each after checking that its key is the data's."""
    for k, (key, raw) in enumerate(kids.items()):
        try:
            stored = _key.decode(items[2 * k])
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, TypeError) as e:
            raise CorruptedError(f"key {k} of the dict at offset {at} is not valid msgpack: {e}") from None
        if type(stored) is not type(key) or (stored != key and (stored == stored or key == key)):
            raise CorruptedError(
                f"the published-msglc TOC names key {k} of the dict at offset {at} {key!r:.40}; the data holds "
                f"{stored!r:.40}"
            )
        kid = entry(raw, owner.limit, f"{key!r:.40} of the dict at offset {at}")
        yield owner, kid, offsets[2 * k + 1], offsets[2 * k + 2]


def _header(here: memoryview, at: int) -> tuple[bool, int, int]:
    """(is_map, count, header size) of the container that ``here`` holds."""
    try:
        return container_header(here)
    except CorruptedError as e:
        raise CorruptedError(f"the published-msglc TOC names a container at offset {at}: {e}") from None


def _split(here: memoryview, is_map: bool, count: int, size: int, at: int) -> list[msgspec.Raw]:
    """The items of the container that ``here`` holds (``count`` after a ``size``-byte header;
    a map's keys and values in turn), undecoded: they must fill it exactly."""
    try:  # a list read through its own header (no copy); a map's pairs behind an array header
        return _raw_items.decode(array_header(2 * count) + here[size:] if is_map else here)
    except (msgspec.DecodeError, RecursionError) as e:
        raise CorruptedError(f"the container at offset {at} does not hold {count} msgpack items: {e}") from None


def _check_runs(archive: Archive, owner: _Owner, e: Blocked, start: int, end: int, here: memoryview) -> None:
    """A blocked list: an array header, then its runs back to back to its end, each holding
    its count of values, the counts adding up to the array's length."""
    at = owner.data + start
    is_map, count, size = _header(here, at)
    total = sum(n for n, _, _ in e.blocks)
    if is_map or count != total:
        raise CorruptedError(
            f"the published-msglc TOC entry of the value at offset {at} names a list of {total} items in runs: the "
            f"data holds {'a map' if is_map else 'an array'} of {count}"
        )
    expected = start + size
    for n, lo, hi in e.blocks:
        if lo != expected:
            raise CorruptedError(
                f"a run of the list at offset {at} starts at {owner.data + lo}, not at {owner.data + expected} where "
                "the items before it end"
            )
        archive.decode(
            array_header(n) + here[lo - start : hi - start], owner.data + lo
        )  # n values exactly, or an error
        expected = hi
    if expected != end:
        raise CorruptedError(f"the runs of the list at offset {at} end at {owner.data + expected}, before its end")


def _checked_members(archive: Archive, owner: _Owner, e: Combined, start: int, end: int) -> Iterator[_Task]:
    """A combined archive's members: whole archives back to back, filling its data section."""
    offsets = e.members if isinstance(e.members, list) else list(e.members.values())
    expected = start
    for offset in offsets:
        if offset != expected:
            raise CorruptedError(
                f"the member archive at offset {owner.data + offset} does not start where the member before it "
                f"ends ({owner.data + expected})"
            )
        inner, root = _member_entry(archive, owner, offset)
        expected = inner.data - owner.data + inner.limit + inner.toc_size
        yield inner, root, 0, inner.limit
    if expected != end:
        raise CorruptedError(
            f"the members of the combined archive at offset {owner.data + start} end at {owner.data + expected}, "
            f"not at its end ({owner.data + end})"
        )


def _root_entry(archive: Archive, owner: _Owner, toc_at: int, toc_len: int) -> Entry:
    """An archive's TOC: a map (a bare integer names a member archive, which only a combined
    TOC's ``"t"`` does; taken as a TOC, it would chain archives without end)."""
    toc = entry(archive.read(toc_at, toc_len), owner.limit, f"at offset {toc_at}")
    if isinstance(toc, int):
        raise CorruptedError(f"the published-msglc TOC at offset {toc_at} is an integer, not a map")
    return toc


def _member(archive: Archive, owner: _Owner, offset: int) -> Any:
    """The root value of the member archive at ``offset`` in ``owner``'s data section."""
    return _value(archive, *_member_entry(archive, owner, offset))


def _member_entry(archive: Archive, owner: _Owner, offset: int) -> tuple[_Owner, Entry]:
    """The member archive at ``offset`` in ``owner``'s data section, and its root entry: its
    header and TOC must lie inside that section."""
    at = owner.data + offset
    if owner.depth >= MAX_MEMBER_DEPTH:
        raise CorruptedError(
            f"the member archive at offset {at} is nested in more than {MAX_MEMBER_DEPTH} combined archives"
        )
    header = parse_header(archive.read(at, HEADER_SIZE), at)
    end = offset + HEADER_SIZE + header.toc_start + header.toc_size
    if end > owner.limit:
        raise CorruptedError(
            f"the member archive at offset {at} ends at {owner.data + end}, past the data section holding it "
            f"({owner.data + owner.limit})"
        )
    inner = _Owner(at + HEADER_SIZE, header.toc_start, header.toc_size, owner.depth + 1)
    return inner, _root_entry(archive, inner, inner.data + header.toc_start, header.toc_size)


def _value(archive: Archive, owner: _Owner, e: Entry) -> Any:
    """The value a TOC entry stands for: decoded (a leaf), a lazy view, or a member's root."""
    if isinstance(e, int):
        return _member(archive, owner, e)
    if isinstance(e, Leaf):
        return archive.decode_span(owner.data + e.start, e.end - e.start)
    if isinstance(e, Indexed):
        if isinstance(e.children, list):
            return LegacyIndexedList(archive, owner, e)
        return LegacyIndexedDict(archive, owner, e)
    if isinstance(e, Blocked):
        return LegacyBlockedList(archive, owner, e)
    if isinstance(e.members, list):
        return LegacyMemberList(archive, owner, e)
    return LegacyMemberDict(archive, owner, e)


# ---- lists ------------------------------------------------------------------------------------


class LegacyList(LazyList):
    """A list of a published-msglc archive; ``_kid(j)`` gives item ``j`` (0 <= j < len)."""

    __slots__ = ("_owner", "_entry")

    def __init__(self, archive: Archive, owner: _Owner, e: Entry, base: int) -> None:
        LazyPart.__init__(self, archive, base, 0)
        self._owner = owner
        self._entry = e

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self._slice(i)
        return self._memo(self._index(i), lambda j: _kept(self._a, self._base, j, self._kid))

    def __iter__(self) -> Iterator[Any]:
        for j in range(len(self)):
            yield self[j]

    def _kid(self, j: int) -> Any:
        raise NotImplementedError

    def raw_data(self) -> bytes:
        raise _no_raw_data()


class LegacyIndexedList(LegacyList):
    __slots__ = ()
    _entry: Indexed

    def __init__(self, archive: Archive, owner: _Owner, e: Indexed) -> None:
        super().__init__(archive, owner, e, owner.data + e.start)

    def __len__(self) -> int:
        return len(self._entry.children)

    def _span(self) -> int:
        return self._entry.end - self._entry.start

    def _kid(self, j: int) -> Any:
        children = self._entry.children
        assert isinstance(children, list)
        owner = self._owner
        return _value(self._a, owner, entry(children[j], owner.limit, f"{j} of the list at offset {self._base}"))


class LegacyBlockedList(LegacyList):
    """A list of small items stored in runs: an item decodes its run (kept whole while cached)."""

    __slots__ = ("_ends",)
    _entry: Blocked

    def __init__(self, archive: Archive, owner: _Owner, e: Blocked) -> None:
        super().__init__(archive, owner, e, owner.data + e.blocks[0][1])
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

    def __iter__(self) -> Iterator[Any]:
        """Run by run: each run decoded once (item by item, an uncached list would decode a
        run once per item it holds)."""
        cache = self._cache
        first = 0
        for k, end in enumerate(self._ends):
            self._check_open()
            if cache is not None and first in cache:  # (_kid caches a whole run at once)
                yield from (cache[j] for j in range(first, end))
            else:
                items = self._run(k)
                if cache is not None:
                    cache.update(zip(range(first, end), items, strict=True))
                yield from items
            first = end

    def _slice(self, s: slice) -> list[Any]:
        if self._cache is not None:
            return super()._slice(s)
        out: list[Any] = []
        k, items = -1, []
        for i in range(*s.indices(len(self))):
            if not (k >= 0 and (self._ends[k - 1] if k else 0) <= i < self._ends[k]):
                k = bisect_right(self._ends, i)
                items = self._run(k)
            out.append(items[i - (self._ends[k - 1] if k else 0)])
        return out

    def protocol_raw_data(self) -> bytes:
        """The list's msgpack encoding: its runs behind an array header (the one in the file
        precedes the first run, outside the runs the TOC entry names)."""
        if self._contiguous():
            return array_header(len(self)) + bytes(self._a.read(self._base, self._span()))
        return array_header(len(self)) + b"".join(
            bytes(self._a.read(self._owner.data + start, end - start)) for _, start, end in self._entry.blocks
        )

    def _contiguous(self) -> bool:
        blocks = self._entry.blocks
        return all(blocks[k][2] == blocks[k + 1][1] for k in range(len(blocks) - 1))

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
        if self._contiguous():
            at = self._base
            items = self._a.decode(array_header(len(self)) + bytes(self._a.read(at, self._span())), at)
            if type(items) is list and len(items) == len(self):
                return items
            raise self._a.damaged(f"published-msglc list at offset {at} does not hold {len(self)} items")
        return [item for k in range(len(blocks)) for item in self._run(k)]


class LegacyMemberList(LegacyList):
    """A combined archive of members without names: each item is a member's root."""

    __slots__ = ()
    _entry: Combined

    def __init__(self, archive: Archive, owner: _Owner, e: Combined) -> None:
        super().__init__(archive, owner, e, owner.data)

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

    def protocol_raw_data(self) -> bytes:
        """The msgpack of the members' values (their archives' data sections), as a list."""
        return b"".join(_combined_pieces(self._a, self._owner, self._entry))


# ---- dicts ------------------------------------------------------------------------------------


class LegacyDict(LazyDict):
    """A dict of a published-msglc archive: its keys are in its TOC entry."""

    __slots__ = ("_owner", "_keyed")

    def __init__(self, archive: Archive, owner: _Owner, keyed: dict[Any, Any], base: int) -> None:
        LazyPart.__init__(self, archive, base, 0)
        self._owner = owner
        self._keyed = keyed

    def __getitem__(self, key: Any) -> Any:  # any key the TOC holds (published archives may key by float)
        return self._memo(key, lambda k: _kept(self._a, self._base, k, self._lookup))

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


class LegacyIndexedDict(LegacyDict):
    __slots__ = ("_entry",)

    def __init__(self, archive: Archive, owner: _Owner, e: Indexed) -> None:
        assert isinstance(e.children, dict)
        super().__init__(archive, owner, e.children, owner.data + e.start)
        self._entry = e

    def _span(self) -> int:
        return self._entry.end - self._entry.start

    def _lookup(self, key: Any) -> Any:
        raw = self._keyed.get(key)
        if raw is None:
            raise KeyError(key)
        owner = self._owner
        return _value(self._a, owner, entry(raw, owner.limit, f"{key!r} of the dict at offset {self._base}"))


class LegacyMemberDict(LegacyDict):
    """A combined archive of named members: each value is a member's root."""

    __slots__ = ()

    def __init__(self, archive: Archive, owner: _Owner, e: Combined) -> None:
        assert isinstance(e.members, dict)
        super().__init__(archive, owner, e.members, owner.data)

    def _span(self) -> int:
        return self._owner.limit

    def _lookup(self, key: Any) -> Any:
        offset = self._keyed.get(key)
        if offset is None:
            raise KeyError(key)
        return _member(self._a, self._owner, offset)

    def to_obj(self) -> Any:
        return {key: _plain(value) for key, value in self.items()}

    def protocol_raw_data(self) -> bytes:
        """The msgpack of the members' values (their archives' data sections), by name."""
        return b"".join(_combined_pieces(self._a, self._owner, Combined(self._keyed)))


def _kept(archive: Archive, base: int, key: Any, child: Callable[[Any], Any]) -> Any:
    """``child(key)``, a child of the part at ``base``; one that is a lazy view is kept by the
    archive (as its own views are) in both cached modes: it holds its parsed TOC entry, which
    never changes and can be most of the TOC (parsing it again cost a read 60x the cached one)."""
    where = ("legacy", base, key)
    made = archive.views.get(where)
    if made is not None:
        return made
    value = child(key)
    if isinstance(value, LazyPart):
        archive.views.keep(where, value)
    return value


def _no_raw_data() -> ValueError:
    return ValueError(
        "a part of an archive of the published msglc has no msglc encoding of its own: write it as one with "
        "msglc.dumps(part) or msglc.dump(path, part) (the whole archive: msglc convert)"
    )


def _plain(value: Any) -> Any:
    return value.to_obj() if isinstance(value, LazyPart) else value
