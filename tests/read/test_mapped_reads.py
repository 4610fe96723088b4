"""Reads of local files from a memory map (``_speedups.File``) and bytes in memory read
directly (``_speedups.Memory``): the same answers as ``pread``, never a process killed by a
file cut short under a reader, and counters that count what is read."""

import mmap
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

import msglc
from msglc.read.part import archive_of
from msglc.util import accel

KEYS = 20_000


def _table(path):
    """A root dict whose "table" is a hash-indexed dict of KEYS str keys."""
    table = {f"k{i}": f"v{i}" for i in range(KEYS)}
    msglc.dump(path, {"table": table, "runs": [{"id": i, "score": i / 7} for i in range(3000)]})
    return table


# -- a file cut short by another program -------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import faulthandler, sys, threading
    import msglc
    from msglc.read.part import archive_of
    from msglc.util import accel

    path, handler = sys.argv[1], sys.argv[2]
    if handler == "faulthandler-before":
        faulthandler.enable()
    reader = msglc.LazyReader(path, cached=False)
    table, runs = reader["table"], reader["runs"]
    assert table["k1"] == "v1" and runs[1]["id"] == 1
    print(archive_of(reader).c_read.mapped if accel.speedups is not None else "pure", flush=True)
    if handler == "faulthandler-after":
        faulthandler.enable()
    sys.stdin.readline()  # the parent cuts the file short meanwhile
    outcomes = {"right": 0, "error": 0}

    def read(keys):
        for i in keys:
            try:
                got = (table[f"k{i}"], runs[i % 3000]["id"])
            except msglc.MsglcError:
                outcomes["error"] += 1
            else:
                assert got == (f"v{i}", i % 3000), got
                outcomes["right"] += 1

    workers = [threading.Thread(target=read, args=(range(t, KEYS, 4),)) for t in range(3)]
    for w in workers:
        w.start()
    read(range(3, KEYS, 4))
    for w in workers:
        w.join()
    print(outcomes["right"], outcomes["error"], flush=True)
    """
).replace("KEYS", str(KEYS))


@pytest.mark.parametrize("handler", ["none", "faulthandler-before", "faulthandler-after"])
def test_a_file_cut_short_under_a_reader_gives_errors_not_sigbus(handler, tmp_path):
    """Another program truncates the file while a reader (in another process, on four threads)
    reads it from its memory map: reads past the new end raise ``MsglcError``; the process
    lives (a SIGBUS would end it with status 135), whether or not faulthandler is enabled
    before or after the reader opened."""
    path = tmp_path / "table.mlc"
    _table(path)
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    child = subprocess.Popen(
        [sys.executable, str(script), str(path), handler],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    mapped = child.stdout.readline().strip()
    os.truncate(path, 4096 + 100)  # the block offsets and most entries are gone
    out, err = child.communicate("go\n", timeout=120)
    assert child.returncode != -signal.SIGBUS and child.returncode != 128 + signal.SIGBUS
    assert child.returncode == 0, err
    assert mapped == ("True" if accel.speedups is not None else "pure")
    right, errors = map(int, out.split())
    assert errors > 0 and right + errors == KEYS


_REPLACED = textwrap.dedent(
    """
    import signal, sys
    import msglc
    from msglc.read.part import archive_of

    first = msglc.LazyReader(sys.argv[1], cached=False)
    assert first["table"]["k1"] == first["table"]["k1"] == "v1"
    signal.signal(signal.SIGBUS, signal.SIG_DFL)  # msglc's handler is no longer the process's
    second = msglc.LazyReader(sys.argv[1], cached=False)
    assert second["table"]["k2"] == second["table"]["k2"] == "v2"
    print(getattr(archive_of(first).c_read, "mapped", None), getattr(archive_of(second).c_read, "mapped", None))
    """
)


def test_a_reader_opened_after_the_sigbus_handler_was_replaced_reads_with_pread(tmp_path):
    """A map is made only while msglc's SIGBUS handler is the process's: once other code
    replaced it, a new reader reads with pread (in another process: the handler is global)."""
    path = tmp_path / "table.mlc"
    _table(path)
    script = tmp_path / "replaced.py"
    script.write_text(_REPLACED)
    run = subprocess.run([sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == (["True", "False"] if accel.speedups is not None else ["None", "None"])


_CUT_MID_PAGE = textwrap.dedent(
    """
    import os, sys
    import msglc
    from msglc.read.part import archive_of
    from msglc.util import accel

    path = sys.argv[1]
    values = [i % 100 + 1 for i in range(200_000)]  # one byte each: zeros still parse as items
    msglc.dump(path, {"l": values, "pad": "x"})
    reader = msglc.LazyReader(path, cached=False)
    items = reader["l"]
    assert items[5] == 6 and items[100_001] == 2
    assert accel.speedups is None or archive_of(reader).c_read.mapped
    os.truncate(path, 4096 * 25 + 100)  # mid-page, in the data: the page's tail reads as zeros
    right = wrong = errors = 0
    for i in range(0, len(values), 7):
        try:
            got = items[i]
        except msglc.MsglcError:
            errors += 1
        else:
            right += got == values[i]
            wrong += got != values[i]
    print(right, wrong, errors)
    """
)


def test_a_file_cut_short_mid_page_never_reads_as_zeros(tmp_path):
    """The bytes between the new end of a truncated file and the end of its page read from a
    map as zeros: a read from the map must not return them (the file was cut, not zeroed),
    but fail as pread does. Items of one byte each, where a zero still parses as an item."""
    _cut_in_a_child(tmp_path, _CUT_MID_PAGE)


def _cut_in_a_child(tmp_path, script_text: str, *args: str) -> None:
    """Run ``script_text`` with the archive's path and ``args`` (it writes an archive, reads
    it, cuts it mid-page and reads on, printing its right, wrong and failed reads) in a child
    process: it must live, read right values before the cut, fail after it, and never read a
    wrong value."""
    script = tmp_path / "cut.py"
    script.write_text(script_text)
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "a.mlc"), *args], capture_output=True, text=True, timeout=120
    )
    assert run.returncode not in (-signal.SIGBUS, 128 + signal.SIGBUS), run.stderr  # killed by SIGBUS
    assert run.returncode == 0, run.stderr
    right, wrong, errors = map(int, run.stdout.split())
    assert wrong == 0 and errors > 0 and right > 0


_CUT_UNDER_SLABS = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    import msglc
    from msglc.read.part import archive_of
    from msglc.util import accel

    path = sys.argv[1]
    a = np.arange(1000 * 1000, dtype=np.float64).reshape(1000, 1000)
    msglc.dump(path, {"a": a})
    reader = msglc.LazyReader(path, cached=False)
    lazy = reader["a"]
    assert np.array_equal(lazy[10:74, 20:84], a[10:74, 20:84])
    assert accel.speedups is None or archive_of(reader).c_read.mapped
    os.truncate(path, 4096 * 600 + 100)  # mid-page, inside the array: row 307 on is gone
    right = wrong = errors = 0
    for i in range(0, 1000 - 64, 13):
        try:
            got = lazy[i : i + 64, 100:164]
        except msglc.MsglcError:
            errors += 1
        else:
            right += bool(np.array_equal(got, a[i : i + 64, 100:164]))
            wrong += not np.array_equal(got, a[i : i + 64, 100:164])
    print(right, wrong, errors)
    """
)


