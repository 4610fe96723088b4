"""Archives of the published msglc's format (docs/legacy-format.md) built byte by byte: TOCs
that its writer never makes but a damaged or hostile file can hold. Reading one gives a value
or an MsglcError, never another exception; verify() rejects every TOC that names other bytes
than the value it stands for, since lazy reads would then disagree with the whole value."""

from __future__ import annotations

from pathlib import Path

import msgpack
import pytest
from legacy_helpers import legacy_archive

import msglc
from msglc import CorruptedError, LazyReader, LazyStats, MsglcError

HERE = Path(__file__).parent.parent / "golden" / "legacy"
archive = legacy_archive


def combined(members: list[bytes], named: bool = False) -> bytes:
    offsets = [sum(map(len, members[:k])) for k in range(len(members))]
    toc = {"t": {f"m{k}": off for k, off in enumerate(offsets)} if named else offsets}
    return archive(b"".join(members), toc)


LEAF = archive(msgpack.packb([1, 2]), {"p": [0, 3]})


def read_all(blob: bytes) -> None:
    """Everything a user may do with a reader: the whole, each part, verify."""
    with LazyReader(blob) as r:
        r.to_obj()
        msglc.to_obj(r.read())
        r.verify()


@pytest.mark.parametrize("named", [False, True])
def test_combined_archives_nested_without_end_are_refused_not_recursed(named):
    """Each level a combined archive holding the next: deeper than 100 levels is an error
    (to_obj would otherwise exceed Python's recursion limit); 100 levels read and verify."""
    blob = LEAF
    for _ in range(100):
        blob = combined([blob], named)
    with LazyReader(blob) as r:
        value = r.to_obj()
        r.verify()
    for _ in range(100):
        value = value["m0"] if named else value[0]
    assert value == [1, 2]
    for _ in range(200):
        blob = combined([blob], named)
    with pytest.raises(CorruptedError, match="nested in more than 100"):
        read_all(blob)


def test_a_toc_that_is_a_bare_integer_is_refused():
    """An integer names a member archive only inside a combined TOC; as a TOC of its own it
    would chain archives one inside the next."""
    blob = LEAF
    for _ in range(2000):
        blob = archive(blob, raw_toc=msgpack.packb(0))
    with pytest.raises(CorruptedError, match="is an integer, not a map"):
        read_all(blob)


@pytest.mark.parametrize(
    "toc",
    [
        b"\x82\xa1p\x92\x00\x01\xa1t\x91" * 5000 + b"\x81\xa1p\x92\x00\x01",  # entries inside entries
        b"\x81\xa1p" + b"\x91" * 5000 + b"\x01",  # "p" nested
        b"\x81\xa1t" + b"\x91" * 5000 + b"\x00",  # a combined TOC's "t" nested
    ],
)
def test_tocs_nested_too_deeply_are_corrupted(toc):
    blob = archive(b"\x91" * 5000 + b"\x01", raw_toc=toc)
    with pytest.raises(CorruptedError, match="nested too deeply"):
        read_all(blob)
    with pytest.raises(CorruptedError, match="nested too deeply"), LazyReader(blob) as r:
        r[[0] * 3000]


def test_toc_errors_are_not_repeated():
    with pytest.raises(CorruptedError) as e:
        read_all(archive(msgpack.packb([1, 2]), {"p": [[5, 1, 3]]}))
    assert str(e.value).count("published-msglc TOC entry") == 1


DICT = msgpack.packb({"a": 1, "b": 2})  # 82 | a1 61 01 | a1 62 02
LIST = msgpack.packb([1, 2, 3, 4])  # 94 | 01 02 03 04


