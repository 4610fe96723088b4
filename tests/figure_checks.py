"""What the benchmark's figure tests share: the figures ``benchmark.plots.draw_all`` makes,
caught as they are saved, and the checks that every figure tells the truth at a glance.

The library names are written out here rather than taken from ``plots.LIBRARIES``, so that the
checks do not trust the table they check. A series is drawn as a line (or a line of markers) or,
in the realdata figure, as bars; its colour is the line's, or the bars' fill (their edge when
hollow). The realdata figure's --option alternatives ("msglc zstd, NAME=VALUE") are libraries
of their own, each a tint of its base's colour."""

import os
import re
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import to_hex, to_rgb
from matplotlib.container import BarContainer, Container
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.typing import LineStyleType

from benchmark import plots

LIBRARIES = (
    "msglc",
    "msglc zstd",
    "msglc NumPy array",
    "msglc NumPy array zstd",
    "h5py contiguous",
    "h5py uncompressed",
    "h5py gzip",
    "h5py gzip + shuffle",
    "h5py lzf",
    "h5py Blosc2 zstd + shuffle",
    "h5py Zstd",
    "floor: msgspec encode + write",
    "floor: pread + decode",
    "floor: plain msgpack",
    "floor: plain msgpack, whole file zstd -3",
    "floor: numpy.save",
    "list to numpy array (h5py's input, not in its times)",
)
PATTERNS = ("reader[i][j]", "a[i, j]", "ds[i, j]", "ds[i][j]")
SIZE_FIGURES = ("file_size", "records_size")


def draw(results: dict[str, Any], out: Path) -> dict[str, Figure]:
    """The figures ``draw_all`` makes from ``results`` (the benchmark's JSON), by name (nothing
    is written)."""
    caught: dict[str, Figure] = {}

    def savefig(self: Figure, fname: str | os.PathLike[str], *args: object, **kwargs: object) -> None:
        caught[Path(fname).stem] = self

    with mock.patch.object(Figure, "savefig", savefig):
        plots.draw_all(results, out)
    return caught


def base(label: str) -> str | None:
    """The library an --option alternative changes a setting of ("msglc zstd, NAME=VALUE"), or None."""
    head, sep, _ = label.partition(", ")
    return head if sep and head in LIBRARIES and label not in LIBRARIES else None


def library(label: str) -> str:
    """The library of a series label: the longest known name it starts with; an alternative
    is a library of its own."""
    if base(label):
        return label
    names = [name for name in LIBRARIES if label == name or label.startswith(name + " ")]
    assert names, f"{label!r} is not a known series"
    return max(names, key=len)


def kind(label: str) -> str:
    """The kind of read or measurement of a series label."""
    if label.startswith("floor:"):
        return "floor"
    if label.startswith("list to numpy"):
        return "reference"
    return next((p for p in PATTERNS if label.endswith(" " + p)), "value")


def label_of(drawn: Artist | Container) -> str:
    """The label of a line or a bar group. Matplotlib keeps labels as strings (its stubs say
    ``object``, or ``str | None`` for containers); a missing one would be a plotting bug."""
    label = drawn.get_label()
    assert isinstance(label, str), f"{drawn!r} has no label"
    return label


def series_lines(fig: Figure, axes: Axes | None = None) -> list[Line2D]:
    """The lines that draw a series, in every axes or in ``axes`` (helper markers and lines are
    labelled with a leading underscore)."""
    return [
        line
        for ax in ([axes] if axes is not None else fig.axes)
        for line in ax.get_lines()
        if not label_of(line).startswith("_") and len(np.asarray(line.get_xdata()))
    ]


def series_bars(fig: Figure, axes: Axes | None = None) -> list[BarContainer]:
    """The bar groups that draw a series, in every axes or in ``axes``."""
    return [
        bars
        for ax in ([axes] if axes is not None else fig.axes)
        for bars in ax.containers
        if isinstance(bars, BarContainer) and not label_of(bars).startswith("_") and len(bars)
    ]


def marks(fig: Figure, axes: Axes | None = None) -> list[tuple[str, str, float]]:
    """(label, colour, drawing order) of every series drawn: its lines and its bars."""
    out = [(label_of(line), to_hex(line.get_color()), line.get_zorder()) for line in series_lines(fig, axes)]
    for bars in series_bars(fig, axes):
        patch = bars.patches[0]
        colour = patch.get_facecolor() if patch.get_fill() else patch.get_edgecolor()
        out.append((label_of(bars), to_hex(colour), patch.get_zorder()))
    return out


def texts(fig: Figure) -> list[str]:
    """Every piece of text in the figure: titles, axis labels, tick labels, legend, notes."""
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def named(text: str) -> set[str]:
    """The libraries (and the families "msglc", "h5py") a text names."""
    found: set[str] = set()
    for name in sorted((n for n in LIBRARIES if n != "msglc"), key=len, reverse=True):
        if name in text:
            found.add(name)
            text = text.replace(name, " ")
    for family in ("msglc", "h5py"):
        if re.search(rf"\b{family}\b", text):
            found.add(family)
    return found


def legend_labels(fig: Figure, axes: Axes | None = None) -> list[str]:
    """The labels of the legend of ``axes``, or of every legend of the figure."""
    legends = [axes.get_legend()] if axes is not None else [*(ax.get_legend() for ax in fig.axes), *fig.legends]
    return [t.get_text() for legend in legends if legend is not None for t in legend.get_texts()]


