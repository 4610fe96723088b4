"""Build the table of contents from an object and its msgpack encoding.

The object is encoded once, in one msgspec call. This module then looks at the bytes: a
container whose encoding fits the threshold needs no TOC entry; a larger one is split by
decoding one level of it into ``msgspec.Raw`` views (item boundaries at C speed), and only the
large items are visited further. Lists of fixed-size items are proven so from the bytes with
strided slice comparisons and need no per-item entries at all.

Containers are read as msgspec encodes them, from their C storage: a subclass's ``__len__``,
``__iter__`` or ``__getitem__`` is never consulted (one that yields other than its storage
was streamed instead: ``validate.kind`` raises ``Streamed`` for it).
"""

from __future__ import annotations

import os
import sys
import zlib
from array import array
from bisect import bisect_left, bisect_right
from itertools import accumulate, compress, repeat
from operator import lshift, or_
from typing import Any

import msgspec

from . import validate
from .arrays import ArrayEncoder, parse_head
from .format import (
    FIXED_SCALAR_SIZE,
    ONE_BYTE_ITEMS,
    U32,
    ArrayNode,
    HashMapNode,
    ListNode,
    MapNode,
    Node,
    Ref,
    StrideNode,
    array_header,
    container_header,
    container_header_size,
    frame_node,
    gets_node,
    is_array,
)

MAP_INLINE_MAX = 1024  # dicts with more entries get a hash index instead of an inline key list
PAGE_ENTRIES = 32  # average entries per hash-index page
STRIDE_LAZY_MIN = 512  # sub-lists of a fixed-stride list at least this long come back lazy (decoding
# a row costs ~15 ns per float, so past ~56 floats one 9-byte read beats decoding the row)
_NUMERIC_MARKERS = frozenset(FIXED_SCALAR_SIZE)
# Errors of a layout on bytes msgspec garbled: a set subclass with its own __iter__ is written
# with the count of its storage and the items of its iteration. Reading them may fail before
# the type check meets the subclass; ``validate.raise_if_streamed`` then tells (Streamed).
GARBLED = (msgspec.DecodeError, ValueError, IndexError)
_raw_list = msgspec.msgpack.Decoder(list[msgspec.Raw])

try:  # optional C accelerator for huge dicts; the Python path below writes identical bytes
    from . import _speedups
except ImportError:  # pragma: no cover - depends on the build
    _speedups = None
if os.environ.get("MSGLC_PURE_PYTHON", "").lower() in ("1", "true", "yes"):
    _speedups = None


