"""NumPy arrays as msgpack extension values (type 78): the header that describes dtype and
shape, parsed and checked without trusting the file, and the decoder hook."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from math import prod
from typing import Any

import msgspec

from msglc.errors import CorruptedError, UnsupportedVersionError
from msglc.format.layout import U32
from msglc.format.msgpack import ARRAY_EXT, parse_ext_header
from msglc.format.tiles import tile_error, untile

MAX_NDIM = 64


MAX_HEADER = 1 << 20  # bytes of an array header: bounds what a reader reads to open an array


_ALLOWED_KINDS = frozenset("biufcSUVMm")


_header_decoder = msgspec.msgpack.Decoder()


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise ImportError("this archive holds NumPy arrays; reading them needs numpy (pip install numpy)") from None
    return numpy


def leaves_all(dt: Any, ok: Callable[[Any], bool]) -> bool:
    """``ok(leaf)`` for every leaf dtype of ``dt`` (through structured fields and sub-arrays)."""
    if dt.fields is not None:
        return all(leaves_all(field[0], ok) for field in dt.fields.values())
    if dt.subdtype is not None:
        return leaves_all(dt.subdtype[0], ok)
    return ok(dt)


def _plain(leaf: Any) -> bool:
    """Fixed-width, pointer-free (no objects, no variable-width strings)."""
    return leaf.kind in _ALLOWED_KINDS and not leaf.hasobject


def as_list_item(leaf: Any) -> bool:
    """Has an exact plain equivalent (for ``numpy_encoder=False``)."""
    return leaf.kind in "biuSU" or (leaf.kind == "f" and leaf.itemsize <= 8)


def check_dtype(dt: Any) -> str | None:
    """Why an array of dtype ``dt`` cannot be stored, or None if it can."""
    if dt.hasobject:
        return (
            f"a NumPy array of dtype {dt} "
            "(object arrays hold Python objects, not data; convert them to lists or a typed dtype)"
        )
    if not leaves_all(dt, _plain):
        return (
            f"a NumPy array of dtype {dt} "
            "(supported: bool, int, uint, float, complex, bytes, str, datetime, void and structured dtypes of these)"
        )
    if dt.itemsize == 0:
        return f"a NumPy array of dtype {dt} (items of size 0)"
    try:
        sys.modules["numpy"].lib.format.dtype_to_descr(dt)
    except ValueError as e:  # e.g. overlapping or out-of-order structured fields
        return f"a NumPy array of dtype {dt} ({e})"
    return None


def _descr_tuples(descr: Any) -> Any:
    """msgpack gives lists where NumPy's descr has tuples: fields are (name, descr[, shape])
    and a titled name is (title, name)."""
    if isinstance(descr, str):
        return descr
    if not isinstance(descr, list):
        raise ValueError(f"descr is a {type(descr).__name__}")
    fields = []
    for field in descr:
        if not isinstance(field, list) or len(field) not in (2, 3):
            raise ValueError("a field is not [name, descr] or [name, descr, shape]")
        name = tuple(field[0]) if isinstance(field[0], list) else field[0]
        rest = (tuple(field[2]),) if len(field) == 3 and isinstance(field[2], list) else tuple(field[2:])
        fields.append((name, _descr_tuples(field[1]), *rest))
    return fields


def _max_ndim(np: Any) -> int:
    return 64 if int(np.__version__.split(".")[0]) >= 2 else 32


def _label(where: int | None) -> str:
    return "NumPy array" if where is None else f"NumPy array at offset {where}"


# (dtype, shape, offset of the elements, tile shape or None: C order) of an array value
ArrayHead = tuple[Any, tuple[int, ...], int, tuple[int, ...] | None]


def parse_payload_header(payload: bytes | memoryview, length: int, where: int | None) -> ArrayHead:
    """(dtype, shape, offset of the elements in the payload, tile) of an array value whose
    payload is ``length`` bytes and starts with ``payload`` (at least up to the elements),
    checked: a malformed header raises ``CorruptedError``, never a huge allocation. ``tile``
    is None for C order, else the tile shape of a tiled array (format 2.1)."""
    np = _numpy()
    h = U32.unpack_from(payload)[0] if len(payload) >= 4 else -1
    if not 0 <= h <= min(len(payload) - 4, MAX_HEADER):
        raise CorruptedError(f"{_label(where)}: its header does not fit its {length}-byte value")
    try:
        header = _header_decoder.decode(payload[4 : 4 + h])
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        raise CorruptedError(f"{_label(where)}: header is not valid msgpack") from None
    if not isinstance(header, list) or len(header) < 2:
        raise CorruptedError(f"{_label(where)}: header is not [descr, shape]")
    if len(header) > 3:
        raise UnsupportedVersionError(f"{_label(where)}: header has fields unknown to this msglc (a newer writer?)")
    descr, shape = header[:2]
    if not isinstance(shape, list) or len(shape) > MAX_NDIM or not all(type(d) is int and d >= 0 for d in shape):
        raise CorruptedError(f"{_label(where)}: shape {shape!r:.80} is not a list of at most {MAX_NDIM} sizes")
    try:
        dtype = np.lib.format.descr_to_dtype(_descr_tuples(descr))
    except Exception as e:  # parsing untrusted data: any failure means a malformed descr
        raise CorruptedError(f"{_label(where)}: dtype description {descr!r:.80} is invalid ({e})") from None
    why = check_dtype(dtype)
    if why is not None:
        raise CorruptedError(f"{_label(where)}: holds {why}")
    if len(shape) > _max_ndim(np) or prod(d for d in shape if d) * dtype.itemsize >= 2**63:
        raise CorruptedError(f"{_label(where)}: shape {tuple(shape)} of {dtype} is not an array NumPy can make")
    tile = None
    if len(header) == 3:
        why = tile_error(header[2], tuple(shape))
        if why is not None:
            raise CorruptedError(f"{_label(where)}: {why}")
        tile = tuple(header[2])
    need = prod(shape) * dtype.itemsize
    if need != length - 4 - h:
        raise CorruptedError(
            f"{_label(where)}: shape {tuple(shape)} of {dtype} needs {need} bytes, the value has {length - 4 - h}"
        )
    return dtype, tuple(shape), 4 + h, tile


TILED_HEADER_MAX = (1 << 16) - 1  # bytes of a tiled array's header at most, as msglc writes them

# What starts every tiled array value (as msglc writes them: a header of at most
# TILED_HEADER_MAX bytes): an ext 8/16/32 header of type 78, H (u32 LE), a 3-element msgpack
# array.
_TILED = re.compile(rb"(?:\xc7.|\xc8..|\xc9....)\x4e..\x00\x00\x93", re.DOTALL)
TILED_SCAN_OVERLAP = 12  # bytes of the pattern less one: scanned again with the next piece


def find_tiled(data: bytes | memoryview) -> int | None:
    """Where in ``data`` (msgpack bytes) a tiled NumPy array value seems to start, or None.
    Each match of the byte pattern is confirmed by parsing the header when ``data`` holds it
    (a match inside other binary data almost never parses); one cut off by the end counts."""
    for m in _TILED.finditer(data):
        at = m.start()
        try:
            ext = parse_ext_header(data[at : at + 6])
            if ext is None or ext[0] != ARRAY_EXT:
                continue
            _, size, length = ext
            if at + size + 4 > len(data):
                return at
            h = U32.unpack_from(data, at + size)[0]
            if at + size + 4 + h > len(data):
                return at  # the header is cut off by the end: cannot tell
            if parse_payload_header(data[at + size : at + size + 4 + h], length, None)[3] is not None:
                return at
        except (CorruptedError, UnsupportedVersionError):
            continue
    return None


def parse_head(head: bytes | memoryview, where: int, total: int) -> ArrayHead:
    """(dtype, shape, offset of the elements, tile) of an array value of ``total`` bytes
    whose first bytes, at least up to its elements, are ``head``."""
    ext = parse_ext_header(head)
    if ext is None or ext[0] != ARRAY_EXT or ext[1] + ext[2] != total:
        raise CorruptedError(f"expected a NumPy array value of {total} bytes at offset {where}")
    _, size, length = ext
    dtype, shape, start, tile = parse_payload_header(head[size:], length, where)
    return dtype, shape, size + start, tile


def ext_hook(code: int, data: memoryview) -> Any:
    """Decode an extension value: a NumPy array (a fresh, writable copy of the elements)."""
    if code != ARRAY_EXT:
        raise UnsupportedVersionError(f"data holds an msgpack extension value of type {code}, unknown to this msglc")
    dtype, shape, start, tile = parse_payload_header(data, len(data), None)
    np = sys.modules["numpy"]
    out = np.empty(shape, dtype)  # no larger than the payload: parse_payload_header checked
    if tile is None:
        out.reshape(-1).view(np.uint8)[:] = np.frombuffer(data, np.uint8, offset=start)
    else:  # stored tile by tile: reassembled in C order
        untile(np.frombuffer(data, dtype, count=out.size, offset=start), tile, out)
    if has_text(dtype):
        check_text(out, None)
    return out


def has_text(dtype: Any) -> bool:
    """Does ``dtype`` hold str (``U``) elements, itself or in a field?"""
    if dtype.kind == "U":
        return True
    if dtype.subdtype is not None:
        return has_text(dtype.subdtype[0])
    return dtype.names is not None and any(has_text(dtype.fields[name][0]) for name in dtype.names)


def check_text(arr: Any, where: int | None) -> None:
    """Refuse str elements with code units past U+10FFFF: NumPy would make invalid Python str
    objects of them, or fail with a SystemError. Only for dtypes that ``has_text``."""
    np = sys.modules["numpy"]
    dtype = arr.dtype
    if dtype.names is not None:
        for name in dtype.names:
            if has_text(dtype.fields[name][0]):
                check_text(arr[name], where)
        return
    order = ">" if dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big") else "<"
    units = np.frombuffer(np.ascontiguousarray(arr).tobytes(), np.dtype(order + "u4"))
    if units.size and int(units.max()) > 0x10FFFF:
        raise CorruptedError(f"{_label(where)}: holds str elements with code points past U+10FFFF")
