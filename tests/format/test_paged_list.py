"""Paged lists (node types 11 and 12, format 1.5 and 2.2): every writer pages a list of more
than 1024 spans; opening reads a small node, an item one page (then kept) and its span;
everything that walks the spans reads them all; pages that do not fit their node are refused;
append moves a paged root's pages with it."""

from __future__ import annotations

import io
import itertools
import os
from typing import Any

import msgspec
import pytest
from outcomes import answer, both_modes

import msglc
from msglc import CorruptedError, FileInfo, MsglcError
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, Trailer, pack_header, unpack_trailer
from msglc.format.nodes import (
    PAGE_SPANS,
    ListNode,
    PagedListNode,
    SpanPage,
    frame_node,
    unframe_node,
    unframe_page,
)
from msglc.read.part import archive_of

T: dict[str, Any] = {"small_obj_optimization_threshold": 16}  # spans of about 16 bytes: pages come soon
ZSTD: dict[str, Any] = {"compression": "zstd"}


def _items(n: int = 9000) -> list[Any]:
    """Short mixed items (no fixed stride), and some with nodes of their own, in several pages."""
    items: list[Any] = [i if i % 3 else f"s{i}" for i in range(n)]
    for i in (5, 2100, 4500, n - 2):
        items[i] = {"k": i, "v": list(range(20)), "deep": {"a": [i, {"b": "x" * 30}]}}
    return items


ITEMS = _items()


def root_node(data: bytes) -> Any:
    with msglc.LazyReader(data) as r:
        a = archive_of(r)
        t = a.opened.trailer
        return a.node(t.toc_off + t.root_pos, t.root_len)


def test_a_long_list_is_paged_and_reads_back_whole():
    for options in ({}, ZSTD):
        data = msglc.dumps(ITEMS, **T, **options)
        node = root_node(data)
        assert isinstance(node, PagedListNode) and len(node.pages) >= 3 and node.n == len(ITEMS)
        with msglc.LazyReader(data, cached=False) as r:
            assert r.to_obj() == ITEMS and list(r.read()) == ITEMS
            r.verify()
            root = r.info().root
            assert root is not None and root.kind == "list" and root.length == len(ITEMS)
    assert not isinstance(root_node(msglc.dumps(ITEMS[:300], **T)), PagedListNode)  # few spans: type 1


def test_every_writer_pages(tmp_path):
    """dump, LazyWriter (plain and compressed), repacking, concat: a paged root each."""
    plain, packed = tmp_path / "a.mlc", tmp_path / "b.mlc"
    msglc.dump(plain, ITEMS, **T)
    with msglc.LazyReader(plain) as r:
        msglc.dump(packed, r, **T)
    streams = []
    for options in ({}, ZSTD):
        out = io.BytesIO()
        with msglc.LazyWriter(out, **T, **options) as w:
            w.write(iter(ITEMS))
        streams.append(out.getvalue())
    halves = [tmp_path / "h1.mlc", tmp_path / "h2.mlc"]
    msglc.dump(halves[0], ITEMS[:4000], **T)
    msglc.dump(halves[1], ITEMS[4000:], **T)
    joined = tmp_path / "joined.mlc"
    msglc.concat(joined, [FileInfo(h) for h in halves], **T)
    for data in [plain.read_bytes(), packed.read_bytes(), *streams, joined.read_bytes()]:
        assert isinstance(root_node(data), PagedListNode)
        with msglc.LazyReader(data) as r:
            r.verify()
            assert r.to_obj() == ITEMS


def test_opening_reads_a_small_node_and_an_item_one_page_then_its_span(tmp_path):
    path = tmp_path / "long.mlc"
    items = [f"name-{i}" for i in range(300_000)]
    msglc.dump(path, items, small_obj_optimization_threshold=256)
    node = root_node(path.read_bytes())
    assert isinstance(node, PagedListNode) and len(node.pages) > 10
    stats = msglc.LazyStats()
    with msglc.LazyReader(path, cached=False, counter=stats) as r:
        assert stats.bytes < 6000  # header, trailer, the node (and the TOC bytes before it)
        stats.clear()
        assert r[123_456] == "name-123456" and stats.requests == 2  # its page, then its span
        stats.clear()
        assert r[123_457] == "name-123457" and stats.requests == 1  # the page was kept
        stats.clear()
        assert r[299_999] == "name-299999" and r[-300_000] == "name-0"
        assert stats.requests == 4 and stats.bytes < 40_000


