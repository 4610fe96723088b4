"""Regressions from the reliability audit: readers over file objects, opening while another
process appends, stale bytes after an archive, temporary files of killed writes, outputs that
are inputs, and the small API and CLI holes."""

import os
import subprocess
import sys
import threading
import time

import pytest
from cli_runner import run_msglc

import msglc
from msglc import FileInfo, MsglcError
from msglc.format.layout import TRAILER_SIZE
from msglc.io.local import FileSource


def test_a_reader_over_a_file_object_keeps_reading_its_own_file(tmp_path):
    """The caller may close its file object; the descriptor number it had is then reused by
    the next open(), and the reader must not read that other file."""
    mine, other = tmp_path / "mine.mlc", tmp_path / "other.mlc"
    msglc.dump(mine, {"run": "A" * 100})
    msglc.dump(other, {"run": "B" * 100})
    f = open(mine, "rb")  # noqa: SIM115 - closed below, before the reader is used
    reader = msglc.LazyReader(f)
    f.close()
    with open(other, "rb"), open(other, "rb"):  # take the freed descriptor numbers
        assert reader["run"] == "A" * 100
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        reader["run"]


def test_a_reader_closes_the_descriptor_it_owns(tmp_path):
    path = tmp_path / "a.mlc"
    msglc.dump(path, [1, 2, 3])
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    with open(path, "rb") as f:
        for _ in range(50):
            msglc.LazyReader(f).close()
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.skipif(not hasattr(os, "preadv"), reason="FileSource.read_into reads by preadv")
def test_a_bulk_read_racing_a_close_raises_valueerror_with_the_descriptor_reused(tmp_path, monkeypatch):
    """A whole-array read (``read_into``) on one thread while another closes the reader and
    its descriptor number goes to a shorter file at once: the read raises ``ValueError``
    (docs/api.md), not the ``ArchiveChangedError`` of a file that ended early."""
    np = pytest.importorskip("numpy")
    path, empty = tmp_path / "a.mlc", tmp_path / "empty"
    empty.write_bytes(b"")
    msglc.dump(path, {"a": np.arange(100_000, dtype=np.float64)}, small_obj_optimization_threshold=64)
    reader = msglc.LazyReader(path)
    lazy = reader["a"]
    source = reader._a.file  # noqa: SLF001
    assert isinstance(source, FileSource)
    fd = source.fd
    real = os.preadv
    other = os.open(empty, os.O_RDONLY)

    def preadv(f, buffers, offset):
        monkeypatch.setattr(os, "preadv", real)
        closer = threading.Thread(target=reader.close)
        closer.start()
        closer.join()
        os.dup2(other, fd)  # the next open() takes the number: another, shorter file
        return real(f, buffers, offset)

    monkeypatch.setattr(os, "preadv", preadv)
    try:
        with pytest.raises(ValueError, match="closed"):
            np.asarray(lazy)
    finally:
        os.close(other)
        os.close(fd)


# ---- opening while another process appends -------------------------------------------------------


def _append_during_first_trailer_read(monkeypatch, path, add):
    """Make ``add()`` run (once) right before a reader reads the trailer it found: the reader
    then holds a header and a size from before the append and reads after it."""
    real_pread = os.pread
    state = {"done": False}

    def pread(fd, size, offset):
        if not state["done"] and size == TRAILER_SIZE and offset == os.fstat(fd).st_size - TRAILER_SIZE:
            state["done"] = True
            add()
        return real_pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", pread)


def test_an_open_that_meets_an_append_sees_one_consistent_state(tmp_path, monkeypatch):
    path = tmp_path / "week.mlc"
    msglc.combine(path, [FileInfo(None, "mon", obj={"x": list(range(3000))})], small_obj_optimization_threshold=256)
    monkeypatch.setattr(os, "pread", os.pread)  # restored at the end
    _append_during_first_trailer_read(
        monkeypatch, path, lambda: msglc.append(path, [FileInfo(None, "tue", obj={"x": [1] * 3000})])
    )
    with msglc.LazyReader(path) as r:
        assert set(r) in ({"mon"}, {"mon", "tue"})
        assert r["mon/x/2999"] == 2999


