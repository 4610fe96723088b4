"""NumPy arrays: typed binary round trips, lazy NumPy-style indexing, bytes read, refusals,
and malformed array values in archives giving msglc errors."""

import mmap
import pathlib
import re
import struct
import subprocess
import sys
import textwrap
import tracemalloc
import zlib

import hypothesis.extra.numpy as hnp
import msgpack
import msgspec
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import msglc
from msglc import CorruptedError, LazyArray, LazyStats, MsglcError, UnsupportedVersionError
from msglc.format.container import HEADER_SIZE, TRAILER_SIZE, pack_header, unpack_trailer
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


def same(a, b) -> None:
    """Same dtype, shape and bytes (NaN payloads included)."""
    assert isinstance(b, np.ndarray)
    assert (a.dtype, a.shape) == (b.dtype, b.shape)
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


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


@pytest.mark.parametrize("splice", [False, True])
def test_streamed_and_inline_arrays_give_the_same_archive_contents(tmp_path, splice, monkeypatch):
    """Large arrays are written from their own memory; small ones inline. Same bytes either way."""
    rng = np.random.default_rng(1)
    obj = {
        "f": np.asfortranarray(rng.random((40, 30))),
        "s": np.array([(1, b"ab"), (2, b"cd")], dtype=[("i", ">i4"), ("b", "S2")]),
        "strided": np.arange(1000, dtype="<u2")[::3],
        "zero_d": np.array(3.5),
        "empty": np.zeros((0, 4), "f4"),
        "list": [np.arange(5), {"deep": np.ones((3, 3), bool)}],
    }
    expected = msglc.dumps(obj, small_obj_optimization_threshold=64)
    if splice:
        monkeypatch.setattr(arrays, "SPLICE_MIN", 0)
    assert msglc.dumps(obj, small_obj_optimization_threshold=64) == expected
    msglc.dump(tmp_path / "a.msg", obj, small_obj_optimization_threshold=64)
    assert (tmp_path / "a.msg").read_bytes() == expected
    with open(tmp_path / "b.msg", "wb") as f:
        msglc.dump(f, obj, small_obj_optimization_threshold=64)
    assert (tmp_path / "b.msg").read_bytes() == expected
    with msglc.LazyReader(tmp_path / "a.msg") as r:
        for key, value in obj.items():
            if key != "list":
                same(value, msglc.to_obj(r[key]))
        same(obj["list"][1]["deep"], r["list/1/deep"])
        r.verify()


@given(st.data())
def test_indexing_matches_numpy(tmp_path_factory, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=7))
    a = np.arange(int(np.prod(shape)), dtype=data.draw(st.sampled_from(["<f8", ">i4", "u1", "<c8"]))).reshape(shape)
    assume(a.nbytes > 100)  # large enough for a node of its own at the threshold below
    path = tmp_path_factory.mktemp("idx") / "a.msg"
    msglc.dump(path, {"a": a}, small_obj_optimization_threshold=64)
    with msglc.LazyReader(path) as r:
        lazy = r["a"]
        assert isinstance(lazy, LazyArray) and (lazy.shape, lazy.dtype, lazy.ndim, len(lazy)) == (
            a.shape,
            a.dtype,
            a.ndim,
            len(a),
        )
        for _ in range(5):
            index = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
            expected = a[index]
            got = lazy[index]
            if isinstance(expected, np.ndarray):
                same(expected, got)
            else:
                assert type(got) is type(expected) and got == expected


def test_negative_indices_steps_and_errors(tmp_path):
    a = np.arange(5000 * 7, dtype="<f8").reshape(5000, 7)
    msglc.dump(tmp_path / "a.msg", a)
    with msglc.LazyReader(tmp_path / "a.msg") as r:
        lazy = r.read()
        assert lazy[-1, -1] == a[-1, -1] and lazy[-5000, 0] == a[0, 0]
        same(a[::-3, ::2], lazy[::-3, ::2])
        same(a[10:2:-1, 5], lazy[10:2:-1, 5])
        same(a[..., 3], lazy[..., 3])
        same(a[4], lazy[4])
        same(a[4], r["4"])
        assert r["4/5"] == a[4, 5] and r[[4, -1]] == a[4, -1]
        same(a[1:3], r["1:3"])
        with pytest.raises(IndexError, match="out of bounds for axis 0"):
            lazy[5000, 0]
        with pytest.raises(IndexError, match="too many indices"):
            lazy[1, 2, 3]
        with pytest.raises(IndexError, match="fancy indexing"):
            lazy[[1, 2]]
        with pytest.raises(IndexError, match="boolean"):
            lazy[True]
        assert [row.tolist() for row in lazy[:2]] == a[:2].tolist()


