"""Figures from a ``Results``: write time, read time (1k and 10k reads, log scale), file size,
the records' file size, and the bulk read throughput of a compressed array by threads.

The horizontal axis is the threshold (msglc) or chunk size (h5py); series without one
(contiguous h5py, the floors) are drawn as horizontal lines. Read times estimated from fewer
reads than the figure's count (the per-configuration time budget ran out) are hollow markers.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

FIGURES = (
    "write_time",
    "read_time_log_1k",
    "read_time_log_10k",
    "file_size",
    "records_size",
    "bulk_read",
    "dask_reduce",
    "realdata",
)


def _title(results: dict, what: str) -> str:
    s = results["settings"]
    reads = "/".join(f"{r:,}" for r in s["repeats"])
    return f"{what}\nN={s['size']}, {reads} random reads, writes best of 2; {results['date']}\n{results['machine']}"


def _draw(ax, rows: list[dict], value: str, xs: list[int]) -> None:
    by_series: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_series[row["series"]].append(row)
    styles = {"floor": ":", "contiguous": "--"}
    for series, points in by_series.items():
        style = next((v for k, v in styles.items() if k in series), "-")
        width = 2.5 if series.startswith("msglc") else 1.2
        if points[0]["threshold"] is None:
            ax.plot([xs[0], xs[-1]], [points[0][value]] * 2, style, label=series, linewidth=width)
            continue
        points.sort(key=lambda r: r["threshold"])
        x = [p["threshold"] for p in points]
        y = [p[value] for p in points]
        (line,) = ax.plot(x, y, style, marker="o", label=series, linewidth=width)
        estimated = [
            (px, py)
            for p, px, py in zip(points, x, y, strict=True)
            if "reads" in p and p["measured_reads"] < p["reads"]
        ]
        if estimated:
            ax.plot(*zip(*estimated, strict=True), "o", markerfacecolor="white", color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [f"{x >> 10} KB" if x < 1 << 20 else f"{x >> 20} MB" for x in xs])
    ax.set_xlabel("msglc threshold / h5py chunk size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)


def _save(fig, out: Path, name: str, written: list[Path]) -> None:
    fig.tight_layout()
    for ext in ("png", "pdf"):
        path = out / f"{name}.{ext}"
        fig.savefig(path, dpi=120)
        written.append(path)


def _counts_axes(ax, counts: list[int], xlabel: str) -> None:
    """An x axis of counts (threads, workers) and a y axis from 0, gridded."""
    ax.set_xticks(counts, [str(c) for c in counts])
    ax.set_xlabel(xlabel)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)


def _bulk(plt, results: dict, out: Path, written: list[Path]) -> None:
    """MB/s of the decompressed array read whole, by threads; a series without a thread count
    (h5py: one thread) is a horizontal line, as in the multitables benchmark's figures."""
    rows = results["bulk"]
    threads = sorted({r["threads"] for r in rows if r["threads"] is not None}) or [1]
    fig, ax = plt.subplots(figsize=(9, 6))
    by_series: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_series[row["series"]].append(row)
    for series, points in by_series.items():
        if "uncompressed" in series:  # 5-20x faster than any decompression: in the table only
            continue
        mbps = [p["nbytes"] / p["seconds"] / 1e6 for p in points]
        ratio = points[0]["nbytes"] / points[0]["bytes"]
        label = f"{series} (file {points[0]['bytes'] / 1e6:.0f} MB, {ratio:.2f}x)"
        if points[0]["threads"] is None:
            ax.plot([threads[0], threads[-1]], [mbps[0]] * 2, "--", label=label, linewidth=1.2)
        else:
            label += "" if all(p.get("read_threads_applied", True) for p in points) else " [no read_threads: default]"
            ax.plot([p["threads"] for p in points], mbps, "-", marker="o", label=label, linewidth=2.5)
    _counts_axes(ax, threads, "threads (msglc read_threads; h5py reads on one thread)")
    ax.set_ylabel("MB/s of the decompressed array (best of 3)")
    ax.legend(fontsize=7)
    nbytes = rows[0]["nbytes"]
    what = f"Reading a compressed {nbytes / 1e6:.0f} MB smooth float64 array whole (1 MB frames / chunks)"
    ax.set_title(f"{what}\n{results['date']}\n{results['machine']}", fontsize=9)
    _save(fig, out, "bulk_read", written)
    plt.close(fig)


def draw_all(results: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [1 << e for e in results["settings"]["thresholds"]]
    written = []
    panels = {
        "write_time": (results["write"], "seconds", "time to write the matrix (s)", "linear", "Write time"),
        "file_size": (
            [{**r, "MB": r["bytes"] / 1e6} for r in results["size"]],
            "MB",
            "file size (MB)",
            "linear",
            "File size",
        ),
    }
    for count, name in ((1000, "read_time_log_1k"), (10_000, "read_time_log_10k")):
        rows = [r for r in results["read"] if r["reads"] == count]
        panels[name] = (
            rows,
            "seconds",
            f"time for {count:,} random reads (s)",
            "log",
            f"{count:,} random element reads (hollow: estimated from fewer reads)",
        )
    records = results.get("records") or []
    if records:
        count = results["settings"]["records"]
        panels["records_size"] = (
            [{**r, "MB": r["bytes"] / 1e6} for r in records],
            "MB",
            "file size (MB)",
            "linear",
            f"File size of {count:,} JSON-like records",
        )
    for name, (rows, value, ylabel, yscale, title) in panels.items():
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(9, 6))
        _draw(ax, rows, value, xs)
        ax.set_yscale(yscale)
        ax.set_ylabel(ylabel)
        matrix = name != "records_size"  # the records are not the matrix: no N or read counts
        ax.set_title(
            _title(results, title) if matrix else f"{title}\n{results['date']}\n{results['machine']}", fontsize=9
        )
        if name == "records_size":
            ax.set_ylim(bottom=0)
        _save(fig, out, name, written)
        plt.close(fig)
    if results.get("bulk"):
        _bulk(plt, results, out, written)
    if results.get("scale"):
        _scale(plt, results, out, written)
    if results.get("realdata"):
        fig = _realdata(plt, results)
        _save(fig, out, "realdata", written)
        plt.close(fig)
    return written


