"""Gather archives into one without decoding them: ``combine`` and ``FileInfo``.

The combined archive's root is a dict (every input named) or a list (none named) whose values
are the inputs' data sections, copied byte for byte; each input's TOC is copied whole, and a
new root node refers to the inputs' root nodes. That works because every offset in a TOC is
relative (docs/format.md): a subtree's data and nodes stay valid wherever they are copied.
Inputs are checked while they are copied (their data checksum) and refused before the output
exists if they are not archives, are truncated or are of an unknown version.

A compressed result (format 2.1) gets the data frames of compressed inputs as they are (their
page-table entries and dictionaries join the result's), and the rest (root header, keys, plain inputs) compressed
into frames of its own; every TOC offset is logical, so the nodes relocate as for plain parts.
Without ``compression=`` (per call, or configured), the result is compressed when every
archive among the inputs is.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol, cast

import msgspec

from msglc.config import Config, current, refuse_order
from msglc.edit.inputs import (
    COPY_CHUNK,
    FileInfo,
    Input,
    opened,
    pin_target,
    refuse_target_among,
)
from msglc.edit.sections import Sink, compressed, copy_data, copy_plain
from msglc.errors import CorruptedError
from msglc.format.hash_index import MAP_INLINE_MAX
from msglc.format.layout import HEADER_SIZE, Trailer, compressed_header, pack_header
from msglc.format.msgpack import array_header, map_header
from msglc.format.nodes import MapNode, exact_key, whole_max
from msglc.io.atomic import output
from msglc.read.archive import Archive
from msglc.util.checksum import crc32_combine
from msglc.write.compress import HEAD_FRAME, FrameWriter, frame_size
from msglc.write.indexer import TocBuilder

key_encoder = msgspec.msgpack.Encoder(enc_hook=exact_key)


class Base(Protocol):
    """What ``combine_into`` needs of an archive whose root's entries come first in the
    result (``append``'s ``Existing``): its root container and TOC, and the new root node."""

    archive: Archive
    trailer: Trailer
    is_map: bool
    count: int  # entries in its root container
    header_size: int  # bytes of the root container's header
    head: bytes  # that header
    toc_len: int  # bytes of its TOC up to the root node

    def root_node(
        self, inputs: list[Input], keys: list[bytes], header: bytes, threshold: int, toc_base: int
    ) -> tuple[tuple[int, int], bytes]: ...


def combine_into(
    archive: Any,
    infos: list[FileInfo],
    existing: Base | None,
    options: dict[str, Any],
    progress: Callable[[int], None] | None = None,
    as_dict: bool | None = None,
    wide: bool = False,
    create: bool = False,
) -> None:
    """Write ``infos`` [after the entries of ``existing``] as one archive at ``archive``;
    ``wide``: give the root a 5-byte header, so that later appends fit in place; ``create``:
    raise ``FileExistsError`` rather than replace a file that appeared meanwhile."""
    cfg = current(**options)
    refuse_order(options, "combine")
    with opened(infos, options) as inputs:
        refuse_target_among(archive, inputs)
        archive = pin_target(archive, inputs)  # an S3 object rewritten from itself
        if as_dict is None:
            as_dict = existing.is_map if existing is not None else bool(infos) and infos[0].name is not None
        if "compression" not in options and cfg.compression is None:
            cfg = replace(cfg, compression=result_compression(inputs))
        _write(archive, inputs, as_dict, cfg, existing, progress or (lambda n: None), wide, create)


def result_compression(inputs: list[Input]) -> str | None:
    """The compression of a combined archive that no option asks for: compressed ("zstd") when
    every archive among the inputs is (``obj=`` inputs do not count), else plain."""
    archives = [part.archive for part in inputs if part.from_archive]
    return "zstd" if archives and all(map(compressed, archives)) else None


def _write(
    path: Any,
    inputs: list[Input],
    as_dict: bool,
    cfg: Config,
    existing: Base | None,
    progress: Callable[[int], None],
    wide: bool,
    create: bool,
) -> None:
    """Write the combined archive: [the existing root's entries,] then the inputs."""
    keys = entry_keys(inputs, as_dict)
    kept = existing.count if existing is not None else 0
    header = (map_header if as_dict else array_header)(kept + len(inputs), wide)
    body = (
        existing.trailer.data_len - existing.header_size if existing is not None else 0
    )  # the existing entries' bytes
    data_len = len(header) + body + sum(len(k) + part.trailer.data_len for k, part in zip(keys, inputs, strict=True))
    kept_toc = existing.toc_len if existing is not None else 0
    toc_lens = [kept_toc] + [part.trailer.live_toc_len for part in inputs]
    threshold = cfg.small_obj_optimization_threshold
    if existing is None:
        root, root_toc = _root_node(inputs, keys, header, threshold, sum(toc_lens))
    else:
        root, root_toc = existing.root_node(inputs, keys, header, threshold, sum(toc_lens))
    size_hint = 0 if cfg.compression else HEADER_SIZE + data_len + sum(toc_lens) + len(root_toc)
    with output(path, cfg.durable, size_hint, replace=not create) as f:
        head = compressed_header() if cfg.compression else pack_header()
        f.write(head)
        frames = (
            FrameWriter(f, frame_size(threshold), cfg.compression_level, HEADER_SIZE, head=HEAD_FRAME)
            if cfg.compression
            else None
        )
        out: Sink = f if frames is None else frames
        try:
            out.write(header)
            crc = zlib.crc32(header)
            sizes = [part.trailer.data_len for part in inputs] + toc_lens + [body, 1]
            buf = bytearray(min(COPY_CHUNK, max(sizes)))
            if existing is not None:
                t = existing.trailer
                body_crc = copy_data(existing.archive, t.data_off + existing.header_size, body, out, buf, progress)
                if crc32_combine(zlib.crc32(existing.head), body_crc, body) != t.data_crc:
                    raise CorruptedError(f"{os.fspath(path)!r}: data section checksum mismatch; nothing was changed")
                crc = crc32_combine(crc, body_crc, body)
            crc = copy_entries(keys, inputs, out, buf, progress, crc, "nothing was written")
            if frames is not None:
                frames.end_data()  # the TOC follows, framed
            if existing is not None:
                copy_range(existing.archive, existing.trailer.toc_off, existing.toc_len, out, buf, False, progress)
            copy_tocs(inputs, out, buf, progress)
            if frames is not None:
                frames.cut()  # the root node starts a frame: opening decompresses no more than it
            out.write(root_toc)
            trailer = Trailer.contiguous(data_len, sum(toc_lens) + len(root_toc), root, crc, threshold)
            if frames is not None:
                trailer = Trailer.compressed(frames.close(root), crc, threshold)
        finally:
            if frames is not None:
                frames.abort()
        f.write(trailer.pack(head))


def _root_node(
    inputs: list[Input], keys: list[bytes], header: bytes, threshold: int, toc_base: int
) -> tuple[tuple[int, int], bytes]:
    """The new root's node (position, length) and the TOC bytes holding it (after the copied
    TOCs, which take ``toc_base`` bytes): each input with a root node is a child."""
    n = len(inputs)
    offs, kids = entries_layout(inputs, keys, len(header), 0)
    if not kids and (offs[-1] <= whole_max(threshold) or not n):
        return (0, 0), b""  # small: the root is read whole, as dump() would write it
    builder = TocBuilder(b"", threshold, toc_base=toc_base)
    if not keys or not keys[0]:
        starts, span_offs, span_kids = builder.spans(offs, n, kids)
        root = builder.add_list(n, starts, span_offs, span_kids)
    elif n <= MAP_INLINE_MAX:
        voffs = [o + len(k) for o, k in zip(offs, keys, strict=False)]
        root = builder.add_node(MapNode(keys=entry_names(inputs), koffs=offs, voffs=voffs, kids=builder.refs(kids)))
    else:
        names = entry_names(inputs)
        entry_kids = {j: (names[j], ref) for j, ref in kids.items()}
        root = builder.hash_node(n, offs, entry_kids, builder.hash_index(keys, offs))
    return root, bytes(builder.toc)


def entries_layout(
    inputs: list[Input], keys: list[bytes], data_at: int, toc_at: int
) -> tuple[list[int], dict[int, tuple[int, int]]]:
    """Where the inputs go in the new root container, from its offset ``data_at`` (their entry
    offsets plus the end), and their root nodes in the new TOC, whose copies of the inputs'
    TOCs start at ``toc_at``."""
    offs, kids = [data_at], {}
    for j, (key, part) in enumerate(zip(keys, inputs, strict=True)):
        t = part.trailer
        if t.root_len:
            kids[j] = (toc_at + t.root_pos, t.root_len)
        offs.append(offs[-1] + len(key) + t.data_len)
        toc_at += t.live_toc_len
    return offs, kids


def entry_keys(inputs: list[Input], as_dict: bool) -> list[bytes]:
    """Each input's key as msgpack (what precedes its data in a dict; nothing in a list)."""
    return [key_encoder.encode(part.name) for part in inputs] if as_dict else [b""] * len(inputs)


def entry_names(inputs: list[Input]) -> list[str | int]:
    """The inputs' names as the keys of a dict (``check_names``: a dict's inputs all have one)."""
    return cast("list[str | int]", [part.name for part in inputs])


def copy_entries(
    keys: list[bytes],
    inputs: list[Input],
    f: Sink,
    buf: bytearray,
    progress: Callable[[int], None],
    crc: int,
    outcome: str,
) -> int:
    """Write each key and input's data section, checking the input's data checksum (else
    ``CorruptedError``, saying ``outcome``); returns ``crc`` extended by what was written."""
    for key, part in zip(keys, inputs, strict=True):
        f.write(key)
        t = part.trailer
        if copy_data(part.archive, t.data_off, t.data_len, f, buf, progress) != t.data_crc:
            raise CorruptedError(f"{part.label}: data section checksum mismatch; {outcome}")
    return entries_crc(keys, inputs, crc)


def entries_crc(keys: list[bytes], inputs: list[Input], crc: int) -> int:
    """``crc`` extended by each key and input's data section, from the checksums the inputs'
    trailers claim (``copy_entries`` checks them against the bytes)."""
    for key, part in zip(keys, inputs, strict=True):
        crc = crc32_combine(zlib.crc32(key, crc), part.trailer.data_crc, part.trailer.data_len)
    return crc


def copy_tocs(inputs: list[Input], f: Sink, buf: bytearray, progress: Callable[[int], None]) -> None:
    """Write each input's TOC up to its root node (every node a root can refer to)."""
    for part in inputs:
        copy_range(
            part.archive, part.trailer.toc_off, part.trailer.live_toc_len, f, buf, checksum=False, progress=progress
        )


def copy_range(
    archive: Archive, offset: int, size: int, f: Sink, buf: bytearray, checksum: bool, progress: Callable[[int], None]
) -> int:
    """Copy ``size`` bytes of an input from ``offset`` to ``f`` through ``buf``; returns their
    CRC-32 when ``checksum``."""
    return copy_plain(archive, offset, size, f, buf, progress, checksum=checksum)
