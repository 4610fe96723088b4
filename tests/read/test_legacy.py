"""Archives written by the published msglc (PyPI 261017; tests/golden/legacy, made by its
make_legacy.py) read through the same LazyReader: equal to what was written, lazily, from a
path, bytes or a file object, in both cached modes; damaged ones give only msglc errors."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import msgpack
import pytest
from cli_runner import run_msglc

import msglc
from msglc import CorruptedError, LazyReader, LazyStats, MsglcError, UnsupportedVersionError

HERE = Path(__file__).parent.parent / "golden" / "legacy"
INDEX = json.loads((HERE / "expected_index.json").read_text())["fixtures"]
READABLE = [f for f in INDEX if f.get("expected")]
UNREADABLE = [f for f in INDEX if not f.get("expected")]


def expected(fixture: dict[str, Any]) -> object:
    return msgpack.unpackb((HERE / fixture["expected"]).read_bytes(), strict_map_key=False, timestamp=3)


def at(value: object, path: list[str | int]) -> object:
    for key in path:
        value = value[key]  # type: ignore[index]
    return value


def sources(name: str) -> list[Path | str | bytes | memoryview | io.BytesIO]:
    data = (HERE / name).read_bytes()
    return [HERE / name, str(HERE / name), data, memoryview(data), io.BytesIO(data)]


@pytest.mark.parametrize("fixture", READABLE, ids=[f["file"] for f in READABLE])
@pytest.mark.parametrize("cached", [True, False])
def test_published_archives_read_back_equal(fixture, cached):
    """Every kind the published writer makes (any threshold, its Rust writer's groupings,
    combined as dicts and lists, nested, appended to) reads back as it was written, whole and
    by each path, from every kind of source."""
    value = expected(fixture)
    for source in sources(fixture["file"]):
        with LazyReader(source, cached=cached) as r:
            assert msglc.to_obj(r.read()) == value
            for path in fixture["paths"]:
                assert msglc.to_obj(r[path]) == at(value, path), path
            assert r.to_obj() == value
            r.verify()


@pytest.mark.parametrize("name", ["doc-t64.msg", "doc-t1024.msg", "doc-t8192.msg"])
def test_one_value_reads_a_small_part_of_the_file(name):
    """A record's field of a 400-record document reads the header, the TOC and the value's own
    bytes. The TOC is one msgpack value whose entries can only be found by walking it, so it
    is read whole, as the published reader reads it: under a quarter of the file at
    thresholds 1024 and 8192 (about 8%), 39% at 64, where the TOC itself is that large."""
    fixture = next(f for f in INDEX if f["file"] == name)
    size = (HERE / name).stat().st_size
    with LazyReader(HERE / name) as r:
        toc = r.info().toc_size
    for cached in (True, False):
        stats = LazyStats()
        with LazyReader(HERE / name, counter=stats, cached=cached) as r:
            assert r[fixture["lazy_path"]] == at(expected(fixture), fixture["lazy_path"])
        assert stats.bytes <= toc + 1024, (stats, toc)
        assert stats.bytes < size / 4 or toc > size / 4 - 1024, (stats, size)


@pytest.mark.parametrize("name", ["doc-t64.msg", "doc-t1024.msg", "combined-dict.msg"])
def test_repeated_reads_without_a_cache_reparse_no_toc(name, monkeypatch):
    """With cached=False a value is read afresh each time, but the lazy views on its way are
    kept (their TOC entries never change): reading it again parses no TOC entry larger than
    the value's own (parsing the whole TOC path again cost 60x a cached read)."""
    from msglc.format.legacy import entry as real
    from msglc.read import legacy

    fixture = next(f for f in INDEX if f["file"] == name)
    path = fixture.get("lazy_path") or fixture["paths"][-1]
    parsed = []

    def counting(raw, *args):
        parsed.append(len(raw))
        return real(raw, *args)

    monkeypatch.setattr(legacy, "entry", counting)
    with LazyReader(HERE / name, cached=False) as r:
        first = msglc.to_obj(r[path])
        parsed.clear()
        for _ in range(3):
            assert msglc.to_obj(r[path]) == first == at(expected(fixture), path)
    assert max(parsed, default=0) < 64, parsed  # at most the leaf's own small entry, each time


def test_lazy_views_are_the_usual_ones():
    with LazyReader(HERE / "doc-t64.msg") as r:
        root = r.read()
        assert isinstance(root, msglc.LazyDict) and isinstance(root["records"], msglc.LazyList)
        assert len(root["records"]) == 400 and "records" in root and list(root)[0] in root
        assert root["records"][-1] == root["records"][399] and root["records"][1:3] == root["records"][1:3]
        with pytest.raises(IndexError):
            root["records"][400]
        with pytest.raises(KeyError):
            root["no such key"]
    with LazyReader(HERE / "combined-dict.msg") as r:  # members: their roots, as in our combined archives
        members = expected(next(f for f in INDEX if f["file"] == "combined-dict.msg"))
        assert isinstance(members, dict) and sorted(r.keys()) == sorted(members)


