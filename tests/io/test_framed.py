"""The framed source (docs/compression.md): a compressed section written by write/compress.py
reads back through io/framed.py as the plain bytes, at any offset and across the section's
edges; damaged frames, and frames that claim another size than the frame table (a
decompression bomb), raise CorruptedError."""

import gc
import io
import random
import threading
import tracemalloc
from itertools import accumulate
from typing import Any

import msgspec
import pytest

import msglc
import msglc.io.framed as framed_module
from benchmark.targets.realdata import CountingFile
from msglc import CorruptedError
from msglc.format.frames import MAX_FRAME, Index, pack_index, pack_page
from msglc.format.msgpack import array_header, container_header
from msglc.io.framed import SMALL_FRAME, FramedSource, open_section
from msglc.io.local import BufferSource
from msglc.read.part import archive_of
from msglc.util import accel
from msglc.write.compress import DATA_FRAME, HEAD_FRAME, FrameWriter, frame_size

pytest.importorskip("zstandard")

HEAD, TAIL = b"H" * 16, b"T" * 100  # stand-ins for the header, and the trailer


def framed(plain: bytes, size: int = 4096, level: int = 3) -> tuple[bytes, FramedSource]:
    out = io.BytesIO()
    writer = FrameWriter(out, size, level)
    writer.write(plain)
    writer.end_data()
    writer.close((0, 0))
    section = out.getvalue()
    file = HEAD + section + TAIL
    return file, open_section(BufferSource(file), len(HEAD), len(section))[0]


def laid_out(frames: list[bytes], plain: list[int]) -> tuple[bytes, FramedSource]:
    """A file whose section holds ``frames`` (any bytes), the frame table saying they hold
    ``plain`` bytes each: for frames that are not what they claim."""
    page = pack_page(list(zip(map(len, frames), plain, strict=True)), [(0, 0)] * len(frames), [0] * len(frames))
    at = sum(map(len, frames))
    index = Index(sum(plain), 0, (0, 0), len(frames), len(frames), [(at, 0, 0, len(page))], [])
    section = b"".join(frames) + page + pack_index(index)
    file = HEAD + section + TAIL
    return file, open_section(BufferSource(file), len(HEAD), len(section))[0]


