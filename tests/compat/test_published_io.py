"""What code written for the published msglc does with buffers and file systems: reused
buffers, chunked raw data, ``fs=`` beside an open file or a UPath, ``append(fs=)``."""

from __future__ import annotations

import io

import pytest

import msglc

BIG = {"runs": [{"i": i, "x": [float(i)] * 20} for i in range(300)]}
SMALL = {"a": [1, 2, 3]}


@pytest.mark.parametrize("write", ["dump", "LazyWriter", "combine"])
def test_a_reused_buffer_holds_only_the_new_archive(write, tmp_path):
    """The published package's users rewind a buffer and write again: bytes of the older,
    longer archive after the new one would show its TOC over the new data. Writers cut a
    seekable file object where the archive ends."""
    part = tmp_path / "part.mlc"
    msglc.dump(part, SMALL)
    buf = io.BytesIO()
    msglc.dump(buf, BIG)
    buf.seek(0)
    if write == "dump":
        msglc.dump(buf, SMALL)
        expected = msglc.dumps(SMALL)
    elif write == "LazyWriter":
        with msglc.LazyWriter(buf) as w:
            w.write(SMALL)
        expected = buf.getvalue()
    else:
        msglc.combine(buf, [msglc.FileInfo(part, "p")])
        expected = buf.getvalue()
    assert buf.getvalue() == expected and len(expected) < len(msglc.dumps(BIG))
    with msglc.LazyReader(buf) as r:
        r.verify()
        assert msglc.to_obj(r.read()) == (SMALL if write != "combine" else {"p": SMALL})


def test_raw_data_in_chunks():
    """``raw_data(chunked=True)`` and ``protocol_raw_data(chunked=True)`` iterate pieces (the
    published default); without it, the whole bytes as before."""
    data = msglc.dumps(BIG, small_obj_optimization_threshold=1024)
    with msglc.LazyReader(data) as r:
        assert b"".join(r.raw_data(chunked=True)) == r.raw_data() == data
        assert b"".join(r.protocol_raw_data(chunked=True)) == r.protocol_raw_data()


def test_fs_beside_an_open_file_or_a_upath_is_ignored(tmp_path):
    """An open file, or a UPath, knows its own file system: ``fs=`` beside it changes nothing,
    as in the published package (a local UPath is not moved onto ``fs``)."""
    fsspec = pytest.importorskip("fsspec")
    upath = pytest.importorskip("upath")
    memory = fsspec.filesystem("memory")
    buf = io.BytesIO()
    msglc.dump(buf, SMALL, fs=memory)
    with msglc.LazyReader(buf, fs=memory) as r:
        assert r.to_obj() == SMALL
    local = upath.UPath(tmp_path / "local.mlc")
    msglc.dump(local, SMALL, fs=memory)
    assert (tmp_path / "local.mlc").read_bytes() == msglc.dumps(SMALL)
    with msglc.LazyReader(local, fs=memory) as r:
        assert r.to_obj() == SMALL


def test_append_with_a_file_system():
    """``append(path, files, fs=...)`` as the published package takes it: on object storage
    the archive is rewritten whole."""
    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    with memory.open("/a.mlc", "wb") as f:
        f.write(msglc.dumps({"a": 1}, small_obj_optimization_threshold=0))
    msglc.append("/a.mlc", [msglc.FileInfo(obj={"b": 2}, name="b")], fs=memory)
    with msglc.LazyReader("/a.mlc", fs=memory) as r:
        assert r.to_obj() == {"a": 1, "b": {"b": 2}}