def _appender(path, count):
    """A separate process that appends ``count`` entries one by one."""
    code = (
        "import sys, msglc\n"
        "path, n = sys.argv[1], int(sys.argv[2])\n"
        "for i in range(n):\n"
        "    msglc.append(path, [msglc.FileInfo(None, f'k{i}', obj={'v': list(range(i % 50 * 20))})])\n"
    )
    return subprocess.Popen([sys.executable, "-c", code, str(path), str(count)])


def test_readers_opening_during_300_appends_see_no_errors(tmp_path):
    """Opening never fails on a file that another process is appending to; reads after the
    open either see the state opened or, once an append has overwritten the TOC that state
    had, raise ``ArchiveChangedError`` (never ``CorruptedError``)."""
    path = tmp_path / "log.mlc"
    msglc.combine(path, [FileInfo(None, "start", obj={"v": []})], small_obj_optimization_threshold=64)
    child = _appender(path, 300)
    opens, open_errors, changed = 0, [], 0
    deadline = time.monotonic() + 120
    while child.poll() is None and time.monotonic() < deadline:
        try:
            r = msglc.LazyReader(path, cached=False)
        except MsglcError as e:
            open_errors.append(e)
            continue
        opens += 1
        with r:
            keys = list(r)
            try:
                assert r["start"] == {"v": []}
                k = keys[-1]
                assert k == "start" or r[k]["v"] == list(range(int(k[1:]) % 50 * 20))
            except msglc.ArchiveChangedError:
                changed += 1
    assert child.wait(60) == 0
    assert opens > 10 and open_errors == []
    assert changed < opens
    with msglc.LazyReader(path) as r:
        assert len(r) == 301
        r.verify()


# ---- bytes after an archive ------------------------------------------------------------------------


def test_stale_bytes_after_an_archive_are_named_as_such():
    data = msglc.dumps({"a": list(range(1000))}, small_obj_optimization_threshold=64)
    for extra in (bytes(10), bytes(200), data[:100]):
        with pytest.raises(msglc.CorruptedError, match=rf"ends at offset {len(data)} .* {len(extra)} bytes follow it"):
            msglc.LazyReader(data + extra)
    with pytest.raises(msglc.TruncatedError, match="truncated"):
        msglc.LazyReader(data[:-1])


# ---- temporary files of killed writes --------------------------------------------------------------


def _siblings(path):
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="kills forked children")
def test_killed_writes_leave_no_temporary_file_past_the_next_write(tmp_path):
    target = tmp_path / "big.mlc"
    obj = {"x": [float(i) for i in range(2_000_000)]}  # about 18 MB: takes a while to write
    writers = [
        lambda: msglc.dump(target, obj),
        lambda: msglc.combine(target, [FileInfo(None, "a", obj=obj)]),
        lambda: _lazy_write(target, obj),
    ]
    for k, write in enumerate(writers * 2):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                write()
            finally:
                os._exit(0)
        time.sleep(0.05 + 0.03 * k)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    msglc.dump(target, {"ok": True})
    assert _siblings(target) == []
    with msglc.LazyReader(target) as r:
        assert r["ok"] is True


def _lazy_write(target, obj):
    with msglc.LazyWriter(target) as w:
        w.write({"x": iter(obj["x"])})


