"""Path strings follow the published msglc's syntax: on a list, a segment is an int, or a slice
``start:stop`` / ``start:step:stop`` (the middle part is the step) whose out-of-range bounds wrap
by the list's length. Python slices and ints keep Python's meaning."""

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

import msglc
from msglc import LazyList, LazyReader

N = 200


@pytest.fixture(params=[0, 64, 8192], ids=["every-node", "spans", "whole"])
def reader(request):
    """A dict holding a list of 200 ints, lazy or plain depending on the threshold."""
    doc = {"a": list(range(N)), "rows": [[i, -i] for i in range(12)], "empty": [], "pad": "p" * 300}
    with LazyReader(msglc.dumps(doc, small_obj_optimization_threshold=request.param)) as r:
        yield r


def test_two_parts_are_start_and_stop(reader):
    assert reader["a/3:6"] == [3, 4, 5]
    assert reader["a/:3"] == [0, 1, 2]
    assert reader["a/197:"] == [197, 198, 199]
    assert reader["a/:"] == list(range(N))
    assert reader["a/-3:-1"] == [197, 198]
    assert reader["a/5:2"] == []


def test_three_parts_are_start_step_stop(reader):
    assert reader["a/0:2:6"] == [0, 2, 4]
    assert reader["a/24:2:30"] == [24, 26, 28]
    assert reader["a/:2:5"] == [0, 2, 4]  # empty start: 0
    assert reader["a/24:2:"] == list(range(24, N, 2))  # empty stop: the length
    assert reader["a/3::6"] == [3, 4, 5]  # empty step: 1
    assert reader["a/::"] == list(range(N))
    assert reader["a/::3"] == [0, 1, 2]  # not Python's [::3]
    assert reader["a/0:-5:100"] == []  # a negative step from the front finds nothing
    assert reader["a/-1:-1:-4"] == [199, 198, 197]


def test_out_of_range_bounds_wrap_by_the_length(reader):
    assert reader["a/-202:"] == [198, 199]  # -202 + 200 = -2
    assert reader["a/398:"] == [198, 199]  # 398 - 200 = 198
    assert reader["a/:202"] == [0, 1]  # 202 - 200 = 2
    assert reader["a/:-398"] == [0, 1]  # -398 + 200 = -198
    assert reader["a/-600:3:-598"] == [0]  # several lengths away
    assert reader[f"a/{10**30}:"] == reader[f"a/{10**30 % N}:"]  # at once, however far
    assert reader["a/-200:200"] == list(range(N))  # in range: kept


def test_the_rest_of_the_path_maps_over_a_slice(reader):
    assert reader["rows/1:2:7/1"] == [-1, -3, -5]
    assert reader["rows/-13:/0"] == [11]  # start -13 wraps to -1
    assert reader["rows/-13:-11/0"] == []  # stop -11 is in range: [-1:-11] is empty


def test_ints_out_of_range_raise_index_error(reader):
    for path in ("a/200", "a/-201", "a/400", "rows/12/0", "empty/0"):
        with pytest.raises(IndexError, match="out of range"):
            reader[path]
    with pytest.raises(IndexError):
        reader[["a", 200]]
    assert reader["a/-200"] == 0 and reader["a/199"] == 199


def test_int_segments_are_what_int_accepts(reader):
    assert reader["a/+5"] == 5
    assert reader["a/ 6"] == 6
    assert reader["a/1_0"] == 10
    assert reader["a/+1:3"] == [1, 2]


@pytest.mark.parametrize("segment", ["a:2", "a:2:", "1:2:3:4", "x", "1.5", "1:2.0", "", " : :x"])
def test_malformed_segments_raise_type_error(reader, segment):
    if segment == "":
        assert reader["a//0"] == 0  # an empty segment is skipped
        return
    with pytest.raises(TypeError, match="start:step:stop"):
        reader[f"a/{segment}"]


def test_a_step_of_zero_is_refused(reader):
    with pytest.raises(ValueError, match="zero"):
        reader["a/0:0:5"]


def test_slices_of_an_empty_list(reader):
    assert reader["empty/:"] == [] and reader["empty/-5:3:9"] == []


def test_python_slices_keep_their_meaning(reader):
    a = reader["a"]
    assert a[0:6:2] == [0, 2, 4]
    assert a[::50] == [0, 50, 100, 150]
    assert a[:-398] == []  # no wrapping
    assert reader[["a", slice(0, 6, 2)]] == [0, 2, 4]
    assert reader[["a", slice(-202, None)]] == list(range(N))
    assert reader[["rows", slice(None, None, 4), 0]] == [0, 4, 8]


def test_a_slice_object_as_the_whole_path():
    with LazyReader(msglc.dumps(list(range(10)), small_obj_optimization_threshold=0)) as r:
        assert isinstance(r.read(), LazyList)
        assert r[:3] == [0, 1, 2] and r[::4] == [0, 4, 8]
        assert r["::4"] == [0, 1, 2, 3]


def test_read_many_async_and_nodes_share_the_parser(reader):
    paths = ["a/0:2:6", ["a", slice(0, 6, 2)], "a/-202:", "rows/1:2:5/0"]
    expected = [[0, 2, 4], [0, 2, 4], [198, 199], [1, 3]]
    assert reader.read_many(paths) == expected
    assert asyncio.run(reader.async_read_many(paths)) == expected
    assert asyncio.run(reader.async_read("a/24:2:30")) == [24, 26, 28]


def test_arrays_take_the_same_syntax_per_axis():
    np = pytest.importorskip("numpy")
    m = np.arange(200.0).reshape(20, 10)
    for encoder in (True, False):
        with LazyReader(msglc.dumps({"m": m}, small_obj_optimization_threshold=0, numpy_encoder=encoder)) as r:
            assert np.asarray(r["m/1:2:9/0"]).tolist() == m[1:9:2, 0].tolist()
            assert np.asarray(r["m/-22:/-12:"]).tolist() == m[-2:, -2:].tolist()
            with pytest.raises(IndexError):
                r["m/20"]
            with pytest.raises(TypeError):
                r["m/x:1"]


def published_rule(segment, n):
    """The published rule, stated as it is documented (one length at a time)."""
    parts = segment.split(":")
    if len(parts) == 2:
        parts = [parts[0], "", parts[1]]
    start, step, stop = (int(p) if p else default for p, default in zip(parts, (0, 1, n), strict=True))
    while start < -n:
        start += n
    while start >= n:
        start -= n
    while stop < 1 - n:
        stop += n
    while stop >= 1 + n:
        stop -= n
    return list(range(n))[start:stop:step]


bound = st.one_of(st.just(""), st.integers(-700, 700).map(str))


@given(
    st.integers(1, 40),
    bound,
    st.one_of(st.just(""), st.integers(-9, 9).filter(bool).map(str)),
    bound,
    st.booleans(),
)
def test_slices_match_the_published_rule(n, start, step, stop, three):
    segment = f"{start}:{step}:{stop}" if three else f"{start}:{stop}"
    expected = published_rule(segment, n)
    for threshold in (0, 8192):
        with LazyReader(msglc.dumps({"a": list(range(n))}, small_obj_optimization_threshold=threshold)) as r:
            assert r[f"a/{segment}"] == expected
