"""verify() in bounded memory and decoding what it checks (issue 29): the data section is
streamed once, a window at a time, whatever the archive's size, and every value must decode
as the reader decodes it, so that an archive verify() accepts reads without error."""

import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import msgspec
import numpy as np
import pytest
from archives import with_data

import msglc
from msglc import CorruptedError, FileInfo, MsglcError, UnsupportedVersionError
from msglc.format.hash_index import BLOCK_BYTES
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, Trailer, pack_header, unpack_trailer
from msglc.write.indexer import TocBuilder

# ---- helpers --------------------------------------------------------------------------------------


def replace_once(data: bytearray, old: bytes, new: bytes) -> None:
    assert len(old) == len(new) and data.count(old) == 1
    at = data.index(old)
    data[at : at + len(old)] = new


def compressed(tmp_path: Path, archive: bytes) -> bytes:
    """The archive's data as it is (crafted or not), inside a compressed archive: combined as
    its member "x" (combine copies a data section and its nodes without decoding them)."""
    (tmp_path / "in.mlc").write_bytes(archive)
    msglc.combine(tmp_path / "z.mlc", [FileInfo(tmp_path / "in.mlc", "x")], compression="zstd")
    data = (tmp_path / "z.mlc").read_bytes()
    assert msglc.LazyReader(data).info().compression == "zstd"
    return data


def archive_of(buf: bytes, obj, threshold: int = 64) -> bytes:
    """An archive whose data section is ``buf`` (the encoding of ``obj``, or a variant of it
    with the same layout), indexed by the writer's own TocBuilder: every checksum valid."""
    builder = TocBuilder(buf, threshold, block_bytes=BLOCK_BYTES)
    root = builder.build_root(obj)
    header = pack_header()
    trailer = Trailer.contiguous(len(buf), len(builder.toc), root, zlib.crc32(buf), threshold)
    return header + buf + bytes(builder.toc) + trailer.pack(header)


def windows(monkeypatch, piece: int, chunk: int, rows: int) -> None:
    """verify()'s windows (walk.PIECE), pieces read (CHUNK) and rows proven at a time."""
    from msglc.format import walk
    from msglc.read import verify

    monkeypatch.setattr(walk, "PIECE", piece)
    monkeypatch.setattr(verify, "PIECE", piece)
    monkeypatch.setattr(verify, "CHUNK", chunk)
    monkeypatch.setattr(verify, "ROWS", rows)


@pytest.fixture
def small_windows(monkeypatch):
    """Windows of a few bytes, so that every check crosses window and piece boundaries."""
    windows(monkeypatch, 48, 40, 32)


def takes(monkeypatch) -> list[int]:
    """The size of every ``take`` verify makes from here on."""
    from msglc.read import verify

    sizes: list[int] = []
    real = verify.DataStream.take

    def take(self, a, b):
        sizes.append(b - a)
        return real(self, a, b)

    monkeypatch.setattr(verify.DataStream, "take", take)
    return sizes


# ---- bounded memory ---------------------------------------------------------------------------

_LIMITED = textwrap.dedent(
    """
    import os, resource, sys
    import msglc
    path, warm, margin = sys.argv[1], sys.argv[2], int(sys.argv[3])
    msglc.LazyReader(warm).verify()  # imports, threads and allocator arenas in place first
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (size + margin, resource.getrlimit(resource.RLIMIT_AS)[1]))
    try:
        with msglc.LazyReader(path) as r:
            r.verify()
    except MemoryError:
        sys.exit("MemoryError")
    print("intact")
    """
)