def test_reads_only_the_bytes_a_selection_needs(tmp_path):
    a = np.random.default_rng(0).random((1000, 1000))
    msglc.dump(tmp_path / "a.msg", {"a": a})
    stats = LazyStats()
    with msglc.LazyReader(tmp_path / "a.msg", counter=stats) as r:
        lazy = r["a"]
        stats.clear()
        assert lazy[123, 456] == a[123, 456]
        assert (stats.calls, stats.bytes) == (1, 8)
        stats.clear()
        same(a[100:200, 300:400], lazy[100:200, 300:400])
        assert stats.bytes <= 2 * 100 * 100 * 8, stats
        stats.clear()
        same(a[10:20], lazy[10:20])  # whole rows: one contiguous read
        assert (stats.calls, stats.bytes) == (1, 10 * 1000 * 8)
        stats.clear()
        same(a[:, 7], lazy[:, 7])  # a column of a wide matrix: one small read per row
        assert stats.bytes == 1000 * 8
        stats.clear()
        same(a, np.asarray(lazy))
        assert (stats.calls, stats.bytes) == (1, a.nbytes)


def test_whole_arrays_are_read_with_one_copy_or_none(tmp_path):
    a = np.arange(100_000, dtype="<i8")
    msglc.dump(tmp_path / "a.msg", {"a": a})
    with msglc.LazyReader(tmp_path / "a.msg") as r:
        from_file = msglc.to_obj(r["a"])
        assert from_file.flags.writeable and from_file.flags.c_contiguous
        same(a, from_file)
    with open(tmp_path / "a.msg", "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        r = msglc.LazyReader(m)
        view = np.asarray(r["a"])
        same(a, view)
        assert not view.flags.writeable and not view.flags.owndata  # a view of the memory map
        del view
        r.close()


def test_numpy_scalars_are_stored_as_plain_values():
    obj = {
        "f32": np.float32(1.5),
        "f64": np.float64(2.25),
        "i": np.int16(-3),
        "u": np.uint64(2**64 - 1),
        "b": np.bool_(True),
        "s": np.str_("x"),
    }
    obj["bytes"] = np.bytes_(b"y")
    data = msglc.dumps(obj)
    with msglc.LazyReader(data) as r:
        plain = msgpack.unpackb(r.protocol_raw_data())
    assert plain == {"f32": 1.5, "f64": 2.25, "i": -3, "u": 2**64 - 1, "b": True, "s": "x", "bytes": b"y"}
    assert [type(v) for v in plain.values()] == [float, float, int, int, bool, str, bytes]
    for x in (np.complex64(1 + 2j), np.datetime64("2026-11-22"), np.longdouble(1) / 3):
        back = msglc.LazyReader(msglc.dumps([x])).to_obj()[0]
        assert isinstance(back, np.ndarray) and back.shape == () and back.dtype == np.asarray(x).dtype and back[()] == x


def test_numpy_encoder_false_stores_lists():
    a = np.arange(2000, dtype="i4").reshape(100, 20)
    obj = {"a": a, "s": np.array([b"ab", b"c"]), "x": np.float32(0.5)}
    data = msglc.dumps(obj, numpy_encoder=False, small_obj_optimization_threshold=64)
    with msglc.LazyReader(data) as r:
        assert isinstance(r["a"], msglc.LazyList)
        assert r["a/7/3"] == a[7, 3] and msglc.to_obj(r["a"]) == a.tolist()
        assert r.to_obj() == {"a": a.tolist(), "s": [b"ab", b"c"], "x": 0.5}
    for bad in (np.zeros(3, "c8"), np.zeros(2, "M8[s]"), np.complex64(1)):
        with pytest.raises(TypeError, match="numpy_encoder=True"):
            msglc.dumps({"k": [bad]}, numpy_encoder=False)
    with pytest.raises(TypeError, match="numpy_encoder must be True or False"):
        msglc.dumps([], numpy_encoder=1)


def test_refusals_name_the_value_and_leave_no_file(tmp_path):
    target = tmp_path / "out.msg"
    cases = [
        (np.array([1, "a", None], dtype=object), "object arrays"),
        (np.ma.masked_array([1, 2], mask=[0, 1]), "masked array"),
        (np.zeros(3, dtype=[("o", "O"), ("i", "i4")]), "dtype"),
        (
            np.array(["a", "bb"], dtype=np.dtypes.StringDType())
            if hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType")
            else np.zeros(2, "O"),
            "dtype",
        ),
    ]
    for bad, message in cases:
        with pytest.raises(TypeError, match=message) as info:
            msglc.dump(target, {"runs": [1, {"x": bad}]})
        assert "runs/1/x" in str(info.value)
        assert not target.exists() and list(tmp_path.iterdir()) == []


def test_memory_stays_bounded_when_writing_large_arrays(tmp_path):
    """A large array is written from its own memory (C order) or in slabs (other layouts),
    never copied whole."""
    big = np.random.default_rng(0).random((4096, 2048))  # 64 MiB
    for arr in (big, np.asfortranarray(big), big[:, ::2]):
        tracemalloc.start()
        msglc.dump(tmp_path / "big.msg", {"meta": {"n": 1}, "a": arr})
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 4 * arrays.SLAB + (8 << 20), peak
        with msglc.LazyReader(tmp_path / "big.msg") as r:
            assert r["a"][4095, -1] == arr[4095, -1]
            r.verify()


# ---- malformed array values ------------------------------------------------------------------


def with_payload(array_obj, patch, threshold=64) -> bytes:
    """An archive holding ``array_obj`` whose array payload is replaced by ``patch(payload)``
    (same length), with every checksum valid."""
    data = msglc.dumps({"a": array_obj, "pad": list(range(50))}, small_obj_optimization_threshold=threshold)
    _, size, length = parse_ext_header(arrays.array_head(array_obj))
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
    encoded = msgpack.packb(header)
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
            lambda n: header_payload(["<f8", [1], "zstd"], n - len(header_payload(["<f8", [1], "zstd"], 0))),
            UnsupportedVersionError,
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


def test_no_pickle_anywhere():
    """No module of the package unpickles or loads with NumPy's pickle-capable loaders."""
    uses = re.compile(r"import pickle|from pickle|pickle\.|allow_pickle|np\.load\(|numpy\.load\(|marshal|\beval\(")
    for path in pathlib.Path(msglc.__file__).parent.glob("*.py"):
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


def test_lazy_containers_holding_arrays_compare_equal():
    """Arrays compare elementwise; inside lazy containers they compare whole."""
    obj = {"runs": [np.arange(i % 5) for i in range(200)], "big": {f"k{i}": np.ones(3) for i in range(100)}}
    with msglc.LazyReader(msglc.dumps(obj, small_obj_optimization_threshold=64)) as r:
        assert r["runs"] == obj["runs"] and r["big"] == obj["big"]
        assert r["runs"] != [*obj["runs"][:-1], np.arange(4) + 1]
        assert r["big"] != {**obj["big"], "k99": np.zeros(3)}


def test_selections_that_loop_over_every_axis(tmp_path):
    """Gappy selections read element by element, 0-d arrays, and structured items."""
    m = np.arange(20 * 5000, dtype="<f8").reshape(20, 5000)
    v = np.arange(20000.0)
    z = np.array(b"x" * 100)
    s = np.array([(i, f"n{i}".encode()) for i in range(500)], dtype=[("i", "<i8"), ("n", "S4")])
    msglc.dump(tmp_path / "a.msg", {"m": m, "v": v, "z": z, "s": s}, small_obj_optimization_threshold=64)
    for source in (tmp_path / "a.msg", (tmp_path / "a.msg").read_bytes()):
        with msglc.LazyReader(source) as r:
            same(m[:3, ::1000], r["m"][:3, ::1000])
            same(m[::7, ::-999], r["m"][::7, ::-999])
            same(v[::1000], r["v"][::1000])
            same(v[::-1000], r["v"][::-1000])
            same(z[...], r["z"][...])
            same(z[None], r["z"][None])
            assert r["z"][()] == z[()]
            item = r["s"][7]
            assert item == s[7] and item["n"] == b"n7"
            item["i"] = -1  # a fresh item, not a view of the archive's bytes
            assert r["s"][7]["i"] == 7


def test_gappy_selections_never_read_a_huge_covering_range(tmp_path):
    a = np.zeros((40000, 100))
    msglc.dump(tmp_path / "a.msg", {"a": a})
    stats = LazyStats()
    with msglc.LazyReader(tmp_path / "a.msg", counter=stats) as r:
        column = r["a"][:, 0]
        same(a[:, 0], column)
        assert stats.bytes < 1 << 24, stats  # not the 32 MB range covering the column


def test_array_protocol_copies(tmp_path):
    a = np.arange(1000.0)
    blob = bytearray(msglc.dumps({"a": a}, small_obj_optimization_threshold=64))
    with msglc.LazyReader(blob) as r:
        copied = np.array(r["a"])  # copy=True: never a view of the caller's buffer
        copied[0] = -1
        assert r["a"][0] == 0
        r.verify()
        assert np.asarray(r["a"], dtype="f4").dtype == np.float32
    msglc.dump(tmp_path / "a.msg", {"a": a}, small_obj_optimization_threshold=64)
    with msglc.LazyReader(tmp_path / "a.msg") as r, pytest.raises(ValueError, match="always a copy"):
        r["a"].__array__(copy=False)  # np.asarray(r["a"], copy=False) on NumPy 2


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_lists_of_arrays_as_lists_and_subclasses():
    rows = [np.zeros(1000), np.ones(1000)]
    with msglc.LazyReader(
        msglc.dumps({"rows": rows, "t": tuple(rows)}, numpy_encoder=False, small_obj_optimization_threshold=64)
    ) as r:
        assert r["rows/1/999"] == 1.0 and msglc.to_obj(r["t"]) == [x.tolist() for x in rows]
    mat = np.matrix(np.arange(600000.0).reshape(-1, 2))[:, 0].T  # non-contiguous, 2-d rows
    with msglc.LazyReader(msglc.dumps({"m": mat})) as r:
        same(np.asarray(mat), msglc.to_obj(r["m"]))


def test_dtypes_numpy_cannot_describe_are_refused_with_the_path():
    overlapping = np.zeros(
        3, dtype=np.dtype({"names": ["a", "b"], "formats": ["<i4", "<i4"], "offsets": [0, 2], "itemsize": 8})
    )
    with pytest.raises(TypeError, match="at x/0"):
        msglc.dumps({"x": [overlapping]})


@pytest.mark.parametrize("shape", [[0, 2**62, 2**62], [0, 2**64 - 1], [0] * 65])
def test_crafted_shapes_numpy_cannot_make(shape):
    data = with_payload(
        np.zeros(40, "<f8"),
        lambda p: header_payload(["<f8", shape], len(p) - len(header_payload(["<f8", shape], 0))),
        threshold=8192,
    )
    with msglc.LazyReader(data) as r, pytest.raises(CorruptedError):
        r.to_obj()


def test_failed_preallocation_closes_the_file(tmp_path, monkeypatch):
    def full(fd, offset, size):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.posix_fallocate", full)
    before = len(list(pathlib.Path("/proc/self/fd").iterdir()))
    for _ in range(3):
        with pytest.raises(OSError):
            msglc.dump(tmp_path / "a.msg", {"a": np.zeros(2 << 20)})
    assert len(list(pathlib.Path("/proc/self/fd").iterdir())) == before
    assert list(tmp_path.iterdir()) == []


def test_file_objects_get_non_contiguous_arrays_in_slabs(tmp_path):
    big = np.random.default_rng(1).random((2048, 2048)).T  # 32 MiB, Fortran order
    tracemalloc.start()
    with open(tmp_path / "a.msg", "wb") as f:
        msglc.dump(f, {"a": big})
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4 * arrays.SLAB + (8 << 20), peak
    with msglc.LazyReader(tmp_path / "a.msg") as r:
        same(big, msglc.to_obj(r["a"]))
