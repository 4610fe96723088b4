"""Readers and lazy parts pickle as their source, options and place, and reopen in another
process (Dask workers, multiprocessing) once per process; what cannot travel says so."""

from __future__ import annotations

import concurrent.futures
import copy
import io
import multiprocessing
import os
import pathlib
import pickle
from typing import TypedDict

import numpy as np
import pytest

import msglc
from msglc import ArchiveChangedError, LazyReader, LazyStats
from msglc.read.part import LazyPart, archive_of


class Doc(TypedDict):
    runs: list[dict[str, object]]
    m: list[list[float]]
    a: np.ndarray
    d: dict[str, int]
    s: dict[str, list[int]]


DOC: Doc = {
    "runs": [{"score": i, "t": "x" * (i % 7)} for i in range(3000)],
    "m": [[float(i * 10 + j) for j in range(50)] for i in range(40)],
    "a": np.arange(60000.0).reshape(300, 200),
    "d": {f"k{i}": i for i in range(3000)},
    "s": {f"x{i}": [i] * 30 for i in range(50)},
}

PATHS = ["runs", "m", "m/3", "a", "d", "s", "s/x3"]


def _plain(x):
    x = msglc.to_obj(x)
    return x.tolist() if isinstance(x, np.ndarray) else x


@pytest.fixture()
def archive(tmp_path):
    path = tmp_path / "doc.mlc"
    msglc.dump(path, DOC, small_obj_optimization_threshold=256)
    return path


def _parts(r):
    return [r[p] for p in PATHS]


@pytest.mark.parametrize("cached", [False, True])
def test_every_kind_of_part_round_trips(archive, cached):
    with LazyReader(archive, cached=cached) as r:
        parts = _parts(r)
        kinds = {type(p).__name__ for p in parts}
        assert {"LazyArray", "LazyStrideList", "LazyBlockList", "LazyHashDict", "LazyInlineDict"} <= kinds
        for path, part in zip(PATHS, parts, strict=True):
            back = pickle.loads(pickle.dumps(part))
            assert type(back) is type(part) and _plain(back) == _plain(part), path
            assert len(pickle.dumps(part)) < 1000  # the place, not the data
        again = pickle.loads(pickle.dumps(r))
        assert again["runs/7/score"] == 7 and again["m/3/4"] == 34.0 and again == r


def test_unpickled_parts_share_one_archive_per_process(archive):
    with LazyReader(archive) as r:
        blobs = [pickle.dumps(p) for p in _parts(r)] + [pickle.dumps(r)]
    backs = [pickle.loads(b) for b in blobs]
    assert len({id(archive_of(b)) for b in backs if isinstance(b, (LazyPart, LazyReader))}) == 1


def _in_child(blob: bytes) -> tuple[int, object, int]:
    parts = pickle.loads(blob)
    values = [_plain(p) for p in parts]
    return os.getpid(), values, len({id(archive_of(p)) for p in parts if isinstance(p, LazyPart)})


@pytest.mark.parametrize("source", ["path", "str", "bytes", "memoryview"])
def test_parts_reopen_in_another_process(archive, source, tmp_path, monkeypatch):
    given = {
        "path": archive,
        "str": os.path.relpath(archive),  # a relative path: the child may run elsewhere
        "bytes": archive.read_bytes(),
        "memoryview": memoryview(archive.read_bytes()),
    }[source]
    with LazyReader(given, cached=False) as r:
        blob = pickle.dumps(_parts(r))
        want = [_plain(p) for p in _parts(r)]
    monkeypatch.chdir(tmp_path.parent)
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        pid, got, shared = pool.submit(_in_child, blob).result()
    assert pid != os.getpid() and got == want and shared == 1


def test_file_objects_closed_readers_and_counters(archive):
    with open(archive, "rb") as f, LazyReader(f) as r:
        with pytest.raises(TypeError, match="file object"):
            pickle.dumps(r)
        with pytest.raises(TypeError, match="file object"):
            pickle.dumps(r["runs"])
    with LazyReader(io.BytesIO(archive.read_bytes())) as r, pytest.raises(TypeError, match="file object"):
        pickle.dumps(r["d"])
    stats = LazyStats()
    r = LazyReader(archive, counter=stats)
    runs = r["runs"]
    back = pickle.loads(pickle.dumps(runs))
    before = stats.requests
    assert back[5]["score"] == 5 and stats.requests == before  # the counter stays in this process
    r.close()
    with pytest.raises(ValueError, match="closed"):
        pickle.dumps(runs)
    with pytest.raises(ValueError, match="closed"):
        pickle.dumps(r)


def test_a_changed_or_missing_archive_is_refused(archive, tmp_path):
    with LazyReader(archive) as r:
        blob = pickle.dumps(r["runs"])
    msglc.dump(archive, {**DOC, "runs": DOC["runs"][:-1]}, small_obj_optimization_threshold=256)
    with pytest.raises(ArchiveChangedError, match="changed since"):
        pickle.loads(blob)
    archive.unlink()
    with pytest.raises(FileNotFoundError):
        pickle.loads(blob)


def test_copy_keeps_the_archive_and_deepcopy_reopens(archive):
    with LazyReader(archive, cached=False) as r:
        runs = r["runs"]
        same = copy.copy(runs)
        assert archive_of(same) is archive_of(r) and same[4] == runs[4]
        deep = copy.deepcopy(runs)
        assert archive_of(deep) is not archive_of(r) and deep[4] == runs[4]


def test_paths_are_absolute_in_the_pickle(archive, monkeypatch):
    monkeypatch.chdir(archive.parent)
    with LazyReader(pathlib.Path(archive.name)) as r:
        blob = pickle.dumps(r)
    monkeypatch.chdir(archive.parent.parent)
    assert pickle.loads(blob)["d/k5"] == 5