def _scale(plt, results: dict, out: Path, written: list[Path]) -> None:
    """MB/s of an array summed through Dask, by worker processes, msglc against h5py."""
    rows = results["scale"]
    workers = sorted({r["workers"] for r in rows})
    fig, ax = plt.subplots(figsize=(9, 6))
    for series in dict.fromkeys(r["series"] for r in rows):
        points = [r for r in rows if r["series"] == series]
        mbps = [p["nbytes"] / p["seconds"] / 1e6 for p in points]
        ax.plot([p["workers"] for p in points], mbps, "-", marker="o", label=series, linewidth=2.5)
    _counts_axes(ax, workers, "Dask worker processes (one thread each)")
    ax.set_ylabel("MB/s summed (best of 3)")
    ax.legend()
    what = (
        f"sum(axis=0) of a {rows[0]['nbytes'] / 1e6:.0f} MB float64 array through Dask "
        f"(msglc.dask.to_array, h5py via da.from_array; chunks of {rows[0]['chunk_rows']:,} rows)"
    )
    ax.set_title(f"{what}\n{results['date']}\n{results['machine']}", fontsize=9)
    _save(fig, out, "dask_reduce", written)
    plt.close(fig)


def _realdata(plt, results: dict):
    """Per dataset of real public JSON: each archive's size over the whole plain msgpack
    compressed by zstd -3 (top), and the time of one value read with ``cached=False`` (bottom:
    median bar, p90 whisker), with issue 31's targets as short black lines over each group."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    from benchmark.targets.realdata import READ_TARGET_US, SIZE_TARGET

    measured = results["realdata"]
    names = list(dict.fromkeys(s["series"] for m in measured for s in m["series"]))
    # one panel above the other, each as wide as its groups need
    fig, (left, right) = plt.subplots(2, 1, figsize=(max(9.0, 1.7 * len(measured) + 3), 11))
    x = list(range(len(measured)))

    def found(m: dict, series: str) -> dict | None:
        return next((s for s in m["series"] if s["series"] == series), None)

    def targets(ax, values: list[float], label: str) -> None:
        for i, value in enumerate(values):
            ax.plot([i - 0.42, i + 0.42], [value] * 2, color="black", linewidth=2, label=label if i == 0 else None)

    def log_axis(ax, ticks: list[float], unit: str) -> None:
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(FixedLocator(ticks))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}{unit}"))
        ax.yaxis.set_minor_locator(NullLocator())

    left_series = ["floor: plain msgpack", *names]  # the same colour for a series in both panels
    width = 0.8 / len(left_series)
    for k, series in enumerate(left_series):
        xs, ratios = [], []
        for i, m in enumerate(measured):
            s = found(m, series)
            if series == "floor: plain msgpack" or s is not None:
                xs.append(i - 0.4 + width * (k + 0.5))
                ratios.append((s["bytes"] if s else m["plain_bytes"]) / m["zstd_bytes"])
        bars = left.bar(xs, ratios, width, label=series, color=f"C{k}")
        left.bar_label(bars, [f"{r:.2f}" for r in ratios], fontsize=6, padding=1)
    left.axhline(1, color="black", linestyle=":", label="floor: plain msgpack, whole file zstd -3")
    targets(left, [SIZE_TARGET[m["kind"]] for m in measured], "target for a compressed archive (issue 31)")
    log_axis(left, [1, 1.15, 1.5, 2, 3, 5, 10, 20, 50], "x")
    left.set_ylabel("size / the whole plain msgpack compressed by zstd -3 (log scale)")
    left.set_title("Archive size against the whole file compressed by zstd -3 (lower is better)", fontsize=9)

    width = 0.8 / len(names)
    for k, series in enumerate(names):
        xs, median, p90 = [], [], []
        for i, m in enumerate(measured):
            s = found(m, series)
            if s is not None:
                xs.append(i - 0.4 + width * (k + 0.5))
                median.append(s["read_median_seconds"] * 1e6)
                p90.append(s["read_p90_seconds"] * 1e6)
        right.bar(xs, median, width, label=series, color=f"C{k + 1}")
        right.errorbar(xs, median, yerr=[[0] * len(xs), [b - a for a, b in zip(median, p90, strict=True)]],
                       fmt="none", ecolor="black", capsize=3, linewidth=1)  # fmt: skip
    targets(right, [READ_TARGET_US[m["kind"]] for m in measured], "target for the median (issue 31)")
    log_axis(right, [1, 2, 5, 10, 20, 30, 50, 100, 200, 500, 1000, 2000, 5000], " us")
    right.set_ylabel("one value, cached=False (log scale): bar median, whisker p90")
    paths = measured[0]["paths"]
    right.set_title(f"One value read from an open reader ({paths} random leaf paths per dataset)", fontsize=9)

    labels = [
        f"{m['dataset']}{' (quick)' if m['quick'] else ''}\n{m['kind']}\n{m['plain_bytes'] / 1e6:.3g} MB msgpack"
        for m in measured
    ]
    for ax in (left, right):
        ax.set_xticks(x, labels, fontsize=7)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle(f"Real public JSON in msglc archives\n{results['date']}\n{results['machine']}", fontsize=9)
    fig.tight_layout()
    return fig
