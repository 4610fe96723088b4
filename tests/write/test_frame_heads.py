"""Heads as frames of their own (docs/format.md, "Writer policy"): ``dump`` cuts the key and
header of every big container in a dict or list node, and the root's, into a small frame
without a dictionary, so that a walk through the container checks them without decompressing
a big frame. Frames are lowered to 4 KB here (``DATA_FRAME``, read when ``dump`` writes), so
that containers of a few pages count as big."""

import random
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import msglc
import msglc.write.compress as compress
from benchmark.targets.realdata import CountingFile
from msglc.format.msgpack import HEAD_MAX
from msglc.io.framed import SMALL_FRAME
from msglc.util import accel

pytest.importorskip("zstandard")

FRAME = 4096  # the frame size these tests write with


@pytest.fixture
def small_frames(monkeypatch):
    monkeypatch.setattr(compress, "DATA_FRAME", FRAME)


def _big_data_frames(r: msglc.LazyReader) -> list[tuple[int, int]]:
    """The stored [start, end) of the data frames of more than ``SMALL_FRAME`` plain bytes."""
    data_end = 16 + r.info().data_size
    big = [f for f in r.frames() if f.plain_offset < data_end and f.plain_size > SMALL_FRAME]
    return [(f.offset, f.offset + f.size) for f in big]


def _touched(file: CountingFile, frames: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [(a, b) for a, b in frames if any(at < b and a < at + n for at, n in file.reads)]


@pytest.mark.parametrize("pure", [False, True], ids=["C", "pure Python"])
def test_a_walk_into_a_big_list_of_numbers_reads_its_head_from_a_small_frame(tmp_path, small_frames, monkeypatch, pure):
    """A fixed-stride list of numbers whose headers are shorter than the 5 bytes a walk reads
    at a container's start (an array16 list of floats: 3 bytes; a matrix of short rows: 3 + 1)
    had its run of numbers start inside its head: the head was no frame of its own, and a read
    of one number decompressed the run's first frame besides the number's. The head now takes
    the first number, and the run starts after it; the root's head too (opening reads it)."""
    if pure:
        monkeypatch.setattr(accel, "speedups", None)
    rng = random.Random(4)
    floats = [rng.random() for _ in range(5000)]  # 45 KB: 11 frames, an array16 header
    matrix = [[rng.random() for _ in range(4)] for _ in range(3000)]  # headers dc 0b b8 94
    ints = [rng.randrange(1 << 33, 1 << 40) for _ in range(5000)]  # uint64: 9-byte numbers
    cases: list[tuple[Any, list[Any]]] = [
        ({"a": floats, "b": matrix, "c": ints}, [("a", 3000), ("b", 2000, 1), ("c", 4999), ("a", 1)]),
        ([floats, matrix], [(0, 3000), (1, 2999, 3), (1, 0, 0)]),
        (floats, [(4000,), (0,)]),
    ]
    for n, (value, paths) in enumerate(cases):
        path = tmp_path / f"{n}.mlc"
        msglc.dump(path, value, compression="zstd")
        file = CountingFile(path)
        with msglc.LazyReader(file, cached=False) as r:  # type: ignore[arg-type]
            big = _big_data_frames(r)
            first = next(r.frames())
            assert len(big) > 10
        # opening reads the root's header, 5 bytes (HEAD_MAX) at its start: from frame 0 alone
        assert HEAD_MAX <= first.plain_size <= SMALL_FRAME and first.dictionary == 0, first
        for where in paths:
            with msglc.LazyReader(file, cached=False) as r:  # type: ignore[arg-type]
                file.reads.clear()
                got: Any = r
                expected: Any = value
                for step in where:
                    got, expected = got[step], expected[step]
                assert got == expected
                assert len(_touched(file, big)) <= 1, (where, _touched(file, big))  # the number's frame alone
        file.close()
        with msglc.LazyReader(path) as r:
            assert r.to_obj() == value
            r.verify()


def _leaf(kind: str, n: int, rng: random.Random) -> Any:
    if kind == "floats":
        return [rng.random() for _ in range(n)]
    if kind == "ints":
        return [rng.randrange(-(1 << 31), 1 << 31) for _ in range(n)]
    if kind == "strs":
        return [f"s{rng.randrange(10**6)}" * rng.randrange(1, 5) for _ in range(n)]
    if kind == "matrix":
        width = rng.randrange(1, 20)
        return [[rng.random() for _ in range(width)] for _ in range(max(1, n // width))]
    if kind == "bytes":
        return rng.randbytes(n * 5)
    if kind == "dict":
        return {f"k{i}": i for i in range(n)}
    return n


_trees = st.recursive(
    st.tuples(
        st.sampled_from(["floats", "ints", "strs", "matrix", "bytes", "dict", "scalar"]),
        st.integers(0, 20) | st.integers(900, 6000),  # (items: few, or a container of several frames)
    ),
    lambda kids: st.one_of(
        st.lists(kids, min_size=1, max_size=4),
        # (key length: some keys longer than a head's small frame)
        st.dictionaries(st.tuples(st.integers(1, 8) | st.integers(1000, 1500), st.integers(0, 99)), kids, max_size=4),
    ),
    max_leaves=8,
)


def _built(spec: Any, rng: random.Random) -> Any:
    if isinstance(spec, tuple):
        return _leaf(spec[0], spec[1], rng)
    if isinstance(spec, list):
        return [_built(s, rng) for s in spec]
    return {"k" * length + str(tag): _built(s, rng) for (length, tag), s in spec.items()}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths to every container and to the first, middle and last item of each list."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list) and value:
        for i in sorted({0, len(value) // 2, len(value) - 1}):
            yield from _paths(value[i], (*prefix, i))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=_trees, seed=st.integers(0, 3), threshold=st.sampled_from([None, 64, 1024]))
def test_frames_planned_around_heads_hold_every_byte_once(small_frames, spec, seed, threshold):
    """Whatever the nesting (big containers in dicts and lists, heads that chain or touch,
    keys longer than a small frame, runs of numbers right after a head), the planned frames
    cover the data in order, each of 1 to MAX_FRAME bytes, and every read gives the value."""
    value = _built(spec, random.Random(seed))
    options = {} if threshold is None else {"small_obj_optimization_threshold": threshold}
    data = msglc.dumps(value, compression="zstd", **options)
    for cached in (True, False):
        with msglc.LazyReader(data, cached=cached) as r:
            at = 16
            for f in r.frames():
                assert f.plain_offset == at and 0 < f.plain_size <= 1 << 20, f
                at += f.plain_size
            assert r.to_obj() == value
            r.verify()
            for path in _paths(value):
                got: Any = r
                expected: Any = value
                for step in path:
                    got, expected = got[step], expected[step]
                got = got.to_obj() if hasattr(got, "to_obj") else got
                assert msgspec.msgpack.encode(got) == msgspec.msgpack.encode(expected), path
