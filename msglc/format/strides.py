"""Fixed-stride proofs: a list whose items all have one size and one layout is found from
its bytes alone (strided slice comparisons at C speed), so item i is at start + i * stride."""

from __future__ import annotations

from msglc.format.msgpack import (
    FIXED_SCALAR_SIZE,
    ONE_BYTE_ITEMS,
    container_header,
    is_array,
)

STRIDE_LAZY_MIN = 512  # sub-lists of a fixed-stride list at least this long come back lazy (decoding


def stride_dims(data: bytes | bytearray, a: int, h: int, n: int, b: int) -> list[tuple[int, int, int]] | None:
    """[(header, count, stride), ...] if the list at data[a:b] (an h-byte header, n items) is
    provably fixed-stride, else None. Used by the writer and by ``verify`` (on any bytes: it
    loops rather than recursing per nesting level)."""
    if n == 0 or (b - a - h) % n:
        return None
    s = (b - a - h) // n
    levels = _template(data, a + h, s)
    if levels is None or not _proven(data, a + h, levels, n, s):
        return None
    return template_dims(h, n, s, levels)


Levels = list[tuple[str, bytes, int, int]]


def template_dims(h: int, n: int, s: int, levels: Levels) -> list[tuple[int, int, int]]:
    """The dims of a list of ``n`` items of ``s`` bytes behind an ``h``-byte header whose
    items follow the template ``levels`` (``stride_template``)."""
    return [(h, n, s)] + [(len(hdr), n1, s1) for _, hdr, n1, s1 in levels[:-1]]


def stride_template(data: bytes | bytearray | memoryview, p: int, s: int) -> Levels | None:
    """The layout of the ``s``-byte item at data[p:] (its leading headers must be in
    ``data``), outermost level first: ("array", header, count, stride) per level, then
    ("leaf", header bytes, size, one-byte flag); None if it is not a fixed-stride item. With
    ``stride_proven`` it checks a fixed-stride list a window of items at a time (verify)."""
    return _template(data, p, s)


def stride_proven(
    data: bytes | bytearray | memoryview, start: int, levels: Levels, count: int, stride: int, depth: int = 0
) -> bool:
    """Do the ``count`` items at ``start + r * stride`` (items at nesting ``depth`` of the
    template ``levels``) all match it?"""
    return _proven(data, start, levels, count, stride, depth)


def _template(data: bytes | bytearray | memoryview, p: int, s: int) -> list[tuple[str, bytes, int, int]] | None:
    """The layout of the item at data[p:p+s], outermost first: ("array", header, count,
    stride) per nesting level, then ("leaf", header bytes to match, size, one_byte)."""
    levels: list[tuple[str, bytes, int, int]] = []
    while True:
        if s < 1 or p >= len(data):
            return None
        m = data[p]
        if s == 1:
            return [*levels, ("leaf", b"", 1, 1)] if _one_byte(m) else None
        if FIXED_SCALAR_SIZE.get(m) == s:
            return [*levels, ("leaf", bytes(data[p : p + 1]), s, 0)]
        hl = _str_bin_header(m)
        if hl:
            length = (m & 0x1F) if hl == 1 else int.from_bytes(data[p + 1 : p + hl], "big")
            return [*levels, ("leaf", bytes(data[p : p + hl]), s, 0)] if hl + length == s else None
        if not is_array(m):
            return None
        _, n1, h1 = container_header(memoryview(data)[p : p + 5])
        if n1 == 0:
            return [*levels, ("leaf", bytes(data[p : p + h1]), s, 0)] if s == h1 else None
        if (s - h1) % n1:
            return None
        levels.append(("array", bytes(data[p : p + h1]), n1, (s - h1) // n1))
        p, s = p + h1, (s - h1) // n1


def _one_byte(m: int) -> bool:
    return m < 0x80 or m >= 0xE0 or m in (0xC0, 0xC2, 0xC3)


def _str_bin_header(m: int) -> int:
    """Header length of a str or bin item (whose length is in its header), else 0."""
    if 0xA0 <= m <= 0xBF:
        return 1
    return {0xD9: 2, 0xC4: 2, 0xDA: 3, 0xC5: 3, 0xDB: 5, 0xC6: 5}.get(m, 0)


def _proven(
    data: bytes | bytearray | memoryview,
    start: int,
    levels: list[tuple[str, bytes, int, int]],
    count: int,
    stride: int,
    depth: int = 0,
) -> bool:
    """Do the ``count`` items at ``start + r * stride`` all match the template ``levels``
    (from nesting ``depth`` on)? Each check compares strided slices (C speed); a work list
    replaces recursion."""
    work = [(start, depth, count, stride)]
    while work:
        start, d, count, stride = work.pop()
        kind, hdr, n1, s1 = levels[d]
        end = start + (count - 1) * stride + 1
        if kind == "leaf" and s1:  # one-byte items: every one a one-byte marker
            if bytes(data[start:end:stride]).translate(None, ONE_BYTE_ITEMS):
                return False
            continue
        for q, byte in enumerate(hdr):
            if data[start + q : end + q : stride] != bytes((byte,)) * count:
                return False
        if kind == "leaf":
            continue
        h1 = len(hdr)
        if count <= n1:
            work.extend((start + r * stride + h1, d + 1, n1, s1) for r in range(count))
        else:
            work.extend((start + h1 + k * s1, d + 1, count, stride) for k in range(n1))
    return True
