"""Every write and read of S3 under the faults of a network and a busy store, through the
fault-injecting proxy of ``tools.faults`` in front of the moto server: an error answer
(500, 503 SlowDown), a connection reset before the request was done, a reset after it was
done (its answer lost), a body cut off, a body shortened with its Content-Length, an answer
that comes too late.

A write either succeeds, leaving an object that verifies, or raises, leaving the old object
as it was; in both cases no multipart upload is left open. A single fault never fails a write
(the retries absorb it); a fault on every attempt fails it cleanly. A read either returns the
right value or raises an ``OSError`` (an ``msglc.MsglcError`` for a damaged archive), never
an exception of the HTTP stack, never ``ArchiveChangedError`` for an object that did not
change.

The s3fs instances here retry little and time out fast, and S3's smallest part is lowered
to 64 KiB (in moto and in msglc) for the many cases of the matrix, so each takes a fraction
of a second; the faults the audit of issue 29 found are also shown at full size."""

from __future__ import annotations

import asyncio
import functools
import itertools
from typing import Any

import pytest

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("s3fs")
pytest.importorskip("moto")

import msglc  # noqa: E402
from msglc import ArchiveChangedError, FileInfo, LazyReader, MsglcError  # noqa: E402
from tools.faults import FaultProxy  # noqa: E402
from tools.remote import s3_bucket  # noqa: E402

BUCKET = "msglc-faults"
TIMEOUT = 0.6  # s3fs's read timeout here; a held answer waits longer
PART = 5 << 20  # multipart from S3's smallest part
SMALL_PART = 64 << 10  # ... lowered for the matrix

OLD = {"old": [{"i": i, "tag": "o" * 10} for i in range(200)]}
NEW = {"runs": [{"i": i, "energy": [float(i), -float(i)], "tag": "n" * 20} for i in range(400)]}
BIG = [bytes([i]) * 60_000 for i in range(100)]  # 6 MB: a multipart upload of two parts
LARGE = [bytes([i]) * 3000 for i in range(100)]  # 300 KB: three parts of SMALL_PART, two of the matrix's
ITEMS = [{"i": i, "pad": "p" * 30} for i in range(3000)]
SMALL: dict[str, Any] = {"small_obj_optimization_threshold": 512}  # writer options


@pytest.fixture(scope="module")
def s3(s3_options):
    options = s3_options
    with s3_bucket(options, BUCKET) as direct, FaultProxy(options["client_kwargs"]["endpoint_url"]) as proxy:
        direct.pipe(f"{BUCKET}/in-a.mlc", msglc.dumps(OLD, **SMALL))
        direct.pipe(f"{BUCKET}/in-big.mlc", msglc.dumps(LARGE))
        direct.pipe(f"{BUCKET}/in-list.mlc", msglc.dumps(ITEMS[:100]))
        direct.pipe(f"{BUCKET}/doc.mlc", msglc.dumps(NEW, **SMALL))
        yield options, direct, proxy


@pytest.fixture(scope="module", autouse=True)
def short_backoff():
    """botocore's pause before a retry (up to a second, at random) made 10 ms: the retries
    are what is tested, not their pacing."""
    from botocore.retries.standard import ExponentialBackoff

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.01)
        yield


@pytest.fixture(autouse=True)
def no_faults_left(s3):
    s3[2].clear()
    yield
    s3[2].clear()


@pytest.fixture
def small_parts(monkeypatch):
    """S3's smallest part lowered to SMALL_PART, in moto (its threaded server runs here) and
    in msglc, so that multipart uploads and server-side joins take little data."""
    import moto.s3.models

    from msglc.io import compose, multipart

    for module in (moto.s3.models,):
        monkeypatch.setattr(module, "S3_UPLOAD_PART_MIN_SIZE", SMALL_PART)
    for module in (multipart, compose):
        monkeypatch.setattr(module, "MIN_PART", SMALL_PART)
    return 2 * SMALL_PART  # the writers' part size


