"""Compressed archives (format 2.0, docs/compression.md): dump and dumps with
compression="zstd" write zstd frames that the reader serves as the plain data, lazily; the
data section stays readable by standard zstd; damage gives only documented errors; repacking
keeps the compression unless asked. (LazyWriter, combine, append: test_compressed_writers.py.)"""

import io
import random
import sys
import zlib
from typing import Any

import msgpack
import pytest
from archives import near_duplicates
from hypothesis import given, settings
from hypothesis import strategies as st

import msglc
from msglc import CorruptedError, FileInfo, LazyReader, MsglcError
from msglc.io.framed import SMALL_FRAME

zstandard = pytest.importorskip("zstandard")

ZSTD: dict[str, Any] = {"compression": "zstd"}  # dump's **options


def document(seed=3, n=3000):
    rng = random.Random(seed)
    return {
        "runs": [{"id": i, "energy": [rng.random() for _ in range(20)], "tag": f"run-{i % 17}"} for i in range(n)],
        "m": [[float(i * j) for j in range(150)] for i in range(150)],
        "names": {f"key-{i}": "v" * (i % 9) for i in range(3000)},
        "blob": bytes(range(256)) * 64,
    }


DOC = document()


def test_compressed_archives_read_like_plain_ones(tmp_path):
    plain = msglc.dumps(DOC)
    data = msglc.dumps(DOC, **ZSTD)
    assert data[8:10] == b"\x02\x02" and len(data) < len(plain)  # format 2.2, smaller
    msglc.dump(tmp_path / "c.mlc", DOC, **ZSTD)
    assert (tmp_path / "c.mlc").read_bytes() == data
    out = io.BytesIO()
    msglc.dump(out, DOC, **ZSTD)
    assert out.getvalue() == data
    for source in (data, tmp_path / "c.mlc", open(tmp_path / "c.mlc", "rb")):  # noqa: SIM115
        with LazyReader(source, cached=False) as r:
            assert r["runs/1234/energy/7"] == DOC["runs"][1234]["energy"][7]
            assert r["m"][77][101] == 77.0 * 101 and r["names"]["key-2999"] == DOC["names"]["key-2999"]
            assert r.read_many(["runs/5/tag", "m/3/4", "blob"]) == ["run-5", 12.0, DOC["blob"]]
            assert r.to_obj() == DOC
            assert r.protocol_raw_data() == LazyReader(plain).protocol_raw_data()  # plain msgpack
            assert r.raw_data() == data  # the file as stored
            info = r.info()
            assert info.version == (2, 2) and info.data_size == len(r.protocol_raw_data())
            r.verify()


def test_standard_zstd_reads_the_data_section():
    """Without runs of numbers (no frame shuffled), ``zstd -d`` of the compressed section
    (given its dictionary, ``-D``, when its frames use one) is the plain msgpack followed by
    the plain TOC: the tables are skippable frames. With runs of numbers, it is the same with
    those frames' bytes shuffled."""
    doc = {k: v for k, v in DOC.items() if k != "m"}
    data = msglc.dumps(doc, **ZSTD)
    with LazyReader(data) as r:
        expected, info = r.protocol_raw_data(), r.info()
        dicts = {f.dictionary for f in r.frames()} - {0}
        dictionary = r.dictionary(dicts.pop()) if dicts else None
    assert not dicts  # one dictionary at most (the data's own: too little data for regions)
    section = data[16 : 16 + info.stored_data_size]
    kwargs = {} if dictionary is None else {"dict_data": zstandard.ZstdCompressionDict(dictionary)}
    with zstandard.ZstdDecompressor(**kwargs).stream_reader(section, read_across_frames=True) as reader:
        both = reader.read()
    assert both[: len(expected)] == expected and len(both) == len(expected) + info.toc_size
    assert msgpack.unpackb(expected, strict_map_key=False) == doc


