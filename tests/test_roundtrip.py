"""Property tests: whatever is dumped reads back the same, lazily and whole, at any threshold."""

import math

import msgpack
from hypothesis import given
from hypothesis import strategies as st
from roundtrip_checks import check_lazy, plain, values

import msglc

thresholds = st.sampled_from([0, 1, 16, 64, 100, 256, 1024, 8192])


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
