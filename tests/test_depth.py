"""Deep archives (issue 29): whatever depth the writers write and verify() accepts, reads,
to_obj(), the command and conversions handle at the default recursion limit.

Writers: ``dump``, ``dumps`` and ``LazyWriter`` nest as deep as msgspec encodes, so as deep as
the recursion limit allows (about 900 levels at the default limit, more with a raised one);
``combine`` nests its inputs one level deeper each time, to any depth. So readers do not stop
at any depth: what msgspec cannot decode within the recursion limit is stepped through."""

import json
import sys

import msgspec
import pytest
from cli_runner import run_msglc_in_child

import msglc
from msglc import FileInfo

DEPTH = 3000  # three times the default recursion limit


def nested(depth: int, leaf=1):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def unnest(value, depth: int):
    for _ in range(depth):
        assert type(value) is list and len(value) == 1
        (value,) = value
    return value


def deep_archive(path, threshold: int, compression=None) -> None:
    """{"deep": a list nested DEPTH levels, "pad": a list with a node}, written by ``dump`` with
    a raised recursion limit (dump nests as deep as msgspec encodes, which stops at the
    limit); the reads run at the default limit."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(4 * DEPTH)
    try:
        doc = {"deep": nested(DEPTH), "pad": list(range(2000))}
        msglc.dump(path, doc, small_obj_optimization_threshold=threshold, compression=compression)
    finally:
        sys.setrecursionlimit(limit)


def test_dump_nests_as_deep_as_the_recursion_limit_allows(tmp_path):
    """The writers' depth: at the default limit a 3000-deep value is refused, one error;
    with a raised limit it is written."""
    cycle: list[object] = []
    cycle.append(cycle)
    for options in ({}, {"enc_hook": str}, {"order": "sorted"}):  # (the hook and the sort walk it first)
        for value in (nested(DEPTH), cycle):
            with pytest.raises(ValueError, match="nested too deeply"):
                msglc.dumps(value, **options)
    deep_archive(tmp_path / "deep.mlc", 8192)
    assert sys.getrecursionlimit() < DEPTH


@pytest.mark.parametrize(("threshold", "compression"), [(8192, None), (0, None), (64, "zstd")])
def test_a_deep_archive_reads_at_the_default_recursion_limit(tmp_path, threshold, compression):
    """Nodes at no level of the deep value (8192), at every level (0: a fixed-stride chain),
    compressed: verify(), to_obj(), paths, a lazy part's to_obj() and iteration all work."""
    path = tmp_path / "deep.mlc"
    deep_archive(path, threshold, compression)
    with msglc.LazyReader(path) as r:
        r.verify()
        whole = r.to_obj()
        assert unnest(whole["deep"], DEPTH) == 1 and whole["pad"][1999] == 1999
        assert unnest(msglc.to_obj(r["deep"]), DEPTH) == 1
        assert unnest(msglc.to_obj(r[["deep"] + [0] * 1500]), DEPTH - 1500) == 1
        assert r[["deep"] + [0] * DEPTH] == 1
        assert [k for k, _ in r.items()] == ["deep", "pad"]


def test_a_deep_archive_made_by_combine_reads_and_repacks(tmp_path):
    """combine of a combine ... 1100 times: each level a node of its own."""
    path, tmp = tmp_path / "chain.mlc", tmp_path / "next.mlc"
    msglc.dump(path, {"leaf": "x" * 100})
    for _ in range(1100):
        msglc.combine(tmp, [FileInfo(path, "x")])
        tmp.replace(path)
    with msglc.LazyReader(path) as r:
        r.verify()
        value = r.to_obj()
        for _ in range(1100):
            value = value["x"]
        assert value == {"leaf": "x" * 100}
        msglc.dump(tmp_path / "repacked.mlc", r, small_obj_optimization_threshold=64, compression="zstd")
    with msglc.LazyReader(tmp_path / "repacked.mlc") as r:
        r.verify()
        assert r["/".join(["x"] * 1100) + "/leaf"] == "x" * 100


@pytest.mark.parametrize("threshold", [8192, 0])
def test_repacking_a_deep_archive_copies_its_bytes_with_a_new_toc(tmp_path, threshold):
    """dump(new, reader) with another threshold or compression: the data bytes as they are,
    a TOC built from them (no decoding, no recursion), equal to what dump writes."""
    deep_archive(tmp_path / "deep.mlc", threshold)
    with msglc.LazyReader(tmp_path / "deep.mlc") as r:
        for options in ({"small_obj_optimization_threshold": 64}, {"compression": "zstd"}):
            out = tmp_path / "out.mlc"
            msglc.dump(out, r, **options)
            with msglc.LazyReader(out) as copy:
                copy.verify()
                assert copy.protocol_raw_data() == r.protocol_raw_data()
                assert unnest(msglc.to_obj(copy["deep"]), DEPTH) == 1
        deep_archive(tmp_path / "direct.mlc", 64)
        msglc.dump(tmp_path / "again.mlc", r, small_obj_optimization_threshold=64)
    assert (tmp_path / "again.mlc").read_bytes() == (tmp_path / "direct.mlc").read_bytes()


@pytest.mark.parametrize("threshold", [8192, 0])
def test_the_command_reads_and_converts_a_deep_archive(tmp_path, threshold):
    """In a new process, at its default recursion limit."""
    path = tmp_path / "deep.mlc"
    deep_archive(path, threshold)
    expected = {"deep": nested(DEPTH), "pad": list(range(2000))}
    commands = [
        ["get", path, "deep"],
        ["get", path, "deep", "--format", "repr"],
        ["get", path, "deep/0/0", "--format", "msgpack"],
        ["convert", path, tmp_path / "out.json"],
        ["convert", path, tmp_path / "out.msgpack"],
        ["convert", path, tmp_path / "out.mlc", "--threshold", "64", "--compression", "zstd"],
        ["verify", tmp_path / "out.mlc"],
        ["ls", path],
        ["tree", path],
    ]
    answers = run_msglc_in_child([[str(a) for a in c] for c in commands])
    assert [code for code, _, _ in answers] == [0] * len(commands), [err for _, _, err in answers]
    outs = [out for _, out, _ in answers]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(4 * DEPTH)  # to compare with what json, repr and msgpack give here
    try:
        assert json.loads(outs[0]) == expected["deep"]
        assert outs[1].decode().strip() == repr(expected["deep"])
        assert outs[2] == msgspec.msgpack.encode(nested(DEPTH - 2))
        assert json.loads((tmp_path / "out.json").read_text()) == expected
        assert msgspec.msgpack.decode((tmp_path / "out.msgpack").read_bytes()) == expected
    finally:
        sys.setrecursionlimit(limit)
    assert b"intact" in outs[6] and b"deep" in outs[7]
