"""combine(): archives gathered without decoding, as a dict or a list, nested, and refused
inputs that leave the output untouched."""

import io
import zlib

import msgpack
import numpy as np
import pytest
from archives import RUN1, RUN2, check

import msglc
from msglc import CorruptedError, FileInfo, NotAnArchiveError, TruncatedError, UnsupportedVersionError
from msglc.read import archive


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
        assert (
            r["reader/energy/5"] == 5.0 and r["file"] == RUN2 and r["bytes/tags"] == ["a", "b"] and r["bytesio"] == RUN2
        )
        assert r["obj/a"].tolist() == [0, 1, 2, 3] and r["obj/b/1999"] == 1999


def test_nesting_three_levels_deep(runs):
    msglc.combine(runs / "day.mlc", [FileInfo(runs / "run1.mlc", "run1"), FileInfo(runs / "run2.mlc", "run2")])
    msglc.combine(
        runs / "week.mlc",
        [FileInfo(runs / "day.mlc", "mon"), FileInfo(runs / "day.mlc", "tue")],
        small_obj_optimization_threshold=64,
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
        msglc.combine(out, [str(runs / "run1.mlc")])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="mode"):
        msglc.combine(out, [FileInfo(runs / "run1.mlc")], mode="x")


@pytest.mark.parametrize(
    "damage, error",
    [
        (lambda b: b"not an archive at all, just text" * 4, NotAnArchiveError),
        (lambda b: b[:-10], TruncatedError),
        (lambda b: b[:8] + b"\x07" + b[9:], UnsupportedVersionError),
        (
            lambda b: b[:100] + bytes([b[100] ^ 1]) + b[101:],
            CorruptedError,
        ),  # a data byte: found by the checksum while copying
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
    msglc.combine(
        out,
        [FileInfo(runs / "run1.mlc", "run1"), FileInfo(runs / "run2.mlc", "run2")],
        small_obj_optimization_threshold=256,
    )
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


def test_raw_data_when_the_node_cache_is_evicted(monkeypatch):
    monkeypatch.setattr(archive, "MAX_NODE_CACHE", 8)
    data = msglc.dumps({"a": [{"a": "x" * 70, "i": i} for i in range(200)]}, small_obj_optimization_threshold=64)
    with msglc.LazyReader(data) as r:
        part = msglc.LazyReader(r["a"].raw_data())
        part.verify()
        assert part[199]["i"] == 199


def _with_root_node(data: bytes, change) -> bytes:
    """``data`` with its root TOC node's payload changed by ``change`` (CRC recomputed when
    ``change`` keeps the framing valid, else left as it is)."""
    with msglc.LazyReader(data) as r:
        root = r.info().root
    assert root is not None
    out = bytearray(data)
    out[root.position : root.position + root.size] = change(bytes(data[root.position : root.position + root.size]))
    return bytes(out)


def _flip(node: bytes) -> bytes:
    return node[:3] + bytes([node[3] ^ 1]) + node[4:]


def _unknown_type(node: bytes) -> bytes:
    payload = node[:-4]
    assert payload[1] == 4  # [tag 4 (StrideNode), ...]
    payload = payload[:1] + b"\x2a" + payload[2:]  # a node type a newer msglc might write
    return payload + zlib.crc32(payload).to_bytes(4, "little")


@pytest.mark.parametrize(("change", "error"), [(_flip, CorruptedError), (_unknown_type, UnsupportedVersionError)])
def test_inputs_with_a_bad_root_node_are_refused(tmp_path, change, error):
    """Every input's root node is checked before anything is written or changed: a damaged one
    and one of a newer version are refused by combine and by append alike."""
    bad = tmp_path / "bad.mlc"
    bad.write_bytes(_with_root_node(msglc.dumps([[float(i)] * 1200 for i in range(10)]), change))
    with pytest.raises(error):
        msglc.combine(tmp_path / "out.mlc", [FileInfo(bad, "x")])
    assert not (tmp_path / "out.mlc").exists()
    target = tmp_path / "app.mlc"
    msglc.dump(target, {"a": [1] * 5000})
    before = target.read_bytes()
    with pytest.raises(error):
        msglc.append(target, [FileInfo(bad, "x")])
    assert target.read_bytes() == before
