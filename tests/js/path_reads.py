"""The storage reads each path makes in both readers, from a local file: Python's
``LazyStats`` with ``cached=False`` (as JS keeps no values) against the JavaScript reader's
``reader.stats`` (js/test/support/lookup-reads.mjs, its "paths" job), on a fresh reader for
each path or on one reader for all. Shared by test_js_path_reads.py and
test_js_paged_reads.py."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsread import JS, require_dist

import msglc
import msglc.read.views as views
from msglc import LazyDict, LazyList

LOOKUPS = JS / "test" / "support" / "lookup-reads.mjs"
MISSING = "no such key"
VIEWS_KEPT = views.MAX_VIEWS  # (JS's MAX_VIEWS too)
JS_NODES_KEPT = 4096  # (JS's MAX_NODES; Python keeps more)


def tagged(v: Any) -> Any:
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53:
        return {"$int": str(v)}
    if isinstance(v, list):
        return [tagged(x) for x in v]
    if isinstance(v, dict):
        return {"$obj": [[tagged(k), tagged(x)] for k, x in v.items()]}
    return v


def outcome(r: msglc.LazyReader, path: list[Any], form: str, stats: msglc.LazyStats) -> list[Any]:
    """[outcome, requests, bytes] of ``r[path]``, as lookup-reads.mjs writes them."""
    return counted(lambda: r[path if form == "list" else "/".join(map(str, path))], stats)


def counted(get: Callable[[], Any], stats: msglc.LazyStats) -> list[Any]:
    """[outcome, requests, bytes] of ``get()`` (a read), as lookup-reads.mjs writes them."""
    before, read = stats.requests, stats.bytes
    got: dict[str, Any]
    try:
        v = get()
        if isinstance(v, (LazyDict, LazyList)):
            got = {"lazy": "dict" if isinstance(v, LazyDict) else "list", "length": len(v)}
        else:
            got = {"value": tagged(v)}
    except KeyError:
        got = {"error": "KeyNotFoundError"}
    except IndexError:
        got = {"error": "IndexOutOfRangeError"}
    return [got, stats.requests - before, stats.bytes - read]


def py_paths(archive: Path, paths: list[list[Any]], form: str, fresh: bool) -> list[Any]:
    """Each path's [outcome, requests, bytes] on a fresh reader each, or all on one, whose
    caches must not have filled (``ONE_READER``)."""
    out = []
    for group in [[p] for p in paths] if fresh else [paths]:
        stats = msglc.LazyStats()
        with msglc.LazyReader(str(archive), counter=stats, cached=False) as r:
            out += [outcome(r, p, form, stats) for p in group]
            a = r._a  # noqa: SLF001  (its caches: never full, MAX_VIEWS raised by the test)
            assert len(a.views) < VIEWS_KEPT and len(a.nodes.nodes) < JS_NODES_KEPT
    result: list[Any] = json.loads(json.dumps(out))
    return result


def js_paths(archive: Path, paths: list[list[Any]], form: str, fresh: bool) -> list[Any]:
    require_dist()
    given = paths if form == "list" else ["/".join(map(str, p)) for p in paths]
    job = {"archive": str(archive), "paths": given, "fresh": fresh}
    proc = subprocess.run(
        ["node", str(LOOKUPS)], input=json.dumps(job), capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result: list[Any] = json.loads(proc.stdout)
    return result


def assert_same_reads(archive: Path, paths: list[list[Any]], form: str, fresh: bool) -> None:
    """Both readers give the same value or error, and make the same requests and bytes, for
    each path (``views.MAX_VIEWS`` raised by the caller, so ``py_paths`` sees whether Python's
    view cache would have filled)."""
    py = py_paths(archive, paths, form, fresh)
    js = js_paths(archive, paths, form, fresh)
    differ = [(p, a, b) for p, a, b in zip(paths, py, js, strict=True) if a != b]
    assert not differ, f"{len(differ)} of {len(paths)} paths differ, e.g. {differ[:3]}"
    assert sum(reads for _, reads, _ in py) > 0
