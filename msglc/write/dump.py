"""Turn a Python value into an archive: ``dumps`` to bytes, ``dump`` to a path or a file object.

A value that cannot be stored fails before any output exists: a file object gets its first
byte only after the whole object is encoded and indexed; a path is written through a temporary
file in the same directory (the data section while the TOC is built) that replaces the target
only once it is complete, and is removed on any failure.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterable
from typing import Any, BinaryIO, cast

from msglc.format.layout import HEADER_SIZE
from msglc.io.atomic import atomic_file, check_target, end_here, is_named
from msglc.io.names import RemotePath, resolve_name
from msglc.util.runtime import join
from msglc.write.encoder import Encoded
from msglc.write.streaming import stream, stream_bytes
from msglc.write.unsized import Streamed, stop_iteration_error


def dumps(obj: Any, **options: Any) -> bytes:
    """The archive for ``obj`` as bytes. Options: see ``msglc.configure``."""
    try:
        try:
            encoded = Encoded(obj, options)
            encoded.index()
        except Streamed:  # generators, Pairs or containers with their own iteration inside
            _refuse_sorted(options)
            return stream_bytes(obj, options)
        return b"".join(encoded.sections())
    except StopIteration as e:  # from a value's items() or __iter__: it must not end the caller's loop
        raise stop_iteration_error() from e


def _refuse_sorted(options: dict[str, Any]) -> None:
    """``order="sorted"`` asked of this call for a value written as it is produced: its
    streamed parts come in their own order, which the writer keeps (a configured order does
    not apply to them, as it does not to ``LazyWriter``)."""
    if options.get("order") == "sorted":
        raise ValueError(
            "order='sorted' sorts the dicts of a value held whole; this one holds generators, Pairs or "
            "containers written from their own iteration, which are written in the order they give: "
            "sort them first (Pairs(sorted(pairs))), or leave order= out"
        )


def dump(
    target: str | bytes | os.PathLike[str] | BinaryIO,
    obj: Any,
    *,
    fs: Any = None,
    storage_options: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """``msglc.dump`` of a value (anything but a reader or a lazy part): see ``msglc.api.dump``."""
    dest = resolve_name(target, fs, storage_options)  # a RemotePath for a remote name
    check_target(dest, "dump")
    is_path = is_named(dest)
    try:
        try:
            encoded = Encoded(obj, options)
            if is_path:
                _write_atomically(cast("str | bytes | os.PathLike[str] | RemotePath", dest), encoded)
                return
            encoded.index()  # every value checked before the first byte reaches the caller's file
        except (
            Streamed
        ):  # generators, Pairs or containers with their own iteration inside: written as they are produced
            _refuse_sorted(options)
            return stream(dest, obj, options)  # takes a RemotePath too
        out = cast(BinaryIO, dest)  # not a name: a writable binary file (check_target)
        for part in list(encoded.sections()) if encoded.compression else encoded.sections():
            out.write(part)  # (compressed: every frame made before the first byte goes out)
        end_here(out)
    except StopIteration as e:  # from a value's items() or __iter__: it must not end the caller's loop
        raise stop_iteration_error() from e


def _write_atomically(path: str | bytes | os.PathLike[str] | RemotePath, encoded: Encoded) -> None:
    """Write through ``atomic_file``. The data section is written by a second thread while
    this one builds the TOC (file writes release the GIL); a value refused meanwhile only costs
    the temporary file, which is removed."""
    if encoded.compression is not None:  # the frames are made once the TOC is built
        encoded.index()
        with atomic_file(path, encoded.durable) as f:
            f.write(encoded.header)
            stored = encoded.compress_into(f)  # (each frame written as soon as it is made)
            f.write(encoded.trailer(stored))
        return
    try:
        with atomic_file(path, encoded.durable, HEADER_SIZE + encoded.data.size) as f:
            failed: list[BaseException] = []
            parts = itertools.chain((encoded.header,), encoded.data.chunks())
            writer = threading.Thread(target=_write_parts, args=(f, parts, failed), daemon=True)
            writer.start()
            try:
                encoded.index()
            finally:
                join(writer)
            if failed:
                raise failed[0]
            f.write(encoded.toc)
            f.write(encoded.trailer())
    except BaseException:
        encoded.checksum.wait()
        raise


def _write_parts(f: BinaryIO, parts: Iterable[bytes | memoryview], failed: list[BaseException]) -> None:
    try:
        for part in parts:
            f.write(part)
    except BaseException as e:  # reported by the caller after join
        failed.append(e)
