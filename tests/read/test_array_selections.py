"""Basic-indexing selections of arrays read as a grid of pieces: every indexing form from every
kind of source (a path, bytes, a memory map, a file object, a stream, an fsspec object) against
NumPy on the same array, the requests a slab costs, and what a read meets when the file is cut
short or the reader closed."""

from __future__ import annotations

import io
import mmap
import os
from collections.abc import Callable
from types import EllipsisType
from typing import Any

import fsspec
import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_helpers import same

import msglc
from msglc import LazyStats, MsglcError
from msglc.read import array as array_module
from msglc.read.array import read_selection
from msglc.read.part import archive_of
from msglc.util import accel

STRUCT = np.dtype([("i", "<i4"), ("x", ">f8"), ("s", "S3")])


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    structured = np.zeros((9, 11), STRUCT)
    structured["i"] = np.arange(99).reshape(9, 11)
    structured["x"] = rng.random((9, 11))
    structured["s"] = [[f"{i % 1000:03d}".encode() for i in range(j * 11, j * 11 + 11)] for j in range(9)]
    big = rng.random((300, 200))
    return {
        "d1": np.arange(500, dtype="<f8"),
        "d2": rng.random((40, 30)),
        "d3": np.arange(7 * 8 * 9, dtype=">i4").reshape(7, 8, 9),  # big-endian
        "d4": np.arange(5 * 4 * 6 * 7, dtype="<c8").reshape(5, 4, 6, 7),
        "bytes": np.arange(33 * 17, dtype="u1").reshape(33, 17),
        "fortran": np.asfortranarray(rng.random((23, 19))),  # stored in C order
        "strided": big[3:290:3, 199:10:-4],  # a non-contiguous view: its elements, stored in C order
        "be": np.arange(12 * 10, dtype=">f8").reshape(12, 10),
        "structured": structured,
        "big": big,
        "wide": rng.random((100, 2000)),  # rows 16000 bytes apart: a slab is read a row piece at a time
    }


ARRAYS = _arrays()

# a basic index: an int, or a tuple of ints, slices, Ellipsis and None (np.newaxis)
BasicIndex = int | tuple[int | slice | EllipsisType | None, ...]

KEYS: list[BasicIndex] = [
    (),
    0,
    -1,
    (slice(None),),
    (slice(2, 9),),
    (slice(None, None, 3),),
    (slice(None, None, -2),),
    (slice(-3, 1, -1),),
    (slice(5, 5),),  # empty
    (slice(9, 2),),  # empty, start past stop
    (Ellipsis,),
    (None,),
    (None, Ellipsis, None),
    (Ellipsis, 1),
    (Ellipsis, slice(1, None, 2)),
    (0, Ellipsis, -1),
    (slice(1, 4), None, Ellipsis),
    (slice(None, None, 2**62),),  # a step past the axis: one element (its step times a stride passes int64)
    (slice(-1, None, -(2**61)),),
]