def test_a_file_cut_short_under_slab_reads_from_the_map_gives_errors(tmp_path):
    """Slabs of a plain array are copied from the map a row piece at a time: a file cut short
    by another program (mid-page) gives errors for the slabs past its end, never a SIGBUS nor
    the zeros the rest of the page reads as, and right values before it."""
    _cut_in_a_child(tmp_path, _CUT_UNDER_SLABS)


_CUT_UNDER_ARRAYS = textwrap.dedent(
    """
    import faulthandler, os, signal, sys
    import numpy as np
    import msglc
    from msglc.read.part import archive_of
    from msglc.util import accel

    path, compression, how = sys.argv[1], sys.argv[2], sys.argv[3]
    a = np.random.default_rng(1).random((1500, 1500))
    msglc.dump(path, {"a": a}, compression=None if compression == "none" else compression)
    if how != "kept":
        faulthandler.enable()  # before msglc's first map, as python -X faulthandler and pytest do
    reader = msglc.LazyReader(path, cached=False, counter=None if how == "kept" else msglc.LazyStats())
    lazy = reader["a"]
    assert np.array_equal(lazy[10:74, 20:84], a[10:74, 20:84])
    assert (lazy.tiles is not None) == (compression != "none")
    assert accel.speedups is None or archive_of(reader).file.direct.mapped
    if how == "faulthandler.disable":
        faulthandler.disable()  # puts back the handler it replaced: msglc's is gone
    elif how == "SIG_DFL":
        signal.signal(signal.SIGBUS, signal.SIG_DFL)
    os.truncate(path, os.path.getsize(path) // 2 // 4096 * 4096 + 100)  # mid-page: half the array gone
    right = wrong = errors = 0
    for i in range(0, 1500 - 64, 11):
        for j in (0, 700, 1400):
            try:
                got = lazy[i : i + 64, j : j + 64]
            except msglc.MsglcError:
                errors += 1
            else:
                right += bool(np.array_equal(got, a[i : i + 64, j : j + 64]))
                wrong += not np.array_equal(got, a[i : i + 64, j : j + 64])
    print(right, wrong, errors)
    """
)