def test_reads_anywhere_give_the_plain_bytes():
    rng = random.Random(7)
    plain = bytes(rng.choice(b"msglc archive ") for _ in range(50_000))
    file, source = framed(plain)
    whole = HEAD + plain + TAIL
    assert source.size == len(whole) and len(file) < len(whole)
    assert bytes(source.read(0, len(whole))) == whole
    for _ in range(300):
        offset = rng.randrange(len(whole))
        size = rng.randrange(min(20_000, len(whole) - offset) + 1)
        assert bytes(source.read(offset, size)) == whole[offset : offset + size]
    assert source.table.frames == -(-len(plain) // 4096)  # frames of 4 KB
    with pytest.raises(Exception, match="ended|truncated"):
        source.read(len(whole) - 5, 10)


def test_empty_data_and_frame_sizes():
    file, source = framed(b"")
    assert bytes(source.read(0, source.size)) == HEAD + TAIL
    assert frame_size(64) == frame_size(1 << 30) == DATA_FRAME  # frames no longer follow the threshold
    with pytest.raises(ValueError, match="frame size"):
        FrameWriter(io.BytesIO(), 100, 3)


def test_damaged_frames_raise_corrupted_error():
    plain = bytes(range(256)) * 100
    file, source = framed(plain)
    start = len(HEAD) + source.table.stored(1)
    bad = bytearray(file)
    bad[start + 20] ^= 0xFF  # inside frame 1's compressed bytes: its checksum or structure fails
    damaged = open_section(BufferSource(bytes(bad)), len(HEAD), len(file) - len(HEAD) - len(TAIL))[0]
    assert bytes(damaged.read(16, 100)) == plain[:100]  # frame 0 is intact
    with pytest.raises(CorruptedError, match="frame 1"):
        damaged.read(16 + 4096, 10)


def test_a_frame_claiming_another_size_is_refused_before_decompressing():
    """The frame table says 4096 bytes; a frame declaring more (here: one from a larger input
    put in its place) is refused from its header, without decompressing it."""
    import zstandard

    bomb = zstandard.ZstdCompressor(level=3, write_checksum=True).compress(bytes(64 << 20))
    _, bombed = laid_out([bomb], [4096])
    with pytest.raises(CorruptedError, match="declares 67108864 bytes where the seek table says 4096"):
        bombed.read(16, 10)


def test_frames_without_checksum_or_header_are_refused():
    """Every frame is checked before it is decompressed: a frame without zstd's content
    checksum (a flipped flag would let damage through unseen), bytes that are no zstd frame,
    and a table entry outside the bounds readers accept."""
    import zstandard

    plain = bytes(range(256)) * 16
    unchecked = zstandard.ZstdCompressor(level=3, write_checksum=False).compress(plain)
    with pytest.raises(CorruptedError, match="frame 0 at offset 16 carries no checksum"):
        laid_out([unchecked], [4096])[1].read(16, 10)
    with pytest.raises(CorruptedError, match="frame 0 at offset 16 is not a zstd frame"):
        laid_out([b"\x00" * 40], [4096])[1].read(16, 10)
    checked = zstandard.ZstdCompressor(level=3, write_checksum=True).compress(plain)
    with pytest.raises(CorruptedError, match="frame 0 at offset 16: its entry in the frame table is out of bounds"):
        laid_out([checked], [MAX_FRAME + 1])[1].read(16, 10)


def test_frames_end_where_items_end():
    """A record of a long list, or an entry of a large dict, never needs two frames: frames
    are cut at the spans the TOC names (and a dict's spans also at an entry in the middle)."""
    rng = random.Random(3)
    records = [{"id": i, "name": f"run{i}", "score": rng.random(), "tags": ["a", "b"]} for i in range(20_000)]
    words = {f"key{i:06d}": f"v{rng.getrandbits(40):x}" for i in range(20_000)}
    for value in (records, words):
        plain = msglc.dumps(value)
        data = msglc.dumps(value, compression="zstd")
        buf = msglc.LazyReader(plain).protocol_raw_data()
        with msglc.LazyReader(data) as r:
            frames = list(r.frames())
            cuts = [f.plain_offset - 16 for f in frames] + [frames[-1].plain_offset + frames[-1].plain_size - 16]
            cuts = [c for c in cuts if c <= len(buf)]  # the data's frames (the TOC's follow)
            is_map, n, h = container_header(buf[:5])
            items = msgspec.msgpack.Decoder(list[msgspec.Raw]).decode(array_header(2 * n if is_map else n) + buf[h:])
            lengths = list(map(len, items))
            if is_map:  # an entry is a key and a value
                lengths = [k + v for k, v in zip(lengths[0::2], lengths[1::2], strict=True)]
            starts = set(accumulate(lengths, initial=h))
            assert set(cuts[1:-1]) <= starts | {h, HEAD_FRAME}  # (the root's header: a frame of its own)
            assert all(b - a <= DATA_FRAME + DATA_FRAME // 8 for a, b in zip(cuts, cuts[1:], strict=False))
            assert r.to_obj() == value


def test_runs_of_numbers_are_shuffled_and_read_back():
    np = pytest.importorskip("numpy")
    y, x = np.mgrid[0:300, 0:200]
    matrix = np.sin(x / 17.0) * np.cos(y / 23.0) + np.random.default_rng(1).random((300, 200)) * 1e-3  # smooth
    for value in (matrix.tolist(), {"a": matrix, "b": matrix[:, :7].astype(np.int32)}):
        data = msglc.dumps(value, compression="zstd", small_obj_optimization_threshold=4096)
        with msglc.LazyReader(data, cached=False) as r:
            elements = {f.parameter for f in r.frames()}
            assert elements - {0}  # some frames are shuffled (9-byte msgpack floats, or 8 / 4-byte elements)
            if isinstance(value, list):
                assert elements <= {0, 9} and r[123][45] == value[123][45] and r[299].to_obj() == value[299]
                assert r.to_obj() == value
            else:
                assert r["a"][123, 45] == matrix[123, 45]
                assert np.array_equal(np.asarray(r["a"]), matrix) and np.array_equal(
                    r["a"][7:250:3, 5:9], matrix[7:250:3, 5:9]
                )
                assert np.array_equal(np.asarray(r["b"]), value["b"])
            r.verify()


def test_bulk_reads_on_many_threads_equal_one_thread():
    np = pytest.importorskip("numpy")
    y, x = np.mgrid[0:700, 0:900]
    smooth = np.sin(x / 50.0) * np.cos(y / 30.0)
    value = {"f": smooth, "i": (smooth * 1000).astype(np.int64), "b": np.arange(300_000, dtype=np.uint8)}
    data = msglc.dumps(value, compression="zstd")
    got = {}
    for threads in (1, 2, 3):
        with msglc.LazyReader(data, cached=False) as r:
            got[threads] = {k: np.asarray(r[k]) for k in value}
            got[threads]["rows"] = r["f"][13:611]
            got[threads]["obj"] = r.to_obj()
            msglc.configure(read_threads=threads)
    msglc.configure(read_threads=2)
    for threads in (1, 2, 3):
        for k in value:
            assert np.array_equal(got[threads][k], value[k])
            assert np.array_equal(got[threads]["obj"][k], value[k])
        assert np.array_equal(got[threads]["rows"], smooth[13:611])


class _Recorded:
    """The C accelerator, recording which thread calls its shuffle functions."""

    def __init__(self, c):
        self.c = c
        self.calls: list[tuple[str, bool]] = []  # (function, on the main thread)

    def __getattr__(self, name):
        function = getattr(self.c, name)
        if name not in ("shuffle", "unshuffle_into", "gather_into", "gather_grid"):
            return function

        def recorded(*args):
            self.calls.append((name, threading.current_thread() is threading.main_thread()))
            return function(*args)

        return recorded


def test_shuffled_frames_are_shuffled_and_unshuffled_on_the_pools_threads(monkeypatch):
    """Writing shuffles each frame inside its compression task, and a bulk read unshuffles
    each frame in the ``read_threads`` task that decompresses it, through the C functions
    (which release the GIL: the threads run together); the pure-Python path writes the same
    bytes and reads the same values."""
    np = pytest.importorskip("numpy")
    assert accel.speedups is not None, "the C accelerator is not built (pip install -e .)"
    y, x = np.mgrid[0:700, 0:900]
    value = {"f": np.sin(x / 50.0) * np.cos(y / 30.0), "i": (x * 7 + y).astype(np.int32)}
    recorded = _Recorded(accel.speedups)
    monkeypatch.setattr(accel, "speedups", recorded)
    data = msglc.dumps(value, compression="zstd")
    shuffles = [main for name, main in recorded.calls if name == "shuffle"]
    # on the compression threads, but the trial of each array's first frame (shuffled or not?)
    assert shuffles.count(False) >= 10 and shuffles.count(True) <= len(value)
    recorded.calls.clear()
    try:
        msglc.configure(read_threads=2)
        with msglc.LazyReader(data, cached=False) as r:
            assert 8 in {f.parameter for f in r.frames()}  # the float64 array stored shuffled
            got = {"f": np.asarray(r["f"])}  # two tasks (rows of tiles), on the pool
            # (each tile unshuffled straight into place)
            unshuffles = [main for name, main in recorded.calls if name == "gather_grid"]
            got["i"] = np.asarray(r["i"])  # one task: read on the calling thread
    finally:
        msglc.configure(read_threads=2)
    assert len(unshuffles) >= 2 and not any(unshuffles)  # in the pool, not on the calling thread
    for k in value:
        assert np.array_equal(got[k], value[k])
    monkeypatch.setattr(accel, "speedups", None)
    assert msglc.dumps(value, compression="zstd") == data
    with msglc.LazyReader(data, cached=False) as r:
        for k in value:
            assert np.array_equal(np.asarray(r[k]), value[k])
            assert np.array_equal(r[k][13:611:5, 3], value[k][13:611:5, 3])
            assert r[k][699, 899] == value[k][699, 899]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, None, "2"])
