"""Figures from a ``Results``: write time, read time (1k and 10k reads), file size, the records'
file size, the bulk read of a compressed array by threads, a Dask reduction by workers, and the
real public JSON's archive sizes and one-value reads.

Every series takes its colour from the library that stored the data (``LIBRARIES``) and its
line style from the kind of read or measurement (``PATTERNS``, ``ROLES``), so a colour means
the same thing in every figure. The horizontal axis of the matrix figures is the threshold
(msglc) or chunk size (h5py); series without one are lines without markers. Floors are drawn
last, dotted, on top of whatever they coincide with. Read times estimated from fewer reads
than the figure's count (the per-configuration time budget ran out) are hollow markers.
"""

from __future__ import annotations

import textwrap
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIGURES = (
    "write_time",
    "read_time_log_1k",
    "read_time_log_10k",
    "file_size",
    "records_size",
    "bulk_read",
    "slab_read",
    "dask_reduce",
    "realdata",
)
FORMATS = ("png", "pdf")


@dataclass(frozen=True)
class Library:
    name: str  # a series is this name, then optionally " " and a read pattern
    colour: str
    role: str  # "msglc", "h5py", "floor" or "reference": line width, style and drawing order
    base: str | None = None  # an --option alternative: the library it changes a setting of


# The one place that decides colours. msglc's series are cool colours, h5py's warm ones, the
# floors black and greys. A series whose library is missing here is an error, not a default
# colour: a default would make two libraries look alike again. The realdata figure's --option
# alternatives ("msglc zstd, NAME=VALUE", "msglc, compression=None, ...") have no entry: each is
# drawn in a tint of its base's colour, the k-th alternative of a base (in the order of the
# run's --option flags) keeping ALTERNATIVE_SHADE**k of that colour and taking the rest from
# white (60%, 36%, 22%, ...), with an edge in the base's own colour. Tints rather than darker
# shades: msglc zstd's cyan darkened comes close to the zstd floor's dark teal.
LIBRARIES = (
    Library("msglc", "#1f77b4", "msglc"),  # blue: nested lists
    Library("msglc zstd", "#17becf", "msglc"),  # cyan
    Library("msglc NumPy array", "#9467bd", "msglc"),  # purple
    Library("msglc NumPy array zstd", "#2ca02c", "msglc"),  # green
    Library("h5py contiguous", "#8c564b", "h5py"),  # brown
    Library("h5py uncompressed", "#ff7f0e", "h5py"),  # orange: chunked, no filter
    Library("h5py gzip", "#d62728", "h5py"),  # red
    Library("h5py gzip + shuffle", "#e377c2", "h5py"),  # pink
    Library("h5py lzf", "#bcbd22", "h5py"),  # olive
    Library("h5py Blosc2 zstd + shuffle", "#ff9896", "h5py"),  # salmon
    Library("h5py Zstd", "#c49c94", "h5py"),  # tan
    Library("floor: msgspec encode + write", "#000000", "floor"),  # plain msgpack floors: black
    Library("floor: pread + decode", "#000000", "floor"),
    Library("floor: plain msgpack", "#000000", "floor"),
    Library("floor: plain msgpack, whole file zstd -3", "#00595c", "floor"),  # dark teal
    Library("floor: numpy.save", "#595959", "floor"),  # dark grey
    Library("list to numpy array (h5py's input, not in its times)", "#a6a6a6", "reference"),
)
_BY_NAME = {lib.name: lib for lib in LIBRARIES}
ALTERNATIVE_SHADE = 0.6
# The kind of read: the same line style in every figure. An msglc reader[i][j] reads only the
# element (the matrix is fixed-stride), as a[i, j] and ds[i, j] do; h5py's ds[i][j] reads row i.
PATTERNS = {"reader[i][j]": "-", "a[i, j]": "-", "ds[i, j]": "-", "ds[i][j]": "--"}
ROLES = {  # line style, width and drawing order (higher on top) of each role
    "msglc": ("-", 2.8, 2),  # wide and underneath: a thin line on top leaves both visible
    "h5py": ("-", 1.4, 3),
    "reference": ("-.", 1.6, 4),
    "floor": (":", 1.8, 6),
}
STYLE_KEY = {  # what each line style means, for the read figures' subtitle
    "-": "Solid: reads of the one element",
    "--": "Dashed: h5py's ds[i][j], which reads all of row i first",
    ":": "Dotted: the floor, pread of the element's 9 bytes in the plain msgpack file and decode",
}
# Below these sizes the scaling figures measure fixed costs, not scaling (docs/benchmark.md).
SCALING_MIN_MB = {"bulk_read": 100, "dask_reduce": 512}
TOO_SMALL = "too small to show scaling"


