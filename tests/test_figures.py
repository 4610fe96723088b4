"""The benchmark's figures tell the truth at a glance (issue 30, item 3), checked on small
synthetic results: every series named is drawn, each library keeps its colour in every
figure, size axes start at zero, floors are never hidden, and the scaling figures say when
their data is too small to show scaling. The realdata figure keeps the same rules, its
--option alternatives in tints of the series they change."""

from typing import Any

import pytest
from figure_checks import check_all, legend_labels, marks, series_lines, texts
from matplotlib.colors import to_hex, to_rgb

from benchmark import plots

MACHINE = "Test CPU, 2 cores, Python 3.11.7, msglc 0.1.0, msgspec 0.22.0, numpy 2.4.6, h5py 3.16.0"
THRESHOLDS = (12, 16, 20)
OPTION = "msglc zstd, small_obj_optimization_threshold=65536"


def realdata(options: tuple[str, ...] = (OPTION,)) -> list[dict[str, Any]]:
    """Two datasets shaped as ``benchmark.targets.realdata.measure`` gives them: a document and
    a lookup table, msglc plain and zstd and the ``options`` alternatives (in that order)."""
    out = []
    for name, kind, plain, whole in (
        ("mdn-bcd", "document", 17_250_000, 1_000_000),
        ("npm-names", "lookup table", 95_090_000, 31_740_000),
    ):
        series = [("msglc", plain * 1.02, 12e-6), ("msglc zstd", whole * 1.4, 19e-6)]
        series += [(option, whole * (0.95 + 0.1 * k), 40e-6 * (k + 1)) for k, option in enumerate(options)]
        out.append(
            {
                "dataset": name,
                "kind": kind,
                "quick": True,
                "plain_bytes": plain,
                "zstd_bytes": whole,
                "paths": 100,
                "series": [
                    {
                        "series": series_name,
                        "compressed": series_name != "msglc",
                        "bytes": int(nbytes),
                        "read_median_seconds": median,
                        "read_p90_seconds": 3 * median,
                    }
                    for series_name, nbytes, median in series
                ],
            }
        )
    return out


