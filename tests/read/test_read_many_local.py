"""``read_many`` of a local archive (``read.local_many``): the paths resolved together, list items
found in C. Whatever the paths, it returns what ``[reader[p] for p in paths]`` returns and
raises what that loop raises first."""

from __future__ import annotations

import random

import msgspec
import pytest

import msglc
from msglc.read.views import MISSING, list_items, walks_spans
from msglc.util import accel


def _doc(n: int = 3000) -> dict[str, object]:
    rng = random.Random(3)
    runs = [
        {"id": i, "score": rng.random(), "tags": [f"t{i % 7}", f"u{i % 3}"], "params": {"lr": i / 7, "d": {"x": i}}}
        for i in range(n)
    ]
    return {"runs": runs, "meta": {"name": "m", "3": "str three", 3: "int three"}, "small": [1, [2, 3]]}


def _outcome(fn):
    try:
        return ("value", fn())
    except Exception as e:  # noqa: BLE001 - compared with the loop's
        return (type(e), str(e))


PATHS = [
    "runs/5/score", "runs/5/tags/1", "runs/5/params/d/x", "runs/5", "runs/2999/id", "runs/0/params",
    "runs/-1/id", "runs/1:3", "runs/0:2:6", "runs/7/nope", "runs/3000/id", "runs/x", "meta/3", "meta/name",
    "small/1/0", "runs//5//score", "runs/5/tags/2", "runs/5/score/x", "runs/+3/id", "runs/3_0/id",
    ["runs", 5, "score"], ["runs", slice(1, 3)], ["meta", 3], "", "meta", ["meta", ""], ["runs", 5, "", "score"],
    "runs/5/tags/" + "1" * 5000, "runs/" + "1" * 5000,
]  # fmt: skip


@pytest.mark.parametrize("cached", [False, True])
@pytest.mark.parametrize("pure", [False, True])
def test_read_many_is_the_loop(tmp_path, monkeypatch, cached, pure):
    if pure:
        monkeypatch.setattr(accel, "speedups", None)
    doc = _doc()
    path = tmp_path / "a.mlc"
    msglc.dump(path, doc, small_obj_optimization_threshold=1024)
    rng = random.Random(1)
    many = PATHS + [
        f"runs/{rng.randrange(3000)}/{rng.choice(['score', 'id', 'tags/0', 'params/lr'])}" for _ in range(500)
    ]
    with msglc.LazyReader(path, cached=cached) as r:
        for p in many:  # one at a time: the errors too
            expected = _outcome(lambda p=p: msglc.to_obj(r[p]))
            got = _outcome(lambda p=p: msglc.to_obj(r.read_many([p])[0]))
            assert got == expected, p
        fine = [p for p in many if _outcome(lambda p=p: r[p])[0] == "value"]
        assert [msglc.to_obj(v) for v in r.read_many(fine)] == [msglc.to_obj(r[p]) for p in fine]
        failing = ["runs/1/score", "runs/9999/id", "runs/2/nope"]
        with pytest.raises(IndexError, match="9999"):  # the first failure, in path order
            r.read_many(failing)


def test_the_c_walk_inside_an_item_takes_the_value_decoding_would(tmp_path):
    """The rest of a path is found in C inside the item: the last of equal keys (as decoding
    keeps), str keys matched by their text whatever their header; what it cannot be sure of
    (int keys, other kinds of values) it leaves to the Python path."""
    if accel.speedups is None:
        pytest.skip("the C walk needs the accelerator")
    items = [{"a": 1, "b": [10, 20, 30]} for _ in range(400)]
    path = tmp_path / "l.mlc"
    msglc.dump(path, items, small_obj_optimization_threshold=1024)
    with msglc.LazyReader(path, cached=False) as r:
        root = r.read()
        assert walks_spans(root)
        got = list(list_items(root, [0, 5, 399], [["b", "2"], ["a"], ["b", 1]]))
        assert got == [30, 1, 20]
        assert list(list_items(root, [1, 2], [["zz"], ["b", "3"]])) == [MISSING, MISSING]
        assert list(list_items(root, [3], [["a", "x"]])) == [MISSING]  # an int has no keys
    # items {"a": 1, "bb": 2} rewritten in place as {"a": 1, "a" (a str8 header): 2}, which
    # decodes to {"a": 2}: the C walk must answer 2 as well
    path2 = tmp_path / "dup.mlc"
    msglc.dump(path2, [{"a": 1, "bb": 2}] * 300, small_obj_optimization_threshold=1024)
    data = path2.read_bytes()
    before, after = b"\x82\xa1a\x01\xa2bb\x02", b"\x82\xa1a\x01\xd9\x01a\x02"
    assert data.count(before) == 300 and msgspec.msgpack.decode(after) == {"a": 2}
    path2.write_bytes(data.replace(before, after))
    picks = list(range(0, 300, 7))
    with msglc.LazyReader(path2, cached=False) as r:
        assert r.read_many([f"{i}/a" for i in picks]) == [2] * len(picks)
        assert [r[f"{i}/a"] for i in picks] == [2] * len(picks)
