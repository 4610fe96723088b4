"""Writing S3 objects (through s3fs) so that a write either leaves the object it meant to, or
raises with the old object as it was and no multipart upload left open; never reports a
failure for an object that is in place.

- **Conditions.** A write may be pinned (``Expect``): ``If-Match`` the ETag of the version it
  was made from, or ``If-None-Match: *`` where there was none; S3 then refuses it (412, or
  409 for a conflict) if another writer came first, and ``ArchiveChangedError`` says so.
- **Answers lost.** A request whose answer is lost is retried (by botocore, then s3fs), and
  the retry may meet the effect of the first attempt: a ``CompleteMultipartUpload`` answered
  ``NoSuchUpload`` (the upload is already complete), a conditional ``PutObject`` answered 412
  (the object is already ours). Any failed write is checked with a HEAD of the object: if its
  ETag is the one our bytes give (``md5`` of the body, or of the parts' MD5s then ``-N``),
  the write took place. (Stores whose ETags are not MD5s, such as S3 with SSE-KMS, cannot be
  checked this way: the failure is reported.)
- **Uploads left open.** A ``CreateMultipartUpload`` whose answer was lost made an upload we
  never hear of. The uploads of the key are listed before and after creating ours, and those
  that appeared meanwhile, other than ours, are aborted. (A concurrent writer of the same key
  starting in that moment loses its upload and fails; without permission to list uploads,
  nothing is aborted.) An upload that fails is aborted; if even that fails, the error says
  which upload was left.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from msglc.errors import ArchiveChangedError
from msglc.io.names import Expect, RemotePath
from msglc.io.s3 import call, conflicted, head_etag, precondition_failed, run, url_of

MIN_PART = 5 << 20  # S3's smallest part but the last
DEFAULT_PART = 50 << 20  # s3fs's default block size


def condition(expect: Expect | None) -> dict[str, str]:
    """The request arguments of a pinned write."""
    if expect is None:
        return {}
    return {"IfNoneMatch": "*"} if expect.etag is None else {"IfMatch": expect.etag}


def md5_etag(body: bytes | bytearray | memoryview) -> str:
    """The ETag S3 gives an object written by one ``PutObject`` (without SSE-KMS or SSE-C)."""
    return f'"{hashlib.md5(body).hexdigest()}"'


def multipart_etag(tags: list[str]) -> str | None:
    """The ETag S3 gives the object a multipart upload of parts with ETags ``tags`` makes;
    None when a part's ETag is not an MD5 (it cannot be told then)."""
    digests = []
    for tag in tags:
        hexa = tag.strip('"')
        if len(hexa) != 32:
            return None
        try:
            digests.append(bytes.fromhex(hexa))
        except ValueError:
            return None
    return f'"{hashlib.md5(b"".join(digests)).hexdigest()}-{len(tags)}"'


def refused(fs: Any, path: str, expect: Expect) -> ArchiveChangedError:
    url = url_of(fs, path)
    if expect.etag is None:
        return ArchiveChangedError(
            f"{url} was created by another writer since it was found missing: nothing was written; try again"
        )
    return ArchiveChangedError(
        f"{url} changed since it was read (ETag {expect.etag}; another writer?): nothing was written; try again"
    )


async def settle(fs: Any, path: str, error: OSError, ours: str | None, expect: Expect | None) -> None:
    """After a write request failed with ``error``: return if the object now is the one it
    was to make (ETag ``ours``: an answer lost, then a retry that met its effect); else raise,
    ``ArchiveChangedError`` for a condition that did not hold."""
    if ours is not None:
        with suppress(OSError):
            if await head_etag(fs, path) == ours:
                return
    if expect is not None and (precondition_failed(error) or conflicted(error)):
        raise refused(fs, path, expect) from error
    raise error


async def put(fs: Any, path: str, body: bytes, expect: Expect | None) -> None:
    """The object at ``path`` written by one ``PutObject``."""
    bucket, key, _ = fs.split_path(path)
    try:
        what = f"PUT of {url_of(fs, path)}"
        await call(fs, "put_object", what, Bucket=bucket, Key=key, Body=body, **condition(expect))
    except OSError as e:
        await settle(fs, path, e, md5_etag(body), expect)


async def uploads_of(fs: Any, bucket: str, key: str) -> set[str] | None:
    """The ids of the multipart uploads of ``key`` open now; None if they cannot be listed."""
    found: set[str] = set()
    markers: dict[str, str] = {}
    try:
        while True:
            answer = await call(
                fs, "list_multipart_uploads", f"listing the uploads of {key}", Bucket=bucket, Prefix=key, **markers
            )
            found.update(u["UploadId"] for u in answer.get("Uploads", []) if u.get("Key") == key)
            if not answer.get("IsTruncated"):
                return found
            markers = {"KeyMarker": answer["NextKeyMarker"], "UploadIdMarker": answer["NextUploadIdMarker"]}
    except (OSError, KeyError):
        return None


async def abort(fs: Any, bucket: str, key: str, upload: str, failure: BaseException | None = None) -> None:
    """Abort an upload (one already gone is fine). If it cannot be, ``failure`` (the error
    the caller raises) gets a note naming the upload left open."""
    try:
        await call(
            fs, "abort_multipart_upload", f"aborting upload {upload} of {key}", Bucket=bucket, Key=key, UploadId=upload
        )
    except FileNotFoundError:
        pass
    except OSError as e:
        if failure is not None and hasattr(failure, "add_note"):
            failure.add_note(
                f"the multipart upload {upload} of s3://{bucket}/{key} could not be aborted ({e}) and is left open: "
                f"aws s3api abort-multipart-upload --bucket {bucket} --key {key} --upload-id {upload}"
            )


