"""Turn an object into an archive: ``dumps`` to bytes, ``dump`` to a path or a file object.

Everything is encoded and indexed in memory before the first byte is written, so a value that
cannot be stored fails before any output exists. Writing to a path goes through a temporary
file in the same directory that replaces the target only once it is complete.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import suppress
from typing import Any, BinaryIO

import msgspec

from . import validate
from .bulk import ParallelCrc, gc_paused
from .config import current
from .format import HEADER_SIZE, Trailer, pack_header
from .indexer import TocBuilder

_encoder = msgspec.msgpack.Encoder()


def _encode(obj: Any) -> bytes:
    try:
        return _encoder.encode(obj)
    except OverflowError:
        path = validate.find_int_out_of_range(obj)
        where = "/".join(map(str, path)) if path else "the root"
        raise OverflowError(f"msglc cannot store an int outside -2**63 .. 2**64-1 (at {where})") from None
    except TypeError:
        validate.check_value_or_raise(obj)
        raise
    except RecursionError:
        raise ValueError("object is nested too deeply or contains a reference to itself") from None


class Encoded:
    """An archive ready to write: header, data and TOC now, the trailer once the checksum is in."""

    def __init__(self, obj: Any, options: dict[str, Any]) -> None:
        cfg = current(**options)
        self.threshold = cfg.small_obj_optimization_threshold
        with gc_paused(cfg.disable_gc):
            self.data = _encode(obj)
            self.checksum = ParallelCrc(self.data)
            builder = TocBuilder(self.data, self.threshold)
            try:
                self.root = builder.build_root(obj)
            except validate.Unsupported as e:
                self.checksum.result()
                raise e.error() from None
            except RecursionError:
                self.checksum.result()
                raise ValueError("object is nested too deeply to index") from None
        self.toc = builder.toc
        self.header = pack_header()

    def body(self) -> list[bytes | bytearray]:
        return [self.header, self.data, self.toc]

    def trailer(self) -> bytes:
        data_len = len(self.data)
        trailer = Trailer(
            data_off=HEADER_SIZE,
            data_len=data_len,
            toc_off=HEADER_SIZE + data_len,
            toc_len=len(self.toc),
            root_pos=self.root[0],
            root_len=self.root[1],
            data_crc=self.checksum.result(),
            threshold=self.threshold,
        )
        return trailer.pack(self.header)

    def write_to(self, f: Any) -> None:
        for part in self.body():
            f.write(part)
        f.write(self.trailer())


def dumps(obj: Any, **options: Any) -> bytes:
    """The archive for ``obj`` as bytes. Options: see ``msglc.configure``."""
    encoded = Encoded(obj, options)
    return b"".join([*encoded.body(), encoded.trailer()])


def dump(target: str | os.PathLike | BinaryIO, obj: Any, **options: Any) -> None:
    """Write ``obj`` as an archive to a path (atomically) or to a writable binary file object.

    The file object is written sequentially, never seeked, so pipes and sockets work.
    """
    encoded = Encoded(obj, options)
    if isinstance(target, (str, os.PathLike)):
        _write_atomically(os.fspath(target), encoded)
    elif hasattr(target, "write"):
        encoded.write_to(target)
    else:
        encoded.checksum.result()
        raise TypeError(f"dump() target must be a path or a writable binary file, not {type(target).__name__}")


def _write_atomically(path: str | bytes, encoded: Encoded) -> None:
    """Write to a temporary sibling and rename it over ``path`` only when complete."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=".msglc-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            encoded.write_to(f)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
