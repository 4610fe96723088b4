"""The published msglc's ways of combining: ``FileInfo(fs=)`` (inputs on an fsspec file
system), ``combine``/``append`` to binary file objects, ``validate=``."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import msgpack
import pytest

import msglc
from msglc import FileInfo

A = {"glossary": {"title": "example glossary", "list": list(range(300))}}
B = list(range(30))
SMALL_T: dict[str, Any] = {"small_obj_optimization_threshold": 256}  # writer options


@pytest.fixture
def parts(tmp_path):
    msglc.dump(tmp_path / "a.mlc", A, **SMALL_T)
    msglc.dump(tmp_path / "b.mlc", B)
    return tmp_path


# -- FileInfo(fs=) --


def test_inputs_read_from_a_file_system(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    mem = fsspec.filesystem("memory")
    mem.pipe_file("/compat/a.mlc", msglc.dumps(A, **SMALL_T))
    mem.pipe_file("/compat/b.mlc", msglc.dumps(B))
    msglc.combine(tmp_path / "c.mlc", [FileInfo("/compat/a.mlc", "a", fs=mem), FileInfo("/compat/b.mlc", "b", fs=mem)])
    with msglc.LazyReader(tmp_path / "c.mlc") as r:
        assert r["a/glossary/title"] == "example glossary"
        assert r == {"a": A, "b": B}
    msglc.append(tmp_path / "c.mlc", FileInfo("/compat/b.mlc", "b2", fs=mem))
    assert msglc.LazyReader(tmp_path / "c.mlc")["b2"] == B


def test_an_archive_of_the_published_package_read_from_a_file_system(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    legacy = Path(__file__).parent.parent / "golden" / "legacy"
    mem = fsspec.filesystem("memory")
    mem.pipe_file("/compat/doc.msg", (legacy / "doc-t1024.msg").read_bytes())
    expected = msgpack.unpackb((legacy / "doc-t1024.expected.msgpack").read_bytes(), strict_map_key=False)
    msglc.combine(tmp_path / "c.mlc", [FileInfo("/compat/doc.msg", "doc", fs=mem)])
    assert msglc.LazyReader(tmp_path / "c.mlc") == {"doc": expected}


def test_a_local_file_system_reads_local_paths(parts):
    fsspec = pytest.importorskip("fsspec")
    local = fsspec.filesystem("file")
    msglc.combine(parts / "c.mlc", [FileInfo(str(parts / "a.mlc"), fs=local)])
    assert msglc.LazyReader(parts / "c.mlc") == [A]


def test_a_missing_input_on_a_file_system_writes_nothing(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    with pytest.raises(FileNotFoundError):
        msglc.combine(tmp_path / "c.mlc", [FileInfo("/compat/none.mlc", fs=fsspec.filesystem("memory"))])
    assert not (tmp_path / "c.mlc").exists()


@pytest.mark.parametrize("source", [b"bytes", io.BytesIO(), None])
def test_fs_applies_to_paths_only(source):
    fsspec = pytest.importorskip("fsspec")
    extra: dict[str, Any] = {"obj": [1]} if source is None else {}
    with pytest.raises(TypeError, match="fs="):
        FileInfo(source, fs=fsspec.filesystem("memory"), **extra)


# -- binary file objects --


def test_combine_then_append_in_a_bytes_buffer(parts):
    buf = io.BytesIO()
    msglc.combine(buf, [FileInfo(parts / "a.mlc")])
    msglc.combine(buf, [FileInfo(parts / "b.mlc")], mode="a")
    assert buf.tell() == len(buf.getvalue())  # left at the end of the archive
    msglc.append(buf, FileInfo(parts / "b.mlc"))
    with msglc.LazyReader(buf) as r:
        assert r["0/glossary/title"] == "example glossary"
        assert r["1/-1"] == 29
        assert r == [A, B, B]
    with msglc.LazyReader(parts / "a.mlc") as a:
        assert msglc.LazyReader(buf)[0] == a


def test_append_to_an_empty_buffer_creates_the_archive(parts):
    buf = io.BytesIO()
    msglc.append(buf, [FileInfo(parts / "a.mlc", "a")])
    msglc.append(buf, [FileInfo(parts / "b.mlc", "b")])
    assert msglc.LazyReader(buf) == {"a": A, "b": B}


def test_append_shorter_than_before_is_truncated(parts):
    """The result replaces the buffer's bytes from 0: none of the old ones stay after it."""
    buf = io.BytesIO(b"")
    msglc.combine(buf, [FileInfo(parts / "b.mlc")])
    msglc.append(buf, [FileInfo(parts / "b.mlc")])
    assert len(buf.getvalue()) == buf.tell()
    assert msglc.LazyReader(buf.getvalue()) == [B, B]