async def abort_strays(fs: Any, bucket: str, key: str, before: set[str] | None, keep: str | None) -> None:
    """Abort the uploads of ``key`` that were not open ``before`` ours was created, but ours
    (``keep``): made by attempts whose answers were lost."""
    if before is None:
        return
    now = await uploads_of(fs, bucket, key)
    for upload in sorted((now or set()) - before - {keep}):
        await abort(fs, bucket, key, upload)


async def create(fs: Any, path: str) -> str:
    """A new multipart upload of the object at ``path``: its id. Uploads that attempts of
    this request made, and whose answers were lost, are aborted (``abort_strays``); one
    cancelled while S3 makes it is aborted once made."""
    import asyncio

    bucket, key, _ = fs.split_path(path)
    before = await uploads_of(fs, bucket, key)
    making = asyncio.ensure_future(
        call(fs, "create_multipart_upload", f"starting an upload of {url_of(fs, path)}", Bucket=bucket, Key=key)
    )
    try:
        upload: str = (await asyncio.shield(making))["UploadId"]
    except asyncio.CancelledError:  # cancelled while S3 makes the upload: abort it once made
        with suppress(Exception):
            made = await making
            await abort(fs, bucket, key, made["UploadId"])
        with suppress(Exception):
            await abort_strays(fs, bucket, key, before, None)
        raise
    except BaseException:
        await abort_strays(fs, bucket, key, before, None)
        raise
    await abort_strays(fs, bucket, key, before, upload)
    return upload


async def complete(fs: Any, path: str, upload: str, parts: list[dict[str, Any]], expect: Expect | None) -> None:
    """Complete ``upload`` of ``parts`` (each ``PartNumber``, ``ETag``). An answer lost (the
    retry then told ``NoSuchUpload`` or 412) is no failure when the object is ours."""
    bucket, key, _ = fs.split_path(path)
    try:
        await call(
            fs,
            "complete_multipart_upload",
            f"completing the upload of {url_of(fs, path)}",
            Bucket=bucket,
            Key=key,
            UploadId=upload,
            MultipartUpload={"Parts": parts},
            **condition(expect),
        )
    except OSError as e:
        await settle(fs, path, e, multipart_etag([p["ETag"] for p in parts]), expect)


class S3Upload:
    """A binary file written to the S3 object at ``path``, which appears only on ``commit()``:
    by one ``PutObject`` if it is smaller than ``part_size``, else by a multipart upload of
    ``part_size`` parts sent as they fill (one part's bytes held in memory). ``discard()``
    aborts the upload. ``expect`` pins the write (``Expect``)."""

    def __init__(self, fs: Any, path: str, expect: Expect | None = None, part_size: int = DEFAULT_PART) -> None:
        self.fs, self.path, self.expect = fs, path, expect
        self.bucket, self.key, version = fs.split_path(path)
        if version:
            raise ValueError(f"cannot write to a version of an object ({url_of(fs, path)})")
        self.part_size = max(MIN_PART, part_size)
        self.buffer = bytearray()
        self.parts: list[dict[str, Any]] = []
        self.upload: str | None = None
        self.pos = 0
        self.closed = False

    # -- the file --
    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False

    def tell(self) -> int:
        return self.pos

    def flush(self) -> None:
        pass

    def write(self, data: Any) -> int:
        if self.closed:
            raise ValueError("I/O operation on a closed upload")
        view = memoryview(data).cast("B")
        self.buffer += view
        self.pos += len(view)
        while len(self.buffer) >= self.part_size:
            part = bytes(memoryview(self.buffer)[: self.part_size])  # (one copy; the view is gone at once)
            del self.buffer[: self.part_size]
            run(self.fs.loop, self._send(part))
        return len(view)

    async def _send(self, body: bytes) -> None:
        if self.upload is None:
            self.upload = await create(self.fs, self.path)
        number = len(self.parts) + 1
        answer = await call(
            self.fs,
            "upload_part",
            f"part {number} of the upload of {url_of(self.fs, self.path)}",
            Bucket=self.bucket,
            Key=self.key,
            UploadId=self.upload,
            PartNumber=number,
            Body=body,
        )
        part = {"PartNumber": number, "ETag": answer["ETag"]}
        if "ChecksumSHA256" in answer:
            part["ChecksumSHA256"] = answer["ChecksumSHA256"]
        self.parts.append(part)

    # -- the end --
    def commit(self) -> None:
        """Make the object: everything written, or nothing (then the caller calls ``discard``)."""
        if self.closed:
            raise ValueError("I/O operation on a closed upload")
        run(self.fs.loop, self._commit())
        self.closed = True
        self.buffer = bytearray()

    async def _commit(self) -> None:
        if self.upload is None:
            await put(self.fs, self.path, bytes(self.buffer), self.expect)
            return
        if self.buffer:
            await self._send(bytes(self.buffer))
        await complete(self.fs, self.path, self.upload, self.parts, self.expect)

    def discard(self, failure: BaseException | None = None) -> None:
        """Abort the upload, if one was started; ``failure``, the error that led here, is
        noted if the abort fails too."""
        self.closed = True
        self.buffer = bytearray()
        if self.upload is not None:
            upload, self.upload = self.upload, None
            with suppress(Exception):
                run(self.fs.loop, abort(self.fs, self.bucket, self.key, upload, failure))


@contextmanager
def s3_target(target: RemotePath) -> Iterator[S3Upload]:
    """``S3Upload`` of ``target`` committed if the block completes, else discarded."""
    fs = target.fs
    f = S3Upload(fs, target.path, target.expect, getattr(fs, "default_block_size", None) or DEFAULT_PART)
    try:
        yield f
        f.commit()
    except BaseException as e:
        f.discard(e)
        raise
    finally:
        with suppress(Exception):
            fs.invalidate_cache(target.path)