def test_a_compressed_file_cut_short_under_a_reader_gives_errors(tmp_path):
    """A compressed archive's frames are copied from the map too: a file cut short by another
    program (mid-page) gives errors for the tiles past its end, never a SIGBUS nor a wrong
    value, and right values before it."""
    _cut_in_a_child(tmp_path, _CUT_UNDER_ARRAYS, "zstd", "kept")


@pytest.mark.parametrize("compression", ["zstd", "none"])
@pytest.mark.parametrize("how", ["faulthandler.disable", "SIG_DFL"])
def test_a_file_cut_after_msglcs_sigbus_handler_was_replaced_gives_errors(how, compression, tmp_path):
    """A read from Python copies from the map only while msglc's SIGBUS handler is the
    process's, checked at each read: once code put another handler in its place after the
    map was made (``faulthandler.disable()`` putting back the default, ``signal.signal``), an
    archive cut short by another program gives errors, not a process killed by SIGBUS: a
    compressed one (its frames: ``FileSource.read``) and a plain one (a slab's rows:
    ``read_grid``). A reader with a counter, which makes all its reads in Python."""
    _cut_in_a_child(tmp_path, _CUT_UNDER_ARRAYS, compression, how)


# -- the same answers from the map as from pread ------------------------------------------------


def test_reads_from_python_come_from_the_map_as_pread_gives_them(tmp_path, monkeypatch):
    """``FileSource.read`` copies reads of ``MAP_READ_MIN`` to ``MAP_READ`` bytes from the
    guarded map (no system call), and makes the others, and whatever the map cannot serve
    (its last page, past the end), with ``pread``: the same bytes either way, and the same
    errors."""
    from msglc import TruncatedError
    from msglc.io import local

    page = 1 << 16
    path = tmp_path / "bytes.bin"
    data = os.urandom(3 * page + 1234)
    path.write_bytes(data)
    preads: list[tuple[int, int]] = []
    real_pread = os.pread

    def pread(fd: int, n: int, at: int) -> bytes:
        preads.append((n, at))
        return real_pread(fd, n, at)

    monkeypatch.setattr(os, "pread", pread)
    source = local.FileSource(os.open(path, os.O_RDONLY))
    try:
        mapped = [(100, page), (page - 1, page + 3), (0, 2 * page)]
        small = [(0, 16), (5, 0), (len(data) - 10, 10), (4095, page - 1)]
        last_page = [(len(data) - page - 10, page)]  # reaches into the map's last page
        for at, n in mapped + small + last_page:
            assert bytes(source.read(at, n)) == data[at : at + n], (at, n)
        expected = small + last_page if accel.speedups is not None else mapped + small + last_page
        assert [(at, n) for n, at in preads] == expected
        assert local.MAP_READ_MIN == page and local.MAP_READ >= 2 * page
        with pytest.raises(TruncatedError):
            source.read(len(data) - page, page + 1)
    finally:
        source.close()
    with pytest.raises(ValueError, match="closed"):
        source.read(0, page)


class _Recording:
    """A ``_speedups.File`` stand-in that records the reads asked of the map."""

    def __init__(self, direct):
        self.direct, self.reads = direct, []

    def read(self, offset, size):
        self.reads.append((offset, size))
        return self.direct.read(offset, size)

    def __getattr__(self, name):
        return getattr(self.direct, name)


def test_bulk_reads_on_the_pool_go_by_pread(tmp_path):
    """A bulk read's frames, read on a pool's threads, use ``pread``, which lets the other
    threads run while it waits (a copy from the map holds the GIL, and the pool is there to
    wait for the disk in parallel): ``to_obj()`` of a compressed document, whose frames
    compress to well under 1 MB, and a large batch of ranges (``fetch_many``)."""
    from msglc.io import local

    path = tmp_path / "doc.mlc"
    doc = [{"i": i, "s": "y" * (i % 40), "f": i / 7} for i in range(100_000)]
    msglc.dump(path, {"d": doc}, compression="zstd")
    data = path.read_bytes()
    with msglc.LazyReader(path, cached=False) as reader:
        source = archive_of(reader).file
        assert isinstance(source, local.FileSource)
        recording = _Recording(source.direct)
        if source.direct is not None:
            source.direct = recording
        assert reader["d"].to_obj() == doc
        step = len(data) // 2 // 64
        ranges = [(at, at + local.MAP_READ_MIN) for at in range(0, 64 * step, step)]
        assert [bytes(b) for b in source.fetch_many(ranges)] == [data[a:b] for a, b in ranges]
        assert recording.reads == []
        assert bytes(source.read(0, local.MAP_READ_MIN)) == data[: local.MAP_READ_MIN]
        if source.direct is not None:
            assert recording.reads == [(0, local.MAP_READ_MIN)]  # a single read keeps the map


