"""Requests to S3 through s3fs, with the care a storage library owes on top of s3fs's retries.

- Every failure reaches the caller as an ``OSError`` (or an ``msglc.MsglcError``): the HTTP
  stack's own exceptions (botocore's, aiohttp's) are turned into ``ConnectionError``,
  ``TimeoutError`` or ``OSError``, naming the request, with the original as the cause.
- A ranged GET whose body came shorter than its ``Content-Range`` says was cut off on the way
  (by a proxy that shortened the Content-Length too): it is asked for again, and if it keeps
  coming short, a ``ConnectionError`` says so. It is not mistaken for a changed object.
- A read for an update (``download``) uses GETs only, never a listing (s3fs's listing cache
  can be stale), and returns the ETag of the version read, for a write pinned to it.
- Waiting on fsspec's event loop stays interruptible, and an interrupted request is cancelled
  (``run``).
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from msglc.errors import ArchiveChangedError, MsglcError

if TYPE_CHECKING:
    import asyncio

DOWNLOAD_CHUNK = 16 << 20  # bytes per ranged GET when an object is copied whole


def is_s3(fs: Any) -> bool:
    """Is ``fs`` an s3fs file system (one whose requests msglc makes itself)?"""
    return callable(getattr(fs, "_call_s3", None)) and callable(getattr(fs, "split_path", None))


def url_of(fs: Any, path: str) -> str:
    unstrip = getattr(fs, "unstrip_protocol", None)
    return str(unstrip(path)) if callable(unstrip) else path


# -- errors --
def response_of(error: BaseException) -> dict[str, Any]:
    """S3's answer to a failed request: on botocore's error, which s3fs chains as the cause."""
    for e in (error, error.__cause__):
        response = getattr(e, "response", None)
        if isinstance(response, dict):
            return response
    return {}


def status_of(error: BaseException) -> int | None:
    status = response_of(error).get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None


def code_of(error: BaseException) -> str | None:
    code = response_of(error).get("Error", {}).get("Code")
    return code if isinstance(code, str) else None


def precondition_failed(error: BaseException) -> bool:
    """Is this S3's 412 for a condition (``If-Match``, ``If-None-Match``) that did not hold?"""
    return status_of(error) == 412


def conflicted(error: BaseException) -> bool:
    """Is this S3's 409 for a conditional write that met another write or a delete meanwhile?"""
    return status_of(error) == 409 and code_of(error) in ("ConditionalRequestConflict", "OperationAborted")


def transport_error(error: BaseException, what: str) -> BaseException:
    """``error`` as a caller may meet it: an ``OSError`` or an ``MsglcError`` as it is (and
    anything that is not an ``Exception``, such as a cancellation); any other exception of the
    HTTP stack as a ``TimeoutError``, a ``ConnectionError`` or an ``OSError`` that says
    ``what`` failed, the original chained as its cause."""
    if isinstance(error, (OSError, MsglcError)) or not isinstance(error, Exception):
        return error
    kind = type(error).__name__
    message = f"{what} failed: {error} ({type(error).__module__}.{kind})"
    new: OSError
    if "Timeout" in kind:
        new = TimeoutError(errno.ETIMEDOUT, message)
    elif any(word in kind for word in ("Connect", "Disconnect", "Closed", "Payload", "Streaming", "IncompleteRead")):
        new = ConnectionError(errno.ECONNRESET, message)
    else:
        new = OSError(errno.EIO, message)
    new.__cause__ = error
    return new


async def call(fs: Any, method: str, what: str, **kwargs: Any) -> dict[str, Any]:
    """One S3 request through s3fs (its retries, its error translation), any other failure
    turned into an ``OSError`` (``transport_error``)."""
    try:
        answer: dict[str, Any] = await fs._call_s3(method, **kwargs)
    except Exception as e:
        failure = transport_error(e, what)
        if failure is e:
            raise
        raise failure from e
    return answer


# -- reads --
@dataclass
class Answer:
    """The bytes of a ranged GET, the ETag of the version they came from and the object's
    size (from ``Content-Range``; None when the answer had none)."""

    data: bytes
    etag: str | None
    size: int | None


def _content_range(answer: dict[str, Any]) -> tuple[int, int, int] | None:
    """(first, last, size) from ``Content-Range: bytes first-last/size``."""
    value = answer.get("ContentRange")
    if not isinstance(value, str) or not value.startswith("bytes "):
        return None
    span, _, size = value[6:].partition("/")
    first, _, last = span.partition("-")
    try:
        return int(first), int(last), int(size)
    except ValueError:
        return None