Alternatives = dict[str, Library]


def _tint(colour: str, keep: float) -> str:
    """``colour`` (#rrggbb) keeping the fraction ``keep`` of itself, the rest white."""
    rgb = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(255 - (255 - c) * keep):02x}" for c in rgb)


def alternatives(series: Iterable[str]) -> Alternatives:
    """The libraries of the --option alternatives among ``series`` (names "BASE, NAME=VALUE..."
    with BASE in ``LIBRARIES``), each a tint of its base's colour by its rank among the
    alternatives of that base; other names are left to ``split``."""
    out: Alternatives = {}
    rank: Counter[str] = Counter()
    for name in dict.fromkeys(series):
        base, sep, _ = name.partition(", ")
        if name in _BY_NAME or not sep or base not in _BY_NAME:
            continue
        rank[base] += 1
        lib = _BY_NAME[base]
        out[name] = Library(name, _tint(lib.colour, ALTERNATIVE_SHADE ** rank[base]), lib.role, base)
    return out


def split(series: str, alts: Alternatives | None = None) -> tuple[Library, str | None]:
    """The library and the read pattern (None for writes and sizes) of a series name."""
    for pattern in PATTERNS:
        if series.endswith(" " + pattern) and series[: -len(pattern) - 1] in _BY_NAME:
            return _BY_NAME[series[: -len(pattern) - 1]], pattern
    if series in _BY_NAME:
        return _BY_NAME[series], None
    if alts and series in alts:
        return alts[series], None
    raise ValueError(f"benchmark figure: no colour for the series {series!r}; add its library to plots.LIBRARIES")


def style(series: str, alts: Alternatives | None = None) -> dict[str, Any]:
    """Matplotlib line keywords of a series: colour by library, style by kind of read."""
    library, pattern = split(series, alts)
    linestyle, width, order = ROLES[library.role]
    if pattern is not None and library.role != "floor":
        linestyle = PATTERNS[pattern]
    return {"color": library.colour, "linestyle": linestyle, "linewidth": width, "zorder": order}


def edge(series: str, alts: Alternatives | None = None) -> str:
    """The edge colour of a series' bars and markers: an alternative's base colour, else its own."""
    library = split(series, alts)[0]
    return _BY_NAME[library.base].colour if library.base else library.colour


def _order(series: str, alts: Alternatives | None = None) -> tuple[int, int]:
    library, pattern = split(series, alts)
    if library.base:  # just after its base, in the order of the run's --option flags
        return LIBRARIES.index(_BY_NAME[library.base]), list(alts or {}).index(series) + len(PATTERNS)
    return LIBRARIES.index(library), list(PATTERNS).index(pattern) if pattern else -1


def _families(series: list[str], alts: Alternatives | None = None) -> set[str]:
    return {split(s, alts)[0].role for s in series}


def _footer(results: dict[str, Any], drawn: list[str], alts: Alternatives | None = None) -> str:
    """Date and machine, without the version of a library the figure does not draw."""
    parts = results["machine"].split(", ")
    if "h5py" not in _families(drawn, alts):
        parts = [p for p in parts if not p.startswith("h5py ")]
    return f"Measured on {results['date']}: " + ", ".join(parts)


def _header(fig: Any, ax: Any, title: str, subtitle: str, results: dict[str, Any], drawn: list[str]) -> None:
    ax.set_title(title + "\n" + textwrap.fill(subtitle, 130), fontsize=9)
    fig.supxlabel(_footer(results, drawn), fontsize=7, color="0.35", x=0.01, ha="left")


def _legend(ax: Any, alts: Alternatives | None = None) -> None:
    """Outside the axes, so that no data hides behind it; floors and references last."""
    handles, labels = ax.get_legend_handles_labels()
    pairs = sorted(zip(labels, handles, strict=True), key=lambda p: _order(p[0], alts))
    ax.legend([h for _, h in pairs], [lab for lab, _ in pairs], loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)


def _line(ax: Any, series: str, x: list[Any], y: list[float], markers: bool) -> Any:
    (line,) = ax.plot(x, y, marker="o" if markers else None, label=series, **style(series))
    return line


