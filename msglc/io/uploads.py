"""Writing archives to object storage: streamed or spooled uploads that appear only once
complete, and the read that a read-modify-write (a remote ``append``) starts from."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any, BinaryIO, cast

from msglc.io.multipart import s3_target
from msglc.io.names import Expect, RemotePath
from msglc.io.remote import S3Source
from msglc.io.s3 import download, is_s3

COPY_CHUNK = 1 << 22


@contextmanager
def spooled_target(target: RemotePath) -> Iterator[BinaryIO]:
    """A local temporary file, uploaded to ``target`` once the block completes: for writers
    that seek back (``LazyWriter``); ``dump`` and ``combine`` stream instead."""
    import tempfile

    with tempfile.TemporaryFile() as f:
        yield f
        f.seek(0)
        with remote_target(target) as out:
            shutil.copyfileobj(f, out, COPY_CHUNK)


@contextmanager
def remote_target(target: RemotePath) -> Iterator[BinaryIO]:
    """A file streamed to ``target``. Where the file system defers the commit (S3 and the other
    object stores: an object appears when its upload completes) the write is atomic: on failure
    it is discarded and an existing object is left as it was. On S3 msglc makes the requests
    itself (``multipart.S3Upload``): a write pinned by ``target.expect`` is conditional, an
    answer lost is told from a failure, and no upload is left open. Files that cannot defer
    it (no ``commit``: a zip entry through ``ZipFileSystem``, SFTP, FTP, ...) are written in
    place, so there a failure leaves what was written (removed where the file system can
    remove it). A file system made for this name alone (``target.owned``) is closed after: it
    finishes a zip."""
    if is_s3(target.fs):
        with s3_target(target) as upload:
            yield cast(BinaryIO, upload)
        return
    try:
        f = target.fs.open(target.path, "wb", autocommit=False)
    except NotImplementedError:  # a file system that only reads (http, reference, ...)
        fs = type(target.fs).__name__
        raise io.UnsupportedOperation(f"cannot write {target.path!r}: {fs} has no writable files") from None
    deferred = callable(getattr(f, "commit", None)) and callable(getattr(f, "discard", None))
    try:
        with (_committed if deferred else _in_place)(target, f):
            yield f
    finally:
        if target.owned and callable(getattr(target.fs, "close", None)):
            target.fs.close()


@contextmanager
def _committed(target: RemotePath, f: Any) -> Iterator[BinaryIO]:
    """Commit ``f`` if the block completes, else discard it."""
    try:
        yield f
        f.close()
        f.commit()
    except BaseException:
        try:
            f.discard()  # aborts a multipart upload (nothing left behind to be billed)
        finally:
            f.closed = True  # nothing more is written or committed
        raise


@contextmanager
def _in_place(target: RemotePath, f: Any) -> Iterator[BinaryIO]:
    """Close ``f`` either way (a zip takes no other entry while one is open); after a failure,
    remove the part written if the file system can (a zip cannot remove an entry)."""
    try:
        with f:
            yield f
    except BaseException:
        with suppress(Exception):
            target.fs.rm_file(target.path)
        raise


def fetch_for_update(target: RemotePath, out: IO[bytes]) -> tuple[bool, RemotePath]:
    """Copy the object ``target`` names into ``out`` to be updated: whether there is one, and
    where to write the result. The object is read by real requests, never judged from a
    listing (s3fs keeps listings, and a stale one would call an existing archive missing).
    On S3 the result's target is pinned to the version read (``If-Match`` its ETag, or
    ``If-None-Match: *`` if there was none), so that a change meanwhile fails the write
    (``ArchiveChangedError``) instead of being lost. Other file systems cannot pin a write: a
    change between this read and the write is overwritten."""
    fs = target.fs
    if is_s3(fs):
        found, etag = download(fs, target.path, out)
        if found and etag is None:  # a store that gives no ETag: nothing to pin to
            return True, target
        return found, target.pinned(Expect(etag))
    with suppress(Exception):  # whatever fsspec kept of it is not asked
        fs.invalidate_cache(target.path)
    try:
        f = fs.open(target.path, "rb")
    except FileNotFoundError:
        return False, target
    with f:
        shutil.copyfileobj(f, out, COPY_CHUNK)
    return True, target


def pinned_to_sources(target: Any, sources: Iterable[Any]) -> Any:
    """``target``, pinned to the version that was read of it when it is also one of the
    ``sources`` (an S3 object rewritten from itself: recompressed, or combined with other
    archives), so that a change meanwhile fails the write instead of being lost; else as it
    is."""
    if not isinstance(target, RemotePath) or target.expect is not None or not is_s3(target.fs):
        return target
    where = target.fs.split_path(target.path)
    for src in sources:
        if isinstance(src, S3Source) and src.etag and src.fs == target.fs and src.fs.split_path(src.path) == where:
            return target.pinned(Expect(src.etag))
    return target