def verify_limited(path, warm, margin: int) -> subprocess.CompletedProcess[str]:
    """verify() of ``path`` in a child process whose address space may grow by ``margin``
    bytes once it has verified ``warm``, a small archive of the same kind."""
    return subprocess.run(
        [sys.executable, "-c", _LIMITED, str(path), str(warm), str(margin)], capture_output=True, text=True
    )


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc to size the limit")
def test_verify_of_a_large_compressed_array_runs_in_bounded_memory(tmp_path):
    """A 256 MB array of zeros, 128 KB compressed: verify() used to hold the whole data section
    (it made `msglc verify` of a 1 GiB array peak at 2 GB); now it streams it, and 32 MB
    more than what a small archive needed is plenty."""
    msglc.dump(tmp_path / "big.mlc", np.zeros(1 << 25), compression="zstd")
    msglc.dump(tmp_path / "warm.mlc", np.zeros(1 << 16), compression="zstd")
    assert os.path.getsize(tmp_path / "big.mlc") < 1 << 20
    done = verify_limited(tmp_path / "big.mlc", tmp_path / "warm.mlc", 32 << 20)
    assert (done.returncode, done.stdout.strip()) == (0, "intact"), done.stderr


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc to size the limit")
def test_verify_of_a_large_plain_archive_runs_in_bounded_memory(tmp_path):
    """96 MB of plain data, most of it a bytes and a str value in a dict: stepped over (the
    str checked a window at a time), never held."""
    doc = {"bytes": b"\x00" * (64 << 20), "str": "\u00e9" * (16 << 20), "ints": list(range(10_000))}
    msglc.dump(tmp_path / "big.mlc", doc)
    del doc
    msglc.dump(tmp_path / "warm.mlc", {"bytes": b"\x00" * 100_000, "str": "\u00e9" * 50_000, "ints": [1] * 9000})
    done = verify_limited(tmp_path / "big.mlc", tmp_path / "warm.mlc", 32 << 20)
    assert (done.returncode, done.stdout.strip()) == (0, "intact"), done.stderr


def test_long_values_are_stepped_over_not_taken(monkeypatch):
    """A value longer than a window is never taken whole: bytes by their header, a str
    and a NumPy array's str elements a window at a time."""
    doc = {
        "blob": os.urandom(300_000),
        "text": "\u20ac" * 100_000,
        "names": np.array(["x" * 40] * 5000),
        "list": [b"y" * 70_000, "z" * 70_000, [b"w" * 70_000]],
    }
    data = msglc.dumps(doc)
    windows(monkeypatch, 4096, 8192, 4096)
    sizes = takes(monkeypatch)
    with msglc.LazyReader(data) as r:
        r.verify()
    assert max(sizes) <= 4096 + 9


def test_the_checksum_covers_every_byte_once_whatever_the_windows(small_windows):
    data = msglc.dumps({"a": list(range(500)), "b": "x" * 300}, small_obj_optimization_threshold=64)
    damaged = bytearray(data)
    damaged[HEADER_SIZE + 200] ^= 1
    with msglc.LazyReader(data) as r:
        r.verify()
    with msglc.LazyReader(bytes(damaged)) as r, pytest.raises(CorruptedError, match="checksum mismatch"):
        r.verify()


def test_progress_counts_every_data_byte(small_windows):
    data = msglc.dumps({"a": list(range(500)), "b": "x" * 300}, small_obj_optimization_threshold=64)
    seen: list[int] = []
    with msglc.LazyReader(data) as r:
        r.verify(progress=seen.append)
        assert sum(seen) == r.info().data_size


# ---- every node type, checked window by window ---------------------------------------------------------

_DOCS = {
    "spans": [str(i) * (i % 7) for i in range(600)],
    "inline": {f"k{i}": [i] * (i % 9) for i in range(200)},
    "hash": {f"h{i:05}": [i] * (3 if i % 97 else 40) for i in range(3000)},
    "int-keys": {i * 7919: str(i) for i in range(2000)},
    "matrix": [[float(i * j) for j in range(30)] for i in range(40)],
    "text-rows": [["ab", "\u00e9\u00e9", "cd"]] * 50,
    "arrays": {"f": np.arange(400.0), "u": np.array(["\u00e9t\u00e9"] * 60), "small": np.arange(3)},
    "mixed": {"runs": [{"t": i, "v": [i * 0.5] * 20, "s": "s" * i} for i in range(60)], "blob": b"b" * 500},
}


