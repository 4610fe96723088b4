"""combine(): archives gathered without decoding, as a dict or a list, nested, and refused
inputs that leave the output untouched."""

import io
import pathlib
import subprocess
import sys

import msgpack
import numpy as np
import pytest

import msglc
from msglc import CorruptedError, FileInfo, NotAnArchiveError, TruncatedError, UnsupportedVersionError

RUN1 = {"energy": [float(i) for i in range(3000)], "meta": {"name": "run1", "rows": [[i, i * 2] for i in range(400)]}}
RUN2 = {"energy": [1.5, 2.5], "tags": ["a", "b"]}


@pytest.fixture
def runs(tmp_path):
    msglc.dump(tmp_path / "run1.mlc", RUN1, small_obj_optimization_threshold=256)
    msglc.dump(tmp_path / "run2.mlc", RUN2)  # small: no TOC node
    return tmp_path


def check(path, expected):
    with msglc.LazyReader(path) as r:
        r.verify()
        assert r.to_obj() == expected
        assert msgpack.unpackb(r.protocol_raw_data(), strict_map_key=False) == expected


def test_named_inputs_make_a_dict(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1"), FileInfo(str(runs / "run2.mlc"), "run2")])
    check(out, {"run1": RUN1, "run2": RUN2})
    with msglc.LazyReader(out) as r:
        assert r["run1/energy/2999"] == 2999.0 and r["run1/meta/rows/7/1"] == 14 and r["run2/tags/1"] == "b"
        assert isinstance(r["run1/energy"], msglc.LazyList)


def test_unnamed_inputs_make_a_list(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc"), FileInfo(runs / "run2.mlc"), FileInfo(runs / "run1.mlc")])
    check(out, [RUN1, RUN2, RUN1])
    with msglc.LazyReader(out) as r:
        assert r["2/meta/name"] == "run1" and r[-2]["energy"] == [1.5, 2.5]


def test_objects_readers_bytes_and_files_as_inputs(runs):
    out = runs / "all.mlc"
    with msglc.LazyReader(runs / "run1.mlc") as reader, open(runs / "run2.mlc", "rb") as f:
        msglc.combine(
            out,
            [
                FileInfo(reader, "reader"),
                FileInfo(f, "file"),
                FileInfo((runs / "run2.mlc").read_bytes(), "bytes"),
                FileInfo(io.BytesIO((runs / "run2.mlc").read_bytes()), "bytesio"),
                FileInfo(None, "obj", obj={"a": np.arange(4), "b": list(range(2000))}),
            ],
            small_obj_optimization_threshold=64,
        )
        assert reader["meta/name"] == "run1"  # the caller's reader stays open
    with msglc.LazyReader(out) as r:
        r.verify()
        assert r["reader/energy/5"] == 5.0 and r["file"] == RUN2 and r["bytes/tags"] == ["a", "b"] and r["bytesio"] == RUN2
        assert r["obj/a"].tolist() == [0, 1, 2, 3] and r["obj/b/1999"] == 1999


def test_nesting_three_levels_deep(runs):
    msglc.combine(runs / "day.mlc", [FileInfo(runs / "run1.mlc", "run1"), FileInfo(runs / "run2.mlc", "run2")])
    msglc.combine(
        runs / "week.mlc", [FileInfo(runs / "day.mlc", "mon"), FileInfo(runs / "day.mlc", "tue")], small_obj_optimization_threshold=64
    )
    msglc.combine(runs / "year.mlc", [FileInfo(runs / "week.mlc"), FileInfo(runs / "run2.mlc")])
    day = {"run1": RUN1, "run2": RUN2}
    check(runs / "year.mlc", [{"mon": day, "tue": day}, RUN2])
    with msglc.LazyReader(runs / "year.mlc", cached=False) as r:
        assert r["0/tue/run1/energy/1234"] == 1234.0 and r["0/mon/run1/meta/rows/399/0"] == 399


def test_many_inputs_get_a_hash_indexed_root(tmp_path):
    small = msglc.dumps({"v": list(range(100))}, small_obj_optimization_threshold=64)
    infos = [FileInfo(small, f"part{i}") for i in range(1500)]
    msglc.combine(tmp_path / "many.mlc", infos)
    with msglc.LazyReader(tmp_path / "many.mlc") as r:
        r.verify()
        assert len(r) == 1500 and r["part1234/v/99"] == 99 and "part1500" not in r


def test_bad_name_sets_are_refused_before_writing(runs):
    out = runs / "all.mlc"
    for infos, message in (
        ([FileInfo(runs / "run1.mlc", "a"), FileInfo(runs / "run2.mlc")], "all have a name"),
        ([FileInfo(runs / "run1.mlc", "a"), FileInfo(runs / "run2.mlc", "a")], "'a' is used more than once"),
    ):
        with pytest.raises(ValueError, match=message):
            msglc.combine(out, infos)
        assert not out.exists()
    with pytest.raises(ValueError, match="either"):
        FileInfo(runs / "run1.mlc", "a", obj=1)
    with pytest.raises(TypeError, match="FileInfo"):
        msglc.combine(out, [str(runs / "run1.mlc")])
    with pytest.raises(ValueError, match="mode"):
        msglc.combine(out, [FileInfo(runs / "run1.mlc")], mode="x")


@pytest.mark.parametrize(
    "damage, error",
    [
        (lambda b: b"not an archive at all, just text" * 4, NotAnArchiveError),
        (lambda b: b[:-10], TruncatedError),
        (lambda b: b[:8] + b"\x07" + b[9:], UnsupportedVersionError),
        (lambda b: b[:100] + bytes([b[100] ^ 1]) + b[101:], CorruptedError),  # a data byte: found by the checksum while copying
    ],
)
def test_bad_inputs_leave_the_output_untouched(runs, damage, error):
    bad = runs / "bad.mlc"
    bad.write_bytes(damage((runs / "run1.mlc").read_bytes()))
    out = runs / "all.mlc"
    out.write_bytes(b"previous contents")
    with pytest.raises(error):
        msglc.combine(out, [FileInfo(runs / "run2.mlc", "good"), FileInfo(bad, "bad")])
    assert out.read_bytes() == b"previous contents"
    assert sorted(p.name for p in runs.iterdir()) == ["all.mlc", "bad.mlc", "run1.mlc", "run2.mlc"]


def test_closed_reader_is_refused(runs):
    reader = msglc.LazyReader(runs / "run1.mlc")
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        msglc.combine(runs / "all.mlc", [FileInfo(reader, "r")])


def test_raw_data_of_a_part_is_the_archive_that_was_combined(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1"), FileInfo(runs / "run2.mlc", "run2")], small_obj_optimization_threshold=256)
    with msglc.LazyReader(out) as r:
        assert r["run1"].raw_data() == (runs / "run1.mlc").read_bytes()  # same threshold: the same bytes
        part = msglc.LazyReader(r["run1/meta/rows"].raw_data())
        part.verify()
        assert part.to_obj() == RUN1["meta"]["rows"]
        assert msgpack.unpackb(r["run1/energy"].protocol_raw_data()) == RUN1["energy"]


@pytest.mark.parametrize("threshold", [64, 1024, 8192])
def test_repacking_copies_bytes_when_the_threshold_is_the_same(tmp_path, threshold):
    obj = {
        "a": {"b": [list(range(i % 40)) for i in range(3000)], "d": {f"k{i}": i for i in range(3000)}},
        "arr": np.arange(10000.0),
        "m": [[1.0] * 100] * 100,
    }
    data = msglc.dumps(obj, small_obj_optimization_threshold=threshold)
    with msglc.LazyReader(data) as r:
        msglc.dump(tmp_path / "whole.mlc", r, small_obj_optimization_threshold=threshold)
        assert (tmp_path / "whole.mlc").read_bytes() == data
        for path in ("a", "a/b", "a/d", "arr", "m", "m/3"):
            part = r[path]
            expected = msglc.dumps(msglc.to_obj(part), small_obj_optimization_threshold=threshold)
            msglc.dump(tmp_path / "part.mlc", part, small_obj_optimization_threshold=threshold)
            assert (tmp_path / "part.mlc").read_bytes() == expected, path
            buf = io.BytesIO()
            msglc.dump(buf, part, small_obj_optimization_threshold=threshold)
            assert buf.getvalue() == expected
        other = 4096 if threshold != 4096 else 512
        msglc.dump(tmp_path / "other.mlc", r["a"], small_obj_optimization_threshold=other)  # decoded and written anew
        assert (tmp_path / "other.mlc").read_bytes() == msglc.dumps(obj["a"], small_obj_optimization_threshold=other)


def test_append_adds_entries_as_combine_would_have(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1")])
    msglc.append(out, [FileInfo(runs / "run2.mlc", "run2")])
    msglc.combine(out, FileInfo(None, "obj", obj={"x": list(range(5000))}), mode="a")
    check(out, {"run1": RUN1, "run2": RUN2, "obj": {"x": list(range(5000))}})
    lst = runs / "list.mlc"
    msglc.combine(lst, [FileInfo(runs / "run1.mlc")])
    for _ in range(3):
        msglc.append(lst, [FileInfo(runs / "run2.mlc"), FileInfo(runs / "run1.mlc")])
    check(lst, [RUN1] + [RUN2, RUN1] * 3)
    with msglc.LazyReader(lst, cached=False) as r:
        assert r["6/energy/2999"] == 2999.0


def test_append_grows_a_dict_past_the_inline_limit(tmp_path):
    small = msglc.dumps({"v": 1})
    out = tmp_path / "many.mlc"
    msglc.combine(out, [FileInfo(small, f"k{i}") for i in range(1000)])
    msglc.append(out, [FileInfo(small, f"x{i}") for i in range(100)])  # now hash-indexed
    msglc.append(out, [FileInfo(small, f"y{i}") for i in range(100)] + [FileInfo(None, "big", obj=list(range(3000)))])
    with msglc.LazyReader(out) as r:
        r.verify()
        assert len(r) == 1201 and r["k999"] == r["x0"] == r["y99"] == {"v": 1} and r["big/2999"] == 2999
        assert list(r)[:2] == ["k0", "k1"] and list(r)[-1] == "big"


def test_append_refusals_change_nothing(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1")])
    before = out.read_bytes()
    with pytest.raises(ValueError, match="already in"):
        msglc.append(out, [FileInfo(runs / "run2.mlc", "run1")])
    with pytest.raises(ValueError, match="named"):
        msglc.append(out, [FileInfo(runs / "run2.mlc")])
    bad = runs / "bad.mlc"
    bad.write_bytes((runs / "run1.mlc").read_bytes()[:-3])
    with pytest.raises(TruncatedError):
        msglc.append(out, [FileInfo(bad, "bad")])
    assert out.read_bytes() == before
    msglc.dump(runs / "scalar.mlc", "just a string")
    with pytest.raises(ValueError, match="dict or a list"):
        msglc.append(runs / "scalar.mlc", [FileInfo(runs / "run2.mlc")])


def test_a_crash_midway_through_append_leaves_the_old_archive_readable(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1")])
    before = out.read_bytes()
    script = f"""
import os, sys, msglc
c = sys.modules["msglc.combine"]
copy = c._copy
def dying(*args, **kwargs):
    copy(*args, **kwargs)
    os._exit(3)  # the process dies after the first copied piece
c._copy = dying
msglc.append({str(out)!r}, [msglc.FileInfo({str(runs / "run2.mlc")!r}, "run2")])
"""
    run = subprocess.run([sys.executable, "-c", script], cwd=pathlib.Path(msglc.__file__).parent.parent)
    assert run.returncode == 3
    assert out.read_bytes() == before
    check(out, {"run1": RUN1})


def test_append_to_small_roots(tmp_path):
    p = tmp_path / "s.mlc"
    msglc.dump(p, {1: "a"})
    msglc.append(p, [FileInfo(None, "x", obj=1)])
    assert msglc.LazyReader(p).to_obj() == {1: "a", "x": 1}
    msglc.dump(p, {})
    msglc.append(p, [])
    assert msglc.LazyReader(p).to_obj() == {}
    msglc.append(tmp_path / "new.mlc", [FileInfo(None, "a", obj=1)])  # a missing archive is created
    assert msglc.LazyReader(tmp_path / "new.mlc").to_obj() == {"a": 1}
    msglc.dump(p, [1.5, 2.5, 3.5])
    damaged = bytearray(p.read_bytes())
    damaged[damaged.index(msgpack.packb(2.5)) + 5] ^= 1
    p.write_bytes(damaged)
    with pytest.raises(CorruptedError, match="nothing was changed"):
        msglc.append(p, [FileInfo(None, obj=4.5)])
    assert p.read_bytes() == damaged


def test_repeated_appends_do_not_grow_the_toc(tmp_path):
    small = msglc.dumps({"v": 1})
    p = tmp_path / "h.mlc"
    msglc.combine(p, [FileInfo(small, f"k{i}") for i in range(2000)])
    for i in range(20):
        msglc.append(p, [FileInfo(small, f"x{i}")])
    fresh = msglc.dumps(msglc.LazyReader(p).to_obj())
    assert p.stat().st_size < 1.3 * len(fresh)
    with msglc.LazyReader(p) as r:
        r.verify()


def test_appending_to_a_matrix_keeps_rows_lazy(tmp_path):
    p = tmp_path / "m.mlc"
    msglc.dump(p, [[float(j) for j in range(2000)] for _ in range(20)], small_obj_optimization_threshold=1024)
    msglc.append(p, [FileInfo(None, obj=[1.0, 2.0])])
    stats = msglc.LazyStats()
    with msglc.LazyReader(p, counter=stats, cached=False) as r:
        r.verify()
        stats.clear()
        assert r["3/7"] == 7.0 and r["20"] == [1.0, 2.0]
        assert stats.bytes < 2000, stats


def test_raw_data_when_the_node_cache_is_evicted(monkeypatch):
    monkeypatch.setattr("msglc.reader._MAX_NODE_CACHE", 8)
    data = msglc.dumps({"a": [{"a": "x" * 70, "i": i} for i in range(200)]}, small_obj_optimization_threshold=64)
    with msglc.LazyReader(data) as r:
        part = msglc.LazyReader(r["a"].raw_data())
        part.verify()
        assert part[199]["i"] == 199


def test_a_damaged_root_node_leaks_no_descriptor(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1")])
    data = bytearray(out.read_bytes())
    data[-TRAILER - 10] ^= 0xFF  # inside the root node (just before the trailer)
    out.write_bytes(data)
    before = len(list(pathlib.Path("/proc/self/fd").iterdir()))
    for _ in range(3):
        with pytest.raises(msglc.MsglcError):
            msglc.append(out, [FileInfo(runs / "run2.mlc", "run2")])
    assert len(list(pathlib.Path("/proc/self/fd").iterdir())) == before


TRAILER = 64
