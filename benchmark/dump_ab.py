"""``python -m benchmark.dump_ab DATASET --base PATH [--rounds N]``: a compressed ``dump`` of
a real dataset against its floor (``msgspec`` encode + whole-file ``zstd -3`` + write), for
two msglc checkouts in turns.

One worker process per checkout (``PYTHONPATH`` set to it; the benchmark code, the data and
the floor are this checkout's) loads the dataset once; each round asks each worker in turn
(the order alternating) to time the floor, ``msglc.dump(path, obj, compression="zstd",
**options)``, and the floor again. A round's ratio is the dump over the mean of its two
floors: wall clock, and the process's CPU time (every thread counted), which a machine
shared with other jobs disturbs less. Prints each checkout's median and range, and the
archive's size over the whole-file zstd. ``--base`` is a checkout of the code to compare with
(for example ``git worktree add`` of main, its C accelerator built or copied in).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from .datasets import DATASETS

HERE = Path(__file__).resolve().parents[1]

WORKER = r"""
import gc, json, os, sys, time
sys.path.append(sys.argv[4])  # the benchmark code of the checkout that runs the comparison
import msgspec
import msglc
from benchmark.compressed import zstd_whole
from benchmark.datasets import DATASETS, DEFAULT_DATA_DIR, fetch

name, quick, options = sys.argv[1], sys.argv[2] == "1", json.loads(sys.argv[3])
ds = DATASETS[name]
obj = ds.load(fetch(ds, DEFAULT_DATA_DIR, offline=True), quick)
gc.collect()
gc.freeze()
enc = msgspec.msgpack.Encoder()
tmp = os.path.join(sys.argv[5], f"dump-ab-{os.getpid()}")


def floor():
    with open(tmp + ".zst", "wb") as f:
        f.write(zstd_whole(enc.encode(obj)))


def dump():
    msglc.dump(tmp + ".mlc", obj, compression="zstd", **options)


print("ready", flush=True)
for _ in sys.stdin:
    r = {}
    for key, fn in (("floor", floor), ("dump", dump), ("floor2", floor)):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        r[key], r[key + "_cpu"] = time.perf_counter() - t0, time.process_time() - c0
    r["size"], r["zsize"] = os.path.getsize(tmp + ".mlc"), os.path.getsize(tmp + ".zst")
    print(json.dumps(r), flush=True)
os.remove(tmp + ".mlc")
os.remove(tmp + ".zst")
"""


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmark.dump_ab", description=__doc__.split("\n\n")[0])
    p.add_argument("dataset", choices=sorted(DATASETS))
    p.add_argument("--base", required=True, help="the checkout to compare with")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--quick", action="store_true", help="the dataset's subset")
    p.add_argument("--options", default="{}", help='dump options as JSON, e.g. {"compression_level": 3}')
    p.add_argument("--tmp", default="/tmp", help="where the archives are written")
    args = p.parse_args(argv)
    trees = {"base": str(Path(args.base).resolve()), "this": str(HERE)}
    workers = {}
    for tag, tree in trees.items():
        env = dict(os.environ, PYTHONPATH=tree)
        cmd = [
            sys.executable,
            "-c",
            WORKER,
            args.dataset,
            "1" if args.quick else "0",
            args.options,
            str(HERE),
            args.tmp,
        ]
        w = subprocess.Popen(cmd, cwd=args.tmp, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert w.stdin is not None and w.stdout is not None
        if w.stdout.readline().strip() != "ready":
            raise SystemExit(f"the {tag} worker ({tree}) did not start")
        workers[tag] = w
    results: dict[str, list[dict[str, float]]] = {tag: [] for tag in trees}
    for i in range(args.rounds):
        for tag in list(trees) if i % 2 == 0 else list(trees)[::-1]:
            w = workers[tag]
            assert w.stdin is not None and w.stdout is not None
            w.stdin.write("go\n")
            w.stdin.flush()
            results[tag].append(json.loads(w.stdout.readline()))
    for w in workers.values():
        assert w.stdin is not None
        w.stdin.close()
        w.wait()
    for tag, rs in results.items():
        wall = sorted(r["dump"] / ((r["floor"] + r["floor2"]) / 2) for r in rs)
        cpu = sorted(r["dump_cpu"] / ((r["floor_cpu"] + r["floor2_cpu"]) / 2) for r in rs)
        print(
            f"{args.dataset} {tag} ({trees[tag]}): dump / floor {statistics.median(wall):.2f} "
            f"({wall[0]:.2f}-{wall[-1]:.2f}); CPU / floor CPU {statistics.median(cpu):.2f} "
            f"({cpu[0]:.2f}-{cpu[-1]:.2f}); size / whole-file zstd {rs[0]['size'] / rs[0]['zsize']:.4f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
