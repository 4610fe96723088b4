"""Turn an object into an archive: ``dumps`` to bytes, ``dump`` to a path or a file object.

A value that cannot be stored fails before any output exists: a file object gets its first
byte only after the whole object is encoded and indexed; a path is written through a temporary
file in the same directory (the data section while the TOC is built) that replaces the target
only once it is complete, and is removed on any failure.
"""

from __future__ import annotations

import errno
import io
import itertools
import os
import re
import secrets
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, BinaryIO

import msgspec

from . import validate
from .arrays import ArrayEncoder, DataSection
from .bulk import ParallelCrc, gc_paused, join
from .config import current
from .format import HEADER_SIZE, Trailer, pack_header
from .indexer import TocBuilder
from .remote import RemotePath, remote_target, resolve_name
from .streamed import Streamed


def _where(obj: Any, bad: Any) -> str:
    path = validate.find_path(obj, bad)
    return "/".join(map(str, path)) if path else "the root"


def encode_value(obj: Any, arrays: ArrayEncoder) -> bytes:
    try:
        return msgspec.msgpack.Encoder(enc_hook=arrays).encode(obj)
    except OverflowError:
        validate.raise_if_streamed(obj)  # the value may sit in a subclass's storage, which is not what gets written
        raise OverflowError(f"msglc cannot store an int outside -2**63 .. 2**64-1 (at {_where(obj, validate.int_out_of_range)})") from None
    except UnicodeEncodeError:
        validate.raise_if_streamed(obj)
        raise ValueError(
            f"msglc cannot store a str that is not valid Unicode, such as a lone surrogate (at {_where(obj, validate.invalid_str)})"
        ) from None
    except TypeError as e:
        if arrays.refused is not None:  # a NumPy value the hook refused: say where it is
            validate.raise_if_streamed(obj)
            raise TypeError(f"{e} (at {_where(obj, lambda x: x is arrays.refused)})") from None
        validate.check_value_or_raise(obj)
        raise
    except RecursionError:
        raise ValueError("object is nested too deeply or contains a reference to itself") from None


class Encoded:
    """An archive in the making: the data section at once, the TOC by ``index()``, the trailer
    once the data checksum (computed on another core) is in."""

    def __init__(self, obj: Any, options: dict[str, Any]) -> None:
        cfg = current(**options)
        self.threshold = cfg.small_obj_optimization_threshold
        self.durable = cfg.durable
        self.disable_gc = cfg.disable_gc
        self.obj = obj
        arrays = ArrayEncoder(cfg.numpy_encoder)
        with gc_paused(self.disable_gc):
            self.data = DataSection(encode_value(obj, arrays), arrays)
        self.checksum = ParallelCrc(self.data.chunks(), self.data.size)
        self.header = pack_header()
        self.toc = bytearray()
        self.root = (0, 0)

    def index(self) -> None:
        """Build the TOC, checking every value's type on the way (raises before any TOC byte
        is written)."""
        builder = TocBuilder(self.data.buf, self.threshold, self.data.splices)
        try:
            with gc_paused(self.disable_gc):
                self.root = builder.build_root(self.obj)
        except BaseException as e:
            self.checksum.wait()  # no checksum thread outlives a failed dump
            if isinstance(e, validate.Unsupported):
                raise e.error() from None
            if isinstance(e, RecursionError):
                raise ValueError("object is nested too deeply to index") from None
            raise
        self.toc = builder.toc
        self.obj = None

    def trailer(self) -> bytes:
        data_len = self.data.size
        trailer = Trailer(
            data_off=HEADER_SIZE,
            data_len=data_len,
            toc_off=HEADER_SIZE + data_len,
            toc_len=len(self.toc),
            root_pos=self.root[0],
            root_len=self.root[1],
            data_crc=self.checksum.result(),
            threshold=self.threshold,
        )
        return trailer.pack(self.header)


