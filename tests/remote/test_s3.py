"""Remote archives through a real S3-compatible server on loopback (moto) and s3fs; batched and
async reads, locally and remotely. (Tests that need no S3 server: tests/io/test_fsspec.py,
tests/read/test_async_reads.py.)"""

from __future__ import annotations

import contextlib
import json
import pathlib
import socket
import threading
from typing import Any

import pytest

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("s3fs")
pytest.importorskip("moto")

from archives import RUNS_DOC as DOC  # noqa: E402
from archives import check_async_api, check_read_many, check_read_many_failures  # noqa: E402

import msglc  # noqa: E402
from msglc import FileInfo, LazyReader, LazyStats, MsglcError  # noqa: E402
from tools.remote import s3_bucket  # noqa: E402

BUCKET = "msglc-test"


SMALL: dict[str, Any] = {"small_obj_optimization_threshold": 1024}  # writer options


N = 600


MATRIX = [[float(i * N + j) for j in range(N)] for i in range(N)]  # 3.2 MB encoded


@pytest.fixture(scope="module")
def s3(s3_options):
    options = s3_options
    with s3_bucket(options, BUCKET) as fs:
        msglc.dump(f"s3://{BUCKET}/doc.mlc", DOC, storage_options=options, **SMALL)
        msglc.dump(f"s3://{BUCKET}/matrix.mlc", MATRIX, storage_options=options)
        yield options, fs


def url(key: str) -> str:
    return f"s3://{BUCKET}/{key}"


# ---- naming, writing, reading ------------------------------------------------------------------


def test_every_way_to_name_a_remote_archive(s3):
    options, fs = s3
    upath = pytest.importorskip("upath")
    assert fs.cat_file(f"{BUCKET}/doc.mlc") == msglc.dumps(DOC, **SMALL)  # the same bytes as locally
    readers = [
        lambda: LazyReader(url("doc.mlc"), storage_options=options),
        lambda: LazyReader(upath.UPath(url("doc.mlc"), **options)),
        lambda: LazyReader(f"{BUCKET}/doc.mlc", fs=fs),
    ]
    for make in readers:
        with make() as r:
            assert r["runs/42/energy/3"] == 45.0
            assert r["runs/7/tag"] == "r7"
            assert msglc.to_obj(r["m"]) == DOC["m"]
    with fs.open(f"{BUCKET}/doc.mlc", "rb") as f, LazyReader(f) as r:
        assert r.to_obj() == DOC


def test_write_targets(s3):
    options, fs = s3
    upath = pytest.importorskip("upath")
    msglc.dump(upath.UPath(url("w/upath.mlc"), **options), DOC, **SMALL)
    msglc.dump(f"{BUCKET}/w/fs.mlc", DOC, fs=fs, **SMALL)
    for key in ("w/upath.mlc", "w/fs.mlc"):
        assert fs.cat_file(f"{BUCKET}/{key}") == msglc.dumps(DOC, **SMALL)
    with msglc.LazyWriter(url("w/stream.mlc"), storage_options=options) as w:  # seeks back: spooled
        w.write({"records": ({"i": i} for i in range(20000))})
    with LazyReader(url("w/stream.mlc"), storage_options=options) as r:
        assert r["records/19999/i"] == 19999 and len(r["records"]) == 20000


def test_combine_archives_stored_in_s3(s3):
    options, fs = s3
    upath = pytest.importorskip("upath")
    inputs = [
        FileInfo(upath.UPath(url("doc.mlc"), **options), "doc"),
        FileInfo(LazyReader(url("matrix.mlc"), storage_options=options), "m"),
    ]
    msglc.combine(url("combined.mlc"), inputs, storage_options=options)
    inputs[1].path.close()
    with LazyReader(url("combined.mlc"), storage_options=options) as r:
        assert r["doc/runs/299/energy/49"] == 348.0
        assert r["m/599/599"] == MATRIX[599][599]
        assert msglc.to_obj(r["doc"]) == DOC


