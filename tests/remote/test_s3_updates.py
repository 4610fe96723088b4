"""Read-modify-writes of S3 objects (a moto server on loopback, through s3fs): ``append`` (and
``combine(mode="a")``) and a rewrite of an object from itself. They decide from the object,
never from s3fs's listing cache, and write pinned to the version they read: another writer's
change meanwhile fails the write (``ArchiveChangedError``) and is kept, never lost.

moto honours ``If-Match`` and ``If-None-Match: *`` on PutObject and ``If-None-Match: *`` on
CompleteMultipartUpload, so those races are run for real; it ignores ``If-Match`` on
CompleteMultipartUpload (it completes whatever the object is), so there the test checks that
the request carries the ETag that was read, as S3 refuses it with 412."""

from __future__ import annotations

from typing import Any

import pytest

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("s3fs")
pytest.importorskip("moto")

import msglc  # noqa: E402
from msglc import ArchiveChangedError, FileInfo, LazyReader  # noqa: E402
from tools.remote import s3_bucket  # noqa: E402

BUCKET = "msglc-updates"
RUNS = {f"run{i}": {"energy": [float(i)] * 50, "tag": f"t{i}"} for i in range(3)}
LARGE = {"big": [bytes([i]) * 60_000 for i in range(100)]}  # 6 MB: a multipart upload
PART = 5 << 20


@pytest.fixture(scope="module")
def s3(s3_options):
    with s3_bucket(s3_options, BUCKET) as fs:
        yield s3_options, fs


def fresh(options, **more):
    """Another s3fs instance (another process, as far as caches go)."""
    return fsspec.filesystem("s3", **options, **more)


class BeforeFirst:
    """Wraps an s3fs file system's requests: ``action`` (a coroutine function, run on the
    file system's loop) runs once, just before the first request of ``method``; ``calls``
    keeps every request's method and arguments."""

    def __init__(self, fs, method, action=None):
        self.inner, self.method, self.action = fs._call_s3, method, action
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, method, *args, **kwargs):
        self.calls.append((method, kwargs))
        if method == self.method and self.action is not None:
            action, self.action = self.action, None
            await action()
        return await self.inner(method, *args, **kwargs)


def runs_archive(names) -> bytes:
    return msglc.dumps({n: RUNS[n] for n in names}, small_obj_optimization_threshold=0)


def test_append_decides_from_the_object_not_from_a_stale_listing(s3):
    """s3fs keeps listings (its dircache): one made before the archive existed says it is
    missing; append then used to make a new archive of the new entries alone and upload it
    over the existing one."""
    options, writer = s3
    writer.pipe(f"{BUCKET}/d/notes.txt", b"a neighbour")
    fs = fresh(options)
    fs.ls(f"{BUCKET}/d")  # the folder listed while the archive is not there yet
    writer.pipe(f"{BUCKET}/d/listed.mlc", runs_archive(["run0", "run1"]))  # by another process
    assert not fs.exists(f"{BUCKET}/d/listed.mlc")  # the listing is stale
    msglc.append(f"{BUCKET}/d/listed.mlc", FileInfo(None, "run2", obj=RUNS["run2"]), fs=fs)
    with LazyReader(f"{BUCKET}/d/listed.mlc", fs=writer) as r:
        assert r.to_obj() == RUNS  # the old entries kept


def test_combine_in_append_mode_decides_from_the_object_too(s3):
    options, writer = s3
    writer.pipe(f"{BUCKET}/e/notes.txt", b"a neighbour")
    fs = fresh(options)
    fs.ls(f"{BUCKET}/e")
    writer.pipe(f"{BUCKET}/e/listed.mlc", runs_archive(["run0"]))
    assert not fs.exists(f"{BUCKET}/e/listed.mlc")
    msglc.combine(f"{BUCKET}/e/listed.mlc", [FileInfo(None, "run1", obj=RUNS["run1"])], mode="a", fs=fs)
    with LazyReader(f"{BUCKET}/e/listed.mlc", fs=writer) as r:
        assert r.to_obj() == {"run0": RUNS["run0"], "run1": RUNS["run1"]}


def test_an_append_that_meets_another_writers_change_fails_and_keeps_it(s3, monkeypatch):
    options, writer = s3
    key = f"{BUCKET}/raced.mlc"
    writer.pipe(key, runs_archive(["run0"]))
    theirs = runs_archive(["run1"])
    fs = fresh(options)

    async def another_writer():  # between append's read and its upload
        await writer._pipe_file(key, theirs)

    monkeypatch.setattr(fs, "_call_s3", BeforeFirst(fs, "put_object", another_writer))
    with pytest.raises(ArchiveChangedError, match="changed since it was read"):
        msglc.append(key, FileInfo(None, "run2", obj=RUNS["run2"]), fs=fs)
    assert writer.cat_file(key) == theirs