def _matrix_panel(ax: Any, rows: list[dict[str, Any]], value: str, xs: list[int]) -> list[str]:
    """One line per series over the thresholds; a series without a threshold is a line
    across without markers. Returns the series drawn."""
    by_series: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_series[row["series"]].append(row)
    for series, points in by_series.items():
        if points[0]["threshold"] is None:
            _line(ax, series, [xs[0], xs[-1]], [points[0][value]] * 2, markers=False)
            continue
        points.sort(key=lambda r: r["threshold"])
        x = [p["threshold"] for p in points]
        y = [p[value] for p in points]
        line = _line(ax, series, x, y, markers=True)
        estimated = [
            (px, py)
            for p, px, py in zip(points, x, y, strict=True)
            if "reads" in p and p["measured_reads"] < p["reads"]
        ]
        if estimated:
            ex, ey = zip(*estimated, strict=True)
            ax.plot(
                ex,
                ey,
                "o",
                markerfacecolor="white",
                color=line.get_color(),
                zorder=line.get_zorder(),
                label="_estimated",
            )
    drawn = list(by_series)
    _note(ax, _under_floors(by_series, value))
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [f"{x >> 10} KB" if x < 1 << 20 else f"{x >> 20} MB" for x in xs])
    ax.minorticks_off()
    what = " / ".join(
        name
        for family, name in (("msglc", "msglc threshold"), ("h5py", "h5py chunk size"))
        if family in _families(drawn)
    )
    ax.set_xlabel(f"{what} (lines without markers have none)")
    ax.grid(True, which="both", alpha=0.3)
    _legend(ax)
    return drawn


def _under_floors(by_series: dict[str, list[dict[str, Any]]], value: str) -> list[str]:
    """Lines of a note naming the series that lie on a floor (within 1% at every point): the
    floor is drawn on top of them, and a reader should not take them for missing."""
    lines = []
    for floor, points in by_series.items():
        if split(floor)[0].role != "floor" or points[0]["threshold"] is not None:
            continue
        level = points[0][value]
        under = [
            series
            for series, rows in by_series.items()
            if series != floor and all(abs(r[value] - level) <= 0.01 * abs(level) for r in rows)
        ]
        if under:
            lines += textwrap.wrap(f"{floor} covers {', '.join(under)}", 44, subsequent_indent="    ")
    return ["Under a dotted floor (within 1%):", *lines] if lines else []


def _note(ax: Any, lines: list[str]) -> None:
    """A note to the right of the axes, under the legend: it never hides data."""
    if lines:
        ax.text(1.01, 0, "\n".join(lines), transform=ax.transAxes, va="bottom", ha="left", fontsize=8)


def _log_seconds(ax: Any) -> None:
    """A log axis of seconds labelled 1 ms, 2 ms, 5 ms, 10 ms, ... rather than 10^-3."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    def label(v: float, _pos: object) -> str:
        return f"{v:g} s" if v >= 1 else f"{v * 1e3:g} ms" if v >= 1e-3 else f"{v * 1e6:g} us"

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(label))
    ax.yaxis.set_minor_locator(NullLocator())


def _matrix_words(s: dict[str, Any]) -> str:
    n = s["size"]
    return f"a {n:,} x {n:,} matrix of random floats"


def _save(fig: Any, out: Path, name: str, written: list[Path]) -> None:
    for ext in FORMATS:
        path = out / f"{name}.{ext}"
        fig.savefig(path, dpi=110)
        written.append(path)


def _figure(plt: Any) -> tuple[Any, Any]:
    fig, ax = plt.subplots(figsize=(12, 6.5), layout="constrained")
    return fig, ax


def draw_all(results: dict[str, Any], out: Path) -> list[Path]:
    """Draw every figure the results have data for into ``out``; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    for name, draw in _drawers().items():
        fig = draw(plt, results)
        if fig is not None:
            _save(fig, out, name, written)
            plt.close(fig)
    return written


def _drawers() -> dict[str, Callable[[Any, dict[str, Any]], Any]]:
    """Each figure's drawer: ``(pyplot, results)`` to its figure, or None without data for it."""
    return {
        "write_time": _write_time,
        "read_time_log_1k": lambda plt, r: _read_time(plt, r, 1000),
        "read_time_log_10k": lambda plt, r: _read_time(plt, r, 10_000),
        "file_size": _file_size,
        "records_size": _records_size,
        "bulk_read": _bulk,
        "slab_read": _slabs,
        "dask_reduce": _scale,
        "realdata": _realdata,
    }


