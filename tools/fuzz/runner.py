"""Campaigns: cases run in worker processes under time and memory limits, and their report."""

from __future__ import annotations

import contextlib
import hashlib
import os
import resource
import signal
import sys
import time
from collections import Counter, deque
from multiprocessing import connection, get_context
from typing import Any

from .common import BUG_CLASSES, INFO_CLASSES, KIND_WEIGHTS, SLOW_SECONDS, CaseTimeout
from .corpus import Sample, build_corpus
from .targets import MUTATORS, Context, make_case, run_case, watch_reads

# ---- workers ------------------------------------------------------------------------------------

_CTX: Context | None = None


def _alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout("the case ran past its time limit")


def _limit_memory(extra_mb: int) -> None:
    if not extra_mb:
        return
    try:
        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return
    limit = size + extra_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def _worker(conn: Any, timeout: float, mem_mb: int) -> None:
    watch_reads()
    _limit_memory(mem_mb)
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    assert _CTX is not None
    while True:
        job = conn.recv()
        if job is None:
            return
        for case_id in job:
            conn.send(run_case(_CTX, case_id, timeout))


class _Pool:
    """Worker processes fed chunks of case ids; a worker silent for longer than the hard
    timeout is killed (its case is a hang) and replaced; one that dies loses one case."""

    def __init__(self, workers: int, timeout: float, mem_mb: int) -> None:
        self.mp = get_context("fork")
        self.timeout, self.mem_mb = timeout, mem_mb
        self.hard = timeout + 15 if timeout else 300
        self.workers = [self._spawn() for _ in range(workers)]

    def _spawn(self) -> dict[str, Any]:
        parent, child = self.mp.Pipe()
        proc = self.mp.Process(target=_worker, args=(child, self.timeout, self.mem_mb), daemon=True)
        proc.start()
        child.close()
        return {"proc": proc, "conn": parent, "inflight": deque(), "since": time.monotonic()}

    def run(self, ids: list[str], chunk: int, deadline: float | None, on_result: Any) -> None:
        queue = deque(ids[i : i + chunk] for i in range(0, len(ids), chunk))
        while True:
            for w in self.workers:
                if not w["inflight"] and queue and (deadline is None or time.monotonic() < deadline):
                    job = queue.popleft()
                    w["inflight"].extend(job)
                    w["since"] = time.monotonic()
                    w["conn"].send(job)
            busy = [w for w in self.workers if w["inflight"]]
            if not busy:
                return
            ready = connection.wait([w["conn"] for w in busy], timeout=1.0)
            now = time.monotonic()
            for i, w in enumerate(self.workers):
                if not w["inflight"]:
                    continue
                if w["conn"] in ready:
                    try:
                        result = w["conn"].recv()
                    except (EOFError, OSError):
                        self._replace(
                            i, "worker-died", "the worker died (a crash, or killed by the OS)", queue, on_result
                        )
                        continue
                    if result["id"] == w["inflight"][0]:
                        w["inflight"].popleft()
                    w["since"] = now
                    on_result(result)
                elif now - w["since"] > self.hard:
                    self._replace(i, "hang", f"no answer in {self.hard:.0f} s: worker killed", queue, on_result)

    def _replace(self, i: int, cls: str, why: str, queue: deque[list[str]], on_result: Any) -> None:
        w = self.workers[i]
        w["proc"].kill()
        w["proc"].join()
        lost = w["inflight"].popleft()
        on_result({"id": lost, "cls": cls, "why": why, "sig": f"{cls}:{why.split(':')[0]}", "elapsed": self.hard})
        if w["inflight"]:
            queue.appendleft(list(w["inflight"]))
        self.workers[i] = self._spawn()

    def close(self) -> None:
        for w in self.workers:
            with contextlib.suppress(OSError):
                w["conn"].send(None)
        for w in self.workers:
            w["proc"].join(5)
            if w["proc"].is_alive():
                w["proc"].kill()
                w["proc"].join()


# ---- campaigns and reports -----------------------------------------------------------------------


def make_context(kinds: list[str] | None = None) -> Context:
    chosen = kinds or list(KIND_WEIGHTS)
    unknown = [k for k in chosen if k not in MUTATORS]
    if unknown:
        raise SystemExit(f"unknown mutation kinds {unknown}; choose from {', '.join(MUTATORS)}")
    return Context(build_corpus(), chosen, [KIND_WEIGHTS[k] for k in chosen])


def corpus_digest(corpus: list[Sample]) -> str:
    h = hashlib.sha256()
    for s in corpus:
        h.update(s.name.encode() + s.data)
    return h.hexdigest()[:16]