async def get_object(
    fs: Any,
    path: str,
    start: int,
    end: int | None,
    *,
    etag: str | None = None,
    on_precondition: Callable[[BaseException], BaseException] | None = None,
) -> Answer:
    """The bytes from ``start`` to ``end`` (``end`` None: the last ``-start`` bytes) of the
    object at ``path``, with ``If-Match: etag`` if given (``on_precondition(error)`` makes the
    exception for S3's 412). s3fs retries the request; a body cut off on the way (shorter
    than its ``Content-Range``, or ended early) is asked for again, up to ``fs.retries``
    times in all, then raises a ``ConnectionError``."""
    import asyncio

    bucket, key, version = fs.split_path(path)
    args: dict[str, Any] = {"Bucket": bucket, "Key": key}
    args["Range"] = f"bytes={start}" if end is None else f"bytes={start}-{end - 1}"
    if version:
        args["VersionId"] = version
    if etag is not None:
        args["IfMatch"] = etag
    what = f"GET {args['Range']} of {url_of(fs, path)}"
    attempts = max(1, getattr(fs, "retries", 1))
    for attempt in range(attempts):
        try:
            answer = await call(fs, "get_object", what, **args)
        except OSError as e:
            if on_precondition is not None and precondition_failed(e):
                raise on_precondition(e) from None
            raise
        try:
            data: bytes = await answer["Body"].read()
        except Exception as e:
            failure = transport_error(e, what)
            if attempt + 1 == attempts:
                raise failure from e
            await asyncio.sleep(min(0.1 * 1.7**attempt, 5))
            continue
        finally:
            answer["Body"].close()
        span = _content_range(answer)
        if span is not None and len(data) != span[1] + 1 - span[0]:
            # the answer says which bytes it holds, and holds fewer: cut off on the way (the
            # object is the same one; a changed object answers with its own range and ETag)
            if attempt + 1 == attempts:
                raise ConnectionError(
                    errno.ECONNRESET,
                    f"{what}: {len(data)} bytes came of the {span[1] + 1 - span[0]} the answer announced "
                    f"(Content-Range bytes {span[0]}-{span[1]}/{span[2]}), {attempts} times: cut off on the way; "
                    "try again",
                )
            await asyncio.sleep(min(0.1 * 1.7**attempt, 5))
            continue
        return Answer(data, answer.get("ETag"), span[2] if span is not None else None)
    raise AssertionError("unreachable")


async def head_etag(fs: Any, path: str) -> str | None:
    """The ETag of the object at ``path`` now (a HEAD request, not a listing); None if there
    is no such object."""
    bucket, key, version = fs.split_path(path)
    args: dict[str, Any] = {"Bucket": bucket, "Key": key, **({"VersionId": version} if version else {})}
    try:
        answer = await call(fs, "head_object", f"HEAD of {url_of(fs, path)}", **args)
    except FileNotFoundError:
        return None
    etag = answer.get("ETag")
    return etag if isinstance(etag, str) else None


def download(fs: Any, path: str, out: IO[bytes]) -> tuple[bool, str | None]:
    """Copy the object at ``path`` into ``out`` with ranged GETs (a missing object is S3's
    404, never a listing's guess), every one after the first pinned to the version the first
    came from: whether there is an object, and its ETag. A version replaced midway raises
    ``ArchiveChangedError``."""

    def changed(error: BaseException | None = None) -> ArchiveChangedError:
        return ArchiveChangedError(f"{url_of(fs, path)} changed while it was being read (another writer?): try again")

    async def copy() -> tuple[bool, str | None]:
        try:
            first = await get_object(fs, path, 0, DOWNLOAD_CHUNK)
        except FileNotFoundError:
            return False, None
        except OSError as e:
            if status_of(e) != 416:  # the range of an empty object is not satisfiable
                raise
            etag = await head_etag(fs, path)
            return etag is not None, etag
        out.write(first.data)
        size = first.size if first.size is not None else len(first.data)
        at = len(first.data)
        while at < size:
            answer = await get_object(
                fs, path, at, min(size, at + DOWNLOAD_CHUNK), etag=first.etag, on_precondition=changed
            )
            if not answer.data or (first.etag and answer.etag and answer.etag != first.etag):
                raise changed()
            out.write(answer.data)
            at += len(answer.data)
        return True, first.etag

    found: tuple[bool, str | None] = run(fs.loop, copy())
    return found


# -- waiting on fsspec's loop --
def run(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> Any:
    """``coro``'s result, run as a task on ``loop`` (the file system's, in another thread).
    Waiting stays interruptible; if it is interrupted (KeyboardInterrupt, or any exception
    raised in this thread) the task is cancelled and its clean-up (an upload aborted) awaited
    before the exception goes on. fsspec's ``sync`` would leave the task running: an upload
    would complete, and its target be replaced, after the caller gave up."""
    import asyncio
    import threading

    try:
        running = asyncio.get_running_loop()
    except RuntimeError:  # none: the usual case
        running = None
    if running is loop:
        coro.close()
        raise NotImplementedError("a write to S3 called on fsspec's own event loop would wait for itself")
    finished = threading.Event()
    task: list[asyncio.Task[Any]] = []

    def start() -> None:
        task.append(loop.create_task(coro))
        task[0].add_done_callback(lambda _: finished.set())

    loop.call_soon_threadsafe(start)
    try:
        while not finished.wait(1):  # in slices: a signal interrupts the wait between them
            pass
    except BaseException:
        loop.call_soon_threadsafe(lambda: task[0].cancel())  # after start: the loop runs them in order
        finished.wait()
        raise
    return task[0].result()