def through(options: dict[str, Any], proxy: FaultProxy, part: int = PART) -> object:
    """An s3fs file system whose requests go through the proxy, with short retries."""
    fs = fsspec.filesystem(
        "s3",
        **{
            **options,
            "client_kwargs": {"endpoint_url": proxy.endpoint},
            "config_kwargs": {
                "retries": {"max_attempts": 2, "mode": "standard"},
                "connect_timeout": TIMEOUT,
                "read_timeout": TIMEOUT,
            },
            "default_block_size": part,
        },
    )
    fs.retries = 2
    return fs


def open_uploads(direct) -> list[dict[str, Any]]:
    uploads: list[dict[str, Any]] = direct.call_s3("list_multipart_uploads", Bucket=BUCKET).get("Uploads", [])
    return uploads


# ---- writes ----------------------------------------------------------------------------------

KEY = f"{BUCKET}/target.mlc"


@functools.cache
def _items_bag() -> Any:
    """ITEMS as a bag, made once: making one hashes every item (a second a case otherwise)."""
    import dask.bag as db

    return db.from_sequence(ITEMS, npartitions=2)


def _dask_archive(fs):
    import dask

    import msglc.dask as md

    with dask.config.set(scheduler="synchronous"):
        md.to_archive(_items_bag(), KEY, fs=fs, **SMALL)


# each: (write through fs, the value it leaves)
WRITES = {
    "dump": (lambda fs: msglc.dump(KEY, NEW, fs=fs, **SMALL), NEW),
    "dump-multipart": (lambda fs: msglc.dump(KEY, LARGE, fs=fs), LARGE),
    "combine": (
        lambda fs: msglc.combine(
            KEY, [FileInfo(f"{BUCKET}/in-a.mlc", "a", fs=fs), FileInfo(None, "b", obj=NEW)], fs=fs, **SMALL
        ),
        {"a": OLD, "b": NEW},
    ),
    "append": (lambda fs: msglc.append(KEY, FileInfo(None, "new", obj=NEW), fs=fs, **SMALL), {"old": OLD, "new": NEW}),
    "LazyWriter": (lambda fs: _lazy_writer(fs), {"runs": NEW["runs"]}),
    "concat": (  # put together on the server: the first part copied, the rest uploaded
        lambda fs: msglc.concat(KEY, [FileInfo(f"{BUCKET}/in-{n}.mlc", fs=fs) for n in ("big", "list")], fs=fs),
        [*LARGE, *ITEMS[:100]],
    ),
    "to_archive": (_dask_archive, ITEMS),
}


def _lazy_writer(fs):
    with msglc.LazyWriter(KEY, fs=fs, **SMALL) as w:
        w.write({"runs": iter(NEW["runs"])})


def _old_archive() -> bytes:
    """What the target holds before each write: for append, a combined archive to add to."""
    return msglc.dumps({"old": OLD}, small_obj_optimization_threshold=0)


def _run(write, fs) -> BaseException | None:
    try:
        write(fs)
    except Exception as e:  # what the caller meets
        return e
    return None


def _check(name, outcome, old, want, direct, case):
    """The invariants after a write: no upload open; the new archive, verified, and no
    parts left, or an OSError / MsglcError and the old object as it was."""
    assert not open_uploads(direct), case
    leftovers = [p for p in direct.ls(BUCKET, refresh=True) if ".parts-" in p]
    for left in leftovers:
        direct.rm(left, recursive=True)
    if outcome is None:
        with LazyReader(KEY, fs=direct) as r:
            r.verify()
            assert r.to_obj() == want, case
        assert not leftovers, case
        return
    assert isinstance(outcome, (OSError, MsglcError)), case
    assert not isinstance(outcome, ArchiveChangedError), case  # nothing changed it
    if name == "to_archive" and "was written" in str(outcome):  # its parts could not be removed: it says so
        with LazyReader(KEY, fs=direct) as r:
            assert r.to_obj() == want, case
        return
    assert direct.cat_file(KEY) == old, case