@pytest.mark.parametrize("name", sorted(_DOCS))
@pytest.mark.parametrize("threshold", [0, 64, 1024])
def test_valid_archives_verify_whatever_the_windows(small_windows, name, threshold, tmp_path):
    data = msglc.dumps(_DOCS[name], small_obj_optimization_threshold=threshold)
    with msglc.LazyReader(data) as r:
        r.verify()
    with msglc.LazyReader(compressed(tmp_path, data)) as r:
        r.verify()


def test_one_byte_changes_get_the_same_verdict_whatever_the_windows(monkeypatch):
    """A data byte changed, the checksum recomputed: verify() with windows of a few bytes
    decides as with the default ones (the same checks, only cut differently)."""
    import random

    rng = random.Random(29)
    cases = []
    for name in ("spans", "inline", "hash", "matrix", "text-rows", "mixed"):
        data = msglc.dumps(_DOCS[name], small_obj_optimization_threshold=64)
        t = unpack_trailer(data[-TRAILER_SIZE:], len(data), data[:HEADER_SIZE])
        for _ in range(12):
            at, byte = rng.randrange(t.data_len), rng.randrange(256)

            def flip(d: bytearray, at: int = at, byte: int = byte) -> None:
                d[at] = byte

            cases.append(with_data(data, flip))

    def verdicts():
        out: list[type[MsglcError] | None] = []
        for case in cases:
            try:
                with msglc.LazyReader(case) as r:
                    r.verify()
                out.append(None)
            except MsglcError as e:
                out.append(type(e))
        return out

    default = verdicts()
    windows(monkeypatch, 48, 40, 32)
    assert verdicts() == default
    assert default.count(None) < len(default)


# ---- verify() decodes what it checks ---------------------------------------------------------------------


def _unreadable(archive: bytes, path) -> None:
    """A read of ``path`` and to_obj() refuse the archive; so must verify()."""
    with msglc.LazyReader(archive, cached=False) as r:
        with pytest.raises(MsglcError):
            msglc.to_obj(r[path])
        with pytest.raises(MsglcError):
            r.to_obj()
        with pytest.raises((CorruptedError, UnsupportedVersionError)):
            r.verify()


def _bad_utf8(doc, marker: bytes, threshold: int = 64) -> bytes:
    """The archive of ``doc`` with the str ``marker`` made invalid UTF-8 (a lone
    continuation byte), every checksum valid."""
    return with_data(
        msglc.dumps(doc, small_obj_optimization_threshold=threshold),
        lambda d: replace_once(d, marker, marker[:-1] + b"\x80"),
    )


def test_verify_decodes_strings_in_spans(tmp_path):
    doc = {"names": [f"name-{i:04}" for i in range(400)], "n": 1}
    bad = _bad_utf8(doc, b"name-0123")
    _unreadable(bad, "names/123")
    _unreadable(compressed(tmp_path, bad), "x/names/123")


def test_verify_decodes_strings_in_a_plain_root(tmp_path):
    bad = _bad_utf8({"a": "hello", "b": [1, 2]}, b"hello", threshold=8192)
    with msglc.LazyReader(bad) as r:
        assert r.info().root is None
    _unreadable(bad, "a")
    _unreadable(compressed(tmp_path, bad), "x/a")


def test_verify_decodes_strings_of_fixed_stride_lists(tmp_path):
    """Rows of equal-length strs make a fixed-stride list: its bytes prove its layout, and
    its strs must still be UTF-8."""
    data = msglc.dumps([["abc", f"{i:03}"] for i in range(300)], small_obj_optimization_threshold=64)
    bad = with_data(data, lambda d: replace_once(d, b"\xa3123", b"\xa312\xff"))
    _unreadable(bad, "123/1")
    _unreadable(compressed(tmp_path, bad), "x/123/1")


def test_verify_decodes_long_strings_a_window_at_a_time(monkeypatch, tmp_path):
    text = "\u00e9" * 50_000
    bad = with_data(msglc.dumps({"t": text, "n": 1}), lambda d: d.__setitem__(d.index(b"\xc3\xa9" * 10) + 7001, 0x41))
    windows(monkeypatch, 4096, 8192, 4096)
    _unreadable(bad, "t")
    _unreadable(compressed(tmp_path, bad), "x/t")


