"""Streaming writes: generators become lists and Pairs dicts, consumed once, memory bounded,
nothing left behind on failure."""

import datetime
import io
import tracemalloc

import msgpack
import numpy as np
import pytest

import msglc
from msglc import LazyWriter, Pairs


def records(n):
    return ({"id": i, "x": i * 0.5, "tags": ["t"] * (i % 3)} for i in range(n))


def expected_records(n):
    return [{"id": i, "x": i * 0.5, "tags": ["t"] * (i % 3)} for i in range(n)]


def streamed_doc():
    return {
        "meta": {"name": "run"},
        "records": records(20000),
        "empty": iter(()),
        "nested": [(j for j in range(3)), range(5000), {"inner": map(str, range(700))}],
        "pairs": Pairs((f"k{i}", list(range(i % 40))) for i in range(3000)),
        "small_pairs": Pairs(iter([("a", 1), ("b", (x for x in "xy"))])),
        "items": {"p": 1, "q": [2]}.items(),
        "arrays": (np.full(i + 1, i, dtype="<i4") for i in range(300)),
    }


def plain_doc():
    return {
        "meta": {"name": "run"},
        "records": expected_records(20000),
        "empty": [],
        "nested": [[0, 1, 2], list(range(5000)), {"inner": [str(i) for i in range(700)]}],
        "pairs": {f"k{i}": list(range(i % 40)) for i in range(3000)},
        "small_pairs": {"a": 1, "b": ["x", "y"]},
        "items": {"p": 1, "q": [2]},
    }


@pytest.mark.parametrize("threshold", [64, 8192])
def test_streamed_values_read_back_as_lists_and_dicts(tmp_path, threshold):
    path = tmp_path / "s.mlc"
    with LazyWriter(path, small_obj_optimization_threshold=threshold) as writer:
        writer.write(streamed_doc())
    expected = plain_doc()
    with msglc.LazyReader(path) as r:
        r.verify()
        got = r.to_obj()
        arrays = got.pop("arrays")
        assert got == expected
        assert all(a.tolist() == [i] * (i + 1) for i, a in enumerate(arrays))
        assert r["records/19999/x"] == 19999 * 0.5 and r["pairs/k2999"] == list(range(2999 % 40)) and r["nested/1/4321"] == 4321
        assert len(r["records"]) == 20000 and len(r["pairs"]) == 3000
        plain = msgpack.unpackb(r.protocol_raw_data())  # still plain msgpack
        assert plain["records"][123] == expected["records"][123] and plain["pairs"]["k5"] == expected["pairs"]["k5"]


def test_dump_and_dumps_take_generators(tmp_path):
    msglc.dump(tmp_path / "d.mlc", {"rows": ([i] * 3 for i in range(1000))})
    assert msglc.LazyReader(tmp_path / "d.mlc").to_obj() == {"rows": [[i] * 3 for i in range(1000)]}
    data = msglc.dumps(i * i for i in range(10))
    assert msglc.LazyReader(data).to_obj() == [i * i for i in range(10)]
    buf = io.BytesIO()
    msglc.dump(buf, {"g": iter([1, 2])})
    assert msglc.LazyReader(buf.getvalue()).to_obj() == {"g": [1, 2]}


def test_memory_is_bounded_by_a_batch_not_the_data(tmp_path):
    tracemalloc.start()
    with LazyWriter(tmp_path / "big.mlc") as writer:
        writer.write({"records": ({"id": i, "x": float(i)} for i in range(300_000))})
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 8 << 20, peak  # the data is ~6 MB; the list in memory would be ~70 MB
    with msglc.LazyReader(tmp_path / "big.mlc") as r:
        assert r["records/299999"] == {"id": 299999, "x": 299999.0}


def failing(n):
    yield from range(n)
    raise RuntimeError("producer failed")


@pytest.mark.parametrize(
    "obj, error",
    [
        ({"a": failing(10000)}, RuntimeError),
        ({"a": ({"when": datetime.date(2026, 1, 1)} if i == 5000 else i for i in range(6000))}, TypeError),
        ({"a": Pairs([("k", 1), ("k", 2)])}, ValueError),
        ({"a": Pairs([((1, 2), 1)])}, TypeError),
        ({"a": [io.StringIO("line")]}, TypeError),  # files are iterators, but not stored as lists
    ],
)
def test_failures_leave_the_target_as_it_was(tmp_path, obj, error):
    target = tmp_path / "t.mlc"
    target.write_bytes(b"old")
    with pytest.raises(error):
        msglc.dump(target, obj)
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["t.mlc"]


def test_writer_misuse_is_refused(tmp_path):
    with pytest.raises(TypeError, match="seekable"):
        LazyWriter(object())
    with pytest.raises(ValueError, match="without write"), LazyWriter(tmp_path / "a.mlc"):
        pass
    assert not (tmp_path / "a.mlc").exists()
    with pytest.raises(ValueError, match="already"), LazyWriter(tmp_path / "a.mlc") as writer:
        writer.write([1])
        writer.write([2])
    with pytest.raises(ValueError, match="context manager"):
        LazyWriter(tmp_path / "a.mlc").write([1])