ONCE = ["503", "reset", "lost", "cut", "short"]
PERSISTENT = ["500", "reset", "lost"]  # (503 takes the path of 500, after a longer pause)
WITH_BODY = ("GetObject", "CreateMultipartUpload", "CompleteMultipartUpload", "ListMultipartUploads", "ListObjectsV2")


@pytest.mark.parametrize("mode", ["once", "persistent"])
@pytest.mark.parametrize("name", sorted(WRITES))
def test_writes_under_every_fault(s3, small_parts, name, mode):
    options, direct, proxy = s3
    write, want = WRITES[name]
    fs = through(options, proxy, small_parts)  # (one for all cases: making one takes longer than a case)
    old = _old_archive()
    direct.pipe(KEY, old)
    assert _run(write, fs) is None  # a clean run, to learn its requests
    ops = sorted(set(proxy.operations()))
    assert "PutObject" in ops or "CompleteMultipartUpload" in ops
    for op, kind in itertools.product(ops, ONCE if mode == "once" else PERSISTENT):
        if kind in ("cut", "short") and op not in WITH_BODY:
            continue  # (the other answers have no body to cut)
        direct.pipe(KEY, old)
        proxy.clear()
        proxy.inject(op, kind, times=1 if mode == "once" else None)
        outcome = _run(write, fs)
        case = (name, op, kind, mode, proxy.spoiled(), repr(outcome))
        if mode == "once":
            assert outcome is None, case  # a single fault is absorbed
        _check(name, outcome, old, want, direct, case)


@pytest.mark.parametrize("name", ["dump", "dump-multipart", "append"])
def test_writes_whose_commit_is_answered_late(s3, small_parts, name):
    """The request that makes the object is done, but its answer comes after the client gave
    up: the retry meets the object already made."""
    options, direct, proxy = s3
    write, want = WRITES[name]
    old = _old_archive()
    op = "CompleteMultipartUpload" if name == "dump-multipart" else "PutObject"
    direct.pipe(KEY, old)
    proxy.inject(op, "delay", seconds=TIMEOUT + 0.4)
    outcome = _run(write, through(options, proxy, small_parts))
    assert outcome is None, repr(outcome)
    assert proxy.spoiled() == [(op, "delay")]
    _check(name, outcome, old, want, direct, name)


# ---- the faults the audit found (issue 29) ----------------------------------------------------


def test_an_upload_whose_creation_answer_was_lost_is_aborted(s3):
    options, direct, proxy = s3
    proxy.clear()
    proxy.inject("CreateMultipartUpload", "lost")  # S3 made an upload whose id never reaches us
    msglc.dump(KEY, BIG, fs=through(options, proxy))
    assert ("CreateMultipartUpload", "lost") in proxy.spoiled()
    assert not open_uploads(direct)
    assert msglc.LazyReader(KEY, fs=direct).to_obj() == BIG


def test_uploads_made_by_every_failed_creation_attempt_are_aborted(s3):
    options, direct, proxy = s3
    direct.pipe(KEY, b"old")
    proxy.clear()
    proxy.inject("CreateMultipartUpload", "lost", times=None)
    with pytest.raises(ConnectionError):
        msglc.dump(KEY, BIG, fs=through(options, proxy))
    assert proxy.operations().count("CreateMultipartUpload") >= 2
    assert not open_uploads(direct)
    assert direct.cat_file(KEY) == b"old"


@pytest.mark.parametrize("op", ["CompleteMultipartUpload", "PutObject"])
def test_a_write_whose_answer_was_lost_is_no_failure(s3, op):
    """S3 answers the retry of a completed CompleteMultipartUpload with NoSuchUpload (moto
    completes it again; the proxy answers as S3 does)."""
    options, direct, proxy = s3
    value = BIG if op == "CompleteMultipartUpload" else NEW
    direct.pipe(KEY, b"old")
    proxy.clear()
    proxy.inject(op, "lost")
    proxy.inject(op, "error", after=1, status=404, code="NoSuchUpload")
    msglc.dump(KEY, value, fs=through(options, proxy))
    assert [kind for _, kind in proxy.spoiled()] == ["lost", "error"]
    assert msglc.LazyReader(KEY, fs=direct).to_obj() == value
    assert not open_uploads(direct)


