"""What the benchmark's figure tests share: the figures ``benchmark.plots.draw_all`` makes,
caught as they are saved, and the checks that every figure tells the truth at a glance.

The library names are written out here rather than taken from ``plots.LIBRARIES``, so that the
checks do not trust the table they check."""

import re
from pathlib import Path
from unittest import mock

from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.text import Text

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
    "floor: msgspec encode + write",
    "floor: pread + decode",
    "floor: plain msgpack",
    "floor: plain msgpack, whole file zstd -3",
    "floor: numpy.save",
    "list to numpy array (h5py's input, not in its times)",
)
PATTERNS = ("reader[i][j]", "a[i, j]", "ds[i, j]", "ds[i][j]")
SIZE_FIGURES = ("file_size", "records_size")


def draw(results: dict, out: Path) -> dict[str, Figure]:
    """The figures ``draw_all`` makes from ``results``, by name (nothing is written)."""
    caught: dict[str, Figure] = {}

    def savefig(self, fname, *args, **kwargs):
        caught[Path(fname).stem] = self

    with mock.patch.object(Figure, "savefig", savefig):
        plots.draw_all(results, out)
    return caught


def library(label: str) -> str:
    """The library of a series label: the longest known name it starts with."""
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


def series_lines(fig: Figure) -> list:
    """The lines that draw a series (helper markers are labelled with a leading underscore)."""
    (ax,) = fig.axes
    return [line for line in ax.get_lines() if not line.get_label().startswith("_") and len(line.get_xdata())]


def texts(fig: Figure) -> list[str]:
    """Every piece of text in the figure: titles, axis labels, tick labels, legend, notes."""
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def named(text: str) -> set[str]:
    """The libraries (and the families "msglc", "h5py") a text names."""
    found = set()
    for name in sorted((n for n in LIBRARIES if n != "msglc"), key=len, reverse=True):
        if name in text:
            found.add(name)
            text = text.replace(name, " ")
    for family in ("msglc", "h5py"):
        if re.search(rf"\b{family}\b", text):
            found.add(family)
    return found


def legend_labels(fig: Figure) -> list[str]:
    (ax,) = fig.axes
    legends = [ax.get_legend(), *fig.legends]
    return [t.get_text() for legend in legends if legend is not None for t in legend.get_texts()]


def check_names(name: str, fig: Figure, series: set[str]) -> None:
    """The legend lists exactly the series drawn, by their names alone, and no text names a
    library or family that the figure does not draw."""
    drawn = [line.get_label() for line in series_lines(fig)]
    assert drawn, f"{name}: no series drawn"
    assert sorted(legend_labels(fig)) == sorted(drawn), f"{name}: legend {legend_labels(fig)} vs drawn {drawn}"
    assert set(drawn) <= series, f"{name}: labels that are not series names: {set(drawn) - series}"
    libraries = {library(label) for label in drawn}
    families = {lib.split()[0] for lib in libraries}
    for text in texts(fig):
        for what in named(text):
            assert what in libraries | families, f"{name} names {what!r}, which it does not draw: {text!r}"


def check_axes(name: str, fig: Figure) -> None:
    """Size axes start at zero; on a linear axis no two series pile up at its bottom; floors
    are drawn on top of every other series."""
    (ax,) = fig.axes
    bottom, top = ax.get_ylim()
    if name in SIZE_FIGURES:
        assert bottom == 0, f"{name}: the size axis starts at {bottom}"
    if ax.get_yscale() == "linear":
        piled = [
            line.get_label() for line in series_lines(fig) if max(line.get_ydata()) < bottom + 0.05 * (top - bottom)
        ]
        assert len(piled) <= 1, f"{name}: {piled} pile up at the bottom of the axis"
    floors = [line.get_zorder() for line in series_lines(fig) if kind(line.get_label()) == "floor"]
    others = [line.get_zorder() for line in series_lines(fig) if kind(line.get_label()) != "floor"]
    if floors and others:
        assert min(floors) > max(others), f"{name}: a floor is drawn under another series"


def check_styles(figures: dict[str, Figure]) -> None:
    """One colour per library and one line style per kind, the same in every figure; no two
    libraries of one figure share a colour; the kinds a reader must tell apart look apart."""
    colours: dict[str, set[str]] = {}
    styles: dict[str, set[str]] = {}
    for name, fig in figures.items():
        in_figure: dict[str, str] = {}
        for line in series_lines(fig):
            label = line.get_label()
            colour = to_hex(line.get_color())
            colours.setdefault(library(label), set()).add(colour)
            styles.setdefault(kind(label), set()).add(line.get_linestyle())
            lib = in_figure.setdefault(colour, library(label))
            assert lib == library(label), f"{name}: {lib} and {library(label)} share the colour {colour}"
    for lib, seen in colours.items():
        assert len(seen) == 1, f"{lib} is drawn in the colours {seen}"
    for what, seen in styles.items():
        assert len(seen) == 1, f"{what} is drawn in the line styles {seen}"
    style = {what: seen.pop() for what, seen in styles.items()}
    if "ds[i, j]" in style and "ds[i][j]" in style:
        assert style["ds[i, j]"] != style["ds[i][j]"]
    if "floor" in style:
        assert all(style["floor"] != s for what, s in style.items() if what != "floor")


def check_all(results: dict, out: Path) -> dict[str, Figure]:
    """Every check on every figure drawn from ``results``; returns the figures."""
    figures = draw(results, out)
    series = {
        r["series"] for part in ("write", "read", "size", "records", "bulk", "scale") for r in results.get(part) or []
    }
    for name, fig in figures.items():
        check_names(name, fig, series)
        check_axes(name, fig)
    check_styles(figures)
    return figures