def test_read_threads_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="read_threads"):
        msglc.configure(read_threads=bad)


def _icon_sets(sets: int, icons: int) -> dict[str, Any]:
    """Documents of several frames each under their names, like a set of icon sets: a read
    walks through one to a small value."""
    rng = random.Random(8)

    def body() -> str:
        return "".join(rng.choice("MLHVCZ0123456789 .-") for _ in range(300))

    return {
        f"set{i}": {"prefix": f"p{i}", "icons": {f"icon{j}": {"body": body(), "w": 24} for j in range(icons)}}
        for i in range(sets)
    }


def test_a_walk_through_big_containers_decompresses_the_value_frame_alone(tmp_path):
    """The key and header of a container of two frames or more, which a walk through it
    checks, lie in a small frame of their own without a dictionary: a read of a value deep in
    it decompresses that value's frame, not also the frame where the container begins. The
    reader keeps such small frames apart, as it keeps TOC frames: many data frames read
    later do not push them out."""
    value = _icon_sets(6, 1000)
    path = tmp_path / "a.mlc"
    msglc.dump(path, value, compression="zstd")
    file = CountingFile(path)
    with msglc.LazyReader(file, cached=False) as r:  # type: ignore[arg-type]
        frames = list(r.frames())
        for name in value:
            key_at = r[name].location().offset - len(msgspec.msgpack.encode(name))
            head = next(f for f in frames if f.plain_offset <= key_at < f.plain_offset + f.plain_size)
            assert head.plain_offset in (key_at, 16), head  # (the first: in the root's head)
            assert head.plain_size <= SMALL_FRAME and head.dictionary == 0, head
        toc_at = 16 + r.info().data_size
        big = [(f.offset, f.offset + f.size) for f in frames if f.plain_offset < toc_at and f.plain_size > SMALL_FRAME]
    with msglc.LazyReader(file, cached=False) as r:  # type: ignore[arg-type]
        file.reads.clear()
        assert r["set2/icons/icon350/body"] == value["set2"]["icons"]["icon350"]["body"]
        touched = [(a, b) for a, b in big if any(at < b and a < at + n for at, n in file.reads)]
        assert len(touched) == 1, touched  # the value's frame alone (and TOC frames)
        src = archive_of(r).src
        key_at = r["set5"].location().offset - 5
        assert bytes(src.read(key_at, 5)) == b"\xa4set5"
        for icon in range(0, 1000, 50):  # more data frames than the reader keeps
            for name in list(value)[:5]:
                assert r[f"{name}/icons/icon{icon}/w"] == 24
        file.reads.clear()
        assert bytes(src.read(key_at, 5)) == b"\xa4set5" and not file.reads  # (still kept)


