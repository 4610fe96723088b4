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
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import msgspec

from .bulk import crc32_combine, data_crc32
from .config import current
from .errors import CorruptedError
from .format import (
    HEADER_SIZE,
    HashMapNode,
    ListNode,
    MapNode,
    StrideNode,
    Trailer,
    array_header,
    container_header,
    map_header,
    pack_header,
)
from .indexer import MAP_INLINE_MAX, TocBuilder, _le_array
from .reader import Archive, LazyReader
from .remote import RemotePath, resolve_name
from .writer import atomic_file, dumps, is_named
from .writer import dump as dump_decoded

COPY_CHUNK = 1 << 24
_MISSING = object()
_key_encoder = msgspec.msgpack.Encoder()


class FileInfo:
    """One input of ``combine``: an archive (a path, bytes, a binary file or an open
    ``LazyReader``) or, with ``obj=``, a Python object to store; ``name`` is its key (str or
    int) in the combined dict (leave every name out for a list)."""

    __slots__ = ("path", "name", "obj")

    def __init__(self, path: Any = None, name: str | None = None, *, obj: Any = _MISSING) -> None:
        if (path is None) == (obj is _MISSING):
            raise ValueError("FileInfo needs either an archive (path, bytes, file or LazyReader) or obj=, not both")
        if name is not None and (not isinstance(name, (str, int)) or isinstance(name, bool)):
            raise TypeError(f"FileInfo name must be a str or an int (a dict key), not {type(name).__name__}")
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


def combine(
    archive: str | os.PathLike,
    files: FileInfo | Sequence[FileInfo],
    *,
    mode: str = "w",
    progress: Callable[[int], None] | None = None,
    fs: Any = None,
    storage_options: dict | None = None,
    **options: Any,
) -> None:
    """Write one archive holding the archives ``files``: a dict if every ``FileInfo`` has a
    name, a list if none has. Their bytes are copied, never decoded; read the result with the
    same paths as before, under the name or index: ``reader["run1/energy/3"]``.

    ``mode="w"`` writes a new archive (atomically, like ``dump``); ``mode="a"`` is ``append``.
    ``progress(n)`` is called as bytes are copied. ``options``: as for ``dump`` (the
    threshold cuts the new root's spans and encodes ``obj=`` inputs); a remote ``archive``
    (URL with ``storage_options``, ``upath.UPath``, path with ``fs``) is streamed, as by
    ``dump``."""
    if mode not in ("w", "a"):
        raise ValueError(f"combine() mode must be 'w' (write) or 'a' (append), not {mode!r}")
    archive = resolve_name(archive, fs, storage_options)
    infos = [files] if isinstance(files, FileInfo) else list(files)
    _check_names(infos)
    if mode == "a":
        return append(archive, infos, progress=progress, **options)
    _combine(archive, infos, None, options, progress)


def append(
    archive: str | os.PathLike, files: FileInfo | Sequence[FileInfo], *, progress: Callable[[int], None] | None = None, **options: Any
) -> None:
    """Add entries to the archive at ``archive`` (its root a dict: named inputs; a list:
    unnamed ones), as ``combine`` would have written them all. The existing entries are copied
    as bytes, never decoded, into a new file that replaces the old one only when complete: if
    the process dies midway, the old archive is intact."""
    infos = [files] if isinstance(files, FileInfo) else list(files)
    _check_names(infos)
    archive = resolve_name(archive)
    if isinstance(archive, RemotePath):
        raise TypeError("append() needs a local archive: an object in object storage cannot be changed in place; combine() into a new one")
    if isinstance(archive, (str, os.PathLike)) and not os.path.exists(archive):
        return _combine(archive, infos, None, options, progress)  # nothing to append to yet
    existing = _Existing(archive)
    try:
        names = [info.name for info in infos]
        if infos and (names[0] is not None) != existing.is_map:
            raise ValueError(
                f"append() to an archive whose root is a {'dict' if existing.is_map else 'list'} takes {'named' if existing.is_map else 'unnamed'} inputs"
            )
        small = existing.small_root()  # a root without a node, decoded (checksum checked)
        taken = [name for name in names if name is not None and (name in small if small is not None else existing.has_key(name))]
        if taken:
            raise ValueError(f"append() input name {taken[0]!r} is already in {os.fspath(archive)!r}")
        if small is not None:  # its entries are re-encoded like obj= inputs
            kept = (
                [FileInfo(None, key, obj=value) for key, value in small.items()]
                if existing.is_map
                else [FileInfo(None, obj=v) for v in small]
            )
            existing.close()
            return _combine(archive, kept + infos, None, options, progress, as_dict=existing.is_map)
        _combine(archive, infos, existing, options, progress)
    finally:
        existing.close()


