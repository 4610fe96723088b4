"""Object storage for the tests and the benchmark's remote figures: an S3-compatible server on
loopback (moto), buckets on it that are removed after use, and a file system wrapper that adds
a fixed latency to every request."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fsspec.asyn import AsyncFileSystem


@contextmanager
def s3_server() -> Iterator[dict[str, Any]]:
    """A moto S3 server on 127.0.0.1 (threads of this process); yields the storage options
    that point s3fs at it. Nothing leaves the machine."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": f"http://{host}:{port}"},
            "skip_instance_cache": True,
        }
    finally:
        server.stop()


@contextmanager
def s3_bucket(options: dict[str, Any], name: str) -> Iterator[Any]:
    """A new bucket ``name`` on the server ``options`` reach; yields an s3fs file system for it.
    Afterwards the bucket is removed with its objects and open uploads, so that users of one
    server for a whole test session leave nothing behind for each other (nor in its memory)."""
    import fsspec

    fs = fsspec.filesystem("s3", **options)
    fs.mkdir(name)
    try:
        yield fs
    finally:
        for upload in fs.call_s3("list_multipart_uploads", Bucket=name).get("Uploads", []):
            fs.call_s3("abort_multipart_upload", Bucket=name, Key=upload["Key"], UploadId=upload["UploadId"])
        fs.rm(name, recursive=True)


class LatencyFileSystem(AsyncFileSystem):  # type: ignore[misc]  # (fsspec has no types)
    """Another file system's files behind ``latency`` seconds per request plus
    ``size / bandwidth`` for the bytes; concurrent requests overlap, as they do against a real
    object store. ``requests`` counts them."""

    protocol = "latency"
    cachable = False

    def __init__(self, inner: Any, latency: float = 0.02, bandwidth: float = 100e6, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.inner = inner
        self.latency = latency
        self.bandwidth = bandwidth
        self.requests = 0

    async def _cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        self.requests += 1
        data: bytes = await self._inner("cat_file", path, start=start, end=end)
        await asyncio.sleep(self.latency + len(data) / self.bandwidth)
        return data

    async def _info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        self.requests += 1
        await asyncio.sleep(self.latency)
        info: dict[str, Any] = await self._inner("info", path)
        return info

    async def _inner(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """The wrapped file system's answer (awaited on the shared fsspec loop if it is async)."""
        if getattr(self.inner, "async_impl", False):
            return await getattr(self.inner, "_" + method)(*args, **kwargs)
        return getattr(self.inner, method)(*args, **kwargs)
