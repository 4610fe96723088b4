"""The ``realdata`` section (issue 31): archives of real public JSON that nobody here wrote,
plain and compressed, against plain msgpack and the whole file compressed by ``zstd -3``.

Per dataset (``benchmark.datasets``: fetched with npm or pip into ``--data-dir``), in a child
process of its own (iconify's object alone takes about 1 GB; every dataset starts from a clean
heap), for msglc at its defaults, with ``compression="zstd"``, and each ``--option``
alternative:

- sizes: plain msgpack (``msgspec`` encode), the whole of it by zstd -3 (the size floor:
  no random access), each archive;
- dump time against encode + write (plain) or encode + zstd -3 + write (compressed), in turns;
- open: median time of fresh ``LazyReader(path, cached=False)`` (page cache warm), and the
  bytes and requests it reads (``msglc.LazyStats``);
- one value: a few hundred leaf paths from a seeded random walk of the object, each read once
  from an open reader with ``cached=False``, the series in turns: median and p90, bytes read;
- ``to_obj()`` against read + (zstd decompress +) ``msgspec`` decode of the whole plain
  msgpack, in turns;
- for a compressed archive, what one of its data frames takes to decompress (zstd alone,
  median over a sample): the least a read of a value in it pays, on this machine. Reported
  beside the one-value median, it tells a slower machine from a slower read.

Targets of issue 31, where they apply: compressed size <= 1.15x the whole-file zstd on
documents, <= 1.5x on lookup tables; open <= 64 KB read and <= 1 ms; one value <= 50 us median
(<= 30 us for a lookup-table key); ``to_obj`` <= 1.2x its floor; compressed dump <= 1.5x its
floor. Plain archives' size and dump are reported without a target.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, cast

import msgspec

import msglc
from msglc.format.frames import RAW  # FrameInfo.filter of a frame read in place, never decompressed
from msglc.io.framed import SMALL_FRAME  # data frames this small stay cached: no read decompresses them twice

from ..compressed import LEVEL, zstd_whole
from ..datasets import DATASETS, DEFAULT_DATA_DIR, FETCH_TIMEOUT, fetch, parse_names
from ..timing import interleaved
from .common import Row, fresh

BASE_SERIES: tuple[tuple[str, dict[str, Any]], ...] = (("msglc", {}), ("msglc zstd", {"compression": "zstd"}))
FLOOR_PLAIN = "floor: plain msgpack"
FLOOR_ZSTD = f"floor: plain msgpack, whole file zstd -{LEVEL}"
PATHS, PATHS_QUICK = 300, 100  # leaf paths read once each
OPENS, OPENS_QUICK = 21, 11  # fresh readers per series for the open's median
SEED = 31
FRAME_SAMPLE = 200  # data frames decompressed for the frame floor (at most)
CHECKOUT = Path(__file__).resolve().parents[2]  # the children run ``python -m benchmark.targets`` here

# what issue 31 asks of a compressed archive, by the kind of data
SIZE_TARGET = {"document": 1.15, "lookup table": 1.5}
READ_TARGET_US = {"document": 50.0, "lookup table": 30.0}
OPEN_TARGET_MS, OPEN_TARGET_KB = 1.0, 64
TO_OBJ_TARGET, DUMP_TARGET = 1.2, 1.5


# -- the command line (shared by python -m benchmark.targets and python -m benchmark) ---------------------------
def _value(text: str) -> Any:
    low = text.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_option(text: str) -> tuple[str, dict[str, Any]]:
    """``--option "name=value[,name=value...]"``: one alternative, named by its text. It is
    compressed (``compression="zstd"``) unless it sets ``compression`` itself (``none``: plain).
    Values are ints, floats, true/false, none, or else strings."""
    options: dict[str, Any] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"expected name=value[,name=value...], got {text!r}")
        options[name.strip()] = _value(value.strip())
    label = ", ".join(f"{k}={v}" for k, v in options.items())
    options = {"compression": "zstd", **options}
    return ("msglc zstd, " if options["compression"] else "msglc, ") + label, options


def _names(text: str) -> tuple[str, ...]:
    try:
        return parse_names(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_arguments(parser: argparse.ArgumentParser, default: str) -> None:
    group = parser.add_argument_group("real data (the realdata section)")
    group.add_argument(
        "--datasets",
        type=_names,
        help=f"comma-separated datasets of the real-data section, or all (default {default}): {', '.join(DATASETS)}",
    )
    group.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help=f"where the datasets are fetched and cached (default {DEFAULT_DATA_DIR})",
    )
    group.add_argument("--offline", action="store_true", help="use only datasets already in --data-dir; fetch nothing")
    group.add_argument(
        "--option",
        dest="options",
        action="append",
        type=parse_option,
        default=[],
        metavar="NAME=VALUE[,NAME=VALUE]",
        help="an alternative msglc setting measured beside the defaults (repeatable), compressed unless it sets "
        "compression=none, e.g. --option small_obj_optimization_threshold=65536",
    )


def check_options(alternatives: list[tuple[str, dict[str, Any]]]) -> str | None:
    """None if msglc takes every alternative's options, else what it said about the first it refused."""
    for label, options in alternatives:
        try:
            msglc.dumps({"a": [1, 2, 3]}, **options)
        except (TypeError, ValueError, ImportError) as e:
            return f"--option {label.split(', ', 1)[1]}: msglc refused it: {e}"
    return None