def test_requests_to_open_and_to_read_an_element(s3):
    options, _ = s3
    stats = LazyStats()
    with LazyReader(url("matrix.mlc"), storage_options=options, counter=stats, block_size=64 << 10) as r:
        assert stats.requests <= 2  # header + first block, trailer + root node: one round
        stats.clear()
        assert r[400][123] == MATRIX[400][123]
        assert stats.requests == 1 and stats() == 64 << 10
        stats.clear()
        assert r[400][124] == MATRIX[400][124]  # read-ahead: the block is kept
        assert stats.requests == 0


def test_archives_of_the_published_msglc_read_remotely(s3):
    """An archive the published msglc wrote (a combined one, members nested) reads from S3
    as it does locally, in a few requests."""
    import msgpack

    options, fs = s3
    legacy = pathlib.Path(__file__).parent.parent / "golden" / "legacy"
    fs.pipe_file(f"{BUCKET}/combined-nested.msg", (legacy / "combined-nested.msg").read_bytes())
    value = msgpack.unpackb((legacy / "combined-nested.expected.msgpack").read_bytes(), strict_map_key=False)
    stats = LazyStats()
    with LazyReader(url("combined-nested.msg"), storage_options=options, counter=stats, cached=False) as r:
        assert r.to_obj() == value
        stats.clear()
        key = next(iter(value))
        assert msglc.to_obj(r[key]) == value[key]
        assert stats.requests <= 4


def test_an_object_uploaded_after_an_append_died_reads_as_the_old_archive(s3):
    options, fs = s3
    data = msglc.dumps(MATRIX)
    left = bytearray(data + b"left by an append that was killed" * 3000)  # past one block
    left[10:16] = len(data).to_bytes(6, "little")  # the end the header committed to
    fs.pipe(f"{BUCKET}/left.mlc", bytes(left))
    stats = LazyStats()
    with LazyReader(url("left.mlc"), storage_options=options, counter=stats) as r:
        assert stats.requests == 3  # the usual round of two, then the trailer where the header says
        assert r[599][599] == MATRIX[599][599]
        r.verify()
    left[10:16] = (40).to_bytes(6, "little")  # an end no archive can have
    fs.pipe(f"{BUCKET}/left.mlc", bytes(left))
    with pytest.raises(msglc.CorruptedError, match="ends at offset 40"):
        LazyReader(url("left.mlc"), storage_options=options)


def test_failed_write_leaves_nothing_and_keeps_the_old_object(s3):
    options, fs = s3
    small = fsspec.filesystem("s3", **options, default_block_size=5 << 20)  # multipart from 5 MB
    bad = {"data": [float(i) for i in range(1_500_000)], "bad": {1.5: "a float key"}}  # refused while indexing
    for key in ("w/new.mlc", "doc.mlc"):
        before = fs.cat_file(f"{BUCKET}/{key}") if fs.exists(f"{BUCKET}/{key}") else None
        with pytest.raises((TypeError, ValueError)):
            msglc.dump(f"{BUCKET}/{key}", bad, fs=small)
        fs.invalidate_cache()
        if before is None:
            assert not fs.exists(f"{BUCKET}/{key}")
        else:
            assert fs.cat_file(f"{BUCKET}/{key}") == before
    assert not fs.call_s3("list_multipart_uploads", Bucket=BUCKET).get("Uploads")  # aborted


# ---- read_many ---------------------------------------------------------------------------------


def _readers(tmp_path, s3):
    path = tmp_path / "doc.mlc"
    msglc.dump(path, DOC, **SMALL)
    options, _ = s3
    return [lambda: LazyReader(url("doc.mlc"), storage_options=options)]  # local: tests/read/test_read_many.py


def test_read_many_answers_in_order(tmp_path, s3):
    for make in _readers(tmp_path, s3):
        check_read_many(make)


def test_read_many_raises_the_first_failure_in_order(tmp_path, s3):
    for make in _readers(tmp_path, s3):
        check_read_many_failures(make)


def test_read_many_coalesces_nearby_reads(s3):
    options, _ = s3
    stats = LazyStats()
    with LazyReader(url("matrix.mlc"), storage_options=options, counter=stats, block_size=16 << 10) as r:
        stats.clear()
        paths = [f"{i}/{j}" for i in range(200, 260) for j in (5, 300, 590)]  # ~330 KB apart at most
        assert r.read_many(paths) == [MATRIX[i][j] for i in range(200, 260) for j in (5, 300, 590)]
        assert stats.requests == 1
        stats.clear()
        far = [f"{i}/0" for i in range(50, 600, 50)]  # 11 rows, 270 KB apart
        assert r.read_many(far, max_gap=4096) == [MATRIX[i][0] for i in range(50, 600, 50)]
        assert stats.requests == 11  # one request each, sent together


