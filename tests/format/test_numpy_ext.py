"""NumPy arrays as msgpack extension values (type 78): every dtype and layout round trips as
typed binary, malformed array values in archives give msglc errors, nothing is ever unpickled,
and plain data needs no NumPy."""

import pathlib
import re
import struct
import subprocess
import sys
import textwrap
import zlib

import hypothesis.extra.numpy as hnp
import msgpack
import msgspec
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_helpers import same

import msglc
from msglc import CorruptedError, MsglcError, UnsupportedVersionError
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, pack_header, unpack_trailer
from msglc.format.msgpack import parse_ext_header
from msglc.write import arrays

SCALAR_DTYPES = st.one_of(
    hnp.boolean_dtypes(),
    hnp.integer_dtypes(endianness="?"),
    hnp.unsigned_integer_dtypes(endianness="?"),
    hnp.floating_dtypes(endianness="?", sizes=(16, 32, 64)),
    hnp.complex_number_dtypes(endianness="?"),
    hnp.byte_string_dtypes(endianness="?", min_len=1, max_len=8),
    hnp.unicode_string_dtypes(endianness="?", min_len=1, max_len=8),
    hnp.datetime64_dtypes(endianness="?"),
    hnp.timedelta64_dtypes(endianness="?"),
)


DTYPES = st.one_of(
    SCALAR_DTYPES,
    hnp.array_dtypes(SCALAR_DTYPES, min_size=1, max_size=4),
    hnp.nested_dtypes(SCALAR_DTYPES, max_leaves=4),
)


ARRAYS = DTYPES.flatmap(lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)))


def layouts(a):
    """The array as given, Fortran-ordered, and as a non-contiguous view."""
    yield a
    yield np.asfortranarray(a)
    if a.ndim and a.shape[0] > 1:
        yield np.concatenate([a, a])[::2]


@given(ARRAYS, st.sampled_from([64, 8192]))
def test_every_dtype_round_trips(a, threshold):
    for arr in layouts(a):
        data = msglc.dumps({"a": arr, "pad": "x" * 100}, small_obj_optimization_threshold=threshold)
        with msglc.LazyReader(data) as r:
            same(arr, r.to_obj()["a"])
            same(arr, msglc.to_obj(r["a"]))
            r.verify()
            plain = msgpack.unpackb(r.protocol_raw_data())  # the data section stays plain msgpack
        assert plain["a"].code == 78 and plain["pad"] == "x" * 100


# ---- malformed array values ------------------------------------------------------------------


def with_payload(array_obj, patch, threshold=64) -> bytes:
    """An archive holding ``array_obj`` whose array payload is replaced by ``patch(payload)``
    (same length), with every checksum valid."""
    data = msglc.dumps({"a": array_obj, "pad": list(range(50))}, small_obj_optimization_threshold=threshold)
    header = parse_ext_header(arrays.array_head(array_obj))
    assert header is not None
    _, size, length = header
    start = data.index(arrays.array_head(array_obj)) + size
    payload = patch(data[start : start + length])
    assert len(payload) == length, "patches keep the length"
    return recrc(data[:start] + payload + data[start + length :])


def recrc(data: bytes) -> bytes:
    """``data`` with the data checksum and the trailer recomputed."""
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), data[:HEADER_SIZE])
    t = msgspec.structs.replace(t, data_crc=zlib.crc32(data[t.data_off : t.data_off + t.data_len]))
    return data[:-TRAILER_SIZE] + t.pack(pack_header())


def header_payload(header, nbytes: int) -> bytes:
    encoded: bytes = msgpack.packb(header)
    return struct.pack("<I", len(encoded)) + encoded + b"\x00" * nbytes


