"""combine and append of compressed archives (format 2.1): compressed inputs' frames copied as
they are, plain and compressed inputs mixed, the default compression of a result, and append
to a compressed archive (a rewrite) leaving the old archive whole whatever fails or dies."""

import errno
import itertools
import os
import random
from typing import Any

import pytest
from archives import RUN1, RUN2, check
from hypothesis import given, settings
from hypothesis import strategies as st

import msglc
from msglc import CorruptedError, FileInfo, LazyReader
from msglc.format.frames import SHUFFLE
from msglc.write.compress import FrameWriter

pytest.importorskip("zstandard")

ZSTD: dict[str, Any] = {"compression": "zstd"}  # writer options
BIG = {"x": [float(i) for i in range(20_000)], "s": [f"item {i}" for i in range(5000)]}


def frames_bytes(path, skip=0):
    """The frames of a compressed archive's data (not its TOC's) as stored, from frame
    ``skip`` on."""
    data = path.read_bytes()
    with LazyReader(path) as r:
        end = 16 + r.info().data_size
        frames = [f for f in r.frames() if f.plain_offset < end][skip:]
    return data[frames[0].offset : frames[-1].offset + frames[-1].size]


def version(path):
    with LazyReader(path) as r:
        return r.info().version


@pytest.fixture
def parts(tmp_path):
    """Four archives, compressed and plain alternately, at different thresholds."""
    docs = [RUN1, RUN2, BIG, {"nested": [RUN1, BIG]}]
    paths = []
    for i, doc in enumerate(docs):
        path = tmp_path / f"p{i}.mlc"
        msglc.dump(
            path, doc, small_obj_optimization_threshold=[1024, 8192, 4096, 64][i], **(ZSTD if i % 2 == 0 else {})
        )
        paths.append(path)
    return tmp_path, docs, paths


@pytest.mark.parametrize("threshold", [64, 8192])
def test_mixed_inputs_combine_to_the_same_values(parts, threshold):
    tmp_path, docs, paths = parts
    infos = [FileInfo(p, f"n{i}") for i, p in enumerate(paths)]
    expected = {f"n{i}": doc for i, doc in enumerate(docs)}
    msglc.combine(tmp_path / "plain.mlc", infos, small_obj_optimization_threshold=threshold)
    msglc.combine(tmp_path / "c.mlc", infos, small_obj_optimization_threshold=threshold, **ZSTD)
    assert version(tmp_path / "plain.mlc")[0] == 1 and version(tmp_path / "c.mlc") == (2, 2)
    check(tmp_path / "plain.mlc", expected)
    check(tmp_path / "c.mlc", expected)
    with LazyReader(tmp_path / "plain.mlc") as a, LazyReader(tmp_path / "c.mlc", cached=False) as b:
        assert a.protocol_raw_data() == b.protocol_raw_data()  # the same plain data, offsets and all
        assert b["n2/x/19999"] == 19999.0 and b["n3/nested/1/s/4999"] == "item 4999"
    out = (tmp_path / "c.mlc").read_bytes()
    for i in (0, 2):  # the compressed inputs' frames are in the result byte for byte: not recompressed
        assert frames_bytes(paths[i]) in out


def test_combined_frames_are_copied_not_recompressed(parts):
    tmp_path, docs, paths = parts
    compressed = [FileInfo(paths[0]), FileInfo(paths[2])]
    msglc.combine(tmp_path / "c.mlc", compressed)  # every input compressed: so is the result
    assert version(tmp_path / "c.mlc") == (2, 2)
    with LazyReader(tmp_path / "c.mlc") as r:
        assert next(iter(r.frames())).plain_size == 1  # only the root's one-byte header was compressed
    assert frames_bytes(tmp_path / "c.mlc", skip=1) == frames_bytes(paths[0]) + frames_bytes(paths[2])
    check(tmp_path / "c.mlc", [docs[0], docs[2]])
    msglc.combine(tmp_path / "p.mlc", compressed, compression=None)  # asked for plain
    assert version(tmp_path / "p.mlc")[0] == 1
    msglc.combine(tmp_path / "m.mlc", [FileInfo(paths[0]), FileInfo(paths[1])])  # a plain input: plain
    assert version(tmp_path / "m.mlc")[0] == 1
    msglc.combine(tmp_path / "o.mlc", [FileInfo(paths[0]), FileInfo(None, obj=[1, 2])])  # obj= does not count
    assert version(tmp_path / "o.mlc") == (2, 2)
    check(tmp_path / "o.mlc", [docs[0], [1, 2]])