def test_an_append_that_creates_the_archive_fails_if_another_writer_created_it(s3, monkeypatch):
    options, writer = s3
    key = f"{BUCKET}/created.mlc"
    theirs = runs_archive(["run1"])
    fs = fresh(options)

    async def another_writer():
        await writer._pipe_file(key, theirs)

    monkeypatch.setattr(fs, "_call_s3", BeforeFirst(fs, "put_object", another_writer))
    with pytest.raises(ArchiveChangedError, match="created by another writer"):
        msglc.append(key, FileInfo(None, "run2", obj=RUNS["run2"]), fs=fs)
    assert writer.cat_file(key) == theirs


def test_a_large_append_that_creates_the_archive_fails_if_another_writer_created_it(s3, monkeypatch):
    options, writer = s3
    key = f"{BUCKET}/created-large.mlc"
    theirs = runs_archive(["run1"])
    fs = fresh(options, default_block_size=PART)

    async def another_writer():
        await writer._pipe_file(key, theirs)

    monkeypatch.setattr(fs, "_call_s3", BeforeFirst(fs, "complete_multipart_upload", another_writer))
    with pytest.raises(ArchiveChangedError, match="created by another writer"):
        msglc.append(key, FileInfo(None, "big", obj=LARGE["big"]), fs=fs)
    assert writer.cat_file(key) == theirs
    assert not writer.call_s3("list_multipart_uploads", Bucket=BUCKET).get("Uploads")


def test_a_large_append_completes_its_upload_pinned_to_the_version_read(s3, monkeypatch):
    options, writer = s3
    key = f"{BUCKET}/pinned-large.mlc"
    writer.pipe(key, runs_archive(["run0"]))
    etag = writer.info(key, refresh=True)["ETag"]
    fs = fresh(options, default_block_size=PART)
    calls = BeforeFirst(fs, "complete_multipart_upload")
    monkeypatch.setattr(fs, "_call_s3", calls)
    msglc.append(key, FileInfo(None, "big", obj=LARGE["big"]), fs=fs)
    completes = [kwargs for method, kwargs in calls.calls if method == "complete_multipart_upload"]
    assert [c.get("IfMatch") for c in completes] == [etag]
    gets = [kwargs for method, kwargs in calls.calls if method == "get_object"]
    assert gets and all("Range" in g for g in gets)  # read by ranged GETs, no listing, no HEAD
    assert not [m for m, _ in calls.calls if m in ("list_objects_v2", "head_object")]
    with LazyReader(key, fs=writer) as r:
        assert r["run0"] == RUNS["run0"] and len(r["big"]) == 100


def test_an_object_rewritten_from_itself_is_pinned_to_the_version_read(s3, monkeypatch):
    """``combine`` into one of its inputs (and ``dump`` of a reader into its own object) reads
    the object and then replaces it: a read-modify-write like append."""
    options, writer = s3
    key = f"{BUCKET}/self.mlc"
    writer.pipe(key, runs_archive(["run0"]))
    theirs = runs_archive(["run1"])
    fs = fresh(options)

    async def another_writer():
        await writer._pipe_file(key, theirs)

    monkeypatch.setattr(fs, "_call_s3", BeforeFirst(fs, "put_object", another_writer))
    inputs = [FileInfo(key, "mine", fs=fs), FileInfo(None, "new", obj=RUNS["run2"])]
    with pytest.raises(ArchiveChangedError, match="changed since it was read"):
        msglc.combine(key, inputs, fs=fs)
    assert writer.cat_file(key) == theirs
    monkeypatch.undo()
    with LazyReader(key, fs=fs) as r:  # recompressing in place, with no one in the way, works
        msglc.dump(key, r, fs=fs, small_obj_optimization_threshold=64)
    with LazyReader(key, fs=writer) as r:
        assert r.to_obj() == {"run1": RUNS["run1"]} and r.info().threshold == 64


def test_an_appended_object_holds_the_archive_alone(s3):
    """An append in place leaves slack past the archive's end (it never shortens a file); the
    object uploaded holds the archive alone, its header's end cleared."""
    options, fs = s3
    url = f"s3://{BUCKET}/slack.mlc"
    fs.pipe(f"{BUCKET}/slack.mlc", msglc.dumps({f"k{i}": i for i in range(3000)}))
    for i in range(3):
        msglc.append(url, [FileInfo(None, f"x{i}", obj=[i] * 500)], storage_options=options)
    data = fresh(options).cat(f"{BUCKET}/slack.mlc")
    assert data[10:16] == bytes(6)  # no end named: the object ends where the archive does
    with LazyReader(data) as r:
        r.verify()
        assert r.info().slack == 0 and r["x2"] == [2] * 500 and r["k2999"] == 2999