def synthetic(bulk_mb: int = 2, dask_mb: int = 16, records: bool = True) -> dict[str, Any]:
    """Results shaped as ``python -m benchmark`` writes them, with values like a quick run's:
    msglc's matrix as large as the plain msgpack floor, the NumPy array as numpy.save's file."""
    xs = [1 << e for e in THRESHOLDS]
    n = 1000
    write, size, read = [], [], []

    def stored(series, threshold, seconds, nbytes):
        write.append({"series": series, "threshold": threshold, "seconds": seconds})
        size.append({"series": series, "threshold": threshold, "bytes": nbytes})

    stored("floor: msgspec encode + write", None, 0.006, 9_000_004)
    for i, t in enumerate(xs):
        stored("msglc", t, 0.011 + 0.001 * i, 9_000_400)
        stored("msglc zstd", t, 0.03, 7_050_000 - 50_000 * i)
    write.append(
        {"series": "list to numpy array (h5py's input, not in its times)", "threshold": None, "seconds": 0.014}
    )
    stored("msglc NumPy array", None, 0.005, 8_000_300)
    stored("msglc NumPy array zstd", None, 0.018, 7_010_000)
    stored("floor: numpy.save", None, 0.0026, 8_000_128)
    stored("h5py contiguous", None, 0.0031, 8_002_000)
    for compression, seconds, nbytes in (
        ("uncompressed", 0.009, 8_300_000),
        ("gzip", 0.18, 7_600_000),
        ("lzf", 0.05, 8_100_000),
    ):
        for t in xs:
            stored(f"h5py {compression}", t, seconds, nbytes)

    def reads(series, threshold, per_read, measured=None):
        for count in (1000, 10_000):
            read.append(
                {
                    "series": series,
                    "threshold": threshold,
                    "reads": count,
                    "seconds": per_read * count,
                    "measured_reads": min(count, measured or count),
                }
            )

    reads("floor: pread + decode", None, 1e-6)
    for t in xs:
        reads("msglc reader[i][j]", t, 1.1e-6)
        reads("msglc zstd reader[i][j]", t, 7e-6)
    reads("msglc NumPy array a[i, j]", None, 4e-6)
    reads("msglc NumPy array zstd a[i, j]", None, 2e-5)
    reads("h5py contiguous ds[i, j]", None, 9e-6)
    reads("h5py contiguous ds[i][j]", None, 6e-6)
    for compression in ("uncompressed", "gzip", "lzf"):
        for i, t in enumerate(xs):
            reads(f"h5py {compression} ds[i, j]", t, 1e-5 * (i + 1))
            reads(f"h5py {compression} ds[i][j]", t, 1e-4 * (i + 1), measured=500 if i == 2 else None)
    results: dict[str, Any] = {
        "settings": {
            "size": n,
            "repeats": [1000, 10_000],
            "thresholds": list(THRESHOLDS),
            "budget": 1.0,
            "records": 2000,
            "bulk_mb": bulk_mb,
            "threads": [1, 2],
            "dask_mb": dask_mb,
            "workers": [1, 2],
        },
        "machine": MACHINE,
        "date": "2026-11-27",
        "write": write,
        "read": read,
        "size": size,
        "paths": {},
        "records": [],
        "bulk": [],
        "scale": [],
        "realdata": realdata(),
    }
    if records:
        results["records"] = [
            {"series": "floor: plain msgpack", "threshold": None, "bytes": 243_700},
            {"series": "floor: plain msgpack, whole file zstd -3", "threshold": None, "bytes": 61_300},
        ] + [
            {"series": series, "threshold": t, "bytes": nbytes, "dump_seconds": 0.01, "read_seconds": 1e-5}
            for t in xs
            for series, nbytes in (("msglc", 244_000), ("msglc zstd", 63_000))
        ]
    nbytes = bulk_mb * 10**6
    for series, ratio, threads in (
        ("msglc NumPy array zstd", 5.2, [1, 2]),
        ("msglc NumPy array", 1.0, [1, 2]),
        ("h5py gzip", 2.7, [None]),
        ("h5py gzip + shuffle", 5.0, [None]),
        ("h5py lzf", 1.6, [None]),
        ("h5py uncompressed", 1.0, [None]),
    ):
        for k in threads:
            results["bulk"].append(
                {
                    "series": series,
                    "threads": k,
                    "seconds": nbytes / 1e9 / (k or 1),
                    "bytes": int(nbytes / ratio),
                    "nbytes": nbytes,
                    "read_threads_applied": True,
                }
            )
    results["slabs"] = [
        {"series": series, "seconds": us / 1e6, "bytes": nbytes, "blocks": 200, "side": 64, "chunk": 128, "n": 2000}
        for series, us, nbytes in (
            ("msglc NumPy array", 8.4, 8_000_300),
            ("msglc NumPy array zstd", 92.0, 7_010_000),
            ("h5py uncompressed", 26.8, 8_300_000),
            ("h5py Blosc2 zstd + shuffle", 101.0, 7_020_000),
            ("h5py Zstd", 197.0, 7_800_000),
        )
    ]
    for workers in (1, 2):
        for series in ("msglc NumPy array", "h5py contiguous"):
            results["scale"].append(
                {
                    "series": series,
                    "workers": workers,
                    "seconds": dask_mb / 1000 / workers,
                    "nbytes": dask_mb * 10**6,
                    "chunk_rows": 128,
                }
            )
    return results


def close(figures):
    import matplotlib.pyplot as plt

    for fig in figures.values():
        plt.close(fig)


@pytest.mark.parametrize("large", [False, True], ids=["quick-sized", "full-sized"])
def test_every_figure_passes_every_check(tmp_path, large):
    results = synthetic(400, 1024) if large else synthetic()
    figures = check_all(results, tmp_path)
    assert set(figures) == set(plots.FIGURES)
    close(figures)


def test_a_figure_without_h5py_names_no_h5py(tmp_path):
    """The records figure draws msglc and the floors only: its axis label and the versions
    under it leave h5py out."""
    figures = check_all(synthetic(), tmp_path)
    words = " ".join(texts(figures["records_size"]))
    assert "h5py" not in words and "msglc threshold" in words
    assert "h5py 3.16.0" in " ".join(texts(figures["file_size"]))
    close(figures)


def test_series_under_a_floor_are_named(tmp_path):
    """msglc's matrix is as large as the plain msgpack floor; the floor is drawn on top and a
    note says which series lie under it."""
    figures = check_all(synthetic(), tmp_path)
    words = " ".join(" ".join(texts(figures["file_size"])).split())
    assert "floor: msgspec encode + write covers msglc" in words
    assert "floor: numpy.save covers msglc NumPy array, h5py contiguous" in words
    assert "covers" not in " ".join(texts(figures["write_time"]))
    close(figures)


def test_bulk_figure_legend_holds_names_and_the_sizes_say_their_unit(tmp_path):
    figures = check_all(synthetic(400, 1024), tmp_path)
    fig = figures["bulk_read"]
    assert sorted(legend_labels(fig)) == ["h5py gzip", "h5py gzip + shuffle", "h5py lzf", "msglc NumPy array zstd"]
    notes = " ".join(texts(fig))
    assert "h5py gzip: 148.15 MB (compression ratio 2.7)" in notes and "the array: 400.0 MB" in notes
    close(figures)