def test_a_damaged_compressed_input_is_refused_before_the_output_exists(parts):
    tmp_path, _, paths = parts
    data = bytearray(paths[2].read_bytes())
    data[200] ^= 0x10  # inside a frame
    with pytest.raises(CorruptedError):
        msglc.combine(tmp_path / "out.mlc", [FileInfo(bytes(data), "bad")], **ZSTD)
    assert not (tmp_path / "out.mlc").exists()


def test_combine_of_combined_compressed_archives(parts):
    tmp_path, docs, paths = parts
    msglc.combine(tmp_path / "a.mlc", [FileInfo(paths[0], "a"), FileInfo(paths[1], "b")], **ZSTD)
    msglc.combine(tmp_path / "b.mlc", [FileInfo(tmp_path / "a.mlc"), FileInfo(paths[2])])
    check(tmp_path / "b.mlc", [{"a": docs[0], "b": docs[1]}, docs[2]])
    assert frames_bytes(tmp_path / "a.mlc") in (tmp_path / "b.mlc").read_bytes()


@settings(max_examples=25, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["zstd", "plain", "obj"]), min_size=1, max_size=5),
    threshold=st.sampled_from([64, 1024, 8192]),
)
def test_any_mix_of_inputs_combines(tmp_path_factory, kinds, threshold):
    tmp_path = tmp_path_factory.mktemp("mix")
    infos, expected = [], []
    for i, kind in enumerate(kinds):
        doc = {"i": i, "v": list(range(i * 700)), "s": "x" * (i * 300)}
        expected.append(doc)
        if kind == "obj":
            infos.append(FileInfo(None, obj=doc))
        else:
            path = tmp_path / f"{i}.mlc"
            msglc.dump(path, doc, small_obj_optimization_threshold=threshold, **(ZSTD if kind == "zstd" else {}))
            infos.append(FileInfo(path))
    msglc.combine(tmp_path / "out.mlc", infos, small_obj_optimization_threshold=threshold, **ZSTD)
    check(tmp_path / "out.mlc", expected)


# ---- append ---------------------------------------------------------------------------------


@pytest.fixture
def compressed_target(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1"), FileInfo(runs / "run1.mlc", "again")], **ZSTD)
    return out


def test_append_to_a_compressed_archive(runs):
    out = runs / "all.mlc"
    old = {"run1": RUN1, "again": RUN1, "big0": BIG, "big1": BIG}  # several frames of 64 KB
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1"), FileInfo(runs / "run1.mlc", "again")], **ZSTD)
    msglc.combine(out, [FileInfo(None, k, obj=BIG) for k in ("big0", "big1")], mode="a")
    old_frames = frames_bytes(out, skip=1)
    msglc.append(out, [FileInfo(runs / "run2.mlc", "run2"), FileInfo(None, "big", obj=BIG)])
    assert version(out) == (2, 2)
    check(out, {**old, "run2": RUN2, "big": BIG})
    assert len(old_frames) > 1000 and old_frames in out.read_bytes()  # all but the root header's frame copied
    with pytest.raises(ValueError, match="keeps the archive's compression"):
        msglc.append(out, [FileInfo(runs / "run2.mlc", "x")], compression=None)
    with pytest.raises(ValueError, match="already in"):
        msglc.append(out, [FileInfo(runs / "run2.mlc", "run2")])
    plain = runs / "plain.mlc"
    msglc.combine(plain, [FileInfo(runs / "run1.mlc", "run1")])
    with pytest.raises(ValueError, match="keeps the archive's compression"):
        msglc.append(plain, [FileInfo(runs / "run2.mlc", "x")], **ZSTD)
    msglc.append(plain, [FileInfo(out, "c")])  # a compressed input of a plain archive: decompressed
    assert version(plain)[0] == 1
    check(plain, {"run1": RUN1, "c": {**old, "run2": RUN2, "big": BIG}})


def test_append_to_a_streamed_compressed_list(tmp_path, runs):
    out = tmp_path / "s.mlc"
    with msglc.LazyWriter(out, small_obj_optimization_threshold=256, **ZSTD) as w:
        w.write({"i": i, "v": list(range(i))} for i in range(300))  # a 5-byte root header
    msglc.append(out, [FileInfo(runs / "run2.mlc"), FileInfo(None, obj=[1, 2])])
    check(out, [{"i": i, "v": list(range(i))} for i in range(300)] + [RUN2, [1, 2]])


def test_append_to_a_small_compressed_root(tmp_path, runs):
    out = tmp_path / "small.mlc"
    msglc.dump(out, {"a": 1}, **ZSTD)
    msglc.append(out, [FileInfo(runs / "run1.mlc", "r")])
    assert version(out) == (2, 2)
    check(out, {"a": 1, "r": RUN1})


def _fail_at(step, effect, monkeypatch):
    """Run ``effect()`` instead of the ``step``-th write of frames or publication of the file."""
    calls = itertools.count()
    targets = [(FrameWriter, "_emit"), (FrameWriter, "copy_frames"), (os, "replace"), (os, "link")]
    for owner, name in targets:
        real = getattr(owner, name)

        def instead(*args, _real=real, **kwargs):
            if next(calls) == step:
                effect()
            return _real(*args, **kwargs)

        monkeypatch.setattr(owner, name, instead)


def _eio():
    raise OSError(errno.EIO, "Input/output error")


def test_a_failed_append_to_a_compressed_archive_changes_nothing(runs, compressed_target):
    out = compressed_target
    original = out.read_bytes()
    old = {"run1": RUN1, "again": RUN1}
    new = {**old, "run2": RUN2, "big": BIG}
    failures = 0
    for step in itertools.count():
        out.write_bytes(original)
        with pytest.MonkeyPatch.context() as monkeypatch:
            _fail_at(step, _eio, monkeypatch)
            try:
                msglc.append(out, [FileInfo(runs / "run2.mlc", "run2"), FileInfo(None, "big", obj=BIG)])
            except OSError as e:
                assert e.errno == errno.EIO
                failures += 1
            else:
                break
        assert out.read_bytes() == original
        assert sorted(os.listdir(runs)) == ["all.mlc", "run1.mlc", "run2.mlc"]  # no temporary file left
        check(out, old)
    assert failures >= 3
    check(out, new)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="kills a forked child")