def _write_time(plt: Any, results: dict[str, Any]) -> Any:
    rows = results["write"]
    if not rows:
        return None
    s = results["settings"]
    fig, ax = _figure(plt)
    drawn = _matrix_panel(ax, rows, "seconds", [1 << e for e in s["thresholds"]])
    _log_seconds(ax)
    ax.set_ylabel("time to write the matrix (log scale)")
    _header(
        fig,
        ax,
        f"Time to write {_matrix_words(s)} to a new file",
        "msglc writes the nested lists (or a NumPy array), h5py a NumPy array; best of 2 writes. "
        "Dotted: the floors, plain msgpack encoded by msgspec and numpy.save. "
        "Dash-dot: converting the lists to the array h5py needs, not counted in h5py's times.",
        results,
        drawn,
    )
    return fig


def _read_time(plt: Any, results: dict[str, Any], count: int) -> Any:
    rows = [r for r in results["read"] if r["reads"] == count]
    if not rows:
        return None
    s = results["settings"]
    fig, ax = _figure(plt)
    drawn = _matrix_panel(ax, rows, "seconds", [1 << e for e in s["thresholds"]])
    _log_seconds(ax)
    ax.set_ylabel(f"time for {count:,} random reads (log scale)")
    styles = {style(series)["linestyle"] for series in drawn}
    key = ". ".join(text for linestyle, text in STYLE_KEY.items() if linestyle in styles)
    _header(
        fig,
        ax,
        f"Time to read {count:,} random elements of {_matrix_words(s)}, one at a time",
        f"Every system reads the same elements (i, j), with its file in the OS page cache. {key}. "
        "Hollow markers: "
        f"estimated from the reads done in the time budget of {s['budget']:g} s per configuration.",
        results,
        drawn,
    )
    return fig


def _file_size(plt: Any, results: dict[str, Any]) -> Any:
    rows = [{**r, "MB": r["bytes"] / 1e6} for r in results["size"]]
    if not rows:
        return None
    s = results["settings"]
    fig, ax = _figure(plt)
    drawn = _matrix_panel(ax, rows, "MB", [1 << e for e in s["thresholds"]])
    ax.set_ylim(bottom=0)
    ax.set_ylabel("file size (MB)")
    _header(
        fig,
        ax,
        f"File size of {_matrix_words(s)} ({s['size'] ** 2 * 8 / 1e6:,.1f} MB as float64)",
        "The files of the write-time figure. Msgpack takes 9 bytes a float (msglc's lists), a NumPy "
        "array or HDF5 dataset 8; random floats hardly compress. Dotted: the floors, the plain "
        "msgpack file and numpy.save's file.",
        results,
        drawn,
    )
    return fig


def _records_size(plt: Any, results: dict[str, Any]) -> Any:
    records = results.get("records") or []
    if not records:
        return None
    s = results["settings"]
    fig, ax = _figure(plt)
    drawn = _matrix_panel(ax, [{**r, "MB": r["bytes"] / 1e6} for r in records], "MB", [1 << e for e in s["thresholds"]])
    ax.set_ylim(bottom=0)
    ax.set_ylabel("file size (MB)")
    _header(
        fig,
        ax,
        f"File size of {s['records']:,} JSON-like records (a list of dicts)",
        "msglc by small-object threshold, plain and compressed with zstd. Dotted: the floors, the "
        "records as one plain msgpack file, and that file compressed whole with zstd, from which "
        "one record can be read only by decompressing everything before it.",
        results,
        drawn,
    )
    return fig


def _counts_axes(ax: Any, counts: list[int], xlabel: str) -> None:
    """An x axis of counts (threads, workers) and a y axis from 0, gridded."""
    ax.set_xticks(counts, [str(c) for c in counts])
    ax.set_xlabel(xlabel)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)


_WHY_SMALL = {
    "bulk_read": "the whole read takes milliseconds:\nstarting threads and timer noise weigh as much as the work",
    "dask_reduce": "Dask's fixed cost of scheduling the tasks\noutweighs the sum itself",
}


