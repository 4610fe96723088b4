"""The msglc command: every subcommand, exact round trips, one-line errors (run in this process
by ``cli_runner``; the tests of the entry points start ``python -m msglc``)."""

import json
import math
import os
import pathlib
import random
import subprocess
import sys

import msgpack
import numpy as np
import pytest
from cli_runner import run_msglc

import msglc

ROOT = pathlib.Path(msglc.__file__).parent.parent


def run(*args, ok=True):
    """``msglc args``; returns (exit status, stdout, stderr)."""
    code, out, err = run_msglc(*args, cwd=ROOT)
    if ok:
        assert code == 0, err
    return code, out.decode(), err


def document(seed=1, n=3000):
    """Shaped like a real export: records of mixed values, metadata, nesting, unicode."""
    rng = random.Random(seed)
    return {
        "users": [
            {
                "id": i,
                "name": f"user {i} \u00e9\u4e2d",
                "score": rng.random() * 10 ** rng.randrange(-5, 8),
                "tags": [rng.choice("abc") for _ in range(rng.randrange(4))],
                "active": i % 2 == 0,
                "parent": None if i % 3 else i - 1,
                "geo": {"lat": rng.uniform(-90, 90), "lon": rng.uniform(-180, 180)},
            }
            for i in range(n)
        ],
        "meta": {"version": "1.2", "count": n, "nested": {"deep": [1, -2.5e-300, "x", None, True, {}, []]}},
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    doc = {
        "runs": [{"id": i, "energy": [i * 0.5] * 300, "blob": b"xyz"} for i in range(200)],
        "meta": {"n": 200, 7: "int key", "nan": float("nan")},
        "field": np.arange(20000.0).reshape(100, 200),
    }
    msglc.dump(d / "a.mlc", doc, small_obj_optimization_threshold=1024)
    return d


def test_info(files):
    _, out, _ = run("info", files / "a.mlc")
    assert "format      1.5" in out and "threshold   1,024 bytes" in out and "root        dict of 3" in out
    assert "1 list, 200 fixed-stride list, 201 dict, 0 hash-indexed dict, 1 array" in out


def test_ls_and_tree(files):
    _, out, _ = run("ls", files / "a.mlc")
    lines = out.splitlines()
    assert lines[0].split() == ["TYPE", "LENGTH", "BYTES", "NAME"]
    assert lines[1].split()[:2] == ["list", "200"] and lines[1].endswith("runs")
    assert lines[3].startswith("array float64 (100, 200)") and lines[3].endswith("field")
    _, out, _ = run("ls", files / "a.mlc", "runs", "--limit", "2")
    assert out.splitlines()[-1] == "... 198 more (--limit)"
    _, out, _ = run("tree", files / "a.mlc", "--depth", "1")
    assert (
        out.splitlines()[0].startswith("/  dict of 3")
        and "  runs  list of 200" in out
        and "  field  NumPy array" in out
    )
    _, out, _ = run("tree", files / "a.mlc", "runs/5")
    assert "fixed-stride" in out


def test_get_formats(files):
    _, out, _ = run("get", files / "a.mlc", "meta")
    assert out == '{"n": 200, "7": "int key", "nan": NaN}\n'  # int keys as strings, NaN as Python's json writes it
    assert run("get", files / "a.mlc", "runs/3/blob")[1] == '"eHl6"\n'  # bytes in base64
    assert json.loads(run("get", files / "a.mlc", "field/2")[1]) == list(np.arange(400.0, 600.0))
    proc = subprocess.run(
        [sys.executable, "-m", "msglc", "get", files / "a.mlc", "runs/4", "--format", "msgpack"],
        capture_output=True,
        cwd=ROOT,
    )
    assert msgpack.unpackb(proc.stdout) == {"id": 4, "energy": [2.0] * 300, "blob": b"xyz"}
    assert run("get", files / "a.mlc", "runs/-1/id", "--format", "repr")[1] == "199\n"


def test_get_prints_datetime64_arrays_as_their_dates_in_either_byte_order(tmp_path):
    when = np.array(["2020-01-02T03:04:05", "1969-12-31T23:59:59"], dtype="<M8[s]")
    msglc.dump(tmp_path / "t.mlc", {"le": when, "be": when.astype(">M8[s]")})
    for key in ("le", "be"):
        assert json.loads(run("get", tmp_path / "t.mlc", key)[1]) == ["2020-01-02T03:04:05", "1969-12-31T23:59:59"]


def test_json_round_trip_is_exact(tmp_path):
    doc = document()
    text = json.dumps(doc)
    (tmp_path / "doc.json").write_text(text)
    run("convert", tmp_path / "doc.json", tmp_path / "doc.mlc", "--threshold", "512")
    run("convert", tmp_path / "doc.mlc", tmp_path / "back.json")
    assert (tmp_path / "back.json").read_text() == text + "\n"
    with msglc.LazyReader(tmp_path / "doc.mlc") as r:
        assert r["users/2999/geo/lat"] == doc["users"][2999]["geo"]["lat"]


def test_json_lines_and_msgpack(tmp_path):
    users = document(2, 500)["users"]
    (tmp_path / "u.jsonl").write_text("".join(json.dumps(u) + "\n" for u in users))
    run("convert", tmp_path / "u.jsonl", tmp_path / "u.mlc")
    run("convert", tmp_path / "u.mlc", tmp_path / "back.jsonl")
    assert (tmp_path / "back.jsonl").read_text() == (tmp_path / "u.jsonl").read_text()
    run("convert", tmp_path / "u.mlc", tmp_path / "u.msgpack")
    assert msgpack.unpackb((tmp_path / "u.msgpack").read_bytes()) == users
    run("convert", tmp_path / "u.msgpack", tmp_path / "again.mlc")
    assert msglc.LazyReader(tmp_path / "again.mlc").to_obj() == users
    run("convert", tmp_path / "u.msgpack", tmp_path / "x.data", "--to", "msglc")
    assert msglc.LazyReader(tmp_path / "x.data").to_obj() == users


def test_combine_and_verify(files, tmp_path):
    out = tmp_path / "c.mlc"
    run("combine", out, files / "a.mlc", files / "a.mlc", "--name", "x", "--name", "y")
    assert run("get", out, "y/runs/7/id")[1] == "7\n"
    _, text, _ = run("verify", out)
    assert text.strip().endswith("intact")
    run("combine", tmp_path / "l.mlc", files / "a.mlc", files / "a.mlc", "--list")
    assert run("get", tmp_path / "l.mlc", "1/meta/n")[1] == "200\n"
    damaged = bytearray(out.read_bytes())
    damaged[1000] ^= 1
    (tmp_path / "bad.mlc").write_bytes(damaged)
    code, _, err = run("verify", tmp_path / "bad.mlc", ok=False)
    assert code == 1 and "checksum mismatch" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (("info", "missing.mlc"), "no such file"),
        (("get", "{a}", "runs/3/nope"), "'nope' not found (at runs/3/nope)"),
        (("get", "{a}", "runs/1000/id"), "out of range for a list of 200 (at runs/1000)"),
        (("get", "{a}", "meta/n/x"), "cannot look up 'x' in a int"),
        (("ls", "{a}", "meta/n"), "not a dict or a list"),
        (("verify", "{text}"), "not an msglc archive"),
        (("convert", "{text}", "{out}"), "cannot tell the format"),
        (("convert", "{bad_json}", "{out}.msgpack"), "neither"),
        (("convert", "{bad_json}", "{out}.mlc"), "is not valid json"),
        (("convert", "{deep_json}", "{out}.mlc"), "deep.json is nested too deeply to read"),
        (("combine", "{out}.mlc", "{a}", "--name", "x", "--name", "y"), "give one per input"),
        (("combine", "{out}.mlc", "{a}", "{a}"), "would both have the key 'a'"),
        (("combine", "{out}.mlc", "{text}"), "not an msglc archive"),
    ],
)
def test_errors_are_one_line(files, tmp_path, args, message):
    (tmp_path / "t.txt").write_text("just text")
    (tmp_path / "bad.json").write_text("{oops")
    (tmp_path / "deep.json").write_text("[" * 5000 + "]" * 5000)
    names = {"a": files / "a.mlc", "text": tmp_path / "t.txt", "out": tmp_path / "o", "bad_json": tmp_path / "bad.json"}
    names["deep_json"] = tmp_path / "deep.json"
    code, out, err = run(*(a.format(**names) for a in args), ok=False)
    assert code == 1 and out == ""
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "o.mlc").exists()


