"""The layout of archives written by the published ``msglc`` package (its format "msglc-2024";
docs/legacy-format.md), read here without converting them. Every record of that format is in
this module: the 50-byte header, and the three shapes of its TOC entries plus the combined
archive's. Nothing here reads a file: callers hand in the bytes and the bounds they must fit.

An archive: ``msglc-2024`` right-aligned in 30 NUL-padded bytes, two 10-byte fields (the TOC's
offset and length, relative to the data section, each a msgpack integer right-aligned with
NULs; a CBOR archive left-aligns them), the data section (plain msgpack of the object, or a
combined archive's members one after another), the TOC (one msgpack value).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from msglc.errors import CorruptedError, NotAnArchiveError, TruncatedError, UnsupportedVersionError

MAGIC_TEXT = b"msglc-2024"
MAGIC = MAGIC_TEXT.rjust(30, b"\0")
HEADER_SIZE = 50  # the magic, then two 10-byte integer fields
_FIELD = 10


def is_legacy(head: bytes | memoryview) -> bool:
    """Do these first bytes of a file start an archive of the published msglc?"""
    return bytes(head[: len(MAGIC)]) == MAGIC


class Header(NamedTuple):
    """Where a published-msglc archive's TOC is, relative to its data section (which starts
    ``HEADER_SIZE`` bytes after the archive)."""

    toc_start: int  # also the data section's length
    toc_size: int


def parse_header(head: bytes | memoryview, at: int) -> Header:
    """The header of the archive whose first ``HEADER_SIZE`` bytes (or fewer, if the file
    ends) are ``head``, found at offset ``at``."""
    head = bytes(head)
    if not is_legacy(head):
        raise NotAnArchiveError(f"no archive of the published msglc at offset {at}: no {MAGIC_TEXT!r} magic")
    if len(head) < HEADER_SIZE:
        raise TruncatedError(f"the published-msglc archive at offset {at} ends inside its {HEADER_SIZE}-byte header")
    fields = head[len(MAGIC) : HEADER_SIZE]
    if fields[0] != 0:
        raise UnsupportedVersionError(
            f"the archive at offset {at} was written by the published msglc with its CBOR codec, which msglc does "
            "not read; convert it with the published package (dump to msgpack), then read or convert it here"
        )
    return Header(*(_field(fields[k : k + _FIELD], at + len(MAGIC) + k) for k in (0, _FIELD)))


def _field(raw: bytes, at: int) -> int:
    """A 10-byte header field: a msgpack unsigned integer after NUL padding."""
    body = raw.lstrip(b"\0")
    try:
        value = msgspec.msgpack.decode(body, type=int) if body else -1
    except msgspec.DecodeError:
        value = -1
    if value < 1:
        raise CorruptedError(f"the published-msglc header field at offset {at} is not a positive integer: {raw.hex()}")
    return value


class Leaf(NamedTuple):
    """A value stored whole: data bytes [start, end)."""

    start: int
    end: int


class Indexed(NamedTuple):
    """A list or dict at data bytes [start, end) (its header included) whose items have
    entries of their own: ``children`` is a list of them, or a dict from key to entry (each
    still encoded: ``entry`` parses one when it is needed)."""

    start: int
    end: int
    children: list[msgspec.Raw] | dict[Any, msgspec.Raw]


class Blocked(NamedTuple):
    """A list of small items in runs: (count, start, end) each, the runs' items encoded one
    after another in data bytes [start, end). The list's own header precedes the first run."""

    blocks: list[tuple[int, int, int]]


class Combined(NamedTuple):
    """A combined archive's root: its members' offsets in its data section (each the start
    of a whole archive), as a list or by name."""

    members: list[int] | dict[Any, int]


Entry = Leaf | Indexed | Blocked | Combined | int  # an int: a member archive at that offset


_entry_map = msgspec.msgpack.Decoder(dict[str, msgspec.Raw])
_children_list = msgspec.msgpack.Decoder(list[msgspec.Raw])
_children_map = msgspec.msgpack.Decoder(dict[Any, msgspec.Raw])
_any = msgspec.msgpack.Decoder()
_INT_FIRST = frozenset(range(0x00, 0x80)) | frozenset(range(0xCC, 0xD4)) | frozenset(range(0xE0, 0x100))
_LIST_FIRST = frozenset(range(0x90, 0xA0)) | {0xDC, 0xDD}
_MAP_FIRST = frozenset(range(0x80, 0x90)) | {0xDE, 0xDF}


