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
import struct
import sys
from collections.abc import Iterator
from math import prod
from typing import Any

import msgspec

from .errors import CorruptedError, UnsupportedVersionError
from .format import ARRAY_EXT, ext_header, parse_ext_header
from .streamed import Streamed, is_streamed

SPLICE_MIN = 1 << 16  # arrays of at least this many bytes are streamed from their own memory
CHUNK = 1 << 24  # bytes per write of an array's own memory
SLAB = 1 << 22  # bytes per C-order copy of a non-contiguous array (the CRC and the writer each hold two)
MAX_NDIM = 64
MAX_HEADER = 1 << 20  # bytes of an array header: bounds what a reader reads to open an array
_ALLOWED_KINDS = frozenset("biufcSUVMm")
_U32 = struct.Struct("<I")
_header_encoder = msgspec.msgpack.Encoder()
_header_decoder = msgspec.msgpack.Decoder()


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise ImportError("this archive holds NumPy arrays; reading them needs numpy (pip install 'msglc[numpy]')") from None
    return numpy


# ---- dtypes and headers --------------------------------------------------------------------------


def _leaves_all(dt: Any, ok: Any) -> bool:
    """``ok(leaf)`` for every leaf dtype of ``dt`` (through structured fields and sub-arrays)."""
    if dt.fields is not None:
        return all(_leaves_all(field[0], ok) for field in dt.fields.values())
    if dt.subdtype is not None:
        return _leaves_all(dt.subdtype[0], ok)
    return ok(dt)


def _plain(leaf: Any) -> bool:
    """Fixed-width, pointer-free (no objects, no variable-width strings)."""
    return leaf.kind in _ALLOWED_KINDS and not leaf.hasobject


def _as_list_item(leaf: Any) -> bool:
    """Has an exact plain equivalent (for ``numpy_encoder=False``)."""
    return leaf.kind in "biuSU" or (leaf.kind == "f" and leaf.itemsize <= 8)


def check_dtype(dt: Any) -> str | None:
    """Why an array of dtype ``dt`` cannot be stored, or None if it can."""
    if dt.hasobject:
        return f"a NumPy array of dtype {dt} (object arrays hold Python objects, not data; convert them to lists or a typed dtype)"
    if not _leaves_all(dt, _plain):
        return f"a NumPy array of dtype {dt} (supported: bool, int, uint, float, complex, bytes, str, datetime, void and structured dtypes of these)"
    if dt.itemsize == 0:
        return f"a NumPy array of dtype {dt} (items of size 0)"
    try:
        sys.modules["numpy"].lib.format.dtype_to_descr(dt)
    except ValueError as e:  # e.g. overlapping or out-of-order structured fields
        return f"a NumPy array of dtype {dt} ({e})"
    return None


def array_head(arr: Any) -> bytes:
    """Everything before the elements: the extension header, H and the [descr, shape] header."""
    np = sys.modules["numpy"]
    header = _header_encoder.encode([np.lib.format.dtype_to_descr(arr.dtype), list(arr.shape)])
    if len(header) > MAX_HEADER:
        raise ValueError(f"msglc stores NumPy dtypes whose description takes at most {MAX_HEADER} bytes; this one takes {len(header)}")
    payload = 4 + len(header) + arr.nbytes
    if payload >= 2**32:
        raise ValueError(f"msglc stores NumPy arrays of up to 4 GiB (an msgpack extension's limit); this one has {arr.nbytes} bytes")
    return ext_header(payload, ARRAY_EXT) + _U32.pack(len(header)) + header


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


def parse_payload_header(payload: bytes | memoryview, length: int, where: int | None) -> tuple[Any, tuple[int, ...], int]:
    """(dtype, shape, offset of the elements in the payload) of an array value whose payload
    is ``length`` bytes and starts with ``payload`` (at least up to the elements), checked: a
    malformed header raises ``CorruptedError``, never a huge allocation."""
    np = _numpy()
    h = _U32.unpack_from(payload)[0] if len(payload) >= 4 else -1
    if not 0 <= h <= min(len(payload) - 4, MAX_HEADER):
        raise CorruptedError(f"{_label(where)}: its header does not fit its {length}-byte value")
    try:
        header = _header_decoder.decode(payload[4 : 4 + h])
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        raise CorruptedError(f"{_label(where)}: header is not valid msgpack") from None
    if not isinstance(header, list) or len(header) < 2:
        raise CorruptedError(f"{_label(where)}: header is not [descr, shape]")
    if len(header) > 2:
        raise UnsupportedVersionError(f"{_label(where)}: header has fields unknown to this msglc (a newer writer?)")
    descr, shape = header
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
    need = prod(shape) * dtype.itemsize
    if need != length - 4 - h:
        raise CorruptedError(f"{_label(where)}: shape {tuple(shape)} of {dtype} needs {need} bytes, the value has {length - 4 - h}")
    return dtype, tuple(shape), 4 + h