def test_help_for_every_subcommand():
    for command in ("info", "ls", "tree", "get", "convert", "combine", "verify"):
        _, out, _ = run(command, "--help")
        assert out.startswith(f"usage: msglc {command}")
    code, _, err = run("get", ok=False)
    assert code == 2 and "required" in err


def test_non_finite_floats_in_json(tmp_path):
    msglc.dump(tmp_path / "f.mlc", [math.inf, -math.inf, 1.5])
    assert run("get", tmp_path / "f.mlc", "")[1] == "[Infinity, -Infinity, 1.5]\n"


def test_outputs_are_never_the_input_and_links_are_followed(files, tmp_path):
    same = tmp_path / "same.mlc"
    same.write_bytes((files / "a.mlc").read_bytes())
    code, _, err = run("convert", same, tmp_path / "." / "same.mlc", "--to", "json", ok=False)
    assert code == 1 and "is the input" in err and same.read_bytes() == (files / "a.mlc").read_bytes()
    (tmp_path / "link.json").symlink_to(tmp_path / "target.json")
    run("get", files / "a.mlc", "meta/n")
    run("convert", files / "a.mlc", tmp_path / "link.json")
    assert (tmp_path / "link.json").is_symlink() and json.loads((tmp_path / "target.json").read_text())["meta"][
        "n"
    ] == 200
    code, _, err = run("convert", files / "a.mlc", tmp_path / "nodir" / "x.json", ok=False)
    assert code == 1 and "no such directory" in err and ".tmp" not in err


