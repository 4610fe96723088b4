"""Subclasses of dict, list, tuple, set and frozenset.

msgspec encodes them from their C storage. One that defines its own iteration (``items()`` for
a dict, ``__iter__`` for the others) is stored from what that yields, streamed with bounded
memory; one that does not keeps the C path and the very bytes of the plain container. And no
StopIteration ever escapes ``dump``/``dumps``, where it would silently end the caller's loop.
"""

import io
import tracemalloc
from collections import Counter, OrderedDict, defaultdict, namedtuple

import msgpack
import pytest

import msglc
from msglc import LazyWriter
from msglc.util import accel


class Rows(dict[str, object]):
    """A dict too large to build: ``items()`` computes the rows, the storage stays empty."""

    def __init__(self, n, value=lambda i: [i, i * 0.5], key="k{}"):
        super().__init__()
        self.n, self.value, self.key = n, value, key

    def __len__(self):
        return self.n

    def items(self):
        return ((self.key.format(i), self.value(i)) for i in range(self.n))


class Public(dict[str, object]):
    """``items()`` leaves out the private keys the storage holds."""

    def items(self):
        return ((k, v) for k, v in super().items() if not k.startswith("_"))


class Squares(list[int]):
    """``__iter__`` computes the items, the storage stays empty."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        return (i * i for i in range(self.n))


class Evens(list[int]):
    def __iter__(self):
        return (x for x in list.__iter__(self) if x % 2 == 0)


class Backwards(tuple[int, ...]):
    def __iter__(self):
        return reversed(tuple(tuple.__iter__(self)))


class Small(set[int]):
    def __iter__(self):
        return iter(sorted(x for x in set.__iter__(self) if x < 10))


class SmallFrozen(frozenset[int]):
    def __iter__(self):
        return iter(sorted(x for x in frozenset.__iter__(self) if x < 10))


def reordered():
    od = OrderedDict((f"k{i}", [i] * (i % 7)) for i in range(3000))
    od.move_to_end("k0")
    od.move_to_end("k5", last=False)
    return od


def ordered(x):
    """``x`` with every dict as its list of items: ``==`` then also compares key order."""
    if isinstance(x, dict):
        return [(k, ordered(v)) for k, v in x.items()]
    if isinstance(x, (list, tuple)):
        return [ordered(v) for v in x]
    return x


def written(obj, threshold, how):
    """The archive of ``obj`` written by ``how``: dumps, dump to a path, to a file, LazyWriter."""
    options = {"small_obj_optimization_threshold": threshold}
    if how == "dumps":
        return msglc.dumps(obj, **options)
    out = io.BytesIO()
    if how == "dump":
        msglc.dump(out, obj, **options)
    else:
        with LazyWriter(out, **options) as writer:
            writer.write(obj)
    return out.getvalue()


def check(data, expected):
    with msglc.LazyReader(data) as r:
        r.verify()
        got = r.to_obj()
        assert ordered(got) == ordered(expected)
        assert ordered(msgpack.unpackb(r.protocol_raw_data(), strict_map_key=False)) == ordered(
            expected
        )  # plain msgpack
        if isinstance(expected, dict) and expected:
            key = list(expected)[len(expected) // 2]
            assert msglc.to_obj(r[[key]]) == expected[key]
            assert list(r.keys()) == list(expected)
        elif isinstance(expected, list) and expected:
            assert msglc.to_obj(r[len(expected) // 2]) == expected[len(expected) // 2]


DICTS = {
    "rows": (lambda: Rows(3000), {f"k{i}": [i, i * 0.5] for i in range(3000)}),
    "few rows": (lambda: Rows(5), {f"k{i}": [i, i * 0.5] for i in range(5)}),
    "nothing yielded": (lambda: Public(_a=1, _b=[2]), {}),
    "filtered": (lambda: Public({"a": 1, "_secret": 2, "b": [3]}), {"a": 1, "b": [3]}),
    "nested": (
        lambda: {"rows": Rows(2000, key="r{}"), "plain": [Public(_x=1, y=2)] * 3},
        {"rows": {f"r{i}": [i, i * 0.5] for i in range(2000)}, "plain": [{"y": 2}] * 3},
    ),
    "rows of lists": (lambda: Rows(300, value=Squares), {f"k{i}": [j * j for j in range(i)] for i in range(300)}),
    "int keys": (lambda: Rows(1500, key="{}", value=str), {str(i): str(i) for i in range(1500)}),
    "reordered OrderedDict": (reordered, dict(reordered())),
    "in a plain list": (
        lambda: [Rows(3), {"x": Rows(2)}],
        [{f"k{i}": [i, i * 0.5] for i in range(3)}, {"x": {"k0": [0, 0.0], "k1": [1, 0.5]}}],
    ),
}

SEQUENCES = {
    "squares": (lambda: Squares(5000), [i * i for i in range(5000)]),
    "filtered": (lambda: Evens(range(3000)), list(range(0, 3000, 2))),
    "tuple": (lambda: Backwards(range(2000)), list(range(1999, -1, -1))),
    "set": (lambda: Small(range(100)), list(range(10))),
    "frozenset": (lambda: SmallFrozen(range(100)), list(range(10))),
    "matrix rows": (lambda: [Squares(100) for _ in range(200)], [[i * i for i in range(100)]] * 200),
    "in a dict": (lambda: {"s": Squares(3), "t": (Small({1, 50}),)}, {"s": [0, 1, 4], "t": [[1]]}),
}


@pytest.mark.parametrize("threshold", [64, 8192])
@pytest.mark.parametrize("how", ["dumps", "dump", "LazyWriter"])
@pytest.mark.parametrize("case", list(DICTS))
def test_dict_subclasses_store_what_items_yields(case, how, threshold):
    make, expected = DICTS[case]
    check(written(make(), threshold, how), expected)


@pytest.mark.parametrize("threshold", [64, 8192])
@pytest.mark.parametrize("how", ["dumps", "dump", "LazyWriter"])
@pytest.mark.parametrize("case", list(SEQUENCES))
def test_sequence_subclasses_store_what_iteration_yields(case, how, threshold):
    make, expected = SEQUENCES[case]
    check(written(make(), threshold, how), expected)


def test_dump_to_a_path_and_dumps_write_the_same_bytes(tmp_path):
    obj = {"rows": Rows(2500), "squares": Squares(100), "plain": list(range(50))}
    msglc.dump(tmp_path / "a.mlc", obj)
    assert (tmp_path / "a.mlc").read_bytes() == msglc.dumps(obj)
    assert msglc.LazyReader(tmp_path / "a.mlc").to_obj()["rows"]["k2499"] == [2499, 2499 * 0.5]


class Pass(dict[str, object]):
    pass


class PassList(list[object]):
    pass


class Opaque(dict[str, object]):
    """Overrides everything but ``items()``: what is stored is still its storage."""

    def __len__(self):
        raise AssertionError("__len__ consulted")

    def __iter__(self):
        raise AssertionError("__iter__ consulted")

    def keys(self):
        raise AssertionError("keys consulted")

    def values(self):
        return [object()]  # not what items() yields

    def __getitem__(self, key):
        raise AssertionError("__getitem__ consulted")


class OpaqueList(list[object]):
    """Overrides everything but ``__iter__``: what is stored is still its storage."""

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return "not an item"


Point = namedtuple("Point", "x y")


def test_subclasses_without_their_own_iteration_keep_the_plain_bytes():
    """The C path: what the storage holds, byte for byte what the plain container gives,
    whatever else the subclass overrides."""
    big = {f"k{i}": [i] * (i % 9) for i in range(3000)}
    rows = [[float(i)] * 40 for i in range(500)]
    cases = [
        (OrderedDict(big), big),
        (defaultdict(list, big), big),
        (Counter({f"k{i}": i for i in range(3000)}), {f"k{i}": i for i in range(3000)}),
        (Pass(big), big),
        (Opaque(big), big),
        (Opaque(a=1), {"a": 1}),
        (PassList(rows), rows),
        (OpaqueList(rows), rows),
        ([Point(i, -i) for i in range(3000)], [(i, -i) for i in range(3000)]),
        ({"s": frozenset(range(300)), "p": Pass(x=PassList([1, 2]))}, {"s": list(range(300)), "p": {"x": [1, 2]}}),
    ]
    for threshold in (64, 8192):
        for obj, plain in cases:
            data = msglc.dumps(obj, small_obj_optimization_threshold=threshold)
            assert data == msglc.dumps(plain, small_obj_optimization_threshold=threshold)
            msglc.LazyReader(data).verify()


def peak_memory(work):
    """The peak of memory traced while ``work()`` runs, in bytes."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.skipif(accel.speedups is None, reason="without the C accelerator the key index makes a Python int per key")
