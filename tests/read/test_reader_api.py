"""The reader's public behaviour: paths, lazy containers, sources, stats, errors on misuse."""

import io
import threading
from typing import Any

import pytest

import msglc
from msglc import LazyDict, LazyList, LazyReader
from msglc.read.stats import LazyStats

SMALL: dict[str, Any] = {"small_obj_optimization_threshold": 64}  # dump's **options
RUNS = [{"id": i, "energy": [float(i + k) for k in range(20)], "tags": ["a", "b"] * i} for i in range(30)]
DOC = {
    "runs": RUNS,
    "meta": {"name": "sim", "n": 30, "blob": b"\x00\x01" * 100},
    7: "int key",
    "7": "str key",
}


@pytest.fixture(params=["path", "bytes", "file", "bytesio"])
def reader(request, tmp_path):
    path = tmp_path / "doc.mlc"
    msglc.dump(path, DOC, **SMALL)
    if request.param == "path":
        r = LazyReader(path)
    elif request.param == "bytes":
        r = LazyReader(path.read_bytes())
    elif request.param == "file":
        f = open(path, "rb")  # noqa: SIM115 - closed by the finalizer
        request.addfinalizer(f.close)
        r = LazyReader(f)
    else:
        r = LazyReader(io.BytesIO(path.read_bytes()))
    yield r
    r.close()


def test_paths(reader):
    assert reader["runs/3/energy/2"] == 5.0
    assert reader[["runs", 3, "energy", -1]] == 22.0
    assert reader.read("runs/-1/id") == 29
    assert reader.visit("meta/name") == "sim"
    assert reader.read("/meta/n/") == 30
    assert reader.read("runs/1:4/id") == [1, 2, 3]
    assert reader.read("runs/:10:/id") == [0, 10, 20]  # start:step:stop
    assert reader.read("runs/-2:/id") == [28, 29]
    assert reader["runs/5/energy/2:5"] == [7.0, 8.0, 9.0]
    assert reader[7] == "int key" and reader["7"] == "str key"
    assert reader[[7]] == "int key"
    assert msglc.to_obj(reader.read()) == DOC


def test_lazy_containers(reader):
    root = reader.read()
    assert isinstance(root, LazyDict)
    runs = reader["runs"]
    assert isinstance(runs, LazyList)
    assert len(runs) == 30 and len(reader) == 4
    assert list(reader.keys()) == ["runs", "meta", 7, "7"]
    assert "meta" in reader and "nope" not in reader and 3.5 not in reader
    assert reader.get("nope", 1) == 1
    assert runs[-1]["id"] == 29
    assert [r["id"] for r in runs[2:5]] == [2, 3, 4]
    assert runs == RUNS and runs != RUNS[:-1] and runs != "x"
    assert root == DOC and root != {**DOC, "x": 1}
    assert {"x": 1} != root
    assert runs.index(RUNS[4]) == 4
    assert RUNS[6] in runs
    assert dict(reader.items())["meta"]["blob"] == b"\x00\x01" * 100
    assert runs.to_obj() == RUNS and msglc.to_obj(runs) == RUNS
    assert "LazyList" in repr(runs) and "LazyDict" in repr(root)
    with pytest.raises(TypeError):
        hash(runs)


def test_misuse_errors(reader):
    with pytest.raises(KeyError):
        reader["nope"]
    with pytest.raises(KeyError):
        reader["runs/0/nope"]
    with pytest.raises(IndexError):
        reader["runs/30"]
    with pytest.raises(IndexError):
        reader["runs"][-31]
    with pytest.raises(TypeError):
        reader["runs/x"]
    with pytest.raises(TypeError):
        reader["runs"][1.5]
    with pytest.raises(TypeError):
        reader.read()[1.5]
    with pytest.raises(TypeError):
        reader["meta/name/x"]
    with pytest.raises(TypeError):
        reader.read(3.5)


