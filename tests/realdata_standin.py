"""A tiny synthetic stand-in for the realdata benchmark's datasets: the same folders and file
layouts as the fetched packages (``benchmark.datasets``), a few kilobytes each, so the section
and the suite run in tests without the network (``--data-dir`` on it, ``--offline``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec

from benchmark.datasets import DATASETS


def _json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def _compat(i: int) -> dict[str, object]:
    return {"__compat": {"support": {"chrome": {"version_added": str(i)}, "firefox": {"version_added": False}}}}


def make_standin(data_dir: Path) -> Path:
    """Write every dataset's folder into ``data_dir``; returns ``data_dir``."""
    folder = {name: data_dir / d.folder for name, d in DATASETS.items()}
    _json(
        folder["mdn-bcd"] / "package" / "data.json",
        {
            "__meta": {"version": "0.0.0"},
            "api": {f"Api{i}": _compat(i) for i in range(30)},
            "css": {"properties": {f"prop-{i}": _compat(i) for i in range(30)}},
            "html": {"elements": {f"el{i}": {"attr": _compat(i), **_compat(i)} for i in range(40)}},
        },
    )
    for k in range(41):  # quick keeps every 20th: 3 of them
        icons = {f"icon{i}": {"body": f"<path d='M{i} {k}h{i}v{k}'/>"} for i in range(25)}
        _json(folder["iconify"] / "package" / "json" / f"set{k:02}.json", {"prefix": f"set{k}", "icons": icons})
    data = folder["wordfreq"] / "wordfreq" / "data"
    data.mkdir(parents=True, exist_ok=True)
    for name in ("small_en", "small_de", "large_en", "_chinese_mapping"):
        if name.startswith("_"):  # not a word list: the loader leaves it out
            packed: object = {"x": "y"}
        else:
            packed = [
                {"format": "cB", "version": 1},
                [],
                *[[f"{name}-w{b}-{i}" for i in range(b % 4)] for b in range(60)],
            ]
        (data / f"{name}.msgpack.gz").write_bytes(gzip.compress(msgspec.msgpack.encode(packed)))
    for loc in ("en", "de", "fr", "ja"):
        for doc in ("ca-gregorian", "dateFields"):
            months = {str(m): f"{loc}-{doc}-{m}" for m in range(1, 13)}
            _json(folder["cldr-dates"] / "package" / "main" / loc / f"{doc}.json", {"main": {loc: {"months": months}}})
    generated = folder["github-openapi"] / "package" / "generated"
    for spec in ("api.github.com", "ghes-3.19"):
        paths = {f"/repos/{i}": {"get": {"summary": f"get {i}", "parameters": [{"name": "owner"}]}} for i in range(30)}
        _json(generated / f"{spec}.json", {"openapi": "3.0.3", "paths": paths})
        _json(generated / f"{spec}.deref.json", {"not": "loaded"})
    for loc in ("en", "de"):
        records = [{"label": f"{loc} emoji {i}", "hexcode": f"{i:04X}", "tags": ["a", "b"][: i % 3]} for i in range(50)]
        _json(folder["emojibase"] / "package" / loc / "data.json", records)
    _json(folder["npm-names"] / "package" / "names.json", [f"package-{i}" for i in range(2000)])
    return data_dir
