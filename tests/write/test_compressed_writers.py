"""Every writer compresses (format 2.1): LazyWriter streams frames as it goes (containers of
unknown length patched wherever their header ended up), ``FrameWriter`` on its own, and the
compressed output reads back exactly as the plain one."""

import io
import random
from bisect import bisect_right
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import msglc
from msglc import LazyReader, Pairs
from msglc.io.framed import open_section
from msglc.io.local import BufferSource
from msglc.write.compress import FrameWriter, raw_frame

zstandard = pytest.importorskip("zstandard")

ZSTD: dict[str, Any] = {"compression": "zstd"}  # dump's **options


def records(n, seed=1):
    rng = random.Random(seed)
    return [{"id": i, "name": f"user-{i}", "score": rng.random(), "tags": ["a", "b"][: i % 3]} for i in range(n)]


def streamed(n):
    """A document with generators at several depths and a Pairs dict: every header reserved."""
    return {
        "meta": {"n": n},
        "records": (dict(r, sub=(j for j in range(i % 40))) for i, r in enumerate(records(n))),
        "lookup": Pairs((f"k{i}", i) for i in range(n)),
        "big": (list(range(k)) for k in range(200)),
    }


def expected(n):
    return {
        "meta": {"n": n},
        "records": [dict(r, sub=list(range(i % 40))) for i, r in enumerate(records(n))],
        "lookup": {f"k{i}": i for i in range(n)},
        "big": [list(range(k)) for k in range(200)],
    }


def decompressed_section(data):
    """``zstd -d`` (with ``-D`` of the archive's dictionary, if its frames use one) of the
    compressed section of ``data``: the plain data, then the plain TOC."""
    with LazyReader(data) as r:
        info = r.info()
        dicts = {f.dictionary for f in r.frames()} - {0}
        kwargs = {"dict_data": zstandard.ZstdCompressionDict(r.dictionary(dicts.pop()))} if dicts else {}
    section = data[16 : 16 + info.stored_data_size]
    with zstandard.ZstdDecompressor(**kwargs).stream_reader(section, read_across_frames=True) as reader:
        return reader.read()[: info.data_size]


@pytest.mark.parametrize("threshold", [64, 1024, 8192, 1 << 20])
def test_lazy_writer_compressed_reads_back_exactly(threshold, tmp_path):
    options = {"small_obj_optimization_threshold": threshold, **ZSTD}
    path = tmp_path / "s.mlc"
    with msglc.LazyWriter(path, **options) as w:
        w.write(streamed(3000))
    value = expected(3000)
    with LazyReader(path, cached=False) as r:
        assert r.info().version == (2, 2)
        assert r["records/2345/sub/7"] == 7 and r["lookup/k2999"] == 2999
        assert r.to_obj() == value
        r.verify()
        plain = msglc.dumps(streamed(3000), small_obj_optimization_threshold=threshold)  # streamed plain
        assert r.protocol_raw_data() == LazyReader(plain).protocol_raw_data()
    # standard zstd decompresses the section to the msgpack (then the TOC)
    assert decompressed_section(path.read_bytes()) == LazyReader(plain).protocol_raw_data()


def test_lazy_writer_compressed_to_a_file_object_and_through_dump():
    out = io.BytesIO()
    with msglc.LazyWriter(out, **ZSTD) as w:
        w.write(streamed(3000))
    assert out.getvalue() == msglc.dumps(streamed(3000), **ZSTD)  # dumps of generators streams the same way
    with LazyReader(out.getvalue()) as r:
        assert r.to_obj() == expected(3000)


def test_a_failed_compressed_stream_leaves_no_file(tmp_path):
    def bad():
        yield from range(100_000)
        raise RuntimeError("the source failed")

    with pytest.raises(RuntimeError, match="source failed"), msglc.LazyWriter(tmp_path / "x.mlc", **ZSTD) as w:
        w.write({"a": bad()})
    assert list(tmp_path.iterdir()) == []


values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=30) | st.dictionaries(st.text(max_size=6), inner, max_size=30),
    max_leaves=300,
)


def as_streamed(value):
    """``value`` with every list a generator and every dict a ``Pairs``."""
    if isinstance(value, list):
        return (as_streamed(v) for v in value)
    if isinstance(value, dict):
        return Pairs((k, as_streamed(v)) for k, v in value.items())
    return value


@settings(max_examples=40, deadline=None)
@given(value=values, threshold=st.sampled_from([64, 1024, 8192]), level=st.sampled_from([1, 3, 19]))
def test_streamed_round_trips_at_thresholds_and_levels(value, threshold, level):
    options = {"small_obj_optimization_threshold": threshold, "compression": "zstd", "compression_level": level}
    data = msglc.dumps(as_streamed(value), **options)
    with LazyReader(data) as r:
        assert r.to_obj() == value
        r.verify()