@pytest.mark.parametrize("threshold", [0, 64, 8192])
def test_lazy_dicts_answer_keys_of_other_types_as_a_dict_does(threshold):
    """Whatever node a dict gets (at 8192 this one is read whole, a plain dict): ``get`` of a
    key no archive stores gives the default, ``in`` and ``in items()`` say False; indexing by
    one is a TypeError that is a KeyError too. ``read_items`` takes NumPy ints, as indexing."""
    np = pytest.importorskip("numpy")
    doc = {"t": {f"k{i}": i for i in range(50)}, "l": list(range(5000))}
    with LazyReader(msglc.dumps(doc, small_obj_optimization_threshold=threshold)) as r:
        t = r["t"]
        assert t.get(1.5, "default") == "default" and t.get(None) is None and t.get("k7") == 7
        assert (1.5, 0) not in t.items() and 1.5 not in t and ("k7", 7) in t.items()
        if isinstance(t, LazyDict):
            with pytest.raises(TypeError, match="str or int, not float"):
                t[1.5]
            with pytest.raises(KeyError):
                t[None]
        lazy = r["l"]
        assert lazy[np.int64(3)] == 3
        if isinstance(lazy, LazyList):
            assert lazy.read_items(np.int64(1), np.int32(4)) == [1, 2, 3]
            with pytest.raises(IndexError, match="not ints"):
                lazy.read_items(1.0, 3)  # type: ignore[arg-type]


def test_use_after_close(tmp_path):
    path = tmp_path / "a.mlc"
    msglc.dump(path, list(range(1000)), **SMALL)
    with LazyReader(path) as r:
        lazy = r.read()
    with pytest.raises(ValueError):
        lazy[500]
    with pytest.raises(ValueError):
        r[1]
    r.close()  # closing twice is fine


def test_to_obj_survives_close(tmp_path):
    path = tmp_path / "a.mlc"
    msglc.dump(path, DOC, **SMALL)
    with LazyReader(path) as r:
        obj = r.to_obj()
        part = msglc.to_obj(r["runs/1:3"])
    assert obj == DOC and part == RUNS[1:3]


def test_stats_count_bytes(tmp_path):
    path = tmp_path / "m.mlc"
    msglc.dump(path, [[float(i * j) for j in range(100)] for i in range(100)], **SMALL)
    stats = LazyStats()
    with LazyReader(path, counter=stats, cached=False) as r:
        opened = stats()
        assert r[40][50] == 2000.0
        assert stats() - opened < 200  # trailer-sized reads, not the 90 KB matrix
        assert stats.calls >= 3 and "requests" in str(stats)
    stats.clear()
    assert stats() == 0 and stats.calls == 0


def test_cached_flag(tmp_path):
    path = tmp_path / "c.mlc"
    msglc.dump(path, list(range(5000)), **SMALL)
    for cached, second_read_costs in ((True, False), (False, True)):
        stats = LazyStats()
        with LazyReader(path, cached=cached, counter=stats) as r:
            r[2500]
            before = stats()
            r[2500]
            assert (stats() > before) == second_read_costs


