"""NumPy arrays as msgpack extension values: typed bytes, never pickle (spec: docs/format.md).

An array is the extension value ``ARRAY_EXT`` whose payload is

    u32 LE  header length H | H bytes: msgpack [descr, shape] | the elements, C order

``descr`` is NumPy's own description of the dtype (as in ``.npy`` files), so byte order and
structured fields survive; it is parsed by ``numpy.lib.format.descr_to_dtype``, never
evaluated. numpy is imported only when an array is met: ``import msglc`` does not need it.

Writing: small arrays are encoded inline by msgspec's ``enc_hook``. Large ones are left out of
the encoded buffer: the hook puts a 27-byte placeholder there, and the writer streams the
array's own memory into the file in its place (``DataSection``), so a several-GB array is
never copied whole.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from math import prod
from typing import Any

import msgspec

from msglc.format.layout import U32
from msglc.format.msgpack import ARRAY_EXT, ext_header, parse_ext_header
from msglc.format.numpy_ext import (
    MAX_HEADER,
    TILED_HEADER_MAX,
    as_list_item,
    check_dtype,
    leaves_all,
)
from msglc.format.tiles import MAX_TILED_NDIM, choose_tile, is_trivial, tile_error, to_tiles
from msglc.util.optional import loaded_numpy
from msglc.write.unsized import Streamed, is_streamed

SPLICE_MIN = 1 << 16  # arrays of at least this many bytes are streamed from their own memory


CHUNK = 1 << 24  # bytes per write of an array's own memory


SLAB = 1 << 22  # bytes per C-order copy of a non-contiguous array (the CRC and the writer each hold two)


TILE_MIN = 1 << 20  # arrays of at least this many bytes (and 2 axes) are tiled in compressed archives


# what the ``tiles`` option may be: True (tile by the rule), False, or a tile shape
Tiles = bool | tuple[int, ...]


_header_encoder = msgspec.msgpack.Encoder()


def array_head(arr: Any, tile: tuple[int, ...] | None = None) -> bytes:
    """Everything before the elements: the extension header, H and the [descr, shape] header
    ([descr, shape, tile] for a tiled array)."""
    np = sys.modules["numpy"]
    fields = [np.lib.format.dtype_to_descr(arr.dtype), list(arr.shape)]
    if tile is not None:
        fields.append(list(tile))
    header = _header_encoder.encode(fields)
    if len(header) > MAX_HEADER:
        raise ValueError(
            f"msglc stores NumPy dtypes whose description takes at most {MAX_HEADER} bytes; "
            f"this one takes {len(header)}"
        )
    payload = 4 + len(header) + arr.nbytes
    if payload >= 2**32:
        raise ValueError(
            f"msglc stores NumPy arrays of up to 4 GiB (an msgpack extension's limit); this one has {arr.nbytes} bytes"
        )
    return ext_header(payload, ARRAY_EXT) + U32.pack(len(header)) + header


class ArrayEncoder:
    """The ``enc_hook`` of one dump: NumPy arrays and scalars in, msgpack-ready values out.

    With ``numpy_encoder`` arrays become extension values (large ones placeholders, recorded
    in ``splices``); without it they become nested lists. NumPy scalars become plain numbers,
    strs and bytes; those without an exact plain equivalent (complex, long double, datetime)
    become 0-d arrays, or are refused without ``numpy_encoder``."""

    PLACEHOLDER_SIZE = 27  # ext8 header (3 bytes) + 16-byte token + u64 index

    def __init__(self, numpy_encoder: bool, tiles: Tiles = False) -> None:
        """``tiles``: how arrays are laid out (``tile_of``); False (C order) but in compressed
        archives."""
        self.numpy_encoder = numpy_encoder
        self.tiles = tiles
        self.splices: list[tuple[bytes, Any]] = []  # (head, array) of the arrays left out
        self.tiled: dict[int, tuple[int, ...]] = {}  # splice index -> tile shape, for tiled arrays
        self.token = secrets.token_bytes(16)
        self.refused: Any = None  # the value a TypeError was raised for, to find its path

    def __call__(self, obj: Any) -> Any:
        np = loaded_numpy()
        if np is not None:
            if isinstance(obj, np.ndarray):
                return self._array(np, obj)
            if isinstance(obj, np.generic):
                return self._scalar(np, obj)
        if is_streamed(obj):
            raise Streamed
        raise TypeError(f"cannot store {type(obj).__name__}")

    def _refuse(self, obj: Any, what: str) -> TypeError:
        self.refused = obj
        return TypeError(f"msglc cannot store {what}")

    def _array(self, np: Any, given: Any) -> Any:
        if isinstance(given, np.ma.MaskedArray):
            raise self._refuse(given, "a NumPy masked array (store its .data and .mask as two arrays)")
        why = check_dtype(given.dtype)
        if why is None and not self.numpy_encoder and not leaves_all(given.dtype, as_list_item):
            why = (
                f"a NumPy array of dtype {given.dtype} as lists "
                "(its items have no plain equivalent; use numpy_encoder=True)"
            )
        if why is not None:
            raise self._refuse(given, why)
        arr = np.asarray(given)  # subclasses (np.matrix, np.memmap) as the plain array they hold
        if not self.numpy_encoder:
            return arr.tolist()
        tile = tile_of(arr.shape, arr.dtype.itemsize, self.tiles)
        head = array_head(arr, tile)
        if tile is not None and len(head) - _ext_size(head) - 4 > TILED_HEADER_MAX:
            # C order: copies into plain archives find tiled arrays by a header this short
            tile = None
            head = array_head(arr)
        if arr.nbytes < SPLICE_MIN:
            return msgspec.msgpack.Ext(ARRAY_EXT, head[_ext_size(head) :] + tiled_bytes(arr, tile))
        if tile is not None:
            self.tiled[len(self.splices)] = tile
        self.splices.append((head, arr))
        return msgspec.msgpack.Ext(ARRAY_EXT, self.token + (len(self.splices) - 1).to_bytes(8, "little"))

    def _scalar(self, np: Any, x: Any) -> Any:
        if isinstance(x, (np.bool_, np.integer, np.str_, np.bytes_)) or (
            isinstance(x, np.floating) and x.dtype.itemsize <= 8
        ):
            return x.item()
        if not self.numpy_encoder:
            raise self._refuse(
                x, f"a NumPy {type(x).__name__} scalar without numpy_encoder=True (it has no exact plain equivalent)"
            )
        return self._array(np, np.asarray(x))

    def placeholder(self) -> bytes:
        """The bytes that start every placeholder of this dump, before its index."""
        return ext_header(24, ARRAY_EXT) + self.token


def tile_of(shape: tuple[int, ...], itemsize: int, tiles: Tiles) -> tuple[int, ...] | None:
    """The tile shape an array of ``shape`` is stored in, or None (C order). ``tiles``: False
    never tiles; True tiles arrays of 2 to ``MAX_TILED_NDIM`` axes and at least ``TILE_MIN``
    bytes (``choose_tile``), unless the tiles would lie in C order anyway; a shape tiles every
    array with as many axes, of any size (each size capped at the axis's length), the others
    as True does."""
    if tiles is False or not 2 <= len(shape) <= MAX_TILED_NDIM:
        return None
    if isinstance(tiles, tuple) and len(tiles) == len(shape):
        tile = tuple(max(1, min(t, n)) for t, n in zip(tiles, shape, strict=True))
        assert tile_error(tile, shape) is None
        return tile
    if prod(shape) * itemsize < TILE_MIN:
        return None
    tile = choose_tile(shape, itemsize)
    return None if is_trivial(shape, tile) else tile


def tiled_bytes(arr: Any, tile: tuple[int, ...] | None) -> bytes:
    """The elements of ``arr`` in C order, or in the order of ``tile``."""
    if tile is None:
        data: bytes = arr.tobytes()
        return data
    np = sys.modules["numpy"]
    flat = np.empty(arr.size, arr.dtype)
    to_tiles(arr, tile, flat)
    tiled: bytes = flat.tobytes()
    return tiled


def tile_chunks(arr: Any, tile: tuple[int, ...], limit: int = SLAB) -> Iterator[memoryview]:
    """An array's elements in the order of ``tile``, as byte views of copies of about
    ``limit`` bytes: whole rows of tiles (a row's elements are contiguous in that order)."""
    np = sys.modules["numpy"]
    rows = arr.shape[0]
    row = arr.nbytes // rows if rows else 0
    if not row:
        return
    step = max(1, limit // (row * tile[0])) * tile[0]
    for i in range(0, rows, step):
        part = arr[i : i + step]
        flat = np.empty(part.size, arr.dtype)
        to_tiles(part, (min(tile[0], part.shape[0]), *tile[1:]), flat)
        yield memoryview(flat.reshape(-1).view(np.uint8))


def _ext_size(head: bytes) -> int:
    parsed = parse_ext_header(head)
    assert parsed is not None  # head starts with an ext header: array_head wrote it
    return parsed[1]


class DataSection:
    """The data section of an archive: the encoded buffer with large arrays spliced in where
    their placeholders are. ``splices`` holds (buffer position, head, array) in order."""

    def __init__(self, buf: bytes, encoder: ArrayEncoder | None) -> None:
        self.buf = buf
        self.splices: list[tuple[int, bytes, Any]] = []
        self.tiled: dict[int, tuple[int, ...]] = {}  # buffer position -> tile shape of the arrays tiled
        self._joined: memoryview | None = None
        if encoder is not None and encoder.splices:
            self._locate(encoder)
        self.size = len(buf) + sum(
            len(head) + arr.nbytes - ArrayEncoder.PLACEHOLDER_SIZE for _, head, arr in self.splices
        )
        if self.tiled:  # (only in compressed archives, whose frames are planned over the joined bytes)
            self.joined()

    def _locate(self, encoder: ArrayEncoder) -> None:
        marker = encoder.placeholder()
        pos = 0
        for index, (head, arr) in enumerate(encoder.splices):
            pos = self.buf.find(marker, pos)
            if pos < 0 or self.buf[pos + len(marker) : pos + len(marker) + 8] != index.to_bytes(8, "little"):
                raise RuntimeError("msglc: lost track of a NumPy array placeholder while encoding")  # pragma: no cover
            self.splices.append((pos, head, arr))
            if index in encoder.tiled:
                self.tiled[pos] = encoder.tiled[index]
            pos += ArrayEncoder.PLACEHOLDER_SIZE

    def joined(self) -> bytes | memoryview:
        """The section's bytes as one buffer (the frames of a compressed section are planned
        over it). Built once where arrays are tiled, straight into it (their elements are
        copied once, for this and for ``chunks``), in memory that is not zeroed first: every
        byte is written below, and zeroing 128 MB cost 20-100 ms of a 0.2-0.5 s ``dump``."""
        if self._joined is not None:
            return self._joined
        if not self.tiled:
            return b"".join(self.chunks())
        np = sys.modules["numpy"]
        out = np.empty(self.size, np.uint8)
        view = memoryview(out)
        at = done = 0
        for pos, head, arr in self.splices:
            piece = self.buf[done:pos]
            view[at : at + len(piece)] = piece
            at += len(piece)
            view[at : at + len(head)] = head
            at += len(head)
            tile = self.tiled.get(pos)
            if tile is not None:
                to_tiles(arr, tile, np.frombuffer(out, arr.dtype, arr.size, at))
                at += arr.nbytes
            else:
                for chunk in c_order_chunks(arr):
                    view[at : at + len(chunk)] = chunk
                    at += len(chunk)
            done = pos + ArrayEncoder.PLACEHOLDER_SIZE
        view[at:] = self.buf[done:]
        self._joined = view
        return view

    def chunks(self) -> Iterator[bytes | memoryview]:
        """The section's bytes in order, in pieces of at most ``CHUNK`` bytes for arrays."""
        if self._joined is not None:
            view = memoryview(self._joined)
            for i in range(0, len(view), CHUNK):
                yield view[i : i + CHUNK]
            return
        view = memoryview(self.buf)
        done = 0
        for pos, head, arr in self.splices:
            yield view[done:pos]
            yield head
            tile = self.tiled.get(pos)
            yield from c_order_chunks(arr) if tile is None else tile_chunks(arr, tile)
            done = pos + ArrayEncoder.PLACEHOLDER_SIZE
        yield view[done:]


def c_order_chunks(arr: Any, limit: int = SLAB) -> Iterator[memoryview]:
    """An array's elements in C order as byte views: its own memory when C-contiguous, else
    copies of slabs of at most ``limit`` bytes (never a full second copy)."""
    np = sys.modules["numpy"]
    if arr.flags.c_contiguous:
        flat = memoryview(arr.reshape(-1).view(np.uint8))
        for i in range(0, len(flat), CHUNK):
            yield flat[i : i + CHUNK]
        return
    row = arr.nbytes // arr.shape[0] if arr.shape[0] else 0
    if not row:
        return
    rows = limit // row
    if rows:
        for i in range(0, arr.shape[0], rows):
            yield memoryview(np.ascontiguousarray(arr[i : i + rows]).reshape(-1).view(np.uint8))
    else:
        for i in range(arr.shape[0]):
            yield from c_order_chunks(arr[i], limit)
