"""Writing archives to object storage: streamed or spooled uploads that appear only once
complete."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, BinaryIO, cast

from msglc.io.multipart import s3_target
from msglc.io.names import RemotePath
from msglc.io.s3 import is_s3

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
    f = target.fs.open(target.path, "wb", autocommit=False)
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