def dumps(obj: Any, **options: Any) -> bytes:
    """The archive for ``obj`` as bytes. Options: see ``msglc.configure``."""
    try:
        try:
            encoded = Encoded(obj, options)
            encoded.index()
        except Streamed:  # generators, Pairs or containers with their own iteration inside
            from .lazy_writer import stream_bytes

            return stream_bytes(obj, options)
        return b"".join(itertools.chain((encoded.header,), encoded.data.chunks(), (encoded.toc, encoded.trailer())))
    except StopIteration as e:  # from a value's items() or __iter__: it must not end the caller's loop
        from .streamed import stop_iteration_error

        raise stop_iteration_error() from e


def dump(
    target: str | bytes | os.PathLike | BinaryIO, obj: Any, *, fs: Any = None, storage_options: dict | None = None, **options: Any
) -> None:
    """Write ``obj`` as an archive to a path (atomically) or to a writable binary file object.

    A remote target (``"s3://bucket/key"`` with ``storage_options``, a ``upath.UPath``, or a
    path on the fsspec file system ``fs``) is streamed to the object, which appears only once
    it is complete.

    The file object is written sequentially, never seeked, so pipes and sockets work, and only
    once every value is checked. Objects holding generators, ``Pairs`` or containers that
    define their own iteration (dict subclasses with their own ``items()``, list, tuple and set
    subclasses with their own ``__iter__``) are streamed by ``LazyWriter``: a file object must
    then be seekable, and keeps what was written if a value fails midway (a path is still
    replaced only on success). A ``StopIteration`` raised inside becomes a ``RuntimeError``.
    """
    target = resolve_name(target, fs, storage_options)
    is_path = is_named(target)
    if not is_path and not hasattr(target, "write"):
        raise TypeError(f"dump() target must be a path or a writable binary file, not {type(target).__name__}")
    if _is_lazy(obj):
        from .combine import repack

        return repack(target, obj, options)
    try:
        try:
            encoded = Encoded(obj, options)
            if is_path:
                _write_atomically(target, encoded)
                return
            encoded.index()  # every value checked before the first byte reaches the caller's file
        except Streamed:  # generators, Pairs or containers with their own iteration inside: written as they are produced
            from .lazy_writer import stream

            return stream(target, obj, options)  # takes a RemotePath too
        trailer = encoded.trailer()
        for part in itertools.chain((encoded.header,), encoded.data.chunks(), (encoded.toc, trailer)):
            target.write(part)
    except StopIteration as e:  # from a value's items() or __iter__: it must not end the caller's loop
        from .streamed import stop_iteration_error

        raise stop_iteration_error() from e


def is_named(target: Any) -> bool:
    """A path or remote name (written atomically) rather than a file object."""
    return isinstance(target, (str, bytes, os.PathLike, RemotePath))


def check_target(target: Any, caller: str) -> None:
    """Refuse, before any work, a target that is neither a name nor a writable binary file."""
    if is_named(target):
        return
    if not hasattr(target, "write") or isinstance(target, io.TextIOBase):
        kind = "a text file (open it with 'wb')" if isinstance(target, io.TextIOBase) else type(target).__name__
        raise TypeError(f"{caller}() target must be a path or a writable binary file, not {kind}")


@contextmanager
def output(target: Any, durable: bool, size_hint: int = 0, replace: bool = True) -> Iterator[BinaryIO]:
    """Where an archive goes: a path or remote name through ``atomic_file``; a writable binary
    file object as it is (written in sequence, never seeked; it keeps what was written if the
    write fails midway)."""
    if is_named(target):
        with atomic_file(target, durable, size_hint, replace) as f:
            yield f
    else:
        yield target


def _is_lazy(obj: Any) -> bool:
    """A ``LazyReader`` or a lazy part of one: repacked by copying its bytes."""
    from .lazy import LazyNode
    from .reader import LazyReader

    return isinstance(obj, (LazyNode, LazyReader))


