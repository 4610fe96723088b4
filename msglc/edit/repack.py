"""``dump(target, reader_or_lazy_part)``: an archive written by copying encoded bytes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from msglc.config import current
from msglc.edit.legacy import convert_legacy
from msglc.edit.sections import COPY_FRAMES, compressed, copy_data, copy_plain
from msglc.errors import CorruptedError
from msglc.format.layout import HEADER_SIZE, Trailer, compressed_header, header_version
from msglc.format.numpy_ext import find_tiled
from msglc.io.atomic import output
from msglc.io.uploads import pinned_to_sources
from msglc.read.archive import Archive
from msglc.read.extract import compacted
from msglc.read.lazy_reader import LazyReader
from msglc.read.part import LazyPart, archive_of, standalone
from msglc.write.compress import HEAD_FRAME, FrameWriter, frame_size
from msglc.write.dump import dump as dump_decoded
from msglc.write.encoder import Encoded


def repack(target: Any, source: LazyReader | LazyPart, options: dict[str, Any]) -> None:
    """Copy the encoded bytes when the threshold and the compression are the source's (for a
    part that ``dump`` wrote, the result is what ``dump`` of the decoded value writes), else
    copy the data bytes with a TOC built anew from them (the same result, at any depth; NumPy
    arrays keep their layout, but tiled ones go into a plain archive in C order); decode and
    write anew only to store NumPy arrays as lists (``numpy_encoder=False``), to sort dicts, or
    to lay arrays out as a ``tiles=`` given asks. Without
    ``compression=`` (per call, or configured) the source's is kept; a compressed archive is
    then copied frames and all, unless ``compression_level=`` asks for recompression."""
    a = archive_of(source)
    target = pinned_to_sources(target, [a.file])  # an S3 object rewritten from itself
    if a.opened.legacy is not None:
        convert_legacy(target, source, options)
        return
    cfg = current(**options)
    compression = options.get("compression", cfg.compression)
    if "compression" not in options and compression is None and compressed(a):
        compression = "zstd"
    cfg = current(**{**options, "compression": compression})  # (a compressed archive's default threshold)
    same = (
        cfg.small_obj_optimization_threshold == a.opened.trailer.threshold
        and "compression_level" not in options
        and cfg.order is None
        and "tiles" not in options
    )
    if compression is None and same and not compressed(a):  # (a compressed TOC indexes dicts otherwise)
        parts: Iterator[bytes | bytearray | memoryview] = (
            compacted(a) if isinstance(source, LazyReader) else standalone(source)
        )
    elif compression is not None and same and isinstance(source, LazyReader) and compressed(a):
        with output(target, cfg.durable) as f:
            _compressed_copy(a, f)
        return
    elif not cfg.numpy_encoder or cfg.order == "sorted" or "tiles" in options:
        # lists for NumPy arrays, dicts sorted, arrays laid out as ``tiles`` asks: a new encoding
        return dump_decoded(target, source.to_obj(), **{**options, "compression": compression})
    else:
        data = _data_of(source)
        if compression is None and compressed(a) and find_tiled(data) is not None:
            # a plain archive has no tiled arrays (format 2.1): decoded, they are written in C order
            return dump_decoded(target, source.to_obj(), **{**options, "compression": compression})
        parts = _reindexed(source, data, {**options, "compression": compression})
    with output(target, cfg.durable) as f:
        for part in parts:
            f.write(part)


def _data_of(source: LazyReader | LazyPart) -> bytes:
    """The data bytes of a reader, or of a lazy part."""
    a = archive_of(source)
    a.check_open()
    if isinstance(source, LazyReader):
        return bytes(a.read(a.opened.trailer.data_off, a.opened.trailer.data_len))
    where = source.location()
    return bytes(a.read(where.offset, where.size))


def _reindexed(
    source: LazyReader | LazyPart, data: bytes, options: dict[str, Any]
) -> Iterator[bytes | bytearray | memoryview]:
    """The archive of ``source``'s data bytes ``data`` as they are, with a TOC built for
    ``options`` (another threshold, another compression): what ``dump`` of the decoded value
    writes, made without decoding it, at any depth. A reader's data checksum is checked first."""
    a = archive_of(source)
    t = a.opened.trailer
    encoded = Encoded.of_data(data, options)
    if isinstance(source, LazyReader) and encoded.checksum.result() != a.opened.trailer.data_crc:
        raise CorruptedError(f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off})")
    encoded.index()
    return encoded.sections()


def _compressed_copy(archive: Archive, f: Any) -> None:
    """``compacted`` of a compressed archive: a 2.1 archive's bytes as they are (slack past
    its end left out); a 2.0 archive's frames copied as they are into a 2.1 section, its TOC
    (up to the root node) framed after them."""
    archive.check_open()
    t = archive.opened.trailer
    if header_version(archive.opened.header)[1] >= 1:
        for at in range(0, archive.opened.file_size, COPY_FRAMES):
            f.write(archive.file.read(at, min(COPY_FRAMES, archive.opened.file_size - at)))
        return
    head = compressed_header()
    f.write(head)
    frames = FrameWriter(f, frame_size(t.threshold), current().compression_level, HEADER_SIZE, head=HEAD_FRAME)
    try:
        buf = bytearray(min(COPY_FRAMES, max(t.data_len, t.live_toc_len, 1)))
        crc = copy_data(archive, t.data_off, t.data_len, frames, buf, lambda n: None)
        if crc != t.data_crc:
            raise CorruptedError(f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off})")
        frames.end_data()
        copy_plain(archive, t.toc_off, t.root_pos, frames, buf, lambda n: None, checksum=False)
        frames.cut()  # the root node starts a frame: opening decompresses no more than it
        copy_plain(archive, t.toc_off + t.root_pos, t.root_len, frames, buf, lambda n: None, checksum=False)
        stored = frames.close((t.root_pos, t.root_len))
    finally:
        frames.abort()
    f.write(Trailer.compressed(stored, t.data_crc, t.threshold).pack(head))
