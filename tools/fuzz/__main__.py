"""The command line: ``python -m tools.fuzz``."""

from __future__ import annotations

import argparse
import json
import sys

from . import __doc__ as package_doc
from . import targets
from .common import BUG_CLASSES
from .runner import campaign, format_report, make_context, replay
from .targets import MUTATORS, make_case
from .tiles import fuzz_tiles


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.fuzz", description=package_doc.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=2000, help="random cases to run (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="case ids are SEED:INDEX (default 0)")
    p.add_argument("--seconds", type=float, default=None, help="stop starting cases after this many seconds")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--kinds", default=None, help=f"mutation kinds, comma-separated (default all: {','.join(MUTATORS)})")
    p.add_argument("--sweep", default=None, help="a sample to flip one bit at every --stride bytes of (e.g. doc@64)")
    p.add_argument("--stride", type=int, default=None, help="bytes between the sweep's flips (with --sweep; default 1)")
    p.add_argument(
        "--timeout", type=float, default=10.0, help="seconds a case may take before it is a hang (default 10)"
    )
    p.add_argument(
        "--mem-mb", type=int, default=1024, help="address space a worker may add to its size (default 1024 MB)"
    )
    p.add_argument(
        "--copy-share",
        type=float,
        default=0.25,
        help="share of the cases on compressed archives that copy them too (default 0.25)",
    )
    p.add_argument("--out", default=None, help="write the report as JSON here")
    p.add_argument("--replay", metavar="ID", help="run one case in this process and print every stage, with tracebacks")
    p.add_argument("--save", nargs=2, metavar=("ID", "PATH"), help="write the mutated archive of a case to PATH")
    p.add_argument("--list", action="store_true", help="list the corpus archives")
    p.add_argument("--progress", action="store_true", help="print progress to stderr")
    p.add_argument(
        "--tiles",
        type=int,
        metavar="N",
        help="instead: N random tiled arrays round-tripped and their headers crafted (fuzz_tiles)",
    )
    args = p.parse_args(argv)
    if args.tiles is not None:
        problems = fuzz_tiles(args.tiles, args.seed)
        print("\n".join(problems) or f"{args.tiles} tiled arrays: no problem")
        return 1 if problems else 0
    kinds = args.kinds.split(",") if args.kinds else None
    targets.COPY_SHARE = args.copy_share  # (module state: the workers are forked after this)
    if args.replay:
        return replay(args.replay, kinds, args.timeout)
    if args.save:
        s, kind, mut = make_case(make_context(kinds), args.save[0])
        with open(args.save[1], "wb") as f:
            f.write(mut.data)
        print(f"{args.save[1]}: {s.name}, {kind}: {mut.desc}")
        return 0
    if args.list:
        for s in make_context(kinds).corpus:
            node = s.trailer.root_len or s.section is not None and s.section.root[1]
            extra = "  slack" if s.slack else ""
            if s.section is not None:
                extra += f"  {len(s.section.frames)} frames, {len(s.section.dicts)} dictionaries"
            print(f"{s.name:24} {len(s.data):8} bytes  root {'node' if node else 'plain'}{extra}")
        return 0
    sweep_stride = args.stride or (1 if args.sweep else None)
    report = campaign(
        args.cases,
        args.seed,
        args.workers,
        args.seconds,
        kinds,
        args.sweep,
        sweep_stride,
        args.timeout,
        args.mem_mb,
        progress=args.progress,
    )
    print(format_report(report))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1, default=str)
    return 1 if any(report["counts"].get(c) for c in BUG_CLASSES) else 0


if __name__ == "__main__":
    sys.exit(main())
