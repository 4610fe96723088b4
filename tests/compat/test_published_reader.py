"""The published msglc's reading names: ``LazyStats`` ``+=`` and ``bytes_per_call()``,
``reader == x`` by value, ``unwrap()``, ``async_visit``, the ``msglc.reader`` and
``msglc.writer`` import paths, and its codec/back-end arguments refused but for the defaults."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import msgpack
import pytest

import msglc

BIG = {"runs": [{"id": i, "energy": [float(i + j) for j in range(40)]} for i in range(100)], "name": "big"}
LIST = [{"k": i, "v": "x" * (i % 7)} for i in range(500)]
SMALL = {"a": 1, "b": [1, 2]}
SMALL_T: dict[str, Any] = {"small_obj_optimization_threshold": 256}  # writer options


# -- LazyStats --


def test_stats_add_bytes_and_one_call():
    stats = msglc.LazyStats()
    stats += 100
    stats += 50
    assert (stats(), stats.requests, stats.calls, stats.bytes) == (150, 2, 2, 150)
    assert stats.bytes_per_call() == 75.0
    stats.clear()
    assert (stats(), stats.requests) == (0, 0)


def test_stats_bytes_per_call_before_any_read():
    with pytest.raises(ZeroDivisionError):
        msglc.LazyStats().bytes_per_call()


@pytest.mark.parametrize(("bad", "error"), [(1.5, TypeError), ("3", TypeError), (True, TypeError), (-1, ValueError)])
def test_stats_add_only_a_number_of_bytes(bad, error):
    stats = msglc.LazyStats()
    with pytest.raises(error):
        stats += bad
    assert (stats(), stats.requests) == (0, 0)


def test_stats_counted_by_a_reader_and_by_hand():
    data = msglc.dumps(BIG, **SMALL_T)
    stats = msglc.LazyStats()
    with msglc.LazyReader(io.BytesIO(data), counter=stats) as r:
        assert r["runs/42/energy/3"] == 45.0
    read, calls = stats(), stats.requests
    assert calls >= 1 and 0 < read < len(data)
    assert stats.bytes_per_call() == read / calls
    stats += 10
    assert (stats(), stats.requests) == (read + 10, calls + 1)


# -- equality --


@pytest.mark.parametrize("obj", [BIG, LIST, SMALL, [], 3.5, None, "text"], ids=repr)
def test_reader_equals_its_object(obj):
    with msglc.LazyReader(msglc.dumps(obj, **SMALL_T)) as r:
        assert r == obj
        assert obj == r
        assert not (r != obj)  # noqa: SIM202 (!= itself is under test)
        assert r != {"other": 1}
        assert r != [obj]


def test_reader_compares_with_a_changed_object():
    changed = {**BIG, "runs": [*BIG["runs"][:-1], {"id": 99, "energy": [0.0] * 40}]}
    with msglc.LazyReader(msglc.dumps(BIG, **SMALL_T)) as r:
        assert r != changed
        assert r != {**BIG, "extra": 1}


def test_tuples_and_sets_compare_as_the_lists_they_are_stored_as():
    with msglc.LazyReader(msglc.dumps({"t": (1, 2), "s": {3}})) as r:
        assert r == {"t": [1, 2], "s": [3]}


def test_readers_compare_with_each_other():
    one = msglc.LazyReader(msglc.dumps(BIG, **SMALL_T))
    same_other_threshold = msglc.LazyReader(msglc.dumps(BIG))
    different = msglc.LazyReader(msglc.dumps(LIST, **SMALL_T))
    assert one == same_other_threshold
    assert one != different
    assert one["runs"] != same_other_threshold  # a lazy view against a reader: its root
    assert one["runs"] == msglc.LazyReader(msglc.dumps(BIG["runs"]))


def test_a_combined_member_equals_its_source(tmp_path):
    msglc.dump(tmp_path / "big.mlc", BIG, **SMALL_T)
    msglc.dump(tmp_path / "list.mlc", LIST)
    msglc.combine(tmp_path / "c.mlc", [msglc.FileInfo(tmp_path / "big.mlc"), msglc.FileInfo(tmp_path / "list.mlc")])
    with (
        msglc.LazyReader(tmp_path / "c.mlc") as r,
        msglc.LazyReader(tmp_path / "big.mlc") as big,
        msglc.LazyReader(tmp_path / "list.mlc") as lst,
    ):
        assert r[0] == big and big == r[0]
        assert r[1] == lst
        assert r[0] != lst


@pytest.mark.parametrize("name", ["doc-t64", "doc-t8192", "combined-dict", "list-root-t64", "scalar-str"])
def test_archives_of_the_published_package_compare_and_unwrap(name):
    legacy = Path(__file__).parent.parent / "golden" / "legacy"
    expected = msgpack.unpackb((legacy / f"{name}.expected.msgpack").read_bytes(), strict_map_key=False)
    with msglc.LazyReader(legacy / f"{name}.msg") as r:
        assert r == expected
        assert r.unwrap() == expected
        assert r != [expected]


def test_numpy_roots_compare_whole():
    np = pytest.importorskip("numpy")
    arr = np.arange(5000.0)
    with msglc.LazyReader(msglc.dumps(arr)) as r:
        assert r == arr
        assert r != arr + 1
        assert r == msglc.LazyReader(msglc.dumps(arr))


def test_readers_are_unhashable_as_lazy_views_are():
    with msglc.LazyReader(msglc.dumps(SMALL)) as r, pytest.raises(TypeError):
        hash(r)


# -- unwrap, async_visit --


def test_unwrap_gives_the_root():
    with msglc.LazyReader(msglc.dumps(BIG, **SMALL_T)) as r:
        root = r.unwrap()
        assert isinstance(root, msglc.LazyDict)
        assert root == BIG
        assert root.unwrap() is root
        assert r["runs"].unwrap() is r["runs"]
    with msglc.LazyReader(msglc.dumps(SMALL)) as r:
        assert type(r.unwrap()) is dict and r.unwrap() == SMALL


@pytest.mark.asyncio
async def test_async_visit_reads_as_async_read():
    with msglc.LazyReader(msglc.dumps(BIG, **SMALL_T)) as r:
        assert await r.async_visit("runs/3/energy/2") == 5.0
        assert await r.async_visit("runs/1:3/id") == [1, 2]
        assert await r.async_visit("name") == await r.async_read("name") == "big"
        assert msglc.to_obj(await r.async_visit()) == BIG


# -- import paths --


def test_published_import_paths():
    from msglc.reader import LazyDict, LazyList, LazyReader, LazyStats, async_to_obj, to_obj
    from msglc.writer import LazyWriter

    assert (LazyReader, LazyStats, async_to_obj, to_obj) == (
        msglc.LazyReader,
        msglc.LazyStats,
        msglc.async_to_obj,
        msglc.to_obj,
    )
    assert (LazyDict, LazyList, LazyWriter) == (msglc.LazyDict, msglc.LazyList, msglc.LazyWriter)


@pytest.mark.asyncio
async def test_async_to_obj_from_the_published_path():
    from msglc.reader import LazyReader, async_to_obj

    with LazyReader(msglc.dumps(BIG, **SMALL_T)) as r:
        assert await async_to_obj(r["runs"]) == BIG["runs"]
        assert await async_to_obj(5) == 5


# -- codec plug-ins and the Rust back-end --


class Codec:
    """Stands for a codec of the published package (msglc.codec does not exist here)."""


REFUSED = [("packer", Codec), ("packer", Codec()), ("packer", "cbor"), ("backend", "rust"), ("backend", 1)]


@pytest.mark.parametrize(("name", "value"), REFUSED)
def test_writers_refuse_codecs_and_the_rust_backend(tmp_path, name, value):
    arg = {name: value}
    source = tmp_path / "in.mlc"
    msglc.dump(source, SMALL)
    calls = [
        lambda: msglc.dump(tmp_path / "out.mlc", BIG, **arg),
        lambda: msglc.dump(tmp_path / "out.mlc", msglc.LazyReader(source), **arg),
        lambda: msglc.combine(tmp_path / "out.mlc", [msglc.FileInfo(source)], **arg),
        lambda: msglc.append(tmp_path / "out.mlc", [msglc.FileInfo(source)], **arg),
        lambda: msglc.LazyWriter(tmp_path / "out.mlc", **arg),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="Rust|codec plug-ins") as e:
            call()
        assert "not supported" in str(e.value) or "drop backend=" in str(e.value)
    assert not (tmp_path / "out.mlc").exists()
    with pytest.raises(ValueError, match="Rust|codec plug-ins"):
        msglc.dumps(BIG, **arg)


def test_append_refuses_a_codec_and_leaves_the_archive(tmp_path):
    msglc.combine(tmp_path / "c.mlc", [msglc.FileInfo(msglc.dumps(SMALL), "a")])
    before = (tmp_path / "c.mlc").read_bytes()
    with pytest.raises(ValueError, match="codec plug-ins"):
        msglc.append(tmp_path / "c.mlc", [msglc.FileInfo(msglc.dumps(SMALL), "b")], packer=Codec)
    assert (tmp_path / "c.mlc").read_bytes() == before


@pytest.mark.parametrize("unpacker", [Codec, Codec(), "cbor"])
def test_reader_refuses_an_unpacker(unpacker):
    with pytest.raises(ValueError, match="codec plug-ins"):
        msglc.LazyReader(msglc.dumps(SMALL), unpacker=unpacker)


def test_the_published_defaults_are_accepted(tmp_path):
    msglc.dump(tmp_path / "a.mlc", BIG, backend="python", packer=None)
    msglc.dump(tmp_path / "b.mlc", BIG, backend=None)
    assert msglc.dumps(BIG, backend="python") == msglc.dumps(BIG)
    with msglc.LazyWriter(tmp_path / "c.mlc", packer=None) as w:
        w.write(BIG)
    msglc.combine(tmp_path / "d.mlc", [msglc.FileInfo(tmp_path / "a.mlc")], backend="python", packer=None)
    msglc.append(tmp_path / "d.mlc", [msglc.FileInfo(tmp_path / "b.mlc")], backend="python")
    with msglc.LazyReader(tmp_path / "d.mlc", unpacker=None) as r:
        assert r == [BIG, BIG]
    for name in "abc":
        assert msglc.LazyReader(tmp_path / f"{name}.mlc") == BIG