def test_the_next_write_removes_a_dead_writers_temporary_file_but_not_a_live_ones(tmp_path, monkeypatch):
    """Where writes go through named temporary files (no O_TMPFILE: macOS, NFS), each such
    write removes the ones of its target whose writer died."""
    fcntl = pytest.importorskip("fcntl")
    monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    target = tmp_path / "a.mlc"
    dead = tmp_path / ".a.mlc.0123abcd.tmp"  # what a writer killed before O_TMPFILE or on another OS leaves
    live = tmp_path / ".a.mlc.89abcdef.tmp"
    other = tmp_path / ".b.mlc.0123abcd.tmp"  # another target's: not ours to remove
    for p in (dead, live, other):
        p.write_bytes(b"partial")
    with open(live, "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # a writer still at work
        msglc.dump(target, [1, 2, 3])
        assert _siblings(target) == [live.name, other.name]
    msglc.dump(target, [4])
    assert _siblings(target) == [other.name]


@pytest.mark.parametrize("unnamed", [True, False], ids=["O_TMPFILE", "named"])
def test_atomic_writes_with_and_without_unnamed_files(tmp_path, monkeypatch, unnamed):
    if not unnamed:
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)  # as on macOS, Windows, or NFS
    target = tmp_path / "a.mlc"
    msglc.dump(target, [1])
    os.chmod(target, 0o640)
    msglc.dump(target, [2])  # replaced, mode kept
    assert os.stat(target).st_mode & 0o777 == 0o640
    with pytest.raises(TypeError):
        msglc.dump(target, [object()])
    msglc.combine(tmp_path / "new.mlc", [FileInfo(target, "a")], mode="a")  # created (no replace)
    assert _siblings(target) == ["new.mlc"]
    with msglc.LazyReader(target) as r, msglc.LazyReader(tmp_path / "new.mlc") as n:
        assert r.read() == [2] and n["a"] == [2]


# ---- outputs that are inputs ------------------------------------------------------------------------


def test_combine_and_append_refuse_an_output_that_is_an_input(tmp_path):
    x = tmp_path / "x.mlc"
    msglc.dump(x, {"a": list(range(3000))}, small_obj_optimization_threshold=64)
    link = tmp_path / "link.mlc"
    link.symlink_to(x)
    before = x.read_bytes()
    for out, source in ((x, x), (x, link), (link, x)):
        with pytest.raises(ValueError, match="is the output .* itself"):
            msglc.combine(out, [FileInfo(source, "a")])
    with msglc.LazyReader(x) as held, pytest.raises(ValueError, match="itself"):
        msglc.combine(x, [FileInfo(held, "a")])
    week = tmp_path / "week.mlc"
    msglc.combine(week, [FileInfo(x, "mon")])
    week_before = week.read_bytes()
    with pytest.raises(ValueError, match="itself"):
        msglc.append(week, [FileInfo(week, "again")])
    assert x.read_bytes() == before and week.read_bytes() == week_before


def test_cli_combine_refuses_its_own_input(tmp_path):
    x = tmp_path / "x.mlc"
    msglc.dump(x, {"a": 1})
    before = x.read_bytes()
    code, _, err = run_msglc("combine", x, x, "--name", "a")
    assert code == 1 and "itself" in err
    assert x.read_bytes() == before


# ---- small holes ------------------------------------------------------------------------------------


def test_combine_writes_to_a_binary_file_object(tmp_path):
    import io

    out = io.BytesIO()
    msglc.combine(out, [FileInfo(msglc.dumps([1, 2]), "a"), FileInfo(None, "b", obj={"c": 3})])
    with msglc.LazyReader(out.getvalue()) as r:
        assert r.to_obj() == {"a": [1, 2], "b": {"c": 3}}
    with open(tmp_path / "t.txt", "w") as text, pytest.raises(TypeError, match="text file"):
        msglc.combine(text, [FileInfo(msglc.dumps(1), "a")])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="target must be a path or a writable binary file, not int"):
        msglc.combine(3, [FileInfo(msglc.dumps(1), "a")])  # type: ignore[arg-type]


@pytest.mark.parametrize("root", [[1, 2, 3], 7, "s", list(range(5000))])
def test_dict_methods_on_a_root_that_is_not_a_dict_say_so(root):
    with msglc.LazyReader(msglc.dumps(root, small_obj_optimization_threshold=64)) as r:
        for call in (lambda: r.get(0), r.keys, r.values, r.items):
            with pytest.raises(
                TypeError, match=r"needs an archive whose root is a dict; this one's root is a (list|int|str)"
            ):
                call()