def test_repacking_keeps_the_compression_unless_asked():
    data = msglc.dumps(DOC, **ZSTD)
    with LazyReader(data) as r:
        assert LazyReader(r["runs"].raw_data()).to_obj() == DOC["runs"]  # a part's raw_data(): plain 1.x
        out = io.BytesIO()
        msglc.dump(out, r)  # the source's compression kept: the archive copied, frames and all
        assert out.getvalue() == data
        plain = io.BytesIO()
        msglc.dump(plain, r, compression=None)  # asked for plain: as dump(DOC) writes it
        assert plain.getvalue() == msglc.dumps(DOC)
        again = io.BytesIO()
        msglc.dump(again, r, compression_level=9)  # recompressed at another level
        with LazyReader(again.getvalue()) as r9:
            assert r9.info().version == (2, 2) and r9.to_obj() == DOC
        part = io.BytesIO()
        msglc.dump(part, r["runs"])  # a part of a compressed archive: compressed too
        assert part.getvalue() == msglc.dumps(DOC["runs"], **ZSTD)
    with LazyReader(msglc.dumps(DOC)) as r:
        out = io.BytesIO()
        msglc.dump(out, r, **ZSTD)
        assert out.getvalue() == data


def test_every_writer_compresses(tmp_path):
    msglc.dump(tmp_path / "c.mlc", DOC, **ZSTD)
    streamed = msglc.dumps({"a": (i for i in range(3000))}, **ZSTD)  # a generator: streamed by LazyWriter
    with LazyReader(streamed) as r:
        assert r.info().version == (2, 2) and r.to_obj() == {"a": list(range(3000))}
    msglc.combine(tmp_path / "out.mlc", [FileInfo(tmp_path / "c.mlc", "c")], compression=None)
    with LazyReader(tmp_path / "out.mlc") as r:  # asked for plain: the frames decompressed
        assert r.info().version[0] == 1 and r["c"].to_obj() == DOC
        r.verify()
    msglc.append(tmp_path / "c2.mlc", [FileInfo(tmp_path / "c.mlc", "c")], **ZSTD)  # created
    msglc.append(tmp_path / "c2.mlc", [FileInfo(None, "x", obj=1)])
    with LazyReader(tmp_path / "c2.mlc") as r:
        assert r.info().version == (2, 2) and r.to_obj() == {"c": DOC, "x": 1}
        r.verify()


@pytest.mark.parametrize(
    ("option", "value"), [("compression", "gzip"), ("compression_level", 0), ("compression_level", 23)]
)
def test_bad_compression_options_are_refused(option, value):
    with pytest.raises(ValueError, match=option):
        msglc.dumps([1], **{option: value})


def test_damage_gives_only_documented_errors():
    """A flipped bit is reported (checksums of the frames, the data, the TOC and the trailer),
    or changes nothing that decompresses (a bit zstd does not use): never a wrong value."""
    doc = document(n=300)
    data = msglc.dumps(doc, small_obj_optimization_threshold=1024, **ZSTD)
    rng = random.Random(5)
    for pos in sorted(rng.sample(range(len(data)), 250)):
        bad = bytearray(data)
        bad[pos] ^= 1 << rng.randrange(8)
        try:
            with LazyReader(bytes(bad)) as r:
                value = r.to_obj()
                r.verify()
        except MsglcError:
            continue
        assert value == doc, f"a flipped bit at offset {pos} changed the value unnoticed"
    for size in range(0, len(data), len(data) // 150):
        with pytest.raises(MsglcError):
            LazyReader(data[:size]).to_obj()


def test_without_the_binding_the_error_names_the_package(monkeypatch):
    data = msglc.dumps([1, 2, 3], **ZSTD)
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(ImportError, match=r"pip install zstandard$"):
        msglc.dumps([1, 2, 3], **ZSTD)
    with pytest.raises(ImportError, match=r"pip install zstandard$"):
        LazyReader(data)


values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=40) | st.dictionaries(st.text(max_size=8), inner, max_size=40),
    max_leaves=400,
)


@settings(max_examples=60, deadline=None)
@given(value=values, threshold=st.sampled_from([64, 1024, 8192]), level=st.sampled_from([1, 3, 19]))
def test_round_trips_at_thresholds_and_levels(value, threshold, level):
    data = msglc.dumps(value, small_obj_optimization_threshold=threshold, compression="zstd", compression_level=level)
    with LazyReader(data) as r:
        assert r.to_obj() == value
        assert r.protocol_raw_data() == LazyReader(msglc.dumps(value)).protocol_raw_data()
        r.verify()