def parse_head(head: bytes | memoryview, where: int, total: int) -> tuple[Any, tuple[int, ...], int]:
    """(dtype, shape, offset of the elements) of an array value of ``total`` bytes whose first
    bytes, at least up to its elements, are ``head``."""
    ext = parse_ext_header(head)
    if ext is None or ext[0] != ARRAY_EXT or ext[1] + ext[2] != total:
        raise CorruptedError(f"expected a NumPy array value of {total} bytes at offset {where}")
    _, size, length = ext
    dtype, shape, start = parse_payload_header(head[size:], length, where)
    return dtype, shape, size + start


# ---- reading: the decoder's extension hook -------------------------------------------------------


def ext_hook(code: int, data: memoryview) -> Any:
    """Decode an extension value: a NumPy array (a fresh, writable copy of the elements)."""
    if code != ARRAY_EXT:
        raise UnsupportedVersionError(f"data holds an msgpack extension value of type {code}, unknown to this msglc")
    dtype, shape, start = parse_payload_header(data, len(data), None)
    np = sys.modules["numpy"]
    out = np.empty(shape, dtype)  # no larger than the payload: parse_payload_header checked
    out.reshape(-1).view(np.uint8)[:] = np.frombuffer(data, np.uint8, offset=start)
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


# ---- writing: the encoder's hook and the data section ----------------------------------------------


class ArrayEncoder:
    """The ``enc_hook`` of one dump: NumPy arrays and scalars in, msgpack-ready values out.

    With ``numpy_encoder`` arrays become extension values (large ones placeholders, recorded
    in ``splices``); without it they become nested lists. NumPy scalars become plain numbers,
    strs and bytes; those without an exact plain equivalent (complex, long double, datetime)
    become 0-d arrays, or are refused without ``numpy_encoder``."""

    PLACEHOLDER_SIZE = 27  # ext8 header (3 bytes) + 16-byte token + u64 index

    def __init__(self, numpy_encoder: bool) -> None:
        self.numpy_encoder = numpy_encoder
        self.splices: list[Any] = []
        self.token = secrets.token_bytes(16)
        self.refused: Any = None  # the value a TypeError was raised for, to find its path

    def __call__(self, obj: Any) -> Any:
        np = sys.modules.get("numpy")
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
        if why is None and not self.numpy_encoder and not _leaves_all(given.dtype, _as_list_item):
            why = f"a NumPy array of dtype {given.dtype} as lists (its items have no plain equivalent; use numpy_encoder=True)"
        if why is not None:
            raise self._refuse(given, why)
        arr = np.asarray(given)  # subclasses (np.matrix, np.memmap) as the plain array they hold
        if not self.numpy_encoder:
            return arr.tolist()
        head = array_head(arr)
        if arr.nbytes < SPLICE_MIN:
            return msgspec.msgpack.Ext(ARRAY_EXT, head[_ext_size(head) :] + arr.tobytes())
        self.splices.append((head, arr))
        return msgspec.msgpack.Ext(ARRAY_EXT, self.token + (len(self.splices) - 1).to_bytes(8, "little"))

    def _scalar(self, np: Any, x: Any) -> Any:
        if isinstance(x, (np.bool_, np.integer, np.str_, np.bytes_)) or (isinstance(x, np.floating) and x.dtype.itemsize <= 8):
            return x.item()
        if not self.numpy_encoder:
            raise self._refuse(x, f"a NumPy {type(x).__name__} scalar without numpy_encoder=True (it has no exact plain equivalent)")
        return self._array(np, np.asarray(x))

    def placeholder(self) -> bytes:
        """The bytes that start every placeholder of this dump, before its index."""
        return ext_header(24, ARRAY_EXT) + self.token


def _ext_size(head: bytes) -> int:
    return parse_ext_header(head)[1]


class DataSection:
    """The data section of an archive: the encoded buffer with large arrays spliced in where
    their placeholders are. ``splices`` holds (buffer position, head, array) in order."""

    def __init__(self, buf: bytes, encoder: ArrayEncoder | None) -> None:
        self.buf = buf
        self.splices: list[tuple[int, bytes, Any]] = []
        if encoder is not None and encoder.splices:
            self._locate(encoder)
        self.size = len(buf) + sum(len(head) + arr.nbytes - ArrayEncoder.PLACEHOLDER_SIZE for _, head, arr in self.splices)

    def _locate(self, encoder: ArrayEncoder) -> None:
        marker = encoder.placeholder()
        pos = 0
        for index, (head, arr) in enumerate(encoder.splices):
            pos = self.buf.find(marker, pos)
            if pos < 0 or self.buf[pos + len(marker) : pos + len(marker) + 8] != index.to_bytes(8, "little"):
                raise RuntimeError("msglc: lost track of a NumPy array placeholder while encoding")  # pragma: no cover
            self.splices.append((pos, head, arr))
            pos += ArrayEncoder.PLACEHOLDER_SIZE

    def chunks(self) -> Iterator[bytes | memoryview]:
        """The section's bytes in order, in pieces of at most ``CHUNK`` bytes for arrays."""
        view = memoryview(self.buf)
        done = 0
        for pos, head, arr in self.splices:
            yield view[done:pos]
            yield head
            yield from c_order_chunks(arr)
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