# ---- reads -----------------------------------------------------------------------------------


def _reads(r):
    """Every way of reading: single values, batches, async batches, everything (verify)."""
    assert r["runs/399/energy/1"] == -399.0
    assert r.read_many(["runs/7/tag", "runs/250/i", "runs/0/energy"]) == ["n" * 20, 250, [0.0, -0.0]]
    assert asyncio.run(r.async_read_many(["runs/100/i", "runs/300/i"])) == [100, 300]
    r.verify()
    assert r.to_obj() == NEW


READ_FAULTS = [(kind, "once") for kind in ("500", "503", "reset", "lost", "cut", "short")] + [
    (kind, "persistent") for kind in ("500", "reset", "lost", "cut", "short")
]


@pytest.mark.parametrize(("kind", "mode"), READ_FAULTS)
def test_reads_under_every_fault(s3, kind, mode):
    options, _, proxy = s3
    fs = through(options, proxy)
    for stage in ("open", "read"):
        proxy.clear()
        if stage == "open":
            proxy.inject("GetObject", kind, times=1 if mode == "once" else None)
        outcome = None
        try:
            with _reader(fs) as r:
                if stage == "read":
                    proxy.inject("GetObject", kind, times=1 if mode == "once" else None)
                _reads(r)
        except Exception as e:
            outcome = e
        case = (kind, mode, stage, proxy.spoiled(), repr(outcome))
        assert proxy.spoiled(), case
        if mode == "once":
            assert outcome is None, case
        else:
            assert isinstance(outcome, OSError), case  # the store's fault: not an archive's
            assert outcome.__cause__ is not None or type(outcome).__module__ == "builtins", case


def _reader(fs) -> LazyReader:
    """A reader of doc.mlc that keeps little: most reads make a request."""
    return LazyReader(f"{BUCKET}/doc.mlc", fs=fs, block_size=4096, cache_blocks=2)


def test_a_read_whose_answer_comes_late_is_asked_again(s3):
    options, _, proxy = s3
    with _reader(through(options, proxy)) as r:
        proxy.inject("GetObject", "delay", seconds=TIMEOUT + 0.4)
        assert r["runs/150/energy/1"] == -150.0
        assert proxy.spoiled() == [("GetObject", "delay")]


def test_a_body_shortened_on_the_way_is_not_a_changed_object(s3):
    """A proxy that cuts a body and its Content-Length alike: the answer's Content-Range still
    says which bytes it holds, and the ETag is the same object's."""
    options, _, proxy = s3
    with _reader(through(options, proxy)) as r:
        proxy.inject("GetObject", "short")
        assert r["runs/150/energy/1"] == -150.0  # asked again
        assert proxy.spoiled() == [("GetObject", "short")]
        proxy.inject("GetObject", "short", times=None)
        with pytest.raises(ConnectionError, match="cut off on the way"):
            r["runs/250/energy/1"]


def test_a_broken_connection_is_an_oserror_with_its_cause(s3):
    options, _, proxy = s3
    with _reader(through(options, proxy)) as r:
        proxy.inject("GetObject", "reset", times=None)
        with pytest.raises(ConnectionError) as failure:
            r["runs/150/energy/1"]
        assert "botocore" in type(failure.value.__cause__).__module__
        assert "doc.mlc" in str(failure.value)
        with pytest.raises(ConnectionError):
            r.read_many(["runs/300/i", "runs/350/i"])
        with pytest.raises(ConnectionError):
            asyncio.run(r.async_read_many(["runs/300/i", "runs/350/i"]))
