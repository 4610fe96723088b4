"""Deep paths: a walk down nested containers reads each level once on a local file, and a
path that goes on into a value without a node of its own (``cached=False``) decodes only what
it names (``value_at``, ``_speedups.descend_value``), with the values and errors that
decoding the value whole and resolving the rest gives."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from outcomes import answer, both_modes, plain

import msglc
from msglc.read import views as views_module
from msglc.read.paths import resolve, split_path
from msglc.read.stats import LazyStats
from msglc.util import accel

needs_c = pytest.mark.skipif(accel.speedups is None, reason="the C accelerator is not built (or MSGLC_PURE_PYTHON)")


def _record(i: int) -> dict[str | int, Any]:
    return {
        "id": i,
        "name": f"n{i}",
        "tags": [f"t{j}" for j in range(i % 4)],
        "nested": {"a": {"b": [i, {"c": "deep", "3": "str three", 3: "int three"}]}, "e": {}},
        "ints": {1: "one", -2: "minus two", 2**40: "big"},
        "mixed": [None, True, 1.5, b"bytes", [], [[1], [2, [3]]]],
        "arr": np.arange(6).reshape(2, 3),
        "dup": {"x": 1, "y": 2},
    }


_DOC: dict[str, Any] = {
    "inline": {f"r{i}": _record(i) for i in range(40)},  # an inline dict of small values
    "list": [_record(i) for i in range(300)],  # a list cut into spans of small items
    "big": {f"k{i}": _record(i) for i in range(1500)},  # a hash-indexed dict
    "wrap": {"w": {"w": {"w": {"inline": {f"r{i}": _record(i) for i in range(8)}}}}},
}

_SEGS = ["id", "name", "tags", "nested", "a", "b", "c", "3", "e", "ints", "1", "-2", "mixed", "arr", "dup", "x"]
_SEGS += ["0", "1", "2", "5", "-1", "0:2", "::-1", "nope", "", "00", "+1", "２", "99999", "1.5"]


def _paths(rng: random.Random, n: int = 600) -> list[list[Any]]:
    """Random walks down the document to a leaf (or, one in ten, stopping at a container
    below the top tables): mostly keys and indices it has (an index as an int or a str,
    some negative); some a segment it does not have, some one past a leaf."""
    out: list[list[Any]] = []
    for _ in range(n):
        obj: Any = _DOC
        path: list[Any] = []
        while isinstance(obj, (dict, list)) and obj and (len(path) < 3 or rng.random() < 0.9):
            if rng.random() < 0.05:
                path.append(rng.choice(_SEGS))
                break
            if isinstance(obj, dict):
                seg = rng.choice(list(obj))
                obj = obj[seg]
            else:
                i = rng.randrange(-len(obj), len(obj))
                seg, obj = rng.choice([i, str(i)]), obj[i]
            path.append(seg)
        if rng.random() < 0.05:
            path.append(rng.choice(_SEGS))
        out.append(path)
    return out


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("deep") / "deep.mlc"
    msglc.dump(path, _DOC, small_obj_optimization_threshold=256)
    return path


@pytest.mark.parametrize("cached", [False, True])
def test_deep_paths_give_what_decoding_whole_gives(archive, cached, monkeypatch):
    """The C walk of a value's bytes answers what the Python path answers (decode the value
    whole, resolve the rest), error messages included; every value is the document's."""
    paths = _paths(random.Random(31))

    def run() -> list[Any]:
        with msglc.LazyReader(archive, cached=cached) as r:
            out = [answer(lambda p=p: r[p]) for p in paths]
            out += [answer(lambda p=p: r["/".join(map(str, p))]) for p in paths]
            return out

    with_c, pure = both_modes(monkeypatch, run)
    assert with_c == pure
    for p, got in zip(paths, with_c, strict=False):
        if got[0] == "ok":
            assert got == ("ok", plain(resolve(_DOC, split_path(p)))), p
    assert sum(got[0] == "ok" for got in with_c) > len(with_c) * 3 // 4  # (most paths are not errors)


@needs_c
@pytest.mark.parametrize(
    "path",
    [
        ["inline", "r3", "nested", "a", "b", 1, "c"],
        ["list", 7, "nested", "a", "b", 1, "c"],
        ["list", "7", "nested", "a", "b", "1", "c"],
        ["wrap", "w", "w", "w", "inline", "r5", "nested", "a", "b", 1, "c"],
    ],
)
def test_a_deep_path_decodes_only_the_value_it_names(archive, path, monkeypatch):
    """With ``cached=False`` the record on the way is not decoded: only "deep" is."""
    decoded: list[bytes] = []
    decode = views_module._decode  # noqa: SLF001 (the decoder the C walk is handed)

    def counting(data: bytes) -> Any:
        decoded.append(bytes(data))
        return decode(data)

    monkeypatch.setattr(views_module, "_decode", counting)
    for form in (path, "/".join(map(str, path))):
        decoded.clear()
        with msglc.LazyReader(archive, cached=False) as r:
            assert r[form] == "deep"
        assert decoded == [msgspec.msgpack.encode("deep")]