def test_a_process_killed_while_appending_to_a_compressed_archive_leaves_it_readable(runs, compressed_target):
    out = compressed_target
    original = out.read_bytes()
    old = {"run1": RUN1, "again": RUN1}
    for k in itertools.count():
        out.write_bytes(original)
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            with pytest.MonkeyPatch.context() as monkeypatch:
                _fail_at(k, lambda: os._exit(9), monkeypatch)
                try:
                    msglc.append(out, [FileInfo(runs / "run2.mlc", "run2"), FileInfo(None, "big", obj=BIG)])
                except BaseException:
                    os._exit(1)
            os._exit(0)
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        assert status in (0, 9)
        if status == 0:
            check(out, {**old, "run2": RUN2, "big": BIG})
            break
        assert out.read_bytes() == original
        check(out, old)
    assert k >= 3


def test_shuffled_frames_keep_their_filter_when_combined(tmp_path):
    """A compressed input whose numbers are stored byte-shuffled: its frames are copied as they
    are, with their filter, so the combined archive reads the same numbers (a dropped filter
    would give other floats, not an error)."""
    rng = random.Random(3)
    matrix = [[rng.random() for _ in range(300)] for _ in range(100)]
    part = tmp_path / "m.mlc"
    msglc.dump(part, {"m": matrix}, small_obj_optimization_threshold=8192, **ZSTD)
    with LazyReader(part) as r:
        assert SHUFFLE in {f.filter for f in r.frames()}
    section = frames_bytes(part)
    out = tmp_path / "out.mlc"
    msglc.combine(out, [FileInfo(part, "a"), FileInfo(None, "b", obj=[1, 2])], **ZSTD)
    assert section in out.read_bytes()  # copied, not recompressed
    with LazyReader(out) as r:
        r.verify()
        assert r["a/m/57/123"] == matrix[57][123] and r["a"].to_obj() == {"m": matrix}
    msglc.append(out, [FileInfo(part, "c")])
    with LazyReader(out) as r:
        r.verify()
        assert r["c/m/99"] == matrix[99]


def test_copied_frames_keep_their_filters_raw_frames_included(tmp_path):
    """Frames copied by combine (and append) keep their page-table entries: a raw frame
    (filter 2) used to be copied as filter 0, a zstd frame to decompress, so reads of the
    result no longer took its bytes in place."""
    doc = {"blob": random.Random(1).randbytes(200_000), "x": [float(i) for i in range(20_000)]}
    msglc.dump(tmp_path / "in.mlc", doc, **ZSTD)
    msglc.combine(tmp_path / "c.mlc", [FileInfo(tmp_path / "in.mlc", "a")])
    with LazyReader(tmp_path / "in.mlc") as r, LazyReader(tmp_path / "c.mlc") as c:
        data = 16 + r.info().data_size
        copied = {(f.plain_size, f.size): (f.filter, f.parameter) for f in r.frames() if f.plain_offset < data}
        assert {2, SHUFFLE} <= {code for code, _ in copied.values()}  # raw and shuffled frames to copy
        found = {(f.plain_size, f.size): (f.filter, f.parameter) for f in c.frames()}
        assert {k: found.get(k) for k in copied} == copied
        assert c["a/blob"] == doc["blob"]
