"""Writing NumPy arrays: large ones streamed from their own memory and small ones inline give
the same archive, NumPy scalars stored as plain values, ``numpy_encoder=False``, refusals that
name the value, and bounded memory."""

import gc
import io
import os
import pathlib
import tracemalloc

import msgpack
import numpy as np
import pytest
from numpy_helpers import same

import msglc
from msglc.write import arrays


@pytest.mark.parametrize("splice", [False, True])
def test_streamed_and_inline_arrays_give_the_same_archive_contents(tmp_path, splice, monkeypatch):
    """Large arrays are written from their own memory; small ones inline. Same bytes either way."""
    rng = np.random.default_rng(1)
    deep = np.ones((3, 3), bool)
    obj = {
        "f": np.asfortranarray(rng.random((40, 30))),
        "s": np.array([(1, b"ab"), (2, b"cd")], dtype=[("i", ">i4"), ("b", "S2")]),
        "strided": np.arange(1000, dtype="<u2")[::3],
        "zero_d": np.array(3.5),
        "empty": np.zeros((0, 4), "f4"),
        "list": [np.arange(5), {"deep": deep}],
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
        same(deep, r["list/1/deep"])
        r.verify()


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


@pytest.mark.parametrize("threshold", [0, 64, 8192])
def test_numpy_str_keys_are_stored_as_str_in_every_layout(threshold):
    """A ``numpy.str_`` key is a str: msgspec writes it in a dict, and the nodes' key lists,
    the streamed dict and combine's names write it too, whatever node the dict gets; and a
    lookup by one finds its str."""
    small = {np.str_("k"): 1, "b": "x" * 50}
    big = {np.str_(f"k{i}"): i for i in range(1500)}  # (a hash index past 1024 entries)
    for d in (small, big):
        expected = {str(k): v for k, v in d.items()}
        for value in (d, msglc.Pairs(list(d.items()))):
            with msglc.LazyReader(msglc.dumps({"d": value}, small_obj_optimization_threshold=threshold)) as r:
                assert r.to_obj() == {"d": expected}
                first = next(iter(expected))
                assert r["d"][first] == r["d"][np.str_(first)] == expected[first]  # (looked up by one, too)
                assert np.str_(first) in r["d"] and np.str_("none") not in r["d"]
                r.verify()
    out = io.BytesIO()
    msglc.combine(out, [msglc.FileInfo(None, np.str_("a"), obj=1)], small_obj_optimization_threshold=threshold)
    assert msglc.LazyReader(out.getvalue()).to_obj() == {"a": 1}


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
        (np.ma.masked_array([1, 2], mask=[False, True]), "masked array"),
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


def test_failed_preallocation_closes_the_file(tmp_path, monkeypatch):
    def full(fd, offset, size):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    gc.collect()  # readers earlier tests dropped unclosed give their descriptors back now, not mid-count
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
