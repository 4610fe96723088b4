"""One value encoded for an archive: its data section (encoded once, in bulk), then its TOC
and trailer, so that ``dump`` can write the data while the TOC is still being built."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from itertools import repeat
from typing import Any

import msgspec

from msglc.config import current
from msglc.errors import CorruptedError
from msglc.format.hash_index import writer_block_bytes
from msglc.format.layout import Trailer, compressed_header, pack_header
from msglc.util import accel
from msglc.util.checksum import ParallelCrc
from msglc.util.optional import zstandard
from msglc.util.runtime import gc_paused
from msglc.write import values as validate
from msglc.write.arrays import ArrayEncoder, DataSection
from msglc.write.compress import (
    HEAD_FRAME,
    Chosen,
    FrameWriter,
    choose_dictionaries,
    frame_size,
    plan_frames,
    toc_layout,
)
from msglc.write.indexer import TocBuilder
from msglc.write.reindex import reindex

_FROM_DATA = object()  # Encoded.obj of an archive made from data bytes (of_data)


def _where(obj: Any, bad: Callable[[Any], bool]) -> str:
    path = validate.find_path(obj, bad)
    return "/".join(map(str, path)) if path else "the root"


def sorted_dicts(obj: Any) -> Any:
    """``obj`` with every dict's keys sorted (``order="sorted"``): ints first, by value, then
    strs, by code point (which is their UTF-8 bytes' order); lists and tuples are walked (and
    become lists), everything else is kept as it is. Sorted and rebuilt in C where it can be:
    only containers are visited one by one."""
    if isinstance(obj, dict):
        try:
            keys = sorted(dict.keys(obj))  # (the storage msgspec encodes, whatever a subclass overrides)
        except TypeError:  # keys of several types
            keys = sorted(dict.keys(obj), key=_key_order)
        value_of = obj.__getitem__ if type(obj) is dict else partial(dict.__getitem__, obj)
        out = dict(zip(keys, map(value_of, keys), strict=True))
        if any(map(isinstance, out.values(), repeat(_CONTAINERS))):
            for k, v in out.items():
                if isinstance(v, _CONTAINERS):
                    out[k] = sorted_dicts(v)
        return out
    if isinstance(obj, (list, tuple)):
        if not any(map(isinstance, obj, repeat(_CONTAINERS))):
            return list(obj)
        return [sorted_dicts(v) if isinstance(v, _CONTAINERS) else v for v in obj]
    return obj


_CONTAINERS = (dict, list, tuple)


def _key_order(key: Any) -> tuple[int, Any]:
    if isinstance(key, int) and not isinstance(key, bool):
        return 0, key
    return (1, key) if isinstance(key, str) else (2, repr(key))  # (others are refused when stored)


def encode_value(obj: Any, arrays: ArrayEncoder) -> bytes:
    try:
        return msgspec.msgpack.Encoder(enc_hook=arrays).encode(obj)
    except OverflowError:
        validate.raise_if_streamed(obj)  # the value may sit in a subclass's storage, which is not what gets written
        raise OverflowError(
            f"msglc cannot store an int outside -2**63 .. 2**64-1 (at {_where(obj, validate.int_out_of_range)})"
        ) from None
    except UnicodeEncodeError:
        validate.raise_if_streamed(obj)
        raise ValueError(
            "msglc cannot store a str that is not valid Unicode, such as a lone surrogate "
            f"(at {_where(obj, validate.invalid_str)})"
        ) from None
    except TypeError as e:
        if arrays.refused is not None:  # a NumPy value the hook refused: say where it is
            validate.raise_if_streamed(obj)
            raise TypeError(f"{e} (at {_where(obj, lambda x: x is arrays.refused)})") from None
        validate.check_value_or_raise(obj)
        raise
    except RecursionError:
        raise ValueError(validate.TOO_DEEP) from None


DIRECT_INDEX = True  # big dicts of plain archives get a direct index (node type 10, 1.4); tests set
# it False to have dump write the block index (type 6) that other writers still write


class Encoded:
    """An archive in the making: the data section at once, the TOC by ``index()``, the trailer
    once the data checksum (computed on another core) is in."""

    def __init__(self, obj: Any, options: dict[str, Any]) -> None:
        cfg = current(**options)
        self.threshold = cfg.small_obj_optimization_threshold
        self.durable = cfg.durable
        self.disable_gc = cfg.disable_gc
        self.obj = obj
        try:
            if cfg.enc_hook is not None and not (accel.speedups is not None and accel.speedups.plain_values(obj)):
                obj = self.obj = validate.converted(obj, cfg.enc_hook)
            if cfg.order == "sorted":
                obj = self.obj = sorted_dicts(obj)
        except RecursionError:
            raise ValueError(validate.TOO_DEEP) from None
        self.order = cfg.order
        arrays = ArrayEncoder(cfg.numpy_encoder, cfg.tiles if cfg.compression else False)
        with gc_paused(self.disable_gc):
            self.data = DataSection(encode_value(obj, arrays), arrays)
        self.checksum = ParallelCrc(self.data.chunks(), self.data.size)
        self.compression = cfg.compression
        self.level = cfg.compression_level
        if self.compression is not None:
            zstandard()  # fail before any work when the binding is missing
        self.header = compressed_header() if self.compression else pack_header()
        self.toc = bytearray()
        self.root = (0, 0)
        self.regions: list[tuple[int, ...]] = []  # where the TOC's frames are cut (TocBuilder.regions)
        self.dictionary = self._dictionary_chosen_meanwhile()

    def _dictionary_chosen_meanwhile(self) -> Future[Chosen | None] | None:
        """The data's dictionary, chosen on other threads while this one builds the TOC (the
        choice needs the data alone; a data section with NumPy arrays spliced in is left to
        ``FrameWriter``)."""
        if self.compression is None or self.data.splices:
            return None
        pool = ThreadPoolExecutor(1)
        try:
            return pool.submit(choose_dictionaries, self.data.buf, frame_size(self.threshold), self.level)
        finally:
            pool.shutdown(wait=False)  # (its thread ends with its one task)

    @classmethod
    def of_data(cls, data: bytes, options: dict[str, Any]) -> Encoded:
        """An archive in the making whose data section is ``data``, the encoding of a value
        copied from an archive (repacking it): taken as it is, and indexed from its bytes
        alone (``reindex``: no object is made, and no recursion limit applies)."""
        self = cls.__new__(cls)
        cfg = current(**options)
        self.threshold, self.durable, self.disable_gc = (
            cfg.small_obj_optimization_threshold,
            cfg.durable,
            cfg.disable_gc,
        )
        self.obj = _FROM_DATA
        self.order = None  # (the data is taken as it is; ``repack`` decodes to sort)
        self.data = DataSection(data, None)
        self.checksum = ParallelCrc(self.data.chunks(), self.data.size)
        self.compression, self.level = cfg.compression, cfg.compression_level
        if self.compression is not None:
            zstandard()
        self.header = compressed_header() if self.compression else pack_header()
        self.toc = bytearray()
        self.root = (0, 0)
        self.regions = []
        self.dictionary = self._dictionary_chosen_meanwhile()
        return self

    def index(self) -> None:
        """Build the TOC, checking every value's type on the way (raises before any TOC byte
        is written)."""
        if self.obj is _FROM_DATA:
            block_bytes = writer_block_bytes(self.compression is not None)
            try:
                self.toc, self.root, self.regions = reindex(
                    self.data.buf, self.threshold, block_bytes, fuse=self.compression is not None, direct=DIRECT_INDEX
                )
            except (msgspec.DecodeError, ValueError) as e:
                self.checksum.wait()
                raise CorruptedError(f"the data to copy is not valid msgpack: {e}") from None
            self.obj = None
            return
        builder = TocBuilder(
            self.data.buf,
            self.threshold,
            self.data.splices,
            block_bytes=writer_block_bytes(self.compression is not None),
            fuse=self.compression is not None,
            sorted_keys=self.compression is not None and self.order == "sorted",  # (types 7, 9: 2.1 only)
            direct=DIRECT_INDEX,
        )
        try:
            with gc_paused(self.disable_gc):
                self.root = builder.build_root(self.obj)
        except BaseException as e:
            self.checksum.wait()  # no checksum thread outlives a failed dump
            if isinstance(e, validate.Unsupported):
                raise e.error() from None
            if isinstance(e, RecursionError):
                raise ValueError("object is nested too deeply to index") from None
            raise
        self.toc = builder.toc
        self.regions = builder.regions
        self.obj = None

    def sections(self) -> Iterator[bytes | bytearray | memoryview]:
        """The archive, once indexed: header, data section, TOC, trailer; compressed: header,
        the compressed section (frames of the data and the TOC, dictionary, tables), trailer."""
        yield self.header
        if self.compression is None:
            yield from self.data.chunks()
            yield self.toc
            yield self.trailer()
            return
        parts: list[bytes | memoryview] = []
        stored = self.compress_into(_Parts(parts))
        yield from parts
        yield self.trailer(stored)

    def compress_into(self, out: Any) -> int:
        """Write the compressed section (once indexed) to ``out`` (``write``) frame by frame as
        the threads finish them; returns its stored size."""
        # (without NumPy arrays spliced in, the encoded bytes are the data: no copy to join)
        plain = memoryview(self.data.joined() if self.data.splices else self.data.buf)
        size = frame_size(self.threshold)
        frames = FrameWriter(out, size, self.level, head=HEAD_FRAME)
        meanwhile = None if self.dictionary is None else self.dictionary.result
        try:
            layout = toc_layout(self.toc, self.root, plain, size)
            frames.write_planned(plain, plan_frames(len(plain), size, *layout), meanwhile)
            frames.end_data()
            # frames of their own for the root node (opening decompresses no more than it) and
            # each index region (mostly random bytes: stored raw, so a lookup reads its bytes in place)
            toc = memoryview(self.toc)
            raw = {start: end for _, start, end in self.regions}  # the random parts, stored raw
            at = 0
            for cut in sorted({self.root[0], *(x for region in self.regions for x in region)}):
                if at < cut <= len(toc):
                    (frames.write_raw if at in raw else frames.write)(toc[at:cut])
                    frames.cut()
                    at = cut
            frames.write(toc[at:])
            stored = frames.close(self.root)
        finally:
            frames.abort()
        return stored

    def trailer(self, stored: int | None = None) -> bytes:
        """The trailer; ``stored``: the compressed section's bytes in the file, when compressed."""
        crc = self.checksum.result()
        if stored is not None:
            return Trailer.compressed(stored, crc, self.threshold).pack(self.header)
        return Trailer.contiguous(self.data.size, len(self.toc), self.root, crc, self.threshold).pack(self.header)


class _Parts:
    """A sink that keeps what is written (the compressed section, in order)."""

    def __init__(self, parts: list[bytes | memoryview]) -> None:
        self.write = parts.append