def test_many_small_frames_kept_take_no_more_memory_than_the_walk_cache(monkeypatch):
    """Frames of at most ``SMALL_FRAME`` bytes are kept with the TOC frames, within
    ``WALK_CACHE`` bytes; each is counted with what its entry costs besides its bytes (the
    bytes object, a tuple, the ordered dict's node). That cost was counted as 128 bytes for
    about 230, so a file of many tiny frames (any writer may make them) held 1.8 times the
    cache's bytes."""
    monkeypatch.setattr(framed_module, "WALK_CACHE", 1 << 18)  # (filled by a few thousand frames)
    n = 5000
    plain = (bytes(range(256)) * 20)[:n]
    out = io.BytesIO()
    writer = FrameWriter(out, 4096, 3)
    writer.write_planned(plain, [(i + 1, 0, -1) for i in range(n)])  # frames of one byte
    writer.end_data()
    writer.close((0, 0))
    section = out.getvalue()
    source = open_section(BufferSource(HEAD + section + TAIL), len(HEAD), len(section))[0]
    tracemalloc.start()
    try:
        for i in range(n):
            assert source.read(len(HEAD) + i, 1)[0] == plain[i]
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    kept = snapshot.filter_traces([tracemalloc.Filter(True, framed_module.__file__)])
    held = sum(stat.size for stat in kept.statistics("filename"))
    assert 0.5 * framed_module.WALK_CACHE < held <= framed_module.WALK_CACHE, held