def test_mapped_reads_answer_as_pread_does(tmp_path, monkeypatch):
    path = tmp_path / "table.mlc"
    table = _table(path)
    with msglc.LazyReader(path, cached=False) as reader:
        view = reader["table"]
        assert all(view[f"k{i}"] == f"v{i}" for i in range(0, KEYS, 3))
        if accel.speedups is not None:
            assert getattr(archive_of(reader).c_read, "mapped", False)
        with pytest.raises(KeyError):
            view["nope"]
        assert reader["runs"][2999] == {"id": 2999, "score": 2999 / 7}
    with monkeypatch.context() as m:  # the pure-Python path: pread
        m.setattr(accel, "speedups", None)
        with msglc.LazyReader(path, cached=False) as reader:
            assert {k: reader["table"][k] for k in list(table)[::97]} == {k: table[k] for k in list(table)[::97]}


def test_a_reader_opened_before_an_append_reads_on_from_its_map(tmp_path):
    """``append`` in place makes the file longer than the map of a reader opened before it:
    that reader gives the values it knows, or ``ArchiveChangedError`` where the append
    overwrote its TOC (as with pread); a new reader reads the longer file."""
    path = tmp_path / "grow.mlc"
    msglc.dump(path, {"a": {f"k{i}": i for i in range(5000)}})
    with msglc.LazyReader(path, cached=False) as old:
        a = old["a"]
        assert a["k10"] == a["k10"] == 10
        msglc.combine(path, msglc.FileInfo(None, "b", obj={f"j{i}": -i for i in range(5000)}), mode="a")
        with msglc.LazyReader(path, cached=False) as new:
            assert new["b"]["j4999"] == -4999 and new["a"]["k4999"] == 4999
            assert new["b"]["j4998"] == -4998 and new["a"]["k4998"] == 4998
        for i in range(0, 5000, 7):
            try:
                assert a[f"k{i}"] == i
            except msglc.ArchiveChangedError:
                continue


def test_close_while_other_threads_read_from_the_map(tmp_path):
    """Threads that look keys up while another closes the reader get the right value or the
    closed reader's ValueError; the map goes only once no copy from it is under way."""
    path = tmp_path / "table.mlc"
    _table(path)
    for _ in range(5):
        reader = msglc.LazyReader(path, cached=False)
        view = reader["table"]
        wrong: list[object] = []
        started = threading.Barrier(5)

        def look(start, view=view, wrong=wrong, started=started):
            started.wait()
            for i in range(start, KEYS, 4):
                try:
                    if view[f"k{i}"] != f"v{i}":
                        wrong.append(i)
                except ValueError as e:
                    if "closed" not in str(e):
                        wrong.append(e)
                    return

        threads = [threading.Thread(target=look, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        started.wait()
        reader.close()
        for t in threads:
            t.join()
        assert wrong == []
        with pytest.raises(ValueError, match="closed"):
            view["k1"]


def test_a_counter_counts_every_read_of_a_lookup(tmp_path):
    """With a ``LazyStats`` the reads go through pread and are counted: a lookup in a page of
    the index seen before costs one request (its block), without a counter none is made."""
    path = tmp_path / "table.mlc"
    _table(path)
    stats = msglc.LazyStats()
    with msglc.LazyReader(path, cached=False, counter=stats) as reader:
        view = reader["table"]
        assert view["k5"] == "v5"
        before = stats.requests
        assert view["k5"] == "v5"
        assert stats.requests == before + 1
        assert not getattr(archive_of(reader).c_read, "mapped", False)  # counted reads: by pread
    with msglc.LazyReader(path, cached=False) as reader:
        assert reader["table"]["k5"] == reader["table"]["k5"] == "v5"  # (the first makes the index)
        if accel.speedups is not None:
            assert getattr(archive_of(reader).c_read, "mapped", False)


# -- bytes in memory ---------------------------------------------------------------------------


def test_a_memory_map_given_to_a_reader_can_be_closed_after_it(tmp_path):
    """A reader over bytes or a user's ``mmap`` reads them directly in C; once the reader is
    closed, the map is the user's to close (no buffer held)."""
    path = tmp_path / "table.mlc"
    table = _table(path)
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    reader = msglc.LazyReader(mm, cached=False)
    assert all(reader["table"][f"k{i}"] == table[f"k{i}"] for i in range(0, KEYS, 11))
    reader.close()
    mm.close()
    data = path.read_bytes()
    with msglc.LazyReader(data, cached=False) as reader:
        assert reader["table/k19999"] == "v19999"
    with pytest.raises(ValueError, match="closed"):
        reader["table"]["k1"]