def test_damaged_archives_are_not_exported(tmp_path):
    msglc.dump(tmp_path / "a.mlc", [1.5, 2.5, 3.5])
    data = bytearray((tmp_path / "a.mlc").read_bytes())
    data[data.index(msgpack.packb(2.5)) + 5] ^= 1
    (tmp_path / "d.mlc").write_bytes(data)
    for out in ("d.msgpack", "d.json"):
        code, _, err = run("convert", tmp_path / "d.mlc", tmp_path / out, ok=False)
        assert code == 1 and "checksum mismatch" in err and not (tmp_path / out).exists()


def test_round_trips_through_non_finite_floats_and_arrays(tmp_path):
    msglc.dump(tmp_path / "f.mlc", {"x": math.nan, "y": math.inf, "a": np.arange(6.0).reshape(2, 3)})
    run("convert", tmp_path / "f.mlc", tmp_path / "f.json")
    run("convert", tmp_path / "f.json", tmp_path / "g.mlc")
    back = msglc.LazyReader(tmp_path / "g.mlc").to_obj()
    assert math.isnan(back["x"]) and back["y"] == math.inf and back["a"] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    run("convert", tmp_path / "f.mlc", tmp_path / "f.msgpack")
    run("convert", tmp_path / "f.msgpack", tmp_path / "h.mlc")  # msglc's array values read back as arrays
    assert msglc.LazyReader(tmp_path / "h.mlc")["a"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_arrays_of_every_kind_have_a_json_form(tmp_path):
    obj = {
        "c": np.array([1 + 2j]),
        "t": np.array(["2026-11-22T10:00"], dtype="M8[m]"),
        "d": np.array([90], dtype="m8[s]"),
        "l": np.array([0.5], dtype=np.longdouble),
    }
    msglc.dump(tmp_path / "n.mlc", obj)
    out = json.loads(run("get", tmp_path / "n.mlc", "")[1])
    assert out == {"c": [[1.0, 2.0]], "t": ["2026-11-22T10:00"], "d": [90], "l": [0.5]}


def test_paths_through_arrays_and_slices(files):
    assert "(at field/200)" in run("get", files / "a.mlc", "field/200", ok=False)[2]
    assert "(at field/2/3)" in run("get", files / "a.mlc", "field/2/3/4", ok=False)[2]
    assert "(at runs/1/nope)" in run("get", files / "a.mlc", "runs/1:3/nope", ok=False)[2]
    assert msgpack.unpackb(run_msglc("get", files / "a.mlc", "runs/1:3/id", "--format", "msgpack")[1]) == [1, 2]
    assert run("get", files / "a.mlc", "runs/1:3/id", "--format", "repr")[1] == "[1, 2]\n"
    assert run("get", files / "a.mlc", "runs/0:2:6/id", "--format", "repr")[1] == "[0, 2, 4]\n"  # start:step:stop
    assert run("get", "--format", "repr", files / "a.mlc", "--", "runs/-202:/id")[1] == "[198, 199]\n"
    assert run("get", files / "a.mlc", "--", "runs/-1/id")[1] == "199\n"
    assert "put -- before it" in " ".join(run("get", "--help")[1].split())
    msglc.dump(files / "m.mlc", [[1.0] * 2000] * 50, small_obj_optimization_threshold=1024)
    _, out, _ = run("tree", files / "m.mlc", "3")
    assert out == "/3  list of 2,000, 18,003 bytes (part of its parent's fixed-stride node)\n"
    code, _, err = run("get", files / "a.mlc", "-1/id", ok=False)
    assert code == 2 and len(err.splitlines()) == 1


def test_entry_points_and_a_light_import():
    """The console script's target (msglc.cli:main) runs the CLI; import msglc stays light
    (no asyncio: only the async API needs it)."""
    code = "import sys, msglc; from msglc.cli import main; print('asyncio' in sys.modules); main(['--version'])"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=120)
    assert proc.stdout.decode().split() == ["False", "msglc", msglc.__version__], proc.stderr.decode()


