"""``msglc.dask.to_archive``'s parts folder: removed when the write ends, or an ``OSError``
says why not; a run killed midway leaves its parts, which the next run to the same target
removes (locally at once, its lease being an flock; in object storage once its lease
expired). The synchronous scheduler runs the tasks here, in this process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

pytest.importorskip("dask")

import dask  # noqa: E402
import dask.bag as db  # noqa: E402

import msglc.dask as md  # noqa: E402
from msglc import LazyReader  # noqa: E402

ITEMS = [{"i": i, "t": "x" * (i % 7)} for i in range(500)]


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def bag():
    return db.from_sequence(ITEMS, npartitions=3)


def parts_folders(directory):
    return sorted(p.name for p in directory.iterdir() if ".parts-" in p.name)


def test_parts_that_cannot_be_removed_fail_the_call_and_go_with_the_next_run(tmp_path, monkeypatch):
    def refused(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    out = tmp_path / "out.mlc"
    with monkeypatch.context() as patch:
        patch.setattr(shutil, "rmtree", refused)
        with pytest.raises(OSError, match="was written, but its parts in .* could not be removed"):
            md.to_archive(bag(), out)
    assert LazyReader(out).to_obj() == ITEMS  # written, and said so
    assert len(parts_folders(tmp_path)) == 1
    md.to_archive(bag(), out)  # the next run: its writer is gone (its lease no longer held)
    assert parts_folders(tmp_path) == []


def test_a_removal_failing_with_any_exception_is_an_oserror(monkeypatch):
    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")

    def broken(path, recursive=False, maxdepth=None):
        raise RuntimeError("the store's own exception")

    monkeypatch.setattr(memory, "rm", broken)
    with pytest.raises(OSError, match="was written") as failure:
        md.to_archive(bag(), "/dask/out.mlc", fs=memory)
    cause = failure.value.__cause__
    assert cause is not None and isinstance(cause.__cause__, RuntimeError)
    assert LazyReader("/dask/out.mlc", fs=memory).to_obj() == ITEMS


KILLED = """
import glob, time, dask, dask.bag as db, msglc.dask as md
def slow(x):
    if x == 499:  # the last partition: once another is written, stop here until killed
        while not glob.glob({target!r} + ".parts-*/*.mlc"):
            time.sleep(0.01)
        print("writing", flush=True)
        time.sleep(120)
    return x
with dask.config.set(scheduler="threads", num_workers=3):
    md.to_archive(db.from_sequence(range(500), npartitions=3).map(slow), {target!r})