class TocBuilder:
    """Accumulates framed TOC nodes for one encoded object ``buf``.

    ``splices``: (position, head, array) of the large NumPy arrays that the data section holds
    in place of the placeholders at those positions of ``buf`` (``msglc.arrays``). Navigation
    uses positions in ``buf``; sizes compared with the threshold and offsets written to nodes
    are those of the data section."""

    def __init__(self, buf: bytes, threshold: int, splices: list | tuple = (), toc_base: int = 0) -> None:
        self.buf = buf
        self.threshold = threshold
        self.toc = bytearray()
        self.toc_base = toc_base  # TOC bytes written before this builder's (combine copies them)
        self._splice_pos = [pos for pos, _, _ in splices]
        self._splice_head = {pos: head for pos, head, _ in splices}
        deltas = (len(head) + arr.nbytes - ArrayEncoder.PLACEHOLDER_SIZE for _, head, arr in splices)
        self._shift = list(accumulate(deltas, initial=0))  # growth of the data before splice k

    def _real(self, p: int) -> int:
        """Position ``p`` of ``buf`` in the data section."""
        return p + self._shift[bisect_left(self._splice_pos, p)] if self._splice_pos else p

    def _spliced(self, a: int, b: int) -> bool:
        """Does buf[a:b] hold a placeholder?"""
        k = bisect_left(self._splice_pos, a)
        return k < len(self._splice_pos) and self._splice_pos[k] < b

    def _real_layout(self, a: int, b: int, lens: list[int], offs: list[int]) -> tuple[list[int], list[int]]:
        """Item lengths and offsets of the container at buf[a:b] as in the data section."""
        if not self._spliced(a, b):
            return lens, offs
        lens = list(lens)
        pos = self._splice_pos
        for k in range(bisect_left(pos, a), bisect_left(pos, b)):
            lens[bisect_right(offs, pos[k] - a) - 1] += self._shift[k + 1] - self._shift[k]
        return lens, list(accumulate(lens, initial=offs[0]))

    # -- entry point ---------------------------------------------------------------------------
    def build_root(self, obj: Any) -> tuple[int, int]:
        """Index the whole object; returns the root node's (position in TOC, length) or (0, 0)."""
        try:
            ref = self.index(obj, 0, len(self.buf))
        except GARBLED:
            validate.raise_if_streamed(obj)
            raise
        if ref is None:
            validate.check_value(obj)
            return 0, 0
        return ref

    def index(self, obj: Any, a: int, b: int) -> tuple[int, int] | None:
        """Node for the container encoded at buf[a:b], or None when it needs none."""
        if self._real(b) - self._real(a) <= self.threshold:
            return None
        k = validate.kind(type(obj))
        if k == validate.SEQ:
            seq = obj if type(obj) is list or type(obj) is tuple else list(obj)  # a subclass: its storage
            return self._index_list(seq, a, b)
        if k == validate.MAP:
            return self._index_map(obj, a, b)
        if not k:
            raise validate.unsupported_type(type(obj))
        if gets_node(self.buf, a):  # a NumPy array: an extension value, or a list without numpy_encoder
            return self._index_array(a, b) if not container_header_size(self.buf[a]) else self.index(obj.tolist(), a, b)
        return None  # a long str or bytes: a scalar, read whole

    def _index_array(self, a: int, b: int) -> tuple[int, int]:
        head = self._splice_head.get(a)
        total = self._real(b) - self._real(a)
        _, _, start = parse_head(memoryview(self.buf)[a:b] if head is None else head, a, total)
        return self._add(ArrayNode(head=start, size=total - start))

    def _add(self, node: Node) -> tuple[int, int]:
        pos = self._here()
        framed = frame_node(node)
        self.toc += framed
        return pos, len(framed)

    def _refs(self, kids: dict[int, tuple[int, int]]) -> dict[int, Ref]:
        """Child positions as distances back from the node about to be written."""
        here = self._here()
        return {k: (here - pos, size) for k, (pos, size) in kids.items()}

    def _here(self) -> int:
        """Position in the TOC of the next byte written."""
        return self.toc_base + len(self.toc)

    # -- lists ---------------------------------------------------------------------------------
    def _index_list(self, seq: list | tuple, a: int, b: int) -> tuple[int, int]:
        n = len(seq)
        h = container_header_size(self.buf[a])
        dims = None if self._spliced(a, b) else stride_dims(self.buf, a, h, n, b)
        if dims is not None:
            self._check_stride_types(seq, dims, a)
            lazy_min = min(self.threshold, STRIDE_LAZY_MIN)
            return self._add(StrideNode(dims=dims, lazy_min=lazy_min))
        real_offs, kids = self.list_items(seq, a, b, h)
        starts, span_offs, span_kids = self._spans(real_offs, n, kids)
        return self._add(ListNode(n=n, starts=starts, offs=span_offs, kids=self._refs(span_kids)))

    def list_items(self, seq: list | tuple, a: int, b: int, h: int) -> tuple[Any, dict[int, tuple[int, int]]]:
        """Item offsets (from ``a``, as in the data section, plus the end) of the list at
        buf[a:b] with an h-byte header, and the nodes of its large items; every item checked."""
        if _speedups is not None and not self._spliced(a, b):  # the same layout without a Python object per item
            offs_bytes, big = _speedups.list_index(self.buf, a + h, len(seq), a, self.threshold)
            real_offs = le_array("Q", offs_bytes)
            kids = self._index_children((j, seq[j], a + start, a + end) for j, start, end in big)
        else:
            lens, offs = item_layout(list_raws(self.buf, a, b), h)
            real_lens, real_offs = self._real_layout(a, b, lens, offs)
            kids = self._index_children((j, seq[j], a + offs[j], a + offs[j + 1]) for j in self.big_children(a, offs, real_lens))
        validate.check_items(seq, skip=kids.keys())
        return real_offs, kids

    def big_children(self, a: int, starts: list[int], lens: list[int]) -> list[int]:
        """Indices of the children that get a node of their own: longer than the threshold,
        and arrays, maps or NumPy arrays (the C path decides the same way; ``verify`` asks the
        same). ``starts[j]`` is child j's offset from ``a``, ``lens[j]`` its length."""
        if not lens or max(lens) <= self.threshold:
            return []
        long = compress(range(len(lens)), map(self.threshold.__lt__, lens))
        return [j for j in long if gets_node(self.buf, a + starts[j])]

    def _index_children(self, children) -> dict[Any, tuple[int, int]]:
        """Nodes for (index or key, value, start, end) children that need one."""
        kids = {}
        for label, value, start, end in children:
            try:
                ref = self.index(value, start, end)
            except validate.Unsupported as e:
                e.path.append(label)
                raise
            if ref is not None:
                kids[label] = ref
        return kids

    def _spans(self, offs: list[int], n: int, kids) -> tuple[list[int], list[int], dict[int, tuple[int, int]]]:
        """Cut items 0..n-1 into spans of about the threshold; each kid is a span of its own."""
        starts: list[int] = []
        span_kids: dict[int, tuple[int, int]] = {}
        t = self.threshold
        i = 0
        for stop in [*sorted(kids), n]:
            while i < stop:
                j = bisect_right(offs, offs[i] + t, i + 1, stop + 1) - 1
                starts.append(i)
                i = max(j, i + 1)
            if stop < n:
                span_kids[len(starts)] = kids[stop]
                starts.append(stop)
                i = stop + 1
        return starts, [offs[s] for s in starts] + [offs[n]], span_kids

    def _check_stride_types(self, seq, dims, a: int) -> None:
        """Sub-lists must be sequences and leaves storable. Numeric leaves (the usual matrix)
        are checked by ``_speedups.exact_numbers`` when built: every leaf exactly a float or
        an int, ~2 ns each. Otherwise, and for other leaves, the full type check runs: bytes
        alone prove nothing, since msgspec also writes plain ``Enum`` members and ``Raw``
        values with those markers."""
        numeric = self.buf[a + sum(d[0] for d in dims)] in _NUMERIC_MARKERS
        if numeric and _speedups is not None and _speedups.exact_numbers(seq, len(dims)):
            return
        try:
            level = [seq]
            for _ in dims[1:]:
                for row in level:
                    _check_rows(row)
                # NumPy arrays (stored as lists without numpy_encoder) were checked by the encoder
                level = [r if isinstance(r, (list, tuple)) else list(r) for row in level for r in row if not _is_ndarray(r)]
            for row in level:
                validate.check_items(row)
        except validate.Unsupported:
            validate.check_items(seq)  # slower, but finds the full path for the message
            raise

    # -- dicts ---------------------------------------------------------------------------------
    def _index_map(self, d: dict, a: int, b: int) -> tuple[int, int]:
        keys = dict.keys(d)  # the storage msgspec encoded, whatever a subclass overrides
        n = len(keys)
        h = container_header_size(self.buf[a])
        if n > MAP_INLINE_MAX and _speedups is not None and not self._spliced(a, b):
            return self._index_hash_map_fast(d, a, h, n)
        raws, real_offs, kids = self.map_entries(d, a, b, h)
        koffs, voffs = real_offs[0::2], real_offs[1::2]  # entry j: key at koffs[j], value voffs[j]..koffs[j+1]
        if n <= MAP_INLINE_MAX:
            kids = {j: kids[k] for j, k in enumerate(keys) if k in kids}
            return self._add(MapNode(keys=list(keys), koffs=koffs, voffs=voffs, kids=self._refs(kids)))
        entry_kids = {j: (k, kids[k]) for j, k in enumerate(keys) if k in kids} if kids else {}
        return self._hash_node(n, koffs, entry_kids, self._hash_index(raws[0::2], koffs))

    def map_entries(self, d: dict, a: int, b: int, h: int) -> tuple[list, list[int], dict[Any, tuple[int, int]]]:
        """The dict encoded at buf[a:b] with an h-byte header: its keys and values alternately
        as ``msgspec.Raw``, their offsets from ``a`` as in the data section (plus the end), and
        the nodes of its large values by key; every key and value checked."""
        raws = map_raws(self.buf, a, h, b, len(dict.keys(d)))
        lens, offs = item_layout(raws, h)
        real_lens, real_offs = self._real_layout(a, b, lens, offs)
        kids = self._big_values(d, a, offs[1::2], offs[0::2], real_lens[1::2])
        validate.check_map(d, skip=kids.keys())
        return raws, real_offs, kids

    def _index_hash_map_fast(self, d: dict, a: int, h: int, n: int) -> tuple[int, int]:
        """The hash-indexed dict with the arrays computed in C (``_speedups``)."""
        page_bits = hash_page_bits(n)
        offs_bytes, width, rec_bytes, firsts_bytes, big = _speedups.map_index(self.buf, a + h, n, a, self.threshold, page_bits)
        koffs = le_array("I" if width == 4 else "Q", offs_bytes)
        entry_kids = {}
        if big:
            items = list(dict.items(d))
            kids = self._index_children((items[e][0], items[e][1], a + start, a + end) for e, start, end in big)
            entry_kids = {e: (items[e][0], kids[items[e][0]]) for e, _, _ in big if items[e][0] in kids}
        validate.check_map(d, skip={key for key, _ in entry_kids.values()})
        region = self._write_region(offs_bytes, rec_bytes, le_array("I", firsts_bytes), page_bits, width)
        return self._hash_node(n, koffs, entry_kids, region)

    def _hash_node(self, n: int, koffs, entry_kids: dict[int, tuple[Any, tuple[int, int]]], region: tuple) -> tuple[int, int]:
        """Write the node of a hash-indexed dict whose index region is already written."""
        position, length, page_bits, width, offs_crc = region
        starts, span_offs, span_kids = self._spans(koffs, n, {e: ref for e, (_, ref) in entry_kids.items()})
        span_of_entry = {starts[k]: k for k in span_kids}
        here = self._here()
        return self._add(
            HashMapNode(
                n=n,
                starts=starts,
                offs=span_offs,
                kids=self._refs(span_kids),
                kid_keys={key: span_of_entry[e] for e, (key, _) in entry_kids.items()},
                page_bits=page_bits,
                offs_width=width,
                offs_crc=offs_crc,
                index=(here - position, length),
            )
        )

    def _big_values(self, d: dict, a: int, voffs: list[int], koffs: list[int], vlens: list[int]) -> dict[Any, tuple[int, int]]:
        """Index the values that get a node: key -> node."""
        big = set(self.big_children(a, voffs, vlens))
        if not big:
            return {}
        return self._index_children(
            (key, value, a + voffs[j], a + koffs[j + 1]) for j, (key, value) in enumerate(dict.items(d)) if j in big
        )

    def _hash_index(self, key_raws: list, koffs: list[int]) -> tuple[int, int, int, int, int]:
        """Build and write the index region of a dict (pure Python; ``_speedups.map_index``
        computes the same arrays in C). Returns (position, length, page_bits, offs_width,
        offs_crc).

        Region: entry offsets ((n+1) x u32|u64) | page table ((P+1) x (u32 first record,
        u32 CRC-32 of the page's records)) | records (n x u64: key hash << 32 | entry),
        sorted, so page p = hash >> (32 - page_bits) holds a contiguous run of records."""
        return self.hash_index_of(list(map(zlib.crc32, key_raws)), koffs)

    def hash_index_of(self, hashes: list[int], koffs: Any) -> tuple[int, int, int, int, int]:
        """``_hash_index`` from the keys' hashes (CRC-32 of their encodings)."""
        return self.write_hash_index(*hash_records(hashes), koffs)

    def write_hash_index(self, records: Any, firsts: Any, koffs: Any) -> tuple[int, int, int, int, int]:
        """``_hash_index`` from its sorted ``records`` (native u64: an ``array("Q")`` or a
        memoryview) and page table ``firsts`` (``hash_records``, ``key_records``)."""
        width = 4 if koffs[-1] < 2**32 else 8
        code = "I" if width == 4 else "Q"
        entry_offs = koffs if isinstance(koffs, array) and koffs.typecode == code else array(code, koffs)
        if sys.byteorder == "big":  # copies: the caller's arrays stay as they are
            records, entry_offs = array("Q", records), array(code, entry_offs)
            records.byteswap()
            entry_offs.byteswap()
        page_bits = hash_page_bits(len(records))
        return self._write_region(memoryview(entry_offs).cast("B"), memoryview(records).cast("B"), firsts, page_bits, width)

    def _write_region(self, offs_bytes: bytes, rec_bytes: bytes, firsts, page_bits: int, width: int) -> tuple[int, int, int, int, int]:
        """Append the index region (entry offsets, page table, records) to the TOC."""
        pages = 1 << page_bits
        rec_view = memoryview(rec_bytes)
        table = array("I", bytes(8 * (pages + 1)))
        table[0::2] = array("I", firsts)
        table[1:-1:2] = array("I", [zlib.crc32(rec_view[8 * a : 8 * b]) for a, b in zip(firsts, firsts[1:], strict=False)])
        if sys.byteorder == "big":
            table.byteswap()
        table_bytes = table.tobytes()
        table_bytes = table_bytes[:-4] + U32.pack(zlib.crc32(table_bytes[:-4]))  # the last slot checks the table
        pos = self._here()
        self.toc += offs_bytes
        self.toc += table_bytes
        self.toc += rec_bytes
        return pos, self._here() - pos, page_bits, width, zlib.crc32(offs_bytes)