def _write_atomically(path: str | bytes, encoded: Encoded) -> None:
    """Write through ``atomic_file``. The data section is written by a second thread while
    this one builds the TOC (file writes release the GIL); a value refused meanwhile only costs
    the temporary file, which is removed."""
    try:
        with atomic_file(path, encoded.durable, HEADER_SIZE + encoded.data.size) as f:
            failed: list[BaseException] = []
            parts = itertools.chain((encoded.header,), encoded.data.chunks())
            writer = threading.Thread(target=_write_parts, args=(f, parts, failed), daemon=True)
            writer.start()
            try:
                encoded.index()
            finally:
                join(writer)
            if failed:
                raise failed[0]
            f.write(encoded.toc)
            f.write(encoded.trailer())
    except BaseException:
        encoded.checksum.wait()
        raise


@contextmanager
def atomic_file(
    path: str | bytes | os.PathLike | RemotePath, durable: bool, size_hint: int = 0, replace: bool = True
) -> Iterator[BinaryIO]:
    """A new file that replaces ``path`` only if the block completes, else is removed.

    A ``RemotePath`` is streamed to its object store (see ``remote_target``).

    It is a temporary sibling created with mode 0o666 so the process umask applies as for any
    new file (an existing target's mode is kept); ``size_hint`` bytes are preallocated. With
    ``durable`` the data and the rename are flushed to disk before returning. A symlink is
    followed (its target is replaced); a target that exists but is not a regular file (a
    device such as /dev/null, a FIFO) is written to directly, since it cannot be replaced.
    With ``replace=False`` a file that exists when the block completes is left alone (the
    new one is removed; ``FileExistsError``)."""
    if isinstance(path, RemotePath):
        with remote_target(path) as f:
            yield f
        return
    path = os.fsdecode(os.path.realpath(os.fspath(path)))
    with suppress(FileNotFoundError):
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if not stat.S_ISREG(mode):
            with open(path, "wb") as f:
                yield f
            return
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, "no such directory", directory)
    tmp = _Temporary(directory, os.path.basename(path))
    try:
        with os.fdopen(tmp.fd, "wb", closefd=False) as f:
            _preallocate(tmp.fd, size_hint)
            yield f
        if durable:
            os.fsync(tmp.fd)
        with suppress(FileNotFoundError):
            os.fchmod(tmp.fd, os.stat(path).st_mode & 0o7777)
        tmp.publish(path, replace)
        if durable and hasattr(os, "O_DIRECTORY"):
            dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    except BaseException:
        tmp.discard()
        raise
    finally:
        os.close(tmp.fd)


class _Temporary:
    """The file an atomic write fills before it gets its name. Where Linux allows, it has no
    name at all until it is complete (``O_TMPFILE``, then ``linkat``), so a killed process
    leaves nothing behind. Elsewhere, and for the instant between ``linkat`` and the rename
    that replaces a target, it is a hidden sibling ``.NAME.XXXXXXXX.tmp``, locked (``flock``)
    as long as its writer lives: the next such write to the same target removes the ones
    whose writer died (``remove_stale_temporaries``; only then, since it lists the directory)."""

    def __init__(self, directory: str, name: str) -> None:
        self.directory, self.name = directory, name
        self.path: str | None = None  # its name while it has one
        fd = _open_unnamed(directory)
        if fd is None:
            remove_stale_temporaries(directory, name)
            fd, self.path = _create_named(directory, name)
        self.fd = fd

    def publish(self, target: str, replace: bool) -> None:
        """Give the complete file the name ``target``; with ``replace=False`` only if no file
        has it (``FileExistsError``)."""
        if self.path is None:
            if not replace and _linked(lambda: _link_unnamed(self.fd, target)):
                return
            self.path = self._named()
        if replace or not _linked(lambda: os.link(self.path, target)):
            os.replace(self.path, target)
        else:
            os.unlink(self.path)
        self.path = None

    def _named(self) -> str:
        for _ in range(100):
            candidate = _temporary_name(self.directory, self.name)
            try:
                _link_unnamed(self.fd, candidate)
            except FileExistsError:
                continue
            return candidate
        raise FileExistsError(f"could not name a temporary file in {self.directory!r}")

    def discard(self) -> None:
        if self.path is not None:
            with suppress(OSError):
                os.unlink(self.path)
            self.path = None