def _combine(
    archive: Any,
    infos: list[FileInfo],
    existing: _Existing | None,
    options: dict[str, Any],
    progress: Any = None,
    as_dict: bool | None = None,
) -> None:
    cfg = current(**options)
    inputs: list[_Input] = []
    try:
        for info in infos:
            inputs.append(_Input(info, options))
        if as_dict is None:
            as_dict = existing.is_map if existing is not None else bool(infos) and infos[0].name is not None
        _write(archive, inputs, as_dict, cfg, existing, progress or (lambda n: None))
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


def _write(path: Any, inputs: list[_Input], as_dict: bool, cfg: Any, existing: _Existing | None, progress: Callable[[int], None]) -> None:
    """Write the combined archive: [the existing root's entries,] then the inputs."""
    keys = [_key_encoder.encode(part.name) for part in inputs] if as_dict else [b""] * len(inputs)
    kept = existing.n if existing is not None else 0
    header = (map_header if as_dict else array_header)(kept + len(inputs))
    body = existing.t.data_len - existing.h if existing is not None else 0  # the existing entries' bytes
    data_len = len(header) + body + sum(len(k) + part.trailer.data_len for k, part in zip(keys, inputs, strict=True))
    kept_toc = existing.toc_len if existing is not None else 0
    toc_lens = [kept_toc] + [part.trailer.toc_len for part in inputs]
    threshold = cfg.small_obj_optimization_threshold
    if existing is None:
        root, root_toc = _root_node(inputs, keys, header, threshold, sum(toc_lens))
    else:
        root, root_toc = existing.root_node(inputs, keys, header, threshold, sum(toc_lens))
    with atomic_file(path, cfg.durable, HEADER_SIZE + data_len + sum(toc_lens) + len(root_toc)) as f:
        head = pack_header()
        f.write(head)
        f.write(header)
        crc = zlib.crc32(header)
        sizes = [part.trailer.data_len for part in inputs] + toc_lens + [body, 1]
        buf = bytearray(min(COPY_CHUNK, max(sizes)))
        if existing is not None:
            t = existing.t
            body_crc = _copy(existing.archive, t.data_off + existing.h, body, f, buf, checksum=True, progress=progress)
            if crc32_combine(zlib.crc32(existing.head), body_crc, body) != t.data_crc:
                raise CorruptedError(f"{os.fspath(path)!r}: data section checksum mismatch; nothing was changed")
            crc = crc32_combine(crc, body_crc, body)
        for key, part in zip(keys, inputs, strict=True):
            f.write(key)
            t = part.trailer
            part_crc = _copy(part.archive, t.data_off, t.data_len, f, buf, checksum=True, progress=progress)
            if part_crc != t.data_crc:
                raise CorruptedError(f"{part.label}: data section checksum mismatch; nothing was written")
            crc = crc32_combine(zlib.crc32(key, crc), part_crc, t.data_len)
        if existing is not None:
            _copy(existing.archive, existing.t.toc_off, existing.toc_len, f, buf, checksum=False, progress=progress)
        for part in inputs:
            _copy(part.archive, part.trailer.toc_off, part.trailer.toc_len, f, buf, checksum=False, progress=progress)
        f.write(root_toc)
        trailer = Trailer(
            data_off=HEADER_SIZE,
            data_len=data_len,
            toc_off=HEADER_SIZE + data_len,
            toc_len=sum(toc_lens) + len(root_toc),
            root_pos=root[0],
            root_len=root[1],
            data_crc=crc,
            threshold=threshold,
        )
        f.write(trailer.pack(head))