def _broken_numpy(small: bool) -> tuple[bytes, str]:
    """An archive holding a NumPy array whose header's shape lies ([7] elements of an
    8-element array), every checksum valid."""
    doc = {"a": np.arange(8.0) if small else np.arange(5000.0), "pad": list(range(200))}
    data = msglc.dumps(doc, small_obj_optimization_threshold=256 if small else 1 << 20)
    with msglc.LazyReader(data) as r:  # in an inline dict's entry (small), in a node-less root
        assert isinstance(r["a"], np.ndarray) and (r.info().root is None) == (not small)
    n = 8 if small else 5000
    shape = msgspec.msgpack.encode([n])
    wrong = msgspec.msgpack.encode([n - 1])
    assert len(shape) == len(wrong)
    return with_data(data, lambda d: replace_once(d, b"\xa3<f8" + shape, b"\xa3<f8" + wrong)), "a"


@pytest.mark.parametrize("small", [True, False])
def test_verify_decodes_numpy_headers(small, tmp_path):
    """A broken array header in a span (a small array, decoded with its span) or in a
    node-less root (a large threshold): reads refuse it, and so does verify()."""
    bad, path = _broken_numpy(small)
    _unreadable(bad, path)
    _unreadable(compressed(tmp_path, bad), "x/" + path)


def test_verify_checks_the_str_elements_of_large_arrays(tmp_path):
    """A '<U2' array with its own node: an element past U+10FFFF is refused by reads (NumPy
    would make an invalid str) and by verify(), which checks the elements a window at a time."""
    data = msglc.dumps({"u": np.array(["ab"] * 3000), "n": 1}, small_obj_optimization_threshold=1024)
    raw = np.array(["ab"] * 3000).tobytes()
    patched = raw[:800] + (0x110000).to_bytes(4, "little") + raw[804:]
    bad = with_data(data, lambda d: replace_once(d, raw, patched))
    with msglc.LazyReader(bad) as r:
        with pytest.raises(CorruptedError):
            np.asarray(r["u"])
        with pytest.raises(CorruptedError, match="U\\+10FFFF"):
            r.verify()


def test_verify_refuses_unknown_extensions_and_bad_timestamps(tmp_path):
    """A timestamp's type byte changed to 5 (an extension msglc does not know), and a
    timestamp 64 whose nanoseconds are out of range: reads refuse both, and so does verify()."""
    import datetime

    when = datetime.datetime(2024, 5, 1, 12, 30, 15, 250_000, tzinfo=datetime.timezone.utc)
    data = msglc.dumps({"when": when, "pad": list(range(100))}, small_obj_optimization_threshold=64)
    stamp = msgspec.msgpack.encode(when)
    assert stamp[:2] == b"\xd7\xff"  # timestamp 64: nanoseconds << 34 | seconds
    unknown = with_data(data, lambda d: replace_once(d, stamp, b"\xd7\x05" + stamp[2:]))
    _unreadable(unknown, "when")
    with msglc.LazyReader(unknown) as r, pytest.raises(UnsupportedVersionError):
        r.verify()
    nanos = with_data(data, lambda d: replace_once(d, stamp, stamp[:2] + b"\xff" + stamp[3:]))
    _unreadable(nanos, "when")
    _unreadable(compressed(tmp_path, nanos), "x/when")


def test_verify_refuses_a_key_that_lookups_cannot_find():
    """A hash-indexed dict whose key 7 is stored as a uint8 (0xcc 0x07) instead of a fixint:
    the index is built from the bytes stored, so ``7 in d`` would say False while iteration
    yields 7; verify() requires every key encoded as a lookup encodes it."""
    doc = {i: i for i in range(2000)}
    canonical = msgspec.msgpack.encode(doc)
    entries = canonical[3:]
    assert entries.startswith(b"\x00\x00\x01\x01\x02\x02")
    buf = canonical[:3] + entries.replace(b"\x07\x07", b"\xcc\x07\x07", 1)
    crafted = archive_of(buf, doc)
    with msglc.LazyReader(crafted) as r:
        assert 7 not in r.read() and 7 in list(r.keys())
        with pytest.raises(CorruptedError, match="encoded"):
            r.verify()