def test_write_mode_starts_at_the_current_position(parts):
    buf = io.BytesIO()
    buf.write(b"prefix")
    msglc.combine(buf, [FileInfo(parts / "b.mlc", "b")])
    assert buf.getvalue().startswith(b"prefix")
    assert msglc.LazyReader(buf.getvalue()[6:]) == {"b": B}


@pytest.mark.parametrize("mode", ["w+b", "r+b"])
def test_real_files_opened_for_update(parts, mode):
    path = parts / "c.mlc"
    path.write_bytes(b"")
    with open(path, mode) as f:
        msglc.combine(f, [FileInfo(parts / "a.mlc", "a")])
        msglc.combine(f, [FileInfo(parts / "b.mlc", "b")], mode="a")
        f.seek(0)
        assert msglc.LazyReader(f)["a/glossary/list/7"] == 7
    with msglc.LazyReader(path) as r:
        r.verify()
        assert r == {"a": A, "b": B}


def test_an_input_that_is_the_buffer_itself(parts):
    buf = io.BytesIO()
    msglc.combine(buf, [FileInfo(parts / "b.mlc")])
    msglc.append(buf, [FileInfo(buf)])  # copies what the buffer held before
    assert msglc.LazyReader(buf) == [B, [B]]
    with pytest.raises(ValueError, match="is the output .* itself"):
        msglc.combine(buf, [FileInfo(buf)])


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (lambda p: [FileInfo(p / "b.mlc")], "named"),  # a list input to a dict
        (lambda p: [FileInfo(p / "b.mlc", "a")], "already"),  # a taken name
        (lambda p: [FileInfo(io.BytesIO(b"0" * 100), "x")], "archive"),  # not an archive
    ],
)
def test_a_failed_append_leaves_the_buffer_as_it_was(parts, bad, error):
    buf = io.BytesIO()
    msglc.combine(buf, [FileInfo(parts / "a.mlc", "a")])
    before = buf.getvalue()
    buf.seek(7)
    with pytest.raises(ValueError, match=error):
        msglc.append(buf, bad(parts))
    assert buf.getvalue() == before
    assert buf.tell() == 7


def test_a_failed_append_leaves_a_file_as_it_was(parts):
    path = parts / "c.mlc"
    msglc.combine(path, [FileInfo(parts / "a.mlc", "a")])
    before = path.read_bytes()
    with open(path, "r+b") as f, pytest.raises(ValueError, match="already"):
        msglc.append(f, [FileInfo(parts / "b.mlc", "a")])
    assert path.read_bytes() == before


def test_append_needs_a_file_it_can_rewrite(parts):
    msglc.combine(parts / "c.mlc", [FileInfo(parts / "a.mlc", "a")])
    before = (parts / "c.mlc").read_bytes()
    with open(parts / "c.mlc", "rb") as f, pytest.raises(TypeError, match="writable"):
        msglc.append(f, [FileInfo(parts / "b.mlc", "b")])
    with open(parts / "c.mlc", "ab") as f, pytest.raises(TypeError, match="readable|appending"):
        msglc.append(f, [FileInfo(parts / "b.mlc", "b")])
    with open(parts / "c.mlc", "r+") as f, pytest.raises(TypeError, match="text file"):
        msglc.append(f, [FileInfo(parts / "b.mlc", "b")])  # type: ignore[arg-type]
    assert (parts / "c.mlc").read_bytes() == before


# -- validate= --


@pytest.mark.parametrize("validate", [True, False])
def test_validate_is_accepted_and_inputs_are_always_checked(parts, validate):
    msglc.combine(parts / "c.mlc", [FileInfo(parts / "a.mlc")], validate=validate)
    msglc.append(parts / "c.mlc", [FileInfo(parts / "b.mlc")], validate=validate)
    assert msglc.LazyReader(parts / "c.mlc") == [A, B]
    (parts / "junk.msg").write_bytes(b"0" * 300)
    with pytest.raises(msglc.NotAnArchiveError):
        msglc.combine(parts / "d.mlc", [FileInfo(parts / "junk.msg")], validate=validate)
    with pytest.raises(msglc.NotAnArchiveError):
        msglc.append(parts / "c.mlc", [FileInfo(parts / "junk.msg")], validate=validate)
    assert not (parts / "d.mlc").exists()