def frames_of(section):
    """The frame table of a bare compressed section, and the section decompressed by zstd
    (with its dictionary: one at most, chosen by the writer)."""
    source = open_section(BufferSource(section), 0, len(section))[0]
    kwargs = {"dict_data": zstandard.ZstdCompressionDict(source.dictionary_bytes(1))} if source.dictionaries else {}
    with zstandard.ZstdDecompressor(**kwargs).stream_reader(section, read_across_frames=True) as reader:
        return source.table, reader.read()


@pytest.mark.parametrize("before", [0, 10, 5000, 3 << 20])
@pytest.mark.parametrize("after", [0, 100, 3 << 20])
def test_frame_writer_fills_a_slot_wherever_it_is(before, after):
    """A slot filled while buffered, queued as a raw frame, or already written: the section
    decompresses to the bytes with the slot's content in place."""
    rng = random.Random(before + after)
    head, tail = rng.randbytes(before), bytes(rng.randrange(4) for _ in range(after))
    out = io.BytesIO()
    out.write(b"H" * 16)
    w = FrameWriter(out, 4096, 3, base=16)
    w.write(head)
    slot = w.reserve(5)
    w.write(tail)
    w.fill(slot, b"\xdd\x01\x02\x03\x04")
    stored = w.close((0, 0))
    section = out.getvalue()[16:]
    assert len(section) == stored
    table, plain = frames_of(section)
    assert plain == head + b"\xdd\x01\x02\x03\x04" + tail
    sizes = [table.logical(i + 1) - table.logical(i) for i in range(table.frames)]
    assert max(sizes) <= 4096 and min(sizes) > 0


def test_raw_frames_are_standard_and_of_fixed_size():
    for content in (b"\x00" * 5, b"\xdd" * 5, b"\xdf\x00\x00\x01\x00", b"x"):
        frame = raw_frame(content)
        assert len(frame) == 13 + len(content)
        params = zstandard.get_frame_parameters(frame)
        assert params.content_size == len(content) and params.has_checksum
        assert zstandard.ZstdDecompressor().decompress(frame) == content
    bad = bytearray(raw_frame(b"abcde"))
    bad[-6] ^= 1
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompress(bytes(bad))


def test_a_large_chunk_is_compressed_without_copies_of_it(tmp_path):
    """LazyWriter compressing a 40 MB array holds a task's worth of plain bytes at a time, as
    the plain writer does, not copies of the chunk it was given."""
    import tracemalloc

    np = pytest.importorskip("numpy")
    arr = np.random.default_rng(0).random(5_000_000)
    tracemalloc.start()
    try:
        with msglc.LazyWriter(tmp_path / "a.mlc", compression="zstd") as w:
            w.write({"field": arr, "rows": (i for i in range(10))})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16_000_000, peak
    with msglc.LazyReader(tmp_path / "a.mlc") as r:
        assert np.array_equal(np.asarray(r["field"]), arr) and r["rows"] == list(range(10))


def test_lazy_writer_dict_blocks_seldom_straddle_its_fixed_frames():
    """LazyWriter cuts frames at fixed sizes, not at a dict's block starts: a lookup whose
    block straddles a cut decompresses two frames, so its blocks stay small (about 1 KB,
    as in a plain archive; ``dump`` cuts its frames at block starts and may use 2 KB)."""
    rng = random.Random(2)
    doc = {f"k{i}": f"v{rng.getrandbits(40):x}" for i in range(50_000)}
    f = io.BytesIO()
    with msglc.LazyWriter(f, **ZSTD) as w:
        w.write(Pairs(iter(doc.items())))
    with LazyReader(f.getvalue()) as r:
        root = r.read()
        assert root["k1"] == doc["k1"]
        base = root._base - 16  # noqa: SLF001
        offs = [base + o for o in root._index.offs]  # noqa: SLF001
        cuts = [f.plain_offset - 16 for f in r.frames()]
    # a block [a, b) straddles when the first cut after its start comes before its end
    straddling = sum(1 for a, b in pairwise(offs) if cuts[bisect_right(cuts, a)] < b)
    assert straddling / (len(offs) - 1) < 0.1


