"""Remote archives in S3 (a moto server on loopback, through s3fs) that change under an open
reader. (The same for a generic fsspec file system, and archives written into a zip:
tests/io/test_fsspec.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("s3fs")
pytest.importorskip("moto")

import msglc  # noqa: E402
from msglc import ArchiveChangedError, LazyReader, LazyStats  # noqa: E402
from tools.remote import s3_bucket  # noqa: E402

BUCKET = "msglc-changes"


N = 40_000


OLD = {"v": [float(i) for i in range(N)], "tag": "old"}


NEW = {"v": [float(-i) for i in range(N)], "tag": "new"}  # the same layout: old offsets find new values


CHANGED = "changed since it was opened"


PATHS = [f"v/{i}" for i in range(997, N - 1000, 997)]  # one per 4 KB block, none read at the open


@pytest.fixture(scope="module")
def s3(s3_options):
    with s3_bucket(s3_options, BUCKET) as fs:
        yield s3_options, fs


def replaced(options: dict[str, Any], key: str) -> LazyReader:
    """A reader opened on OLD (one value read) whose object now holds NEW."""
    url = f"s3://{BUCKET}/{key}"
    msglc.dump(url, OLD, storage_options=options)
    r = LazyReader(url, storage_options=options, block_size=4096)
    assert r["v/1"] == 1.0
    msglc.dump(url, NEW, storage_options=options)
    return r


def test_single_reads_of_a_replaced_object_raise(s3):
    options, _ = s3
    with replaced(options, "single.mlc") as r:
        assert r["v/2"] == 2.0  # its block came before the change: the old archive's bytes
        for path in PATHS:
            with pytest.raises(ArchiveChangedError, match=f"s3://{BUCKET}/single.mlc {CHANGED}"):
                r[path]


def test_a_store_that_ignores_if_match_is_caught_by_the_etag_of_its_answer(s3, monkeypatch):
    options, _ = s3
    fs = fsspec.filesystem("s3", **options)
    call_s3 = fs._call_s3

    async def without_if_match(method, *args, **kwargs):
        kwargs.pop("IfMatch", None)
        return await call_s3(method, *args, **kwargs)

    monkeypatch.setattr(fs, "_call_s3", without_if_match)
    msglc.dump(f"s3://{BUCKET}/ignored.mlc", OLD, storage_options=options)
    with LazyReader(f"{BUCKET}/ignored.mlc", fs=fs, block_size=4096) as r:
        msglc.dump(f"s3://{BUCKET}/ignored.mlc", NEW, storage_options=options)
        with pytest.raises(ArchiveChangedError, match="ETag .*, now "):
            r[PATHS[0]]
        with pytest.raises(ArchiveChangedError, match=CHANGED):
            r.read_many(PATHS)


def test_batched_reads_of_a_replaced_object_raise(s3):
    options, _ = s3
    with replaced(options, "many.mlc") as r:
        with pytest.raises(ArchiveChangedError, match=CHANGED):
            r.read_many(PATHS, max_gap=0)  # one request per path, sent together
        with pytest.raises(ArchiveChangedError, match=CHANGED):
            r.read_many(PATHS)  # coalesced


def test_async_reads_of_a_replaced_object_raise(s3):
    options, _ = s3

    async def main():
        with replaced(options, "async.mlc") as r:
            with pytest.raises(ArchiveChangedError, match=CHANGED):
                await r.async_read_many(PATHS)
            with pytest.raises(ArchiveChangedError, match=CHANGED):
                await r.async_read(PATHS[-1])

    asyncio.run(main())


def test_a_reader_opened_after_the_change_reads_the_new_object(s3):
    options, _ = s3
    replaced(options, "reopen.mlc").close()
    with LazyReader(f"s3://{BUCKET}/reopen.mlc", storage_options=options) as r:
        assert r["tag"] == "new" and r[PATHS[5]] == -float(PATHS[5].split("/")[1])


def test_the_pin_costs_no_request(s3):
    options, _ = s3
    url = f"s3://{BUCKET}/count.mlc"
    msglc.dump(url, OLD, storage_options=options)
    stats = LazyStats()
    with LazyReader(url, storage_options=options, counter=stats, block_size=4096) as r:
        assert stats.requests == 2  # header block and tail block, in one round
        stats.clear()
        assert r["v/30000"] == 30000.0
        assert stats.requests == 1
        stats.clear()
        assert r.read_many(PATHS[:3], max_gap=0) == [997.0, 1994.0, 2991.0]
        assert stats.requests == 3


def test_an_object_replaced_between_the_two_opening_requests_is_opened_again(s3, monkeypatch):
    options, _ = s3
    url = f"s3://{BUCKET}/race.mlc"
    msglc.dump(url, OLD, storage_options=options)
    from msglc.io import remote

    get_object = remote.S3Source.get_object
    done = set()

    async def tail_after_a_rewrite(self, start, end, limit):
        if start < 0 and "rewrite" not in done:  # the first tail request: once the head came, from NEW
            while "head" not in done:
                await asyncio.sleep(0.001)
            await asyncio.to_thread(msglc.dump, url, NEW, storage_options=options)
            done.add("rewrite")
        data = await get_object(self, start, end, limit)
        done.add("head")  # the first answer is the head's: the tail waits for it
        return data

    monkeypatch.setattr(remote.S3Source, "get_object", tail_after_a_rewrite)
    stats = LazyStats()
    with LazyReader(url, storage_options=options, counter=stats) as r:
        assert stats.requests == 4  # the round of two, twice
        assert r["tag"] == "new" and r["v/39999"] == -39999.0
