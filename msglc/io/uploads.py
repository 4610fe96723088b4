"""Writing archives to object storage: streamed or spooled uploads that appear only once
complete."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, BinaryIO

from msglc.io.names import RemotePath


@contextmanager
def spooled_target(target: RemotePath) -> Iterator[BinaryIO]:
    """A local temporary file, uploaded to ``target`` once the block completes: for writers
    that seek back (``LazyWriter``); ``dump`` and ``combine`` stream instead."""
    import shutil
    import tempfile

    with tempfile.TemporaryFile() as f:
        yield f
        f.seek(0)
        with remote_target(target) as out:
            shutil.copyfileobj(f, out, 1 << 22)


@contextmanager
def remote_target(target: RemotePath) -> Iterator[BinaryIO]:
    """A file streamed to ``target``. Where the file system defers the commit (S3 and the other
    object stores: an object appears when its upload completes) the write is atomic: on failure
    it is discarded and an existing object is left as it was. Files that cannot defer it (no
    ``commit``: a zip entry through ``ZipFileSystem``, SFTP, FTP, ...) are written in place, so
    there a failure leaves what was written (removed where the file system can remove it). A
    file system made for this name alone (``target.owned``) is closed after: it finishes a zip."""
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