@pytest.mark.parametrize(
    "args", [["ls", "--limit", "-5"], ["ls", "--limit", "0"], ["tree", "--depth", "-1"], ["ls", "--limit", "x"]]
)
def test_cli_refuses_negative_counts(tmp_path, args):
    x = tmp_path / "x.mlc"
    msglc.dump(x, {"a": 1})
    code, _, err = run_msglc(args[0], x, *args[1:])
    assert code == 2 and "expected" in err


# ---- from the review of the above -------------------------------------------------------------------


def test_dump_to_a_bytes_path(tmp_path):
    (tmp_path / "other").write_bytes(b"x")  # a directory with entries
    target = os.fsencode(tmp_path / "a.mlc")
    msglc.dump(target, {"a": 1})
    msglc.dump(target, {"a": 2})
    with msglc.LazyReader(os.fsdecode(target)) as r:  # bytes given to a reader are the archive itself
        assert r["a"] == 2


def test_combine_into_a_file_object_open_on_an_input_is_refused(tmp_path):
    p = tmp_path / "p.mlc"
    msglc.dump(p, {"x": list(range(2000))}, small_obj_optimization_threshold=64)
    before = p.read_bytes()
    with open(p, "r+b") as out, pytest.raises(ValueError, match="itself"):
        msglc.combine(out, [FileInfo(p, "a"), FileInfo(None, "b", obj={"x": 1})])
    assert p.read_bytes() == before


def test_a_reader_dropped_without_close_gives_its_descriptor_back(tmp_path):
    import gc

    path = tmp_path / "a.mlc"
    msglc.dump(path, {"k": [1, 2]})
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("counts descriptors in /proc")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with open(path, "rb") as f:
            assert msglc.LazyReader(f)["k"] == [1, 2]
        assert msglc.LazyReader(path)["k"] == [1, 2]
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == before


def test_writes_work_where_the_file_system_has_no_locks(tmp_path, monkeypatch):
    import errno

    fcntl = pytest.importorskip("fcntl")

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    target = tmp_path / "a.mlc"
    (tmp_path / ".a.mlc.0123abcd.tmp").write_bytes(b"maybe a live writer's")
    msglc.dump(target, [1])
    msglc.dump(target, [2])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".a.mlc.0123abcd.tmp", "a.mlc"]  # nothing removed blind


def test_a_trailer_magic_near_the_start_of_the_scanned_tail_is_no_crash():
    from msglc.format.layout import END_MAGIC

    data = bytearray(200)
    data[:16] = msglc.dumps({"a": 1})[:16]
    data[20:28] = END_MAGIC
    with pytest.raises(msglc.TruncatedError):
        msglc.LazyReader(bytes(data))
    with pytest.raises(msglc.TruncatedError):
        msglc.LazyReader(bytes(data[:16]) + END_MAGIC * 100_000 + b"\0")  # looks at 64 of them, not all


def test_str_arrays_with_impossible_code_points_are_corrupted_not_a_crash():
    np = pytest.importorskip("numpy")
    d = bytearray(
        msglc.dumps(
            {"u": np.array(["a"] * 400, dtype="<U2"), "small": np.array(["a"], dtype="<U1")},
            small_obj_optimization_threshold=64,
        )
    )
    at = bytes(d).index("a".encode("utf-32-le"))
    d[at : at + 4] = (0x08047F00).to_bytes(4, "little")
    with msglc.LazyReader(bytes(d)) as r:
        for read in (lambda: r["u"][0], lambda: r["u"][:3], lambda: np.asarray(r["u"]), r.to_obj):
            with pytest.raises(msglc.CorruptedError, match="code points"):
                read()


# ---- issue 29, lower items: read-only targets --------------------------------------------------------
# The rule is the target's mode bits, whoever runs the tests: root may open a 0444 file for
# writing, yet every writer must refuse it as open(path, "wb") refuses it for anyone else.


def _protected(path, obj):
    msglc.dump(path, obj, small_obj_optimization_threshold=64)
    os.chmod(path, 0o444)
    return path.read_bytes()


def _lazy_writer(target, value):
    with msglc.LazyWriter(target) as w:
        w.write(value)


