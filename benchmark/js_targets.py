"""The JavaScript reader's targets (issue 33), measured in one run against the Python reader::

    python -m benchmark.js_targets [--n 5000] [--keys 2000000] [--records 300000] [--keep DIR]

1. Node, local file, the benchmark's ``n`` x ``n`` float matrix (``random_matrix``, as the
   ``matrix`` section builds it, default threshold): opening <= 2 ms; 10,000 random element
   reads ``reader.read([i, j])`` <= 3x Python's ``reader[i][j]`` (``cached=False``).
2. The ``lookups`` section's 2,000,000-key dict (``str_dict``, stored as ``{"table": d}``): a
   random key ``reader.read(["table", k])`` <= 3x Python's ``reader["table"][k]``, and the same
   storage reads: JS ``reader.stats.requests`` against Python's ``msglc.LazyStats``.
3. HTTP (js/test/support/range-server.mjs on 127.0.0.1): opening <= 2 requests; one matrix
   element or one key <= 2 more (1 once the index pages are cached); a compressed archive 1
   more for its seek table.
4. The ``compression`` section's 300,000 JSON-like records, zstd (``{"records": [...]}``):
   reading one record decompresses one frame (``reader.stats.framesDecompressed``).

Node's side is benchmark/js/bench.mjs (one job per process). The JS package must be built
first: ``(cd js && npm ci && npm run build)``. Prints a table of figures, ratios and pass/fail;
exit status 1 if any target is missed.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msglc

from .compressed import LEVEL, records
from .targets.common import Row, random_matrix
from .targets.dicts import str_dict
from .timing import per_call

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmark" / "js" / "bench.mjs"
SERVER = ROOT / "js" / "test" / "support" / "range-server.mjs"


def node(job: dict[str, Any], timeout: float = 300) -> Any:
    """Run one bench.mjs job; its JSON answer."""
    proc = subprocess.run(
        ["node", str(BENCH)], input=json.dumps(job), capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode:
        raise SystemExit(f"benchmark/js/bench.mjs failed ({job['kind']}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def build(path: Path, obj_fn: Any, **options: Any) -> Path:
    """``path``, written from ``obj_fn()`` unless it is there already (``--keep``)."""
    if not path.exists():
        t = time.perf_counter()
        msglc.dump(path, obj_fn(), **options)
        print(
            f"  wrote {path.name} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.1f}s",
            file=sys.stderr,
        )
    return path


def python_reads(path: Path, fn: Any, args: list[Any]) -> tuple[float, float]:
    """Seconds per call of ``fn(reader, arg)`` (best of 3, ``cached=False``) and storage
    requests per call on a fresh reader (``LazyStats``), the first pass over ``args``."""
    stats = msglc.LazyStats()
    with msglc.LazyReader(path, cached=False, counter=stats) as reader:
        stats.clear()
        for a in args:
            fn(reader, a)
        requests = stats.requests / len(args)
        took = per_call(lambda a: fn(reader, a), args)
    return took, requests


def matrix_rows(path: Path, n: int, reads: int) -> list[Row]:
    rng = random.Random(43)
    points = [[rng.randrange(n), rng.randrange(n)] for _ in range(reads)]
    opened = node({"kind": "open", "path": str(path), "rounds": 50})
    js = node({"kind": "reads", "path": str(path), "paths": points, "rounds": 3})
    with msglc.LazyReader(path, cached=False) as reader:
        assert all(js["values"][k] == reader[i][j] for k, (i, j) in enumerate(points[: len(js["values"])]))
    py, _ = python_reads(path, lambda r, p: r[p[0]][p[1]], points)
    ratio = js["seconds_per_read"] / py
    return [
        Row(f"Node: open the {n}x{n} matrix archive (ms)", opened["min_ms"], "<= 2 ms", opened["min_ms"] <= 2,
            f"median {opened['median_ms']:.2f} ms, {opened['requests']} requests"),
        Row(f"Node: {reads:,} random reader.read([i, j]) / Python reader[i][j]", ratio, "<= 3", ratio <= 3,
            f"{js['seconds_per_read'] * 1e6:.2f}us vs {py * 1e6:.2f}us"),
    ]  # fmt: skip


def dict_rows(path: Path, keys: list[str]) -> list[Row]:
    js = node({"kind": "reads", "path": str(path), "paths": [["table", k] for k in keys], "rounds": 3})
    with msglc.LazyReader(path, cached=False) as reader:
        assert all(js["values"][i] == reader["table"][k] for i, k in enumerate(keys[: len(js["values"])]))
    py, py_requests = python_reads(path, lambda r, k: r["table"][k], keys)
    ratio = js["seconds_per_read"] / py
    js_requests = js["read_requests"] / len(keys)
    return [
        Row(f'Node: {len(keys):,} random keys reader.read(["table", k]) / Python reader["table"][k]', ratio, "<= 3",
            ratio <= 3, f"{js['seconds_per_read'] * 1e6:.2f}us vs {py * 1e6:.2f}us"),
        Row("Node: storage reads per key / Python's (LazyStats)", js_requests / py_requests if py_requests else 0.0,
            "= 1", abs(js_requests - py_requests) < 1e-9, f"{js_requests:.3f} vs {py_requests:.3f} per key"),
    ]  # fmt: skip


def http_rows(
    matrix: Path, table: Path, recs: Path, n: int, keys: int, records_n: int, key: str, key2: str
) -> list[Row]:
    if not SERVER.exists():
        return [Row("HTTP: js/test/support/range-server.mjs is missing", 0, "present", False)]
    proc = subprocess.Popen(
        ["node", str(SERVER), str(matrix), str(table), str(recs)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip().rstrip("/")
        m = node({"kind": "requests", "target": f"{base}/{matrix.name}", "paths": [[n // 2, n // 3]]})[0]
        d = node({"kind": "requests", "target": f"{base}/{table.name}", "paths": [["table", key]]})[0]
        d2 = node({"kind": "requests", "target": f"{base}/{table.name}", "paths": [["table", key2]]})[0]
        r = node({"kind": "requests", "target": f"{base}/{recs.name}", "paths": [["records", records_n * 2 // 5]]})[0]
    finally:
        proc.kill()
        proc.wait()
    return [
        Row("HTTP: requests to open (matrix, dict, compressed)", max(m["open"], d["open"], r["open"]), "<= 2",
            max(m["open"], d["open"], r["open"]) <= 2, f"{m['open']}, {d['open']}, {r['open']}"),
        Row("HTTP: requests for one matrix element", m["first"], "<= 2", m["first"] <= 2, f"again: {m['again']}"),
        Row(f"HTTP: requests for one key of the {keys:,}-key dict", d["first"], "<= 2", d["first"] <= 2,
            f"again: {d['again']}; another key on a fresh reader: {d2['first']}"),
        Row("HTTP: requests for one key once the index pages are cached", d["again"], "<= 1", d["again"] <= 1),
        Row("HTTP: requests for one record of the compressed archive", r["first"], "<= 3 (2 + seek table)",
            r["first"] <= 3, f"again: {r['again']}"),
    ]  # fmt: skip


def frame_rows(path: Path, n: int) -> list[Row]:
    rng = random.Random(5)
    indexes = [rng.randrange(n) for _ in range(20)]
    picks = [["records", i] for i in indexes]
    others = [["records", rng.randrange(n)] for _ in range(20)]
    out = node({"kind": "requests", "target": str(path), "paths": picks, "next": others})
    first = max(o["first_frames"] for o in out)
    other = max(o["other"]["frames"] for o in out)
    py_first = max(python_frames(path, i) for i in indexes)
    return [
        Row("Node: frames decompressed for one record, once the records list's node is read, worst of 20", other,
            "= 1", other == 1, f"mean {sum(o['other']['frames'] for o in out) / len(out):.2f}"),
        Row(f"Node: frames decompressed for the first record of {n:,} on a fresh reader (its TOC frames: "
            "the paged list's node, then a page), worst of 20", first, "= Python's", first == py_first,
            f"Python {py_first}; {out[0]['open_frames']} at open"),
    ]  # fmt: skip


def python_frames(path: Path, index: int) -> int:
    """Frames Python's reader decompresses to read ``records[index]`` on a fresh reader."""
    from msglc.io import framed

    count = 0
    checked = framed.FramedSource._checked  # noqa: SLF001 (wrapped to count frame decodes: nothing public counts them)

    def counting(self: framed.FramedSource, *args: Any, **kwargs: Any) -> Any:
        nonlocal count
        count += 1
        return checked(self, *args, **kwargs)

    with msglc.LazyReader(path, cached=False) as reader:
        framed.FramedSource._checked = counting  # type: ignore[method-assign]  # noqa: SLF001 (as above)
        try:
            reader["records"][index]
        finally:
            framed.FramedSource._checked = checked  # type: ignore[method-assign]  # noqa: SLF001 (as above)
    return count


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmark.js_targets", description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=5000, help="matrix side (default 5000)")
    p.add_argument("--keys", type=int, default=2_000_000, help="dict size (default 2,000,000)")
    p.add_argument("--records", type=int, default=300_000, help="records (default 300,000)")
    p.add_argument("--reads", type=int, default=10_000, help="random reads per figure (default 10,000)")
    p.add_argument("--keep", type=Path, default=None, help="write the archives here and reuse them next time")
    args = p.parse_args(argv)
    if not (ROOT / "js" / "dist" / "index.js").exists():
        print("js/dist is missing: build it first: (cd js && npm ci && npm run build)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        print("writing the archives ...", file=sys.stderr, flush=True)
        matrix = build(folder / f"matrix-{args.n}.mlc", lambda: random_matrix(args.n))
        d, rng = str_dict(args.keys)
        keys = rng.sample(list(d), args.reads)
        table = build(folder / f"table-{args.keys}.mlc", lambda: {"table": d})
        d.clear()
        recs = build(
            folder / f"records-{args.records}-zstd.mlc",
            lambda: {"records": records(args.records)},
            compression="zstd",
            compression_level=LEVEL,
        )
        rows: list[Row] = []
        runs: tuple[tuple[str, Callable[[], list[Row]]], ...] = (
            ("matrix", lambda: matrix_rows(matrix, args.n, args.reads)),
            ("dict", lambda: dict_rows(table, keys)),
            ("http", lambda: http_rows(matrix, table, recs, args.n, args.keys, args.records, keys[0], keys[1])),
            ("frames", lambda: frame_rows(recs, args.records)),
        )
        for name, run in runs:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            rows += run()
    print("\nmsglc JavaScript reader targets (issue 33)\n")
    print("| figure | measured | target | ok | detail |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.figure} | {r.measured:.3g} | {r.target} | {'yes' if r.ok else '**no**'} | {r.detail} |")
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