@pytest.mark.parametrize("small", [True, False])
@pytest.mark.parametrize(
    "make, error",
    [
        (lambda n: b"\xff\xff\xff\x7f" + b"\x00" * (n - 4), CorruptedError),  # header length past the end
        (lambda n: struct.pack("<I", 1) + b"\xc1" + b"\x00" * (n - 5), CorruptedError),  # header not msgpack
        (
            lambda n: header_payload(["<f8", [2**40, 2**40]], n - len(header_payload(["<f8", [2**40, 2**40]], 0))),
            CorruptedError,
        ),
        (lambda n: header_payload(["|O", [1]], n - len(header_payload(["|O", [1]], 0))), CorruptedError),
        (lambda n: header_payload(["zz9", [1]], n - len(header_payload(["zz9", [1]], 0))), CorruptedError),
        (
            lambda n: header_payload([[["a", "|O"]], [1]], n - len(header_payload([[["a", "|O"]], [1]], 0))),
            CorruptedError,
        ),
        (lambda n: header_payload(["<f8", [-1]], n - len(header_payload(["<f8", [-1]], 0))), CorruptedError),
        (lambda n: header_payload(["<f8", [1] * 65], n - len(header_payload(["<f8", [1] * 65], 0))), CorruptedError),
        (
            lambda n: header_payload(["<f8", [1], [1], "zstd"], n - len(header_payload(["<f8", [1], [1], "zstd"], 0))),
            UnsupportedVersionError,
        ),
        # a tile (format 2.1) that is not ndim sizes in 1..shape[i]
        *(
            (
                lambda n, t=t: header_payload(["<f8", [5, 8], t], n - len(header_payload(["<f8", [5, 8], t], 0))),
                CorruptedError,
            )
            for t in ("zstd", [5], [5, 8, 1], [0, 8], [6, 8], [5, 9], [True, 8], [5.0, 8], [-1, 8], [2**63, 8])
        ),
        (
            lambda n: header_payload(["<f8", [0, 3], [2, 1]], n - len(header_payload(["<f8", [0, 3], [2, 1]], 0))),
            CorruptedError,
        ),
        (
            lambda n: header_payload(
                ["<f8", [1] * 17, [1] * 17], n - len(header_payload(["<f8", [1] * 17, [1] * 17], 0))
            ),
            CorruptedError,
        ),
    ],
)
def test_malformed_array_values_give_msglc_errors(small, make, error):
    data = with_payload(np.zeros(40, "<f8"), lambda p: make(len(p)), threshold=8192 if small else 64)
    # a lazy array's header must also fit the size its TOC node gives: any msglc error then
    with msglc.LazyReader(data) as r, pytest.raises(error if small else MsglcError):
        msglc.to_obj(r["a"])
    with msglc.LazyReader(data) as r, pytest.raises(MsglcError):
        r.to_obj()
    if not small:  # verify() checks the TOC's arrays; inline ones are checked when decoded
        with msglc.LazyReader(data) as r, pytest.raises(MsglcError):
            r.verify()


def test_unknown_extension_types_are_refused():
    data = msglc.dumps({"a": np.zeros(2), "pad": list(range(50))}, small_obj_optimization_threshold=64)
    at = data.index(b"\xc7")  # the array's ext8 header: C7 len 4E
    data = recrc(data[: at + 2] + b"\x05" + data[at + 3 :])
    with msglc.LazyReader(data) as r, pytest.raises(UnsupportedVersionError, match="extension value of type 5"):
        r["a"]


@pytest.mark.parametrize("shape", [[0, 2**62, 2**62], [0, 2**64 - 1], [0] * 65])
def test_crafted_shapes_numpy_cannot_make(shape):
    data = with_payload(
        np.zeros(40, "<f8"),
        lambda p: header_payload(["<f8", shape], len(p) - len(header_payload(["<f8", shape], 0))),
        threshold=8192,
    )
    with msglc.LazyReader(data) as r, pytest.raises(CorruptedError):
        r.to_obj()


# ---- no pickle, no NumPy needed for plain data --------------------------------------------------


def test_no_pickle_anywhere():
    """No module of the package unpickles or loads with NumPy's pickle-capable loaders."""
    uses = re.compile(r"import pickle|from pickle|pickle\.|allow_pickle|np\.load\(|numpy\.load\(|marshal|\beval\(")
    for path in pathlib.Path(msglc.__file__).parent.rglob("*.py"):
        assert not uses.search(path.read_text()), path


def test_import_and_plain_data_work_without_numpy(tmp_path):
    msglc.dump(tmp_path / "arr.msg", {"a": np.arange(3)})
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["numpy"] = None  # importing numpy now fails
        import msglc
        assert "numpy" not in [m for m in sys.modules if sys.modules[m] is not None]
        data = msglc.dumps({{"x": [1, 2.5, "s", b"b"]}})
        assert msglc.LazyReader(data).to_obj() == {{"x": [1, 2.5, "s", b"b"]}}
        try:
            msglc.LazyReader({str(tmp_path / "arr.msg")!r}).to_obj()
        except ImportError as e:
            assert "needs numpy" in str(e), e
        else:
            raise AssertionError("no ImportError")
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=pathlib.Path(msglc.__file__).parent.parent)
