"""``order="sorted"`` (msgspec's option name): dicts stored with their keys sorted, and in
compressed archives a big dict of str keys or of int keys indexed by the first key of each
block (node type 9), which costs almost nothing a key. Lookups of every key and of absent
ones, with and without the C accelerator; keys out of order caught by verify; the writers that
keep the order they are given refuse the option."""

import io
import random

import pytest

import msglc
from msglc import CorruptedError, FileInfo, LazyReader, LazyWriter
from msglc.format import fuse
from msglc.format.nodes import BlockHashMapNode, DirectMapNode, FuseMapNode, SortedMapNode
from msglc.read.part import archive_of
from msglc.util import accel

pytest.importorskip("zstandard")

SORTED = {"compression": "zstd", "order": "sorted"}


def words(n, seed=1):
    rng = random.Random(seed)
    return {f"w{rng.getrandbits(40):010x}": rng.randrange(300) for _ in range(n)}


def root_node(r):
    a = archive_of(r)
    t = a.opened.trailer
    return a.node(t.toc_off + t.root_pos, t.root_len)


def test_every_dict_is_stored_with_its_keys_sorted():
    obj = {"b": {"z": 1, "a": [{"y": 2, "x": 3}]}, "a": (1, {"d": 4, "c": 5}), 3: "int", -1: "first"}
    for options in ({"order": "sorted"}, SORTED):
        got = LazyReader(msglc.dumps(obj, **options)).to_obj()
        assert got == {k: (list(v) if isinstance(v, tuple) else v) for k, v in obj.items()}
        assert list(got) == [-1, 3, "a", "b"]  # ints first, then strs
        assert list(got["b"]) == ["a", "z"] and list(got["b"]["a"][0]) == ["x", "y"]
        assert list(got["a"][1]) == ["c", "d"]
    assert list(LazyReader(msglc.dumps(obj)).to_obj()) == ["b", "a", 3, -1]  # the default keeps insertion order


@pytest.mark.parametrize("pure", [False, True], ids=["C", "pure Python"])
def test_a_sorted_dict_reads_every_key_and_no_absent_one(monkeypatch, pure):
    if pure:
        monkeypatch.setattr(accel, "speedups", None)
    d = words(40_000)
    d["m-big"] = list(range(20_000))  # a value with a node of its own, inside the dict
    data = msglc.dumps(d, **SORTED)
    with LazyReader(data, cached=False) as r:
        node = root_node(r)
        assert isinstance(node, SortedMapNode)
        root = r.read()
        for k in random.Random(2).sample(list(d), 2000):
            assert root[k] == d[k] and k in root
        assert root["m-big"] == d["m-big"]
        for k in ["", "a", "w", "w0000000000", "wzzzzzzzzzz", "zzz", 3, -1]:
            assert k not in root
            with pytest.raises(KeyError):
                root[k]
        assert list(root.keys()) == sorted(d)
        r.verify()


def test_a_dict_of_int_keys_is_indexed_by_its_first_keys():
    d = {(-1) ** i * i * 7919: f"v{i}" for i in range(30_000)}
    with LazyReader(msglc.dumps(d, **SORTED), cached=False) as r:
        assert isinstance(root_node(r), SortedMapNode)
        root = r.read()
        for k in random.Random(3).sample(list(d), 1000):
            assert root[k] == d[k]
        for k in [1, -7918, 2**63, "7919", min(d) - 1, max(d) + 1]:
            assert k not in root
        r.verify()


def test_the_index_costs_almost_nothing_a_key():
    n = 200_000
    d = {f"k{i:08d}": i % 7 for i in range(n)}
    with LazyReader(msglc.dumps(d, **SORTED)) as r:
        node = root_node(r)
        assert isinstance(node, SortedMapNode)
        assert node.index[1] / n < 0.1, node.index[1] / n  # a fuse takes about 1.3 bytes a key


def test_keys_of_two_types_or_a_plain_archive_get_the_usual_index():
    d = {**words(5000), **{i: i for i in range(5000)}}
    with LazyReader(msglc.dumps(d, **SORTED)) as r:
        assert type(root_node(r)) in (FuseMapNode, BlockHashMapNode)
        ints, strs = sorted(k for k in d if isinstance(k, int)), sorted(k for k in d if isinstance(k, str))
        assert list(r.to_obj()) == ints + strs
        assert all(r[k] == d[k] for k in random.Random(4).sample(list(d), 500))
    with LazyReader(msglc.dumps(words(5000), order="sorted")) as r:  # plain: format 1.x has no type 9
        assert type(root_node(r)) is DirectMapNode


