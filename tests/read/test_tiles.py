"""NumPy arrays stored tile by tile in compressed archives (format 2.1): the layout, round
trips, selections against NumPy, what a slab reads, which arrays get tiles, and copies into
plain archives."""

import contextlib
import itertools
import mmap

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_helpers import same

import msglc
import msglc.read.array as lazy_array
from msglc import FileInfo, LazyArray, LazyStats
from msglc.format.tiles import choose_tile, grid, tile_at, tile_start, to_tiles, untile
from msglc.util import accel
from msglc.write import arrays


def tile_order(a, tile):
    """The definition (docs/format.md): tiles in C order over the grid, each in C order."""
    pieces = []
    for g in itertools.product(*(range(n) for n in grid(a.shape, tile))):
        pieces.append(a[tuple(slice(i * t, (i + 1) * t) for i, t in zip(g, tile, strict=True))].reshape(-1))
    return np.concatenate(pieces) if pieces else np.empty(0, a.dtype)


@st.composite
def shapes_and_tiles(draw, min_dims=1, max_dims=4, min_side=0):
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=9))
    tile = tuple(draw(st.integers(1, max(n, 1))) for n in shape)
    return shape, tile


@given(shapes_and_tiles())
def test_layout_is_the_specified_order(shape_tile):
    shape, tile = shape_tile
    a = np.arange(int(np.prod(shape)), dtype="<i4").reshape(shape)
    flat = np.empty(a.size, a.dtype)
    to_tiles(a, tile, flat)
    same(tile_order(a, tile), flat)
    back = np.empty(shape, a.dtype)
    untile(flat, tile, back)
    same(a, back)
    for g in itertools.product(*(range(n) for n in grid(shape, tile))):
        at, ext = tile_start(shape, tile, g)
        block = a[tuple(slice(i * t, (i + 1) * t) for i, t in zip(g, tile, strict=True))]
        assert block.shape == ext
        same(block.reshape(-1), flat[at : at + block.size])
        assert tile_at(shape, tile, at) == (g, ext, at) == tile_at(shape, tile, at + block.size - 1)


def test_the_tile_rule():
    assert choose_tile((4000, 4000), 8) == (128, 128)  # 128 KB, as h5py's chunks in the benchmark
    assert choose_tile((10**6, 3), 8) == (5461, 3)  # a short axis whole: C order (not tiled)
    assert choose_tile((3, 7, 100_000), 2) == (3, 7, 3120)
    for shape, itemsize in [((4000, 4000), 8), ((100, 1000, 1000), 4), ((3, 7, 100_000), 2), ((600, 50, 70), 16)]:
        tile = choose_tile(shape, itemsize)
        assert np.prod(tile) * itemsize <= 1 << 17 and all(1 <= t <= n for t, n in zip(tile, shape, strict=True))
        assert np.prod(tile) * itemsize > 1 << 15  # not far below the target either
    tile = choose_tile((4000, 4000), 8)
    assert max(tile) <= 2 * min(tile)  # about square


def dumped(a, **options):
    return msglc.dumps({"a": a}, compression="zstd", small_obj_optimization_threshold=64, **options)


def structured():
    dt = np.dtype([("x", ">f8"), ("n", "<i2"), ("s", "U3"), ("v", "<f4", (2,))])
    a = np.zeros((40, 30), dt)
    a["x"] = np.arange(1200).reshape(40, 30)
    a["n"] = 7
    a["s"] = "ab"
    a["v"] = np.arange(2400).reshape(40, 30, 2)
    return a