def _archive_with_section(frames: list[bytes], plain_sizes: list[int], crc: int = 0) -> bytes:
    """A 2.0 archive of a small root whose data section is ``frames`` (any bytes) and the seek
    table giving them ``plain_sizes``: everything but the frames themselves is consistent."""
    from msglc.format.frames import pack_seek_table
    from msglc.format.layout import COMPRESSED, Trailer, pack_header

    head = pack_header(0, major=COMPRESSED)
    section = b"".join(frames) + pack_seek_table([(len(f), n) for f, n in zip(frames, plain_sizes, strict=True)])
    return head + section + Trailer.contiguous(len(section), 0, (0, 0), crc, 8192).pack(head)


def test_a_seek_table_claiming_huge_frames_costs_no_memory():
    """100 GB claimed by 100,000 nine-byte frames: opening and verify() fail at the first frame,
    allocating nothing from the claim."""
    data = _archive_with_section([b"\x00" * 9] * 100_000, [1 << 20] * 100_000)
    with LazyReader(data) as r:
        assert r.info().data_size == 100_000 << 20
        with pytest.raises(CorruptedError, match="frame 0"):
            r.verify()
        with pytest.raises(CorruptedError, match="frame 0"):
            r.read()


def test_frames_must_carry_their_checksum_and_nothing_else():
    plain = msgpack.packb(list(range(100)))
    bare = zstandard.ZstdCompressor(write_checksum=False).compress(plain)
    checked = zstandard.ZstdCompressor(write_checksum=True).compress(plain)
    with pytest.raises(CorruptedError, match="no checksum"):
        LazyReader(_archive_with_section([bare], [len(plain)])).read()
    with pytest.raises(CorruptedError, match="does not decompress"):
        LazyReader(_archive_with_section([checked + b"junkjunk"], [len(plain)])).read()
    good = _archive_with_section([checked], [len(plain)], zlib.crc32(plain))
    assert LazyReader(good).read() == list(range(100))


def test_a_compressed_archive_changed_under_a_reader(tmp_path):
    path = tmp_path / "c.mlc"
    msglc.dump(path, DOC, small_obj_optimization_threshold=1024, **ZSTD)
    with LazyReader(path, cached=False) as r:
        runs = r["runs"]
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])  # another writer cut the file
        with pytest.raises(msglc.ArchiveChangedError):
            runs[2999].to_obj()


def test_verify_of_a_compressed_archive_in_many_pieces(monkeypatch):
    from msglc.read import verify

    monkeypatch.setattr(verify, "CHUNK", 4096)
    data = msglc.dumps(DOC, **ZSTD)
    steps: list[int] = []
    with LazyReader(data) as r:
        r.verify(progress=steps.append)
        assert sum(steps) == r.info().data_size and len(steps) > 100
    bad = bytearray(data)
    bad[len(data) // 3] ^= 0x10
    with pytest.raises(MsglcError):
        LazyReader(bytes(bad)).verify()


def test_requests_count_the_file_and_arrays_fill_frame_by_frame(tmp_path):
    """LazyStats counts what is read from the file (compressed bytes), and a NumPy array read
    from frames comes out equal, whole or sliced."""
    np = pytest.importorskip("numpy")
    a = np.random.default_rng(0).random((500, 400))
    path = tmp_path / "a.mlc"
    msglc.dump(path, {"a": a, "x": list(range(1000))}, compression="zstd", small_obj_optimization_threshold=4096)
    stats = msglc.LazyStats()
    with LazyReader(path, counter=stats, cached=False) as r:
        assert np.array_equal(np.asarray(r["a"]), a)
        assert np.array_equal(r["a"][10:300:7, 5:390], a[10:300:7, 5:390])
        stats.clear()
        r.to_obj()
        assert stats() <= path.stat().st_size  # every frame once, as stored


def test_read_many_fetches_frames_together_from_a_remote_archive():
    """Batched reads of a remote compressed archive fetch the frames they need in as few
    requests as a plain archive's batch (not one request per path)."""
    fsspec = pytest.importorskip("fsspec")
    rng = random.Random(2)
    fs = fsspec.filesystem("memory")
    doc = document(n=3000)
    for name, options in (("plain", {}), ("zstd", ZSTD)):
        fs.pipe_file(f"/framed/{name}.mlc", msglc.dumps(doc, **options))
    paths = [f"runs/{rng.randrange(3000)}/energy/{rng.randrange(20)}" for _ in range(200)]
    requests = {}
    for name in ("plain", "zstd"):
        stats = msglc.LazyStats()
        with LazyReader(f"/framed/{name}.mlc", fs=fs, counter=stats, cached=False, block_size=4096) as r:
            stats.clear()
            got = r.read_many(paths)
            requests[name] = stats.requests
            assert got == [r[p] for p in paths]
    assert requests["zstd"] <= 2 * requests["plain"] + 5, requests


def test_standard_zstd_gives_shuffled_frames_as_the_filter_table_says():
    from msglc.format.frames import SHUFFLE
    from msglc.format.shuffle import unshuffle

    data = msglc.dumps(DOC, **ZSTD)
    with LazyReader(data) as r:
        expected, frames = r.protocol_raw_data(), list(r.frames())
        dictionaries = {d: r.dictionary(d) for d in {f.dictionary for f in frames} - {0}}
    assert any(f.parameter for f in frames)  # the matrix "m": 9-byte floats
    for f in frames:
        d = dictionaries.get(f.dictionary)
        decompressor = (
            zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(d))
            if d
            else (zstandard.ZstdDecompressor())
        )
        frame = decompressor.decompress(data[f.offset : f.offset + f.size])
        plain = unshuffle(frame, f.parameter) if f.filter == SHUFFLE else frame  # (2: a raw frame, in place)
        at = f.plain_offset - 16
        if at < len(expected):  # (the TOC's frames follow the data's)
            assert plain == expected[at : at + f.plain_size]