"""


def test_the_parts_of_a_killed_run_are_removed_by_the_next(tmp_path):
    out = tmp_path / "out.mlc"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED.format(target=str(out))], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    try:
        assert child.stdout.readline() == "writing\n"  # the first partitions written, the last under way
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    left = parts_folders(tmp_path)
    assert len(left) == 1 and any(n.endswith(".mlc") for n in os.listdir(tmp_path / left[0]))  # a part
    md.to_archive(bag(), out)
    assert parts_folders(tmp_path) == []
    assert LazyReader(out).to_obj() == ITEMS


def test_a_live_runs_parts_are_kept(tmp_path):
    """Another run to the same target, still at work, holds its lease: its folder stays."""
    from msglc.io import scratch

    target = tmp_path / "out.mlc"
    live = scratch.new_folder(target)
    with scratch.Lease(live, hold=True):
        (tmp_path / os.path.basename(live) / "000000.mlc").write_bytes(b"a part")
        md.to_archive(bag(), target)
        assert parts_folders(tmp_path) == [os.path.basename(live)]
    md.to_archive(bag(), target)  # now its writer is done with it (and left it)
    assert parts_folders(tmp_path) == []


def test_parts_left_in_s3_are_removed_once_their_lease_expired(monkeypatch, s3_options):
    pytest.importorskip("fsspec")
    pytest.importorskip("s3fs")
    pytest.importorskip("moto")
    from msglc.io import scratch
    from tools.remote import s3_bucket

    options = s3_options
    with s3_bucket(options, "parts") as fs:
        dead = "parts/out.mlc.parts-0123456789ab"
        other = "parts/other.mlc.parts-0123456789ab"  # another target's
        for folder in (dead, other):
            fs.pipe(f"{folder}/.lease", b"renewed\n")
            fs.pipe(f"{folder}/000000.mlc", b"a part")
        md.to_archive(bag(), "s3://parts/out.mlc", storage_options=options)
        assert fs.exists(f"{dead}/000000.mlc")  # renewed just now, as far as anyone can tell: kept
        monkeypatch.setattr(scratch, "LEASE_EXPIRY", -1.0)  # every lease but the new one has expired
        md.to_archive(bag(), "s3://parts/out.mlc", storage_options=options)
        fs.invalidate_cache()
        assert sorted(fs.ls("parts", refresh=True)) == ["parts/other.mlc.parts-0123456789ab", "parts/out.mlc"]
        with LazyReader("s3://parts/out.mlc", storage_options=options) as r:
            assert r.to_obj() == ITEMS


def test_compute_false_makes_the_folder_now_and_its_computation_removes_it(tmp_path):
    out = tmp_path / "out.mlc"
    delayed = md.to_archive(bag(), out, compute=False)
    assert len(parts_folders(tmp_path)) == 1  # its lease renewed by the tasks, not held
    assert delayed.compute() == out
    assert parts_folders(tmp_path) == [] and LazyReader(out).to_obj() == ITEMS


def _slow_or_failing(i):
    """Partition 0 fails after a moment; partition 1's items come slowly, while its part is
    being written, which ends after the failure has reached the caller."""
    import time

    if i == 0:
        time.sleep(0.1)  # (partition 1's part is being written by then)
        raise ZeroDivisionError("partition 0")

    def slowly():
        time.sleep(0.4)
        yield from ITEMS[:10]

    return slowly()


@pytest.mark.parametrize("where", ["local", "memory"])
def test_a_part_written_after_the_run_failed_is_not_left_behind(tmp_path, where):
    """A partition still being written when another failed ends after the caller removed the
    folder: it takes its part back, and nothing is left."""
    import time
    import uuid

    pieces = db.from_sequence([0, 1], npartitions=2).map_partitions(lambda ps: _slow_or_failing(next(iter(ps))))
    if where == "local":
        target, listing = str(tmp_path / "out.mlc"), lambda: parts_folders(tmp_path)
    else:
        fs = pytest.importorskip("fsspec").filesystem("memory")
        folder = f"/late-{uuid.uuid4().hex}"
        fs.mkdir(folder)
        target = f"memory://{folder}/out.mlc"
        listing = lambda: [p for p in fs.ls(folder, detail=False) if ".parts-" in p]  # noqa: E731
    with dask.config.set(scheduler="threads"), pytest.raises(ZeroDivisionError):  # (its shared pool)
        md.to_archive(pieces, target)
    time.sleep(0.8)  # partition 1's part is written meanwhile
    assert listing() == []


def test_a_transient_error_checking_the_lease_does_not_fail_the_run(monkeypatch):
    """On a file system without S3's listing (here fsspec's memory one), a transient error
    asking for the lease is no "the run ended": the part is written and the run succeeds
    (fsspec's ``exists`` answers False on any error, which made the part skip its write)."""
    import uuid

    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    folder = f"/flaky-{uuid.uuid4().hex}"
    memory.mkdir(folder)
    info = memory.info
    failed: list[str] = []

    def flaky(path, **kwargs):
        if path.endswith("/.lease") and not failed:
            failed.append(path)
            raise ConnectionResetError(104, "Connection reset by peer")
        return info(path, **kwargs)

    monkeypatch.setattr(memory, "info", flaky)
    assert md.to_archive(bag(), f"{folder}/out.mlc", fs=memory) == f"{folder}/out.mlc"
    assert failed  # the lease was asked about, and that answer failed once
    assert LazyReader(f"{folder}/out.mlc", fs=memory).to_obj() == ITEMS


def test_a_compute_false_delayed_computes_again(tmp_path, monkeypatch):
    """``compute=False``'s Delayed, computed again after its join failed (a transient error,
    say), writes its parts again and the archive: its parts do not look at the lease (the
    folder is gone after the first compute)."""
    out = tmp_path / "out.mlc"
    delayed = md.to_archive(bag(), out, compute=False)
    import msglc.api

    concat = msglc.api.concat
    calls: list[int] = []

    def once_failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionResetError(104, "Connection reset by peer")
        return concat(*args, **kwargs)

    monkeypatch.setattr(msglc.api, "concat", once_failing)
    with pytest.raises(ConnectionResetError):
        delayed.compute()
    assert delayed.compute() == out  # computed again
    assert LazyReader(out).to_obj() == ITEMS and parts_folders(tmp_path) == []


def test_a_part_whose_write_ends_after_the_failure_takes_itself_back(monkeypatch):
    """The other check: partition 1 found the lease there and started its write, which ends
    after the caller removed the folder (test_a_part_written_after_the_run_failed_is_not_left_behind
    passes with this check removed: its part's items come before the first check)."""
    import threading
    import time
    import uuid

    import msglc.api

    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    folder = f"/late-write-{uuid.uuid4().hex}"
    memory.mkdir(folder)
    dump = msglc.api.dump
    started, failed, written = threading.Event(), threading.Event(), threading.Event()

    def late(where, items, **options):
        if items and items[0] == 1:
            started.set()
            failed.wait(60)
            dump(where, items, **options)
            written.set()
            return
        started.wait(60)  # (partition 1's write is under way when this one fails)
        raise ZeroDivisionError("partition 0")

    monkeypatch.setattr(msglc.api, "dump", late)
    pieces = db.from_sequence([0, 1], npartitions=2)
    with dask.config.set(scheduler="threads", num_workers=2), pytest.raises(ZeroDivisionError):
        md.to_archive(pieces, f"memory://{folder}/out.mlc")
    failed.set()
    assert written.wait(60)  # partition 1's part is in the store now, then it looks at the lease
    for _ in range(300):  # (no timing asserted: it waits for the part to take itself back)
        if not [p for p in memory.ls(folder, detail=False) if ".parts-" in p]:
            break
        time.sleep(0.1)
    assert [p for p in memory.ls(folder, detail=False) if ".parts-" in p] == []
