"""The byte layout of an msglc archive, in one place (spec: docs/format.md).

    header (16 bytes) | data: plain msgpack of the object | TOC | trailer (64 bytes)

The TOC is a run of framed nodes (msgpack payload + CRC-32), children before parents, so a
writer never seeks back. Offsets inside a node are relative: data offsets to the start of the
container the node describes, node references as the distance back from the referring node.
That keeps a subtree's bytes and TOC valid wherever they are copied.
"""

from __future__ import annotations

import struct
import zlib

import msgspec

from .errors import CorruptedError, NotAnArchiveError, TruncatedError, UnsupportedVersionError

MAGIC = b"\x89MLC\r\n\x1a\n"
END_MAGIC = b"\x89MLC-TOC"
MAJOR = 1
MINOR = 1  # what writers put in a new archive: 1.1, NumPy arrays (ext type 78, ArrayNode)
FREE_SPACE_MINOR = 2  # 1.2: free space between the data and the TOC (left by append)

_HEADER = struct.Struct("<8sBB6s")
HEADER_SIZE = _HEADER.size  # 16
END_FIELD = slice(10, 16)  # the header's committed end (u48 LE; 0: the end of the file)
# data_off, data_len, toc_off, toc_len, root_pos, root_len, data_crc, threshold, crc, end magic
_TRAILER_BODY = struct.Struct("<QQQQQIII")
_TRAILER = struct.Struct("<QQQQQIIII8s")
TRAILER_SIZE = _TRAILER.size  # 64
_CRC = struct.Struct("<I")

# Hash-index arrays (see HashMapNode): page table entries and records are pairs of u32.
U32 = struct.Struct("<I")
PAIR = struct.Struct("<II")


def pack_header(minor: int = MINOR, end: int = 0) -> bytes:
    """The 16-byte header. ``end`` is the committed end of the archive, nonzero only while
    ``append`` works on a file (or after it died midway): bytes past it are not part of it."""
    return _HEADER.pack(MAGIC, MAJOR, minor, end.to_bytes(6, "little"))


def header_end(header: bytes | memoryview) -> int:
    """The committed end a header records: 0 when the archive ends where the file does."""
    return int.from_bytes(header[END_FIELD], "little")


def _checked_header(header: bytes | memoryview) -> bytes:
    """The header as the trailer checksum covers it: the committed end reads as zero, so that
    ``append`` can move it without rewriting the trailer it points to."""
    return bytes(header[: END_FIELD.start]) + bytes(END_FIELD.stop - END_FIELD.start)


def check_header(buf: bytes) -> None:
    """Raise unless ``buf`` (the first 16 bytes) is a header this reader understands."""
    if len(buf) < HEADER_SIZE:
        raise TruncatedError(f"file has {len(buf)} bytes, an msglc archive has at least {HEADER_SIZE + TRAILER_SIZE}")
    magic, major, minor, _ = _HEADER.unpack_from(buf)
    if magic != MAGIC:
        raise NotAnArchiveError(f"not an msglc archive: expected magic {MAGIC!r} at offset 0, found {bytes(magic)!r}")
    if major != MAJOR:
        raise UnsupportedVersionError(f"archive format {major}.{minor} is not readable by this msglc (reads {MAJOR}.x)")


class Trailer(msgspec.Struct, frozen=True):
    """Where everything is. Offsets are absolute; ``root_pos`` is relative to ``toc_off``."""

    data_off: int
    data_len: int
    toc_off: int
    toc_len: int
    root_pos: int
    root_len: int  # 0: the root has no TOC node (it is small or a scalar)
    data_crc: int
    threshold: int

    def pack(self, header: bytes) -> bytes:
        """The trailer; its CRC-32 covers the header too (all but its committed end, which
        the trailer itself confirms: it must be where the trailer ends)."""
        body = _TRAILER_BODY.pack(*msgspec.structs.astuple(self))
        return body + _CRC.pack(zlib.crc32(body, zlib.crc32(_checked_header(header)))) + END_MAGIC

    @property
    def live_toc_len(self) -> int:
        """The TOC bytes up to the end of the root node: what the root can refer to (nodes
        come before the nodes that refer to them; anything after the root is unreferenced)."""
        return self.root_pos + self.root_len if self.root_len else 0


def unpack_trailer(buf: bytes, file_size: int, header: bytes) -> Trailer:
    """Parse and check the last 64 bytes of a file of ``file_size`` bytes."""
    *fields, crc, end = _TRAILER.unpack(buf)
    if end != END_MAGIC:
        raise TruncatedError(
            f"no msglc trailer at the end of the file (expected {END_MAGIC!r}, found {bytes(end)!r}): truncated or not an archive"
        )
    if zlib.crc32(buf[: _TRAILER_BODY.size], zlib.crc32(_checked_header(header))) != crc:
        raise CorruptedError(f"header or trailer checksum mismatch (trailer at offset {file_size - TRAILER_SIZE})")
    t = Trailer(*fields)
    end_toc = file_size - TRAILER_SIZE
    data_end = t.data_off + t.data_len
    free_ok = header[9] >= FREE_SPACE_MINOR  # 1.2: free space may lie between data and TOC
    if not (t.data_off == HEADER_SIZE and (data_end == t.toc_off or free_ok and data_end < t.toc_off) and t.toc_off + t.toc_len == end_toc):
        raise CorruptedError(
            f"trailer sections (data {t.data_off}+{t.data_len}, TOC {t.toc_off}+{t.toc_len}) do not tile a file of {file_size} bytes"
        )
    if t.root_len and not (0 <= t.root_pos and t.root_pos + t.root_len <= t.toc_len):
        raise CorruptedError(f"root node {t.root_pos}+{t.root_len} lies outside the TOC ({t.toc_len} bytes)")
    return t