def test_combine_keeps_raw_frames_raw(tmp_path):
    """Data frames an input stores raw (incompressible bytes: read in place) stay raw in the
    combined archive, their bytes copied."""
    rng = random.Random(5)
    noise = [rng.randbytes(30_000) for _ in range(20)]
    value = {"noise": noise, "text": ["abc" * 50] * 2000}
    part = tmp_path / "part.mlc"
    msglc.dump(part, value, compression="zstd")
    with LazyReader(part) as r:
        data_end = 16 + r.info().data_size
        raw_in = [
            f.plain_size for f in r.frames() if f.filter == 2 and f.plain_offset >= 21 and f.plain_offset < data_end
        ]
    assert len(raw_in) >= 5
    msglc.combine(tmp_path / "all.mlc", [msglc.FileInfo(part, "t")])
    with LazyReader(tmp_path / "all.mlc") as r:
        raw_out = [f.plain_size for f in r.frames() if f.filter == 2]
        assert all(raw_out.count(size) >= raw_in.count(size) for size in raw_in)
        assert r["t/noise/3"] == noise[3]
        r.verify()


def test_runs_of_numbers_take_the_faster_level_only_where_it_costs_nothing():
    """A run of shuffled numbers is compressed at the first of levels 1 and 3 that leaves its
    first frame (about) as small as the writer's level does: level 1 for random floats, whose
    low planes are noise; level 3 for a coarse noisy wave, which level 1 leaves 10% larger. A smooth
    field, which both leave 2-3% larger, keeps the writer's level."""
    np = pytest.importorskip("numpy")
    from msglc.format.shuffle import shuffle
    from msglc.write.compress import planes_compressed

    rng = np.random.default_rng(5)
    noise = rng.normal(size=12288)  # 96 KB (normal: levels 1 and 3 make other bytes than 5, of the same size)
    t = np.arange(24576)
    wave = np.round((np.sin(t * 0.01) + np.random.default_rng(0).normal(size=24576) * 0.001) * 64) / 64
    x, y = np.arange(192)[:, None] * 0.002, np.arange(64)[None, :] * (8 * np.pi / 4000)
    field = np.sin(x) * np.cos(y) + 0.25 * np.cos(x * 1.7 - y * 0.9)  # two waves (benchmark's smooth_field)
    smooth = np.round(field * 2**20) / 2**20  # quantized, as measured data is
    runs = [noise.tobytes(), wave.tobytes(), smooth.tobytes()]
    data = b"".join(runs)
    frames, at = [], 0
    for run in runs:  # two frames a run: the first decides the level
        frames += [(at + len(run) // 2, 8, at), (at + len(run), 8, at)]
        at += len(run)
    out = io.BytesIO()
    w = FrameWriter(out, 1 << 16, 5)
    w.write_planned(data, frames)
    w.close((0, 0))
    section = out.getvalue()
    table = frames_of(section)[0]
    assert table.frames == 6
    for i, level in enumerate((1, 1, 3, 3, 5, 5)):
        stored = section[table.stored(i) : table.stored(i + 1)]
        piece = shuffle(memoryview(data)[table.logical(i) : table.logical(i + 1)], 8)
        assert stored == planes_compressed(zstandard.ZstdCompressor(level=level, write_checksum=True), piece, 8), i
        if level > 1:  # (and the level taken makes other bytes than the faster one)
            faster = planes_compressed(zstandard.ZstdCompressor(level=1, write_checksum=True), piece, 8)
            assert stored != faster, i


def test_a_section_of_numbers_makes_no_dictionary_trial(monkeypatch):
    """A dictionary is tried (dozens of frames compressed twice, one 1 MB dictionary at level
    9: 30-180 ms) only when the data holds ``DICT_MIN_DATA`` bytes outside runs of numbers:
    a large array's shuffled frames would gain nothing from it."""
    np = pytest.importorskip("numpy")
    from msglc.write import compress

    tried = []

    def choose(*args: Any, **kwargs: Any) -> None:
        tried.append(args)

    monkeypatch.setattr(compress, "choose_dictionary", choose)
    numbers = np.random.default_rng(6).random(1 << 16).tobytes()  # 512 KB
    text = b"".join(b'{"key %d": "value %d"}' % (i, i) for i in range(20000))  # about 500 KB
    for data, expect in ((numbers, 0), (numbers + text, 1)):
        frames = [(e, 8, 0) for e in range(1 << 16, len(numbers) + 1, 1 << 16)]
        frames += [(e, 0, -1) for e in range(len(numbers) + (1 << 16), len(data), 1 << 16)]
        if frames[-1][0] != len(data):
            frames.append((len(data), 0, -1))
        w = FrameWriter(io.BytesIO(), 1 << 16, 5)
        w.write_planned(data, frames)
        w.close((0, 0))
        assert len(tried) == expect
        tried.clear()