def test_read_many_slices_remotely_in_few_requests(tmp_path, s3):
    options, _ = s3
    doc = {"a": [{"x": i, "pad": "p" * 40} for i in range(2000)]}
    path = tmp_path / "slices.mlc"
    msglc.dump(path, doc, **SMALL)
    stats = LazyStats()
    fs = fsspec.filesystem("s3", **options)
    fs.put_file(str(path), f"{BUCKET}/slices.mlc")
    with LazyReader(url("slices.mlc"), storage_options=options, counter=stats, block_size=4096) as r:
        stats.clear()
        assert r.read_many(["a/0:20:2000/x"]) == [list(range(0, 2000, 20))]
        assert stats.requests < 40


def test_read_many_of_views_keeps_them_usable(s3):
    options, _ = s3
    r = LazyReader(url("doc.mlc"), storage_options=options)
    runs, row = r.read_many(["runs", "m/7"])
    assert runs[250]["energy"][1] == 251.0 and row[3] == 21.0
    r.close()
    with pytest.raises(ValueError, match="closed"):
        runs[10]


# ---- async -------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_async_api_remote(s3):
    options, _ = s3
    with LazyReader(url("doc.mlc"), storage_options=options) as r:  # local: tests/read/test_read_many.py
        await check_async_api(r)


# ---- errors ------------------------------------------------------------------------------------


