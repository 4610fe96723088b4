"""The msgpack framing msglc relies on: container headers (built and parsed), extension
headers, and which values get a TOC node."""

from __future__ import annotations

from msglc.errors import (
    CorruptedError,
)


def _header(n: int, fix: int, marker16: bytes, marker32: bytes, wide: bool) -> bytes:
    if n < 16 and not wide:
        return bytes((fix | n,))
    if n < 0x10000 and not wide:
        return marker16 + n.to_bytes(2, "big")
    return marker32 + n.to_bytes(4, "big")


def array_header(n: int, wide: bool = False) -> bytes:
    """The msgpack header of an array of ``n`` items: the shortest, or with ``wide`` 5 bytes."""
    return _header(n, 0x90, b"\xdc", b"\xdd", wide)


def map_header(n: int, wide: bool = False) -> bytes:
    return _header(n, 0x80, b"\xde", b"\xdf", wide)


def recount_header(head: bytes, n: int) -> bytes | None:
    """The array or map header ``head`` with its count set to ``n``, in as many bytes, or
    None when ``n`` does not fit them."""
    size = len(head)
    if size == 1:
        return bytes((head[0] & 0xF0 | n,)) if n < 16 else None
    return head[:1] + n.to_bytes(size - 1, "big") if n < 1 << 8 * (size - 1) else None


HEAD_MAX = 5  # the longest array or map header (array32, map32)


def container_header_size(first: int) -> int:
    """Header size of an array or map from its first byte; 0 if it is neither."""
    if 0x80 <= first <= 0x9F:
        return 1
    if first in (0xDC, 0xDE):
        return 3
    if first in (0xDD, 0xDF):
        return 5
    return 0


def is_array(first: int) -> bool:
    return 0x90 <= first <= 0x9F or first in (0xDC, 0xDD)


# ---- msgpack extension values (NumPy arrays) ------------------------------------------------------
ARRAY_EXT = 78  # ext type of a NumPy array: ord("N")


_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}


_EXT_LEN_BYTES = {0xC7: 1, 0xC8: 2, 0xC9: 4}


def ext_header(n: int, code: int) -> bytes:
    """The smallest msgpack header of an extension value with an ``n``-byte payload (as
    msgspec writes it)."""
    fix = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}.get(n)
    if fix is not None:
        return bytes((fix, code))
    if n < 0x100:
        return bytes((0xC7, n, code))
    if n < 0x10000:
        return b"\xc8" + n.to_bytes(2, "big") + bytes((code,))
    return b"\xc9" + n.to_bytes(4, "big") + bytes((code,))


def parse_ext_header(buf: bytes | memoryview) -> tuple[int, int, int] | None:
    """(type code, header size, payload size) of the extension value at the start of ``buf``,
    or None if it does not start with a complete extension header."""
    if not buf:
        return None
    first = buf[0]
    if first in _FIXEXT:
        return (buf[1], 2, _FIXEXT[first]) if len(buf) >= 2 else None
    width = _EXT_LEN_BYTES.get(first)
    if width is None or len(buf) < 2 + width:
        return None
    return buf[1 + width], 2 + width, int.from_bytes(buf[1 : 1 + width], "big")


def is_array_ext(buf: bytes | memoryview, p: int) -> bool:
    """Does ``buf[p:]`` start a NumPy array value long enough to have a TOC node (ext8/16/32)?"""
    width = _EXT_LEN_BYTES.get(buf[p])
    return width is not None and p + 1 + width < len(buf) and buf[p + 1 + width] == ARRAY_EXT


def gets_node(buf: bytes | memoryview, p: int) -> bool:
    """Can the value at ``buf[p]`` have a node of its own: an array, a map or a NumPy array?"""
    return bool(container_header_size(buf[p])) or is_array_ext(buf, p)


# Scalars whose first byte alone fixes their encoded size (numbers of fixed width).
FIXED_SCALAR_SIZE = {0xCA: 5, 0xCB: 9, 0xCC: 2, 0xCD: 3, 0xCE: 5, 0xCF: 9, 0xD0: 2, 0xD1: 3, 0xD2: 5, 0xD3: 9}


