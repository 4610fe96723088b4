"""Turn an object into an archive: ``dumps`` to bytes, ``dump`` to a path or a file object.

Everything is encoded and indexed in memory before the first byte is written, so a value that
cannot be stored fails before any output exists. Writing to a path goes through a temporary
file in the same directory that replaces the target only once it is complete.
"""

from __future__ import annotations

import gc
import os
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, BinaryIO

import msgspec

from . import validate
from .config import current
from .format import HEADER_SIZE, Trailer, pack_header
from .indexer import TocBuilder

_encoder = msgspec.msgpack.Encoder()


@contextmanager
def gc_paused(pause: bool) -> Iterator[None]:
    """Pause the cyclic GC: building millions of objects otherwise triggers repeated full scans."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


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


def encode_parts(obj: Any, **options: Any) -> list[bytes | bytearray]:
    """The archive for ``obj`` as a list of byte strings to write in order."""
    cfg = current(**options)
    threshold = cfg.small_obj_optimization_threshold
    with gc_paused(cfg.disable_gc):
        buf = _encode(obj)
        builder = TocBuilder(buf, threshold)
        try:
            root_pos, root_len = builder.build_root(obj)
        except validate.Unsupported as e:
            raise e.error() from None
        except RecursionError:
            raise ValueError("object is nested too deeply to index") from None
    toc = builder.toc
    trailer = Trailer(
        data_off=HEADER_SIZE,
        data_len=len(buf),
        toc_off=HEADER_SIZE + len(buf),
        toc_len=len(toc),
        root_pos=root_pos,
        root_len=root_len,
        data_crc=zlib.crc32(buf),
        threshold=threshold,
    )
    header = pack_header()
    return [header, buf, toc, trailer.pack(header)]


def dumps(obj: Any, **options: Any) -> bytes:
    """The archive for ``obj`` as bytes. Options: see ``msglc.configure``."""
    return b"".join(encode_parts(obj, **options))


def dump(target: str | os.PathLike | BinaryIO, obj: Any, **options: Any) -> None:
    """Write ``obj`` as an archive to a path (atomically) or to a writable binary file object.

    The file object is written sequentially, never seeked, so pipes and sockets work.
    """
    parts = encode_parts(obj, **options)
    if isinstance(target, (str, os.PathLike)):
        _write_atomically(os.fspath(target), parts)
    elif hasattr(target, "write"):
        for part in parts:
            target.write(part)
    else:
        raise TypeError(f"dump() target must be a path or a writable binary file, not {type(target).__name__}")


def _write_atomically(path: str | bytes, parts: list) -> None:
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
            for part in parts:
                f.write(part)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