def test_a_damaged_frame_count_is_refused_before_the_section_is_read():
    """An index footer claiming a larger index than the section can hold: the open refuses it
    from the footer alone, without reading (or downloading) the section."""
    data = msglc.dumps({"v": list(range(300_000))}, **ZSTD)
    with LazyReader(data) as r:
        end = 16 + r.info().stored_data_size
    bad = bytearray(data)
    bad[end - 6] ^= 0x80  # the top byte of the footer's u32 index size
    stats = msglc.LazyStats()
    with pytest.raises(CorruptedError, match="index of .* does not fit"):
        LazyReader(bytes(bad), counter=stats)
    assert stats.bytes < 70_000, str(stats)


def test_incompressible_frames_are_stored_raw_and_read_in_place():
    """A frame zstd cannot shrink is stored raw (filter 2: one raw block): a read inside it
    reads those bytes alone, in place, and reads count in the reader's LazyStats."""
    rng = random.Random(5)
    noise = [rng.randbytes(200) for _ in range(2000)]
    text = [f"line {i}" for i in range(30_000)]
    doc = {"noise": noise, "text": text}
    data = msglc.dumps(doc, **ZSTD)
    stats = msglc.LazyStats()
    with LazyReader(data, counter=stats, cached=False) as r:
        frames = list(r.frames())
        assert any(f.filter == 2 for f in frames) and any(f.filter == 0 for f in frames)
        assert stats.bytes < 16_000  # the open: index, a page table, the root's frames
        stats.clear()
        assert r["noise"][1234] == noise[1234]
        assert 0 < stats.bytes < 1000, stats  # the item's bytes, not its 64 KB frame
        stats.clear()
        assert r["text"][25_000] == "line 25000"
        at = r["text"].location().offset + len(msgpack.packb(text[:25_000]))  # (both: array16)
        holder = next(f for f in frames if f.plain_offset <= at < f.plain_offset + f.plain_size)
        assert stats.bytes >= holder.size > 500  # a compressed frame is read whole (and counted)
        assert r.to_obj() == doc
        r.verify()


def test_frames_are_not_cut_short_by_an_early_item_boundary():
    """Long runs of items without a node of their own (a fixed-stride list of bytes values)
    are cut into full frames, not at the only item boundary near the run's start."""
    rng = random.Random(6)
    doc = {"blobs": [rng.randbytes(100) for _ in range(3000)], "tail": list(range(10))}
    with LazyReader(msglc.dumps(doc, **ZSTD)) as r:
        sizes = [f.plain_size for f in r.frames()]
    # the root's head (its header, the key "blobs" and the list's header), then full frames
    assert sizes[0] == 1 + 6 + 5 and min(sizes[1:4]) > 16_000, sizes


