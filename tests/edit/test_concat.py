"""concat(): archives whose roots are lists joined into one list without decoding their items,
whatever node their roots have (spans, a fixed stride, none), compressed or not; refused and
damaged inputs leave the target untouched. The S3 planner's parts (msglc.io.compose.plan)."""

import io
import random
from collections.abc import Sequence

import pytest
from archives import check
from hypothesis import given, settings
from hypothesis import strategies as st

import msglc
from msglc import CorruptedError, FileInfo
from msglc.io.compose import Span, plan

RECORDS = [{"id": i, "name": f"r{i}", "xs": list(range(i % 7))} for i in range(3000)]  # a ListNode root
STRIDE = [float(i) for i in range(5000)]  # a fixed-stride root
SMALL = [1, "two", [3]]  # read whole: no node


def _dump(path, obj, **options):
    msglc.dump(path, obj, **options)
    return path


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_joins_every_kind_of_root_list_in_order(tmp_path, compression):
    parts: list[Sequence[object]] = [RECORDS[:1000], STRIDE, SMALL, [], RECORDS[1000:], [{"big": list(range(30_000))}]]
    names = [_dump(tmp_path / f"{k}.mlc", p, compression=compression) for k, p in enumerate(parts)]
    out = tmp_path / "all.mlc"
    msglc.concat(out, names)
    expected = [x for p in parts for x in p]
    check(out, expected)
    with msglc.LazyReader(out, cached=False) as r:
        assert r.info().compression == compression
        assert r[999] == RECORDS[999]
        assert r[1000 + 4321] == 4321.0 and r[6000 + 2] == [3] and r[6003 + 1999]["name"] == "r2999"
        assert isinstance(r[-1]["big"], msglc.LazyList)  # a large item keeps its own node
        assert r.unwrap().read_items(6003, 6010) == RECORDS[1000:1007]


def test_the_result_reads_lazily_like_a_dumped_list(tmp_path):
    names = [_dump(tmp_path / f"{k}.mlc", RECORDS[k * 1000 : (k + 1) * 1000]) for k in range(3)]
    out = tmp_path / "all.mlc"
    msglc.concat(out, names)
    stats = msglc.LazyStats()
    with msglc.LazyReader(out, cached=False, counter=stats) as r:
        stats.clear()
        assert r[2500]["name"] == "r2500"
        assert stats.bytes <= 8192 < out.stat().st_size // 5, stats  # a span, not the whole list


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_matrices_keep_their_rows_lazy(tmp_path, compression):
    """Matrices of one layout join into a fixed-stride list, as ``dump`` of the joined list
    writes; beside other lists, rows larger than the threshold get a node each: an element
    reads its own bytes, not its row (``msglc.dask.to_archive`` joins its parts so)."""
    rows = [[float(i * 10_000 + j) for j in range(2000)] for i in range(12)]  # 18 KB rows
    cases: list[tuple[list[Sequence[object]], str]] = [
        ([rows, rows[:5]], "fixed-stride list"),
        ([rows, RECORDS[:50]], "list"),
    ]
    for parts, kind in cases:
        names = [_dump(tmp_path / f"{k}.mlc", p, compression=compression) for k, p in enumerate(parts)]
        out = tmp_path / "all.mlc"
        msglc.concat(out, names)
        check(out, [x for p in parts for x in p])
        stats = msglc.LazyStats()
        with msglc.LazyReader(out, cached=False, counter=stats) as r:
            assert next(r.nodes())[2].kind == kind
            assert isinstance(r[7], msglc.LazyList)
            stats.clear()
            assert r[[7, 1234]] == rows[7][1234]
            assert stats.bytes <= (9 if compression is None else 1 << 17), stats  # (compressed: one frame)


@pytest.mark.parametrize(
    "parts",
    [
        [[1.5] * 5000, [2**40] * 5000],  # items of one size, other value types (float64, uint64)
        [[200] * 5000, [-100] * 5000],  # (uint8, int8)
        [["x" * 20_000] * 3, SMALL],  # long flat items: spans without nodes (a str has none)
        [[[1.5, 2.5]] * 3000, [[2**40, 2**41]] * 3000],  # rows alike in size, not in their items' types
    ],
)
def test_lists_alike_in_size_only_join_into_a_list_that_verifies(tmp_path, parts):
    names = [_dump(tmp_path / f"{k}.mlc", p) for k, p in enumerate(parts)]
    out = tmp_path / "all.mlc"
    msglc.concat(out, names)
    check(out, [x for p in parts for x in p])
    with msglc.LazyReader(out) as r:
        assert next(r.nodes())[2].kind == "list"


