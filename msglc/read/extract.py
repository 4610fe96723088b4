"""Archives made from parts of one by copying bytes, never decoding: the whole archive
compacted, one lazy part as an archive of its own (``raw_data``, repacking), and the data
section streamed out as plain msgpack."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import msgspec

from msglc.errors import CorruptedError
from msglc.format.layout import HEADER_SIZE, Trailer, pack_header
from msglc.format.msgpack import container_header_size
from msglc.format.nodes import StrideNode, frame_node, whole_max
from msglc.format.numpy_ext import find_tiled
from msglc.format.strides import STRIDE_LAZY_MIN, stride_dims
from msglc.io.framed import FramedSource
from msglc.read.archive import Archive, Location
from msglc.util.checksum import data_crc32

CHUNK = 1 << 24  # bytes per read when streaming a data section


def part_archive(archive: Archive, where: Location, count: int) -> Iterator[bytes | memoryview]:
    """The bytes of an archive holding just the part stored at ``where`` (``count`` items):
    its data and its TOC subtree copied (every TOC reference is relative), a new trailer.
    A row of a fixed-stride list has no node of its own: its bytes get the node ``dump``
    would give them. The source's data checksum covers its whole data section and is not
    checked here (run ``verify()`` on the source first when that matters)."""
    archive.check_open()
    data = archive.read(where.offset, where.size)
    if isinstance(archive.src, FramedSource) and find_tiled(data) is not None:
        raise ValueError(
            "this part holds NumPy arrays stored tile by tile (format 2.1), which the plain archive "
            "raw_data() makes cannot hold as they are: msglc.dumps(part) writes it anew (compressed or, "
            "with compression=None, in C order)"
        )
    head = pack_header()
    if where.node_size:
        lo, end = archive.toc_range(where.node, where.node_size)
        toc: bytes | memoryview = archive.read(lo, end - lo)
        root = (where.node - lo, end - where.node)
    else:  # a row: checked as the reader checks data it decodes, since nothing else checks it
        archive.decode(data, where.offset)
        toc = _row_node(bytes(data), count, archive.opened.trailer.threshold)
        root = (0, len(toc))
    yield head
    yield data
    yield toc
    yield Trailer.contiguous(len(data), len(toc), root, data_crc32()(data), archive.opened.trailer.threshold).pack(head)


def _row_node(data: bytes, count: int, threshold: int) -> bytes:
    """The TOC ``dump`` writes for a fixed-stride row: none when shorter than the threshold, else its
    ``StrideNode`` (the row's bytes prove its strides as its parent's did)."""
    if len(data) <= whole_max(threshold):
        return b""
    dims = stride_dims(data, 0, container_header_size(data[0]), count, len(data))
    if dims is None:
        raise CorruptedError(f"a row of {len(data)} bytes in a fixed-stride list does not have fixed strides")
    return frame_node(StrideNode(dims=dims, lazy_min=min(whole_max(threshold) + 1, STRIDE_LAZY_MIN)))


def compacted(archive: Archive) -> Iterator[bytes | memoryview]:
    """The whole archive without the free space and unreferenced TOC bytes ``append`` leaves:
    its data, its TOC up to the root node and a new trailer, as ``dump`` or ``combine`` would
    have written them. (After an append that was killed, the TOC it had copied before the old
    root node stays, unreferenced, until the next append.)"""
    archive.check_open()
    t = archive.opened.trailer
    head = pack_header()
    yield head
    yield archive.read(t.data_off, t.data_len)
    yield archive.read(t.toc_off, t.live_toc_len)
    yield msgspec.structs.replace(t, toc_off=HEADER_SIZE + t.data_len, toc_len=t.live_toc_len).pack(head)


def data_chunks(archive: Archive, progress: Callable[[int], None] = lambda n: None) -> Iterator[bytes | memoryview]:
    """The data section (plain msgpack) in chunks of ``CHUNK`` bytes; its checksum is checked
    as they go and a mismatch raises ``CorruptedError`` after the last chunk (an archive of
    the published msglc has none to check)."""
    t = archive.opened.trailer
    crc32, crc = data_crc32(), 0
    for offset in range(0, t.data_len, CHUNK):
        chunk = archive.read(t.data_off + offset, min(CHUNK, t.data_len - offset))
        crc = crc32(chunk, crc)
        yield chunk
        progress(len(chunk))
    if crc != t.data_crc and archive.opened.legacy is None:
        raise CorruptedError(f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off})")