def test_a_large_dict_subclass_is_streamed_with_bounded_memory(tmp_path):
    """Rows produced by items(), never held: the peak is a batch, the keys' encodings and
    offsets and the TOC, about 30 bytes a row (2M rows: 55 MB, against 176 MB for the dict
    built, in 3.3 s of which 2.6 s are the rows' own; 200k rows here, as tracemalloc makes
    each row cost ~10 us)."""
    n = 200_000
    rows = Rows(n, value=lambda i: i % 200, key="k{:07}")
    streamed = peak_memory(lambda: msglc.dump(tmp_path / "rows.mlc", rows))
    built = peak_memory(lambda: dict(rows.items()))
    assert streamed < built / 3, f"{streamed / 1e6:.1f} MB streamed, {built / 1e6:.1f} MB built"
    with msglc.LazyReader(tmp_path / "rows.mlc") as r:
        assert len(r) == n
        assert r["k0000000"] == 0 and r["k0123456"] == 123456 % 200 and r["k0199999"] == 199999 % 200
        assert "k0200000" not in r


def test_streamed_dicts_are_the_same_without_the_c_accelerator(monkeypatch):
    obj = {"rows": Rows(3000), "kids": Rows(1100, value=lambda i: list(range(i % 50)))}
    fast = msglc.dumps(obj, small_obj_optimization_threshold=256)
    monkeypatch.setattr(accel, "speedups", None)
    assert msglc.dumps(obj, small_obj_optimization_threshold=256) == fast
    monkeypatch.undo()
    check(
        fast,
        {
            "rows": {f"k{i}": [i, i * 0.5] for i in range(3000)},
            "kids": {f"k{i}": list(range(i % 50)) for i in range(1100)},
        },
    )