def test_convert_and_combine_with_compression(tmp_path):
    pytest.importorskip("zstandard")
    users = document(3, 800)["users"]
    (tmp_path / "u.jsonl").write_text("".join(json.dumps(u) + "\n" for u in users))
    (tmp_path / "u.json").write_text(json.dumps(users))

    def version(path):
        with msglc.LazyReader(path) as r:
            assert r.to_obj() == users
            r.verify()
            return r.info().version

    run("convert", tmp_path / "u.jsonl", tmp_path / "s.mlc", "--compression", "zstd")  # streamed
    run("convert", tmp_path / "u.json", tmp_path / "j.mlc", "--compression", "zstd:19")
    assert version(tmp_path / "s.mlc") == version(tmp_path / "j.mlc") == (2, 2)
    assert "zstd frames" in run("info", tmp_path / "j.mlc")[1]
    run("convert", tmp_path / "j.mlc", tmp_path / "kept.mlc")  # archive -> archive keeps the compression
    assert (tmp_path / "kept.mlc").read_bytes() == (tmp_path / "j.mlc").read_bytes()
    msglc.dump(tmp_path / "t0.mlc", users, small_obj_optimization_threshold=0)
    run("convert", tmp_path / "t0.mlc", tmp_path / "t0-copy.mlc")  # ... and its threshold: a copy
    assert (tmp_path / "t0-copy.mlc").read_bytes() == (tmp_path / "t0.mlc").read_bytes()
    code, _, err = run("convert", tmp_path / "t0.mlc", tmp_path / "bad.mlc", "--threshold", "-5", ok=False)
    assert code == 2 and "a number of bytes" in err and not (tmp_path / "bad.mlc").exists()
    run("convert", tmp_path / "j.mlc", tmp_path / "plain.mlc", "--compression", "none")
    assert version(tmp_path / "plain.mlc")[0] == 1
    assert (tmp_path / "plain.mlc").read_bytes() == msglc.dumps(users)
    run("convert", tmp_path / "plain.mlc", tmp_path / "z.mlc", "--compression", "zstd", "--threshold", "1024")
    assert version(tmp_path / "z.mlc") == (2, 2)
    run("combine", tmp_path / "c.mlc", tmp_path / "j.mlc", tmp_path / "z.mlc", "--list")  # all compressed: compressed
    run("combine", tmp_path / "p.mlc", tmp_path / "j.mlc", tmp_path / "z.mlc", "--list", "--compression", "none")
    for path, major in (("c.mlc", 2), ("p.mlc", 1)):
        with msglc.LazyReader(tmp_path / path) as r:
            assert r.info().version[0] == major and r.to_obj() == [users, users]
    for bad in ("zstd:0", "zstd:", "none:3", "gzip"):
        status, _, err = run("convert", tmp_path / "u.json", tmp_path / "x.mlc", "--compression", bad, ok=False)
        assert status == 2 and "zstd:LEVEL" in err, bad
    status, _, err = run("convert", tmp_path / "j.mlc", tmp_path / "x.json", "--compression", "zstd", ok=False)
    assert status == 1 and "--compression is for writing an archive" in err


# ---- outputs (issue 29, lower items) ---------------------------------------------------------------


@pytest.fixture
def folder(tmp_path):
    """A folder with inputs of every kind, an output that exists, a link and a subfolder."""
    msglc.dump(tmp_path / "in.mlc", [{"a": 1}, {"b": [2.5] * 300}], small_obj_optimization_threshold=64)
    msglc.dump(tmp_path / "in2.mlc", [3, 4])
    (tmp_path / "in.json").write_text('{"a": [1, 2]}')
    (tmp_path / "in.jsonl").write_text('{"a": 1}\n[2]\n')
    (tmp_path / "link.mlc").symlink_to(tmp_path / "in.mlc")
    os.link(tmp_path / "in2.mlc", tmp_path / "hard.mlc")
    (tmp_path / "sub").mkdir()
    return tmp_path


def snapshot(folder):
    """Every name under ``folder`` with its kind, mode and bytes: what "changed nothing" means."""
    return {
        str(p.relative_to(folder)): (p.is_symlink(), p.lstat().st_mode, p.is_file() and p.read_bytes())
        for p in sorted(folder.rglob("*"))
    }


def run_in(cwd, *args):
    """``msglc args`` in ``cwd`` (an output "-" must not land in the checkout)."""
    code, out, err = run_msglc(*args, cwd=cwd)
    return code, out.decode(), err


def refused(folder, args, message):
    before = snapshot(folder)
    code, out, err = run_in(folder, *args)
    assert code == 1 and out == "", err
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err, err
    assert snapshot(folder) == before


MEMORY = "in this process's memory (memory://), gone when msglc exits"


