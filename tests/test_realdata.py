"""The realdata benchmark section's plumbing, on a tiny stand-in of its datasets: no network
(``--offline``; the fetch is tested with a fake ``npm`` on PATH)."""

import io
import json
import os
import subprocess
import sys
import tarfile
from typing import Any

import pytest
from realdata_standin import make_standin

from benchmark.datasets import DATASETS, DataUnavailable, fetch
from benchmark.targets.realdata import leaf_paths, parse_option


def targets(*args):
    cmd = [sys.executable, "-m", "benchmark.targets", "--only", "realdata", "--quick", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    return make_standin(tmp_path_factory.mktemp("realdata"))


def test_loaders_build_each_object_from_its_local_folder(standin):
    def load(name, quick=False):
        return DATASETS[name].load(standin / DATASETS[name].folder, quick)

    words = load("wordfreq")
    assert sorted(words) == ["large_en", "small_de", "small_en"]  # "_chinese_mapping" is no word list
    assert words["small_en"]["small_en-w2-1"] == 3  # bucket 0 is empty: the list of bucket b is packed[b + 2]
    assert len(words["small_en"]) == sum(b % 4 for b in range(60))
    assert sorted(load("wordfreq", quick=True)) == ["small_de", "small_en"]
    assert sorted(load("github-openapi")) == ["api.github.com", "ghes-3.19"]  # no deref files
    cldr = load("cldr-dates")
    assert list(cldr) == ["de", "en", "fr", "ja"] and sorted(cldr["en"]) == ["ca-gregorian", "dateFields"]
    assert list(load("cldr-dates", quick=True)) == ["de"]
    assert list(load("iconify", quick=True)) == ["set00", "set20", "set40"]
    assert "api" in load("mdn-bcd") and "api" not in load("mdn-bcd", quick=True)
    assert load("npm-names", quick=True) == [f"package-{i}" for i in range(0, 2000, 20)]
    assert len(load("emojibase")["en"]) == 50


def test_the_section_measures_every_series_of_every_dataset_offline(standin, tmp_path):
    out = tmp_path / "out"
    option = "small_obj_optimization_threshold=65536"
    run = targets(
        "--data-dir", str(standin), "--offline", "--datasets", "mdn-bcd,wordfreq", "--option", option,
        "--out", str(out),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = json.loads((out / "targets.json").read_text())
    measured = {m["dataset"]: m for m in report["realdata"]}
    assert list(measured) == ["mdn-bcd", "wordfreq"]
    series = ["msglc", "msglc zstd", f"msglc zstd, {option}"]
    for m in measured.values():
        assert m["quick"] and m["paths"] == 100 and m["plain_bytes"] > m["zstd_bytes"] > 0
        assert [s["series"] for s in m["series"]] == series
        assert [s["compressed"] for s in m["series"]] == [False, True, True]
        assert m["series"][2]["options"] == {"compression": "zstd", "small_obj_optimization_threshold": 65536}
        for s in m["series"]:
            assert s["bytes"] > 0 and s["open_bytes"] > 0 and s["read_bytes_mean"] > 0
            assert 0 < s["read_median_seconds"] <= s["read_p90_seconds"]
            assert s["dump_seconds"] > 0 and s["to_obj_seconds"] > 0 and s["open_seconds"] > 0
            # a compressed series reports what one of its data frames takes to decompress
            assert (s["frame_seconds"] is None) is (not s["compressed"]), s
            assert s["frame_seconds"] is None or 0 < s["frame_seconds"] < s["read_p90_seconds"]
    figures = [r["figure"] for r in report["rows"]]
    assert "wordfreq (quick), msglc zstd: size / whole file by zstd -3" in figures
    assert f"mdn-bcd (quick), msglc zstd, {option}: one value, cached=False (us, median)" in figures
    targets_of = {r["figure"]: r["target"] for r in report["rows"]}
    assert targets_of["wordfreq (quick), msglc zstd: size / whole file by zstd -3"] == "<= 1.5"  # a lookup table
    assert targets_of["mdn-bcd (quick), msglc zstd: size / whole file by zstd -3"] == "<= 1.15"  # a document
    assert targets_of["wordfreq (quick), msglc: one value, cached=False (us, median)"] == "<= 30 us"
    assert "| mdn-bcd (quick), msglc zstd: open (ms, median of 11) |" in run.stdout
    details = {r["figure"]: r["detail"] for r in report["rows"]}
    one_value = "one value, cached=False (us, median)"
    assert "a data frame decompresses in" in details[f"mdn-bcd (quick), msglc zstd: {one_value}"]
    assert "a data frame" not in details[f"mdn-bcd (quick), msglc: {one_value}"]
    assert f"| wordfreq (quick) | msglc zstd, {option} |" in run.stdout  # the table of every series


def test_offline_without_the_data_names_what_is_missing_and_measures_nothing(tmp_path):
    run = targets("--data-dir", str(tmp_path / "empty"), "--offline", "--datasets", "mdn-bcd", "--out", str(tmp_path))
    assert run.returncode == 1
    assert "mdn-browser-compat-data-8.1.9" in run.stderr and "--offline" in run.stderr
    assert not (tmp_path / "targets.json").exists()


def test_an_option_msglc_refuses_stops_the_run_before_it_starts(tmp_path):
    run = targets("--offline", "--data-dir", str(tmp_path), "--option", "no_such_setting=1")
    assert run.returncode == 2 and "--option no_such_setting=1" in run.stderr and "no_such_setting" in run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "benchmark.targets", "--only", "dict", "--datasets", "mdn-bcd"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "--only realdata" in run.stderr


def test_options_are_typed_and_compressed_unless_they_say_otherwise():
    assert parse_option("small_obj_optimization_threshold=65536,compression_level=5") == (
        "msglc zstd, small_obj_optimization_threshold=65536, compression_level=5",
        {"compression": "zstd", "small_obj_optimization_threshold": 65536, "compression_level": 5},
    )
    assert parse_option("compression=none,durable=true") == (
        "msglc, compression=None, durable=True",
        {"compression": None, "durable": True},
    )


def test_leaf_paths_reach_leaves_and_repeat_with_their_seed():
    obj = {"a": [1, {"b": "x", "c": []}], "d": {"e": {"f": 2.5}}, "g": {}}
    paths = leaf_paths(obj, 50, seed=3)
    assert paths == leaf_paths(obj, 50, seed=3) and paths != leaf_paths(obj, 50, seed=4)
    for path, value in paths:
        at: Any = obj  # a walk down the document: a container, then a leaf
        for key in path:
            at = at[key]
        assert at == value and (not isinstance(value, (dict, list)) or not value)
    assert {tuple(p) for p, _ in paths} == {("a", 0), ("a", 1, "b"), ("a", 1, "c"), ("d", "e", "f"), ("g",)}


def _fake_npm(tmp_path, members, exit_code=0):
    """A directory holding an ``npm`` that writes a .tgz of ``members`` where ``npm pack`` would."""
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    tmp_path.mkdir(parents=True, exist_ok=True)
    tgz = tmp_path / "payload.tgz"
    tgz.write_bytes(payload.getvalue())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "npm"
    script.write_text(
        f"#!{sys.executable}\n"
        "import shutil, sys\n"
        "args = sys.argv[1:]\n"
        "assert args[0] == 'pack' and '--pack-destination' in args, args\n"
        f"shutil.copy({str(tgz)!r}, args[args.index('--pack-destination') + 1] + '/x-1.0.tgz')\n"
        f"sys.exit({exit_code})\n"
    )
    script.chmod(0o755)
    return bin_dir


def test_fetch_unpacks_only_what_the_loader_reads_and_then_never_fetches_again(tmp_path, monkeypatch):
    data = json.dumps({"css": {"a": 1}}).encode()
    bin_dir = _fake_npm(tmp_path, {"package/data.json": data, "package/README.md": b"docs", "other/data.json": b"{}"})
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    ds, cache = DATASETS["mdn-bcd"], tmp_path / "cache"
    folder = fetch(ds, cache)
    assert folder == cache / "mdn-browser-compat-data-8.1.9"
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == ["package/data.json"]
    assert ds.load(folder, False) == {"css": {"a": 1}}
    assert sorted(os.listdir(cache)) == [folder.name]  # no download left behind
    (bin_dir / "npm").unlink()  # the folder is there: nothing is run
    assert fetch(ds, cache) == folder


def test_a_failed_or_hostile_download_leaves_no_folder(tmp_path, monkeypatch):
    ds = DATASETS["mdn-bcd"]
    failing = _fake_npm(tmp_path / "a", {"package/data.json": b"{}"}, exit_code=1)
    monkeypatch.setenv("PATH", f"{failing}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(DataUnavailable, match="exit 1"):
        fetch(ds, tmp_path / "cache")
    assert os.listdir(tmp_path / "cache") == []
    emoji = DATASETS["emojibase"]  # its pattern has a "*" segment, which ".." would match
    hostile = _fake_npm(tmp_path / "b", {"package/../data.json": b"[]"})
    monkeypatch.setenv("PATH", f"{hostile}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(DataUnavailable, match="refusing to unpack"):
        fetch(emoji, tmp_path / "cache")
    assert os.listdir(tmp_path / "cache") == [] and not (tmp_path / "data.json").exists()


def test_a_data_dir_that_cannot_be_written_is_data_unavailable_not_a_crash(tmp_path, monkeypatch):
    """The quick suite leaves the figure out on DataUnavailable: an OSError must become one."""
    bin_dir = _fake_npm(tmp_path, {"package/data.json": b"{}"})
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    not_a_folder = tmp_path / "file"
    not_a_folder.write_bytes(b"")
    with pytest.raises(DataUnavailable, match="could not unpack it into"):
        fetch(DATASETS["mdn-bcd"], not_a_folder)