def _scaling_title(ax: Any, name: str, nbytes: int, what: str) -> str:
    """The title of a scaling figure; when its data is too small to show scaling, the title
    says so first and a plain label lies over the axes."""
    if nbytes >= SCALING_MIN_MB[name] * 1e6:
        return what[0].upper() + what[1:]
    ax.text(
        0.5,
        0.5,
        f"{TOO_SMALL.upper()}\nat {nbytes / 1e6:,.0f} MB {_WHY_SMALL[name]}.\n"
        f"A run with {SCALING_MIN_MB[name]} MB or more (the default without --quick) shows it.",
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=13,
        color="#b00000",
        bbox={"facecolor": "white", "edgecolor": "#b00000", "alpha": 0.9},
        zorder=10,
    )
    return f"{TOO_SMALL[0].upper()}{TOO_SMALL[1:]}: {what}"


# Uncompressed reads are 5-20x faster than any decompression: in the table, not the figure.
_BULK_UNCOMPRESSED = ("msglc NumPy array", "h5py uncompressed", "msglc uncompressed")


def _bulk(plt: Any, results: dict[str, Any]) -> Any:
    """MB/s of the decompressed array read whole, by threads; a series without a thread count
    (h5py: one thread) has its marker at 1 and a line across for comparison."""
    rows = [r for r in results.get("bulk") or [] if r["series"] not in _BULK_UNCOMPRESSED]
    if not rows:
        return None
    threads = sorted({r["threads"] for r in rows if r["threads"] is not None}) or [1]
    fig, ax = _figure(plt)
    by_series: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_series[row["series"]].append(row)
    nbytes = rows[0]["nbytes"]
    sizes = [f"File sizes (the array: {nbytes / 1e6:,.1f} MB):"]
    for series, points in by_series.items():
        mbps = [p["nbytes"] / p["seconds"] / 1e6 for p in points]
        file_mb = points[0]["bytes"] / 1e6
        ratio = points[0]["nbytes"] / points[0]["bytes"]
        sizes.append(f"{series}: {file_mb:,.2f} MB (compression ratio {ratio:.1f})")
        if points[0]["threads"] is None:
            line = _line(ax, series, [threads[0], threads[-1]], [mbps[0]] * 2, markers=False)
            if 1 in threads:  # where it was measured
                ax.plot([1], mbps[:1], "o", color=line.get_color(), zorder=line.get_zorder(), label="_measured")
        else:
            _line(ax, series, [p["threads"] for p in points], mbps, markers=True)
            if not all(p.get("read_threads_applied", True) for p in points):
                sizes.append(f"({series}: no read_threads option, every point is its default)")
    drawn = list(by_series)
    _counts_axes(ax, threads, "threads decompressing (msglc read_threads; h5py reads on one thread)")
    ax.set_ylabel("MB/s of the decompressed array (best of 3)")
    _legend(ax)
    _note(ax, sizes)
    what = f"reading a compressed {nbytes / 1e6:,.0f} MB float64 array whole, by threads"
    _header(
        fig,
        ax,
        _scaling_title(ax, "bulk_read", nbytes, what),
        "A smooth field that compresses well, stored in zstd frames (msglc) or compressed chunks "
        "(h5py) of 1 MB of whole rows; each read opens the file afresh, so nothing is cached. h5py "
        "decompresses on one thread: its line across is the one-thread value.",
        results,
        drawn,
    )
    return fig


def _slabs(plt: Any, results: dict[str, Any]) -> Any:
    """Microseconds per random block of the matrix as an array, a bar per series."""
    rows = sorted(results.get("slabs") or [], key=lambda r: _order(r["series"]))
    if not rows:
        return None
    fig, ax = _figure(plt)
    for k, row in enumerate(rows):
        us = row["seconds"] * 1e6
        bars = ax.barh([len(rows) - 1 - k], [us], color=style(row["series"])["color"], label=row["series"])
        ax.bar_label(bars, [f"{us:,.0f} us"], padding=3, fontsize=8)
    ax.set_yticks([])
    ax.set_xlim(0, max(r["seconds"] for r in rows) * 1e6 * 1.2)
    ax.set_xlabel(f"time to read one block (us; best of 3 rounds of {rows[0]['blocks']:,} blocks)")
    ax.grid(True, axis="x", alpha=0.3)
    _legend(ax)
    _note(ax, ["File sizes:", *(f"{r['series']}: {r['bytes'] / 1e6:,.2f} MB" for r in rows)])
    side, chunk, n = rows[0]["side"], rows[0]["chunk"], rows[0]["n"]
    drawn = [r["series"] for r in rows]
    _header(
        fig,
        ax,
        f"Time to read a random {side} x {side} block of a {n:,} x {n:,} float64 array ({n * n * 8 / 1e6:,.0f} MB)",
        f"Random floats, the blocks chunked storage serves best: msglc stores the array in C order (plain) or "
        f"in {chunk} x {chunk} tiles (zstd), h5py in {chunk} x {chunk} chunks, without a filter or compressed by "
        "hdf5plugin's codecs at level 3. Each file is opened once with the default caches of decompressed "
        "chunks or frames (h5py's, msglc's 16 frames), both smaller than the array, and every series reads "
        "the same blocks, in turns; the file in the OS page cache.",
        results,
        drawn,
    )
    return fig


