"""Direct-indexed dicts (node type 10) as ``msglc.dump`` writes them now, looked up by both
readers: the same values, and the same storage requests and bytes for each key (Python's
``LazyStats`` with ``cached=False``, as JS keeps no values), on one reader, on a fresh reader
for each key, and with nothing of the index kept (js/test/support/lookup-reads.mjs).

The reads are those of ``DirectIndex``'s Python path, the definition that the JS reader
follows: the C probe (``_speedups.DirectProbe``) keeps its chunks whatever ``RECORDS_KEPT``
says, and where it hands a lookup to the Python path (an entry longer than entry_read) the
Python path reads again what it read. Its values are checked against the same answers."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jsread import JS, require_dist
from path_reads import counted, tagged

import msglc
import msglc.read.dict_index as dict_index
from msglc.util import accel

LOOKUPS = JS / "test" / "support" / "lookup-reads.mjs"

pytestmark = pytest.mark.skipif(accel.speedups is None, reason="writers build type 10 with the C accelerator only")


def lookup(d: Any, k: Any, stats: msglc.LazyStats) -> list[Any]:
    """[outcome, requests, bytes] of ``d[k]``, as lookup-reads.mjs writes them."""
    return counted(lambda: d[k], stats)


def without_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lookups of DirectIndex by its Python path: no C probe is made."""
    init = dict_index.DirectIndex.__init__

    def python_path(self: dict_index.DirectIndex, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.probe = None

    monkeypatch.setattr(dict_index.DirectIndex, "__init__", python_path)


def py_lookups(path: Path, keys: list[Any], fresh: bool) -> list[Any]:
    """Each key of "d" looked up on one reader, or on a fresh reader each."""
    out = []
    for group in [[k] for k in keys] if fresh else [keys]:
        stats = msglc.LazyStats()
        with msglc.LazyReader(str(path), counter=stats, cached=False) as r:
            d = r["d"]
            out += [lookup(d, k, stats) for k in group]
    result: list[Any] = json.loads(json.dumps(out))
    return result


def js_lookups(path: Path, keys: list[Any], fresh: bool, keep: bool) -> list[Any]:
    require_dist()
    job = {"archive": str(path), "dict": "d", "keys": [tagged(k) for k in keys], "fresh": fresh, "keep": keep}
    proc = subprocess.run(
        ["node", str(LOOKUPS)], input=json.dumps(job), capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result: list[Any] = json.loads(proc.stdout)
    return result


def dicts() -> dict[str, tuple[dict[Any, Any], list[Any], dict[str, Any]]]:
    """name: (the dict, the keys looked up, dump options)."""
    rng = random.Random(10)
    values: list[Any] = [None, True, 1.5, -7, 2**40, "", "short", "s" * 300, [1, 2, [3]], {"a": 1, "b": [2]}]
    strs: dict[Any, Any] = {f"key/{i}/{'x' * (i % 13)}": values[i % len(values)] for i in range(6000)}
    strs["a long key " + "k" * 200] = list(range(50))
    strs["large"] = list(range(5000))  # a node of its own at the default threshold
    ints: dict[Any, Any] = {(-1) ** i * (i * 2_654_435_761 % 2**62): i for i in range(3000)}
    ints.update({2**64 - 1: "top", -(2**63): "bottom", 0: "zero"})
    many = {f"m{i:06d}": i for i in range(100_000)}
    # values of about 600 bytes (read whole with their key), two of 12 KB, early in a dict of
    # 1.3 MB, read again from their start with 1 MB (WALK_OVER)
    wide = {f"w{i}": list(range(1000 + i % 7, 1000 + i % 7 + 200)) for i in range(2000)}
    wide = {"first": list(range(1000, 5000)), "second": list(range(1000, 5000)), **wide}
    absent = ["nope", "", 12345, -1, 2**63, "key/1/"]
    pick = lambda d, k: rng.sample(list(d), k) + absent  # noqa: E731
    return {
        "strs": (strs, pick(strs, 300), {}),
        "strs-t0": (strs, pick(strs, 200), {"small_obj_optimization_threshold": 0}),
        "ints": (ints, pick(ints, 300), {}),
        "many": (many, pick(many, 300), {}),
        "wide": (wide, ["first", "second", *pick(wide, 50)], {"small_obj_optimization_threshold": 20000}),
    }


DICTS = dicts()


@pytest.mark.parametrize("name", list(DICTS))
def test_both_readers_find_the_same_values_with_the_same_reads(name, tmp_path, monkeypatch):
    obj, keys, options = DICTS[name]
    path = tmp_path / f"{name}.mlc"
    msglc.dump(str(path), {"d": obj}, **options)
    with msglc.LazyReader(str(path)) as r:
        d = r["d"]
        assert keys[0] in d and isinstance(d.loaded_index(), dict_index.DirectIndex)
        assert d.loaded_index().probe is not None  # (the C lookup, whose answers are checked below)
    with_c = [got for got, _, _ in py_lookups(path, keys, fresh=False)]
    for fresh, keep in ((False, True), (True, True), (False, False)):
        with monkeypatch.context() as m:
            without_probe(m)
            if not keep:
                m.setattr(dict_index, "RECORDS_KEPT", -1)
            py = py_lookups(path, keys, fresh)
        assert [got for got, _, _ in py] == with_c
        js = js_lookups(path, keys, fresh, keep)
        differ = [(k, p, j) for k, p, j in zip(keys, py, js, strict=True) if p != j]
        assert not differ, f"fresh={fresh} keep={keep}: {len(differ)} of {len(keys)} differ, e.g. {differ[:3]}"