def test_a_list_of_small_strings_gets_a_frame_per_span():
    """A list of small scalars is read an item at a time (a lookup table by index): a read
    decompresses one span's frame, not 64 KB; a list of records keeps full frames."""
    rng = random.Random(7)
    names = [f"pkg-{rng.getrandbits(48):x}" * rng.randint(1, 3) for _ in range(60_000)]  # (sizes vary)
    records = [{"name": n, "score": i} for i, n in enumerate(names[:30_000])]
    for value, most in ((names, 2 * 16_384), (records, None)):
        with LazyReader(msglc.dumps(value, **ZSTD)) as r:
            sizes = [f.plain_size for f in r.frames()][1:-3]  # (the root header, the TOC's last)
            assert r[12_345] == value[12_345]
        if most is not None:
            assert max(sizes) <= most, max(sizes)
        else:
            assert max(sizes) > 48_000, max(sizes)


def test_near_duplicates_far_apart_compress_like_the_whole_file():
    """Documents that repeat their neighbours farther apart than a frame: each region of the
    data gets a dictionary of its own, so the archive is about as small as the whole file
    compressed by zstd (one dictionary for all: 3.8x), and reads as any other."""
    obj = near_duplicates()
    whole = len(zstandard.ZstdCompressor(level=3).compress(msgpack.packb(obj)))
    data = msglc.dumps(obj, **ZSTD)
    assert len(data) <= 1.15 * whole, len(data) / whole
    with LazyReader(data, cached=False) as r:
        frames = list(r.frames())
        used = [f.dictionary for f in frames if f.plain_offset - 16 < r.info().data_size and f.dictionary]
        assert len(set(used)) >= 4 and used == sorted(used)  # one per region, in the data's order
        assert all(len(r.dictionary(d)) <= 1 << 20 for d in set(used))
        for name in ("f000-m0", "f017-m3", "f039-m5"):
            assert r[name]["words"] == obj[name]["words"]
        assert r.to_obj() == obj
        r.verify()


def test_documents_without_far_repeats_keep_one_dictionary():
    """Records with the same keys and values of their own: a dictionary per region would not
    pay (each costs a reader its load), so the data gets one dictionary at most."""
    rng = random.Random(8)
    obj = [
        {"id": i, "name": rng.randbytes(12).hex(), "score": rng.random(), "tags": ["a", "b"][: i % 3]}
        for i in range(140_000)
    ]
    data = msglc.dumps(obj, **ZSTD)
    assert len(msgpack.packb(obj)) >= 8 << 20  # (large enough for regions to be tried)
    with LazyReader(data) as r:
        assert len({f.dictionary for f in r.frames()} - {0}) <= 1


@pytest.mark.parametrize("kind", ["floats", "records and floats"])
def test_runs_of_numbers_get_no_dictionary_that_makes_the_archive_larger(monkeypatch, kind):
    """Lists of Python numbers are written shuffled, where a raw-content dictionary does not
    help: a dictionary chosen from them (one per region, each stored in the archive) made a
    1 M-float list 4x larger than no dictionary. Their frames name none, and the archive is no
    larger than one written with dictionaries turned off."""
    from msglc.write import compress, encoder

    rng = random.Random(2)
    nums = [i * 0.001 for i in range(1_000_000)]
    obj: Any = nums
    if kind != "floats":
        obj = {"recs": [{"id": i, "name": rng.randbytes(6).hex(), "tag": rng.choice("abc")} for i in range(30_000)]}
        obj["nums"] = nums
    archive = msglc.dumps(obj, compression="zstd")
    with LazyReader(archive) as r:
        assert r.read() == obj
        assert all(f.dictionary == 0 for f in r.frames() if f.filter == 1)
    for module in (compress, encoder):
        monkeypatch.setattr(module, "choose_dictionaries", lambda *a, **k: None)
    monkeypatch.setattr(compress, "choose_dictionary", lambda *a, **k: None)
    assert len(archive) <= 1.01 * len(msglc.dumps(obj, compression="zstd"))