@pytest.mark.parametrize("fixture", UNREADABLE, ids=[f["file"] for f in UNREADABLE])
def test_what_cannot_be_read_says_why(fixture):
    """CBOR archives (a codec plug-in of the published package) and the empty combined archive
    its combine() writes (its own reader cannot open it either) give msglc errors."""
    error = UnsupportedVersionError if "cbor" in fixture["file"] else CorruptedError
    with pytest.raises(error, match="CBOR|not a positive integer"), LazyReader(HERE / fixture["file"]) as r:
        r.to_obj()


@pytest.mark.parametrize("name", ["doc-t64.msg", "combined-nested.msg", "nested-t0.msg", "dict-root-t64.msg"])
def test_damaged_archives_give_only_msglc_errors(name):
    """The format has no checksum: a flipped byte inside a value may go unseen, but whatever
    is flipped or cut, reading gives a value or an MsglcError, never another exception."""
    data = (HERE / name).read_bytes()
    rng = random.Random(name)
    cases = [data[:n] for n in (0, 10, 29, 30, 49, 50, len(data) // 2, len(data) - 1)]
    for _ in range(120):
        bad = bytearray(data)
        bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
        cases.append(bytes(bad))
    for case in cases:
        try:
            with LazyReader(case, cached=False) as r:
                r.to_obj()
                r.verify()
        except MsglcError:
            pass


def test_converted_archives_hold_the_same_values(tmp_path):
    """dump(target, LazyReader(old)) and `msglc convert` write msglc archives (compressed on
    request); combine() takes published archives as inputs; append() onto one says to convert."""
    for fixture in READABLE:
        old = HERE / fixture["file"]
        new = tmp_path / (old.stem + ".mlc")
        with LazyReader(old) as r:
            msglc.dump(new, r, small_obj_optimization_threshold=1024)
        with LazyReader(new) as r:
            assert r.to_obj() == expected(fixture)
            r.verify()
    out = tmp_path / "doc.mlc"
    assert run_msglc("convert", HERE / "doc-t64.msg", out, "--compression", "zstd")[0] == 0
    with LazyReader(out) as r:
        assert r.info().compression == "zstd" and r.to_obj() == expected(INDEX[0])
    code, info, _ = run_msglc("info", HERE / "combined-list.msg")
    assert code == 0 and b"msglc-2024" in info and b"msglc convert" in info
    msglc.combine(
        tmp_path / "both.mlc", [msglc.FileInfo(HERE / "list-root-t64.msg", "old"), msglc.FileInfo(out, "new")]
    )
    with LazyReader(tmp_path / "both.mlc") as r:
        assert msglc.to_obj(r["old"]) == expected(next(f for f in INDEX if f["file"] == "list-root-t64.msg"))
    copy = tmp_path / "combined.msg"
    copy.write_bytes((HERE / "combined-list.msg").read_bytes())
    with pytest.raises(UnsupportedVersionError, match="convert it first"):
        msglc.append(copy, [msglc.FileInfo(out)])
    assert copy.read_bytes() == (HERE / "combined-list.msg").read_bytes()


def test_the_cli_tells_an_archive_by_its_first_bytes(tmp_path):
    bare = tmp_path / "archive-without-extension"
    bare.write_bytes((HERE / "scalar-str.msg").read_bytes())
    code, out, _ = run_msglc("info", bare)
    assert code == 0 and b"msglc-2024" in out


def test_a_crafted_deep_toc_is_refused():
    """A TOC entry nested 100,000 deep (msgspec walks nesting recursively): an msglc error."""
    from msglc.format.legacy import MAGIC

    def field(n: int) -> bytes:
        packed: bytes = msgpack.packb(n)
        return packed.rjust(10, b"\0")

    toc = b"\x81\xa1p" + b"\x91" * 100_000 + b"\x00"
    with pytest.raises(CorruptedError, match="nested too deeply"):
        LazyReader(MAGIC + field(1) + field(len(toc)) + b"\xc0" + toc).to_obj()


def test_converting_streams_without_filling_the_readers_cache(tmp_path, monkeypatch):
    """Parts written item by item are read without a cache, so a cached reader does not keep
    every converted item (memory stays bounded by a part)."""
    from msglc.edit import legacy

    monkeypatch.setattr(legacy, "STREAM_ABOVE", 0)  # every part streamed
    fixture = next(f for f in INDEX if f["file"] == "doc-t64.msg")
    with LazyReader(HERE / "doc-t64.msg") as r:
        msglc.dump(tmp_path / "doc.mlc", r)
        assert not r.read()._cache and not r.read()["records"]._cache  # noqa: SLF001
    with LazyReader(tmp_path / "doc.mlc") as r:
        assert r.to_obj() == expected(fixture)
