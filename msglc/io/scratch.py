"""Scratch folders beside a target, where a write made in several steps keeps its pieces
(``msglc.dask.to_archive``'s parts): ``TARGET.parts-XXXXXXXXXXXX``, locally or in object
storage. The write removes its folder when it ends; a write killed midway cannot, so the next
write to the same target removes the folders whose writer is dead.

A folder's writer shows it is alive by a lease, the object ``.lease`` in the folder:

- ``held``: the writer's process holds an ``flock`` on it (a local folder while the writer
  waits for its result), as ``io.atomic``'s temporary files are held; once no process holds
  it, its writer is dead.
- ``renewed``: its time (the file's mtime, the object's LastModified) is renewed every
  ``LEASE_RENEW`` seconds while the writer waits for its result, and every piece written
  counts as a renewal (its own time); once nothing in the folder is newer than ``LEASE_EXPIRY`` seconds, its
  writer is taken for dead. (A lease that nothing renews, because the steps are computed
  later and slowly, expires too: a write to the same target meanwhile removes the folder, and
  the slow write then fails. It never damages a target.) Times are compared with the time the
  same storage gives the new folder's own lease, so clocks need not agree. Only local
  folders and S3 are looked at: other object stores have no listing whose times msglc
  trusts, and their dead writers' folders stay.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
import uuid
from typing import Any

from msglc.io.atomic import BUSY, HELD, lock_file
from msglc.io.names import RemotePath
from msglc.io.s3 import call, head_etag, is_s3, run, transport_error, url_of

LEASE = ".lease"
LEASE_RENEW = 30.0  # seconds between renewals while the writer waits
LEASE_EXPIRY = 600.0  # a folder nothing in which is newer than this is a dead writer's
_HELD, _RENEWED = b"held\n", b"renewed\n"
_FOLDER = re.compile(r"\.parts-[0-9a-f]{12}")

Folder = Any  # a local path (str), or (fs, path) in object storage: it travels to Dask's workers


def new_folder(where: Any) -> Folder:
    """A name for a new scratch folder beside the target ``where`` (a local path or a
    ``RemotePath``)."""
    token = f".parts-{uuid.uuid4().hex[:12]}"
    if isinstance(where, RemotePath):
        return (where.fs, where.path + token)
    return os.fspath(where) + token


def piece(folder: Folder, name: str) -> Any:
    """The name of the piece ``name`` in ``folder``."""
    if isinstance(folder, tuple):
        return (folder[0], f"{folder[1]}/{name}")
    return os.path.join(folder, name)


def label(folder: Folder) -> str:
    return url_of(folder[0], folder[1]) if isinstance(folder, tuple) else repr(folder)


class Lease:
    """``folder`` created with its lease, after removing the folders of the same target whose
    writer is dead. With ``hold`` the lease is kept alive until ``release()`` (the writer
    waits for its result meanwhile): held by an ``flock`` locally, else renewed by a thread.
    Without, it is renewed only by ``renew`` (each step that writes a piece)."""

    def __init__(self, folder: Folder, hold: bool) -> None:
        self.folder = folder
        self.fd: int | None = None
        self.stop = threading.Event()
        self.keeper: threading.Thread | None = None
        if isinstance(folder, tuple):
            _put_lease(folder)
        else:
            os.mkdir(folder)  # (the target's directory must exist: found out before any work)
            fd = os.open(os.path.join(folder, LEASE), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
            try:
                locked = hold and lock_file(fd, blocking=True) == HELD
                os.write(fd, _HELD if locked else _RENEWED)
            except BaseException:
                os.close(fd)
                raise
            if locked:
                self.fd = fd
            else:
                os.close(fd)
        with contextlib.suppress(Exception):  # (best effort: it never fails the write)
            remove_dead(folder)
        if hold and self.fd is None:
            self.keeper = threading.Thread(target=self._keep, daemon=True, name="msglc-lease")
            self.keeper.start()

    def _keep(self) -> None:
        while not self.stop.wait(LEASE_RENEW):
            renew(self.folder)

    def release(self) -> None:
        self.stop.set()
        if self.keeper is not None:
            self.keeper.join()
            self.keeper = None
        if self.fd is not None:
            os.close(self.fd)  # (the lock goes with it)
            self.fd = None

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def renew(folder: Folder) -> None:
    """Renew the lease of ``folder`` if it is one that is renewed (best effort: a failure
    here only shortens how long the folder is taken for a live writer's)."""
    with contextlib.suppress(Exception):
        if isinstance(folder, tuple):
            _put_lease(folder)
        else:
            lease = os.path.join(folder, LEASE)
            with open(lease, "rb") as f:
                if f.read() == _RENEWED:
                    os.utime(lease)


def _put_lease(folder: tuple[Any, str]) -> None:
    fs, path = folder
    try:
        fs.pipe_file(f"{path}/{LEASE}", _RENEWED)
    except Exception as e:
        failure = transport_error(e, f"writing the lease of {label(folder)}")
        if failure is e:
            raise
        raise failure from e


def ended(folder: Folder) -> bool:
    """Whether the write that made ``folder`` has ended and removed it (its lease is gone): a
    step still running then takes its piece back (``remove``), as nothing else would. Only a
    lease found missing says so: a question that fails (fsspec's ``exists`` answers False on
    any error) says not, and the piece stays, as a killed run's would, for a later write."""
    try:
        if isinstance(folder, tuple):
            fs, path = folder
            if is_s3(fs):
                return run(fs.loop, head_etag(fs, f"{path}/{LEASE}")) is None
            with contextlib.suppress(Exception):
                fs.invalidate_cache(path)
            fs.info(f"{path}/{LEASE}")
        else:
            os.stat(os.path.join(folder, LEASE))
    except FileNotFoundError:
        return True
    except Exception:
        return False
    return False


def remove(folder: Folder) -> None:
    """Remove ``folder`` and everything in it; an ``OSError`` says what could not be. The lease
    goes first: a step that writes a piece after that sees the write ended (``ended``) and
    removes its piece; one that wrote it before is listed here."""
    if isinstance(folder, tuple):
        fs, path = folder
        if is_s3(fs):
            run(fs.loop, _remove_s3(fs, path))
            return
        try:
            with contextlib.suppress(FileNotFoundError):
                fs.rm(f"{path}/{LEASE}")
            fs.rm(path, recursive=True)
        except FileNotFoundError:
            pass
        except Exception as e:
            raise OSError(f"could not remove {label(folder)}: {e}") from e
        return
    lease = os.path.join(folder, LEASE)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(lease)
    try:
        shutil.rmtree(folder)
    except FileNotFoundError:
        pass
    except OSError:
        with contextlib.suppress(OSError), open(lease, "wb") as f:  # what is left: a dead writer's,
            f.write(_HELD)  # held by no process, which the next write to the target removes
        raise


async def _remove_s3(fs: Any, path: str) -> None:
    """Delete every object under ``path/`` (listed by requests, not from s3fs's cache)."""
    bucket, prefix, _ = fs.split_path(path + "/")
    await call(fs, "delete_object", f"deleting {url_of(fs, path)}/{LEASE}", Bucket=bucket, Key=prefix + LEASE)
    for _ in range(3):  # objects written while the first pass listed are caught by the next
        keys = [obj["Key"] for obj in await _objects(fs, bucket, prefix)]
        if not keys:
            break
        for at in range(0, len(keys), 1000):
            batch = {"Objects": [{"Key": k} for k in keys[at : at + 1000]], "Quiet": True}
            answer = await call(fs, "delete_objects", f"deleting {url_of(fs, path)}", Bucket=bucket, Delete=batch)
            if answer.get("Errors"):
                first = answer["Errors"][0]
                raise OSError(
                    f"could not delete {len(answer['Errors'])} objects of {url_of(fs, path)}, "
                    f"such as {first.get('Key')!r}: {first.get('Code')} {first.get('Message')}"
                )
    with contextlib.suppress(Exception):
        fs.invalidate_cache(path)


async def _objects(fs: Any, bucket: str, prefix: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    token: dict[str, str] = {}
    while True:
        answer = await call(
            fs, "list_objects_v2", f"listing s3://{bucket}/{prefix}", Bucket=bucket, Prefix=prefix, **token
        )
        found += answer.get("Contents", [])
        if not answer.get("IsTruncated"):
            return found
        token = {"ContinuationToken": answer["NextContinuationToken"]}


def remove_dead(folder: Folder) -> None:
    """Remove the scratch folders beside ``folder`` (of the same target) whose writer is
    dead; ``folder``'s own lease was just made, and gives the storage's time now."""
    if isinstance(folder, tuple):
        fs, path = folder
        if is_s3(fs):
            run(fs.loop, _remove_dead_s3(fs, path))
        return  # (other object stores: no listing that tells the time reliably; left)
    directory, name = os.path.split(folder)
    target = name[: -len(".parts-") - 12]
    now = os.stat(os.path.join(folder, LEASE)).st_mtime
    with os.scandir(directory or ".") as entries:
        for entry in entries:
            other = entry.path != folder and _is_folder_of(entry.name, target)
            if other and entry.is_dir(follow_symlinks=False) and _dead_local(entry.path, now):
                with contextlib.suppress(OSError):
                    shutil.rmtree(entry.path)


def _is_folder_of(name: str, target: str) -> bool:
    return name.startswith(target) and bool(_FOLDER.fullmatch(name[len(target) :]))


def _dead_local(path: str, now: float) -> bool:
    lease = os.path.join(path, LEASE)
    try:
        fd = os.open(lease, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:  # no lease (yet?): judged by the age of what is there
        return _newest_local(path) < now - LEASE_EXPIRY
    try:
        kind = os.read(fd, 16)
        state = lock_file(fd, blocking=False)
        if state == BUSY:
            return False  # its writer holds it
        if kind == _HELD and state == HELD:
            return True  # held by a process that is gone
        return _newest_local(path) < now - LEASE_EXPIRY
    finally:
        os.close(fd)


def _newest_local(path: str) -> float:
    newest = os.stat(path).st_mtime
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                newest = max(newest, os.stat(os.path.join(root, name)).st_mtime)
    return newest


async def _remove_dead_s3(fs: Any, path: str) -> None:
    bucket, key, _ = fs.split_path(path)
    target = key[: -len(".parts-") - 12]
    mine = f"{key}/{LEASE}"
    newest: dict[str, Any] = {}
    now = None
    for obj in await _objects(fs, bucket, target + ".parts-"):
        if obj["Key"] == mine:
            now = obj["LastModified"]
        folder, rest = obj["Key"][: len(key)], obj["Key"][len(key) :]
        if folder == key or not rest.startswith("/") or not _FOLDER.fullmatch(folder[len(target) :]):
            continue
        newest[folder] = max(newest.get(folder, obj["LastModified"]), obj["LastModified"])
    if now is None:
        return
    for folder, last in newest.items():
        if (now - last).total_seconds() > LEASE_EXPIRY:
            with contextlib.suppress(OSError):
                await _remove_s3(fs, f"{bucket}/{folder}")