NOTHING_KEPT = [
    (("convert", "in.json", "memory://out.mlc"), MEMORY),
    (("convert", "in.jsonl", "memory://out.mlc"), MEMORY),
    (("convert", "in.mlc", "memory://out.mlc", "--threshold", "8"), MEMORY),
    (("convert", "in.mlc", "memory://out.json"), MEMORY),
    (("convert", "in.mlc", "memory://out.msgpack"), MEMORY),
    (("convert", "in.json", "simplecache::memory://out.mlc"), MEMORY),
    (("convert", "in.json", "dir::memory://d/out.mlc"), MEMORY),
    (("combine", "memory://out.mlc", "in.mlc", "in2.mlc"), MEMORY),
    (("convert", "in.mlc", "-", "--to", "json"), "not standard output ('-')"),
    (("convert", "in.json", "-", "--to", "msglc"), "not standard output ('-')"),
    (("combine", "-", "in.mlc"), "not standard output ('-')"),
    (("convert", "in.json", "http://127.0.0.1:9/out.mlc"), "HTTPFileSystem has no writable files"),
    (("convert", "in.mlc", "http://127.0.0.1:9/out.json"), "HTTPFileSystem has no writable files"),
]


@pytest.mark.parametrize("args, message", NOTHING_KEPT, ids=[" ".join(args) for args, _ in NOTHING_KEPT])
def test_outputs_that_would_keep_nothing_are_refused(folder, args, message):
    refused(folder, args, message)


def test_local_outputs_named_by_file_urls_are_written(folder):
    url = (folder / "sub").as_uri()
    run_in(folder, "convert", "in.json", f"{url}/a.mlc")
    run_in(folder, "convert", "in.mlc", f"{url}/b.json")
    run_in(folder, "combine", f"{url}/c.mlc", "in.mlc", "in2.mlc")
    with msglc.LazyReader(folder / "sub" / "a.mlc") as a, msglc.LazyReader(folder / "sub" / "c.mlc") as c:
        assert a.to_obj() == {"a": [1, 2]} and c.to_obj() == {"in": [{"a": 1}, {"b": [2.5] * 300}], "in2": [3, 4]}
    assert json.loads((folder / "sub" / "b.json").read_text()) == [{"a": 1}, {"b": [2.5] * 300}]
    refused(folder, ("convert", "in.json", f"{url}/new.mlc/", "--to", "msglc"), "ends with a separator")


def test_help_states_what_an_output_may_be():
    for command in ("convert", "combine"):
        text = " ".join(run(command, "--help")[1].split())
        assert "OUTPUT is a local file" in text and "Refused: memory://" in text and '"-"' in text


@pytest.mark.parametrize("command", ["convert", "combine"])
@pytest.mark.parametrize(
    "output, message",
    [
        ("in.mlc", "is the input 'in.mlc' itself"),
        ("./in.mlc", "is the input 'in.mlc' itself"),
        ("link.mlc", "is the input 'in.mlc' itself"),  # a symlink to it
        ("nodir/out.mlc", "no such directory: "),
        ("in.json/out.mlc", "not a directory: "),
        ("sub", "is a directory: name a file in it"),
        (".", "is a directory: name a file in it"),
        ("sub/", "is a directory: name a file in it"),
        ("new.mlc/", "names a directory (it ends with a separator)"),
    ],
)
def test_outputs_that_are_inputs_or_folders_change_nothing(folder, command, output, message):
    args = ("convert", "in.mlc", output) if command == "convert" else ("combine", output, "in2.mlc", "in.mlc")
    refused(folder, args, message)


def test_an_output_that_is_a_hard_link_of_an_input_is_refused(folder):
    refused(folder, ("convert", "in2.mlc", "hard.mlc", "--threshold", "8"), "is the input 'in2.mlc' itself")
    refused(folder, ("combine", "hard.mlc", "in.mlc", "in2.mlc"), "is the input 'in2.mlc' itself")


# ---- many files, and hints for humans (issue 30, item 5) ---------------------------------------------


@pytest.fixture
def runs(tmp_path):
    """A folder of run archives, as a simulation leaves them, with files that are not archives."""
    d = tmp_path / "runs"
    d.mkdir()
    for i in (42, 7, 1000):
        msglc.dump(d / f"run-{i:04d}.mlc", {"id": i, "energy": [i * 0.5] * 50})
    (d / "notes.txt").write_text("not an archive")
    (d / "run-0001.json").write_text('{"id": 1}')
    (d / ".run-0002.mlc").write_bytes(b"a writer's hidden temporary file")
    return d