def _copy(target, source, part=None, **options):
    with msglc.LazyReader(source) as r:
        msglc.dump(target, r if part is None else r[part], **options)


WRITERS = {
    "dump": lambda t, src: msglc.dump(t, {"new": [1, 2]}),
    "dump streamed": lambda t, src: msglc.dump(t, {"new": iter([1, 2])}),
    "dump of a reader": lambda t, src: _copy(t, src),
    "dump of a part": lambda t, src: _copy(t, src, "a"),
    "dump of a reader, rewritten": lambda t, src: _copy(t, src, small_obj_optimization_threshold=8),
    "LazyWriter": lambda t, src: _lazy_writer(t, [iter([1, 2])]),
    "combine": lambda t, src: msglc.combine(t, [FileInfo(src, "s")]),
    "combine mode a": lambda t, src: msglc.combine(t, [FileInfo(src, "s")], mode="a"),
    "append": lambda t, src: msglc.append(t, [FileInfo(src, "s")]),
    "concat": lambda t, src: msglc.concat(t, [msglc.dumps([1, 2]), msglc.dumps([3])]),
    "file:// URL": lambda t, src: msglc.dump(f"file://{t}", [1]),
}


@pytest.mark.parametrize("root", ["with a TOC node", "small"])
@pytest.mark.parametrize("write", list(WRITERS.values()), ids=list(WRITERS))
def test_every_writer_refuses_a_read_only_target_and_changes_nothing(tmp_path, write, root):
    src = tmp_path / "src.mlc"
    msglc.dump(src, {"a": list(range(500))}, small_obj_optimization_threshold=64)
    target = tmp_path / "result.mlc"
    before = _protected(target, {"kept": list(range(400))} if root == "with a TOC node" else {"kept": 1})
    listing = sorted(os.listdir(tmp_path))
    with pytest.raises(PermissionError, match="read-only file, mode -r--r--r--") as e:
        write(target, src)
    assert e.value.errno == 13 and os.path.samefile(e.value.filename, target)
    assert target.read_bytes() == before and os.stat(target).st_mode & 0o777 == 0o444
    assert sorted(os.listdir(tmp_path)) == listing  # no temporary file left behind


def test_a_read_only_target_behind_a_symlink_is_refused_and_a_writable_one_replaced(tmp_path):
    target = tmp_path / "run42.mlc"
    before = _protected(target, [1, 2, 3])
    link = tmp_path / "latest.mlc"
    link.symlink_to(target)
    with pytest.raises(PermissionError) as e:
        msglc.dump(link, [4])
    assert e.value.filename == str(target) and target.read_bytes() == before and link.is_symlink()
    os.chmod(target, 0o644)  # one write bit is enough: the file is not protected
    msglc.dump(link, [4])
    with msglc.LazyReader(target) as r:
        assert r.read() == [4] and os.stat(target).st_mode & 0o777 == 0o644


def test_a_target_made_read_only_during_a_write_is_not_replaced(tmp_path):
    target = tmp_path / "a.mlc"
    msglc.dump(target, [0])
    before = target.read_bytes()

    def rows():
        yield 1
        os.chmod(target, 0o444)  # protected by its owner while the new archive is written
        yield 2

    with pytest.raises(PermissionError, match="read-only"):
        msglc.dump(target, {"rows": rows()})
    assert target.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["a.mlc"]


@pytest.mark.parametrize(
    "command",
    [
        "convert in.json out.mlc",
        "convert in.jsonl out.mlc",
        "convert in.mlc out.mlc",
        "convert in.mlc out.json",
        "convert in.mlc out.jsonl",
        "convert in.mlc out.msgpack",
        "combine out.mlc in.mlc",
    ],
)
def test_cli_refuses_a_read_only_output(tmp_path, command):
    msglc.dump(tmp_path / "in.mlc", [{"a": 1}, {"b": 2}])
    (tmp_path / "in.json").write_text('{"a": 1}')
    (tmp_path / "in.jsonl").write_text('{"a": 1}\n{"b": 2}\n')
    out = tmp_path / command.split()[1 if command.startswith("combine") else 2]
    out.write_bytes(b"a finished result")
    os.chmod(out, 0o444)
    args = [str(tmp_path / a) if "." in a else a for a in command.split()]
    code, _, err = run_msglc(*args)
    assert code == 1 and len(err.splitlines()) == 1
    assert "Permission denied (read-only file" in err and str(out) in err
    assert out.read_bytes() == b"a finished result" and os.stat(out).st_mode & 0o777 == 0o444