def entry(raw: bytes | memoryview | msgspec.Raw, limit: int, where: str) -> Entry:
    """The TOC entry encoded as ``raw``, of an archive whose data section holds ``limit``
    bytes (every range must lie in it); ``where`` names it in errors."""
    data = memoryview(raw).cast("B")
    if not data:
        raise CorruptedError(f"published-msglc TOC entry {where} is empty")
    first = data[0]
    try:
        if first in _INT_FIRST:
            return _member(_any.decode(data), limit, where)
        fields = _entry_map.decode(data)
        if not fields.keys() <= {"p", "t"} or not fields:
            raise CorruptedError(f"published-msglc TOC entry {where} has fields {sorted(fields)}, not p and t")
        if "p" not in fields:
            return Combined(_members(fields["t"], limit, where))
        p = _any.decode(fields["p"])
        if "t" not in fields:
            if _is_range(p):
                return Leaf(*_checked(p, limit, where))
            return Blocked(_blocks(p, limit, where))
        if not _is_range(p):
            raise CorruptedError(f"published-msglc TOC entry {where} has children but no [start, end]")
        start, end = _checked(p, limit, where)
        t = memoryview(fields["t"]).cast("B")
        if t and t[0] in _LIST_FIRST:
            return Indexed(start, end, _children_list.decode(t))
        if t and t[0] in _MAP_FIRST:
            return Indexed(start, end, _children_map.decode(t))
        raise CorruptedError(f"published-msglc TOC entry {where}: its children are neither a list nor a map")
    except CorruptedError:
        raise
    except (msgspec.DecodeError, UnicodeDecodeError, TypeError, ValueError) as e:
        raise CorruptedError(f"published-msglc TOC entry {where} is not valid: {e}") from None
    except RecursionError:  # msgspec skips nested values recursively; the published writer nests a few hundred
        raise CorruptedError(f"published-msglc TOC entry {where} is nested too deeply") from None


def _is_range(p: Any) -> bool:
    return type(p) is list and len(p) == 2 and all(type(x) is int for x in p)


def _checked(p: list[int], limit: int, where: str) -> tuple[int, int]:
    start, end = p
    if not 0 <= start < end <= limit:
        raise CorruptedError(f"published-msglc TOC entry {where} spans [{start}, {end}), outside 0..{limit}")
    return start, end


def _blocks(p: Any, limit: int, where: str) -> list[tuple[int, int, int]]:
    """A blocked list's runs: each (count >= 1, start, end) within the data, in order."""
    if type(p) is not list or not p:
        raise CorruptedError(f"published-msglc TOC entry {where} has neither a range nor runs of items")
    runs: list[tuple[int, int, int]] = []
    at = 0
    for run in p:
        if not (type(run) is list and len(run) == 3 and all(type(x) is int for x in run)):
            raise CorruptedError(f"published-msglc TOC entry {where} has a run that is not [count, start, end]")
        count, start, end = run
        if count < 1 or not at <= start < end <= limit or end - start < count:
            raise CorruptedError(
                f"published-msglc TOC entry {where} has a run of {count} items at [{start}, {end}) that does not fit"
            )
        runs.append((count, start, end))
        at = end
    return runs


def _members(raw: msgspec.Raw, limit: int, where: str) -> list[int] | dict[Any, int]:
    value = _any.decode(raw)
    items = value.values() if type(value) is dict else value if type(value) is list else None
    if items is None:
        raise CorruptedError(f"published-msglc combined TOC {where} lists its members neither as a list nor a map")
    for offset in items:
        _member(offset, limit, where)
    members: list[int] | dict[Any, int] = value
    return members


def _member(offset: Any, limit: int, where: str) -> int:
    """A member archive's offset: room for at least its header before the data's end."""
    if type(offset) is not int or not 0 <= offset <= limit - HEADER_SIZE:
        raise CorruptedError(f"published-msglc combined TOC {where} names a member at {offset!r}, outside 0..{limit}")
    return offset