def hash_page_bits(n: int) -> int:
    """Pages of about ``PAGE_ENTRIES`` records: one lookup reads one small page."""
    return max(0, (n // PAGE_ENTRIES).bit_length() - 1)


def hash_records(hashes: list[int]) -> tuple[array, list[int]]:
    """The records of a hash index over keys with these hashes, sorted (hash << 32 | entry),
    and the first record of each page (plus the count)."""
    n = len(hashes)
    page_bits = hash_page_bits(n)
    records = list(map(or_, map(lshift, hashes, repeat(32)), range(n)))
    records.sort()
    shift = 64 - page_bits
    firsts = [bisect_left(records, p << shift) for p in range(1 << page_bits)] + [n]
    return array("Q", records), firsts


def key_records(keys: bytes | bytearray, n: int) -> tuple[Any, Any, Any]:
    """``hash_records`` of n keys whose encodings, each followed by a nil byte, make ``keys``
    (a msgpack map body of nil values: how a streamed dict keeps its keys once their values
    are written), and where each key starts in ``keys`` (plus the end). With the C
    accelerator no Python object is made per key."""
    if _speedups is not None:
        starts, width, recs, firsts, _ = _speedups.map_index(keys, 0, n, 0, 1, hash_page_bits(n))
        return _le_view("Q", recs), le_array("I", firsts), _le_view("I" if width == 4 else "Q", starts)
    raws = map_raws(keys, 0, 0, len(keys), n)
    records, firsts = hash_records(list(map(zlib.crc32, raws[0::2])))
    return records, firsts, list(accumulate(map(len, raws), initial=0))[0::2]


# ---- helpers -------------------------------------------------------------------------------------


def list_raws(buf: bytes, a: int, b: int) -> list:
    """The items of the array encoded at buf[a:b], as ``msgspec.Raw`` views (C speed)."""
    return _raw_list.decode(memoryview(buf)[a:b])


def map_raws(buf: bytes, a: int, h: int, b: int, n: int) -> list:
    """Keys and values, alternately, of the n-entry map encoded at buf[a:b] with an h-byte
    header: its body read as an array of 2n items."""
    return _raw_list.decode(array_header(2 * n) + memoryview(buf)[a + h : b])


def item_layout(raws: list, h: int) -> tuple[list[int], list[int]]:
    """Lengths of the items, and their starts relative to the container plus the end."""
    lens = list(map(len, raws))
    return lens, list(accumulate(lens, initial=h))


def le_array(code: str, data: bytes) -> array:
    values = array(code)
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def _le_view(code: str, data: bytes) -> memoryview | array:
    """``le_array`` without a copy where the machine is little-endian."""
    return memoryview(data).cast(code) if sys.byteorder == "little" else le_array(code, data)


def _is_ndarray(x: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def _check_rows(row) -> None:
    """Every item of ``row`` must be a sequence (a sub-list of a fixed-stride list): a
    sequence type, or a NumPy array that the encoder wrote as a list."""
    np = sys.modules.get("numpy")
    for t in set(map(type, row)):
        if validate.kind(t) != validate.SEQ and not (np is not None and issubclass(t, np.ndarray)):
            e = validate.unsupported_type(t)
            e.path.append(validate.label_of(enumerate(row), t))
            raise e


# ---- fixed strides: proven from the bytes, in loops (a crafted node may nest thousands deep) ----


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
    return [(h, n, s)] + [(len(hdr), n1, s1) for _, hdr, n1, s1 in levels[:-1]]


def _template(data: bytes | bytearray, p: int, s: int) -> list[tuple[str, bytes, int, int]] | None:
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


def _proven(data: bytes | bytearray, start: int, levels: list, count: int, stride: int) -> bool:
    """Do the ``count`` items at ``start + r * stride`` all match the template ``levels``?
    Each check compares strided slices (C speed); a work list replaces recursion."""
    work = [(start, 0, count, stride)]
    while work:
        start, d, count, stride = work.pop()
        kind, hdr, n1, s1 = levels[d]
        end = start + (count - 1) * stride + 1
        if kind == "leaf" and s1:  # one-byte items: every one a one-byte marker
            if data[start:end:stride].translate(None, ONE_BYTE_ITEMS):
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