class _Existing:
    """The archive ``append`` adds to: its root's header, node and entries, kept as bytes."""

    def __init__(self, path: Any) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"append() needs the path of an archive, not {type(path).__name__}")
        self.archive = Archive(path, False, None)
        try:
            self._open(path)
        except BaseException:
            self.close()
            raise

    def _open(self, path: Any) -> None:
        self.t = t = self.archive.trailer
        self.head = bytes(self.archive.read(t.data_off, min(5, t.data_len)))
        try:
            self.is_map, self.n, self.h = container_header(self.head)
        except CorruptedError:
            raise ValueError(f"append() needs an archive whose root is a dict or a list ({os.fspath(path)!r} holds neither)") from None
        self.head = self.head[: self.h]
        self.pos = t.toc_off + t.root_pos
        self.node = self.archive.node(self.pos, t.root_len) if t.root_len else None
        self.view = self.archive.view(t.data_off, t.data_len, self.pos, t.root_len) if t.root_len else None
        # the TOC kept: everything before the old root node (and its index region), which the
        # new root node replaces; the root's descendants all precede it
        end = self.pos - t.toc_off
        if isinstance(self.node, HashMapNode):
            end = min(end, end - self.node.index[0])
        self.toc_len = end if t.root_len else 0

    def small_root(self) -> Any:
        """The whole root when it has no node (it is small), its data checksum checked."""
        if self.node is not None:
            return None
        t = self.t
        data = self.archive.read(t.data_off, t.data_len)
        if zlib.crc32(data) != t.data_crc:
            raise CorruptedError(f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off}); nothing was changed")
        return self.archive.decode(data, t.data_off)

    def close(self) -> None:
        self.archive.close()

    def has_key(self, name: str | int) -> bool:
        return name in self.view

    def _abs(self, kids: dict) -> dict:
        """Kid references as absolute TOC positions (the existing TOC is copied first)."""
        return {k: (self.pos - self.t.toc_off - back, size) for k, (back, size) in kids.items()}

    def root_node(
        self, inputs: list[_Input], keys: list[bytes], header: bytes, threshold: int, toc_base: int
    ) -> tuple[tuple[int, int], bytes]:
        """The new root node: the existing entries' layout shifted by the header's growth,
        followed by the inputs'."""
        shift = len(header) - self.h
        node = self.node
        offs_new, kids_new = _layout(inputs, keys, self.t.data_len + shift, self.toc_len)  # after the kept entries and TOC
        builder = TocBuilder(b"", threshold, toc_base=toc_base)
        n = self.n + len(inputs)
        if isinstance(node, (ListNode, StrideNode)):
            if isinstance(node, StrideNode) and len(node.dims) > 1 and node.dims[0][2] > threshold:
                h0, n0, s0 = node.dims[0]  # rows keep a node: one fixed-stride node all of them share
                row = builder._add(StrideNode(dims=node.dims[1:], lazy_min=node.lazy_min))
                starts, offs, kids = list(range(n0)), list(range(h0, h0 + n0 * s0 + 1, s0)), dict.fromkeys(range(n0), row)
            elif isinstance(node, StrideNode):
                h0, n0, s0 = node.dims[0]
                starts, offs, _ = builder._spans(range(h0, h0 + n0 * s0 + 1, s0), n0, {})
                kids = {}
            else:
                starts, offs, kids = node.starts, node.offs, self._abs(node.kids)
            new_starts, new_offs, new_kids = builder._spans(offs_new, len(inputs), kids_new)
            kids.update({len(starts) + k: ref for k, ref in new_kids.items()})
            starts = [*starts, *(self.n + s for s in new_starts)]
            offs = [o + shift for o in offs[:-1]] + new_offs
            return builder._add(ListNode(n=n, starts=starts, offs=offs, kids=builder._refs(kids))), bytes(builder.toc)
        koffs, hashes, entry_kids = self._entries(node, shift)
        koffs = koffs[:-1] + offs_new
        hashes += [zlib.crc32(k) for k in keys]
        entry_kids.update({self.n + j: (inputs[j].name, ref) for j, ref in kids_new.items()})
        if n <= MAP_INLINE_MAX:  # the existing root is an inline dict: its keys are in its node
            names = [*node.keys, *(part.name for part in inputs)]
            voffs = [o + shift for o in node.voffs] + [o + len(k) for o, k in zip(offs_new, keys, strict=False)]
            kids = {j: ref for j, (_, ref) in entry_kids.items()}
            return builder._add(MapNode(keys=names, koffs=koffs, voffs=voffs, kids=builder._refs(kids))), bytes(builder.toc)
        return builder._hash_node(n, koffs, entry_kids, builder.hash_index_of(hashes, koffs)), bytes(builder.toc)

    def _entries(self, node: Any, shift: int) -> tuple[list[int], list[int], dict[int, tuple[Any, tuple[int, int]]]]:
        """Entry offsets (plus the end), key hashes and large values of the existing dict."""
        if isinstance(node, MapNode):
            hashes = [zlib.crc32(_key_encoder.encode(k)) for k in node.keys]
            kids = {j: (node.keys[j], ref) for j, ref in self._abs(node.kids).items()}
            return [o + shift for o in node.koffs], hashes, kids
        width, n = node.offs_width, node.n
        region = self.pos - node.index[0]
        koffs = _le_array("I" if width == 4 else "Q", bytes(self.archive.read(region, (n + 1) * width)))
        records = _le_array("Q", bytes(self.archive.read(region + (n + 1) * width + ((1 << node.page_bits) + 1) * 8, 8 * n)))
        hashes = [0] * n
        for record in records:
            hashes[record & 0xFFFFFFFF] = record >> 32
        by_span = {k: key for key, k in node.kid_keys.items()}
        kids = {node.starts[k]: (by_span[k], ref) for k, ref in self._abs(node.kids).items()}
        return [o + shift for o in koffs], hashes, kids