# ---- issue 29, lower items: dumps of a reader --------------------------------------------------------


def _dumped(tmp_path, source, **options):
    path = tmp_path / "dumped.mlc"
    msglc.dump(path, source, **options)
    return path.read_bytes()


@pytest.mark.parametrize(
    "options",
    [{}, {"small_obj_optimization_threshold": 64}, {"small_obj_optimization_threshold": 256}],
    ids=["default threshold: rewritten", "copied", "other threshold: rewritten"],
)
@pytest.mark.parametrize("compression", [None, "zstd"])
def test_dumps_of_a_reader_or_a_part_gives_the_bytes_dump_writes(tmp_path, compression, options):
    if compression:
        pytest.importorskip("zstandard")
    doc = {"runs": [{"id": i, "energy": [i * 0.5] * 50} for i in range(60)], "meta": {"n": 60}}
    data = msglc.dumps(doc, small_obj_optimization_threshold=64, compression=compression)
    with msglc.LazyReader(data) as r:
        for source in (r, r["runs"], r["runs"][3]):
            got = msglc.dumps(source, **options)
            assert got == _dumped(tmp_path, source, **options)
            with msglc.LazyReader(got) as back:
                assert back.to_obj() == msglc.to_obj(source)
                assert back.info().compression == compression  # kept
        if options.get("small_obj_optimization_threshold") == 64:
            assert msglc.dumps(r, **options) == data  # a copy: the very bytes
        plain = msglc.dumps(r, compression=None, **options)
        assert plain == _dumped(tmp_path, r, compression=None, **options)
        assert msglc.LazyReader(plain).info().compression is None


def test_dumps_of_an_archive_of_the_published_msglc_converts_it(tmp_path):
    from legacy_helpers import indexed

    value = [{"k": i, "v": "x" * i} for i in range(40)]
    with msglc.LazyReader(indexed(value)) as r:
        got = msglc.dumps(r)
        assert got == _dumped(tmp_path, r)
        assert msglc.LazyReader(got).to_obj() == value and msglc.dumps(r[3]) == msglc.dumps(value[3])


# ---- issue 29, lower items: outputs that cannot be written -------------------------------------------


def test_a_target_name_ending_with_a_separator_is_refused_not_written_without_it(tmp_path):
    (tmp_path / "sub").mkdir()
    writers = [
        lambda t: msglc.dump(t, [1]),
        lambda t: _lazy_writer(t, [1]),
        lambda t: msglc.combine(t, [FileInfo(None, obj=[1])]),
        lambda t: msglc.combine(t, [FileInfo(None, "a", obj=1)], mode="a"),
        lambda t: msglc.concat(t, [msglc.dumps([1])]),
    ]
    for write in writers:
        for name in ("new.mlc/", "sub/"):  # open(name, "wb") refuses both: realpath would drop the "/"
            with pytest.raises((IsADirectoryError, ValueError), match="ends with a separator|needs a regular file"):
                write(f"{tmp_path}/{name}")  # (append to a directory: "needs a regular file")
    assert os.listdir(tmp_path) == ["sub"] and os.listdir(tmp_path / "sub") == []


def test_a_file_system_without_writable_files_says_so():
    import io

    for write in (lambda: msglc.dump("http://127.0.0.1:9/x.mlc", [1]), lambda: _lazy_writer("http://127.0.0.1:9/x", 1)):
        with pytest.raises(io.UnsupportedOperation, match="cannot write 'http://127.0.0.1:9/x.*HTTPFileSystem has no"):
            write()  # refused when the target is opened: no request is made
