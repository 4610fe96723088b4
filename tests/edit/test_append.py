"""append(): entries added in place, the existing bytes untouched, and a valid archive at every
moment: a process killed at any write, or a write that fails, leaves the old contents readable.
"""

import errno
import itertools
import os
import pathlib
import threading
from types import SimpleNamespace
from typing import Any
from unittest.mock import ANY

import msgpack
import pytest
from archives import RUN1, RUN2, check
from outcomes import answer

import msglc
from msglc import CorruptedError, FileInfo, TruncatedError
from msglc.format.layout import (
    FREE_SPACE_MINOR,
    HEADER_SIZE,
    MINOR,
    TRAILER_SIZE,
    Trailer,
    pack_header,
    unpack_trailer,
)
from msglc.util import accel

BIG = {"x": [float(i) for i in range(20_000)]}


def archive_end(data):
    """Where the archive in ``data`` ends: the header's committed end, else the file's."""
    return int.from_bytes(data[10:16], "little") or len(data)


def trailer_of(path):
    data = pathlib.Path(path).read_bytes()
    end = archive_end(data)
    return unpack_trailer(data[end - TRAILER_SIZE : end], end, data[:HEADER_SIZE])


def test_append_adds_entries_as_combine_would_have(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1")])
    msglc.append(out, [FileInfo(runs / "run2.mlc", "run2")])
    msglc.combine(out, FileInfo(None, "obj", obj={"x": list(range(5000))}), mode="a")
    check(out, {"run1": RUN1, "run2": RUN2, "obj": {"x": list(range(5000))}})
    lst = runs / "list.mlc"
    msglc.combine(lst, [FileInfo(runs / "run1.mlc")])
    for _ in range(3):
        msglc.append(lst, [FileInfo(runs / "run2.mlc"), FileInfo(runs / "run1.mlc")])
    check(lst, [RUN1] + [RUN2, RUN1] * 3)
    with msglc.LazyReader(lst, cached=False) as r:
        assert r["6/energy/2999"] == 2999.0


def test_append_grows_a_dict_past_the_inline_limit(tmp_path):
    small = msglc.dumps({"v": 1})
    out = tmp_path / "many.mlc"
    msglc.combine(out, [FileInfo(small, f"k{i}") for i in range(1000)])
    msglc.append(out, [FileInfo(small, f"x{i}") for i in range(100)])  # now hash-indexed
    msglc.append(out, [FileInfo(small, f"y{i}") for i in range(100)] + [FileInfo(None, "big", obj=list(range(3000)))])
    with msglc.LazyReader(out) as r:
        r.verify()
        assert len(r) == 1201 and r["k999"] == r["x0"] == r["y99"] == {"v": 1} and r["big/2999"] == 2999
        assert list(r)[:2] == ["k0", "k1"] and list(r)[-1] == "big"


def test_append_refusals_change_nothing(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1")])
    before = out.read_bytes()
    with pytest.raises(ValueError, match="already in"):
        msglc.append(out, [FileInfo(runs / "run2.mlc", "run1")])
    with pytest.raises(ValueError, match="named"):
        msglc.append(out, [FileInfo(runs / "run2.mlc")])
    bad = runs / "bad.mlc"
    bad.write_bytes((runs / "run1.mlc").read_bytes()[:-3])
    with pytest.raises(TruncatedError):
        msglc.append(out, [FileInfo(bad, "bad")])
    assert out.read_bytes() == before
    msglc.dump(runs / "scalar.mlc", "just a string")
    with pytest.raises(ValueError, match="dict or a list"):
        msglc.append(runs / "scalar.mlc", [FileInfo(runs / "run2.mlc")])


def test_append_to_small_roots(tmp_path):
    p = tmp_path / "s.mlc"
    msglc.dump(p, {1: "a"})
    msglc.append(p, [FileInfo(None, "x", obj=1)])
    assert msglc.LazyReader(p).to_obj() == {1: "a", "x": 1}
    msglc.dump(p, {})
    msglc.append(p, [])
    assert msglc.LazyReader(p).to_obj() == {}
    msglc.append(tmp_path / "new.mlc", [FileInfo(None, "a", obj=1)])  # a missing archive is created
    assert msglc.LazyReader(tmp_path / "new.mlc").to_obj() == {"a": 1}
    msglc.dump(p, [1.5, 2.5, 3.5])
    damaged = bytearray(p.read_bytes())
    damaged[damaged.index(msgpack.packb(2.5)) + 5] ^= 1
    p.write_bytes(damaged)
    with pytest.raises(CorruptedError, match="nothing was changed"):
        msglc.append(p, [FileInfo(None, obj=4.5)])
    assert p.read_bytes() == damaged


def test_a_small_root_keeps_its_entries_as_they_were_stored(tmp_path):
    """A small root is rewritten whole: its entries are copied as they are encoded, whatever
    the append's own options (numpy_encoder=False would have made an array a list, and a
    complex array impossible to append to)."""
    np = pytest.importorskip("numpy")
    p = tmp_path / "s.mlc"
    stored = {"a": np.array([1, 2, 3], np.int16), "c": np.array([1j]), "t": (1, [2.5])}
    msglc.dump(p, stored)
    data = bytes(msglc.LazyReader(p).protocol_raw_data())
    msglc.append(p, [FileInfo(None, "b", obj=np.array([4, 5]))], numpy_encoder=False)
    with msglc.LazyReader(p) as r:
        assert r["a"].dtype == np.int16 and r["c"].dtype == np.complex128
        assert r["b"] == [4, 5]
        assert bytes(r.protocol_raw_data()).startswith(b"\x84" + data[1:])  # the old entries' bytes, one more
        r.verify()


def test_appending_to_a_matrix_keeps_rows_lazy(tmp_path):
    p = tmp_path / "m.mlc"
    msglc.dump(p, [[float(j) for j in range(2000)] for _ in range(20)], small_obj_optimization_threshold=1024)
    msglc.append(p, [FileInfo(None, obj=[1.0, 2.0])])
    stats = msglc.LazyStats()
    with msglc.LazyReader(p, counter=stats, cached=False) as r:
        r.verify()
        stats.clear()
        assert r["3/7"] == 7.0 and r["20"] == [1.0, 2.0]
        assert stats.bytes < 2000, stats


def test_a_damaged_root_node_leaks_no_descriptor(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1")])
    data = bytearray(out.read_bytes())
    data[-TRAILER - 10] ^= 0xFF  # inside the root node (just before the trailer)
    out.write_bytes(data)
    before = len(list(pathlib.Path("/proc/self/fd").iterdir()))
    for _ in range(3):
        with pytest.raises(msglc.MsglcError):
            msglc.append(out, [FileInfo(runs / "run2.mlc", "run2")])
    assert len(list(pathlib.Path("/proc/self/fd").iterdir())) == before


TRAILER = 64


def test_append_writes_in_place_and_keeps_the_existing_bytes(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", f"r{i}") for i in range(3)])
    before, t = out.read_bytes(), trailer_of(out)
    inode = out.stat().st_ino
    msglc.append(out, [FileInfo(runs / "run2.mlc", "run2"), FileInfo(None, "big", obj=BIG)])
    after = out.read_bytes()
    assert out.stat().st_ino == inode  # not a new file
    assert after[17 : HEADER_SIZE + t.data_len] == before[17 : HEADER_SIZE + t.data_len]  # entries untouched
    assert after[16] == before[16] + 2  # the root's count
    assert after[9] == MINOR  # 1.3 (the new entries cover the old TOC)
    new = trailer_of(out)
    # the archive ends at its trailer, which the header names: the old root's copy follows it
    assert new.data_off + new.data_len == new.toc_off
    assert archive_end(after) == new.toc_off + new.toc_len + TRAILER_SIZE < len(after)
    check(out, {**{f"r{i}": RUN1 for i in range(3)}, "run2": RUN2, "big": BIG})


def test_a_small_append_leaves_free_space_and_says_1_3(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", f"r{i}") for i in range(3)])
    msglc.append(out, [FileInfo(None, "tiny", obj=1)])
    t = trailer_of(out)
    assert out.read_bytes()[9] == MINOR >= FREE_SPACE_MINOR and t.data_off + t.data_len < t.toc_off
    check(out, {**{f"r{i}": RUN1 for i in range(3)}, "tiny": 1})
    msglc.dump(runs / "repacked.mlc", msglc.LazyReader(out))  # repacking drops the free space
    repacked = trailer_of(runs / "repacked.mlc")
    assert (
        repacked.data_off + repacked.data_len == repacked.toc_off and (runs / "repacked.mlc").read_bytes()[9] == MINOR
    )
    check(runs / "repacked.mlc", {**{f"r{i}": RUN1 for i in range(3)}, "tiny": 1})


def test_repeated_appends_keep_the_file_bounded(tmp_path):
    small = msglc.dumps({"v": 1})
    p = tmp_path / "h.mlc"
    msglc.combine(p, [FileInfo(small, f"k{i}") for i in range(2000)])
    sizes = []
    for i in range(30):
        msglc.append(p, [FileInfo(small, f"x{i}")])
        sizes.append(p.stat().st_size)
    fresh = len(msglc.dumps(msglc.LazyReader(p).to_obj()))
    # the free space and the slack after the end are reused: the file stops growing (and never
    # gets shorter: a reader may have it mapped)
    assert sizes == sorted(sizes) and sizes[-1] < 1.02 * sizes[9] and sizes[-1] < 2 * fresh
    with msglc.LazyReader(p) as r:
        r.verify()
        assert len(r) == 2030 and r["x29"] == {"v": 1}


def _at_call(step, effect, setattr_):
    """Make ``effect()`` run instead of the ``step``-th call that changes a file (pwrite,
    fsync, ftruncate, posix_fallocate), each function replaced through ``setattr_(module, name, function)``."""
    calls = itertools.count()
    for name in ("pwrite", "fsync", "ftruncate", "posix_fallocate"):
        real = getattr(os, name)

        def instead(*args, _real=real):
            if next(calls) == step:
                effect()
            return _real(*args)

        setattr_(os, name, instead)


def _dies_at(k, action):
    """Run ``action`` in a child process that is killed (``os._exit``) before its ``k``-th call
    that changes a file; its exit status: 0 if it finished, 9 if it died."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        _at_call(k, lambda: os._exit(9), setattr)
        try:
            action()
        except BaseException:
            os._exit(1)
        os._exit(0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _eio():
    raise OSError(errno.EIO, "Input/output error")


@pytest.fixture(params=[False, True], ids=["default", "durable"])
def appending(runs, request):
    """An archive of two runs, its bytes and contents, the contents after ``add()``, and
    ``add()``, which appends two entries (with ``durable`` as the parameter says)."""
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1"), FileInfo(runs / "run1.mlc", "again")])
    old = {"run1": RUN1, "again": RUN1}

    def add():
        msglc.append(out, [FileInfo(runs / "run2.mlc", "run2"), FileInfo(None, "big", obj=BIG)], durable=request.param)

    return SimpleNamespace(
        out=out,
        original=out.read_bytes(),
        old=old,
        new={**old, "run2": RUN2, "big": BIG},
        add=add,
        durable=request.param,
    )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="kills a forked child")
def test_a_process_killed_at_any_write_leaves_a_readable_archive(appending):
    out, old, new, durable = appending.out, appending.old, appending.new, appending.durable
    ends = set()
    for k in itertools.count():
        out.write_bytes(appending.original)
        status = _dies_at(k, appending.add)
        assert status in (0, 9)
        ends.add(out.read_bytes()[10:16] != bytes(6))
        with msglc.LazyReader(out) as r:
            r.verify()
            got = r.to_obj()
        if status == 0:
            assert got == new
            break
        assert got == old or durable and got == new  # new only when killed at the last flush
        if got == old:
            appending.add()  # a later append finishes the job, reusing what the dead one left
        check(out, new)
        t = trailer_of(out)
        assert archive_end(out.read_bytes()) == t.toc_off + t.toc_len + TRAILER_SIZE
        assert out.stat().st_size >= len(appending.original)
    assert k >= 8 and ends == {False, True}  # killed in each state: as it was, with an end set, after


@pytest.mark.skipif(not hasattr(os, "fork"), reason="kills a forked child")
def test_a_process_killed_at_any_write_leaves_a_paged_root_readable(tmp_path):
    """A list root of more than 1024 spans (a paged node, its pages moved with it in state 2),
    after an earlier append left free space: killed at any write, the old list is read and
    verified, and by a reader opened before the append too; a later append then lands."""
    out = tmp_path / "paged.mlc"
    items: list[Any] = [i if i % 3 else f"s{i}" for i in range(6000)]
    items[2500] = {"k": list(range(30))}
    msglc.dump(out, items, small_obj_optimization_threshold=16)
    msglc.append(out, [FileInfo(None, obj="first")])
    original, old = out.read_bytes(), [*items, "first"]
    new = [*old, "tail", {"z": list(range(300))}]

    def add():
        msglc.append(out, [FileInfo(None, obj="tail"), FileInfo(None, obj={"z": list(range(300))})])

    for k in itertools.count():
        out.write_bytes(original)
        with msglc.LazyReader(out, cached=False) as early:
            assert early[3] == old[3]
            status = _dies_at(k, add)
            assert status in (0, 9)
            for i in (1024, 2500, 4000, len(old) - 1):  # the old values, or the error that says why not
                assert answer(lambda i=i: early[i]) in (("ok", old[i]), ("ArchiveChangedError", ANY))
        with msglc.LazyReader(out) as r:
            r.verify()
            got = r.to_obj()
        if status == 0:
            assert got == new
            break
        assert got == old
        add()
        check(out, new)
    assert k >= 8


def test_a_failed_write_or_flush_rolls_back(appending):
    out, original, old, new, durable = (
        appending.out,
        appending.original,
        appending.old,
        appending.new,
        appending.durable,
    )
    outcomes: list[str] = []
    for step in itertools.count():
        out.write_bytes(original)
        with pytest.MonkeyPatch.context() as monkeypatch:
            _at_call(step, _eio, monkeypatch.setattr)
            try:
                appending.add()
            except OSError as e:
                assert e.errno == errno.EIO
            else:
                break
        data = out.read_bytes()
        assert len(data) >= len(original)  # never shorter: a reader may have the file mapped
        with msglc.LazyReader(out) as r:
            r.verify()
            got = r.to_obj()
        if got == new:  # only a failed final flush (durable): the append had landed
            assert durable and outcomes and outcomes[-1] != "as it was"
            outcomes.append("landed")
        else:
            assert got == old
            outcomes.append("as it was" if data == original else "TOC moved")
            # the old contents with the TOC moved past them: the header names where they end
            assert data == original or data[9] == MINOR and data[10:16] != bytes(6)
    check(out, new)
    assert {"as it was", "TOC moved"} <= set(outcomes) and ("landed" in outcomes) == durable


def test_an_input_found_damaged_while_copying_changes_no_contents(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1")])
    damaged = bytearray((runs / "run1.mlc").read_bytes())
    damaged[100] ^= 0x01  # inside the data: only the data checksum notices
    with pytest.raises(CorruptedError, match="keeps its old contents"):
        msglc.append(out, [FileInfo(bytes(damaged), "bad")])
    check(out, {"run1": RUN1})


def test_a_root_header_too_short_for_the_count_is_rewritten_once(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", f"r{i}") for i in range(15)])  # a fixmap: at most 15
    inode = out.stat().st_ino
    msglc.append(out, [FileInfo(runs / "run2.mlc", "r15")])
    assert out.stat().st_ino != inode and out.read_bytes()[16] == 0xDF  # rewritten, with a map32 header
    inode = out.stat().st_ino
    msglc.append(out, [FileInfo(runs / "run2.mlc", "r16")])
    assert out.stat().st_ino == inode  # and from then on in place
    check(out, {**{f"r{i}": RUN1 for i in range(15)}, "r15": RUN2, "r16": RUN2})


def test_concurrent_appends_all_land(runs):
    out = runs / "all.mlc"
    msglc.combine(out, [FileInfo(runs / "run1.mlc", "run1")])
    errors = []

    def add(who):
        try:
            for i in range(6):
                msglc.append(
                    out,
                    [FileInfo(runs / "run2.mlc", f"{who}{i}")]
                    + ([FileInfo(None, f"{who}big{i}", obj=BIG)] if i == 2 else []),
                )
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=add, args=(who,)) for who in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    expected = {"run1": RUN1} | {f"{w}{i}": RUN2 for w in "ab" for i in range(6)} | {f"{w}big2": BIG for w in "ab"}
    with msglc.LazyReader(out) as r:
        r.verify()
        assert r.to_obj() == expected


def test_appends_racing_to_create_an_archive_all_land(tmp_path):
    out = tmp_path / "new.mlc"
    start = threading.Barrier(3)
    errors = []

    def add(who):
        try:
            start.wait()
            msglc.append(out, [FileInfo(None, who, obj={"who": who, "x": list(range(3000))})])
        except BaseException as e:
            errors.append(e)

    for _ in range(5):
        out.unlink(missing_ok=True)
        threads = [threading.Thread(target=add, args=(who,)) for who in "abc"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        with msglc.LazyReader(out) as r:
            assert sorted(r) == ["a", "b", "c"]
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


def test_readers_stop_where_the_header_says(tmp_path):
    data = msglc.dumps({"a": list(range(1000))}, small_obj_optimization_threshold=256)
    left = bytearray(data + b"left by a killed append" * 10)
    left[10:16] = len(data).to_bytes(6, "little")
    p = tmp_path / "left.mlc"
    p.write_bytes(left)
    for source in (bytes(left), p):
        with msglc.LazyReader(source) as r:
            r.verify()
            assert r["a/999"] == 999 and r.raw_data() == bytes(left[: len(data)])
    for end, error in ((len(left) + 1, TruncatedError), (40, CorruptedError), (len(data) - 7, msglc.MsglcError)):
        left[10:16] = end.to_bytes(6, "little")
        with pytest.raises(error):
            msglc.LazyReader(bytes(left))


def test_free_space_before_the_toc_is_format_1_2(tmp_path):
    obj = {"a": list(range(1000))}
    data = msglc.dumps(obj, small_obj_optimization_threshold=256)
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), data[:HEADER_SIZE])
    gap = b"\0" * 100
    moved = Trailer(*(t.toc_off + len(gap) if f == "toc_off" else getattr(t, f) for f in Trailer.__struct_fields__))
    body = data[HEADER_SIZE : t.toc_off] + gap + data[t.toc_off : -TRAILER_SIZE]
    for minor, ok in ((1, False), (FREE_SPACE_MINOR, True)):
        head = pack_header(minor)
        archive = head + body + moved.pack(head)
        if ok:
            assert msglc.LazyReader(archive).to_obj() == obj
        else:
            with pytest.raises(CorruptedError, match="tile"):
                msglc.LazyReader(archive)
    assert msgpack.unpackb(msglc.LazyReader(archive).protocol_raw_data(), strict_map_key=False) == obj


def test_append_to_a_remote_archive_rewrites_the_object():
    """An object cannot change in place: append downloads it, appends to a local copy and
    uploads the result whole (a first append creates it); a failed one leaves it as it was."""
    fsspec = pytest.importorskip("fsspec")
    url = "memory://msglc-test/appended.mlc"
    msglc.append(url, [FileInfo(obj=1, name="x")])
    msglc.append(url, [FileInfo(obj=[2, 3], name="y")])
    with msglc.LazyReader(url) as r:
        assert r.to_obj() == {"x": 1, "y": [2, 3]}
    before = fsspec.filesystem("memory").cat_file("/msglc-test/appended.mlc")
    with pytest.raises(ValueError):
        msglc.append(url, [FileInfo(obj=4)])  # unnamed into a dict: refused
    assert fsspec.filesystem("memory").cat_file("/msglc-test/appended.mlc") == before


@pytest.mark.parametrize("pure", [False, True])
def test_append_to_a_hash_indexed_root_of_either_index_kind(tmp_path, monkeypatch, pure):
    """A root dict with a block index (node type 6) or an entry index (type 3, written before
    1.3: the golden file) takes new entries; its new index is a block index either way."""
    if pure:
        monkeypatch.setattr(accel, "speedups", None)
    golden = pathlib.Path(__file__).parents[1] / "golden" / "1.1" / "hash-dict.mlc"
    block = tmp_path / "block.mlc"
    msglc.dump(block, {f"key-{i}": i * i for i in range(1200)}, small_obj_optimization_threshold=64)
    for source in (golden, block):
        out = tmp_path / f"appended-{source.name}"
        out.write_bytes(source.read_bytes())
        msglc.append(out, [FileInfo(None, f"new{i}", obj=[i]) for i in range(30)], small_obj_optimization_threshold=64)
        with msglc.LazyReader(out, cached=False) as r:
            r.verify()
            assert r["key-1199"] == 1199 * 1199 and r["new29"] == [29] and len(r) == 1230
            assert [info.kind for _, _, info in r.nodes(max_depth=0)] == ["hash-indexed dict"]
            with pytest.raises(KeyError):
                r["new30"]


def test_append_to_a_block_indexed_root_does_not_read_its_large_values(tmp_path):
    """The index keeps no per-entry hashes: append reads the entries again, a span at a time,
    and never the values with nodes of their own."""
    import tracemalloc

    doc: dict[str, object] = {f"k{i:05d}": i for i in range(3000)}
    doc["big"] = list(range(2_000_000))  # about 10 MB
    out = tmp_path / "a.mlc"
    msglc.dump(out, doc)
    tracemalloc.start()
    try:
        msglc.append(out, [FileInfo(None, "new", obj=[1])])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, peak
    with msglc.LazyReader(out) as r:
        r.verify()
        assert r["new"] == [1] and r["k02999"] == 2999 and r["big"][1_999_999] == 1_999_999


_MAPPED_READER = """
import mmap, sys
import msglc
from msglc import FileInfo, MsglcError

path = sys.argv[1]
msglc.dump(path, {f"k{i}": i for i in range(20_000)})
for name in ("a", "b"):  # free space left before the TOC, reused by the appends below
    msglc.append(path, [FileInfo(None, name, obj=1)])
readers = []
for step in range(12):
    with open(path, "rb") as f:
        readers.append(msglc.LazyReader(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), cached=False))
    msglc.append(path, [FileInfo(None, f"x{step}", obj=[step] * (1 + 3000 * (step % 3)))])
    for r in readers:  # each read gives the value or says the file changed: never a signal
        for key in ("k0", "k19999", "a"):
            try:
                assert r[key] == (1 if key == "a" else int(key[1:]))
            except MsglcError as e:
                assert isinstance(e, msglc.ArchiveChangedError), e
print("ok")
"""


def test_readers_over_a_memory_map_survive_appends(tmp_path):
    """An append that reuses free space never makes the file shorter: a mapped reader read
    past the new end would be killed by SIGBUS (in a child process, so the test can see it)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _MAPPED_READER, str(tmp_path / "m.mlc")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])


class _NearlyFullDisk:
    """A disk with ``free`` bytes left past a file's first ``size`` bytes, in 4 KB blocks:
    writes into blocks not yet allocated (holes included) use them up, then fail with ENOSPC;
    ``posix_fallocate`` allocates its whole range or nothing; ``ftruncate`` frees blocks."""

    BLOCK = 4096

    def __init__(self, monkeypatch, size, free):
        self.allocated: set[int] = set()  # block numbers
        self.blocks_left, self.first = free // self.BLOCK, -(-size // self.BLOCK)
        pwrite, ftruncate = os.pwrite, os.ftruncate

        def alloc(lo, hi):
            new = {b for b in range(max(self.first, lo // self.BLOCK), -(-hi // self.BLOCK))} - self.allocated
            if len(new) > self.blocks_left:
                raise OSError(errno.ENOSPC, "No space left on device")
            self.allocated |= new
            self.blocks_left -= len(new)

        def write(fd, data, offset):
            alloc(offset, offset + len(data))
            return pwrite(fd, data, offset)

        def truncate(fd, length):
            freed = {b for b in self.allocated if b * self.BLOCK >= length}
            self.allocated -= freed
            self.blocks_left += len(freed)
            return ftruncate(fd, length)

        def fallocate(fd, offset, length):
            alloc(offset, offset + length)
            if os.fstat(fd).st_size < offset + length:
                ftruncate(fd, offset + length)

        monkeypatch.setattr(os, "pwrite", write)
        monkeypatch.setattr(os, "ftruncate", truncate)
        monkeypatch.setattr(os, "posix_fallocate", fallocate)


def test_a_full_disk_leaves_the_file_as_it_was(appending, monkeypatch):
    """The space the append needs is reserved before anything is written: a disk with room
    for the moved TOC but not for the new entries fails the append with the file byte for
    byte (and in length) as it was, not grown by a TOC that then stays."""
    out = appending.out
    _NearlyFullDisk(monkeypatch, out.stat().st_size, free=48 * 1024)  # the TOC fits, the entries do not
    with pytest.raises(OSError) as raised:
        appending.add()
    assert raised.value.errno == errno.ENOSPC
    assert out.read_bytes() == appending.original
    check(out, appending.old)


def test_an_append_through_a_file_object_never_shortens_it(tmp_path):
    """A file object's archive rewritten shorter (a small root is rewritten whole) keeps the
    file's length, as an append in place does: the header names where the archive ends."""
    small = bytearray(msglc.dumps({"a": 1}))
    small[10:16] = len(small).to_bytes(6, "little")  # followed by slack, as an append leaves it
    p = tmp_path / "f.mlc"
    p.write_bytes(small + b"\0" * 4000)
    with open(p, "r+b") as f:
        msglc.append(f, [FileInfo(None, "b", obj=2)])
        end = f.tell()
    data = p.read_bytes()
    assert len(data) == len(small) + 4000 and archive_end(data) == end < len(data)
    check(p, {"a": 1, "b": 2})
