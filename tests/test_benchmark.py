"""The benchmark suite runs end to end and writes every figure and series it promises."""

import json
import subprocess
import sys

import pytest
from realdata_standin import make_standin

pytest.importorskip("h5py")
pytest.importorskip("matplotlib")


def quick_run(out, *options, data=None):
    """``python -m benchmark --quick`` on a tiny problem, writing to ``out``; the real data is a
    stand-in made in ``out``'s folder (no network), or ``data``."""
    data = data or make_standin(out.parent / "realdata")
    cmd = [sys.executable, "-m", "benchmark", "--quick", "--doc-mb", "1", "--out", str(out), "--no-progress"]
    cmd += ["--data-dir", str(data), "--offline", "--datasets", "mdn-bcd,wordfreq", *options]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One quick run at the default read counts, with two thresholds, shared by the tests that
    read its output (a run takes most of this file's time)."""
    out = tmp_path_factory.mktemp("quick") / "out"
    return out, quick_run(out, "--size", "40", "--thresholds", "12,14", "--budget", "0.2")


def test_quick_run_writes_figures_and_results(quick):
    out, run = quick
    for name in ("write_time", "file_size"):
        for ext in ("png", "pdf"):
            assert (out / f"{name}.{ext}").stat().st_size > 1000
    results = json.loads((out / "results.json").read_text())
    write_series = {r["series"] for r in results["write"]}
    expected = {
        "msglc",
        "msglc zstd",
        "msglc NumPy array",
        "msglc NumPy array zstd",
        "h5py uncompressed",
        "h5py gzip",
        "h5py lzf",
        "h5py contiguous",
        "floor: msgspec encode + write",
        "floor: numpy.save",
    }
    assert expected <= write_series
    read_series = {r["series"] for r in results["read"]}
    for system in (
        "msglc reader[i][j]",
        "msglc zstd reader[i][j]",
        "msglc NumPy array zstd a[i, j]",
        "msglc NumPy array a[i, j]",
        "floor: pread + decode",
        "h5py contiguous ds[i, j]",
        "h5py gzip ds[i][j]",
        "h5py lzf ds[i, j]",
    ):
        assert system in read_series
    msglc_reads = [r for r in results["read"] if r["series"] == "msglc reader[i][j]"]
    assert sorted({r["threshold"] for r in msglc_reads}) == [4096, 16384]
    assert {r["reads"] for r in msglc_reads} == {1000, 10000}  # the default counts
    assert all(r["seconds"] > 0 for r in results["read"] + results["write"])
    assert results["paths"]["paths"] > 0 and results["paths"]["plain_decode_seconds"] > 0
    assert [m["dataset"] for m in results["realdata"]] == ["mdn-bcd", "wordfreq"]
    assert [s["series"] for s in results["realdata"][0]["series"]] == ["msglc", "msglc zstd"]
    assert "| mdn-bcd (quick) | msglc zstd |" in run.stdout
    assert (out / "realdata.png").stat().st_size > 1000
    assert "| msglc reader[i][j] |" in run.stdout


def test_default_counts_give_every_named_figure_and_each_tells_the_truth(quick, tmp_path):
    """With the default read counts the quick run draws all eight figures (realdata from a
    stand-in of its datasets), says so in its last line, and the figures of its real results
    pass the checks of tests/test_figures.py."""
    from figure_checks import check_all

    from benchmark import plots

    out, run = quick
    for name in plots.FIGURES:
        assert (out / f"{name}.png").stat().st_size > 1000 and (out / f"{name}.pdf").stat().st_size > 1000
    assert run.stdout.rstrip().splitlines()[-1] == f"wrote 9 figures, each as PNG and PDF, and results.json to {out}/"
    figures = check_all(json.loads((out / "results.json").read_text()), tmp_path)
    assert set(figures) == set(plots.FIGURES)
    for name in ("bulk_read", "dask_reduce"):  # quick mode's data is too small to show scaling
        assert figures[name].axes[0].get_title().startswith("Too small to show scaling")


def test_quick_run_without_its_real_data_says_so_and_draws_the_rest(tmp_path):
    out = tmp_path / "out"
    small = ("--size", "40", "--thresholds", "12", "--repeat", "50,100", "--budget", "0.2", "--records", "0")
    run = quick_run(out, *small, "--bulk-mb", "0", "--slabs", "0", "--dask-mb", "0", data=tmp_path / "nothing")
    assert "the realdata figure is left out" in run.stdout and "mdn-browser-compat-data-8.1.9" in run.stdout
    results = json.loads((out / "results.json").read_text())
    assert results["realdata"] == []
    assert {r["reads"] for r in results["read"] if r["series"] == "msglc reader[i][j]"} == {50, 100}  # as given
    assert not (out / "realdata.png").exists() and (out / "write_time.png").exists()
    assert "Real public JSON" not in run.stdout
    last = run.stdout.rstrip().splitlines()[-1]  # write_time and file_size: read figures need the default counts
    assert last == f"wrote 2 figures, each as PNG and PDF, and results.json to {out}/"


def test_full_run_without_its_real_data_stops_before_measuring(tmp_path):
    cmd = [sys.executable, "-m", "benchmark", "--data-dir", str(tmp_path), "--offline", "--out", str(tmp_path / "o")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "--offline" in run.stderr and "--no-realdata" in run.stderr
    assert not (tmp_path / "o").exists()


def test_bad_arguments_are_refused():
    run = subprocess.run([sys.executable, "-m", "benchmark", "--thresholds", "12,x"], capture_output=True, text=True)
    assert run.returncode == 2 and "integers" in run.stderr


def test_remote_figures_name_the_extra_they_need_when_it_is_missing(monkeypatch, capsys):
    import importlib.util

    from benchmark import targets

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "moto" else real_find_spec(name, *a)
    )
    with pytest.raises(SystemExit) as exit:
        targets.main(["--remote", "--only", "matrix"])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "needs moto" in err and "bench-remote" in err


def test_the_benchmark_is_not_installed_as_a_top_level_package(tmp_path):
    """``benchmark`` runs from the checkout; an installed msglc must not claim that name."""
    code = "import importlib.util, msglc; print(importlib.util.find_spec('benchmark') is None)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"
