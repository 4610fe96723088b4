"""Every read of S3 under the faults of a network and a busy store, through the
fault-injecting proxy of ``benchmark.faults`` in front of the moto server: an error answer
(500, 503 SlowDown), a connection reset before the request was done, a reset after it was
done (its answer lost), a body cut off, a body shortened with its Content-Length, an answer
that comes too late.

A read either returns the right value or raises an ``OSError`` (an ``msglc.MsglcError`` for a
damaged archive), never an exception of the HTTP stack, never ``ArchiveChangedError`` for an
object that did not change. A single fault never fails a read (the retries absorb it).

The s3fs instances here retry little and time out fast, so each case takes a fraction of a
second."""

from __future__ import annotations

import asyncio

import pytest

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("s3fs")
pytest.importorskip("moto")

import msglc  # noqa: E402
from benchmark.faults import FaultProxy  # noqa: E402
from benchmark.remote import s3_server  # noqa: E402
from msglc import LazyReader  # noqa: E402

BUCKET = "msglc-faults"
TIMEOUT = 0.6  # s3fs's read timeout here; a held answer waits longer

NEW = {"runs": [{"i": i, "energy": [float(i), -float(i)], "tag": "n" * 20} for i in range(400)]}
SMALL = {"small_obj_optimization_threshold": 512}


@pytest.fixture(scope="module")
def s3():
    with s3_server() as options, FaultProxy(options["client_kwargs"]["endpoint_url"]) as proxy:
        direct = fsspec.filesystem("s3", **options)
        direct.mkdir(BUCKET)
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


def through(options: dict, proxy: FaultProxy) -> object:
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
        },
    )
    fs.retries = 2
    return fs


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