def test_keys_out_of_order_are_caught_by_verify():
    """A crafted archive: a type-9 index over keys that do not ascend (the writer's sort and
    check defeated). Verify refuses it."""
    with LazyReader(_crafted_sorted(words(20_000)), cached=False) as r:
        assert isinstance(root_node(r), SortedMapNode)
        with pytest.raises(CorruptedError, match="do not ascend"):
            r.verify()


def _crafted_sorted(d):
    """An archive whose writer believed ``d`` sorted: its data in ``d``'s order, its index
    type 9."""
    from msglc.write import encoder

    real = encoder.sorted_dicts
    try:
        encoder.sorted_dicts = lambda obj: obj  # keep the order...
        original = fuse.ascends
        fuse.ascends = lambda keys: True  # ...and let the index call it ascending
        return msglc.dumps(d, **SORTED)
    finally:
        encoder.sorted_dicts = real
        fuse.ascends = original


def test_first_keys_that_are_not_the_blocks_are_caught_by_verify(monkeypatch):
    """Block 1's first key named as its second (the same length, still ascending): lookups
    of that key miss, verify names the index."""
    d = words(20_000)
    keys = sorted(d)
    original = fuse.sorted_region

    def shifted(offs, firsts):
        return original(offs, [firsts[0], keys[keys.index(firsts[1]) + 1], *firsts[2:]])

    monkeypatch.setattr(fuse, "sorted_region", shifted)
    data = msglc.dumps(d, **SORTED)
    monkeypatch.undo()
    with LazyReader(data, cached=False) as r:
        assert isinstance(root_node(r), SortedMapNode)
        with pytest.raises(CorruptedError, match="sorted index"):
            r.verify()


def test_repacking_with_order_sorted_sorts(tmp_path):
    d = words(20_000)
    source = tmp_path / "in.mlc"
    msglc.dump(source, d, compression="zstd")
    with LazyReader(source) as r:
        msglc.dump(tmp_path / "out.mlc", r, order="sorted")
    with LazyReader(tmp_path / "out.mlc") as r:
        assert isinstance(root_node(r), SortedMapNode)  # (the source's compression kept)
        assert list(r.to_obj()) == sorted(d) and r.to_obj() == d


def test_writers_that_keep_the_given_order_refuse_it(tmp_path):
    part = tmp_path / "part.mlc"
    msglc.dump(part, {"b": 1, "a": 2})
    with pytest.raises(ValueError, match="order='sorted'"):
        LazyWriter(tmp_path / "w.mlc", order="sorted")
    with pytest.raises(ValueError, match="order='sorted'"):
        msglc.combine(tmp_path / "c.mlc", [FileInfo(part, "x")], order="sorted")
    with pytest.raises(ValueError, match="order='sorted'"):
        msglc.append(tmp_path / "c.mlc", [FileInfo(part, "y")], order="sorted")
    with pytest.raises(ValueError, match="order must be"):
        msglc.dumps({}, order="descending")
    # a value written as it is produced (generators, Pairs) keeps the order it gives
    for streamed in ({"b": (i for i in range(3)), "a": 1}, {"m": msglc.Pairs([("z", 1), ("a", 2)])}):
        with pytest.raises(ValueError, match="sorts the dicts of a value held whole"):
            msglc.dumps(streamed, order="sorted")
        with pytest.raises(ValueError, match="sorts the dicts of a value held whole"):
            msglc.dump(tmp_path / "w.mlc", streamed, order="sorted")
    assert not (tmp_path / "w.mlc").exists() and not (tmp_path / "c.mlc").exists()


def test_a_configured_order_applies_to_dump_and_is_ignored_by_lazy_writer():
    msglc.configure(order="sorted")
    try:
        assert list(LazyReader(msglc.dumps({"b": 1, "a": 2})).to_obj()) == ["a", "b"]
        buf = io.BytesIO()
        with LazyWriter(buf) as w:
            w.write({"b": 1, "a": 2})
        assert list(LazyReader(buf.getvalue()).to_obj()) == ["b", "a"]
    finally:
        msglc.configure(order=None)
