"""``python -m benchmark`` (from the checkout): msglc vs h5py on a random float matrix.

Writes write_time, read_time_log_1k, read_time_log_10k and file_size (PNG and PDF), with
msglc's zstd-compressed series beside h5py's gzip and lzf, records_size (JSON-like records:
msglc plain and zstd against plain msgpack and the whole file zstd-compressed) and bulk_read
(MB/s reading a compressed array whole, by read_threads), slab_read (a random 64 x 64 block of a
float64 array, msglc plain and with zstd in tiles against h5py's chunks without a filter and
with hdf5plugin's Blosc2 and Zstd), dask_reduce (an array summed through
Dask by 1 and 2 worker processes, msglc.dask against h5py), realdata (archives of real public
JSON: size against the whole file by zstd -3 and one-value read time, per dataset; the datasets
are fetched once with npm and pip into --data-dir), and results.json to --out, and prints
Markdown tables. ``--quick`` is a small run (under a minute once the data is cached): its data
is too small to show scaling by threads or workers, and those two figures say so in their
titles; it measures three datasets, each a subset, and without their data (no network,
--offline) it leaves the realdata figure out and says so. A full run that cannot fetch them
stops before measuring anything. The compressed series, records, bulk and realdata figures
need zstandard (``pip install -e ".[zstd]"``) and are skipped without it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from . import plots, report
from .compressed import have_zstd
from .datasets import FETCH_TIMEOUT, SUITE_QUICK, DataUnavailable
from .experiment import Experiment, Results, Settings, workdir
from .targets import machine
from .targets.realdata import add_arguments, check_options, collect, fetch_all, series_of


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def parse(argv: list[str] | None) -> tuple[Settings, argparse.Namespace]:
    parser = argparse.ArgumentParser(
        prog="python -m benchmark", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, help="matrix side N (default 5000; 1000 with --quick)")
    parser.add_argument("--repeat", type=_ints, help="numbers of random reads (default 1000,10000)")
    parser.add_argument(
        "--thresholds",
        type=_ints,
        help="powers of two for msglc thresholds and h5py chunks (default 12,14,16,18,20,22)",
    )
    parser.add_argument(
        "--budget", type=float, help="seconds of reads per configuration before the rest is estimated (default 6)"
    )
    parser.add_argument(
        "--doc-mb", type=int, help="size of the random-path document in MB (default 100; 5 with --quick)"
    )
    parser.add_argument(
        "--records",
        type=int,
        help="JSON-like records for the records figure (default 300000; 2000 quick; 0: none)",
    )
    parser.add_argument(
        "--bulk-mb", type=int, help="size in MB of the bulk-read array (default 400; 2 with --quick; 0: none)"
    )
    parser.add_argument("--threads", type=_ints, help="read_threads of the bulk-read figure (default 1,2)")
    parser.add_argument(
        "--slabs", type=int, help="random 64 x 64 blocks read by the slab figure (default 1000; 200 quick; 0: none)"
    )
    parser.add_argument(
        "--slab-mb", type=int, help="size in MB of the slab figure's array (default 200; 64 with --quick; 0: none)"
    )
    parser.add_argument(
        "--dask-mb", type=int, help="size in MB of the array reduced through Dask (default 1024; 16 quick; 0: none)"
    )
    parser.add_argument("--workers", type=_ints, help="Dask worker processes of the scale figure (default 1,2)")
    parser.add_argument("--no-compressed", action="store_true", help="no msglc zstd series in the matrix figures")
    parser.add_argument("--out", type=Path, default=Path("benchmark-out"), help="folder for figures and results.json")
    parser.add_argument(
        "--quick", action="store_true", help="small run: N=1000, thresholds 12,16,20, budget 1 s, 5 MB document"
    )
    parser.add_argument("--keep", action="store_true", help="keep the written archives and HDF5 files")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-realdata", action="store_true", help="leave the realdata figure out")
    add_arguments(parser, f"{','.join(SUITE_QUICK)} with --quick, else all")
    args = parser.parse_args(argv)
    s = (
        Settings(
            size=1000,
            thresholds=(12, 16, 20),
            budget=1.0,
            doc_mb=5,
            paths=300,
            records=2000,
            bulk_mb=2,
            slabs=200,
            slab_mb=64,
            dask_mb=16,
            datasets=SUITE_QUICK,
        )
        if args.quick
        else Settings()
    )
    s.compressed = not args.no_compressed
    for name, value in (
        ("size", args.size),
        ("repeats", args.repeat),
        ("thresholds", args.thresholds),
        ("budget", args.budget),
        ("doc_mb", args.doc_mb),
        ("records", args.records),
        ("bulk_mb", args.bulk_mb),
        ("threads", args.threads),
        ("slabs", args.slabs),
        ("slab_mb", args.slab_mb),
        ("dask_mb", args.dask_mb),
        ("workers", args.workers),
        ("datasets", args.datasets),
    ):
        if value is not None:
            setattr(s, name, value)
    if s.size < 2 or any(not 6 <= e <= 30 for e in s.thresholds):
        parser.error("--size must be at least 2 and thresholds between 6 and 30")
    if min(s.records, s.bulk_mb, s.dask_mb, s.slabs, s.slab_mb) < 0:
        parser.error("--records, --bulk-mb, --slabs, --slab-mb and --dask-mb must not be negative")
    if args.no_realdata:
        s.datasets = ()
    refused = check_options(args.options) if s.datasets else None
    if refused:
        parser.error(refused)
    return s, args


def realdata_folders(settings: Settings, args: argparse.Namespace) -> tuple[dict[str, Path], str | None]:
    """The datasets' folders, fetched first where needed, or why the realdata figure is left out
    (quick mode only: a full run raises ``DataUnavailable``)."""
    if not settings.datasets:
        return {}, None
    if not have_zstd():
        return {}, 'the realdata figure is left out: it needs zstandard (pip install -e ".[zstd]")'
    try:
        # quick: a registry that does not answer costs two minutes, not the default quarter hour
        return fetch_all(settings.datasets, args.data_dir, args.offline, 120 if args.quick else FETCH_TIMEOUT), None
    except DataUnavailable as e:
        if not args.quick:
            raise
        return {}, f"the realdata figure is left out: {e}"


def main(argv: list[str] | None = None) -> int:
    settings, args = parse(argv)
    try:  # before anything is measured: a full run without its data stops at once
        folders, left_out = realdata_folders(settings, args)
    except DataUnavailable as e:
        print(f"error: {e} (--no-realdata runs without the realdata figure)", file=sys.stderr)
        return 1
    if left_out:
        print(left_out, flush=True)
    results = Results(settings=asdict(settings), machine=machine(), date=time.strftime("%Y-%m-%d"))
    k = len(settings.thresholds)
    steps = ["matrix"] + ["write"] * (2 + 5 * k) + ["read"] * (2 + 4 * k) + ["paths"] * 3
    steps += ["records"] * (1 + 2 * k) + ["bulk"] * 11 + ["slabs"] * 6 + ["dask"] * (1 + len(settings.workers))
    steps += ["realdata"] * len(folders)
    try:
        from tqdm import tqdm

        bar = tqdm(total=len(steps), disable=args.no_progress or None, unit="step", file=sys.stderr)
    except ImportError:
        bar = None

    def progress(text: str) -> None:
        if bar is not None:
            bar.set_description(text[:60])
            bar.update(1)

    with workdir(args.keep) as tmp:
        progress("building the matrix")
        experiment = Experiment(settings, tmp, results, progress)
        experiment.write_all()
        experiment.read_all()
        experiment.paths()
        experiment.records()
        experiment.bulk()
        experiment.slab_reads()
        experiment.scale()
        results.realdata = collect(folders, args.quick, series_of(args.options), tmp, progress)
    if bar is not None:
        bar.close()
    args.out.mkdir(parents=True, exist_ok=True)
    data = asdict(results)
    (args.out / "results.json").write_text(json.dumps(data, indent=1))
    written = plots.draw_all(data, args.out)
    print(report.markdown(data))
    if left_out:
        print(f"\n{left_out}")
    formats = " and ".join(ext.upper() for ext in plots.FORMATS)
    count = len({path.stem for path in written})
    print(f"\nwrote {count} figures, each as {formats}, and results.json to {args.out}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