def claimed_size(tail: bytes | memoryview) -> int | None:
    """The file size the trailer at the end of ``tail`` (a file's last bytes) implies, or None
    if ``tail`` does not end in one: lets a remote reader skip asking for the size. Unchecked
    (``unpack_trailer`` checks it, as far as the trailer can)."""
    if len(tail) < TRAILER_SIZE or bytes(tail[-len(END_MAGIC) :]) != END_MAGIC:
        return None
    fields = _TRAILER.unpack_from(tail, len(tail) - TRAILER_SIZE)
    return fields[2] + fields[3] + TRAILER_SIZE  # toc_off + toc_len + the trailer


# ---- TOC nodes -------------------------------------------------------------------------------
# A reference to a node is (distance back from the referring node's start, framed length).
Ref = tuple[int, int]


class ListNode(msgspec.Struct, array_like=True, tag=1, frozen=True):
    """A list cut into spans. Span k holds items starts[k]..starts[k+1]-1 at bytes
    offs[k]..offs[k+1] (relative to the list's first byte); a span in ``kids`` is one large
    container item with a node of its own."""

    n: int
    starts: list[int]
    offs: list[int]
    kids: dict[int, Ref]


class MapNode(msgspec.Struct, array_like=True, tag=2, frozen=True):
    """A dict with its keys inline: entry j starts at koffs[j], its value at voffs[j] and it
    ends at koffs[j + 1]."""

    keys: list[str | int]
    koffs: list[int]
    voffs: list[int]
    kids: dict[int, Ref]


class HashMapNode(msgspec.Struct, array_like=True, tag=3, frozen=True):
    """A dict too large to list its keys in one node. Entries are grouped into spans for
    ordered iteration (as in ``ListNode``); a hash index answers one key (docs/format.md)."""

    n: int
    starts: list[int]
    offs: list[int]
    kids: dict[int, Ref]
    kid_keys: dict[str | int, int]  # key of a large value -> its span
    page_bits: int
    offs_width: int  # 4 or 8: bytes per entry offset
    offs_crc: int  # CRC-32 of the entry offset table (checked by verify; lookups check keys)
    index: Ref  # the raw index region: entry offsets, page table, records


class StrideNode(msgspec.Struct, array_like=True, tag=4, frozen=True):
    """A list whose items all have one encoded size, nested as deep as that holds.
    dims[d] = (header size, item count, item stride) at depth d; the innermost items are
    scalars of ``dims[-1][2]`` bytes. Sub-lists of at least ``lazy_min`` bytes are returned
    lazily."""

    dims: list[tuple[int, int, int]]
    lazy_min: int


class ArrayNode(msgspec.Struct, array_like=True, tag=5, frozen=True):
    """A NumPy array stored as an msgpack extension value (type ``ARRAY_EXT``): its element
    data starts ``head`` bytes after the value's first byte and is ``size`` bytes long. The
    dtype and shape are in the value's own header, read when the array is opened."""

    head: int
    size: int


Node = ListNode | MapNode | HashMapNode | StrideNode | ArrayNode
_node_encoder = msgspec.msgpack.Encoder()
_node_decoder = msgspec.msgpack.Decoder(Node)


def frame_node(node: Node) -> bytes:
    payload = _node_encoder.encode(node)
    return payload + _CRC.pack(zlib.crc32(payload))


def unframe_node(buf: bytes | memoryview, where: int) -> Node:
    """Check the CRC of a framed node read from absolute offset ``where`` and decode it."""
    if len(buf) < 5:
        raise CorruptedError(f"TOC node at offset {where} is {len(buf)} bytes, too short")
    payload = buf[:-4]
    if zlib.crc32(payload) != _CRC.unpack_from(buf, len(buf) - 4)[0]:
        raise CorruptedError(f"TOC node checksum mismatch at offset {where}")
    try:
        return _node_decoder.decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError) as e:
        kind = _node_type(payload)
        if kind is not None and kind not in _NODE_TYPES:
            raise UnsupportedVersionError(
                f"TOC node at offset {where} has type {kind}, unknown to this msglc (written by a newer version?)"
            ) from None
        raise CorruptedError(
            f"TOC node at offset {where} is malformed: {'nested too deeply' if isinstance(e, RecursionError) else e}"
        ) from None