@needs_c
@pytest.mark.parametrize("top", ["map", "list"])
def test_the_c_walk_takes_a_value_only_when_its_bytes_are_exactly_one_value(top):
    """``descend_value`` answers only for bytes that frame as exactly one msgpack value (else
    the Python path decodes them whole and raises): bytes after it, or an item after the one
    taken cut short or of an unknown kind, leave the answer to Python. It checks so while its
    first step walks the value, not in a walk of its own before."""
    speedups = accel.speedups
    assert speedups is not None
    items = [{"a": i, "b": [i, "x" * i]} for i in range(6)]
    value = {f"k{i}": item for i, item in enumerate(items)} if top == "map" else items
    data = msgspec.msgpack.encode(value)
    first = ["k2", "b", "1"] if top == "map" else ["2", "b", "1"]
    assert speedups.descend_value(data, first, msgspec.msgpack.decode) == "xx"
    last = msgspec.msgpack.encode(items[-1])
    at = data.rindex(last)
    broken = {
        "a byte after the value": data + b"\xc0",
        "the last item cut short": data[:-1],
        "the last item of an unknown kind": data[:at] + b"\xc1" + data[at + 1 :],
    }
    for why, bad in broken.items():
        assert speedups.descend_value(bad, first, msgspec.msgpack.decode) is NotImplemented, why
    assert speedups.descend_value(data, [], msgspec.msgpack.decode) == value
    assert speedups.descend_value(data + b"\xc0", [], msgspec.msgpack.decode) is NotImplemented


_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.text(max_size=4), st.binary(max_size=3)
)
_KEY = st.one_of(st.sampled_from(["a", "b", "0", "1", ""]), st.integers(0, 2))
_VALUE = st.recursive(
    _LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEY, inner, max_size=4)), max_leaves=20
)


def _named(value: Any, tail: list[Any]) -> tuple[bool, Any]:
    """What ``tail`` names in a decoded value, as the C walk reads a path: str keys of maps,
    ASCII-digit str or int indexes of arrays; (False, None) for anything else."""
    for seg in tail:
        if isinstance(value, dict) and type(seg) is str and seg in value:
            value = value[seg]
        elif isinstance(value, list) and type(seg) in (str, int):
            index = int(seg) if type(seg) is str and seg.isascii() and seg.isdigit() and len(seg) < 19 else seg
            if type(index) is not int or not 0 <= index < len(value):
                return False, None
            value = value[index]
        else:
            return False, None
    return True, value


@needs_c
@settings(max_examples=300, deadline=None)
@given(value=_VALUE, data=st.data())
def test_the_c_walk_answers_only_what_the_whole_value_decoded_gives(value, data):
    """On any bytes, sound or damaged (cut, a byte changed, one added or removed), and any
    path: ``descend_value`` answers only when the bytes frame as exactly one msgpack value,
    and then with what the value decoded whole gives at that path (where it decodes: an
    undecodable sibling is left undetected, docs/reliability.md)."""
    speedups = accel.speedups
    assert speedups is not None
    tail: list[Any] = []
    node = value
    while isinstance(node, (dict, list)) and node and data.draw(st.integers(0, 5)):
        if isinstance(node, dict):
            key = data.draw(st.sampled_from([*node, "zz"]))
            if key not in node or type(key) is not str:
                tail.append(key)
                break
            tail.append(key)
            node = node[key]
        else:
            i = data.draw(st.integers(0, len(node)))
            tail.append(data.draw(st.sampled_from([i, str(i), f"0{i}"])))
            node = node[i] if i < len(node) else None
    raw = bytearray(msgspec.msgpack.encode(value))
    for _ in range(data.draw(st.integers(0, 2))):
        at = data.draw(st.integers(0, len(raw)))
        how = data.draw(st.sampled_from(["cut", "set", "insert", "delete"]))
        if how == "cut":
            del raw[at:]
        elif how == "insert":
            raw[at:at] = bytes([data.draw(st.integers(0, 255))])
        elif at < len(raw):
            if how == "set":
                raw[at] = data.draw(st.integers(0, 255))
            else:
                del raw[at]
    got = speedups.descend_value(bytes(raw), tail, msgspec.msgpack.decode)
    if got is NotImplemented:
        return
    msgspec.msgpack.decode(bytes(raw), type=msgspec.Raw)  # exactly one value, or this raises
    try:
        whole = msgspec.msgpack.decode(bytes(raw))
    except (msgspec.DecodeError, UnicodeDecodeError, TypeError):
        return
    found, named = _named(whole, tail)
    assert found and msgspec.msgpack.encode(named) == msgspec.msgpack.encode(got)  # (NaN: as bytes)


def test_a_walk_down_nested_nodes_reads_each_level_once(tmp_path):
    """On a local file a node's kids come with the node's read (they precede it in the TOC),
    and each entry's key comes with its container's header: a level costs one read."""
    depth = 8
    doc: Any = {"leaf": "x", "pad": list(range(100))}
    for level in range(depth):
        doc = {f"k{level}": doc, f"pad{level}": "p" * 100}
    path = tmp_path / "nested.mlc"
    msglc.dump(path, doc, small_obj_optimization_threshold=64)
    keys = [f"k{level}" for level in reversed(range(depth))]
    stats = LazyStats()
    with msglc.LazyReader(path, cached=False, counter=stats) as r:
        stats.clear()
        assert r[[*keys, "leaf"]] == "x"
        assert stats.requests == depth + 1  # a read per level, then the leaf's entry


@pytest.mark.parametrize("seg", [1.0, None, ("a",), 2**70, -(2**70)])
def test_a_list_segment_of_another_type_fails_as_indexing_fails(archive, seg, monkeypatch):
    """A segment that is no int on a list of spans (followed by more) raises the TypeError
    (or IndexError) of indexing the list with it, with the C accelerator as without."""

    def run() -> list[Any]:
        with msglc.LazyReader(archive, cached=False) as r:
            return [answer(lambda: r[["list", seg, "id"]]), answer(lambda: r[["list", seg]])]

    with_c, pure = both_modes(monkeypatch, run)
    assert with_c == pure
    assert with_c[0] == with_c[1]
    assert with_c[0][0] in ("TypeError", "IndexError")
