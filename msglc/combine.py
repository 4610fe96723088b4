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
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import msgspec

from .bulk import crc32_combine, data_crc32
from .config import current
from .errors import CorruptedError
from .format import (
    HEADER_SIZE,
    HashMapNode,
    ListNode,
    MapNode,
    Trailer,
    array_header,
    map_header,
    pack_header,
)
from .indexer import MAP_INLINE_MAX, TocBuilder
from .reader import Archive, LazyReader
from .remote import resolve_name
from .writer import check_target, dumps, output
from .writer import dump as dump_decoded

if TYPE_CHECKING:
    from .append import Existing

COPY_CHUNK = 1 << 24
_MISSING = object()
key_encoder = msgspec.msgpack.Encoder()


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


class Input:
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
    check_names(infos)
    check_target(archive, "combine")
    if mode == "a":
        from .append import append

        return append(archive, infos, progress=progress, **options)
    combine_into(archive, infos, None, options, progress)


def combine_into(
    archive: Any,
    infos: list[FileInfo],
    existing: Existing | None,
    options: dict[str, Any],
    progress: Any = None,
    as_dict: bool | None = None,
    wide: bool = False,
    create: bool = False,
) -> None:
    """Write ``infos`` [after the entries of ``existing``] as one archive at ``archive``;
    ``wide``: give the root a 5-byte header, so that later appends fit in place; ``create``:
    raise ``FileExistsError`` rather than replace a file that appeared meanwhile."""
    cfg = current(**options)
    with opened(infos, options) as inputs:
        refuse_target_among(archive, inputs)
        if as_dict is None:
            as_dict = existing.is_map if existing is not None else bool(infos) and infos[0].name is not None
        _write(archive, inputs, as_dict, cfg, existing, progress or (lambda n: None), wide, create)


@contextmanager
def opened(infos: list[FileInfo], options: dict[str, Any]) -> Iterator[list[Input]]:
    """The inputs opened (each checked: header, trailer, version), closed when done."""
    inputs: list[Input] = []
    try:
        for info in infos:
            inputs.append(Input(info, options))
        yield inputs
    finally:
        for part in inputs:
            part.close()


def refuse_target_among(target: Any, inputs: list[Input]) -> None:
    """An output may not be one of its inputs (by file identity, so a symlink or another name
    counts): writing it would replace, or change in place, what is being copied."""
    try:
        if isinstance(target, (str, bytes, os.PathLike)):
            st = os.stat(target)
        elif hasattr(target, "fileno"):  # a file object: is it open on an input?
            st = os.fstat(target.fileno())
        else:
            return
    except (OSError, ValueError):  # not there yet, or no descriptor: no input is it
        return
    for part in inputs:
        if part.archive.src.identity() == (st.st_dev, st.st_ino):
            raise ValueError(f"{part.label} is the output {_label(target)} itself: write to another file")


def _label(target: Any) -> str:
    return repr(os.fsdecode(target)) if isinstance(target, (str, bytes, os.PathLike)) else repr(target)


def check_names(infos: list[Any]) -> None:
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


def _write(
    path: Any,
    inputs: list[Input],
    as_dict: bool,
    cfg: Any,
    existing: Existing | None,
    progress: Callable[[int], None],
    wide: bool,
    create: bool,
) -> None:
    """Write the combined archive: [the existing root's entries,] then the inputs."""
    keys = entry_keys(inputs, as_dict)
    kept = existing.n if existing is not None else 0
    header = (map_header if as_dict else array_header)(kept + len(inputs), wide)
    body = existing.t.data_len - existing.h if existing is not None else 0  # the existing entries' bytes
    data_len = len(header) + body + sum(len(k) + part.trailer.data_len for k, part in zip(keys, inputs, strict=True))
    kept_toc = existing.toc_len if existing is not None else 0
    toc_lens = [kept_toc] + [part.trailer.live_toc_len for part in inputs]
    threshold = cfg.small_obj_optimization_threshold
    if existing is None:
        root, root_toc = _root_node(inputs, keys, header, threshold, sum(toc_lens))
    else:
        root, root_toc = existing.root_node(inputs, keys, header, threshold, sum(toc_lens))
    with output(path, cfg.durable, HEADER_SIZE + data_len + sum(toc_lens) + len(root_toc), replace=not create) as f:
        head = pack_header()
        f.write(head)
        f.write(header)
        crc = zlib.crc32(header)
        sizes = [part.trailer.data_len for part in inputs] + toc_lens + [body, 1]
        buf = bytearray(min(COPY_CHUNK, max(sizes)))
        if existing is not None:
            t = existing.t
            body_crc = copy_range(existing.archive, t.data_off + existing.h, body, f, buf, checksum=True, progress=progress)
            if crc32_combine(zlib.crc32(existing.head), body_crc, body) != t.data_crc:
                raise CorruptedError(f"{os.fspath(path)!r}: data section checksum mismatch; nothing was changed")
            crc = crc32_combine(crc, body_crc, body)
        crc = copy_entries(keys, inputs, f, buf, progress, crc, "nothing was written")
        if existing is not None:
            copy_range(existing.archive, existing.t.toc_off, existing.toc_len, f, buf, checksum=False, progress=progress)
        copy_tocs(inputs, f, buf, progress)
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