_NODE_TYPES = {cls.__struct_config__.tag for cls in (ListNode, MapNode, HashMapNode, StrideNode, ArrayNode)}


def _node_type(payload: bytes | memoryview) -> int | None:
    try:
        value = msgspec.msgpack.decode(payload)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    return value[0] if isinstance(value, list) and value and type(value[0]) is int else None


def node_span(node: Node) -> int:
    """The encoded length of the container a node describes."""
    if isinstance(node, StrideNode):
        h, n, s = node.dims[0]
        return h + n * s
    if isinstance(node, MapNode):
        return node.koffs[-1]
    if isinstance(node, ArrayNode):
        return node.head + node.size
    return node.offs[-1]


# ---- msgpack container headers -----------------------------------------------------------------


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


def _increasing(xs: list[int]) -> bool:
    return all(map(int.__lt__, xs, xs[1:]))


def check_node(node: Node, where: int, toc_off: int) -> None:
    """Structural checks, once per decoded node at absolute offset ``where``, so that later
    arithmetic on it stays in bounds (every offset is then also checked against the
    container's length, and the container's header against the node)."""
    bad = None
    if isinstance(node, ArrayNode):
        if not (3 <= node.head <= 6 + 4 + (1 << 20) and 0 <= node.size):  # ext header, H, header of at most 1 MiB
            bad = f"array head {node.head}, size {node.size}"
    elif isinstance(node, StrideNode):
        if not node.dims or node.lazy_min < 0:
            bad = "empty dims"
        else:
            for (h, n, s), inner in zip(node.dims, [*node.dims[1:], None], strict=True):
                if not 1 <= h <= 5 or not 0 < n < 2**32 or s < 1 or (inner is not None and s != inner[0] + inner[1] * inner[2]):
                    bad = f"inconsistent dims {node.dims}"
                    break
    elif isinstance(node, MapNode):
        n = len(node.keys)
        ok = len(node.koffs) == n + 1 and len(node.voffs) == n and n > 0 and 1 <= node.koffs[0] <= 5
        ok = ok and all(map(int.__lt__, node.koffs, node.voffs)) and all(map(int.__lt__, node.voffs, node.koffs[1:]))
        if not ok or not all(0 <= k < n for k in node.kids):
            bad = "inconsistent key offsets"
        elif len(set(node.keys)) != n:
            bad = "a key listed twice"
    else:  # ListNode, HashMapNode: spans
        ok = len(node.offs) == len(node.starts) + 1 and node.starts and node.starts[0] == 0 and 1 <= node.offs[0] <= 5
        ok = ok and node.starts[-1] < node.n < 2**32 and node.n <= node.offs[-1] - node.offs[0]
        ok = ok and _increasing(node.starts) and _increasing(node.offs)
        spans = len(node.starts)
        ok = ok and all(0 <= k < spans and node.starts[k] + 1 == (node.starts[k + 1] if k + 1 < spans else node.n) for k in node.kids)
        if isinstance(node, HashMapNode):
            back, size = node.index
            region = (node.n + 1) * node.offs_width + ((1 << node.page_bits) + 1) * 8 + node.n * 8 if 0 <= node.page_bits <= 31 else -1
            ok = ok and node.offs_width in (4, 8) and size == region and set(node.kid_keys.values()) == set(node.kids)
            ok = ok and back > 0 and where - back >= toc_off and where - back + size <= where
        if not ok:
            bad = "inconsistent spans"
    if bad:
        raise CorruptedError(f"TOC node at offset {where} is malformed: {bad}")


def container_header(buf: bytes | memoryview) -> tuple[bool, int, int]:
    """(is_map, item count, header size) of the array or map header at the start of ``buf``."""
    first = buf[0]
    size = container_header_size(first)
    if not size or len(buf) < size:
        raise CorruptedError(f"expected an array or map header, found byte 0x{first:02x}")
    count = first & 0x0F if size == 1 else int.from_bytes(buf[1:size], "big")
    return not is_array(first), count, size


def stride_headers(node: StrideNode) -> bytes | None:
    """The bytes a fixed-stride list starts with: its header, its first row's, that row's first
    row's and so on (the rows' headers are alike at each depth, which ``verify`` checks for
    every row); None if a count does not fit its header size. A lazy view reads them in one
    piece, so a node whose nesting does not match the data is refused."""
    out = b""
    for h, n, _ in node.dims:
        if h == 1 and n < 16:
            out += bytes((0x90 | n,))
        elif h in (3, 5) and n < 1 << 8 * (h - 1):
            out += (b"\xdc" if h == 3 else b"\xdd") + n.to_bytes(h - 1, "big")
        else:
            return None
    return out


def node_header(node: Node) -> tuple[bool, int, int]:
    """The (is_map, item count, header size) the container of ``node`` must start with."""
    if isinstance(node, StrideNode):
        return False, node.dims[0][1], node.dims[0][0]
    if isinstance(node, MapNode):
        return True, len(node.keys), node.koffs[0]
    return isinstance(node, HashMapNode), node.n, node.offs[0]
