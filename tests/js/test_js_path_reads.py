"""Deep paths through nested documents, read by both readers from a local file: the same
values, and the same storage requests and bytes for each path (Python's ``LazyStats`` with
``cached=False``, as JS keeps no values), on a fresh reader for each path and on one reader
for all (js/test/support/lookup-reads.mjs, its "paths" job).

The documents have TOC nodes at several levels (a small threshold): dicts of dicts of lists of
dicts, inline and hash-indexed dicts, lists cut into spans, fixed-stride lists. The reads a path
makes are those test_js_direct.py checks key by key, one level after another: a node read with
the TOC bytes before it (``Source.node_window``: a local file's), so that its kids, written
before it, come from memory; a kid's key and its container's header in one read; a value
without a node read with its key and decoded. Paths end at containers with nodes (lazy), at
values without nodes (some several segments into them) and at keys and indices that are not
there (at any level)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from path_reads import MISSING, assert_same_reads, py_paths

import msglc
import msglc.read.views as views

# Paths read on one reader: as many as keep both readers' caches of views (1024 each) and
# nodes (JS: 4096) from filling, where their policies differ (Python empties a full cache, JS
# drops the views and nodes least recently used), and with them the reads of a path read again.
ONE_READER = 120


def document(seed: int) -> dict[str, Any]:
    """Runs of steps (dicts of dicts of lists of dicts, 8 levels deep), a hash-indexed dict of
    records, a grid of rows of one size (a fixed-stride list), small values among them."""
    rng = random.Random(seed)

    def step(j: int) -> dict[str, Any]:
        return {
            "t": j,
            "values": [rng.randrange(1000) for _ in range(j % 30)],
            "info": {"ok": j % 2 == 0, "note": "n" * (j % 50), "where": {"x": j, "hist": list(range(j % 25, 3 * j))}},
        }

    def run(i: int) -> dict[str, Any]:
        return {
            "meta": {"name": f"run {i}", "params": {"a": i, "b": [i, i + 1], "c": "x" * (i % 40)}},
            "steps": [step(j) for j in range(10 + i % 17)],
            "tags": ["t" * k for k in range(i % 6)],
            "grid": [[rng.random() for _ in range(4)] for _ in range(3 + i % 9)],
        }

    return {
        "runs": {f"run{i}": run(i) for i in range(24)},
        "index": {f"k{i}": {"ref": [i, {"deep": {"deeper": {"deepest": list(range(i % 90))}}}]} for i in range(2500)},
        "grid": [[i * 0.5 + j for j in range(6)] for i in range(60)],
        "small": {"a": 1, "b": [2, 3]},
    }


def walk(obj: Any, path: list[Any], out: list[list[Any]]) -> None:
    """Every path below ``obj`` (at most 8 segments), each after its parent's."""
    if len(path) >= 8:
        return
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        out.append([*path, k])
        walk(v, [*path, k], out)


def paths_of(doc: dict[str, Any], seed: int, n: int, threshold: int) -> list[list[Any]]:
    """``n`` paths of 4 to 8 segments, ``n // 2`` more to containers of more than
    ``threshold`` bytes (with nodes of their own) and ``n // 4`` to smaller ones (without),
    and ``n`` of 2 to 8 segments with a key or an index that is not there (at a random
    level), in random order."""
    rng = random.Random(seed)
    every: list[list[Any]] = []
    walk(doc, [], every)
    deep = [p for p in every if len(p) >= 4]

    def at(p: list[Any]) -> Any:
        obj: Any = doc
        for seg in p:
            obj = obj[seg]
        return obj

    containers = [p for p in deep if isinstance(at(p), (dict, list))]
    big = [p for p in containers if len(msgspec.msgpack.encode(at(p))) > threshold]
    small = [p for p in containers if len(msgspec.msgpack.encode(at(p))) <= threshold]
    chosen = rng.sample(deep, n) + rng.sample(big, n // 2) + rng.sample(small, n // 4)
    missing = []
    for p in rng.sample([p for p in every if len(p) >= 2], n):
        cut = rng.randrange(1, len(p))  # the segment replaced: below the root's own keys
        parent = at(p[:cut])
        bad = MISSING if isinstance(parent, dict) else len(parent) + rng.randrange(3)
        missing.append([*p[:cut], bad, *p[cut + 1 :]])
    out = chosen + missing
    rng.shuffle(out)
    return out


@pytest.fixture(scope="module", params=[64, 128])
def archive(request, tmp_path_factory) -> tuple[Path, list[list[Any]]]:
    threshold = request.param
    doc = document(threshold)
    path = tmp_path_factory.mktemp("paths") / f"deep-t{threshold}.mlc"
    msglc.dump(str(path), doc, small_obj_optimization_threshold=threshold)
    return path, paths_of(doc, threshold, 120, threshold)


def test_the_documents_have_nodes_at_several_levels(archive):
    path, paths = archive
    with msglc.LazyReader(str(path)) as r:
        depths = {depth for depth, _, _ in r.nodes()}
        kinds = {info.kind for _, _, info in r.nodes()}
    assert set(range(6)) <= depths
    assert {"dict", "hash-indexed dict", "list"} <= kinds
    got = [g for g, _, _ in py_paths(path, paths, "list", fresh=True)]
    assert sum("lazy" in g for g in got) >= 10 and sum("error" in g for g in got) >= 100
    assert sum("value" in g and isinstance(g["value"], (list, dict)) for g in got) >= 10


@pytest.mark.parametrize("form", ["list", "str"])
@pytest.mark.parametrize("fresh", [True, False], ids=["fresh", "one-reader"])
def test_both_readers_resolve_deep_paths_with_the_same_reads(archive, form, fresh, monkeypatch):
    path, paths = archive
    paths = paths if fresh else paths[:ONE_READER]
    monkeypatch.setattr(views, "MAX_VIEWS", 1 << 30)  # (so py_paths sees whether it would have filled)
    assert_same_reads(path, paths, form, fresh)