def _keys_for(a: np.ndarray) -> list[BasicIndex]:
    """The KEYS that index ``a``, and some of its own shape: slabs, steps along every axis."""
    keys = [k for k in KEYS if len([i for i in (k if isinstance(k, tuple) else (k,)) if i is not None]) <= a.ndim]
    keys = [k for k in keys if not (a.ndim == 0 and k not in ((), (Ellipsis,), (None,)))]
    keys.append(tuple(slice(n // 4, n // 4 + max(1, n // 2)) for n in a.shape))  # a slab
    keys.append(tuple(slice(None, None, 2 + k) for k in range(a.ndim)))
    keys.append(tuple(slice(None, None, -1 - k) for k in range(a.ndim)))
    keys.append(tuple(n - 1 for n in a.shape))  # one element
    keys.append(tuple(slice(n - 1, 0, -3) if k % 2 else k % n for k, n in enumerate(a.shape)))
    keys.append(tuple(slice(k % n, None, 2**61) for k, n in enumerate(a.shape)))
    return keys


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("sel") / "arrays.mlc"
    msglc.dump(path, ARRAYS, small_obj_optimization_threshold=64)
    return path


SOURCES = ["path", "bytes", "mmap", "file", "stream", "fsspec"]


class _Opened:
    """A reader of the archive over one kind of source, closed with what it needed."""

    def __init__(self, kind: str, path, counter: LazyStats | None = None) -> None:
        self.closers: list[Callable[[], object]] = []
        options: dict[str, Any] = {"counter": counter} if counter is not None else {}  # LazyReader's keywords
        if kind == "path":
            source = path
        elif kind == "bytes":
            source = path.read_bytes()
        elif kind == "mmap":
            f = open(path, "rb")  # noqa: SIM115 (closed with the reader)
            source = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self.closers += [f.close, source.close]
        elif kind == "file":
            source = open(path, "rb")  # noqa: SIM115
            self.closers.append(source.close)
        elif kind == "stream":
            source = io.BytesIO(path.read_bytes())  # no descriptor: read under a lock
        else:
            fs = fsspec.filesystem("memory")
            source = f"/selections/{os.getpid()}/{path.name}"
            fs.pipe_file(source, path.read_bytes())
            options.update(fs=fs, block_size=4096)
            self.closers.append(lambda: fs.rm(source))
        self.reader = msglc.LazyReader(source, **options)

    def close(self) -> None:
        self.reader.close()
        for close in reversed(self.closers):
            close()


@pytest.fixture(params=SOURCES)
def opened(request, archive):
    o = _Opened(request.param, archive)
    yield o.reader
    o.close()


def _check(expected, got) -> None:
    """The same value, and an array of its own: writable, sharing nothing with the source
    (a bytes or memory-mapped one included)."""
    if isinstance(expected, np.ndarray):
        same(expected, got)
        assert got.flags.writeable
        base = got
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        assert isinstance(base, np.ndarray) and base.flags.owndata
    else:
        assert type(got) is type(expected)
        assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()


@pytest.mark.parametrize("name", list(ARRAYS))
def test_every_basic_indexing_form_from_every_source(opened, name):
    a = ARRAYS[name]
    lazy = opened[name]
    for key in _keys_for(a):
        _check(a[key], lazy[key])


def test_without_the_accelerator_the_pieces_are_read_alike(archive, monkeypatch):
    monkeypatch.setattr(accel, "speedups", None)
    with msglc.LazyReader(archive) as r:
        for name in ("big", "d3", "structured", "strided"):
            for key in _keys_for(ARRAYS[name]):
                _check(ARRAYS[name][key], r[name][key])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_drawn_selections_match_numpy(archive, data):
    name = data.draw(st.sampled_from(sorted(ARRAYS)))
    a = ARRAYS[name]
    key = data.draw(hnp.basic_indices(a.shape, allow_newaxis=True, allow_ellipsis=True))
    kind = data.draw(st.sampled_from(["path", "bytes", "stream"]))
    o = _Opened(kind, archive)
    try:
        _check(a[key], o.reader[name][key])
    finally:
        o.close()


def test_gappy_selections_larger_than_a_buffer_are_read_a_block_at_a_time(archive, monkeypatch):
    """Pieces with gaps go through a buffer of at most MAX_SPAN bytes: a block of rows, or of
    pieces of one row, at a time; a covering read longer than that is split along its axis."""
    with msglc.LazyReader(archive) as r:
        for span in (4096, 600, 100, 24):
            monkeypatch.setattr(array_module, "MAX_SPAN", span)
            for name in ("big", "d3", "d4", "structured", "wide"):
                for key in _keys_for(ARRAYS[name]) + [(slice(None), slice(None, None, 2)), (Ellipsis, 1)]:
                    _check(ARRAYS[name][key], r[name][key])


def test_a_slab_from_a_file_is_a_read_per_row_piece(archive):
    a = ARRAYS["wide"]
    stats = LazyStats()
    with msglc.LazyReader(archive, counter=stats) as r:
        lazy = r["wide"]
        stats.clear()
        same(a[10:74, 50:114], lazy[10:74, 50:114])
        assert (stats.requests, stats.bytes) == (64, 64 * 64 * 8)
        stats.clear()
        same(a[10:74], lazy[10:74])  # whole rows: one read
        assert (stats.requests, stats.bytes) == (1, 64 * 2000 * 8)
        near = r["big"]
        stats.clear()
        same(ARRAYS["big"][100:164, 50:114], near[100:164, 50:114])  # rows close together: one read covers them
        assert stats.requests == 1


@pytest.mark.parametrize("kind", ["bytes", "mmap"])
def test_a_slab_from_memory_is_one_strided_copy(archive, kind):
    stats = LazyStats()
    o = _Opened(kind, archive, counter=stats)
    try:
        lazy = o.reader["wide"]
        stats.clear()
        same(ARRAYS["wide"][10:74, 50:114], lazy[10:74, 50:114])
        assert (stats.requests, stats.bytes) == (1, 64 * 64 * 8)
    finally:
        o.close()


def test_a_slab_from_an_object_store_is_one_request(archive):
    """The row pieces of a slab lie closer than max_gap: one ranged request covers them all
    (through the block cache it took a request per row)."""
    stats = LazyStats()
    o = _Opened("fsspec", archive, counter=stats)
    try:
        lazy = o.reader["wide"]
        for _ in range(2):  # the run is not kept: the same request again
            stats.clear()
            same(ARRAYS["wide"][10:74, 50:114], lazy[10:74, 50:114])
            assert (stats.requests, stats.bytes) == (1, 63 * 16000 + 64 * 8)
    finally:
        o.close()


def test_an_object_store_splits_far_pieces_and_long_runs(archive, monkeypatch):
    from msglc.io import remote

    stats = LazyStats()
    o = _Opened("fsspec", archive, counter=stats)
    try:
        lazy = o.reader["wide"]
        a = ARRAYS["wide"]
        source = archive_of(lazy).src
        source.max_gap = 1000  # rows 16000 bytes apart: a request per piece, in one round
        stats.clear()
        same(a[10:20, :50], lazy[10:20, :50])
        assert stats.requests == 10
        source.max_gap = 1 << 20
        source.max_request = 40_000  # three row pieces per request
        stats.clear()
        same(a[20:30, :50], lazy[20:30, :50])
        assert stats.requests == 4
        monkeypatch.setattr(remote, "ROUND_BYTES", 1)  # a round per run: the same requests
        stats.clear()
        same(a[30:40, 3:500:7], lazy[30:40, 3:500:7])  # pieces with gaps, read whole
        assert stats.requests == 4
    finally:
        o.close()


def test_a_file_cut_short_under_a_slab_read_is_an_error(tmp_path):
    """Another program truncates the file: the read that meets the end says so (the C loop
    stops there and the piece is read again to report it), never a crash or garbage."""
    a = np.arange(300 * 2000, dtype="<f8").reshape(300, 2000)
    path = tmp_path / "a.mlc"
    msglc.dump(path, a)
    stats = LazyStats()
    for speedups in (accel.speedups, None):
        with msglc.LazyReader(path, counter=stats) as r:
            lazy = r.read()
            stats.clear()
            same(a[100:164, 10:74], lazy[100:164, 10:74])
            assert stats.requests == 64  # a read per row piece
            original = path.read_bytes()
            os.truncate(path, len(original) // 2)  # rows 150 and on are gone
            saved = accel.speedups
            try:
                accel.speedups = speedups
                with pytest.raises(MsglcError, match="file ended at"):
                    lazy[100:164, 10:174]
                same(a[10:74, 10:74], lazy[10:74, 10:74])  # what is still there reads
            finally:
                accel.speedups = saved
                path.write_bytes(original)


def test_a_read_past_the_end_of_a_file_cut_short_names_its_end(tmp_path):
    """A file truncated under a reader: a read that starts past the new end says where the
    file ends now, not where the read starts."""
    a = np.arange(1000 * 1000, dtype="<f8").reshape(1000, 1000)
    path = tmp_path / "cut.mlc"
    msglc.dump(path, {"a": a})
    with msglc.LazyReader(path, cached=False) as r:
        lazy = r["a"]
        same(a[1:3, 4:9], lazy[1:3, 4:9])
        os.truncate(path, 4_000_000)
        for key in [(slice(900, 950), slice(3, 60, 2)), (999, 999), slice(600, 700)]:
            with pytest.raises(MsglcError, match="file ended at 4000000 "):
                lazy[key]


def test_a_closed_reader_refuses_a_slab(archive):
    r = msglc.LazyReader(archive)
    lazy = r["big"]
    r.close()
    with pytest.raises(ValueError, match="closed"):
        lazy[1:5, 2:9]


def test_read_selection_fills_part_of_a_larger_result(archive):
    """The seam a tiled reader uses per tile: a selection of a C-order block into a view."""
    a = ARRAYS["big"]
    for kind in ("path", "bytes"):
        o = _Opened(kind, archive)
        try:
            lazy = o.reader["big"]
            where = lazy.location()
            data = where.offset + where.size - a.nbytes  # the elements end the stored value
            result = np.zeros((20, 30))
            part = result[5:15, ::3]  # a view, not contiguous
            read_selection(archive_of(lazy), data, (200 * 8, 8), [(40, 10, 2), (7, 10, 5)], part)
            same(a[40:60:2, 7:57:5], part)
            assert not result[:5].any() and not result[5:15, 1::3].any()
        finally:
            o.close()


def test_read_many_asks_for_every_piece_of_a_slab_at_once(archive):
    """A batch stops at the pieces it has not fetched yet: all of a slab's pieces go into the
    one round of requests (a piece per round hit the batch's limit and read the rest alone)."""
    stats = LazyStats()
    o = _Opened("fsspec", archive, counter=stats)
    try:
        r = o.reader
        r["wide"]
        paths = ["wide/10:74/50:114", "wide/3", "wide/20:30"]
        stats.clear()
        got = r.read_many(paths)
        assert stats.requests == 1, stats
        for p, value in zip(paths, got, strict=True):
            same(r[p], value)
        same(ARRAYS["wide"][10:74, 50:114], got[0])
    finally:
        o.close()


def test_a_compressed_slab_decompresses_each_frame_once(tmp_path):
    """Rows of a slab share frames: each frame is read and decompressed once for them all
    (read piece by piece into the result, every row paid its frame again)."""
    a = np.random.default_rng(8).random((1000, 1000))
    msglc.dump(tmp_path / "z.mlc", {"a": a}, compression="zstd")
    stats = LazyStats()
    with msglc.LazyReader(tmp_path / "z.mlc", counter=stats) as r:
        lazy = r["a"]
        stats.clear()
        same(a[100:164, 300:364], lazy[100:164, 300:364])
        assert stats.requests <= 8, stats  # the frames under 64 rows of 8000 bytes, not a read per row
        same(a[::7, ::-3], lazy[::7, ::-3])
        same(a[5:9], lazy[5:9])


def test_a_result_of_too_many_axes_is_refused_before_any_read(archive):
    stats = LazyStats()
    with msglc.LazyReader(archive, counter=stats) as r:
        lazy = r["d2"]
        stats.clear()
        with pytest.raises(IndexError, match="65 axes"):
            lazy[(None,) * 63]
        assert stats.calls == 0
        assert lazy[(None,) * 62].shape == ARRAYS["d2"][(None,) * 62].shape  # 64 axes: NumPy's limit
