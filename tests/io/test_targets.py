"""Write targets: a path is replaced atomically (a failed write leaves it as it was), binary file
objects and write-only sinks get the same bytes, and durable writes change nothing else."""

import io
import os
from typing import Any

import pytest
from archives import SMALL_DOC as DOC

import msglc

SMALL: dict[str, Any] = {"small_obj_optimization_threshold": 64}  # dump's **options


def test_failed_dump_leaves_target_untouched(tmp_path, monkeypatch):
    target = tmp_path / "keep.mlc"
    msglc.dump(target, {"old": True})
    before = target.read_bytes()

    with pytest.raises(TypeError):
        msglc.dump(target, {"new": object()})
    assert target.read_bytes() == before

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("msglc.io.atomic.os.replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        msglc.dump(target, list(range(10_000)))
    monkeypatch.undo()
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.mlc"]

    def interrupted(self):  # fails halfway through writing
        raise KeyboardInterrupt

    monkeypatch.setattr(msglc.write.encoder.Encoded, "trailer", interrupted)
    with pytest.raises(KeyboardInterrupt):
        msglc.dump(target, list(range(100_000)))
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.mlc"]


def test_dump_targets(tmp_path):
    data = msglc.dumps(DOC, **SMALL)
    msglc.dump(str(tmp_path / "s.mlc"), DOC, **SMALL)
    assert (tmp_path / "s.mlc").read_bytes() == data
    buf = io.BytesIO()
    msglc.dump(buf, DOC, **SMALL)
    assert buf.getvalue() == data

    class Sink:  # write-only, cannot seek: a pipe or socket
        def __init__(self):
            self.parts = []

        def write(self, b):
            self.parts.append(bytes(b))

    sink = Sink()
    msglc.dump(sink, DOC, **SMALL)  # type: ignore[arg-type]  # write() is all dump needs
    assert b"".join(sink.parts) == data
    with pytest.raises(TypeError):
        msglc.dump(42, DOC)  # type: ignore[arg-type]
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "s.mlc").stat().st_mode & 0o777 == 0o666 & ~umask


def test_durable_dump_writes_the_same_archive(tmp_path):
    path = tmp_path / "d.mlc"
    msglc.dump(path, DOC, durable=True, **SMALL)
    assert path.read_bytes() == msglc.dumps(DOC, **SMALL)
    assert os.listdir(tmp_path) == ["d.mlc"]
    with msglc.LazyReader(path) as r:
        r.verify()
