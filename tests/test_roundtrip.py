"""Property tests: whatever is dumped reads back the same, lazily and whole, at any threshold."""

import math

import msgpack
from hypothesis import given
from hypothesis import strategies as st

import msglc
from msglc import LazyDict, LazyList
from tests.conftest import plain

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    st.binary(max_size=40),
)
keys = st.one_of(st.text(max_size=12), st.integers(-(2**63), 2**64 - 1))
float_rows = st.integers(1, 6).flatmap(
    lambda w: st.lists(st.lists(st.floats(allow_nan=False), min_size=w, max_size=w), min_size=1, max_size=40)
)
values = st.recursive(
    st.one_of(scalars, float_rows, st.lists(st.integers(-32, 127), max_size=200)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=30),
        st.tuples(inner, inner),
        st.dictionaries(keys, inner, max_size=30),
    ),
    max_leaves=200,
)
thresholds = st.sampled_from([0, 1, 16, 64, 100, 256, 1024, 8192])


def check_lazy(lazy, expected, depth=0):
    """Walk a lazy value and compare every part with the plain object."""
    if isinstance(lazy, LazyList):
        assert isinstance(expected, list)
        assert len(lazy) == len(expected)
        for i in list(range(min(len(expected), 5))) + [-1, len(expected) // 2]:
            if expected:
                check_lazy(lazy[i], expected[i], depth + 1)
        assert lazy[1:4] == expected[1:4]
        assert lazy[::-3] == expected[::-3]
        assert list(lazy) == expected
        assert lazy == expected
    elif isinstance(lazy, LazyDict):
        assert isinstance(expected, dict)
        assert list(lazy) == list(expected)
        assert len(lazy) == len(expected)
        for k, v in list(expected.items())[:8]:
            assert k in lazy
            check_lazy(lazy[k], v, depth + 1)
        assert dict(lazy.items()) == expected
        assert lazy == expected
    else:
        assert lazy == expected


@given(values, thresholds)
def test_roundtrip(obj, threshold):
    data = msglc.dumps(obj, small_obj_optimization_threshold=threshold)
    expected = plain(obj)
    with msglc.LazyReader(data) as reader:
        assert msgpack.unpackb(reader.protocol_raw_data(), strict_map_key=False) == expected
        assert reader.to_obj() == expected
        root = reader.read()
        check_lazy(root, expected)
        assert msglc.to_obj(root) == expected
        reader.verify()
        assert reader.raw_data() == data


@given(
    st.lists(st.lists(st.floats(allow_nan=False, width=64), min_size=3, max_size=3), min_size=50, max_size=300),
    thresholds,
)
def test_matrix_rows_read_by_arithmetic(rows, threshold):
    data = msglc.dumps(rows, small_obj_optimization_threshold=threshold)
    reader = msglc.LazyReader(data, cached=False)
    for i in (0, len(rows) // 2, -1):
        for j in (0, 2, -1):
            assert reader[i][j] == rows[i][j]
            assert reader.read(f"{i}/{j}") == rows[i][j]


def test_special_floats_and_int_extremes():
    obj = {"nan": float("nan"), "inf": [float("inf"), -float("inf")] * 300, "ints": [-(2**63), 2**64 - 1, 0, -1] * 300}
    reader = msglc.LazyReader(msglc.dumps(obj, small_obj_optimization_threshold=256))
    assert math.isnan(reader["nan"])
    assert reader["inf/1"] == -math.inf
    assert reader["ints"][1] == 2**64 - 1 and reader["ints"][-4] == -(2**63)
