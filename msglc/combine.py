"""Gather archives into one without decoding them: ``combine`` and ``FileInfo``.

The combined archive's root is a dict (every input named) or a list (none named) whose values
are the inputs' data sections, copied byte for byte; each input's TOC is copied whole, and a
new root node refers to the inputs' root nodes. That works because every offset in a TOC is
relative (docs/format.md): a subtree's data and nodes stay valid wherever they are copied.
Inputs are checked while they are copied (their data checksum) and refused before the output
exists if they are not archives, are truncated or are of an unknown version.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec

from .bulk import crc32_combine, data_crc32
from .config import current
from .errors import CorruptedError
from .format import HEADER_SIZE, HashMapNode, ListNode, MapNode, Trailer, array_header, map_header, node_span, pack_header
from .indexer import MAP_INLINE_MAX, TocBuilder
from .reader import Archive, LazyReader
from .writer import atomic_file, dumps
from .writer import dump as dump_decoded

COPY_CHUNK = 1 << 24
_MISSING = object()
_key_encoder = msgspec.msgpack.Encoder()


class FileInfo:
    """One input of ``combine``: an archive (a path, bytes, a binary file or an open
    ``LazyReader``) or, with ``obj=``, a Python object to store; ``name`` is its key in the
    combined dict (leave every name out for a list)."""

    __slots__ = ("path", "name", "obj")

    def __init__(self, path: Any = None, name: str | None = None, *, obj: Any = _MISSING) -> None:
        if (path is None) == (obj is _MISSING):
            raise ValueError("FileInfo needs either an archive (path, bytes, file or LazyReader) or obj=, not both")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"FileInfo name must be a str, not {type(name).__name__}")
        self.path = path
        self.name = name
        self.obj = obj

    def __repr__(self) -> str:
        what = f"obj={type(self.obj).__name__}" if self.path is None else repr(self.path)
        return f"FileInfo({what}, name={self.name!r})"


class _Input:
    """An opened input: its archive and whether this module opened it (and must close it)."""

    def __init__(self, info: FileInfo, options: dict[str, Any]) -> None:
        self.name = info.name
        self.label = repr(info)
        self.owned = not isinstance(info.path, LazyReader)
        if info.path is None:
            self.archive = Archive(dumps(info.obj, **options), False, None)
        elif isinstance(info.path, LazyReader):
            self.archive = info.path._a
            if self.archive.closed:
                raise ValueError(f"{self.label}: the LazyReader is closed")
        else:
            self.archive = Archive(info.path, False, None)
        self.trailer: Trailer = self.archive.trailer

    def close(self) -> None:
        if self.owned:
            self.archive.close()


def combine(archive: str | os.PathLike, files: FileInfo | Sequence[FileInfo], *, mode: str = "w", **options: Any) -> None:
    """Write one archive holding the archives ``files``: a dict if every ``FileInfo`` has a
    name, a list if none has. Their bytes are copied, never decoded; read the result with the
    same paths as before, under the name or index: ``reader["run1/energy/3"]``.

    ``mode="w"`` writes a new archive (atomically, like ``dump``). ``options``: as for
    ``dump`` (the threshold cuts the new root's spans and encodes ``obj=`` inputs)."""
    if mode != "w":
        raise ValueError(f"combine() mode must be 'w' (use msglc.append to add to an archive), not {mode!r}")
    infos = [files] if isinstance(files, FileInfo) else list(files)
    _check_names(infos)
    cfg = current(**options)
    inputs: list[_Input] = []
    try:
        for info in infos:
            inputs.append(_Input(info, options))
        _write(archive, inputs, infos[0].name is not None if infos else False, cfg)
    finally:
        for part in inputs:
            part.close()


def _check_names(infos: list[Any]) -> None:
    if not all(isinstance(info, FileInfo) for info in infos):
        bad = next(info for info in infos if not isinstance(info, FileInfo))
        raise TypeError(f"combine() takes FileInfo inputs, not {type(bad).__name__}")
    named = [info.name is not None for info in infos]
    if any(named) and not all(named):
        raise ValueError("combine() inputs must all have a name (a dict) or none (a list)")
    names = [info.name for info in infos if info.name is not None]
    if len(set(names)) != len(names):
        repeated = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"combine() input name {repeated!r} is used more than once")


def _write(path: Any, inputs: list[_Input], as_dict: bool, cfg: Any) -> None:
    keys = [_key_encoder.encode(part.name) for part in inputs] if as_dict else [b""] * len(inputs)
    header = (map_header if as_dict else array_header)(len(inputs))
    lens = [len(k) + part.trailer.data_len for k, part in zip(keys, inputs, strict=True)]
    data_len = len(header) + sum(lens)
    toc_lens = [part.trailer.toc_len for part in inputs]
    root, root_toc = _root_node(inputs, keys, header, cfg.small_obj_optimization_threshold, sum(toc_lens))
    with atomic_file(path, cfg.durable, HEADER_SIZE + data_len + sum(toc_lens) + len(root_toc)) as f:
        head = pack_header()
        f.write(head)
        f.write(header)
        crc = zlib.crc32(header)
        buf = bytearray(min(COPY_CHUNK, max([part.trailer.data_len for part in inputs] + toc_lens + [1])))
        for key, part in zip(keys, inputs, strict=True):
            f.write(key)
            t = part.trailer
            part_crc = _copy(part.archive, t.data_off, t.data_len, f, buf, checksum=True)
            if part_crc != t.data_crc:
                raise CorruptedError(f"{part.label}: data section checksum mismatch; nothing was written")
            crc = crc32_combine(zlib.crc32(key, crc), part_crc, t.data_len)
        for part in inputs:
            _copy(part.archive, part.trailer.toc_off, part.trailer.toc_len, f, buf, checksum=False)
        f.write(root_toc)
        trailer = Trailer(
            data_off=HEADER_SIZE,
            data_len=data_len,
            toc_off=HEADER_SIZE + data_len,
            toc_len=sum(toc_lens) + len(root_toc),
            root_pos=root[0],
            root_len=root[1],
            data_crc=crc,
            threshold=cfg.small_obj_optimization_threshold,
        )
        f.write(trailer.pack(head))