@pytest.mark.parametrize("cached", [False, True])
def test_reads_of_every_kind_give_the_lists_values_c_and_python(cached, monkeypatch):
    data = msglc.dumps(ITEMS, **T)
    n = len(ITEMS)
    picks = [0, 1, 5, 1023, 1024, 2099, 2100, 2101, 4500, n - 2, n - 1, -1, -n, n, -n - 1]
    paths: list[list[Any]] = [[i] for i in picks] + [
        [5, "deep", "a", 1, "b"],
        [4500, "v", 19],
        [2100, "nope"],
        [7, "x"],
    ]
    paths += [[n - 2, "deep", "a", "0"], ["2100", "k"], [slice(10, 20)], [slice(None, None, 997)]]

    def run() -> list[Any]:
        with msglc.LazyReader(data, cached=cached) as r:
            v = r.read()
            out = [answer(lambda p=p: r[p]) for p in paths]
            out += [answer(lambda p=p: r["/".join(map(str, p))]) for p in paths if not isinstance(p[0], slice)]
            out.append(answer(lambda: v.read_items(2000, 2300)))
            out.append(answer(lambda: r.read_many([str(i % n) for i in picks] + ["5/deep/a/1/b", "4500/v/3"])))
            out.append(answer(lambda: v.block_starts()[-1]))
            out.append(answer(lambda: v[1000:1010]))
            return out

    with_c, pure = both_modes(monkeypatch, run)
    assert with_c == pure
    assert with_c[0] == ("ok", ITEMS[0]) and with_c[9] == ("ok", ITEMS[n - 2])
    assert with_c[-4] == ("ok", ITEMS[2000:2300])


def test_a_part_of_a_paged_list_is_an_archive_of_its_own():
    doc = {"names": ITEMS, "x": 1}
    with msglc.LazyReader(msglc.dumps(doc, **T)) as r:
        part = r["names"].raw_data()
    with msglc.LazyReader(part) as p:
        p.verify()
        assert isinstance(root_node(part), PagedListNode) and p.to_obj() == ITEMS


# -- crafted archives: valid checksums, pages that lie --------------------------------------------


def _rewrite(data: bytes, change_pages: Any = None, change_node: Any = None) -> bytes:
    """The plain archive ``data`` (a paged list root, its pages right before it) with its
    pages and node replaced by what ``change_pages(pages)`` and ``change_node(node)`` give, all
    checksums and references made valid."""
    header = data[:HEADER_SIZE]
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), header)
    root_at = t.toc_off + t.root_pos
    node = unframe_node(data[root_at : root_at + t.root_len], root_at)
    assert isinstance(node, PagedListNode)
    first = root_at - node.pages[0][0]
    pages = [unframe_page(data[root_at - b : root_at - b + s], root_at - b) for b, s in node.pages]
    framed = [frame_node(p) for p in (change_pages(pages) if change_pages else pages)]
    sizes = list(itertools.accumulate(map(len, framed)))
    total = sizes[-1]
    refs = [(total - (end - len(f)), len(f)) for f, end in zip(framed, sizes, strict=True)]
    node = msgspec.structs.replace(node, pages=refs)
    new = frame_node(change_node(node) if change_node else node)
    toc = data[t.toc_off : first] + b"".join(framed) + new
    fields = msgspec.structs.astuple(t)[:3] + (len(toc), len(toc) - len(new), len(new)) + msgspec.structs.astuple(t)[6:]
    return data[: t.toc_off] + toc + Trailer(*fields).pack(pack_header())


def _refused(data: bytes) -> None:
    """Reading every page, or verifying, raises a clear error; never a wrong value."""
    with pytest.raises(MsglcError), msglc.LazyReader(data, cached=False) as r:
        for i in range(0, len(ITEMS), PAGE_SPANS):
            assert r[i] == ITEMS[i]
        r.to_obj()
        r.verify()


def test_pages_that_do_not_fit_their_node_are_refused():
    data = msglc.dumps(ITEMS, **T)
    assert msglc.LazyReader(data).to_obj() == ITEMS  # (the rewrite alone changes nothing)
    assert msglc.LazyReader(_rewrite(data, lambda ps: ps)).to_obj() == ITEMS

    def first_item(ps: list[SpanPage]) -> list[SpanPage]:
        ps[1] = msgspec.structs.replace(ps[1], starts=[ps[1].starts[0] + 1, *ps[1].starts[1:]])
        return ps

    def offsets(ps: list[SpanPage]) -> list[SpanPage]:
        ps[2] = msgspec.structs.replace(ps[2], offs=[*ps[2].offs[:-1], ps[2].offs[-1] - 1])
        return ps

    def swapped(ps: list[SpanPage]) -> list[SpanPage]:
        return [ps[1], ps[0], *ps[2:]]

    def kid_of_many(ps: list[SpanPage]) -> list[SpanPage]:
        ref = next(iter(ps[0].kids.values()))
        return [msgspec.structs.replace(ps[0], kids={**ps[0].kids, 3: ref}), *ps[1:]]

    for change in (first_item, offsets, swapped, kid_of_many):
        _refused(_rewrite(data, change))
    for change_node in (
        lambda n: msgspec.structs.replace(n, firsts=[0, *n.firsts[2:], n.firsts[1]]),
        lambda n: msgspec.structs.replace(n, offs=[*n.offs[:-1], n.offs[-1] + 1]),
        lambda n: msgspec.structs.replace(n, n=n.n + 1),
        lambda n: msgspec.structs.replace(n, pages=n.pages[:-1]),
        lambda n: msgspec.structs.replace(n, pages=[(0, n.pages[0][1]), *n.pages[1:]]),  # itself
    ):
        crafted = _rewrite(data, change_node=change_node)
        with pytest.raises(MsglcError), msglc.LazyReader(crafted, cached=False) as r:
            r.to_obj()
            r.verify()