def campaign(
    cases: int = 1000,
    seed: int = 0,
    workers: int = 2,
    seconds: float | None = None,
    kinds: list[str] | None = None,
    sweep: str | None = None,
    sweep_stride: int | None = None,
    timeout: float = 10.0,
    mem_mb: int = 1024,
    chunk: int = 16,
    progress: bool = False,
) -> dict[str, Any]:
    """Run ``cases`` random cases (and a bit-flip sweep of ``sweep``, default the ``doc@64``
    sample, every ``sweep_stride`` bytes) on ``workers`` processes; stop dispatching after
    ``seconds``. Returns the report (``format_report`` prints it)."""
    global _CTX
    t0 = time.perf_counter()
    ctx = make_context(kinds)
    _CTX = ctx
    built = time.perf_counter() - t0
    ids = [f"valid:{s.name}" for s in ctx.corpus] + [f"{seed}:{i}" for i in range(cases)]
    if sweep_stride:
        target = ctx.by_name[sweep or "doc@64"]
        ids += [f"sweep:{target.name}:{p}" for p in range(0, len(target.data), sweep_stride)]
    counts: Counter[str] = Counter()
    sigs: dict[str, dict[str, Any]] = {}
    slow: list[Any] = []
    state = {"done": 0, "last": time.monotonic()}

    def on_result(res: dict[str, Any]) -> None:
        counts[res["cls"]] += 1
        entry = sigs.setdefault(res["sig"], {"cls": res["cls"], "count": 0, "examples": []})
        entry["count"] += 1
        if len(entry["examples"]) < 5:
            entry["examples"].append({k: res.get(k) for k in ("id", "sample", "kind", "desc", "why", "elapsed")})
        if res.get("elapsed", 0) > SLOW_SECONDS:
            slow.append({k: res.get(k) for k in ("id", "sample", "kind", "desc", "elapsed")})
        state["done"] += 1
        if progress and time.monotonic() - state["last"] > 10:
            state["last"] = time.monotonic()
            rate = state["done"] / (time.perf_counter() - start)
            bugs = sum(counts[c] for c in BUG_CLASSES)
            print(
                f"  {state['done']}/{len(ids)} cases, {rate:.0f}/s, bug-class cases {bugs}", file=sys.stderr, flush=True
            )

    start = time.perf_counter()
    pool = _Pool(workers, timeout, mem_mb)
    try:
        pool.run(ids, chunk, None if seconds is None else time.monotonic() + seconds, on_result)
    finally:
        pool.close()
    elapsed = time.perf_counter() - start
    slow.sort(key=lambda r: -r["elapsed"])
    return {
        "seed": seed,
        "cases_requested": len(ids),
        "cases_run": state["done"],
        "seconds": round(elapsed, 2),
        "cases_per_second": round(state["done"] / elapsed, 1) if elapsed else None,
        "workers": workers,
        "kinds": ctx.kinds,
        "corpus": {s.name: len(s.data) for s in ctx.corpus},
        "corpus_digest": corpus_digest(ctx.corpus),
        "corpus_seconds": round(built, 2),
        "counts": {c: counts.get(c, 0) for c in (*BUG_CLASSES, *INFO_CLASSES)}
        | {c: n for c, n in counts.items() if c not in BUG_CLASSES + INFO_CLASSES},
        "signatures": dict(sorted(sigs.items(), key=lambda kv: (kv[1]["cls"] not in BUG_CLASSES, -kv[1]["count"]))),
        "slow": slow[:10],
        "slow_count": len(slow),
    }


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"msglc fuzz: {report['cases_run']} of {report['cases_requested']} cases in {report['seconds']} s "
        f"({report['cases_per_second']} cases/s, {report['workers']} workers), seed {report['seed']}, "
        f"corpus {len(report['corpus'])} archives ({report['corpus_digest']})",
    ]
    lines.append("outcomes:")
    for cls, n in report["counts"].items():
        mark = "  BUG" if cls in BUG_CLASSES and n else ""
        lines.append(f"  {cls:26} {n:8}{mark}")
    slow = f"(slow, > {SLOW_SECONDS:.0f} s)"
    lines.append(f"  {slow:26} {report['slow_count']:8}")
    shown = 0
    for sig, entry in report["signatures"].items():
        if entry["cls"] in ("ok", "error"):
            continue
        if entry["cls"] not in BUG_CLASSES and shown >= 12:
            continue
        shown += entry["cls"] not in BUG_CLASSES
        lines.append(f"[{entry['cls']}] {sig}: {entry['count']} cases")
        for ex in entry["examples"][:3]:
            lines.append(f"    --replay {ex['id']}  {ex.get('sample')}  {ex.get('desc')}  -> {ex.get('why')}")
    for ex in report["slow"][:5]:
        lines.append(f"[slow] --replay {ex['id']}  {ex.get('sample')}  {ex.get('desc')}  {ex['elapsed']:.1f} s")
    return "\n".join(lines)


def replay(case_id: str, kinds: list[str] | None, timeout: float) -> int:
    global _CTX
    ctx = make_context(kinds)
    _CTX = ctx
    signal.signal(signal.SIGALRM, _alarm)
    watch_reads()
    s, kind, mut = make_case(ctx, case_id)
    print(f"case {case_id}: sample {s.name} ({len(s.data)} bytes), {kind}: {mut.desc}")
    print(f"region {mut.region}, crafted {mut.crafted}, truth {mut.truth}; corpus {corpus_digest(ctx.corpus)}")
    res = run_case(ctx, case_id, timeout, keep_tb=True)
    for name, text in res.get("stages", {}).items():
        print(f"--- {name}: {text.rstrip()}")
    print(f"=> {res['cls']}: {res['why']} ({res['elapsed']:.3f} s)")
    return 0 if res["cls"] not in BUG_CLASSES else 1
