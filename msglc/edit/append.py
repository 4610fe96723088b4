"""Add entries to a combined archive in place: ``append``.

The data section stays one piece of plain msgpack, so the new entries go where the TOC was and
the TOC moves past them. The file is a valid archive at every moment: the header's committed
end (docs/format.md, "Appending in place") says which trailer counts, and it changes by one
small write, made only once everything that trailer needs is on disk. The existing entries
are neither read nor moved; the TOC is copied.

A compressed archive (2.x) is rewritten instead, atomically like ``dump``: its root header sits
inside a zstd frame and its index ends the file, so no small write can commit a new count. Its
data frames are copied as they are (only the one holding the root header is written anew),
the new entries are compressed (or copied, from compressed inputs) after them, and the TOC
frames, page tables and index are new.
"""

from __future__ import annotations

import errno
import io
import itertools
import os
import shutil
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import IO, Any, cast

import msgspec

from msglc.config import Config, current, refuse_order
from msglc.edit.combine import (
    combine_into,
    copy_entries,
    copy_range,
    copy_tocs,
    entries_crc,
    entries_layout,
    entry_keys,
    entry_names,
    key_encoder,
)
from msglc.edit.inputs import (
    COPY_CHUNK,
    FileInfo,
    Input,
    check_names,
    opened,
    refuse_target_among,
)
from msglc.errors import CorruptedError, UnsupportedVersionError
from msglc.format.hash_index import MAP_INLINE_MAX, entry_hashes, le_array, region_layout
from msglc.format.layout import (
    COMPRESSED,
    COMPRESSED_MINOR,
    HEADER_SIZE,
    MINOR,
    TRAILER_SIZE,
    Trailer,
    end_update,
    header_end,
    header_version,
    pack_header,
    without_end,
)
from msglc.format.msgpack import container_header, recount_header
from msglc.format.nodes import (
    ArrayNode,
    BlockHashMapNode,
    DirectMapNode,
    HashMapNode,
    ListNode,
    MapNode,
    PagedListNode,
    Ref,
    SpanPage,
    StrideNode,
    frame_node,
    whole_max,
)
from msglc.io.atomic import refuse_read_only
from msglc.io.names import RemotePath, resolve_name
from msglc.io.uploads import fetch_for_update, remote_target
from msglc.read.archive import Archive
from msglc.read.views import LazyDict, ViewCache, view
from msglc.util.checksum import crc32_combine
from msglc.write.encoder import Encoded
from msglc.write.indexer import TocBuilder

try:
    import fcntl
except ImportError:  # no advisory locks (Windows): concurrent appends are not serialized
    fcntl = None  # type: ignore[assignment]


