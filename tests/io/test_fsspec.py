"""fsspec file systems other than S3, no S3 server needed: an object that changes under an open
reader (memory file system), archives written into a zip through fsspec's ZipFileSystem, and
local readers given remote options or a file:// URL."""

from __future__ import annotations

import zipfile
from typing import Any

import pytest

fsspec = pytest.importorskip("fsspec")

from archives import RUNS_DOC as DOC  # noqa: E402

import msglc  # noqa: E402
from msglc import ArchiveChangedError, LazyReader, MsglcError, TruncatedError  # noqa: E402

N = 40_000


OLD = {"v": [float(i) for i in range(N)], "tag": "old"}


NEW = {"v": [float(-i) for i in range(N)], "tag": "new"}  # the same layout: old offsets find new values


CHANGED = "changed since it was opened"


def test_generic_file_system_detects_a_shorter_object():
    fs = fsspec.filesystem("memory")
    fs.pipe_file("/changes/doc.mlc", msglc.dumps(OLD))
    with LazyReader("/changes/doc.mlc", fs=fs, block_size=4096) as r:
        assert r["v/1"] == 1.0
        fs.pipe_file("/changes/doc.mlc", msglc.dumps({"v": [1.0, 2.0]}))
        with pytest.raises(ArchiveChangedError, match=CHANGED):
            r["v/30000"]


def test_a_failure_of_a_file_systems_own_kind_reaches_the_caller_as_an_oserror(monkeypatch):
    """An HTTP file system fails with aiohttp's exceptions, others with their own: a read
    raises an OSError naming the object, the original as its cause."""

    class Broken(Exception):
        pass

    fs = fsspec.filesystem("memory")
    fs.pipe_file("/broken/doc.mlc", msglc.dumps(OLD))
    with LazyReader("/broken/doc.mlc", fs=fs, block_size=4096) as r:
        monkeypatch.setattr(fs, "cat_ranges", lambda paths, starts, ends, on_error: [Broken("gone")] * len(paths))
        with pytest.raises(OSError, match="/broken/doc.mlc") as failure:
            r["v/30000"]
        assert isinstance(failure.value.__cause__, Broken)
        with pytest.raises(OSError):
            r.read_many(["v/20000", "v/30000"])


# ---- writing into a zip through fsspec -------------------------------------------------------


def test_dump_into_a_zip_file_system(tmp_path):
    target = tmp_path / "runs.zip"
    fs = fsspec.filesystem("zip", fo=str(target), mode="w")
    msglc.dump("a.mlc", OLD, fs=fs)
    with msglc.LazyWriter("b.mlc", fs=fs) as w:  # seeks back: spooled, then copied in
        w.write({"records": ({"i": i} for i in range(1000))})
    fs.close()
    with zipfile.ZipFile(target) as z:
        assert sorted(z.namelist()) == ["a.mlc", "b.mlc"]
        assert z.read("a.mlc") == msglc.dumps(OLD)
    fs = fsspec.filesystem("zip", fo=str(target))
    with LazyReader("a.mlc", fs=fs) as r:
        assert r["v/39999"] == 39999.0 and r["tag"] == "old"
    with LazyReader("b.mlc", fs=fs) as r:
        assert r["records/999/i"] == 999


def test_dump_into_a_zip_named_by_url(tmp_path):
    url = f"zip://inner.mlc::{tmp_path / 'named.zip'}"
    msglc.dump(url, OLD, storage_options={"zip": {"mode": "w"}})
    with LazyReader(url) as r:  # complete as soon as dump returns
        assert r["v/123"] == 123.0


def test_a_failed_dump_into_a_zip_leaves_the_zip_readable(tmp_path):
    target = tmp_path / "failed.zip"
    fs = fsspec.filesystem("zip", fo=str(target), mode="w")
    msglc.dump("good.mlc", OLD, fs=fs)
    with pytest.raises((TypeError, ValueError)):
        msglc.dump("bad.mlc", {"data": [float(i) for i in range(300_000)], "bad": {1.5: "a float key"}}, fs=fs)
    msglc.dump("after.mlc", NEW, fs=fs)  # the zip still takes entries
    fs.close()
    fs = fsspec.filesystem("zip", fo=str(target))
    with LazyReader("good.mlc", fs=fs) as r, LazyReader("after.mlc", fs=fs) as r2:
        assert r["tag"] == "old" and r2["tag"] == "new"
    if "bad.mlc" in fs.ls("", detail=False):  # written in place: a zip cannot remove an entry
        with pytest.raises(MsglcError):
            LazyReader("bad.mlc", fs=fs)


# ---- local readers -------------------------------------------------------------------------------


SMALL: dict[str, Any] = {"small_obj_optimization_threshold": 1024}  # dump's **options


def test_local_readers_unchanged_by_remote_options(tmp_path):
    path = tmp_path / "doc.mlc"
    msglc.dump(path, DOC, **SMALL)
    with pytest.raises(TypeError, match="remote"):
        LazyReader(path, block_size=1 << 16)
    with pytest.raises(TypeError, match="URL"):
        LazyReader(path, storage_options={"anon": True})
    with LazyReader(f"file://{path}") as r:  # a file:// URL is a local file
        assert r["runs/3/id"] == 3
    with pytest.raises(TypeError, match="remote"):  # refused as for any local file
        LazyReader(f"file://{path}", block_size=1 << 16)
    with pytest.raises(TruncatedError):
        LazyReader(path.read_bytes()[:-3])