def _link_unnamed(fd: int, target: str) -> None:
    """Name the unnamed file ``fd``: ``linkat`` of its /proc/self/fd link, followed (through a
    directory descriptor, since ``os.link`` otherwise calls ``link``, which does not follow)."""
    proc = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.link(str(fd), target, src_dir_fd=proc, follow_symlinks=True)
    finally:
        os.close(proc)


def _open_unnamed(directory: str) -> int | None:
    """An unnamed file in ``directory`` (Linux ``O_TMPFILE``, linkable through /proc), locked,
    or None where the OS or the file system has none."""
    if not hasattr(os, "O_TMPFILE") or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        fd = os.open(directory, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None  # the file system has no O_TMPFILE
        raise
    try:
        _lock(fd, blocking=True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _create_named(directory: str, name: str) -> tuple[int, str]:
    """A new hidden sibling, locked; retried if a cleaner removed it before the lock was
    taken (the lock is what tells a live writer's file from a dead one's)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = _temporary_name(directory, name)
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        try:
            _lock(fd, blocking=True)
            with suppress(FileNotFoundError):
                if os.stat(tmp).st_ino == os.fstat(fd).st_ino:
                    return fd, tmp
        except BaseException:
            os.close(fd)
            with suppress(OSError):
                os.unlink(tmp)
            raise
        os.close(fd)
    raise FileExistsError(f"could not create a temporary file in {directory!r}")


def _temporary_name(directory: str, name: str) -> str:
    return os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")


_TEMPORARY = re.compile(r"\.(.+)\.[0-9a-f]{8}\.tmp")


def remove_stale_temporaries(directory: str, name: str) -> None:
    """Remove the temporary files that writes to ``name`` left when their process died: the
    hidden siblings of that name that no live writer holds locked. Where the OS has no
    ``flock`` (Windows), a dead writer's file cannot be told from a live one's, and stays."""
    if _fcntl() is None:
        return
    with suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            match = _TEMPORARY.fullmatch(entry.name)
            if match and match.group(1) == name and entry.is_file(follow_symlinks=False):
                _remove_if_unlocked(entry.path)


def _remove_if_unlocked(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if _lock(fd, blocking=False) == HELD and os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
            os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fcntl() -> Any:
    try:
        import fcntl
    except ImportError:  # Windows
        return None
    return fcntl


HELD, BUSY, NO_LOCKS = "held", "busy", "no locks"


def _lock(fd: int, blocking: bool) -> str:
    """An exclusive ``flock`` on ``fd``: ``HELD``; ``BUSY`` if another holds it (without
    ``blocking``); ``NO_LOCKS`` where the OS or the file system has none (Windows, NFS
    without a lock manager): a writer then works without, and no cleaner removes anything."""
    fcntl = _fcntl()
    if fcntl is None:
        return NO_LOCKS
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return BUSY
    except OSError as e:
        if e.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            return NO_LOCKS
        raise
    return HELD


def _linked(link: Callable[[], None]) -> bool:
    """Run ``link()``, a hard link to a name that must not exist yet (``FileExistsError``);
    False where the file system has no hard links (the caller then renames instead)."""
    try:
        link()
    except FileExistsError:
        raise
    except OSError as e:
        if e.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            return False
        raise
    return True


PREALLOCATE_MIN = 1 << 23


def _preallocate(fd: int, size: int) -> None:
    """Reserve the file's blocks before writing a large archive: on ext4 and others the
    writes then run about 3x faster (no block allocation per page), and a full disk fails
    here, before anything is written. Where the file system has no fallocate, glibc emulates
    it by writing one byte per block (correct, somewhat slower); other errors are ignored."""
    if size >= PREALLOCATE_MIN and hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise


def _write_parts(f: Any, parts: Iterable, failed: list[BaseException]) -> None:
    try:
        for part in parts:
            f.write(part)
    except BaseException as e:  # reported by the caller after join
        failed.append(e)