def test_threads_share_one_reader(tmp_path):
    rows = [[float(i * 1000 + j) for j in range(50)] for i in range(200)]
    strings = [str(i) * (i % 7) for i in range(5000)]
    doc = {"m": rows, "d": {f"k{i}": i for i in range(3000)}, "l": strings}
    path = tmp_path / "t.mlc"
    msglc.dump(path, doc, small_obj_optimization_threshold=256)
    errors = []
    with open(path, "rb") as f:
        readers = [LazyReader(path, cached=False), LazyReader(f), LazyReader(io.BytesIO(path.read_bytes()))]

        def work(r, seed):
            try:
                for k in range(400):
                    i = (seed * 7919 + k * 104729) % 200
                    assert r["m"][i][k % 50] == rows[i][k % 50]
                    assert r["d"][f"k{(i * 13) % 3000}"] == (i * 13) % 3000
                    assert r["l"][i * 20] == strings[i * 20]
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        for r in readers:
            threads = [threading.Thread(target=work, args=(r, s)) for s in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            r.close()
    assert not errors, errors[:3]


def test_bad_sources():
    import os

    read_end, write_end = os.pipe()
    with open(read_end, "rb") as pipe, pytest.raises(TypeError, match="seekable"):
        LazyReader(pipe)
    os.close(write_end)
    with pytest.raises(TypeError):
        LazyReader(12345)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LazyReader(io.StringIO("text"))  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        LazyReader("/nonexistent/file.mlc")


def test_inspection_api_describes_layout_and_nodes(tmp_path):
    """info() and nodes() read the TOC only; a node that several parents share (append makes
    the rows of a matrix share one) comes once, and location() says where a part is stored."""
    path = tmp_path / "m.mlc"
    msglc.dump(path, [[float(i)] * 1200 for i in range(10)], small_obj_optimization_threshold=1024)
    msglc.append(path, [msglc.FileInfo(None, obj=[0.5] * 1200)], small_obj_optimization_threshold=1024)
    with LazyReader(path) as r:
        info = r.info()
        assert info.version == (1, 5) and info.data_offset == 16 and info.threshold == 1024
        end = int.from_bytes(path.read_bytes()[10:16], "little")  # the archive's end (slack after it)
        assert info.file_size == end <= path.stat().st_size and info.root is not None and info.root.kind == "list"
        nodes = list(r.nodes())
        assert [(depth, label) for depth, label, _ in nodes] == [(0, "")] + [(1, str(i)) for i in range(11)]
        assert [node.kind for _, _, node in nodes] == ["list"] + ["fixed-stride list"] * 11
        assert len({node.position for _, _, node in nodes}) == 3  # the ten old rows share one node
        assert list(r.nodes(max_depth=0)) == nodes[:1]
        row = r[3]
        where = row.location()
        assert where.size == len(row.protocol_raw_data()) and r.read_many([3])[0] == row
        assert bytes(r.raw_data()[where.offset : where.offset + where.size]) == row.protocol_raw_data()
    with LazyReader(msglc.dumps({"small": 1})) as r:
        assert r.info().root is None and list(r.nodes()) == []


def test_inspection_after_close_is_refused():
    r = LazyReader(msglc.dumps({"a": list(range(1000))}, small_obj_optimization_threshold=64))
    part = r["a"]
    r.close()
    for call in (
        r.info,
        lambda: list(r.nodes()),
        part.location,
        part.raw_data,
        lambda: list(r.iter_protocol_raw_data()),
    ):
        with pytest.raises(ValueError, match="closed"):
            call()


def test_a_damaged_row_is_not_copied_into_a_new_archive():
    """A row of a fixed-stride list has no node of its own; raw_data() (and dump of the row)
    decode it once, so damage in it is reported rather than copied under a fresh checksum."""
    data = bytearray(msglc.dumps([[float(i)] * 100 for i in range(50)], small_obj_optimization_threshold=1024))
    with LazyReader(bytes(data)) as r:
        where = r[3].location()
    data[where.offset + 3 + 9 * 7] = 0xC1  # never used in msgpack
    with LazyReader(bytes(data)) as r:
        with pytest.raises(msglc.CorruptedError, match="not valid msgpack"):
            r[3].raw_data()
        assert msglc.LazyReader(r[4].raw_data()).to_obj() == [4.0] * 100


def test_an_empty_path_is_the_root_even_where_a_key_is_empty():
    """``reader[""]`` is the root (no path), as ``reader.read()``; the key "" is ``[""]``."""
    doc = {"": "empty", **{f"k{i}": i for i in range(2000)}}
    with LazyReader(msglc.dumps(doc)) as r:
        assert r[""] == doc and r[[""]] == "empty" and r["k7"] == 7 and r[["k7"]] == 7


def test_lazy_values_go_to_json_through_to_obj_and_name_public_classes(tmp_path):
    """Whether a value comes back lazy depends on its size: json.dumps with
    default=msglc.to_obj writes either the same, and the lazy classes have public names (they
    appear in json's error and in type())."""
    import json

    doc = {
        "runs": [{"e": [1.5] * 20, "m": {"ok": True}} for _ in range(300)],
        "matrix": [[0.25] * 100 for _ in range(100)],
        "table": {f"k{i}": i for i in range(2000)},
        "small": {"a": [1, 2]},
    }
    path = tmp_path / "j.mlc"
    msglc.dump(path, doc)
    with LazyReader(path) as r:
        assert json.loads(json.dumps(r.read(), default=msglc.to_obj)) == doc
        for key in ("runs", "matrix", "table"):
            part = r[key]
            assert isinstance(part, (msglc.LazyList, msglc.LazyDict))
            assert not type(part).__name__.startswith("_") and not type(part).__qualname__.startswith("_")
            with pytest.raises(TypeError, match=f"Object of type {type(part).__name__} is not JSON"):
                json.dumps(part)
            assert json.loads(json.dumps(part, default=msglc.to_obj)) == doc[key]