def test_a_read_of_a_negative_size_is_refused_before_the_file_is_read(tmp_path):
    """A read that ends before the data section (the header's bytes) went to the file as it
    was, a negative size included: refused there, but read all the same."""
    path = tmp_path / "a.mlc"
    msglc.dump(path, list(range(1000)), compression="zstd")
    file = CountingFile(path)
    with msglc.LazyReader(file) as r:  # type: ignore[arg-type]
        src = archive_of(r).src
        file.reads.clear()
        for offset, size in ((2, -10), (-1, 4), (20, -(2**63))):
            with pytest.raises(msglc.TruncatedError):
                src.read(offset, size)
        assert not file.reads


def test_toc_frames_stay_cached_while_data_frames_come_and_go(tmp_path):
    """A reader that is not cached (``cached=False``) still keeps the TOC frames it
    decompressed: reading the values of many containers whose nodes share a TOC frame
    reads that frame from the file once, however many data frames are read between. (Raw
    frames, read in place, are not decompressed at all.)"""
    value: dict[str, list[str]] = {f"k{i}": [f"item {i} {j} " * 3 for j in range(600)] for i in range(60)}
    value["big"] = [f"row {j} " * 4 for j in range(60_000)]
    path = tmp_path / "a.mlc"
    msglc.dump(path, value, compression="zstd")
    with msglc.LazyReader(path) as r:
        toc_at = 16 + len(r.protocol_raw_data())
        toc_frames = [(f.offset, f.offset + f.size) for f in r.frames() if f.plain_offset >= toc_at and f.filter != 2]
        data_frames = sum(f.plain_offset < toc_at for f in r.frames())
    assert data_frames > 40 and len(toc_frames) >= 2
    file = CountingFile(path)
    with msglc.LazyReader(file, cached=False) as r:  # type: ignore[arg-type]
        reads = file.reads
        reads.clear()  # (the open reads the section's end, tables and all)
        for i in range(60):
            assert r[f"k{i}"][555] == value[f"k{i}"][555]
            for j in range(i, 60_000, 2_999):  # 20 data frames between two nodes of a TOC frame
                assert r["big"][j] == value["big"][j]
    assert len(reads) > 60 * 20
    for a, b in toc_frames:
        assert sum(1 for at, n in reads if at < b and a < at + n) <= 1, (a, b)


def test_a_close_on_another_thread_waits_for_a_read_that_holds_a_cached_frame(monkeypatch):
    """A read that has found its frame in the cache uses it (its place in the cache moved)
    before a ``close`` on another thread empties the cache: the read gives its bytes, and
    reads after the close raise ``ValueError``, never a ``KeyError`` from the cache."""
    plain = bytes(range(256)) * 64
    _, src = framed(plain)
    shown = HEAD + plain  # what the source shows before the trailer
    assert src.read(5000, 10) == shown[5000:5010]  # frame 1 decompressed and kept
    assert src.read(9000, 10) == shown[9000:9010]  # (then another: the next read is no slice of the last)
    holder = framed_module.FramedSource._holder  # noqa: SLF001
    closer: list[threading.Thread] = []

    def close_meanwhile(self: FramedSource, i: int) -> Any:
        found = holder(self, i)
        if found is not None and not closer:  # (the lock is held: a close must wait for it)
            closer.append(threading.Thread(target=src.close))
            closer[0].start()
            closer[0].join(0.2)
        return found

    monkeypatch.setattr(framed_module.FramedSource, "_holder", close_meanwhile)
    assert src.read(5000, 10) == shown[5000:5010]
    closer[0].join()
    with pytest.raises(ValueError):
        src.read(5000, 10)


def test_errors_of_a_source_closed_meanwhile_do_not_look_at_its_descriptor(tmp_path):
    """A read refused (out of bounds) or a frame found damaged after another thread closed
    the reader: the error does not ask the closed descriptor whether the file changed (an
    ``OSError``, or another file's answer once the number is reused): the read raises the
    ``ValueError`` of a closed reader, and damage is named as such."""
    path = tmp_path / "a.mlc"
    msglc.dump(path, list(range(1000)), compression="zstd")
    r = msglc.LazyReader(path)
    src = archive_of(r).src
    assert isinstance(src, FramedSource)
    r.close()
    with pytest.raises(ValueError, match="closed"):
        src.read(-1, 4)
    assert isinstance(src.damaged("frame 3 does not decompress"), CorruptedError)