@pytest.mark.parametrize(
    "a, tile",
    [
        (np.random.default_rng(1).random((300, 500)), (64, 64)),  # edge tiles on both axes
        (np.arange(6 * 50 * 70, dtype=">i4").reshape(6, 50, 70), (4, 16, 32)),  # big-endian, 3 axes
        (np.arange(5 * 6 * 7 * 8, dtype="<u2").reshape(5, 6, 7, 8), (2, 3, 4, 5)),  # 4 axes
        (np.arange(300 * 500, dtype="<f8").reshape(300, 500, order="F"), (100, 128)),  # Fortran order
        (np.arange(600 * 1000, dtype="<f8").reshape(600, 1000)[::2, 3::3], (50, 40)),  # not contiguous
        (np.zeros((0, 500)), (1, 64)),  # an empty axis
        (np.zeros((30, 0, 4)), (8, 1, 2)),
        (structured(), (16, 8)),
        (np.arange(200 * 300, dtype="<c16").reshape(200, 300), (32, 32)),
        (np.ones((100, 90), "?"), (32, 32)),  # 1-byte elements: cut into frames, never shuffled
    ],
)
def test_round_trips(a, tile):
    data = dumped(a, tiles=tile)
    with msglc.LazyReader(data) as r:
        same(a, r.to_obj()["a"])
        lazy = r["a"]
        if a.size and a.nbytes > 64:
            assert isinstance(lazy, LazyArray) and lazy.tiles == tile
        same(a, np.asarray(lazy))
        same(a, msglc.to_obj(lazy))
        r.verify()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_selections_match_numpy(data):
    shape, tile = data.draw(shapes_and_tiles(min_dims=2, max_dims=4, min_side=1))
    dtype = data.draw(st.sampled_from(["<f8", ">i4", "<u2", "<c8", "u1"]))  # (u1: frames not shuffled)
    a = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    if data.draw(st.booleans()):  # bytes that do not shuffle well: frames stored as they are
        a = np.frombuffer(np.random.default_rng(a.size).bytes(a.nbytes), dtype).reshape(shape)
    few = data.draw(st.booleans())  # each tile read on its own, or whole rows of tiles at a time
    pure = data.draw(st.booleans())  # the C accelerator's gather_grid, or the definition's
    with msglc.LazyReader(dumped(a, tiles=tile)) as r, without_speedups(pure):
        lazy = r["a"]
        for _ in range(6):
            index = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
            expected = a[index]
            old = lazy_array.TILE_READS, lazy_array.ROWS_READ
            lazy_array.TILE_READS, lazy_array.ROWS_READ = (4096, 1 << 22) if few else (1, 1)
            try:
                got = lazy[index] if isinstance(lazy, LazyArray) else np.asarray(lazy)[index]
            finally:
                lazy_array.TILE_READS, lazy_array.ROWS_READ = old
            if isinstance(expected, np.ndarray):
                same(expected, got)
            else:
                assert type(got) is type(expected) and (got == expected or got != got and expected != expected)


@contextlib.contextmanager
def without_speedups(pure: bool):
    """The pure-Python definitions in place of the C accelerator, while the block runs."""
    saved = accel.speedups
    if pure:
        accel.speedups = None
    try:
        yield
    finally:
        accel.speedups = saved


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize("dtype", ["<M8[ns]", ">m8[s]", [("t", "<M8[us]"), ("n", "<i2")]])
def test_dates_and_durations_read_by_either_path(dtype, pure):
    """datetime64 and timedelta64 elements (NumPy gives such arrays no buffer format, which
    a memoryview needs) come out of their tiles' frames by the C and the pure-Python path."""
    a = np.frombuffer(np.random.default_rng(6).bytes(60 * 70 * np.dtype(dtype).itemsize), dtype).reshape(60, 70)
    with msglc.LazyReader(dumped(a, tiles=(16, 16))) as r, without_speedups(pure):
        lazy = r["a"]
        assert lazy.tiles == (16, 16)
        same(a[3:40, 5:50], lazy[3:40, 5:50])  # runs of each tile's rows
        same(a[::3, ::-2], lazy[::3, ::-2])  # an element at a time
        same(a, np.asarray(lazy))  # tile by tile, from whole frames


