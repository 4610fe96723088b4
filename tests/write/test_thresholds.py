"""Small thresholds (0 up, as the published msglc accepts them): a container shorter than the
threshold is stored whole, any other non-empty one gets a TOC node, in every writer."""

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from roundtrip_checks import check_lazy, plain, values

import msglc
from msglc import FileInfo, LazyDict, LazyList, Pairs

SMALL = [0, 1, 16, 64]


def lazy_kind(value):
    return "lazy" if isinstance(value, (LazyDict, LazyList)) else "whole"


@pytest.mark.parametrize("threshold", [15, 16, 17])
def test_a_container_as_long_as_the_threshold_gets_a_node(threshold):
    obj = ["x" * 14]  # fixarray(1), then a 15-byte str: 16 bytes
    assert len(msglc.dumps(obj, small_obj_optimization_threshold=1024)) > 16  # sanity: it is stored
    with msglc.LazyReader(msglc.dumps(obj, small_obj_optimization_threshold=threshold)) as reader:
        root = reader.read()
        assert lazy_kind(root) == ("lazy" if threshold <= 16 else "whole")
        assert root == obj
        assert reader.info().threshold == threshold


@pytest.mark.parametrize("threshold", [0, 1])
def test_zero_and_one_give_every_non_empty_container_a_node(threshold):
    obj = {"a": [1], "b": {"c": None}, "e": [], "f": {}, "s": "text"}
    with msglc.LazyReader(msglc.dumps(obj, small_obj_optimization_threshold=threshold)) as reader:
        assert isinstance(reader.read(), LazyDict)
        assert isinstance(reader["a"], LazyList)
        assert isinstance(reader["b"], LazyDict)
        assert reader["e"] == [] and type(reader["e"]) is list  # nothing to index in an empty one
        assert reader["f"] == {} and type(reader["f"]) is dict
        assert reader["a/0"] == 1 and reader["b/c"] is None and reader["s"] == "text"
        assert reader.to_obj() == obj
        reader.verify()


def test_thresholds_below_64_are_accepted_by_configure():
    from msglc.config import configure, current

    before = current().small_obj_optimization_threshold
    try:
        configure(small_obj_optimization_threshold=0)
        with msglc.LazyReader(msglc.dumps([[1, 2], [3]])) as reader:
            assert reader.info().threshold == 0
            assert isinstance(reader[0], LazyList)
    finally:
        configure(small_obj_optimization_threshold=before)
    for bad in (-1, 2.0, True, "16"):
        with pytest.raises((ValueError, TypeError)):
            msglc.dumps([1], small_obj_optimization_threshold=bad)


def test_a_small_threshold_makes_reads_finer():
    rows = [{"id": i, "name": f"row {i}", "tags": ["a", "b"]} for i in range(400)]
    data = msglc.dumps(rows, small_obj_optimization_threshold=16)
    counter = msglc.LazyStats()
    with msglc.LazyReader(data, counter=counter) as reader:
        opened = counter()
        assert reader["200/tags/1"] == "b"
        assert counter() - opened < 200  # a few small nodes and one row, not a span of rows


def streamed(x):
    """``x`` as LazyWriter streams it: lists as generators, dicts as ``Pairs``."""
    if isinstance(x, (list, tuple)):
        return (streamed(v) for v in x)
    if isinstance(x, dict):
        return Pairs((k, streamed(v)) for k, v in x.items())
    return x


def check_archive(data, expected):
    with msglc.LazyReader(data) as reader:
        assert reader.to_obj() == expected
        check_lazy(reader.read(), expected)
        reader.verify()


@settings(max_examples=40, deadline=None)
@given(values, values, st.sampled_from(SMALL), st.sampled_from([None, "zstd"]))
def test_every_writer_round_trips_at_small_thresholds(tmp_path_factory, obj, other, threshold, compression):
    if compression:
        pytest.importorskip("zstandard")
    options = {"small_obj_optimization_threshold": threshold, "compression": compression}
    expected = plain(obj)
    data = msglc.dumps(obj, **options)
    check_archive(data, expected)

    out = io.BytesIO()
    with msglc.LazyWriter(out, **options) as writer:
        writer.write(streamed(obj))
    check_archive(out.getvalue(), expected)

    folder = tmp_path_factory.mktemp("combined")
    (folder / "a.mlc").write_bytes(data)
    combined = folder / "c.mlc"
    msglc.combine(combined, [FileInfo(folder / "a.mlc", "a"), FileInfo(None, "b", obj=other)], **options)
    msglc.append(combined, [FileInfo(data, "c")], **options)
    check_archive(combined.read_bytes(), {"a": expected, "b": plain(other), "c": expected})

    as_list = folder / "l.mlc"
    msglc.combine(as_list, [FileInfo(data), FileInfo(None, obj=other)], **options)
    msglc.append(as_list, [FileInfo(None, obj=[])], **options)
    check_archive(as_list.read_bytes(), [expected, plain(other), []])

    with msglc.LazyReader(data) as reader:  # repacking at another threshold
        again = io.BytesIO()
        msglc.dump(again, reader, small_obj_optimization_threshold=1 if threshold else 64)
    check_archive(again.getvalue(), expected)


@pytest.mark.parametrize("threshold", [0, 1, 16])
def test_parts_of_a_small_threshold_archive_stand_alone(threshold):
    obj = {"m": [[float(i), float(j)] for i in range(3) for j in range(4)], "d": {"k": [1, [2, [3]]]}}
    with msglc.LazyReader(msglc.dumps(obj, small_obj_optimization_threshold=threshold)) as reader:
        for path in ("m", "m/2", "d", "d/k", "d/k/1"):
            part = reader[path]
            if isinstance(part, (LazyDict, LazyList)):
                check_archive(part.raw_data(), reader[path].to_obj())


@pytest.mark.parametrize("threshold", [0, 1, 16])
def test_streamed_empty_containers_need_no_node(threshold):
    out = io.BytesIO()
    with msglc.LazyWriter(out, small_obj_optimization_threshold=threshold) as writer:
        writer.write({"l": (x for x in range(0)), "d": Pairs(iter(())), "full": (i for i in range(3))})
    check_archive(out.getvalue(), {"l": [], "d": {}, "full": [0, 1, 2]})


def test_numpy_arrays_at_threshold_zero():
    np = pytest.importorskip("numpy")
    obj = {"empty": np.zeros(0), "scalar": np.float32(2.5), "m": np.arange(12.0).reshape(3, 4), "zero-d": np.array(7)}
    for encoder in (True, False):
        with msglc.LazyReader(msglc.dumps(obj, small_obj_optimization_threshold=0, numpy_encoder=encoder)) as reader:
            reader.verify()
            assert np.array_equal(np.asarray(reader["m"]), obj["m"])
            assert reader["m/2/3"] == 11.0
            assert len(reader["empty"]) == 0