def test_combine_names_entries_by_their_files(runs, tmp_path):
    out = tmp_path / "all.mlc"
    run("combine", out, runs / "run-0042.mlc", runs / "run-0007.mlc")
    with msglc.LazyReader(out) as r:
        assert list(r.read()) == ["run-0042", "run-0007"] and r["run-0007/id"] == 7  # the order given
    run("combine", out, runs / "run-0042.mlc", runs / "run-0007.mlc", "--name", "a", "--name", "b")
    assert msglc.LazyReader(out).to_obj().keys() == {"a", "b"}
    run("combine", out, runs / "run-0042.mlc", runs / "run-0007.mlc", "--list")
    assert [x["id"] for x in msglc.LazyReader(out).to_obj()] == [42, 7]


def test_combine_takes_the_archives_of_a_folder(runs, tmp_path):
    out = tmp_path / "all.mlc"
    run("combine", out, runs)
    with msglc.LazyReader(out) as r:
        assert list(r.read()) == ["run-0007", "run-0042", "run-1000"]  # sorted; no text, JSON or hidden file
        assert r["run-1000/energy/3"] == 500.0
    code, _, err = run("combine", out, runs, "--name", "x", ok=False)
    assert code == 1 and "1 --name for 3 inputs (a folder counts as its archives)" in err
    inside = runs / "all.mlc"
    run("combine", inside, runs)
    run("combine", inside, runs)  # again: the output already there is not one of its inputs
    assert list(msglc.LazyReader(inside).read()) == ["run-0007", "run-0042", "run-1000"]
    (tmp_path / "empty").mkdir()
    code, _, err = run("combine", tmp_path / "e.mlc", tmp_path / "empty", ok=False)
    assert code == 1 and "holds no archive" in err and not (tmp_path / "e.mlc").exists()


def test_combine_refuses_two_inputs_of_one_name(runs, tmp_path):
    (tmp_path / "other").mkdir()
    msglc.dump(tmp_path / "other" / "run-0042.mlc", [1])
    out = tmp_path / "all.mlc"
    out.write_bytes(b"before")
    code, _, err = run("combine", out, runs, tmp_path / "other", ok=False)
    assert code == 1 and len(err.splitlines()) == 1
    assert (
        f"{runs / 'run-0042.mlc'} and {tmp_path / 'other' / 'run-0042.mlc'} would both have the key 'run-0042'" in err
    )
    assert "--name" in err and "--list" in err and out.read_bytes() == b"before"
    run("combine", out, runs, tmp_path / "other", "--list")
    assert len(msglc.LazyReader(out).read()) == 4
    code, _, err = run("combine", out, runs, "--list", "--name", "x", ok=False)
    assert code == 2 and "not allowed with" in err


def test_an_indented_value_too_deep_for_json_is_a_one_line_error(tmp_path):
    deep: object = 1
    for _ in range(3000):
        deep = [deep]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(12_000)  # (dump nests as deep as the limit lets msgspec encode)
    try:
        msglc.dump(tmp_path / "deep.mlc", {"d": deep})
    finally:
        sys.setrecursionlimit(limit)
    assert run("get", tmp_path / "deep.mlc", "d")[1].startswith("[" * 3000)
    code, out, err = run("get", tmp_path / "deep.mlc", "d", "--indent", "1", ok=False)
    assert code == 1 and out == "" and "too deeply to indent" in err and "Traceback" not in err


