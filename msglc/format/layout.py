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

from msglc.errors import (
    CorruptedError,
    NotAnArchiveError,
    TruncatedError,
    UnsupportedVersionError,
)

MAGIC = b"\x89MLC\r\n\x1a\n"


END_MAGIC = b"\x89MLC-TOC"


MAJOR = 1


COMPRESSED = 2  # the major version of compressed archives (docs/compression.md)
COMPRESSED_MINOR = 2  # what writers put in every compressed archive: 2.2, the 2.1 layout with paged lists
MINOR = 5  # what writers put in every 1.x archive: 1.5, paged lists (node types 11 and 12)


FREE_SPACE_MINOR = 2  # 1.2 and later: free space between the data and the TOC (left by append)


_HEADER = struct.Struct("<8sBB6s")


HEADER_SIZE = _HEADER.size  # 16


END_FIELD = slice(10, 16)  # the header's committed end (u48 LE; 0: the end of the file)


# data_off, data_len, toc_off, toc_len, root_pos, root_len, data_crc, threshold, crc, end magic
_TRAILER_BODY = struct.Struct("<QQQQQIII")


_TRAILER = struct.Struct("<QQQQQIIII8s")


TRAILER_SIZE = _TRAILER.size  # 64


U32 = struct.Struct("<I")  # every little-endian u32 of the format: CRCs, lengths


def pack_header(minor: int = MINOR, end: int = 0, major: int = MAJOR) -> bytes:
    """The 16-byte header. ``end`` is the committed end of the archive, nonzero when the file
    goes on past it (``append`` at work, killed midway, or done: it never makes a file shorter,
    since a reader may have it memory-mapped): bytes past it are not part of it."""
    return _HEADER.pack(MAGIC, major, minor, end.to_bytes(6, "little"))


def compressed_header() -> bytes:
    """The header of a compressed archive (2.1)."""
    return pack_header(COMPRESSED_MINOR, major=COMPRESSED)


def header_version(header: bytes | memoryview) -> tuple[int, int]:
    """(major, minor) of a checked header."""
    return header[len(MAGIC)], header[len(MAGIC) + 1]


def end_update(minor: int, end: int) -> tuple[bytes, int]:
    """(bytes, offset) of the one header write that sets the minor version and the committed
    end (``append`` switches between states with it)."""
    return bytes((minor,)) + end.to_bytes(END_FIELD.stop - END_FIELD.start, "little"), len(MAGIC) + 1


def without_end(header: bytes | memoryview) -> bytes:
    """The header with its committed end cleared: the archive ends where the file does (a copy
    of the archive alone, without the slack past its end)."""
    return bytes(header[: END_FIELD.start]) + bytes(END_FIELD.stop - END_FIELD.start) + bytes(header[END_FIELD.stop :])


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
    if major not in (MAJOR, COMPRESSED):
        raise UnsupportedVersionError(
            f"archive format {major}.{minor} is not readable by this msglc (reads {MAJOR}.x and {COMPRESSED}.x)"
        )


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
        return body + U32.pack(zlib.crc32(body, zlib.crc32(_checked_header(header)))) + END_MAGIC

    @classmethod
    def contiguous(cls, data_len: int, toc_len: int, root: tuple[int, int], data_crc: int, threshold: int) -> Trailer:
        """The trailer of an archive laid out as writers lay it out: the data right after the
        header, the TOC right after the data; ``root`` is (position in the TOC, length)."""
        return cls(
            data_off=HEADER_SIZE,
            data_len=data_len,
            toc_off=HEADER_SIZE + data_len,
            toc_len=toc_len,
            root_pos=root[0],
            root_len=root[1],
            data_crc=data_crc,
            threshold=threshold,
        )

    @classmethod
    def compressed(cls, stored: int, data_crc: int, threshold: int) -> Trailer:
        """The trailer of a 2.1 archive: a compressed section of ``stored`` bytes after the
        header, holding the data and the TOC (its index locates the root node); ``data_crc``
        is the plain data's CRC-32."""
        return cls(HEADER_SIZE, stored, HEADER_SIZE + stored, 0, 0, 0, data_crc, threshold)

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
            f"no msglc trailer at the end of the file (expected {END_MAGIC!r}, found {bytes(end)!r}): "
            "truncated or not an archive"
        )
    if zlib.crc32(buf[: _TRAILER_BODY.size], zlib.crc32(_checked_header(header))) != crc:
        raise CorruptedError(f"header or trailer checksum mismatch (trailer at offset {file_size - TRAILER_SIZE})")
    t = Trailer(*fields)
    end_toc = file_size - TRAILER_SIZE
    data_end = t.data_off + t.data_len
    free_ok = header[8] == MAJOR and header[9] >= FREE_SPACE_MINOR  # 1.2: free space between data and TOC
    if not (
        t.data_off == HEADER_SIZE
        and (data_end == t.toc_off or free_ok and data_end < t.toc_off)
        and t.toc_off + t.toc_len == end_toc
    ):
        raise CorruptedError(
            f"trailer sections (data {t.data_off}+{t.data_len}, TOC {t.toc_off}+{t.toc_len}) "
            f"do not tile a file of {file_size} bytes"
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
    toc_off: int = fields[2]
    toc_len: int = fields[3]
    return toc_off + toc_len + TRAILER_SIZE