def test_a_page_is_no_container_node_and_a_node_is_no_page():
    data = msglc.dumps(ITEMS, **T)
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), data[:HEADER_SIZE])
    root_at = t.toc_off + t.root_pos
    node = unframe_node(data[root_at : root_at + t.root_len], root_at)
    assert isinstance(node, PagedListNode)
    # the root named as the first page's node: a page, refused where a container's node belongs
    back, size = node.pages[0]
    fields = list(msgspec.structs.astuple(t))
    fields[4], fields[5] = t.root_pos - back, size
    as_root = data[:-TRAILER_SIZE] + Trailer(*fields).pack(pack_header())
    with pytest.raises(CorruptedError):
        msglc.LazyReader(as_root)
    # a page that is a type-1 node: refused where a page belongs
    not_page = _rewrite(data, lambda ps: [ListNode(n=1, starts=[0], offs=[1, 2], kids={}), *ps[1:]])
    with pytest.raises(CorruptedError, match="span page"), msglc.LazyReader(not_page, cached=False) as r:
        r[0]


@pytest.mark.parametrize("cached", [False, True])
def test_a_page_named_twice_is_checked_for_each_place(cached, monkeypatch):
    """A paged node whose second page reference names the first page: once the first page
    was read (and kept), an item of the second page is still refused as corrupted, by every
    read, where it used to be taken from the first page (an IndexError, and a read_many that
    never returned)."""
    data = msglc.dumps(ITEMS, **T)
    crafted = _rewrite(data, change_node=lambda n: msgspec.structs.replace(n, pages=[n.pages[0], *n.pages[:-1]]))
    i = root_node(data).firsts[1] + 5
    with msglc.LazyReader(crafted, cached=cached) as r:
        assert r[3] == ITEMS[3]
        with pytest.raises(CorruptedError, match="span page"):
            r[i]

    def run() -> list[Any]:
        out = []
        for read in (lambda r: r[i], lambda r: r[[i, "x"]], lambda r: r.read_many([3, i]), lambda r: r.verify()):
            with msglc.LazyReader(crafted, cached=cached) as r:
                assert r[3] == ITEMS[3]  # the first page, read and kept
                out.append(answer(lambda r=r, read=read: read(r)))
        return out

    with_c, pure = both_modes(monkeypatch, run)
    assert with_c == pure
    assert all(got[0] == "CorruptedError" and "span page" in got[1] for got in with_c), with_c


# -- append ----------------------------------------------------------------------------------------


def test_appends_to_a_paged_root_move_its_pages_and_keep_the_file_bounded(tmp_path):
    path = tmp_path / "grow.mlc"
    msglc.dump(path, ITEMS, **T)
    sizes = []
    for i in range(12):
        msglc.append(path, [FileInfo(None, obj=f"more-{i}"), FileInfo(None, obj={"i": i, "v": list(range(40))})])
        sizes.append(os.path.getsize(path))
        with msglc.LazyReader(path, cached=False) as r:
            assert len(r) == len(ITEMS) + 2 * (i + 1) and r[-1] == {"i": i, "v": list(range(40))}
    assert isinstance(root_node(path.read_bytes()), PagedListNode)
    with msglc.LazyReader(path) as r:
        r.verify()
        assert r.to_obj()[: len(ITEMS)] == ITEMS
    fresh = len(msglc.dumps(msglc.LazyReader(path).to_obj(), **T))
    assert sizes == sorted(sizes) and sizes[-1] < 1.05 * sizes[3] and sizes[-1] < 2 * fresh


def test_append_to_a_compressed_paged_root(tmp_path):
    path = tmp_path / "z.mlc"
    msglc.dump(path, ITEMS, **T, **ZSTD)
    msglc.append(path, [FileInfo(None, obj="tail")])
    with msglc.LazyReader(path) as r:
        r.verify()
        assert r.info().version == (2, 2) and r.to_obj() == [*ITEMS, "tail"]
        assert isinstance(root_node(path.read_bytes()), PagedListNode)


def test_read_items_reads_the_pages_it_needs_only():
    items = [f"name-{i}" for i in range(300_000)]
    data = msglc.dumps(items, small_obj_optimization_threshold=256)
    assert isinstance(root_node(data), PagedListNode)
    stats = msglc.LazyStats()
    with msglc.LazyReader(data, cached=False, counter=stats) as r:
        v = r.read()
        stats.clear()
        assert v.read_items(150_000, 150_100) == items[150_000:150_100]
        assert stats.requests == 2  # the page holding them, then their spans in one read
        assert v.read_items(21_000, 27_000) == items[21_000:27_000]  # across two pages
        assert v.read_items(0, 0) == [] and v.read_items(299_990, 300_000) == items[-10:]
