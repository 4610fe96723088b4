"""``LazyArray``: NumPy-style basic indexing of arrays in an archive, the bytes a selection
reads, whole arrays read with one copy or none, and lazy containers holding arrays."""

import mmap

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from numpy_helpers import same

import msglc
from msglc import LazyArray, LazyStats


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
        with pytest.raises(IndexError, match="boolean"):
            lazy[np.True_, 0]
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


def test_lazy_containers_holding_arrays_compare_equal():
    """Arrays compare elementwise; inside lazy containers they compare whole."""
    runs = [np.arange(i % 5) for i in range(200)]
    big = {f"k{i}": np.ones(3) for i in range(100)}
    with msglc.LazyReader(msglc.dumps({"runs": runs, "big": big}, small_obj_optimization_threshold=64)) as r:
        assert r["runs"] == runs and r["big"] == big
        assert r["runs"] != [*runs[:-1], np.arange(4) + 1]
        assert r["big"] != {**big, "k99": np.zeros(3)}


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
    """A column of a long narrow table is read as a few covering reads (its rows are closer
    than a read costs), each of at most 16 MB: never the whole 32 MB range at once, nor a
    read per row."""
    import tracemalloc

    a = np.zeros((40000, 100))
    a[:, 0] = np.arange(40000)
    msglc.dump(tmp_path / "a.msg", {"a": a})
    stats = LazyStats()
    with msglc.LazyReader(tmp_path / "a.msg", counter=stats) as r:
        lazy = r["a"]
        stats.clear()
        tracemalloc.start()
        try:
            column = lazy[:, 0]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        same(a[:, 0], column)
        assert stats.requests == 2 and stats.bytes <= a.nbytes, stats
        assert peak < (1 << 24) + (1 << 20), peak  # one buffer of 16 MB at a time


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