def append(
    archive: str | os.PathLike[str] | IO[bytes],
    files: FileInfo | Sequence[FileInfo],
    *,
    validate: bool = True,
    progress: Callable[[int], None] | None = None,
    fs: Any = None,
    storage_options: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """Add entries to the archive at ``archive`` (its root a dict: named inputs; a list:
    unnamed ones), as ``combine`` would have written them all, in place: the existing entries
    stay where they are, the new ones follow them and the TOC moves past. If the process dies
    midway, readers see the old archive (the next append reuses what the dead one left).
    An archive whose root has no TOC node (it is small), or whose root header is too short
    for the new count (16 or 65,536 entries), is rewritten once instead, atomically; so is a
    compressed archive, every time (its frames copied, not recompressed). The archive keeps its
    compression: a ``compression=`` that differs is refused.

    ``archive`` may also be a readable, writable, seekable binary file object holding an
    archive from its start (``io.BytesIO``, a file opened "r+b"), or nothing: it is appended
    to through a temporary copy and rewritten whole, and left as it was if the append fails.
    ``validate``: the published msglc's switch; inputs are always checked
    (False is accepted and changes nothing)."""
    infos = [files] if isinstance(files, FileInfo) else list(files)
    check_names(infos)
    refuse_order(options, "append")
    archive = resolve_name(archive, fs, storage_options)
    if hasattr(archive, "write") and hasattr(archive, "read") and not isinstance(archive, (str, os.PathLike)):
        return _append_to_file(archive, infos, options, progress)
    if isinstance(archive, RemotePath):
        return _append_remote(archive, infos, options, progress)
    if not isinstance(archive, (str, os.PathLike)):
        raise TypeError(f"append() needs the path of an archive, not {type(archive).__name__}")
    while True:
        with _locked(archive) as f:
            if f is None:  # nothing to append to yet: create it, unless another append just did
                try:
                    return combine_into(archive, infos, None, options, progress, create=True)
                except FileExistsError:
                    continue
            existing = Existing(archive)
            try:
                return _append(archive, f.fileno(), existing, infos, options, progress or (lambda n: None))
            finally:
                existing.close()


def _append_remote(
    target: RemotePath, infos: list[FileInfo], options: dict[str, Any], progress: Callable[[int], None] | None
) -> None:
    """An archive in object storage, where nothing changes in place: downloaded to a local
    temporary copy, appended to there, and uploaded whole (``remote_target``: where the store
    commits on completion, S3 among them, a failure leaves the old object as it was). Whether
    there is an archive is decided by reading the object, never from a listing; on S3 the
    upload is pinned to the version read, so that an archive changed or created meanwhile by
    another writer fails this append (``ArchiveChangedError``) instead of being replaced."""
    current(**options)  # the options checked before any copy
    with tempfile.TemporaryDirectory(prefix="msglc-append-") as scratch:
        path = os.path.join(scratch, os.path.basename(target.path) or "remote.mlc")
        with open(path, "wb") as copy:
            found, target = fetch_for_update(target, copy)
        if not found:
            os.unlink(path)  # append creates the archive
        append(path, infos, progress=progress, **options)
        with open(path, "rb") as result, remote_target(target) as out:
            _copy_archive(result, out)


def _copy_archive(f: IO[bytes], out: IO[bytes]) -> None:
    """Copy the archive in ``f`` without the slack an append in place left past its end (an
    object is written whole: it needs none), its header's end cleared to say so."""
    head = f.read(HEADER_SIZE)
    end = header_end(head)
    if not end:
        out.write(head)
        shutil.copyfileobj(f, out, COPY_CHUNK)
        return
    out.write(without_end(head))
    left = end - HEADER_SIZE
    while left:
        chunk = f.read(min(COPY_CHUNK, left))
        if not chunk:
            raise CorruptedError(f"the archive's header says it ends at {end}, past the end of its file")
        out.write(chunk)
        left -= len(chunk)


def _append_to_file(
    f: Any, infos: list[FileInfo], options: dict[str, Any], progress: Callable[[int], None] | None
) -> None:
    """Append to the archive a file object holds (from its offset 0, where a reader reads it;
    an empty one gets a new archive), as to a path: on a temporary copy, then written back
    over the object's bytes from 0 (the position left at the result's end). A result shorter
    than the file is not cut short, as in place: its header names its end (the file may be
    memory-mapped). If the append fails, nothing is written to ``f`` and its position is
    restored; if writing back fails (an error of ``f`` itself), ``f`` holds part of the result."""
    if isinstance(f, io.TextIOBase):
        raise TypeError("append() needs a binary file, not a text file (open it with 'r+b')")
    for able in ("readable", "writable", "seekable"):
        if not getattr(f, able, lambda: True)():
            raise TypeError(f"append() needs a readable, writable and seekable file; this one is not {able}")
    if "a" in getattr(f, "mode", ""):
        raise TypeError("append() cannot rewrite a file opened for appending (its writes go to the end): use 'r+b'")
    current(**options)  # the options checked before any copy
    position = f.tell()
    with tempfile.TemporaryDirectory(prefix="msglc-append-") as scratch:
        path = os.path.join(scratch, f"{type(f).__name__}.mlc")  # (named in error messages)
        try:
            if f.seek(0, io.SEEK_END):
                f.seek(0)
                with open(path, "wb") as copy:
                    shutil.copyfileobj(f, copy, COPY_CHUNK)
            append(path, infos, progress=progress, **options)
        except BaseException:
            f.seek(position)
            raise
        with open(path, "rb") as result:
            f.seek(0)
            shutil.copyfileobj(result, f, COPY_CHUNK)
        length = f.tell()
        if f.seek(0, io.SEEK_END) > length:
            f.seek(0)
            head = f.read(HEADER_SIZE)
            if not header_end(head):  # (else it names it already: slack the append left)
                update, at = end_update(header_version(head)[1], length)
                f.seek(at)
                f.write(update)
        f.seek(length)


def _append(
    archive: str | os.PathLike[str],
    fd: int,
    existing: Existing,
    infos: list[FileInfo],
    options: dict[str, Any],
    progress: Callable[[int], None],
) -> None:
    options = _keep_compression(existing, options)
    names = [info.name for info in infos]
    if infos and (names[0] is not None) != existing.is_map:
        raise ValueError(
            f"append() to an archive whose root is a {'dict' if existing.is_map else 'list'} "
            f"takes {'named' if existing.is_map else 'unnamed'} inputs"
        )
    small = existing.small_root()  # the entries of a root without a node (checksum checked)
    small_keys = None if small is None else {key for key, _ in small}
    taken = [
        name
        for name in names
        if name is not None and (name in small_keys if small_keys is not None else existing.has_key(name))
    ]
    if taken:
        raise ValueError(f"append() input name {taken[0]!r} is already in {os.fspath(archive)!r}")
    if not infos:
        return
    if small is not None:  # its entries copied as they are encoded (not encoded again with these options)
        plain = {**options, "compression": None}
        kept = [FileInfo(_as_archive(raw, plain), key) for key, raw in small]
        return combine_into(archive, kept + infos, None, options, progress, as_dict=existing.is_map)
    if existing.compressed:  # the root header is inside a frame: rewritten (its frames copied, not recompressed)
        return combine_into(archive, infos, existing, options, progress)
    root_head = recount_header(existing.head, existing.count + len(infos))
    if root_head is None:  # the count outgrows the root's header: rewrite once, with room to grow
        return combine_into(archive, infos, existing, options, progress, wide=True)
    with opened(infos, options) as inputs:
        refuse_target_among(archive, inputs)
        _in_place(fd, existing, inputs, root_head, current(**options), progress)


def _as_archive(raw: msgspec.Raw, options: dict[str, Any]) -> bytes:
    """An archive of the encoded value ``raw`` as it is (an entry of a small root, which
    ``append`` rewrites: a NumPy array stays one whatever ``numpy_encoder`` says now)."""
    encoded = Encoded.of_data(bytes(raw), options)
    encoded.index()
    return b"".join(encoded.sections())


def _keep_compression(existing: Existing, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the archive's own compression: appending keeps it (a rewrite included);
    a ``compression=`` that says otherwise is refused rather than ignored."""
    current(**options)  # the options checked first
    kept = "zstd" if existing.compressed else None
    if "compression" in options and options["compression"] != kept:
        raise ValueError(
            f"append() keeps the archive's compression ({kept}), not compression={options['compression']!r}: "
            "combine() it into a new archive to change that"
        )
    return {**options, "compression": kept}


@contextmanager
def _locked(path: str | os.PathLike[str]) -> Iterator[IO[bytes] | None]:
    """The archive opened for update and locked against other appends (an advisory ``flock``,
    waited for), or None if there is no file yet."""
    while True:
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise ValueError(f"append() needs a regular file; {os.fspath(path)!r} is not one")
            refuse_read_only(path)  # as every writer does, whoever runs it (root may open it anyway)
            f = open(path, "r+b", buffering=0)  # noqa: SIM115 (closed below, or by the with)
        except FileNotFoundError:
            yield None
            return
        try:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            if os.path.samestat(os.fstat(f.fileno()), os.stat(path)):
                break
        except FileNotFoundError:
            pass
        except BaseException:
            f.close()
            raise
        f.close()  # replaced (rewritten by another append) while we waited: lock the new file
    with f:
        yield f


class _Writer:
    """Writes in sequence from a position of the file (``pwrite``), for the copy helpers."""

    def __init__(self, fd: int, pos: int) -> None:
        self.fd = fd
        self.pos = pos

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B")
        while view:
            done = os.pwrite(self.fd, view, self.pos)
            view = view[done:]
            self.pos += done


def _in_place(
    fd: int, existing: Existing, inputs: list[Input], root_head: bytes, cfg: Config, progress: Callable[[int], None]
) -> None:
    """Append ``inputs`` to ``existing`` in its file ``fd``. The file goes through three valid
    states, each entered by one write to the header, with everything it needs flushed first:

    1. as it was, but the header names its end (bytes a crash leaves past it are ignored);
    2. the same contents with the TOC copied past the place of the new entries: the kept TOC,
       the inputs' TOCs, the new root node and the final trailer, then a copy of the old root
       node and this state's trailer, where this state ends;
    3. the new entries written where the TOC was and the root header's count raised: the
       result, ending at the final trailer (the old root's copy and state 2's trailer after
       it are slack, reused by the next append).

    A failure rolls back to the last state entered (a crash leaves the header pointing at it).
    The file never gets shorter in place: a reader may have it memory-mapped, and a mapping
    read past the file's end kills its process (SIGBUS). So the header names where the
    result ends, and the bytes after it are left as slack. The space a longer file needs is
    reserved before the TOC is written, so a full disk fails the append with the file as it was.
    """
    t = existing.trailer
    keys = entry_keys(inputs, existing.is_map)
    data_len = t.data_len + sum(len(k) + part.trailer.data_len for k, part in zip(keys, inputs, strict=True))
    was_end = existing.archive.opened.size
    was_size = os.fstat(fd).st_size  # at least ``was_end``: slack an earlier append left
    kept, in_tocs = existing.toc_len, sum(part.trailer.live_toc_len for part in inputs)
    threshold = cfg.small_obj_optimization_threshold
    (root_pos, root_len), root_toc = existing.root_node(inputs, keys, root_head, threshold, kept + in_tocs)
    toc_len = kept + in_tocs + len(root_toc)  # the result's TOC, then its trailer
    old_root, old_len = existing.moved_root(toc_len - kept + TRAILER_SIZE)
    moved_toc = toc_len + TRAILER_SIZE + len(old_root)  # state 2's TOC, then its trailer
    # the new TOC goes right after the new entries if it fits in the free space before the old
    # TOC (left by an earlier append), else past the archive's end (over slack, if any)
    at = HEADER_SIZE + data_len
    if at + moved_toc + TRAILER_SIZE > t.toc_off:
        at = max(at, was_end)
    moved = msgspec.structs.replace(
        t, data_off=HEADER_SIZE, toc_off=at, toc_len=moved_toc, root_pos=moved_toc - old_len, root_len=old_len
    )
    result = Trailer(
        data_off=HEADER_SIZE,
        data_len=data_len,
        toc_off=at,
        toc_len=toc_len,
        root_pos=root_pos,
        root_len=root_len,
        data_crc=_data_crc(existing, root_head, keys, inputs),
        threshold=threshold,
    )
    result_end = at + toc_len + TRAILER_SIZE
    moved_end = at + moved_toc + TRAILER_SIZE
    if moved_end >= 1 << 48:
        raise ValueError(f"append() would make the archive {moved_end:,} bytes; the format allows less than 2**48")
    buf = bytearray(min(COPY_CHUNK, max(kept, in_tocs, data_len - t.data_len)))
    end = was_end  # where the header's last write (once flushed, the file) says the archive ends
    minor = header_version(existing.header)[1]
    try:
        if not header_end(existing.header):
            _set_end(fd, minor, was_end)  # state 1
            os.fsync(fd)
        _reserve(fd, was_size, moved_end)  # (past the end state 1 names: ignored if we die)
        toc = _Writer(fd, at)
        copy_range(existing.archive, t.toc_off, kept, toc, buf, checksum=False, progress=progress)
        copy_tocs(inputs, toc, buf, progress)
        toc.write(root_toc + result.pack(pack_header(MINOR)) + old_root + moved.pack(pack_header(MINOR)))
        os.fsync(fd)
        _set_end(fd, MINOR, moved_end)  # state 2 (1.3 allows free space before the TOC)
        end = moved_end
        os.fsync(fd)
        copy_entries(
            keys, inputs, _Writer(fd, HEADER_SIZE + t.data_len), buf, progress, 0, "the archive keeps its old contents"
        )
        os.fsync(fd)
        os.pwrite(fd, end_update(MINOR, result_end)[0] + root_head, 9)  # state 3
    except BaseException:
        _roll_back(fd, end, was_end, was_size, minor)
        raise
    if cfg.durable:
        os.fsync(fd)


def _reserve(fd: int, size: int, end: int) -> None:
    """Allocate the file's blocks up to ``end`` (when it is longer than ``size``, its length
    now) before anything is written, so that a full disk fails here, with the file as it was,
    and not midway (a write into a hole can fail for want of space). On file systems without
    ``fallocate`` the writes find out instead, and the rollback cuts what was added."""
    if end <= size or not hasattr(os, "posix_fallocate"):
        return
    try:
        os.posix_fallocate(fd, size, end - size)
    except OSError as e:
        if e.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):  # (those: not supported here)
            raise


def _set_end(fd: int, minor: int, end: int) -> None:
    """Make the archive end at ``end`` (its trailer there): one small write to the header."""
    os.pwrite(fd, *end_update(minor, end))


def _roll_back(fd: int, end: int, was_end: int, was_size: int, minor: int) -> None:
    """Back to the state the header names. Before the TOC moved (``end`` is the old end), the
    old archive: what this append added past the file's old length is cut (no reader can have
    seen an archive reach there), flushed, then the header names the old end (0 when the file
    ends there). After, the moved TOC stays, and so does the file's length: a reader opened in
    that state may map it whole. Best effort: if this fails too, the header still names a
    valid state and readers stop there."""
    if end != was_end:
        return
    with suppress(OSError):
        if os.fstat(fd).st_size > was_size:
            os.ftruncate(fd, was_size)
        os.fsync(fd)
        _set_end(fd, minor, 0 if was_size == was_end else was_end)


def _data_crc(existing: Existing, root_head: bytes, keys: list[bytes], inputs: list[Input]) -> int:
    """The result's data checksum from the checksums the trailers claim (the inputs' are
    checked as their bytes are copied), without reading the existing entries: CRC-32 is linear,
    so the old header's part can be taken out of the old checksum and the new one's put in."""
    t = existing.trailer
    body = t.data_len - existing.header_size
    crc = crc32_combine(zlib.crc32(root_head), t.data_crc ^ crc32_combine(zlib.crc32(existing.head), 0, body), body)
    return entries_crc(keys, inputs, crc)


def _back_to_back(pages: list[Ref]) -> bool:
    """Do a paged list's pages lie in order right before its node, one after another (as
    writers put them), so that they move with it?"""
    end = pages[0][0]
    for back, size in pages:
        if back != end:
            return False
        end = back - size
    return end == 0


class Existing:
    """The archive ``append`` adds to: its root's header, node and entries, kept as bytes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.archive = Archive(path, ViewCache(False), None)
        try:
            self._open(path)
        except BaseException:
            self.close()
            raise

    def _open(self, path: str | os.PathLike[str]) -> None:
        if self.archive.opened.legacy is not None:
            raise UnsupportedVersionError(
                f"{os.fsdecode(path)!r} is an archive of the published msglc: append() adds to msglc archives; "
                "convert it first (msglc convert OLD.msg NEW.mlc, or msglc.dump(new, msglc.LazyReader(old)))"
            )
        self.trailer = t = self.archive.opened.trailer
        first = bytes(self.archive.read(0, HEADER_SIZE + min(5, t.data_len)))  # header, root header
        self.header, self.head = first[:HEADER_SIZE], first[HEADER_SIZE:]
        major, minor = header_version(self.header)
        self.compressed = major == COMPRESSED  # appended to by a rewrite (``_append``)
        if self.compressed and minor > COMPRESSED_MINOR:
            raise UnsupportedVersionError(
                f"{os.fspath(path)!r} is format {major}.{minor}, newer than this msglc can append to "
                f"({major}.{COMPRESSED_MINOR})"
            )
        if minor > MINOR:
            raise UnsupportedVersionError(
                f"{os.fspath(path)!r} is format 1.{minor}, newer than this msglc can append to (1.{MINOR})"
            )
        try:
            self.is_map, self.count, self.header_size = container_header(self.head)
        except CorruptedError:
            raise ValueError(
                f"append() needs an archive whose root is a dict or a list ({os.fspath(path)!r} holds neither)"
            ) from None
        self.head = self.head[: self.header_size]
        self.pos = t.toc_off + t.root_pos
        self.node = self.archive.node(self.pos, t.root_len) if t.root_len else None
        self.view = view(self.archive, t.data_off, t.data_len, self.pos, t.root_len) if t.root_len else None
        # the TOC kept: everything before the old root node (and its index region), which the
        # new root node replaces; the root's descendants all precede it
        end = self.pos - t.toc_off
        if isinstance(self.node, HashMapNode) and self.node.index[0] == self.node.index[1]:
            end -= self.node.index[0]  # the index region, right before the node, goes with it
        elif isinstance(self.node, PagedListNode) and _back_to_back(self.node.pages):
            end -= self.node.pages[0][0]  # its pages, right before the node, go with it
        self.toc_len = end if t.root_len else 0

    def small_root(self) -> list[tuple[Any, msgspec.Raw]] | None:
        """The root's entries when it has no node (it is small): (key, or None in a list, the
        value's encoded bytes), its data checksum checked."""
        if self.node is not None:
            return None
        t = self.trailer
        data = self.archive.read(t.data_off, t.data_len)
        if zlib.crc32(data) != t.data_crc:
            raise CorruptedError(
                f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off}); nothing was changed"
            )
        try:
            if self.is_map:
                return list(msgspec.msgpack.decode(data, type=dict[Any, msgspec.Raw]).items())
            return [(None, raw) for raw in msgspec.msgpack.decode(data, type=list[msgspec.Raw])]
        except msgspec.DecodeError as e:
            raise CorruptedError(f"the root (at offset {t.data_off}) is not valid msgpack: {e}") from None

    def close(self) -> None:
        self.archive.close()

    def has_key(self, name: str | int) -> bool:
        """For a dict root with a node (``small_root()`` None): its view is a ``LazyDict``."""
        return name in cast(LazyDict, self.view)

    @property
    def root(self) -> ListNode | MapNode | HashMapNode | StrideNode:
        """The root's node, for a root that has one (``small_root()`` None); ``_open`` checked
        it against the root's header, a list's or a dict's. A paged list's is the list node
        its pages make (its kids referenced from the root's position, as the pages' are not)."""
        node = self.node
        assert node is not None and not isinstance(node, ArrayNode)
        return self.archive.spans(self.pos, node) if isinstance(node, PagedListNode) else node

    def _abs(self, kids: dict[int, Ref]) -> dict[int, Ref]:
        """Kid references as absolute TOC positions (the existing TOC is copied first)."""
        return {k: (self.pos - self.trailer.toc_off - back, size) for k, (back, size) in kids.items()}

    def moved_root(self, delta: int) -> tuple[bytes, int]:
        """The root node, preceded by its index region if it has one, to be written ``delta``
        bytes further from the kept TOC than it was (its references to children grow by that
        much); and the framed node's length, which ends the bytes."""
        t = self.trailer
        node = self.node
        assert node is not None and not isinstance(node, ArrayNode)
        if isinstance(node, PagedListNode):
            return self._moved_pages(node, delta)
        before = bytes(self.archive.read(t.toc_off + self.toc_len, t.root_pos - self.toc_len))
        if not isinstance(node, StrideNode):  # a fixed-stride node refers to nothing
            node = msgspec.structs.replace(
                node, kids={k: (back + delta, size) for k, (back, size) in node.kids.items()}
            )
        if isinstance(node, HashMapNode) and not before:  # its index region stays in the kept TOC
            node = msgspec.structs.replace(node, index=(node.index[0] + delta, node.index[1]))
        framed = frame_node(node)
        return before + framed, len(framed)

    def _moved_pages(self, node: PagedListNode, delta: int) -> tuple[bytes, int]:
        """``moved_root`` of a paged list: its pages (when they lie back to back before it, as
        writers put them; else they stay in the kept TOC), each framed anew with its kids'
        references lengthened by as much as it moves, then the node."""
        if not _back_to_back(node.pages):
            framed = frame_node(msgspec.structs.replace(node, pages=[(b + delta, n) for b, n in node.pages]))
            return framed, len(framed)
        out = bytearray()
        moved: list[tuple[int, int]] = []  # (position, size) of each page where it will be
        for p in range(len(node.pages)):
            was, page = self.archive.span_page(self.pos, node, p)  # (read and checked for root_node)
            now = self.pos - node.pages[0][0] + delta + len(out)
            kids = {k: (b + now - was, n) for k, (b, n) in page.kids.items()}
            framed = frame_node(SpanPage(starts=page.starts, offs=page.offs, kids=kids))
            moved.append((now, len(framed)))
            out += framed
        here = self.pos - node.pages[0][0] + delta + len(out)
        framed = frame_node(msgspec.structs.replace(node, pages=[(here - at, n) for at, n in moved]))
        return bytes(out + framed), len(framed)

    def root_node(
        self, inputs: list[Input], keys: list[bytes], header: bytes, threshold: int, toc_base: int
    ) -> tuple[tuple[int, int], bytes]:
        """The new root node: the existing entries' layout shifted by the header's growth,
        followed by the inputs'."""
        shift = len(header) - self.header_size
        node = self.root
        offs_new, kids_new = entries_layout(
            inputs, keys, self.trailer.data_len + shift, self.toc_len
        )  # after the kept entries and TOC
        builder = TocBuilder(b"", threshold, toc_base=toc_base)
        n = self.count + len(inputs)
        if isinstance(node, (ListNode, StrideNode)):
            if isinstance(node, StrideNode) and len(node.dims) > 1 and node.dims[0][2] > whole_max(threshold):
                h0, n0, s0 = node.dims[0]  # rows keep a node: one fixed-stride node all of them share
                row = builder.add_node(StrideNode(dims=node.dims[1:], lazy_min=node.lazy_min))
                starts, offs, kids = (
                    list(range(n0)),
                    list(range(h0, h0 + n0 * s0 + 1, s0)),
                    dict.fromkeys(range(n0), row),
                )
            elif isinstance(node, StrideNode):
                h0, n0, s0 = node.dims[0]
                starts, offs, _ = builder.spans(range(h0, h0 + n0 * s0 + 1, s0), n0, {})
                kids = {}
            else:
                starts, offs, kids = node.starts, node.offs, self._abs(node.kids)
            new_starts, new_offs, new_kids = builder.spans(offs_new, len(inputs), kids_new)
            kids.update({len(starts) + k: ref for k, ref in new_kids.items()})
            starts = [*starts, *(self.count + s for s in new_starts)]
            offs = [o + shift for o in offs[:-1]] + new_offs
            return builder.add_list(n, starts, offs, kids), bytes(builder.toc)
        koffs, hashes, entry_kids = self._entries(node, shift)
        koffs = koffs[:-1] + offs_new
        hashes += [zlib.crc32(k) for k in keys]
        new_names = entry_names(inputs)
        entry_kids.update({self.count + j: (new_names[j], ref) for j, ref in kids_new.items()})
        if n <= MAP_INLINE_MAX and isinstance(node, MapNode):  # an inline dict: its keys are in its node
            names = [*node.keys, *new_names]
            voffs = [o + shift for o in node.voffs] + [o + len(k) for o, k in zip(offs_new, keys, strict=False)]
            kids = {j: ref for j, (_, ref) in entry_kids.items()}
            return builder.add_node(MapNode(keys=names, koffs=koffs, voffs=voffs, kids=builder.refs(kids))), bytes(
                builder.toc
            )
        return builder.hash_node(n, koffs, entry_kids, builder.hash_index_of(hashes, koffs)), bytes(builder.toc)

    def _block_entries(
        self, node: BlockHashMapNode | DirectMapNode, kid_keys: dict[int, str | int]
    ) -> tuple[list[int], list[int]]:
        """Entry offsets (plus the end) and key hashes of a dict whose index (a block or a
        direct index) keeps neither: read from its entries a span at a time, but for the spans
        of large values, whose key the node names (their values are not read)."""
        offs: list[int] = []
        hashes: list[int] = []
        ends = [*node.starts[1:], node.n]
        for k, (start, end) in enumerate(itertools.pairwise(node.offs)):
            if k in kid_keys:
                offs.append(start)
                hashes.append(zlib.crc32(key_encoder.encode(kid_keys[k])))
                continue
            body = self.archive.read(self.trailer.data_off + start, end - start)
            try:
                span_offs, span_hashes = entry_hashes(body, ends[k] - node.starts[k], start)
            except ValueError as e:
                raise CorruptedError(f"the root dict of the archive is damaged: {e}") from None
            offs += span_offs[:-1]
            hashes += span_hashes
        offs.append(node.offs[-1])
        return offs, hashes

    def _entries(
        self, node: MapNode | HashMapNode, shift: int
    ) -> tuple[list[int], list[int], dict[int, tuple[str | int, Ref]]]:
        """Entry offsets (plus the end), key hashes and large values of the existing dict."""
        if isinstance(node, MapNode):
            hashes = [zlib.crc32(key_encoder.encode(k)) for k in node.keys]
            kids = {j: (node.keys[j], ref) for j, ref in self._abs(node.kids).items()}
            return [o + shift for o in node.koffs], hashes, kids
        by_span = {k: key for key, k in node.kid_keys.items()}
        kids = {node.starts[k]: (by_span[k], ref) for k, ref in self._abs(node.kids).items()}
        if isinstance(node, (BlockHashMapNode, DirectMapNode)):  # offsets and hashes from the entries
            entry_offs, hashes = self._block_entries(node, by_span)
            return [o + shift for o in entry_offs], hashes, kids
        width, n = node.offs_width, node.n
        region = self.pos - node.index[0]
        table, records_at, _ = region_layout(n, node.page_bits, width)
        koffs = le_array("I" if width == 4 else "Q", bytes(self.archive.read(region, table)))
        records = le_array("Q", bytes(self.archive.read(region + records_at, 8 * n)))
        hashes = [0] * n
        for record in records:
            hashes[record & 0xFFFFFFFF] = record >> 32
        return [o + shift for o in koffs], hashes, kids