def _scale(plt: Any, results: dict[str, Any]) -> Any:
    """MB/s of an array summed through Dask, by worker processes, msglc against h5py."""
    rows = results.get("scale") or []
    if not rows:
        return None
    workers = sorted({r["workers"] for r in rows})
    fig, ax = _figure(plt)
    drawn = list(dict.fromkeys(r["series"] for r in rows))
    for series in drawn:
        points = sorted((r for r in rows if r["series"] == series), key=lambda r: r["workers"])
        mbps = [p["nbytes"] / p["seconds"] / 1e6 for p in points]
        _line(ax, series, [p["workers"] for p in points], mbps, markers=True)
    _counts_axes(ax, workers, "Dask worker processes (one thread each)")
    ax.set_ylabel("MB/s summed (best of 3)")
    _legend(ax)
    nbytes = rows[0]["nbytes"]
    what = f"summing a {nbytes / 1e6:,.0f} MB float64 array through Dask, by worker processes"
    _header(
        fig,
        ax,
        _scaling_title(ax, "dask_reduce", nbytes, what),
        f"sum(axis=0) over the same chunks of {rows[0]['chunk_rows']:,} rows: msglc.dask.to_array on the "
        "msglc archive, dask.array.from_array on the h5py dataset.",
        results,
        drawn,
    )
    return fig


def _bars(ax: Any, series: str, xs: list[float], ratios: list[float], width: float, alts: Alternatives) -> None:
    """Bars of size ratios rising from 1x (the whole-file zstd floor) and labelled with their
    value; a floor's bar is hollow and dotted, as floors are dotted lines elsewhere."""
    kw = style(series, alts)
    if split(series, alts)[0].role == "floor":
        look = {"fill": False, "edgecolor": kw["color"], "linestyle": kw["linestyle"], "linewidth": kw["linewidth"]}
    else:
        look = {"color": kw["color"], "edgecolor": edge(series, alts), "linewidth": 0.8}
    heights = [r - 1 for r in ratios]
    bars = ax.bar(xs, heights, width, bottom=1, label=series, zorder=kw["zorder"], **look)
    ax.bar_label(bars, [f"{r:.2f}" for r in ratios], fontsize=6, padding=1)