def series_of(alternatives: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return [*BASE_SERIES, *alternatives]


# -- the parent: fetch, run one child per dataset, rows ----------------------------------------------------------
def fetch_all(names: tuple[str, ...], data_dir: Path, offline: bool, timeout: float = FETCH_TIMEOUT) -> dict[str, Path]:
    """Every dataset's unpacked folder, fetched first where absent (``timeout`` seconds at most
    for each download); ``DataUnavailable`` names the first that cannot be had."""
    folders = {}
    for name in names:
        if not (data_dir / DATASETS[name].folder).is_dir() and not offline:
            print(f"realdata: fetching {DATASETS[name].spec} into {data_dir} ...", file=sys.stderr, flush=True)
        folders[name] = fetch(DATASETS[name], data_dir, offline, timeout)
    return folders


def collect(
    folders: dict[str, Path],
    quick: bool,
    series: list[tuple[str, dict[str, Any]]],
    tmp: Path,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """One measurement dict per dataset, each made by a child process in a folder of ``tmp``."""
    out = []
    for name, folder in folders.items():
        if progress:
            progress(f"realdata: {name}")
        else:
            print(f"realdata: measuring {name} ...", file=sys.stderr, flush=True)
        work = tmp / f"realdata-{name}"
        work.mkdir(parents=True, exist_ok=True)
        spec = {
            "dataset": name,
            "folder": str(folder.resolve()),
            "quick": quick,
            "series": series,
            "tmp": str(work.resolve()),
        }
        run = subprocess.run(
            [sys.executable, "-m", "benchmark.targets", "--realdata-child", json.dumps(spec)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=CHECKOUT,
        )
        shutil.rmtree(work, ignore_errors=True)  # iconify's files alone take about 1.2 GB
        if run.returncode != 0:
            raise RuntimeError(f"measuring the dataset {name} failed (exit {run.returncode}); its error is above")
        out.append(json.loads(run.stdout.strip().splitlines()[-1]))
    return out


def realdata_targets(
    folders: dict[str, Path], quick: bool, series: list[tuple[str, dict[str, Any]]], tmp: Path
) -> tuple[list[Row], list[dict[str, Any]]]:
    measured = collect(folders, quick, series, tmp)
    return [row for m in measured for row in rows_of(m)], measured


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def _lazystats(bytes_file: float, bytes_stats: float) -> str:
    """A note when ``msglc.LazyStats`` counted other bytes than the file saw."""
    return "" if bytes_stats == bytes_file else f"; LazyStats counted {bytes_stats:,.0f}"


def rows_of(m: dict[str, Any]) -> list[Row]:
    """The table rows of one dataset's measurements, with issue 31's targets where they apply."""
    kind, floors = m["kind"], m["floors"]
    whole, plain = m["zstd_bytes"], m["plain_bytes"]
    ds = m["dataset"] + (" (quick)" if m["quick"] else "")
    subset = f"; quick: {m['subset']}" if m["quick"] else ""
    rows = [
        Row(f"{ds}: plain msgpack / whole file by zstd -{LEVEL}", plain / whole, "(reported)", True,
            f"{_mb(plain)} vs {_mb(whole)}; {m['shape']} ({m['source']}{subset})")
    ]  # fmt: skip
    size_limit, read_limit = SIZE_TARGET[kind], READ_TARGET_US[kind]
    for s in m["series"]:
        name, zstd, size = s["series"], s["compressed"], s["bytes"]
        what = f"{ds}, {name}"
        if zstd:
            rows.append(
                Row(f"{what}: size / whole file by zstd -{LEVEL}", size / whole, f"<= {size_limit}",
                    size <= size_limit * whole, f"{_mb(size)} vs {_mb(whole)} ({kind})")
            )  # fmt: skip
        else:
            rows.append(
                Row(f"{what}: size / plain msgpack", size / plain, "(reported)", True,
                    f"{_mb(size)} vs {_mb(plain)}; {size / whole:.2f}x the whole file by zstd -{LEVEL}")
            )  # fmt: skip
        ms, kb = s["open_seconds"] * 1e3, s["open_bytes"] / 1024
        rows.append(
            Row(f"{what}: open (ms, median of {m['opens']})", ms, f"<= {OPEN_TARGET_MS:g} ms", ms <= OPEN_TARGET_MS,
                "fresh LazyReader(path, cached=False), file in the page cache")
        )  # fmt: skip
        rows.append(
            Row(f"{what}: bytes read by open (KB)", kb, f"<= {OPEN_TARGET_KB} KB", kb <= OPEN_TARGET_KB,
                f"{s['open_bytes']:,} bytes in {s['open_requests']} request(s)"
                + _lazystats(s["open_bytes"], s["open_lazystats_bytes"]))
        )  # fmt: skip
        us, p90 = s["read_median_seconds"] * 1e6, s["read_p90_seconds"] * 1e6
        frame = s.get("frame_seconds")
        floor_note = "" if frame is None else f"; a data frame decompresses in {frame * 1e6:.1f} us (median)"
        rows.append(
            Row(f"{what}: one value, cached=False (us, median)", us, f"<= {read_limit:g} us", us <= read_limit,
                f"p90 {p90:.1f} us; {s['read_bytes_mean']:,.0f} bytes in {s['read_requests_mean']:.2f} requests"
                f" per value{_lazystats(s['read_bytes_mean'], s['read_lazystats_bytes_mean'])};"
                f" {m['paths']} leaf paths, mean depth {m['mean_depth']:.1f}{floor_note}")
        )  # fmt: skip
        floor = floors["decode_zstd"] if zstd else floors["decode_plain"]
        how = "read + zstd -d + msgspec decode" if zstd else "read + msgspec decode"
        rows.append(
            Row(f"{what}: to_obj() / ({how} of the plain msgpack)", s["to_obj_seconds"] / floor,
                f"<= {TO_OBJ_TARGET}", s["to_obj_seconds"] <= TO_OBJ_TARGET * floor,
                f"{s['to_obj_seconds']:.3f}s vs {floor:.3f}s")
        )  # fmt: skip
        floor = floors["dump_zstd"] if zstd else floors["dump_plain"]
        how = f"msgspec encode + zstd -{LEVEL} + write" if zstd else "msgspec encode + write"
        rows.append(
            Row(f"{what}: dump / ({how})", s["dump_seconds"] / floor, f"<= {DUMP_TARGET}" if zstd else "(reported)",
                not zstd or s["dump_seconds"] <= DUMP_TARGET * floor, f"{s['dump_seconds']:.3f}s vs {floor:.3f}s")
        )  # fmt: skip
    return rows


# -- the child: one dataset, every measurement -------------------------------------------------------------------
def leaf_paths(obj: Any, n: int, seed: int = SEED) -> list[tuple[list[Any], Any]]:
    """``n`` (path, value) pairs, each from a walk that starts at the root and takes a random
    key or index at each container until it reaches a value that is not one (or is empty)."""
    rng = random.Random(seed)
    keys: dict[int, list[Any]] = {}  # the key lists of the dicts walked, built once each
    out = []
    for _ in range(n):
        value, path = obj, []
        while isinstance(value, (dict, list)) and value:
            if isinstance(value, dict):
                names = keys.get(id(value))
                if names is None:
                    names = keys[id(value)] = list(value)
                key: Any = names[rng.randrange(len(names))]
            else:
                key = rng.randrange(len(value))
            path.append(key)
            value = value[key]
        out.append((path, value))
    return out


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The floors decode without the cyclic collector, as msglc's ``to_obj`` does (``disable_gc``)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


class CountingFile:
    """A file that counts the bytes and calls of ``read``: what a reader asks of the file, seen
    from the file. ``LazyReader`` reads a file object through these calls, from the same
    offsets as it reads a path (by ``pread``). ``reads``: each call's (offset, bytes read)."""

    def __init__(self, path: Path) -> None:
        self.f = open(path, "rb", buffering=0)  # noqa: SIM115 (closed by close())
        self.bytes = self.requests = 0
        self.reads: list[tuple[int, int]] = []

    def read(self, size: int = -1) -> bytes:
        at = self.f.tell()
        data = self.f.read(size)
        self.bytes += len(data)
        self.requests += 1
        self.reads.append((at, len(data)))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.f.seek(offset, whence)

    def tell(self) -> int:
        return self.f.tell()

    def seekable(self) -> bool:
        return True

    def close(self) -> None:
        self.f.close()


def _counted(path: Path, paths: list[tuple[list[Any], Any]], what: str) -> dict[str, float]:
    """Bytes and requests of one open and of one read of each path (mean), counted by the file
    and by ``msglc.LazyStats`` (both kept: they should agree); raises if a value read is not the
    object's."""
    f, stats = CountingFile(path), msglc.LazyStats()
    try:
        # LazyReader reads any object with read and seek; CountingFile has them, but is no BinaryIO
        with msglc.LazyReader(cast(BinaryIO, f), cached=False, counter=stats) as reader:
            out: dict[str, float] = {
                "open_bytes": f.bytes,
                "open_requests": f.requests,
                "open_lazystats_bytes": stats.bytes,
            }
            f.bytes = f.requests = 0
            stats.clear()
            for p, want in paths:
                got = reader[p]
                if got != want:
                    raise AssertionError(f"{what} read {p!r} as {got!r}, the object has {want!r}")
            out["read_bytes_mean"] = f.bytes / len(paths)
            out["read_requests_mean"] = f.requests / len(paths)
            out["read_lazystats_bytes_mean"] = stats.bytes / len(paths)
    finally:
        f.close()
    return out


def _frame_floor(path: Path) -> float | None:
    """Median seconds to decompress one data frame of the compressed archive at ``path``, with
    zstd alone (its dictionary loaded beforehand), over up to ``FRAME_SAMPLE`` frames drawn at
    random among those a read decompresses: data frames of more than ``SMALL_FRAME`` bytes
    (smaller ones, the heads of big containers, stay cached) that are not stored raw. None for a plain archive."""
    import zstandard

    with msglc.LazyReader(path) as reader:
        info = reader.info()
        data_end = info.data_offset + info.data_size
        frames = [
            f
            for f in reader.frames()
            if f.plain_offset + f.plain_size <= data_end and f.plain_size > SMALL_FRAME and f.filter != RAW
        ]
        if not frames:
            return None
        sample = random.Random(SEED).sample(frames, min(FRAME_SAMPLE, len(frames)))
        dicts = {
            d: zstandard.ZstdCompressionDict(reader.dictionary(d), dict_type=zstandard.DICT_TYPE_RAWCONTENT)
            for d in {f.dictionary for f in sample if f.dictionary}
        }
    decompressors = {d: zstandard.ZstdDecompressor(dict_data=z) for d, z in dicts.items()}
    decompressors[0] = zstandard.ZstdDecompressor()
    with path.open("rb") as file:
        stored = []
        for f in sample:
            file.seek(f.offset)
            stored.append(file.read(f.size))
    warm = {f.dictionary: data for f, data in zip(sample, stored, strict=True)}
    for d, data in warm.items():  # (zstd digests a dictionary at its first use: a reader does so once)
        decompressors[d].decompress(data)
    times = []
    for f, data in zip(sample, stored, strict=True):
        decompress = decompressors[f.dictionary].decompress
        t0 = time.perf_counter()
        decompress(data)
        times.append(time.perf_counter() - t0)
    return _quantile(times, 0.5)


def _rounds(plain_bytes: int, quick: bool) -> int:
    """Rounds of the dump and ``to_obj`` turns: fewer for big data, whose runs take seconds."""
    if quick:
        return 3
    return 7 if plain_bytes < 50e6 else 5 if plain_bytes < 200e6 else 3


def _quantile(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def measure(
    name: str, folder: Path, quick: bool, series: list[tuple[str, dict[str, Any]]], tmp: Path
) -> dict[str, Any]:
    ds = DATASETS[name]
    t0 = time.perf_counter()
    obj = ds.load(folder, quick)
    load_seconds = time.perf_counter() - t0
    gc.collect()
    gc.freeze()  # the object lives to the end: keep it out of every collection the timings pay for
    enc, dec = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()
    data = enc.encode(obj)
    plain_bytes, zstd_bytes = len(data), len(zstd_whole(data))
    del data
    paths = leaf_paths(obj, PATHS_QUICK if quick else PATHS)
    rounds = _rounds(plain_bytes, quick)
    names = [s for s, _ in series]
    files = {s: tmp / f"series-{i}.mlc" for i, s in enumerate(names)}
    plain, whole = tmp / "plain.msgpack", tmp / "whole.msgpack.zst"

    # dump: msglc and the floors in turns
    loops: dict[str, Callable[[], object]] = {
        FLOOR_PLAIN: lambda: _write(plain, enc.encode(obj)),
        FLOOR_ZSTD: lambda: _write(whole, zstd_whole(enc.encode(obj))),
    }
    for s, options in series:
        loops[s] = partial(msglc.dump, files[s], obj, **options)
    outputs = {FLOOR_PLAIN: plain, FLOOR_ZSTD: whole, **files}
    dumps = interleaved(loops, rounds=rounds, setup=lambda k: fresh(outputs[k]))

    # open: fresh readers in turns, timed without a counter (a counter sends the C lookups
    # through Python to count them)
    opens: dict[str, list[float]] = {s: [] for s in names}
    for _ in range(OPENS_QUICK if quick else OPENS):
        for s in names:
            t0 = time.perf_counter()
            reader = msglc.LazyReader(files[s], cached=False)
            opens[s].append(time.perf_counter() - t0)
            reader.close()

    # one value: each path once per series, the series in turns, from readers opened before
    readers = {s: msglc.LazyReader(files[s], cached=False) for s in names}
    reads: dict[str, list[float]] = {s: [] for s in names}
    for path, _ in paths:
        for s in names:
            reader = readers[s]
            t0 = time.perf_counter()
            reader[path]
            reads[s].append(time.perf_counter() - t0)
    for reader in readers.values():
        reader.close()

    # the bytes of the same open and reads, untimed, counted by the file; each value checked
    counted = {s: _counted(files[s], paths, f"{name}: {s}") for s in names}

    # to_obj: every archive once checked whole, then msglc and the floors in turns
    for s in names:
        with msglc.LazyReader(files[s]) as reader:
            if reader.to_obj() != obj:
                raise AssertionError(f"{name}: {s}: to_obj() differs from the object dumped")

    # each floor keeps its object alive until the collector is back on, as to_obj() does (the
    # collector then scans the new objects once; an object freed while it is off costs nothing)
    def decode_plain() -> Any:
        with _gc_paused():
            obj = dec.decode(plain.read_bytes())
        return obj

    def decode_zstd() -> Any:
        import zstandard

        with _gc_paused():
            obj = dec.decode(zstandard.ZstdDecompressor().decompress(whole.read_bytes()))
        return obj

    def to_obj(path: Path) -> None:
        with msglc.LazyReader(path) as reader:
            reader.to_obj()

    loops = {FLOOR_PLAIN: decode_plain, FLOOR_ZSTD: decode_zstd}
    for s in names:
        loops[s] = partial(to_obj, files[s])
    decodes = interleaved(loops, rounds=rounds)

    return {
        "dataset": name,
        "kind": ds.kind,
        "source": f"{ds.client} {ds.spec}",
        "shape": ds.shape,
        "quick": quick,
        "subset": ds.quick if quick else "whole",
        "plain_bytes": plain_bytes,
        "zstd_bytes": zstd_bytes,
        "load_seconds": load_seconds,
        "paths": len(paths),
        "mean_depth": sum(len(p) for p, _ in paths) / len(paths),
        "opens": OPENS_QUICK if quick else OPENS,
        "rounds": rounds,
        "floors": {
            "dump_plain": dumps[FLOOR_PLAIN],
            "dump_zstd": dumps[FLOOR_ZSTD],
            "decode_plain": decodes[FLOOR_PLAIN],
            "decode_zstd": decodes[FLOOR_ZSTD],
        },
        "series": [
            {
                "series": s,
                "options": options,
                "compressed": options.get("compression") is not None,
                "bytes": files[s].stat().st_size,
                "dump_seconds": dumps[s],
                "open_seconds": _quantile(opens[s], 0.5),
                **counted[s],
                "read_median_seconds": _quantile(reads[s], 0.5),
                "read_p90_seconds": _quantile(reads[s], 0.9),
                "to_obj_seconds": decodes[s],
                "frame_seconds": _frame_floor(files[s]) if options.get("compression") else None,
            }
            for s, options in series
        ],
    }


def child(spec_json: str) -> None:
    """``--realdata-child``: measure one dataset; print the measurements as one JSON line."""
    spec = json.loads(spec_json)
    series = [(s, dict(options)) for s, options in spec["series"]]
    result = measure(spec["dataset"], Path(spec["folder"]), spec["quick"], series, Path(spec["tmp"]))
    print(json.dumps(result))