def test_convert_many_files_into_a_folder(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    docs = {f"r{i}": {"id": i, "x": [i] * 5} for i in range(4)}
    (src / "r0.json").write_text(json.dumps(docs["r0"]))
    (src / "r1.jsonl").write_text(json.dumps(docs["r1"]) + "\n")
    (src / "r2.msgpack").write_bytes(msgpack.packb(docs["r2"]))
    (src / "r3.JSON").write_text(json.dumps(docs["r3"]))
    msglc.dump(src / "done.mlc", [0])  # already an archive: a folder gives only what converts to one
    (src / "notes.txt").write_text("x")
    run("convert", src, "--out-dir", out, "--compression", "zstd:5")
    assert sorted(p.name for p in out.iterdir()) == ["r0.mlc", "r1.mlc", "r2.mlc", "r3.mlc"]
    for name, doc in docs.items():
        with msglc.LazyReader(out / f"{name}.mlc") as r:
            assert r.to_obj() == ([doc] if name == "r1" else doc) and r.info().compression == "zstd"
    back = tmp_path / "back"
    back.mkdir()
    run("convert", out / "r0.mlc", out / "r2.mlc", back, "--to", "json")  # the last argument a folder
    assert sorted(p.name for p in back.iterdir()) == ["r0.json", "r2.json"]
    assert json.loads((back / "r2.json").read_text()) == docs["r2"]
    run("convert", out, back, "--to", "msgpack")  # one folder into another
    assert msgpack.unpackb((back / "r3.msgpack").read_bytes()) == docs["r3"]


def test_convert_many_reports_each_failure_and_converts_the_rest(tmp_path):
    (tmp_path / "a.json").write_text('{"a": 1}')
    (tmp_path / "bad.json").write_text("{oops")
    (tmp_path / "c.json").write_text('{"c": 3}')
    out = tmp_path / "out"
    out.mkdir()
    args = [tmp_path / "a.json", tmp_path / "bad.json", tmp_path / "gone.json", tmp_path / "c.json"]
    code, stdout, err = run("convert", *args, out, ok=False)
    assert code == 1 and stdout == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 2 and "bad.json is not valid json" in lines[0] and "no such file" in lines[1]
    assert all(line.startswith("msglc convert: ") and line.count(str(tmp_path)) == 1 for line in lines)
    assert sorted(p.name for p in out.iterdir()) == ["a.mlc", "c.mlc"]  # and nothing of the failures
    assert msglc.LazyReader(out / "c.mlc").to_obj() == {"c": 3}


def test_convert_many_checks_every_output_before_writing_any(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.json").write_text("[1]")
    (tmp_path / "x.jsonl").write_text("[2]\n")
    (tmp_path / "y.json").write_text("[3]")
    before = snapshot(tmp_path)
    code, _, err = run(
        "convert", tmp_path / "y.json", tmp_path / "a" / "x.json", tmp_path / "x.jsonl", tmp_path, ok=False
    )
    assert code == 1 and len(err.splitlines()) == 1 and "would both be converted to 'x.mlc'" in err
    assert snapshot(tmp_path) == before  # not even y.mlc
    msglc.dump(tmp_path / "m.mlc", [1])
    before = snapshot(tmp_path)
    code, _, err = run(
        "convert", tmp_path / "m.mlc", tmp_path / "y.json", "--out-dir", tmp_path, "--to", "msglc", ok=False
    )
    assert code == 1 and "is the input" in err and snapshot(tmp_path) == before
    code, _, err = run("convert", tmp_path / "y.json", tmp_path / "x.jsonl", tmp_path / "nowhere", ok=False)
    assert code == 1 and "the output folder" in err and "does not exist" in err
    code, _, err = run("convert", tmp_path / "y.json", tmp_path / "x.jsonl", tmp_path / "y.json", ok=False)
    assert code == 1 and "is not a directory" in err and snapshot(tmp_path) == before
    code, _, err = run("convert", tmp_path / "y.json", ok=False)
    assert code == 2 and "--out-dir" in err


def test_convert_in_out_is_as_before(tmp_path):
    """Two arguments, the first a file: the second is the OUTPUT, a file, even if it names a
    folder (refused as before, with the way to convert into it)."""
    (tmp_path / "y.json").write_text("[3]")
    (tmp_path / "d").mkdir()
    code, _, err = run("convert", tmp_path / "y.json", tmp_path / "d", ok=False)
    assert code == 1 and "is a directory: name a file in it (or convert into it: --out-dir" in err
    assert not list((tmp_path / "d").iterdir())
    run("convert", tmp_path / "y.json", tmp_path / "d" / "any-name", "--to", "msglc")
    assert msglc.LazyReader(tmp_path / "d" / "any-name").to_obj() == [3]


def test_tree_counts_the_children_it_does_not_list(files, tmp_path):
    _, out, _ = run("tree", files / "a.mlc")
    lines = out.splitlines()
    assert lines[0].endswith("; 2 of 3 shown; 1 small entry read whole")  # meta has no node
    assert lines[1].startswith("  runs  list of 200") and "shown" not in lines[1]  # every run is listed
    assert lines[2] == "    0  dict of 3, 2,725 bytes; 1 of 3 shown; 2 small entries read whole"
    _, out, _ = run("tree", files / "a.mlc", "--depth", "0")
    assert out == "/  dict of 3, 705,138 bytes; 0 of 3 shown (--depth); 1 small entry read whole\n"
    msglc.dump(
        tmp_path / "l.mlc",
        [[1.5] * 100 if i % 100 == 0 else i for i in range(1109)],
        small_obj_optimization_threshold=256,
    )
    _, out, _ = run("tree", tmp_path / "l.mlc")
    assert out.splitlines()[0].endswith("; 12 of 1,109 shown; 1,097 small items read whole")
    assert len(out.splitlines()) == 13


def test_ls_has_a_header_row(files, tmp_path):
    _, out, _ = run("ls", files / "a.mlc", "meta")
    assert out.splitlines() == [
        "TYPE                          LENGTH         BYTES  NAME",
        "int                                              2  n",
        "str                                7             8  7",
        "float                                            9  nan",
    ]
    msglc.dump(tmp_path / "e.mlc", {})
    assert run("ls", tmp_path / "e.mlc")[1].split() == ["TYPE", "LENGTH", "BYTES", "NAME"]


def test_get_indents_json_on_request(files):
    assert run("get", files / "a.mlc", "meta", "--indent", "2")[1] == (
        '{\n  "n": 200,\n  "7": "int key",\n  "nan": NaN\n}\n'
    )
    assert run("get", files / "a.mlc", "meta")[1] == '{"n": 200, "7": "int key", "nan": NaN}\n'  # compact by default
    code, _, err = run("get", files / "a.mlc", "meta", "--indent", "2", "--format", "repr", ok=False)
    assert code == 2 and "--indent is for JSON output" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "path, message",
    [
        ("metta", "'metta' not found (at metta); did you mean 'meta'?"),
        ("runs/3/enrgy/2", "'enrgy' not found (at runs/3/enrgy); did you mean 'energy'?"),
        ("runs/1:3/Blob", "'Blob' not found (at runs/1/Blob); did you mean 'blob'?"),
        ("meta/nn", "'nn' not found (at meta/nn); did you mean 'nan' or 'n'?"),
        ("xyzzy", "'xyzzy' not found (at xyzzy)\n"),  # nothing near: no suggestion
    ],
)
def test_a_missing_key_suggests_the_nearest(files, path, message):
    for command in ("get", "ls", "tree"):
        code, _, err = run(command, files / "a.mlc", path, ok=False)
        assert code == 1 and err == f"msglc {command}: {message}" + ("" if message.endswith("\n") else "\n")


def test_suggestions_in_a_huge_dict_read_a_little_of_it(tmp_path):
    """A dict too large to list its keys quickly: keys one edit away are looked up instead."""
    from msglc.cli.hints import SCAN_KEYS, missing_key_hint

    n = 3 * SCAN_KEYS
    msglc.dump(tmp_path / "h.mlc", {f"sample-{i:06d}": {"v": i, "pad": "x" * 200} for i in range(n)})
    stats = msglc.LazyStats()
    with msglc.LazyReader(tmp_path / "h.mlc", counter=stats) as r:
        root = r.info().root
        assert root is not None and root.kind == "hash-indexed dict" and len(r.read()) == n
        before = stats.bytes
        assert missing_key_hint(r.read(), "sampel-012345") == "; did you mean 'sample-012345'?"
        assert missing_key_hint(r.read(), "SAMPLE-000007") == "; did you mean 'sample-000007'?"
        assert stats.bytes - before < r.info().data_size / 10
    _, _, err = run("get", tmp_path / "h.mlc", "sample-01234/v", ok=False)
    assert "'sample-01234' not found (at sample-01234); did you mean 'sample-0" in err


@pytest.mark.parametrize(
    "name, content, message",
    [
        (
            "runs.json",
            b' \n{"a": 1}',
            "runs.json looks like JSON, not an msglc archive: msglc convert {d}/runs.json {d}/runs.mlc",
        ),
        (
            "runs.jsonl",
            b'{"a": 1}\n{"a": 2}\n',
            "looks like JSON Lines, not an msglc archive: msglc convert {d}/runs.jsonl {d}/runs.mlc",
        ),
        (
            "runs",
            b'{"a": 1}\n[2]\n',
            "looks like JSON Lines, not an msglc archive: msglc convert {d}/runs {d}/runs.mlc --from jsonl",
        ),
        (
            "runs.mlc",
            b"\xef\xbb\xbf[1, 2]",
            "looks like JSON, not an msglc archive: msglc convert {d}/runs.mlc {d}/runs-converted.mlc --from json",
        ),
        (
            "runs.bin",
            msgpack.packb({"a": [1, 2]}),
            "looks like msgpack, not an msglc archive: msglc convert {d}/runs.bin {d}/runs.mlc --from msgpack",
        ),
        (
            "runs.msgpack",
            msgpack.packb(list(range(100))),
            "looks like msgpack, not an msglc archive: msglc convert {d}/runs.msgpack {d}/runs.mlc\n",
        ),
        ("runs.json", b"", "is not an msglc archive: if it holds JSON, msglc convert {d}/runs.json {d}/runs.mlc"),
        ("runs.txt", b"\x91\xc1", "runs.txt: not an msglc archive"),  # not msgpack: 0xc1 is never used
        ("runs.txt", b"\x9f\x01", "runs.txt: not an msglc archive"),  # 15 items cannot fit in one byte
    ],
)
def test_a_json_or_msgpack_file_is_met_with_the_command_to_convert_it(tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    for command in (("info",), ("ls",), ("tree",), ("get", "a"), ("verify",)):
        code, out, err = run(command[0], tmp_path / name, *command[1:], ok=False)
        assert code == 1 and out == "" and len(err.splitlines()) == 1
        assert message.format(d=tmp_path) in err, err
    if "looks like" in message and "--from" not in message:  # the command works
        run(*message.format(d=tmp_path).split(": ")[-1].split()[1:])