class Twice(Rows):
    """``items()`` yields key ``k0`` again at row ``again``."""

    def __init__(self, n, again):
        super().__init__(n)
        self.again = again

    def items(self):
        return ((f"k{0 if i == self.again else i}", i) for i in range(self.n))


@pytest.mark.parametrize(("n", "again"), [(10, 5), (3000, 7), (3000, 2999)])
def test_a_key_yielded_twice_is_refused(n, again, tmp_path):
    """In the same batch or another, in a small dict or a hash-indexed one."""
    with pytest.raises(ValueError, match="'k0' occurs twice"):
        msglc.dumps({"t": Twice(n, again)})
    with pytest.raises(ValueError, match="'k0' occurs twice"):
        msglc.dump(tmp_path / "t.mlc", Twice(n, again))
    assert not (tmp_path / "t.mlc").exists()


def test_keys_equal_in_python_but_stored_apart_are_neither_merged_nor_let_through():
    """1, True and 1.0 are one dict key in Python: a batch of pairs must not keep one of them
    silently (a bool or float key is refused, as alone), and a key ``enc_hook`` turns into
    another key is kept beside the int."""
    from decimal import Decimal

    with pytest.raises(TypeError, match=r"key of type bool \(True\) \(at d\)"):
        msglc.dumps({"d": msglc.Pairs([(1, "int"), (True, "bool")])})
    with pytest.raises(TypeError, match=r"key of type float \(1.0\)"):
        msglc.dumps(msglc.Pairs([(1, "int"), (1.0, "float")]))
    both = msglc.dumps({"d": msglc.Pairs([(1, "int"), (Decimal(1), "dec")])}, enc_hook=str)
    assert msglc.LazyReader(both).to_obj() == {"d": {1: "int", "1": "dec"}}
    with pytest.raises(ValueError, match="key 1 occurs twice"):
        msglc.dumps(msglc.Pairs([(1, "a"), (Decimal(1), "b")]), enc_hook=int)