def test_every_source_reads_tiles(tmp_path):
    a = np.random.default_rng(2).random((700, 600))
    path = tmp_path / "a.mlc"
    msglc.dump(path, {"a": a}, compression="zstd", tiles=(128, 128))
    data = path.read_bytes()
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe("/tiles/a.mlc", data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        for source in (path, data, m, "memory://tiles/a.mlc"):
            with msglc.LazyReader(source) as r:
                lazy = r["a"]
                assert lazy.tiles == (128, 128)
                same(a[100:300, 250:260], lazy[100:300, 250:260])
                same(a[::-7, 5], lazy[::-7, 5])
                assert lazy[699, 599] == a[699, 599] and lazy[-1, 0] == a[-1, 0]
                same(a, np.asarray(lazy))


def test_a_slab_decompresses_only_the_tiles_it_touches(tmp_path):
    a = np.random.default_rng(3).random((1024, 1024))  # 8 MB: 64 tiles of 128 x 128 (128 KB)
    path = tmp_path / "a.mlc"
    msglc.dump(path, {"a": a}, compression="zstd", tiles=(128, 128))
    stats = LazyStats()
    with msglc.LazyReader(path, counter=stats, cached=False) as r:
        lazy = r["a"]
        tile_stored = path.stat().st_size / 64
        for (i, j), tiles in [((10, 20), 1), ((100, 300), 2), ((600, 500), 4)]:
            stats.clear()
            same(a[i : i + 64, j : j + 64], lazy[i : i + 64, j : j + 64])
            assert stats.requests == tiles, (i, j, stats)  # one frame (one read) per tile
            assert stats.bytes < tiles * 1.2 * tile_stored
        stats.clear()
        assert lazy[1000, 3] == a[1000, 3]  # an element: one tile's frame
        assert stats.requests == 1 and stats.bytes < 1.2 * tile_stored


def test_which_arrays_get_tiles():
    big = np.zeros((1024, 1024))  # 8 MB
    with msglc.LazyReader(msglc.dumps({"a": big}, compression="zstd")) as r:
        assert r["a"].tiles == choose_tile(big.shape, 8)
    for value, options in (
        (big, {}),  # a plain archive has no tiles
        (big, {"tiles": (64, 64)}),
        (big, {"compression": "zstd", "tiles": False}),
        (np.zeros((256, 256)), {"compression": "zstd"}),  # 512 KB: below arrays.TILE_MIN
        (np.zeros(1 << 20), {"compression": "zstd"}),  # one axis
        (np.zeros((1 << 17, 2)), {"compression": "zstd"}),  # tiles would lie in C order anyway
    ):
        with msglc.LazyReader(msglc.dumps({"a": value}, **options)) as r:
            assert r["a"].tiles is None, (value.shape, options)
    assert arrays.TILE_MIN == 1 << 20
    # a given shape: for arrays with as many axes, capped at their lengths; others by the rule
    a, b = np.arange(2000.0).reshape(50, 40), np.arange(4000.0).reshape(10, 20, 20)
    with msglc.LazyReader(dumped({"a": a, "b": b, "c": a[:2, :3]}, tiles=(64, 8))) as r:
        assert r["a"]["a"].tiles == (50, 8) and r["a"]["b"].tiles is None
        same(a, np.asarray(r["a"]["a"]))
        same(a[:2, :3], r.to_obj()["a"]["c"])  # a small one too, tiled inline


@pytest.mark.parametrize(
    ("bad", "error"),
    [((0, 4), ValueError), ((2.0, 3), TypeError), ("64", TypeError), ([64, 64], TypeError), ((1,) * 17, ValueError)],
)
def test_bad_tiles_options_are_refused(bad, error):
    """A value of the right type but out of range is a ValueError, a wrong type a TypeError."""
    with pytest.raises(error, match="tile"):
        msglc.dumps(np.zeros((4, 4)), compression="zstd", tiles=bad)


def test_copies_into_a_plain_archive(tmp_path):
    a = np.random.default_rng(4).random((600, 700))
    src = tmp_path / "tiled.mlc"
    msglc.dump(src, {"a": a, "n": 1}, compression="zstd", tiles=(100, 100))
    # repacked plain: the arrays are written in C order (a 1.x reader reads them)
    msglc.dump(tmp_path / "plain.mlc", msglc.LazyReader(src), compression=None)
    with msglc.LazyReader(tmp_path / "plain.mlc") as r:
        assert r.info().compression is None and r["a"].tiles is None
        same(a, r.to_obj()["a"])
        r.verify()
    # combined into a compressed archive: the tiles are copied as they are
    inputs = [FileInfo(src, "x"), FileInfo(tmp_path / "plain.mlc", "y")]
    msglc.combine(tmp_path / "both.mlc", inputs, compression="zstd")
    with msglc.LazyReader(tmp_path / "both.mlc") as r:
        assert r["x"]["a"].tiles == (100, 100)
        same(a[5:300:3, 650:], r["x"]["a"][5:300:3, 650:])
        same(a, r["y"]["a"][:])
        r.verify()
    # into a plain archive: refused, nothing written
    with pytest.raises(ValueError, match="tile by tile"):
        msglc.combine(tmp_path / "out.mlc", [FileInfo(src, "x")], compression=None)
    assert not (tmp_path / "out.mlc").exists()
    # a part taken out as a (plain) archive of its own: refused as well; one without tiles is not
    with msglc.LazyReader(src) as r:
        for part in (r["a"], r.unwrap()):
            with pytest.raises(ValueError, match="tile by tile"):
                part.raw_data()
        anew = msglc.LazyReader(msglc.dumps(r["a"], compression=None))  # (written anew: in C order)
        assert anew.unwrap().tiles is None
        same(a, anew.to_obj())
    untiled = {"d": {f"k{i}": "v" * 100 for i in range(2000)}}
    with msglc.LazyReader(msglc.dumps(untiled, compression="zstd")) as r:
        assert msglc.LazyReader(r["d"].raw_data()).to_obj() == untiled["d"]


def test_an_array_with_a_long_header_is_never_copied_tiled_into_a_plain_archive(tmp_path):
    """A dtype of thousands of fields takes an array header of over 64 KB: such an array is
    written in C order, so that ``combine`` and repacking into a plain archive (format 1.x,
    which has no tiles) never copy a tiled array into one."""
    dtype = np.dtype([(f"field_number_{i:05d}", "u1") for i in range(4000)])
    a = np.zeros((64, 64), dtype)
    a["field_number_00003"] = np.arange(64 * 64).reshape(64, 64) % 251
    src = tmp_path / "wide.mlc"
    msglc.dump(src, {"a": a}, compression="zstd", tiles=(8, 8))
    msglc.combine(tmp_path / "combined.mlc", [FileInfo(src, "x")], compression=None)
    with msglc.LazyReader(src) as r:
        msglc.dump(tmp_path / "repacked.mlc", r, compression=None)
    for path, at in [(tmp_path / "combined.mlc", "x/a"), (tmp_path / "repacked.mlc", "a")]:
        with msglc.LazyReader(path) as r:
            assert r.info().compression is None and r[at].tiles is None, path
            same(a, np.asarray(r[at]))


def test_shuffled_frames_end_a_block_at_each_byte_plane():
    """Each byte plane of a shuffled frame ends a zstd block, so that each plane gets entropy
    tables of its own: a smaller frame, still one ordinary zstd frame (content size and
    checksum as readers require)."""
    zstandard = pytest.importorskip("zstandard")
    from msglc.format.shuffle import shuffle
    from msglc.write.compress import planes_compressed

    a = np.random.default_rng(8).random(16384)  # 128 KB of random float64
    shuffled = shuffle(memoryview(a.tobytes()), 8)
    c = zstandard.ZstdCompressor(level=5, write_checksum=True)
    frame = planes_compressed(c, shuffled, 8)
    params = zstandard.get_frame_parameters(frame)
    assert params.content_size == len(shuffled) and params.has_checksum
    assert zstandard.ZstdDecompressor().decompress(frame) == shuffled
    assert len(frame) < 0.97 * len(c.compress(shuffled))


@pytest.mark.parametrize("tile", [(4, 4), (128, 96), (300, 7)])
@pytest.mark.parametrize("task_bytes", [1 << 22, 20_000])
def test_whole_reads_in_tasks_of_any_size(tile, task_bytes, monkeypatch):
    """A whole-array read puts tiles in place straight from their frames, task by task (rows
    of tiles); a task whose rows begin or end inside a frame (small tiles share frames) is
    read another way. Both give the array."""
    monkeypatch.setattr(lazy_array, "TASK_BYTES", task_bytes)
    a = np.random.default_rng(9).random((300, 301))
    with msglc.LazyReader(dumped({"a": a}, tiles=tile)) as r:
        lazy = r["a"]["a"]
        assert lazy.tiles == tile
        for threads in (1, 2):
            monkeypatch.setattr(lazy_array, "current", lambda t=threads: msglc.config.current(read_threads=t))
            same(a, np.asarray(lazy))


def test_frames_never_hold_tiles_of_two_rows_of_tiles():
    """Frames hold whole tiles, and (unless a row of tiles is smaller than a frame) tiles of
    one row of tiles only: a whole-array read, a task per few rows of tiles, then takes every
    frame straight into place."""
    from msglc.format.tiles import frame_cuts

    for shape, tile in [((300, 301), (128, 96)), ((4000, 4000), (125, 125)), ((50, 30, 700), (7, 30, 64))]:
        cuts = set(frame_cuts(shape, tile, 8, 1 << 16))
        row = 8 * tile[0] * int(np.prod(shape[1:]))
        row_ends = range(row, 8 * int(np.prod(shape)), row)
        assert cuts >= set(row_ends), shape
        ends = {8 * tile_start(shape, tile, g)[0] for g in itertools.product(*(range(n) for n in grid(shape, tile)))}
        assert cuts <= ends  # at tile boundaries only


def test_repacking_keeps_the_layout_unless_tiles_is_given(tmp_path):
    a = np.random.default_rng(10).random((600, 700))
    src = tmp_path / "c-order.mlc"
    msglc.dump(src, {"a": a}, compression="zstd", tiles=False)
    for options, tiles in (
        ({}, None),  # copied as it is
        ({"small_obj_optimization_threshold": 4096}, None),  # a new TOC over the same bytes
        ({"tiles": (100, 100)}, (100, 100)),  # asked: laid out anew
    ):
        with msglc.LazyReader(src) as r:
            data = msglc.dumps(r, **options)
        with msglc.LazyReader(data) as r:
            assert r["a"].tiles == tiles, options
            same(a, np.asarray(r["a"]))
    with msglc.LazyReader(msglc.dumps(msglc.LazyReader(src), tiles=(100, 100))) as tiled:
        untiled = msglc.dumps(tiled, tiles=False)
    with msglc.LazyReader(untiled) as r:
        assert r["a"].tiles is None and r.info().compression == "zstd"
        same(a, np.asarray(r["a"]))