@pytest.mark.parametrize(
    ("data", "toc"),
    [
        # a child naming the key's bytes, not the value's: r["a"] == "a", to_obj()["a"] == 1
        (DICT, {"p": [0, 7], "t": {"a": {"p": [1, 3]}, "b": {"p": [6, 7]}}}),
        # a key the data does not hold
        (DICT, {"p": [0, 7], "t": {"x": {"p": [3, 4]}, "b": {"p": [6, 7]}}}),
        # a list's entry over a map of as many items
        (DICT, {"p": [0, 7], "t": [{"p": [3, 4]}, {"p": [6, 7]}]}),
        # fewer children than items: len() 2, to_obj() 4 items
        (LIST, {"p": [0, 5], "t": [{"p": [1, 2]}, {"p": [2, 3]}]}),
        # a child spanning its parent: r[0] == [1, 2, 3, 4]
        (LIST, {"p": [0, 5], "t": [{"p": [0, 5]}, {"p": [2, 3]}, {"p": [3, 4]}, {"p": [4, 5]}]}),
        # runs skipping an item: lazily [1, 2, 4], whole [1, 2, 3, 4]
        (LIST, {"p": [[2, 1, 3], [1, 4, 5]]}),
        # runs from the array header on: the header read as an item
        (LIST, {"p": [[1, 0, 1], [3, 1, 4]]}),
        # a leaf short of the data: the root's last item unread
        (LIST, {"p": [0, 4]}),
        # members overlapping: the same archive twice
        (LEAF + LEAF, {"t": [0, 0]}),
        # members out of order
        (LEAF + LEAF, {"t": [len(LEAF), 0]}),
    ],
)
def test_verify_rejects_entries_that_name_other_bytes_than_their_value(data, toc):
    """Values read by path would differ from the value read whole (or bytes go unread):
    verify() says so. The published reader reads such files without a word."""
    blob = archive(data, toc)
    try:
        with LazyReader(blob) as r:
            r.to_obj()
    except MsglcError:
        pass
    with pytest.raises(CorruptedError), LazyReader(blob) as r:
        r.verify()


def test_verify_accepts_what_the_published_writers_write():
    """Every fixture, its Rust writer's groupings and appended combinations included."""
    for path in sorted(HERE.glob("*.msg")):
        if "cbor" in path.name or "empty" in path.name and "combined" in path.name:
            continue
        with LazyReader(path) as r:
            r.verify()


@pytest.mark.parametrize("cached", [True, False])
def test_a_blocked_list_is_read_run_by_run(cached):
    """Iterating or slicing a list stored in runs decodes each run once, not once per item
    (an uncached list used to read a run per item: 600 items, 16 times the file)."""
    path = HERE / "blocked-list-t64.msg"
    size = path.stat().st_size
    expected = msgpack.unpackb((HERE / "blocked-list-t64.expected.msgpack").read_bytes())
    for read in (list, lambda v: v[::3], lambda v: v[::-1], lambda v: v[10:500]):
        stats = LazyStats()
        with LazyReader(path, cached=cached, counter=stats) as r:
            assert read(r.read()) == read(expected)
        assert stats.bytes < 2 * size, stats  # (the header and TOC, then each run once)


def test_msgpack_of_published_parts_is_msgpack():
    """protocol_raw_data() is msgpack: of a list stored in runs (its header lies before the
    runs), of a combined archive (whose data section holds whole archives), nested ones
    included; `msglc get --format msgpack` and `msglc convert X.msg X.msgpack` rely on it."""
    for name in ("blocked-list-t64", "combined-list", "combined-dict", "combined-nested", "combined-small-member"):
        with LazyReader(HERE / f"{name}.msg") as r:
            whole = r.to_obj()
            assert msgpack.unpackb(r.protocol_raw_data(), strict_map_key=False, timestamp=3) == whole
            assert b"".join(r.iter_protocol_raw_data()) == r.protocol_raw_data()
            root = r.read()
            assert msgpack.unpackb(root.protocol_raw_data(), strict_map_key=False, timestamp=3) == whole
            for key in range(len(root)) if isinstance(root, msglc.LazyList) else root:
                part = root[key]
                if isinstance(part, (msglc.LazyList, msglc.LazyDict)):
                    assert msgpack.unpackb(part.protocol_raw_data(), strict_map_key=False, timestamp=3) == msglc.to_obj(
                        part
                    )