def test_inputs_of_every_kind_and_file_objects_as_target(tmp_path):
    a = _dump(tmp_path / "a.mlc", RECORDS[:10])
    b = msglc.dumps(STRIDE[:10])
    target = io.BytesIO(b"old bytes, longer than nothing")
    with msglc.LazyReader(a) as reader:
        msglc.concat(target, [reader, b, FileInfo(a)])
        assert reader[3]["id"] == 3  # the caller's reader stays open
    with msglc.LazyReader(target.getvalue()) as r:
        r.verify()
        assert r.to_obj() == RECORDS[:10] + STRIDE[:10] + RECORDS[:10]


def test_refuses_roots_that_are_not_lists_and_leaves_the_target(tmp_path):
    out = _dump(tmp_path / "out.mlc", ["kept"])
    lists = _dump(tmp_path / "list.mlc", RECORDS)
    for obj in ({"a": 1}, {"k": RECORDS}, 5, "text"):
        other = _dump(tmp_path / "other.mlc", obj)
        with pytest.raises(TypeError, match="root is a list"):
            msglc.concat(out, [lists, other])
        check(out, ["kept"])
    with pytest.raises(ValueError, match="is the output"):
        msglc.concat(lists, [lists])


@pytest.mark.parametrize("where", ["items", "toc"])
def test_a_damaged_input_is_reported_and_nothing_is_written(tmp_path, where):
    good = _dump(tmp_path / "good.mlc", RECORDS)
    bad = tmp_path / "bad.mlc"
    data = bytearray(good.read_bytes())
    with msglc.LazyReader(good) as r:
        toc_off = r.info().toc_offset
    at = len(data) // 3 if where == "items" else toc_off + 3
    data[at] ^= 0x01
    bad.write_bytes(bytes(data))
    out = tmp_path / "out.mlc"
    with pytest.raises(msglc.MsglcError):
        msglc.concat(out, [good, bad])
        with msglc.LazyReader(out) as r:  # a damaged TOC may only show when read
            r.verify()
    if where == "items":
        assert not out.exists()


def test_a_flipped_data_byte_is_caught_while_copying(tmp_path):
    good = _dump(tmp_path / "good.mlc", RECORDS)
    data = bytearray(good.read_bytes())
    data[len(data) // 3] ^= 0x01
    (tmp_path / "bad.mlc").write_bytes(bytes(data))
    with pytest.raises(CorruptedError, match="checksum"):
        msglc.concat(tmp_path / "out.mlc", [good, tmp_path / "bad.mlc"])
    assert not (tmp_path / "out.mlc").exists()


# ---- the S3 planner ----------------------------------------------------------------------------


def _bytes_of(parts, objects):
    out = b""
    for part in parts:
        for p in [part] if isinstance(part, Span) else part:
            out += p if isinstance(p, bytes) else objects[p.source][p.offset : p.offset + p.size]
    return out


pieces_strategy = st.lists(
    st.one_of(st.binary(max_size=30), st.tuples(st.integers(0, 2), st.integers(0, 40), st.integers(0, 90))),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(pieces_strategy)
def test_planned_parts_write_the_pieces_in_order_within_s3_limits(raw):
    objects = {k: random.Random(k).randbytes(200) for k in range(3)}
    pieces = [p if isinstance(p, bytes) else Span(p[0], p[1], p[2]) for p in raw]
    expected = b"".join(p if isinstance(p, bytes) else objects[p.source][p.offset : p.offset + p.size] for p in pieces)
    parts = plan(pieces, min_part=20, max_copy=50)
    assert _bytes_of(parts, objects) == expected
    sizes = [
        p.size if isinstance(p, Span) else sum(len(x) if isinstance(x, bytes) else x.size for x in p) for p in parts
    ]
    assert all(s >= 20 for s in sizes[:-1])  # every part but the last at least the minimum
    assert all(20 <= p.size <= 50 for p in parts if isinstance(p, Span))  # copied parts: within S3's bounds
    downloaded = sum(x.size for p in parts if not isinstance(p, Span) for x in p if isinstance(x, Span))
    spans = sum(p.size for p in pieces if isinstance(p, Span))
    assert downloaded <= spans
    for piece in pieces:  # a span of twice the minimum or more is mostly copied, not downloaded
        if isinstance(piece, Span) and piece.size >= 40:
            copied = sum(
                p.size
                for p in parts
                if isinstance(p, Span)
                and p.source == piece.source
                and piece.offset <= p.offset < piece.offset + piece.size
            )
            assert copied >= piece.size - 20


def test_a_plan_copies_large_spans_and_downloads_only_to_fill_short_parts():
    big = Span("a", 0, 100 << 20)
    parts = plan([b"head", big, b"tail"])
    assert parts[0] == [b"head", Span("a", 0, (5 << 20) - 4)]
    assert parts[1] == Span("a", (5 << 20) - 4, (95 << 20) + 4)
    assert parts[2] == [b"tail"]
    huge = plan([Span("b", 0, 12 << 30)])
    assert huge == [Span("b", k << 30, 4 << 30) for k in (0, 4, 8)]
