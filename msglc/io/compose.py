"""Objects put together on the S3 server from ranges of other objects (a multipart upload
whose parts are copied server-side, ``UploadPartCopy``), so that joining large archives in
object storage moves only the few bytes that are new: how ``concat`` writes to S3.

S3 requires every part but the last to hold at least 5 MiB, and a copied part at most 5 GiB:
``plan`` groups the pieces into parts that respect that, downloading only the ranges too short
to be a part of their own (and the start of a range that fills a short part up). A copied range
is pinned to the version of its object that was read (``CopySourceIfMatch``), so an object
replaced meanwhile fails the write instead of mixing versions. The object appears only when
the upload completes; a failure aborts it. Creating and completing the upload is
``msglc.io.multipart``'s (a pinned target, answers lost, uploads left open).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from msglc.io.multipart import MIN_PART, abort, complete, create
from msglc.io.names import RemotePath
from msglc.io.remote import S3Source
from msglc.io.s3 import call, is_s3, precondition_failed, run

if TYPE_CHECKING:
    import asyncio  # imported when used: import msglc stays free of it

MAX_COPY = 5 << 30  # S3's largest copied part
MAX_PARTS = 10_000  # S3's most parts in one upload
UPLOAD_PART = 8 << 20  # a part of downloaded pieces is sent once it holds this much
CONCURRENT_PARTS = 8  # parts in flight (a part of downloaded bytes is held in memory meanwhile)


@dataclass(frozen=True)
class Span:
    """``size`` bytes from ``offset`` of the object ``source`` reads."""

    source: Any  # an S3Source to be copied on the server; any Source is planned the same way
    offset: int
    size: int


Piece = bytes | Span
Part = Span | list[Piece]  # copied on the server, or uploaded (its spans downloaded first)


def composable(target: Any, pieces: Sequence[Piece]) -> bool:
    """Can ``target`` be put together from ``pieces`` on the server: an S3 object whose spans
    all lie in objects of the same S3 file system."""
    if not isinstance(target, RemotePath) or not is_s3(target.fs):
        return False
    return all(isinstance(p, bytes) or (isinstance(p.source, S3Source) and p.source.fs == target.fs) for p in pieces)


def plan(pieces: Sequence[Piece], min_part: int = MIN_PART, max_copy: int = MAX_COPY) -> list[Part]:
    """The parts of an upload that writes ``pieces`` in order: spans of at least ``min_part``
    bytes copied (cut to at most ``max_copy``), the rest gathered into uploaded parts of at
    least ``min_part`` bytes (but the last). Short pieces before a copied span join the
    uploaded part before them where there is one; else the part is filled up from the span's
    start (the whole span, if what would be left is too short to copy)."""
    parts: list[Part] = []
    pending: list[Piece] = []
    held = 0

    def place(into_last: bool) -> None:
        nonlocal pending, held
        if pending and into_last and parts and isinstance(parts[-1], list):
            parts[-1].extend(pending)
        elif pending:
            parts.append(pending)
        pending, held = [], 0

    for piece in pieces:
        if isinstance(piece, Span) and piece.size >= min_part:
            span = piece
            if pending and held < min_part and not (parts and isinstance(parts[-1], list)):
                take = min_part - held if span.size - (min_part - held) >= min_part else span.size
                pending.append(Span(span.source, span.offset, take))
                span = Span(span.source, span.offset + take, span.size - take)
            place(into_last=True)
            if span.size:
                parts.extend(_cut(span, max_copy))
            continue
        if isinstance(piece, bytes) or piece.size:
            pending.append(piece)
            held += len(piece) if isinstance(piece, bytes) else piece.size
        if held >= max(min_part, UPLOAD_PART):
            place(into_last=False)
    place(into_last=True)
    return parts


def _cut(span: Span, max_copy: int) -> list[Span]:
    """``span`` as copied parts of at most ``max_copy`` bytes, of nearly equal sizes."""
    count = -(-span.size // max_copy)
    bounds = [span.offset + span.size * k // count for k in range(count + 1)]
    return [Span(span.source, a, b - a) for a, b in zip(bounds, bounds[1:], strict=False)]


def compose(target: RemotePath, pieces: Sequence[Piece], progress: Callable[[int], None]) -> bool:
    """Write ``pieces`` as the object ``target``, copying spans on the server; False (nothing
    written) where that does not pay or S3 cannot: no span large enough to be copied, too many
    parts, or a store without ``UploadPartCopy``."""
    if not composable(target, pieces):
        return False
    parts = plan(pieces, MIN_PART)
    if not any(isinstance(p, Span) for p in parts) or len(parts) > MAX_PARTS:
        return False
    try:
        done: bool = run(target.fs.loop, _upload(target, parts, progress))
    finally:
        target.fs.invalidate_cache(target.path)
    return done


async def _upload(target: RemotePath, parts: list[Part], progress: Callable[[int], None]) -> bool:
    import asyncio

    fs = target.fs
    bucket, key, _ = fs.split_path(target.path)
    upload = await create(fs, target.path)  # (uploads made by attempts whose answers were lost: aborted)
    where = {"Bucket": bucket, "Key": key, "UploadId": upload}
    limit = asyncio.Semaphore(CONCURRENT_PARTS)
    sends = [asyncio.ensure_future(_part(fs, where, n, part, limit, progress)) for n, part in enumerate(parts, 1)]
    try:
        tags = await asyncio.gather(*sends)
    except BaseException as error:
        for send in sends:
            send.cancel()
        await asyncio.gather(*sends, return_exceptions=True)
        await abort(fs, bucket, key, upload, error)
        if _not_implemented(error):
            return False  # a store without server-side copy: the caller streams instead
        raise
    done = [{"PartNumber": n, "ETag": tag} for n, tag in enumerate(tags, 1)]
    try:
        await complete(fs, target.path, upload, done, target.expect)
    except BaseException as error:
        await abort(fs, bucket, key, upload, error)
        raise
    return True


async def _part(
    fs: Any, where: dict[str, Any], number: int, part: Part, limit: asyncio.Semaphore, progress: Callable[[int], None]
) -> str:
    """Send part ``number``: copied on the server, or its pieces uploaded; its ETag."""
    async with limit:
        if isinstance(part, Span):
            tag = await _copy_part(fs, where, number, part)
            progress(part.size)
            return tag
        body = b"".join([p if isinstance(p, bytes) else await _download(p) for p in part])
        what = f"part {number} of the upload of {where['Key']}"
        answer = await call(fs, "upload_part", what, PartNumber=number, Body=body, **where)
        progress(len(body))
        sent: str = answer["ETag"]
        return sent


async def _copy_part(fs: Any, where: dict[str, Any], number: int, span: Span) -> str:
    """``UploadPartCopy`` of ``span``, from the version of its object that was read."""
    bucket, key, version = fs.split_path(span.source.path)
    source = {"Bucket": bucket, "Key": key, **({"VersionId": version} if version else {})}
    pin = {"CopySourceIfMatch": span.source.etag} if span.source.etag else {}
    copied = f"bytes={span.offset}-{span.offset + span.size - 1}"
    try:
        answer = await call(
            fs,
            "upload_part_copy",
            f"copying {copied} of {span.source.path} into part {number} of {where['Key']}",
            PartNumber=number,
            CopySource=source,
            CopySourceRange=copied,
            **pin,
            **where,
        )
    except OSError as e:
        if precondition_failed(e):
            raise span.source.changed(f"ETag {span.source.etag} no longer matches") from None
        raise
    tag: str = answer["CopyPartResult"]["ETag"]
    return tag


async def _download(span: Span) -> bytes:
    import asyncio

    data: bytes = await span.source.get_object(span.offset, span.offset + span.size, asyncio.Semaphore(1))
    if len(data) != span.size:
        raise span.source.changed(f"{len(data)} bytes where {span.size} were asked for")
    return data


def _not_implemented(error: BaseException) -> bool:
    """Is this S3's answer that the store has no ``UploadPartCopy`` (501, NotImplemented)?"""
    response = getattr(error.__cause__, "response", None) or getattr(error, "response", None) or {}
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    code = response.get("Error", {}).get("Code")
    return bool(status == 501 or code == "NotImplemented")
