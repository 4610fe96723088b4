"""Names of archives: local paths, URLs, ``upath.UPath`` and fsspec paths resolved to a local
path or a ``RemotePath``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


def _fsspec() -> Any:
    try:
        import fsspec
    except ImportError:
        raise ImportError("remote archives need fsspec (and s3fs for S3): pip install fsspec s3fs") from None
    return fsspec


def is_local(fs: Any) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
    return "file" in protocol or "local" in protocol


def in_process(fs: Any) -> bool:
    """Does the fsspec file system ``fs`` keep its files in this process's memory
    (``memory://``, also behind a cache or ``dir::``), so that they are gone when it exits?"""
    for _ in range(8):  # wrappers hold the file system they wrap as .fs
        if fs is None:
            return False
        protocol = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
        if "memory" in protocol:
            return True
        fs = getattr(fs, "fs", None)
    return False


@dataclass(frozen=True)
class Expect:
    """What a write may replace (a read-modify-write's pin): the version with ETag ``etag``,
    or, with ``etag`` None, no object at all. S3 enforces it (``If-Match``, ``If-None-Match``);
    other file systems cannot."""

    etag: str | None


class RemotePath:
    """An object on an fsspec file system: where a remote archive is read from or written to.
    ``owned``: the file system was made for this name alone (from a URL, by a class fsspec does
    not share between callers, such as a zip), so a write closes it: that is what finishes a
    zip. ``expect``: what a write to it may replace (None: anything)."""

    def __init__(self, fs: Any, path: str, owned: bool = False, expect: Expect | None = None) -> None:
        self.fs = fs
        self.path = path
        self.owned = owned
        self.expect = expect

    def pinned(self, expect: Expect | None) -> RemotePath:
        """The same object, written only if it still is what ``expect`` says."""
        return RemotePath(self.fs, self.path, self.owned, expect)

    def __repr__(self) -> str:
        return f"<RemotePath {self.path!r} on {type(self.fs).__name__}>"


def _names_its_fs(target: Any) -> bool:
    """Is ``target`` a path that carries its own file system (a ``upath.UPath``)?"""
    return (
        not isinstance(target, str)
        and not hasattr(target, "read")
        and hasattr(target, "fs")
        and isinstance(getattr(target, "path", None), str)
    )


def resolve_name(target: Any, fs: Any = None, storage_options: dict[str, Any] | None = None) -> Any:
    """A ``RemotePath`` when ``target`` names a remote archive: a URL such as
    ``"s3://bucket/key"`` (with ``storage_options`` for its file system), a ``upath.UPath``, or
    any path together with an fsspec file system ``fs``. A name on the local file system gives
    its local path; anything else (a local path, bytes, a file object) is returned as it is."""
    if isinstance(target, RemotePath) or (
        fs is None and not storage_options and not isinstance(target, str) and not hasattr(target, "fs")
    ):
        return target
    if fs is not None and (hasattr(target, "read") or hasattr(target, "write") or _names_its_fs(target)):
        fs = None  # an open file, or a UPath: it knows its file system (the published msglc ignores fs= there too)
    if fs is not None:
        if storage_options:
            raise TypeError("pass storage_options or fs, not both (the file system already has its options)")
        if not isinstance(target, (str, os.PathLike)):
            raise TypeError(f"with fs=, the archive is named by a path str, not {type(target).__name__}")
        path = os.fspath(target)
    elif isinstance(target, str) and "://" in target:
        fs, path = _fsspec().core.url_to_fs(target, **(storage_options or {}))
        if not is_local(fs):
            return RemotePath(fs, path, owned=not getattr(fs, "cachable", True))
    elif storage_options:
        raise TypeError("storage_options apply to URLs such as 's3://bucket/key' only")
    elif _names_its_fs(target):
        fs, path = target.fs, target.path  # a UPath (or a RemotePath)
    else:
        return target
    return path if is_local(fs) else RemotePath(fs, path)