@pytest.mark.parametrize("gain", ["little", "much"])
def test_lookup_tables_use_the_dictionary_only_where_it_pays(monkeypatch, gain):
    """A lookup table (here a list of small strings) is read a small frame at a time, and a
    frame decompresses several times slower against a 1 MB dictionary: its frames use the
    data's dictionary only when a trial on them says it makes them 5% smaller (made to say
    so or not here), and a dictionary only they would use is not stored. Documents beside
    them keep theirs; everything reads back and verifies."""
    from msglc.io.framed import FramedSource
    from msglc.read.part import archive_of
    from msglc.write import compress

    monkeypatch.setattr(compress, "TABLE_DICT_GAIN", 0.0 if gain == "little" else 10.0)
    rng = random.Random(11)
    names = [
        f"{rng.choice(['react', 'vue', 'node'])}-{rng.getrandbits(40):x}" * rng.randint(1, 2) for _ in range(80_000)
    ]
    docs = [{"title": f"item {i}", "text": "lorem ipsum dolor sit amet " * 4, "n": i} for i in range(6_000)]
    for obj in ({"docs": docs, "names": names}, names):
        with LazyReader(msglc.dumps(obj, **ZSTD)) as r:
            mixed = isinstance(obj, dict)
            where = r["names" if mixed else ""].location()
            frames = [f for f in r.frames() if f.plain_offset > 16 and f.plain_offset < 16 + r.info().data_size]
            inside = {f.dictionary for f in frames if where.offset <= f.plain_offset < where.offset + where.size}
            outside = {
                f.dictionary
                for f in frames
                if not where.offset <= f.plain_offset < where.offset + where.size and f.plain_size > SMALL_FRAME
            }
            assert inside == ({1} if gain == "much" else {0})
            src = archive_of(r).src
            assert isinstance(src, FramedSource)
            assert src.dictionaries == (1 if gain == "much" or mixed else 0)  # (none stored unused)
            if mixed:
                assert outside == {1}  # (the documents' frames) ...
                key = where.offset - len(b"\xa5names")  # ... but the head of "names", cut out small
                head = next(f for f in frames if f.plain_offset <= key < f.plain_offset + f.plain_size)
                assert head.plain_offset == key and head.plain_size <= SMALL_FRAME and head.dictionary == 0
            assert r.to_obj() == obj
            r.verify()


def test_lookup_tables_keep_a_dictionary_that_pays_though_few_frames_show_it(monkeypatch):
    """Where the dictionary pays for a minority of table frames (here a list of words of the
    documents' vocabulary beside a larger list of random names: 8% smaller all told), a trial
    on frames drawn anywhere may draw too few of them and drop it (24 did for this data: the
    archive 8% larger). The trial draws one from each of equal runs of table frames, each table
    by its share, and keeps it."""
    import itertools

    from msglc.write import compress

    rng = random.Random(8)
    vocab = [rng.randbytes(rng.randint(3, 9)).hex() for _ in range(3000)]
    docs = [" ".join(rng.choices(vocab, k=60)) for _ in range(3000)]
    blob = rng.randbytes(12_000_000).hex()
    cuts = [0]
    while cuts[-1] < len(blob) - 30:
        cuts.append(cuts[-1] + rng.randint(12, 24))
    names = [blob[a:b] for a, b in itertools.pairwise(cuts)]
    obj = {"docs": docs, "names": names, "words": rng.choices(vocab, k=350_000)}
    archive = msglc.dumps(obj, **ZSTD)
    monkeypatch.setattr(compress, "TABLE_DICT_GAIN", 10.0)  # (the table frames always use it)
    assert len(archive) <= 1.01 * len(msglc.dumps(obj, **ZSTD))


def test_a_table_under_a_key_stores_no_dictionary_only_its_first_frame_would_use(monkeypatch):
    """The first frame of a table that is a dict's value begins before it (the root's key, the
    list's header): it is still one of the table's frames. When they do without the dictionary,
    none is stored (it was, 1 MB, for that one frame of the table)."""
    from msglc.io.framed import FramedSource
    from msglc.read.part import archive_of
    from msglc.write import compress

    monkeypatch.setattr(compress, "TABLE_DICT_GAIN", 0.0)  # (the trial says the dictionary does not pay)
    rng = random.Random(11)
    names = [
        f"{rng.choice(['react', 'vue', 'node'])}-{rng.getrandbits(40):x}" * rng.randint(1, 2) for _ in range(80_000)
    ]
    for obj in ({"names": names}, {"meta": {"v": 1}, "names": names}):
        with LazyReader(msglc.dumps(obj, **ZSTD)) as r:
            assert {f.dictionary for f in r.frames()} == {0}
            src = archive_of(r).src
            assert isinstance(src, FramedSource) and src.dictionaries == 0
            assert r.to_obj() == obj
            r.verify()