def _realdata(plt: Any, results: dict[str, Any]) -> Any:
    """Per dataset of real public JSON, two panels: each archive's size over the whole plain
    msgpack compressed by zstd -3 (bars rising from that floor, 1x), and the time of one value
    read with ``cached=False`` (a dot at the median, a whisker up to p90), with issue 31's
    targets as short black lines across each dataset's group."""
    measured = results.get("realdata") or []
    if not measured:
        return None
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    from .targets.realdata import FLOOR_PLAIN, FLOOR_ZSTD, READ_TARGET_US, SIZE_TARGET

    names = list(dict.fromkeys(s["series"] for m in measured for s in m["series"]))
    alts = alternatives(names)
    for name in (FLOOR_PLAIN, FLOOR_ZSTD, *names):
        split(name, alts)  # a series without a colour stops the figure before anything is drawn
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(12.0, 1.6 * len(measured) + 5), 12), layout="constrained")

    def found(m: dict[str, Any], series: str) -> dict[str, Any] | None:
        return next((s for s in m["series"] if s["series"] == series), None)

    def targets(ax: Any, values: list[float], order: float) -> None:
        for i, value in enumerate(values):
            ax.plot([i - 0.42, i + 0.42], [value] * 2, color="black", linewidth=2.2, zorder=order, label="_target")

    sized = [FLOOR_PLAIN, *names]
    width = 0.8 / len(sized)
    ratios_drawn = [1.0]
    for k, series in enumerate(sized):
        xs, ratios = [], []
        for i, m in enumerate(measured):
            s = found(m, series)
            if series == FLOOR_PLAIN or s is not None:
                xs.append(i - 0.4 + width * (k + 0.5))
                ratios.append((s["bytes"] if s else m["plain_bytes"]) / m["zstd_bytes"])
        _bars(top, series, xs, ratios, width, alts)
        ratios_drawn += ratios
    top.axhline(1, label=FLOOR_ZSTD, **style(FLOOR_ZSTD))
    size_targets = [SIZE_TARGET[m["kind"]] for m in measured]
    targets(top, size_targets, 4)  # across the bars (a bar through it misses), under the floors
    top.set_yscale("log")
    top.yaxis.set_major_locator(FixedLocator([1, 1.15, 1.5, 2, 3, 5, 10, 20, 50, 100]))
    top.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}x"))
    top.yaxis.set_minor_locator(NullLocator())
    top.set_ylim(min(ratios_drawn) * 0.9, max(ratios_drawn + size_targets) * 1.4)  # room for the labels
    top.set_ylabel("size / the whole plain msgpack by zstd -3 (log scale)")
    top.set_title(
        "Size of each archive against the whole plain msgpack compressed by zstd -3 (lower is better)\n"
        + textwrap.fill(
            "Every bar starts at the dotted line at 1x, the whole file compressed as one zstd frame: the "
            "size to beat, which gives up random access (a bar going down is an archive smaller than it). "
            "The hollow dotted bar is the plain msgpack file. "
            f"Short black lines: issue 31's target for a compressed archive, {SIZE_TARGET['document']:g}x "
            f"for a document, {SIZE_TARGET['lookup table']:g}x for a lookup table.",
            130,
        ),
        fontsize=9,
    )

    width = 0.8 / len(names)
    for k, series in enumerate(names):
        xs, median, p90 = [], [], []
        for i, m in enumerate(measured):
            s = found(m, series)
            if s is not None:
                xs.append(i - 0.4 + width * (k + 0.5))
                median.append(s["read_median_seconds"])
                p90.append(s["read_p90_seconds"])
        kw = style(series, alts)
        bottom.vlines(xs, median, p90, color=edge(series, alts), linewidth=1.4, zorder=kw["zorder"], label="_p90")
        bottom.plot(xs, median, linestyle="none", marker="o", markersize=7, color=kw["color"],
                    markeredgecolor=edge(series, alts), zorder=kw["zorder"], label=series)  # fmt: skip
    targets(bottom, [READ_TARGET_US[m["kind"]] * 1e-6 for m in measured], 1.5)  # under the dots
    _log_seconds(bottom)
    bottom.set_ylabel("one value, cached=False (log scale)")
    paths = sorted({m["paths"] for m in measured})
    shades = " Paler shades of a colour: the run's --option alternatives of that series." if alts else ""
    bottom.set_title(
        f"Time to read one value from an open reader, {'-'.join(map(str, paths))} random leaf paths per dataset\n"
        + textwrap.fill(
            "Dot: the median; whisker: up to the 90th percentile. Every path is read once by each series, "
            f"the series taking turns. Short black lines: issue 31's target for the median, "
            f"{READ_TARGET_US['document']:g} us for a document, {READ_TARGET_US['lookup table']:g} us for a "
            f"lookup table.{shades}",
            130,
        ),
        fontsize=9,
    )

    labels = [
        f"{m['dataset']}{' (quick)' if m['quick'] else ''}\n{m['kind']}\n{m['plain_bytes'] / 1e6:.3g} MB msgpack"
        for m in measured
    ]
    for ax in (top, bottom):
        ax.set_xticks(range(len(measured)), labels, fontsize=7)
        ax.set_xlim(-0.5, len(measured) - 0.5)
        ax.grid(True, axis="y", alpha=0.3)
        _legend(ax, alts)
    quick = " (--quick: a subset of each)" if any(m["quick"] for m in measured) else ""
    fig.suptitle(f"{len(measured)} datasets of real public JSON in msglc archives{quick}", fontsize=10)
    fig.supxlabel(_footer(results, names, alts), fontsize=7, color="0.35", x=0.01, ha="left")
    return fig
