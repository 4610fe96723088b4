"""The performance targets of the issues (core, NumPy, combine, remote), each a ratio measured in this run.

    python -m benchmark.targets                 # full sizes (5000x5000 matrix, 2M-key dict, 1 GB)
    python -m benchmark.targets --quick         # small sizes, well under a minute
    python -m benchmark.targets --only arrays   # one section: matrix, dict, lookups, memory, arrays, combine, stream,
                                                # compression, dask, realdata, remote
    python -m benchmark.targets --only compression --array-mb 40   # compressed archives, a 40 MB array
    python -m benchmark.targets --only realdata --quick   # real public JSON (fetched with npm and pip), subsets
    python -m benchmark.targets --only realdata --datasets mdn-bcd --option small_obj_optimization_threshold=65536
    python -m benchmark.targets --remote        # add the remote section (needs the bench-remote extra)

The realdata section fetches its datasets (once, into --data-dir), so --quick leaves it out unless
named with --only; a full run includes it and fetches before any section runs.

Prints a Markdown table (figure, measured, target, verdict) and writes results.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..compressed import have_zstd
from ..datasets import DATASETS, DataUnavailable
from ..report import realdata_table
from .arrays import array_targets
from .combine import append_targets, combine_targets
from .common import THRESHOLDS, Row, fresh, machine
from .compression import compression_targets
from .dicts import dict_targets
from .lookups import lookup_targets
from .matrix import matrix_targets
from .memory import make_big, memory_target, read_one
from .realdata import add_arguments, check_options, fetch_all, realdata_targets, series_of
from .realdata import child as realdata_child
from .remote import remote_targets
from .scale import dask_targets
from .stream import stream, stream_floor, stream_targets
from .tiles import tile_targets

__all__ = [
    "SECTIONS",
    "THRESHOLDS",
    "Row",
    "append_targets",
    "array_targets",
    "combine_targets",
    "compression_targets",
    "dask_targets",
    "dict_targets",
    "fresh",
    "lookup_targets",
    "machine",
    "main",
    "matrix_targets",
    "memory_target",
    "realdata_targets",
    "remote_targets",
    "stream_targets",
    "tile_targets",
]

SECTIONS = (
    "matrix",
    "dict",
    "lookups",
    "memory",
    "arrays",
    "combine",
    "stream",
    "compression",
    "tiles",
    "dask",
    "realdata",
    "remote",
)  # remote is opt-in; realdata needs the network once, so --quick runs it only when named
ZSTD_NEEDS = 'pip install -e ".[zstd]"'
REMOTE_NEEDS = """pip install -e ".[bench-remote]" -c tests/constraints.txt"""


def _missing_remote_modules() -> list[str]:
    """The modules of the bench-remote extra that cannot be imported here."""
    import importlib.util

    return [m for m in ("fsspec", "s3fs", "moto", "flask", "flask_cors") if importlib.util.find_spec(m) is None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmark.targets", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (N=1000, 200k keys, 100 MB)")
    parser.add_argument("--out", type=Path, default=Path("benchmark-out"), help="where targets.json goes")
    parser.add_argument(
        "--only",
        choices=SECTIONS,
        action="append",
        help="run only these sections (repeatable)",
    )
    parser.add_argument("--remote", action="store_true", help=f"add the remote section ({REMOTE_NEEDS})")
    parser.add_argument(
        "--array-mb",
        type=int,
        help="size of the compression section's smooth NumPy array in MB (default 400; 40 with --quick)",
    )
    # the sections' child processes: python -m benchmark.targets --make-big/--read-one/--stream/--stream-floor
    parser.add_argument("--make-big", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--read-one", help=argparse.SUPPRESS)
    parser.add_argument("--stream", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--stream-floor", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--realdata-child", help=argparse.SUPPRESS)
    add_arguments(parser, "all")
    args = parser.parse_args(argv)
    if args.realdata_child:
        realdata_child(args.realdata_child)
        return 0
    if args.make_big:
        make_big(args.make_big[0], int(args.make_big[1]))
        return 0
    if args.read_one:
        read_one(args.read_one)
        return 0
    if args.stream or args.stream_floor:
        path, count = args.stream or args.stream_floor
        (stream if args.stream else stream_floor)(path, int(count))
        return 0
    default = [s for s in SECTIONS if s != "remote" and not (args.quick and s == "realdata")]
    sections = set(args.only or default) | ({"remote"} if args.remote else set())
    if "remote" in sections and _missing_remote_modules():
        parser.error(f"the remote section needs {', '.join(_missing_remote_modules())}: {REMOTE_NEEDS}")
    if args.array_mb is not None and args.array_mb < 1:
        parser.error("--array-mb must be at least 1")
    if "compression" in sections and not have_zstd():
        if args.only and "compression" in args.only:
            parser.error(f"the compression section needs zstandard: {ZSTD_NEEDS}")
        print(f"skipping the compression section: it needs zstandard ({ZSTD_NEEDS})", file=sys.stderr)
        sections.discard("compression")
    if (args.datasets or args.options) and "realdata" not in sections:
        parser.error("--datasets and --option apply to the realdata section, left out of this run (--only realdata)")
    folders = {}
    if "realdata" in sections:
        if not have_zstd():
            parser.error(f"the realdata section needs zstandard: {ZSTD_NEEDS}")
        refused = check_options(args.options)
        if refused:
            parser.error(refused)
        try:  # before any section runs: a dataset that cannot be had stops the run at once
            folders = fetch_all(args.datasets or tuple(DATASETS), args.data_dir, args.offline)
        except DataUnavailable as e:
            print(f"error: the realdata section cannot run: {e}", file=sys.stderr)
            return 1
    array_mb = args.array_mb or (40 if args.quick else 400)
    n, reads, keys, lookups, big_mb = (
        (1000, 2000, 200_000, 2000, 100) if args.quick else (5000, 10_000, 2_000_000, 10_000, 1024)
    )
    rows: list[Row] = []
    realdata: list[dict[str, Any]] = []

    def real() -> list[Row]:
        found, measured = realdata_targets(folders, args.quick, series_of(args.options), Path(tmp))
        realdata.extend(measured)
        return found

    with tempfile.TemporaryDirectory(prefix="msglc-bench-") as tmp:
        runs: tuple[tuple[str, Callable[[], list[Row]]], ...] = (
            ("matrix", lambda: matrix_targets(n, reads, Path(tmp))),
            ("dict", lambda: dict_targets(keys, lookups, Path(tmp))),
            ("lookups", lambda: lookup_targets(keys, 20_000, 30_000 if args.quick else 300_000, Path(tmp))),
            ("memory", lambda: memory_target(big_mb, Path(tmp))),
            ("arrays", lambda: array_targets(n, reads, Path(tmp))),
            ("combine", lambda: combine_targets(20 if args.quick else 200, Path(tmp))),
            ("stream", lambda: stream_targets(1_000_000 if args.quick else 10_000_000, Path(tmp))),
            (
                "compression",
                lambda: compression_targets(
                    keys, lookups, 30_000 if args.quick else 300_000, reads, array_mb, Path(tmp)
                ),
            ),
            ("tiles", lambda: tile_targets(1000 if args.quick else 4000, 2000 if args.quick else 10_000, Path(tmp))),
            (
                "dask",
                lambda: dask_targets(200 if args.quick else 2048, 100_000 if args.quick else 1_000_000, Path(tmp)),
            ),
            ("realdata", real),
            ("remote", lambda: remote_targets(n, Path(tmp))),
        )
        for name, run in runs:
            if name not in sections:
                continue
            print(f"running {name} ...", file=sys.stderr, flush=True)
            rows += run()
            for f in Path(tmp).iterdir():
                shutil.rmtree(f) if f.is_dir() else f.unlink()
    print(f"\nmsglc targets ({'quick' if args.quick else 'full'} run; {machine()})\n")
    print("| figure | measured | target | ok | detail |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.figure} | {r.measured:.3g} | {r.target} | {'yes' if r.ok else '**no**'} | {r.detail} |")
    if realdata:
        print("\n".join(realdata_table(realdata)))
    args.out.mkdir(parents=True, exist_ok=True)
    report = {
        "machine": machine(),
        "quick": args.quick,
        "date": time.strftime("%Y-%m-%d"),
        "rows": [asdict(r) for r in rows],
    }
    if realdata:
        report["realdata"] = realdata
    (args.out / "targets.json").write_text(json.dumps(report, indent=2))
    return 0