@pytest.mark.parametrize("name", ["bulk_read", "dask_reduce"])
def test_scaling_figures_say_plainly_when_the_data_is_too_small(tmp_path, name):
    small = check_all(synthetic(), tmp_path)
    large = check_all(synthetic(400, 1024), tmp_path)
    (ax,) = small[name].axes
    assert ax.get_title().startswith("Too small to show scaling: ")
    assert any(w.startswith("TOO SMALL TO SHOW SCALING") for w in texts(small[name]))
    assert not any("too small" in w.lower() for w in texts(large[name]))
    close(small)
    close(large)


def test_write_times_spread_over_a_log_axis(tmp_path):
    figures = check_all(synthetic(), tmp_path)
    (ax,) = figures["write_time"].axes
    assert ax.get_yscale() == "log"
    assert len(series_lines(figures["write_time"])) == 11
    close(figures)


def test_figures_without_data_are_not_drawn(tmp_path):
    results = synthetic(records=False)
    results["bulk"] = results["slabs"] = results["scale"] = results["realdata"] = []
    figures = check_all(results, tmp_path)
    assert set(figures) == {"write_time", "read_time_log_1k", "read_time_log_10k", "file_size"}
    close(figures)


def test_slab_figure_draws_a_bar_a_series_with_its_time_and_the_sizes(tmp_path):
    figures = check_all(synthetic(), tmp_path)
    fig = figures["slab_read"]
    assert legend_labels(fig) == [
        "msglc NumPy array",
        "msglc NumPy array zstd",
        "h5py uncompressed",
        "h5py Blosc2 zstd + shuffle",
        "h5py Zstd",
    ]
    words = " ".join(texts(fig))
    assert "92 us" in words and "197 us" in words and "h5py Blosc2 zstd + shuffle: 7.02 MB" in words
    assert "64 x 64 block" in words
    close(figures)


def test_a_series_without_a_colour_is_refused(tmp_path):
    results = synthetic()
    results["write"].append({"series": "zarr", "threshold": None, "seconds": 0.01})
    with pytest.raises(ValueError, match="no colour for the series 'zarr'.*plots.LIBRARIES"):
        plots.draw_all(results, tmp_path)


def test_realdata_figure_takes_its_colours_from_the_table(tmp_path):
    """msglc, msglc zstd and the floors in their colours of every other figure; the bars of
    sizes rise from the 1x floor; the footer leaves out h5py, which the figure does not draw."""
    figures = check_all(synthetic(), tmp_path)
    fig = figures["realdata"]
    sizes, reads = fig.axes
    assert legend_labels(fig, sizes) == [
        "msglc",
        "msglc zstd",
        OPTION,
        "floor: plain msgpack",
        "floor: plain msgpack, whole file zstd -3",
    ]
    assert legend_labels(fig, reads) == ["msglc", "msglc zstd", OPTION]
    assert sizes.get_yscale() == reads.get_yscale() == "log"
    words = " ".join(texts(fig))
    assert "h5py" not in words and "numpy 2.4.6" in words
    close(figures)


def test_option_alternatives_are_tints_of_their_base_in_the_order_given(tmp_path):
    """The k-th alternative of a base keeps 0.6**k of the base's colour, the rest white."""
    options = (
        OPTION,
        "msglc zstd, compression_level=9",
        "msglc, compression=None, small_obj_optimization_threshold=65536",
    )
    results = synthetic()
    results["realdata"] = realdata(options)
    figures = check_all(results, tmp_path)
    colours = {label: colour for label, colour, _ in marks(figures["realdata"])}

    def tint(colour: str, keep: float) -> str:
        r, g, b = (1 - (1 - c) * keep for c in to_rgb(colour))
        return to_hex((r, g, b))

    assert colours[OPTION] == tint("#17becf", 0.6) and colours[options[1]] == tint("#17becf", 0.36)
    assert colours[options[2]] == tint("#1f77b4", 0.6)
    close(figures)


@pytest.mark.parametrize("series", ["zarr", "zarr, level=3"])
def test_a_realdata_series_without_a_colour_is_refused(tmp_path, series):
    results = synthetic()
    for section in ("write", "read", "size", "records", "bulk", "slabs", "scale"):  # only the figure at issue drawn
        results[section] = []
    results["realdata"] = realdata((series,))
    with pytest.raises(ValueError, match=f"no colour for the series '{series}'.*plots.LIBRARIES"):
        plots.draw_all(results, tmp_path)