def _root_node(inputs: list[_Input], keys: list[bytes], header: bytes, threshold: int, toc_base: int) -> tuple[tuple[int, int], bytes]:
    """The new root's node (position, length) and the TOC bytes holding it (after the copied
    TOCs, which take ``toc_base`` bytes): each input with a root node is a child."""
    n = len(inputs)
    offs, kids = _layout(inputs, keys, len(header), 0)
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


def _layout(inputs: list[_Input], keys: list[bytes], data_at: int, toc_at: int) -> tuple[list[int], dict[int, tuple[int, int]]]:
    """Where the inputs go in the new root container, from its offset ``data_at`` (their entry
    offsets plus the end), and their root nodes in the new TOC, whose copies of the inputs'
    TOCs start at ``toc_at``."""
    offs, kids = [data_at], {}
    for j, (key, part) in enumerate(zip(keys, inputs, strict=True)):
        t = part.trailer
        if t.root_len:
            kids[j] = (toc_at + t.root_pos, t.root_len)
        offs.append(offs[-1] + len(key) + t.data_len)
        toc_at += t.toc_len
    return offs, kids


def _copy(archive: Archive, offset: int, size: int, f: Any, buf: bytearray, checksum: bool, progress: Callable[[int], None]) -> int:
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
        progress(len(chunk))
    return crc


# ---- the reverse: one part as an archive of its own, and repacking --------------------------


def standalone(view: Any) -> Iterator[bytes | memoryview]:
    """The bytes of an archive holding just the lazy part ``view``: its data and its TOC
    subtree copied (every TOC reference is relative), a new trailer. A row of a fixed-stride
    list has no node of its own and is re-encoded instead. The bytes are copied as they are:
    the source's data checksum covers its whole data section and is not checked here (run
    ``verify()`` on the source first when that matters)."""
    a = view._a
    if a.closed:
        raise ValueError("I/O operation on a closed LazyReader")
    size = view._nsize
    if not size:  # a row of a fixed-stride list: no node of its own
        yield dumps(view.to_obj(), small_obj_optimization_threshold=a.trailer.threshold)
        return
    lo, end = _subtree_range(a, view._pos, size)
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


def _subtree_range(a: Archive, pos: int, size: int) -> tuple[int, int]:
    """The TOC range [lo, end) holding the node at ``pos`` and everything it refers to."""
    lo = pos
    for here, node in a.walk(pos, size):
        lo = min(lo, here - node.index[0] if isinstance(node, HashMapNode) else here)
    return lo, pos + size


def repack(target: Any, source: Any, options: dict[str, Any]) -> None:
    """``dump(target, reader_or_lazy_part)``: copy the encoded bytes when the threshold is the
    source's (for a part that ``dump`` wrote, the result is what ``dump`` of the decoded value
    writes), else decode and write anew."""
    a = source._a
    cfg = current(**options)
    if cfg.small_obj_optimization_threshold != a.trailer.threshold:
        return dump_decoded(target, source.to_obj(), **options)
    if isinstance(source, LazyReader):
        parts: Iterator = iter([a.read(0, a.src.size)])
    else:
        parts = standalone(source)
    if is_named(target):
        with atomic_file(target, cfg.durable) as f:
            for part in parts:
                f.write(part)
    else:
        for part in parts:
            target.write(part)