def _root_node(inputs: list[_Input], keys: list[bytes], header: bytes, threshold: int, toc_base: int) -> tuple[tuple[int, int], bytes]:
    """The new root's node (position, length) and the TOC bytes holding it (after the copied
    TOCs, which take ``toc_base`` bytes): each input with a root node is a child."""
    n = len(inputs)
    kids: dict[int, tuple[int, int]] = {}
    base = 0
    for j, part in enumerate(inputs):
        t = part.trailer
        if t.root_len:
            kids[j] = (base + t.root_pos, t.root_len)
        base += t.toc_len
    offs = [len(header)]
    for key, part in zip(keys, inputs, strict=True):
        offs.append(offs[-1] + len(key) + part.trailer.data_len)
    if not kids and offs[-1] <= threshold:
        return (0, 0), b""  # small: the root is read whole, as dump() would write it
    builder = TocBuilder(b"", threshold, toc_base=toc_base)
    if not keys or not keys[0]:
        starts, span_offs, span_kids = builder._spans(offs, n, kids)
        root = builder._add(ListNode(n=n, starts=starts, offs=span_offs, kids=builder._refs(span_kids)))
    elif n <= MAP_INLINE_MAX:
        voffs = [o + len(k) for o, k in zip(offs, keys, strict=False)]
        names = [part.name for part in inputs]
        root = builder._add(MapNode(keys=names, koffs=offs, voffs=voffs, kids=builder._refs(kids)))
    else:
        entry_kids = {j: (inputs[j].name, ref) for j, ref in kids.items()}
        root = builder._hash_node(n, offs, entry_kids, builder._hash_index(keys, offs))
    return root, bytes(builder.toc)


def _copy(archive: Archive, offset: int, size: int, f: Any, buf: bytearray, checksum: bool) -> int:
    """Copy ``size`` bytes of an input from ``offset`` to ``f`` through ``buf``; returns their
    CRC-32 when ``checksum``."""
    crc32 = data_crc32()
    view = memoryview(buf)
    crc = 0
    done = 0
    while done < size:
        chunk = view[: min(len(view), size - done)]
        archive.src.read_into(offset + done, chunk)
        f.write(chunk)
        if checksum:
            crc = crc32(chunk, crc)
        done += len(chunk)
    return crc


# ---- the reverse: one part as an archive of its own, and repacking --------------------------


def standalone(view: Any) -> Iterator[bytes | memoryview]:
    """The bytes of an archive holding just the lazy part ``view``: its data and its TOC
    subtree copied (every TOC reference is relative), a new trailer. A row of a fixed-stride
    list has no node of its own and is re-encoded instead."""
    a = view._a
    if a.closed:
        raise ValueError("I/O operation on a closed LazyReader")
    node = a.nodes.get(view._pos)
    if node is None or node_span(node) != view._span():
        yield dumps(view.to_obj(), small_obj_optimization_threshold=a.trailer.threshold)
        return
    lo, end = _subtree_range(a, view._pos)
    data = a.read(view._base, view._span())
    head = pack_header()
    span = view._span()
    yield head
    yield data
    yield a.read(lo, end - lo)
    yield Trailer(
        data_off=HEADER_SIZE,
        data_len=span,
        toc_off=HEADER_SIZE + span,
        toc_len=end - lo,
        root_pos=view._pos - lo,
        root_len=end - view._pos,
        data_crc=data_crc32()(data),
        threshold=a.trailer.threshold,
    ).pack(head)


def _subtree_range(a: Archive, pos: int) -> tuple[int, int]:
    """The TOC range [lo, end) holding the node at ``pos`` and everything it refers to."""
    end = pos + a.node_sizes[pos]
    lo = pos
    stack = [pos]
    while stack:
        here = stack.pop()
        node = a.nodes.get(here) or a.node(here, a.node_sizes[here])
        refs = list(getattr(node, "kids", {}).values())
        if isinstance(node, HashMapNode):
            lo = min(lo, here - node.index[0])
        for back, size in refs:
            child = here - back
            if back <= 0 or child + size > here:
                raise CorruptedError(f"TOC node at offset {here} references a node at {child} that does not precede it")
            a.node(child, size)
            lo = min(lo, child)
            stack.append(child)
    return lo, end


def repack(target: Any, source: Any, options: dict[str, Any]) -> None:
    """``dump(target, reader_or_lazy_part)``: copy the encoded bytes when the threshold is the
    source's (the result is then what ``dump`` of the decoded value writes), else decode and
    write anew."""
    a = source._a
    cfg = current(**options)
    if cfg.small_obj_optimization_threshold != a.trailer.threshold:
        return dump_decoded(target, source.to_obj(), **options)
    if isinstance(source, LazyReader):
        parts: Iterator = iter([a.read(0, a.src.size)])
    else:
        parts = standalone(source)
    if isinstance(target, (str, bytes, os.PathLike)):
        with atomic_file(target, cfg.durable) as f:
            for part in parts:
                f.write(part)
    else:
        for part in parts:
            target.write(part)
