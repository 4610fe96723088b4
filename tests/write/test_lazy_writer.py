"""Streaming writes: generators become lists and Pairs dicts, consumed once, memory bounded,
nothing left behind on failure."""

import contextlib
import datetime
import enum
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
        assert (
            r["records/19999/x"] == 19999 * 0.5
            and r["pairs/k2999"] == list(range(2999 % 40))
            and r["nested/1/4321"] == 4321
        )
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
        LazyWriter(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="without write"), LazyWriter(tmp_path / "a.mlc"):
        pass
    assert not (tmp_path / "a.mlc").exists()
    with pytest.raises(ValueError, match="already"), LazyWriter(tmp_path / "a.mlc") as writer:
        writer.write([1])
        writer.write([2])
    with pytest.raises(ValueError, match="context manager"):
        LazyWriter(tmp_path / "a.mlc").write([1])


def test_batches_are_bounded_by_bytes_too(tmp_path):
    tracemalloc.start()
    with LazyWriter(tmp_path / "a.mlc") as writer:
        writer.write(np.full(65536, i, dtype="<f8") for i in range(100))  # 50 MiB of 512 KiB arrays
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 24 << 20, peak
    with msglc.LazyReader(tmp_path / "a.mlc") as r:
        assert r[99][5] == 99.0 and len(r) == 100


class Color(enum.Enum):
    RED = 1


@pytest.mark.parametrize(
    "obj, where",
    [
        ({"a": ({"when": datetime.date(2026, 1, 1)} if i == 5000 else i for i in range(6000))}, "at a/5000/when"),
        ({"g": iter([1]), "bad": Color.RED}, "at bad"),
        ({"a": Pairs([("k", [1, Color.RED])])}, "at a/k/1"),
        ({"a": [iter([1]), {"x": [Color.RED]}]}, "at a/1/x/0"),
    ],
)
def test_refusals_name_the_path(tmp_path, obj, where):
    with pytest.raises(TypeError, match=where):
        msglc.dump(tmp_path / "a.mlc", obj)


def test_items_holding_generators_share_spans(tmp_path):
    msglc.dump(tmp_path / "a.mlc", [{"x": iter([i])} for i in range(20000)])
    with msglc.LazyReader(tmp_path / "a.mlc") as r:
        r.verify()
        assert r[12345] == {"x": [12345]}
        assert r.info().toc_size < 2000


def test_pairs_must_be_pairs_and_failures_inside_the_block_are_reported(tmp_path):
    with pytest.raises(TypeError, match="pairs"):
        msglc.dumps({"a": Pairs({"ab": 1})})  # type: ignore[dict-item]
    # the caller swallows write()'s error inside the block
    with (
        pytest.raises(ValueError, match="write\\(\\) failed"),
        LazyWriter(tmp_path / "a.mlc") as writer,
        contextlib.suppress(TypeError),
    ):
        writer.write([Color.RED])
    assert not (tmp_path / "a.mlc").exists()
    with open(tmp_path / "b.mlc", "ab") as f, pytest.raises(TypeError, match="appending"):
        LazyWriter(f)