def _root_node(inputs: list[Input], keys: list[bytes], header: bytes, threshold: int, toc_base: int) -> tuple[tuple[int, int], bytes]:
    """The new root's node (position, length) and the TOC bytes holding it (after the copied
    TOCs, which take ``toc_base`` bytes): each input with a root node is a child."""
    n = len(inputs)
    offs, kids = entries_layout(inputs, keys, len(header), 0)
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


def entries_layout(inputs: list[Input], keys: list[bytes], data_at: int, toc_at: int) -> tuple[list[int], dict[int, tuple[int, int]]]:
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


def copy_entries(keys: list[bytes], inputs: list[Input], f: Any, buf: bytearray, progress: Any, crc: int, outcome: str) -> int:
    """Write each key and input's data section, checking the input's data checksum (else
    ``CorruptedError``, saying ``outcome``); returns ``crc`` extended by what was written."""
    for key, part in zip(keys, inputs, strict=True):
        f.write(key)
        t = part.trailer
        if copy_range(part.archive, t.data_off, t.data_len, f, buf, checksum=True, progress=progress) != t.data_crc:
            raise CorruptedError(f"{part.label}: data section checksum mismatch; {outcome}")
    return entries_crc(keys, inputs, crc)


def entries_crc(keys: list[bytes], inputs: list[Input], crc: int) -> int:
    """``crc`` extended by each key and input's data section, from the checksums the inputs'
    trailers claim (``copy_entries`` checks them against the bytes)."""
    for key, part in zip(keys, inputs, strict=True):
        crc = crc32_combine(zlib.crc32(key, crc), part.trailer.data_crc, part.trailer.data_len)
    return crc


def copy_tocs(inputs: list[Input], f: Any, buf: bytearray, progress: Any) -> None:
    """Write each input's TOC up to its root node (every node a root can refer to)."""
    for part in inputs:
        copy_range(part.archive, part.trailer.toc_off, part.trailer.live_toc_len, f, buf, checksum=False, progress=progress)


def copy_range(archive: Archive, offset: int, size: int, f: Any, buf: bytearray, checksum: bool, progress: Callable[[int], None]) -> int:
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


def compacted(a: Archive) -> Iterator[bytes | memoryview]:
    """The whole archive without the free space and unreferenced TOC bytes ``append`` leaves:
    its data, its TOC up to the root node and a new trailer, as ``dump`` or ``combine`` would
    have written them. (After an append that was killed, the TOC it had copied before the old
    root node stays, unreferenced, until the next append.)"""
    if a.closed:
        raise ValueError("I/O operation on a closed LazyReader")
    t = a.trailer
    head = pack_header()
    yield head
    yield a.read(t.data_off, t.data_len)
    yield a.read(t.toc_off, t.live_toc_len)
    yield msgspec.structs.replace(t, toc_off=HEADER_SIZE + t.data_len, toc_len=t.live_toc_len).pack(head)


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
        parts: Iterator = compacted(a)
    else:
        parts = standalone(source)
    with output(target, cfg.durable) as f:
        for part in parts:
            f.write(part)