def check_names(name: str, fig: Figure, series: set[str]) -> None:
    """Each panel's legend lists exactly the series drawn in it, by their names alone, and no
    text names a library or family that the figure does not draw."""
    drawn = [label for label, _, _ in marks(fig)]
    assert drawn, f"{name}: no series drawn"
    for ax in fig.axes:
        here, listed = [label for label, _, _ in marks(fig, ax)], legend_labels(fig, ax)
        assert sorted(listed) == sorted(here), f"{name}: legend {listed} vs drawn {here}"
    assert not fig.legends, f"{name}: a figure legend beside the panels' own"
    assert set(drawn) <= series, f"{name}: labels that are not series names: {set(drawn) - series}"
    libraries = {library(label) for label in drawn} | {head for label in drawn if (head := base(label))}
    families = {lib.split()[0] for lib in libraries}
    for text in texts(fig):
        for what in named(text):
            assert what in libraries | families, f"{name} names {what!r}, which it does not draw: {text!r}"


def check_axes(name: str, fig: Figure) -> None:
    """Size axes start at zero; on a linear axis no two series pile up at its bottom; floors
    are drawn on top of every other series of their panel."""
    for ax in fig.axes:
        bottom, top = ax.get_ylim()
        if name in SIZE_FIGURES:
            assert bottom == 0, f"{name}: the size axis starts at {bottom}"
        if ax.get_yscale() == "linear":
            piled = [
                label_of(line)
                for line in series_lines(fig, ax)
                if max(np.asarray(line.get_ydata())) < bottom + 0.05 * (top - bottom)
            ]
            assert len(piled) <= 1, f"{name}: {piled} pile up at the bottom of the axis"
        floors = [order for label, _, order in marks(fig, ax) if kind(label) == "floor"]
        others = [order for label, _, order in marks(fig, ax) if kind(label) != "floor"]
        if floors and others:
            assert min(floors) > max(others), f"{name}: a floor is drawn under another series"


def check_styles(figures: dict[str, Figure]) -> None:
    """One colour per library and one line style per kind, the same in every figure; no two
    libraries of one figure share a colour; the kinds a reader must tell apart look apart."""
    colours: dict[str, set[str]] = {}
    styles: dict[str, set[LineStyleType]] = {}
    for name, fig in figures.items():
        in_figure: dict[str, str] = {}
        for label, colour, _ in marks(fig):
            colours.setdefault(library(label), set()).add(colour)
            lib = in_figure.setdefault(colour, library(label))
            assert lib == library(label), f"{name}: {lib} and {library(label)} share the colour {colour}"
        for line in series_lines(fig):
            if line.get_linestyle() != "None":  # markers alone have no line style
                styles.setdefault(kind(label_of(line)), set()).add(line.get_linestyle())
    for lib, hues in colours.items():
        assert len(hues) == 1, f"{lib} is drawn in the colours {hues}"
    for what, seen in styles.items():
        assert len(seen) == 1, f"{what} is drawn in the line styles {seen}"
    style = {what: seen.pop() for what, seen in styles.items()}
    if "ds[i, j]" in style and "ds[i][j]" in style:
        assert style["ds[i, j]"] != style["ds[i][j]"]
    if "floor" in style:
        assert all(style["floor"] != s for what, s in style.items() if what != "floor")


def check_realdata(fig: Figure) -> None:
    """The realdata figure: each library in the colour of ``plots.LIBRARIES`` (``check_styles``
    makes it the colour of the other figures too); each --option alternative in a tint of its
    base's colour (between it and white), edged in the base's colour, unlike any other; the
    size bars start at the 1x floor, the whole file by zstd -3, whose dotted line is drawn."""
    table = {lib: to_hex(plots.style(lib)["color"]) for lib in LIBRARIES}
    white = (1.0, 1.0, 1.0)
    tints: dict[str, str] = {}
    for label, colour, _ in marks(fig):
        head = base(label)
        if head is None:
            assert colour == table[library(label)], f"realdata: {label} in {colour}, not {table[library(label)]}"
            continue
        pure = to_rgb(table[head])
        keep = [(w - c) / (w - p) for c, p, w in zip(to_rgb(colour), pure, white, strict=True) if w != p]
        assert max(keep) - min(keep) < 0.02 and 0 < min(keep) < 1, f"realdata: {label}'s {colour} is no tint of {head}"
        assert colour not in table.values(), f"realdata: {label} has the colour of a library, {colour}"
        assert tints.setdefault(colour, label) == label, f"realdata: {label} and {tints[colour]} share {colour}"
    for bars in series_bars(fig):
        label = label_of(bars)
        head = base(label)
        for patch in bars.patches:
            assert patch.get_y() == 1, f"realdata: a bar of {label} starts at {patch.get_y()}, not at 1x"
            assert head is None or to_hex(patch.get_edgecolor()) == table[head], f"realdata: {label}'s edge"
    size_panel = fig.axes[0]
    floors = [line for line in series_lines(fig, size_panel) if kind(label_of(line)) == "floor"]
    assert [np.asarray(line.get_ydata())[0] for line in floors] == [1]
    assert size_panel.get_ylim()[0] < 1 < size_panel.get_ylim()[1]


def check_all(results: dict[str, Any], out: Path) -> dict[str, Figure]:
    """Every check on every figure drawn from ``results``; returns the figures."""
    figures = draw(results, out)
    series = {
        r["series"]
        for part in ("write", "read", "size", "records", "bulk", "slabs", "scale")
        for r in results.get(part) or []
    }
    if results.get("realdata"):  # its floors come from each dataset's sizes, not from rows
        series |= {s["series"] for m in results["realdata"] for s in m["series"]}
        series |= {"floor: plain msgpack", "floor: plain msgpack, whole file zstd -3"}
    for name, fig in figures.items():
        check_names(name, fig, series)
        check_axes(name, fig)
    check_styles(figures)
    if "realdata" in figures:
        check_realdata(figures["realdata"])
    return figures