def test_refused_values_in_what_is_yielded_name_their_path():
    with pytest.raises(TypeError, match=r"type object \(at rows/k7\)"):
        msglc.dumps({"rows": Rows(10, value=lambda i: object() if i == 7 else i)})

    class Fixed(dict[str, object]):
        def __init__(self, pairs, **storage):
            super().__init__(**storage)
            self.pairs = pairs

        def items(self):
            return iter(self.pairs)

    with pytest.raises(TypeError, match=r"dict key of type float \(1.5\) \(at rows/0\)"):
        msglc.dumps({"rows": [Fixed([(1.5, 1)])]})
    with pytest.raises(TypeError, match=r"\(key, value\) pairs, not int 3"):
        msglc.dumps(Fixed([3]))
    # the storage holds what msgspec refuses; items() yields what is stored
    cached = Fixed([("a", 1)], a=2**70, b="\ud800")
    assert msglc.LazyReader(msglc.dumps([cached])).to_obj() == [{"a": 1}]


class RaisesInItems(dict[str, object]):
    def items(self):
        return next(iter(()))  # StopIteration out of items() itself


class RaisesInIter(list[object]):
    def __iter__(self):
        raise StopIteration


class ValuesDisagree(dict[str, object]):
    def values(self):
        return [object()]  # msglc's own next() over items() used to find nothing


@pytest.mark.parametrize(
    "obj",
    [RaisesInItems(), {"a": [RaisesInIter()]}, Rows(3, value=lambda i: RaisesInItems())],
    ids=["items", "iter", "nested"],
)
def test_stop_iteration_never_escapes_to_end_the_callers_loop(obj, tmp_path):
    with pytest.raises(RuntimeError, match="StopIteration") as info:
        list(map(lambda i: msglc.dumps(obj), range(3)))
    assert isinstance(info.value.__cause__, StopIteration)
    with pytest.raises(RuntimeError, match="StopIteration"):
        list(map(lambda i: msglc.dump(tmp_path / "x.mlc", obj), range(3)))
    with pytest.raises(RuntimeError, match="StopIteration"), LazyWriter(io.BytesIO()) as writer:
        writer.write(obj)
    assert not (tmp_path / "x.mlc").exists()


def test_values_that_disagree_with_items_do_not_stop_the_callers_loop():
    got = list(map(lambda i: msglc.dumps(ValuesDisagree(a=i)), range(3)))
    assert [msglc.LazyReader(data).to_obj() for data in got] == [{"a": 0}, {"a": 1}, {"a": 2}]


class Draining:
    """An iterator that is also the container: the published msglc's streaming idiom (a class
    deriving from it and from list, or from dict with ``items()`` returning ``self``)."""

    def __init__(self, source):
        self._source = iter(source)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._source)


class DrainingList(Draining, list[object]):
    pass


class DrainingDict(Draining, dict[str, object]):
    def items(self):
        return self


class GeneratedList(list[object]):
    def __init__(self, source):
        super().__init__()
        self._source = source

    def __iter__(self):
        yield from self._source


class GeneratedDict(dict[str, object]):
    def __init__(self, source):
        super().__init__()
        self._source = source

    def items(self):
        yield from self._source


@pytest.mark.parametrize("how", ["dumps", "dump", "LazyWriter"])
def test_the_published_streaming_idiom(how):
    for make_list in (DrainingList, GeneratedList):
        check(written(make_list(i * 3 for i in range(1000)), 64, how), [i * 3 for i in range(1000)])
    for make_dict in (DrainingDict, GeneratedDict):
        check(written(make_dict((f"r{i}", [i]) for i in range(1000)), 64, how), {f"r{i}": [i] for i in range(1000)})


@pytest.mark.parametrize("make", [DrainingDict, GeneratedDict])
def test_nested_streamed_dicts_keep_memory_bounded(make, tmp_path):
    """Three levels of rows made on the fly, 1000 strings of 16 KB (16 MB) in all: never held."""

    def rows(depth):
        for i in range(10):
            yield str(i), (make(rows(depth - 1)) if depth else "x" * (16 * 1024 + i))

    peak = peak_memory(lambda: msglc.dump(tmp_path / "nested.mlc", make(rows(2))))
    assert peak < 4 * 1024 * 1024, peak
    with msglc.LazyReader(tmp_path / "nested.mlc") as r:
        assert len(r) == 10 and r["3/4/5"] == "x" * (16 * 1024 + 5)
        assert sum(len(r[f"{i}/{j}/{k}"]) for i in range(10) for j in range(10) for k in range(10)) > 16_000_000
