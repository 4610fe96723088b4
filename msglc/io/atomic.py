"""Targets written atomically: a temporary file in the target's directory (unnamed where the
system allows it) that replaces the target only when complete and is removed on failure."""

from __future__ import annotations

import errno
import io
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, BinaryIO

from msglc.io.names import RemotePath
from msglc.io.uploads import remote_target

WRITE_BUFFER = 1 << 18  # bytes gathered before a write to the file: a compressed dump's frames of a
# few KB go out in large writes (npm-names, 11,600 frames: 3-9% of the dump; 1 MB was no faster)


def is_named(target: Any) -> bool:
    """A path or remote name (written atomically) rather than a file object."""
    return isinstance(target, (str, bytes, os.PathLike, RemotePath))


def refuse_read_only(path: str | os.PathLike[str]) -> None:
    """Refuse to replace a file whose permissions forbid writing it, as ``open(path, "wb")``
    would (``PermissionError`` naming it): an atomic write renames a new file over the old
    one, and a rename ignores the target's mode. A file without any write permission bit
    (``chmod a-w``: a finished result protected) is refused even for root, who may write
    anything; one this process may not write (``access(2)``) is refused too."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        return
    mode = stat.filemode(st.st_mode)
    if not st.st_mode & 0o222:
        why = f"read-only file, mode {mode}: chmod u+w to write it"
    elif not os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
        why = f"not writable by this process: mode {mode}, owner uid {st.st_uid}"
    else:
        return
    raise PermissionError(errno.EACCES, f"Permission denied ({why})", os.fspath(path))


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
    write fails midway), cut where the archive ends (``end_here``)."""
    if is_named(target):
        with atomic_file(target, durable, size_hint, replace) as f:
            yield f
    else:
        yield target
        end_here(target)


def end_here(f: Any) -> None:
    """Cut a seekable file object at its position, where an archive just written ends: bytes
    of an older, longer content after it (a reused ``io.BytesIO``, a file opened "r+b") would
    make it no archive, or, read as one, show the old archive's TOC over the new data."""
    seekable = getattr(f, "seekable", None)
    if seekable is not None and seekable() and hasattr(f, "truncate"):
        f.truncate()


@contextmanager
def atomic_file(
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes] | RemotePath,
    durable: bool,
    size_hint: int = 0,
    replace: bool = True,
) -> Iterator[BinaryIO]:
    """A new file that replaces ``path`` only if the block completes, else is removed.

    A ``RemotePath`` is streamed to its object store (see ``remote_target``).

    It is a temporary sibling created with mode 0o666 so the process umask applies as for any
    new file (an existing target's mode is kept); ``size_hint`` bytes are preallocated. A
    target whose permissions forbid writing is refused (``refuse_read_only``) before the write
    and again before the new file takes its name. With
    ``durable`` the data and the rename are flushed to disk before returning. A symlink is
    followed (its target is replaced); a target that exists but is not a regular file (a
    device such as /dev/null, a FIFO) is written to directly, since it cannot be replaced.
    With ``replace=False`` a file that exists when the block completes is left alone (the
    new one is removed; ``FileExistsError``)."""
    if isinstance(path, RemotePath):
        with remote_target(path) as f:
            yield f
        return
    given = os.fsdecode(os.fspath(path))
    if given.endswith((os.sep, os.altsep or os.sep)):  # realpath would drop it and write a file
        raise IsADirectoryError(errno.EISDIR, "is a directory name (it ends with a separator), not a file", given)
    path = os.fsdecode(os.path.realpath(given))
    with suppress(FileNotFoundError):
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if not stat.S_ISREG(mode):
            with open(path, "wb") as f:
                yield f
            return
    refuse_read_only(path)
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, "no such directory", directory)
    tmp = _Temporary(directory, os.path.basename(path))
    try:
        with os.fdopen(tmp.fd, "wb", closefd=False, buffering=WRITE_BUFFER) as f:
            _preallocate(tmp.fd, size_hint)
            yield f
        if durable:
            os.fsync(tmp.fd)
        if replace:
            refuse_read_only(path)  # made read-only while we wrote
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
        path = self.path
        if replace or not _linked(lambda: os.link(path, target)):
            os.replace(path, target)
        else:
            os.unlink(path)
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


def lock_file(fd: int, blocking: bool) -> str:
    """An exclusive ``flock`` on ``fd``, as the temporary files of atomic writes are held
    (``HELD``, ``BUSY`` or ``NO_LOCKS``, see ``_lock``): for other files a live writer holds."""
    return _lock(fd, blocking)


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
