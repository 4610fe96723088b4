"""Paged lists (node types 11 and 12: a list of more than 1024 spans keeps its span table in
pages of 1024) read by both readers from a local file: the same values, and the same storage
requests and bytes for each path (Python's ``LazyStats`` with ``cached=False``), on a fresh
reader for each path and on one reader for all (js/test/support/lookup-reads.mjs, its "paths"
job, as test_js_path_reads.py reads deep paths), and the same reads to open.

The reads are Python's: opening reads the paged node (a few dozen bytes) with the TOC bytes
before it (``Source.node_window``); an item reads the page that holds its span, once (a node
read: with the TOC bytes before it), then its span as a type-1 list's item; an item with a
node of its own reads that node, and below it as any lazy part. The lists are cut into 2 to 5
pages, with items that have nodes of their own in every page (a paged list among them) and
paths into them; indices from the end, and out of range."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsread import js_read_many
from path_reads import MISSING, assert_same_reads, py_paths

import msglc
import msglc.read.views as views
from msglc.format.nodes import PagedListNode

ONE_READER = 150  # paths on one reader: well inside both readers' caches (test_js_path_reads.py)


def item(rng: random.Random, i: int) -> Any:
    """Mostly short scalars; every 13th a small list (no node at these thresholds); every 97th
    a dict with nodes of its own a few levels down."""
    if i % 97 == 5:
        return {
            "id": i,
            "vals": [rng.randrange(1000) for _ in range(20)],
            "deep": {"a": {"b": [i, {"c": "x" * (i % 30)}]}},
        }
    if i % 13 == 0:
        return [i, "s", [1, 2]]
    return [i, f"v{i}", None, True, i * 0.25, -i][i % 6]


def root_list(n: int) -> list[Any]:
    rng = random.Random(n)
    return [item(rng, i) for i in range(n)]


def nested(n: int) -> dict[str, Any]:
    """A paged list below the root, one of whose items is a paged list too."""
    rows = root_list(n)
    rows[1500] = [f"w{j}" for j in range(4000)]
    return {"meta": {"rows": n}, "rows": rows, "tail": [1, 2, 3]}


# (name, document, threshold): 2, 4, 3, 4 and 4 pages, and a nested one
CASES = [
    ("t8-3000", lambda: root_list(3000), 8),
    ("t8-6000", lambda: root_list(6000), 8),
    ("t12-6000", lambda: root_list(6000), 12),
    ("t16-9000", lambda: root_list(9000), 16),
    ("t4-4000", lambda: root_list(4000), 4),
    ("nested-t8", lambda: nested(5000), 8),
]


def paged(r: msglc.LazyReader, path: list[Any]) -> PagedListNode:
    """The paged node of the list at ``path``."""
    view = r[path] if path else r.read()
    node = view._node  # noqa: SLF001 (the node Python's reader reads)
    assert isinstance(node, PagedListNode), type(node)
    return node


def paths_in(doc: Any, at: list[Any], node: PagedListNode, rng: random.Random) -> list[list[Any]]:
    """Paths into the paged list at ``at``: each page's first and last item and items
    between, the same page again, items with nodes of their own and paths into them (and past
    their ends), items without nodes and paths into them, indices from the end, and indices
    out of range."""
    items: list[Any] = doc
    for seg in at:
        items = items[seg]
    n = len(items)
    out: list[list[Any]] = []
    ends = [*node.firsts[1:], n]
    for first, end in zip(node.firsts, ends, strict=True):
        out += [[first], [end - 1], [first + 1], [rng.randrange(first, end)], [rng.randrange(first, end)]]
        out += [[first - n], [end - 1 - n]]  # the same items from the end
    big = [i for i, x in enumerate(items) if isinstance(x, (dict, list)) and len(msgspec.msgpack.encode(x)) > 64]
    for i in rng.sample(big, min(12, len(big))):
        x = items[i]
        if isinstance(x, dict):
            out += [
                [i],
                [i, "deep", "a", "b", 1, "c"],
                [i, "vals", 19],
                [i, "vals", 20],
                [i, "vals", -20],
                [i, MISSING],
            ]
            out += [[i - n, "deep", "a"], [i, "deep", "a", "b", 0]]
        else:  # a long list with a node of its own (a paged list in ``nested``)
            out += [[i], [i, 0], [i, len(x) - 1], [i, 2500], [i, -1], [i, len(x)]]
    small = [i for i, x in enumerate(items) if isinstance(x, list) and len(x) == 3]
    for i in rng.sample(small, min(6, len(small))):
        out += [[i, 2, 1], [i, 1], [i, 3], [i - n, 0]]
    out += [[-1], [-n], [n], [n + 5], [-n - 1], [10**6]]
    return [[*at, *p] for p in out]


@pytest.fixture(scope="module", params=CASES, ids=[name for name, _, _ in CASES])
def archive(request, tmp_path_factory) -> tuple[Path, list[list[Any]]]:
    name, make, threshold = request.param
    doc = make()
    path = tmp_path_factory.mktemp("paged") / f"{name}.mlc"
    msglc.dump(str(path), doc, small_obj_optimization_threshold=threshold)
    rng = random.Random(name)
    with msglc.LazyReader(str(path)) as r:
        if isinstance(doc, dict):
            paths = paths_in(doc, ["rows"], paged(r, ["rows"]), rng)
            paths += paths_in(doc, ["rows", 1500], paged(r, ["rows", 1500]), rng)
            paths += [["meta", "rows"], ["tail", 2], [MISSING, 0]]
        else:
            paths = paths_in(doc, [], paged(r, []), rng)
    rng.shuffle(paths)
    return path, paths


def test_the_lists_are_paged_with_nodes_in_every_page(archive):
    path, paths = archive
    with msglc.LazyReader(str(path)) as r:
        lists: list[list[Any]] = [[]] if isinstance(r.read(), msglc.LazyList) else [["rows"], ["rows", 1500]]
        for at in lists:
            node = paged(r, at)
            assert 2 <= len(node.pages) <= 5
            view = r[at] if at else r.read()
            whole = r._a.spans(view._pos, node)  # noqa: SLF001 (the span table its pages make)
            with_nodes = {whole.starts[k] for k in whole.kids}
            ends = [*node.firsts[1:], node.n]
            if not at or at == ["rows"]:
                assert all(any(f <= i < e for i in with_nodes) for f, e in zip(node.firsts, ends, strict=True))
    got = [g for g, _, _ in py_paths(path, paths, "list", fresh=True)]
    assert sum("lazy" in g for g in got) >= 10 and sum("error" in g for g in got) >= 20
    assert sum("value" in g for g in got) >= 50


def test_both_readers_open_a_paged_list_with_the_same_reads(archive):
    path, _ = archive
    stats = msglc.LazyStats()
    with msglc.LazyReader(str(path), counter=stats, cached=False):
        py = {"requests": stats.requests, "bytes": stats.bytes}
    no_paths: list[list[str]] = [[]]
    (got,) = js_read_many([path], no_paths)  # its "opened": the reads to open
    assert {k: got["opened"][k] for k in py} == py
    assert py["bytes"] < 8192  # the node, not its pages


@pytest.mark.parametrize("form", ["list", "str"])
@pytest.mark.parametrize("fresh", [True, False], ids=["fresh", "one-reader"])
def test_both_readers_read_paged_lists_with_the_same_reads(archive, form, fresh, monkeypatch):
    path, paths = archive
    paths = paths if fresh else paths[:ONE_READER]
    monkeypatch.setattr(views, "MAX_VIEWS", 1 << 30)  # (so py_paths sees whether it would have filled)
    assert_same_reads(path, paths, form, fresh)