def test_missing_truncated_and_foreign_objects(s3):
    options, fs = s3
    with pytest.raises(FileNotFoundError):
        LazyReader(url("no-such.mlc"), storage_options=options)
    whole = msglc.dumps(MATRIX)
    for key, data in (
        ("cut.mlc", whole[: len(whole) // 2]),
        ("tail.mlc", whole[:-1]),
        ("json.mlc", json.dumps(DOC["m"]).encode()),
        ("empty.mlc", b""),
    ):
        fs.pipe_file(f"{BUCKET}/{key}", data)
        with pytest.raises(MsglcError):
            LazyReader(url(key), storage_options=options)


def test_no_permission(s3):
    options, fs = s3
    fs.mkdir("msglc-locked")
    fs.pipe_file("msglc-locked/doc.mlc", msglc.dumps(DOC))
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::msglc-locked/*"}
        ],
    }
    fs.call_s3("put_bucket_policy", Bucket="msglc-locked", Policy=json.dumps(policy))
    with pytest.raises(PermissionError):
        LazyReader("s3://msglc-locked/doc.mlc", storage_options=options)


class CuttingProxy:
    """A TCP proxy to the S3 server that, once ``cut`` is set, ends every connection partway
    through the next response it forwards (headers and part of the body)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.cut: int | None = None
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, response: bool) -> None:
        try:
            while data := src.recv(65536):
                if response and self.cut is not None:
                    dst.sendall(data[: self.cut])
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def test_connection_failing_midway(s3):
    options, _ = s3
    endpoint = options["client_kwargs"]["endpoint_url"]
    host, port = endpoint.rsplit("//", 1)[1].split(":")
    proxy = CuttingProxy((host, int(port)))
    through = fsspec.filesystem(
        "s3", **{**options, "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{proxy.port}"}}
    )
    through.retries = 1
    with LazyReader(f"{BUCKET}/matrix.mlc", fs=through, block_size=16 << 10) as r:
        assert r[1][2] == MATRIX[1][2]
        proxy.cut = 600  # response headers and the first bytes of the body
        for read in (lambda: r[300][300], lambda: r.read_many(["500/1", "550/2"])):
            with pytest.raises(OSError) as failure:  # the HTTP stack's own exception as its cause
                read()
            assert failure.value.__cause__ is not None
    proxy.listener.close()


def test_compressed_archives_written_to_s3_by_every_writer(s3):
    pytest.importorskip("zstandard")
    options, fs = s3
    z: dict[str, Any] = {"compression": "zstd", **SMALL}
    msglc.dump(url("z/doc.mlc"), DOC, storage_options=options, **z)
    with msglc.LazyWriter(url("z/stream.mlc"), storage_options=options, **z) as w:
        w.write({"records": ({"i": i} for i in range(20000))})
    inputs = [FileInfo(url("z/doc.mlc"), "doc"), FileInfo(url("doc.mlc"), "plain")]
    msglc.combine(
        url("z/combined.mlc"),
        [FileInfo(LazyReader(i.path, storage_options=options), i.name) for i in inputs],
        storage_options=options,
        **z,
    )
    with LazyReader(url("z/doc.mlc"), storage_options=options) as r:
        msglc.dump(url("z/copy.mlc"), r, storage_options=options, **SMALL)  # repacked: the frames copied
    assert fs.cat_file(f"{BUCKET}/z/doc.mlc") == msglc.dumps(DOC, **z)
    assert fs.cat_file(f"{BUCKET}/z/copy.mlc") == fs.cat_file(f"{BUCKET}/z/doc.mlc")
    with LazyReader(url("z/stream.mlc"), storage_options=options) as r:
        assert r.info().version == (2, 2) and r["records/19999/i"] == 19999
        r.verify()
    with LazyReader(url("z/combined.mlc"), storage_options=options) as r:
        assert r.info().version == (2, 2)
        assert r["doc/runs/299/energy/49"] == 348.0 and msglc.to_obj(r["plain"]) == DOC
        r.verify()


def test_the_cli_writes_every_kind_of_output_to_s3(s3, tmp_path):
    """URL outputs of msglc convert and combine, archives and text alike, are written for real,
    the same bytes as to a local file (the file system's options from fsspec's FSSPEC_S3
    variable, as a user would set them)."""
    import os

    from cli_runner import run_msglc_in_child

    options, fs = s3
    msglc.dump(tmp_path / "in.mlc", DOC, **SMALL)
    msglc.dump(tmp_path / "list.mlc", DOC["runs"][:50], **SMALL)
    (tmp_path / "in.json").write_text(json.dumps({"a": [1, 2.5, "x"]}))
    (tmp_path / "local").mkdir()
    env = {**os.environ, "FSSPEC_S3": json.dumps(options)}
    cases = [
        ["convert", "in.mlc", "OUT.json"],
        ["convert", "in.mlc", "OUT.msgpack"],
        ["convert", "in.json", "OUT.mlc"],
        ["combine", "OUT-both.mlc", "in.mlc", "list.mlc"],
    ]
    commands = []
    for case in cases:
        for where in (str(tmp_path / "local"), url("cli")):
            args = [a.replace("OUT", f"{where}/out") if "OUT" in a else a for a in case]
            commands.append([str(tmp_path / a) if a.startswith(("in.", "list.")) else a for a in args])
    answers = run_msglc_in_child(commands, env)  # a process configured by its environment, as from a shell
    assert [code for code, _, _ in answers] == [0] * len(commands), [err for _, _, err in answers]
    for case in cases:
        name = next(a for a in case if "OUT" in a).replace("OUT", "out")
        assert fs.cat_file(f"{BUCKET}/cli/{name}") == (tmp_path / "local" / name).read_bytes(), name


# ---- pickled readers and parts ------------------------------------------------------------------


def _values_in_child(blob: bytes) -> list[object]:
    import pickle

    return [msglc.to_obj(part) for part in pickle.loads(blob)]


def test_pickled_remote_readers_reopen_in_another_process(s3):
    import concurrent.futures
    import multiprocessing
    import pickle

    options, fs = s3
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
        for make in (
            lambda: LazyReader(url("doc.mlc"), storage_options=options),
            lambda: LazyReader(f"{BUCKET}/doc.mlc", fs=fs),
        ):
            with make() as r:
                parts = [r["runs"], r["m"], r]
                blob = pickle.dumps(parts)
                assert b"doc.mlc" in blob and len(blob) < 4000  # the URL and options, not the data
                want = [msglc.to_obj(p) for p in parts]
            assert pool.submit(_values_in_child, blob).result() == want