# One-byte items: positive and negative fixint, nil, false, true.
ONE_BYTE_ITEMS = bytes(range(0x80)) + bytes(range(0xE0, 0x100)) + b"\xc0\xc2\xc3"


# str 8/16/32, bin 8/16/32, ext 8/16/32: bytes of the length field
LENGTH_WIDTH = {0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC4: 1, 0xC5: 2, 0xC6: 4, 0xC7: 1, 0xC8: 2, 0xC9: 4}


STR_MARKERS = frozenset(range(0xA0, 0xC0)) | {0xD9, 0xDA, 0xDB}


BIN_MARKERS = frozenset((0xC4, 0xC5, 0xC6))


def scalar_size(data: bytes | bytearray | memoryview, p: int) -> int | None:
    """The encoded size of the msgpack scalar starting at data[p] (None: not a scalar);
    reads the length field of str, bin and ext values, which must lie in ``data`` (else a
    size that runs past its end, for the caller to report)."""
    m = data[p]
    if m < 0x80 or m >= 0xE0 or m in (0xC0, 0xC2, 0xC3):
        return 1
    if 0xA0 <= m <= 0xBF:
        return 1 + (m & 0x1F)
    size = FIXED_SCALAR_SIZE.get(m)
    if size is not None:
        return size
    if 0xD4 <= m <= 0xD8:  # fixext 1, 2, 4, 8, 16: type byte and payload
        return 2 + (1 << (m - 0xD4))
    width = LENGTH_WIDTH.get(m)
    if width is None:
        return None  # 0xc1, or a container
    if p + 1 + width > len(data):
        return len(data) + 1 - p
    length = int.from_bytes(data[p + 1 : p + 1 + width], "big")
    return 1 + width + length + (1 if m in _EXT_LEN_BYTES else 0)


def container_header(buf: bytes | memoryview) -> tuple[bool, int, int]:
    """(is_map, item count, header size) of the array or map header at the start of ``buf``."""
    first = buf[0]
    size = container_header_size(first)
    if not size or len(buf) < size:
        raise CorruptedError(f"expected an array or map header, found byte 0x{first:02x}")
    count = first & 0x0F if size == 1 else int.from_bytes(buf[1:size], "big")
    return not is_array(first), count, size


_STR_BIN_LEN_BYTES = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4}


def item_end(buf: bytes | memoryview, p: int) -> int | None:
    """Where the msgpack item that starts at ``buf[p]`` ends, found from its headers alone: a
    string, bytes or extension value is stepped over by its length, so the end may lie past
    ``buf``; None when a header (or, in a container, an item) lies past it. No recursion:
    a count of the items still to step over. ValueError on a byte no msgpack item starts with."""
    pending = 1
    size = len(buf)
    while pending:
        if p >= size:
            return None
        b = buf[p]
        pending -= 1
        if b < 0x80 or b >= 0xE0 or b in (0xC0, 0xC2, 0xC3):
            p += 1
        elif b < 0x90:
            pending += 2 * (b & 0x0F)
            p += 1
        elif b < 0xA0:
            pending += b & 0x0F
            p += 1
        elif b < 0xC0:
            p += 1 + (b & 0x1F)
        elif b in FIXED_SCALAR_SIZE:
            p += FIXED_SCALAR_SIZE[b]
        elif b in _FIXEXT:
            p += 2 + _FIXEXT[b]
        else:
            width = _STR_BIN_LEN_BYTES.get(b) or _EXT_LEN_BYTES.get(b) or (2 if b in (0xDC, 0xDE) else 4)
            if b == 0xC1 or p + 1 + width > size:
                if b == 0xC1:
                    raise ValueError(f"byte 0xc1 at offset {p} starts no msgpack item")
                return None
            n = int.from_bytes(buf[p + 1 : p + 1 + width], "big")
            if b in (0xDC, 0xDD):
                pending += n
                p += 1 + width
            elif b in (0xDE, 0xDF):
                pending += 2 * n
                p += 1 + width
            else:  # str, bin (header, then n bytes) or ext (header, type byte, then n bytes)
                p += 1 + width + n + (b in _EXT_LEN_BYTES)
        if pending and p > size:  # a string or ext inside a container runs past ``buf``
            return None
    return p
