"""Damaged and crafted archives: a bounded run of the fuzzing harness (``python -m
tools.fuzz``), and regression tests for what it and its long runs found in ``verify()``.

The bounded run asserts the harness's bug classes stay empty: no exception outside the
documented ones, no hang, no runaway allocation, no wrong value while ``verify()`` passes, no
wrong value without an error from a change outside the data section, and no data change that
``verify()`` or ``to_obj()`` lets through.
"""

import dataclasses
import os
import random
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Any

import msgspec
import pytest
from archives import with_data

import msglc
from benchmark.targets.realdata import CountingFile
from msglc import CorruptedError, FileInfo, MsglcError
from msglc.format.frames import NO_FILTER, RAW
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, Trailer, pack_header, unpack_trailer
from msglc.format.msgpack import container_header
from msglc.format.nodes import FuseMapNode, PagedListNode, StrideNode, frame_node, unframe_node
from msglc.read.part import archive_of

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # tools/ runs from the checkout; it is not installed
    sys.path.insert(0, str(ROOT))

from tools.fuzz import frames as ff  # noqa: E402

DEEP = 1100  # deeper than the default recursion limit (1000) allows msgspec to go


# ---- the bounded run ------------------------------------------------------------------------------


def test_bounded_fuzz_run_finds_no_bugs():
    """2500 random cases (every mutation kind on every corpus archive), every corpus archive
    unchanged, and one bit flipped every 151 bytes of the ``doc@64`` archive (the document of
    read/test_damaged_archives.py); a failure prints the report, with ``--replay`` ids."""
    from tools import fuzz

    report = fuzz.campaign(cases=2500, seed=20260509, workers=2, sweep_stride=151)
    assert report["cases_run"] == report["cases_requested"]
    bad = {cls: n for cls, n in report["counts"].items() if cls in fuzz.BUG_CLASSES and n}
    assert not bad, fuzz.format_report(report)


def test_tiled_arrays_round_trip_and_crafted_tiles_are_refused():
    """Random shapes, tiles and dtypes written and read back (whole, by selections against
    NumPy, verify), and crafted tiles in array headers refused with an MsglcError."""
    from tools import fuzz

    problems = fuzz.fuzz_tiles(cases=150, seed=20261127)
    assert not problems, "\n".join(problems[:20])


# ---- helpers for crafted archives ---------------------------------------------------------------


def _archive(data: bytes, nodes: bytes = b"", root_len: int = 0, threshold: int = 64) -> bytes:
    """header | data | TOC ``nodes`` (the root the last ``root_len`` bytes) | trailer."""
    header = pack_header()
    t = Trailer(
        HEADER_SIZE,
        len(data),
        HEADER_SIZE + len(data),
        len(nodes),
        len(nodes) - root_len,
        root_len,
        zlib.crc32(data),
        threshold,
    )
    return header + data + nodes + t.pack(header)


def _chain(tmp_path: Path, leaf: object, depth: int) -> bytes:
    """An archive combined into another as its member ``x``, ``depth`` times: valid, and
    nested ``depth`` levels deep."""
    path, tmp = tmp_path / "chain.mlc", tmp_path / "next.mlc"
    msglc.dump(path, leaf)
    for _ in range(depth):
        msglc.combine(tmp, [FileInfo(path, "x")])
        os.replace(tmp, path)
    return path.read_bytes()


# ---- verify(): valid archives deeper than the recursion limit are not "corrupted" ---------------


def test_verify_deep_combined_archive_with_nodes(tmp_path):
    """Every level has a TOC node; checking a node's item boundaries must not recurse into
    the deep value its last entry holds."""
    data = _chain(tmp_path, list(range(3000)), DEEP)
    with msglc.LazyReader(data) as r:
        assert r["/".join(["x"] * DEEP) + "/2999"] == 2999
        r.verify()


def test_verify_deep_combined_archive_without_nodes(tmp_path):
    data = _chain(tmp_path, 1, DEEP)
    with msglc.LazyReader(data) as r:
        assert r.info().root is None
        r.verify()


def test_verify_deep_value_inside_a_span(tmp_path):
    """A small deep member (no node) next to a large one: the root's node must be checked
    against entries whose values are nested deeper than msgspec can skip."""
    deep = _chain(tmp_path, "leaf", DEEP)
    (tmp_path / "deep.mlc").write_bytes(deep)
    msglc.dump(tmp_path / "big.mlc", list(range(3000)), small_obj_optimization_threshold=256)
    out = tmp_path / "both.mlc"
    msglc.combine(out, [FileInfo(tmp_path / "deep.mlc", "deep"), FileInfo(tmp_path / "big.mlc", "big")])
    with msglc.LazyReader(out) as r:
        assert r.info().root is not None and r["big/7"] == 7
        r.verify()


def test_verify_deep_plain_root():
    """A node-less root holding msgpack nested 5000 deep (another writer's archive)."""
    depth = 5000
    data = b"\x92" * depth + b"\xa1x" + b"\x80" * depth
    archive = _archive(data)
    with msglc.LazyReader(archive) as r:
        r.verify()


def test_verify_deep_map_keys_and_values_in_plain_root():
    """Deep values under str keys, and tuple-like (array) keys, in a node-less root."""
    depth = 3000
    inner = b"\x81\xa1k" * depth + b"\xc0"
    data = b"\x82\x92\x01\x02" + inner + b"\xa1z" + b"\x91" * depth + b"\x01"
    with msglc.LazyReader(_archive(data)) as r:
        r.verify()
    with msglc.LazyReader(_archive(b"\x81\x81\x01\x02\x03")) as r, pytest.raises(CorruptedError):
        r.verify()  # a map as a map key: not hashable, not decodable


def test_verify_deep_map_key():
    """A map key that is an array is decoded as a tuple: nested 990 deep (too deep for
    msgspec within the recursion limit) it is valid, and reads build it too; one that holds a
    map at the bottom is not (unhashable), nor one nested more than ``MAX_KEY_DEPTH`` levels
    (Python hashes a tuple by recursing in C without a bound: reads could not build it safely)."""
    from msglc.format.walk import MAX_KEY_DEPTH

    depth = 990
    with msglc.LazyReader(_archive(b"\x81" + b"\x91" * depth + b"\x01" + b"\xc0")) as r:
        r.verify()
        key = next(iter(r.to_obj()))
        for _ in range(depth):
            (key,) = key
        assert key == 1
    with (
        msglc.LazyReader(_archive(b"\x81" + b"\x91" * depth + b"\x80" + b"\xc0")) as r,
        pytest.raises(CorruptedError, match="hashable"),
    ):
        r.verify()
    too_deep = _archive(b"\x81" + b"\x91" * (MAX_KEY_DEPTH + 1) + b"\x01" + b"\xc0")
    for use in ("verify", "to_obj"):
        with msglc.LazyReader(too_deep) as r, pytest.raises(CorruptedError, match="nested more than"):
            getattr(r, use)()


def test_verify_deep_fixed_stride_list():
    """A list nested 1500 deep, one item per level, described by one fixed-stride node (a
    valid archive: lazy reads address it by arithmetic)."""
    depth = 1500
    data = b"\x91" * depth + b"\xcb" + msgspec.msgpack.encode(2.5)[1:]
    dims = [(1, 1, len(data) - 1 - d) for d in range(depth)]
    node = frame_node(StrideNode(dims=dims, lazy_min=512))
    archive = _archive(data, node, len(node))
    with msglc.LazyReader(archive) as r:
        assert r[[0] * depth] == 2.5
        r.verify()


# ---- verify(): every failure is an MsglcError ------------------------------------------------------


def _listed(threshold: int = 64) -> bytes:
    return msglc.dumps([f"s{i}" for i in range(200)], small_obj_optimization_threshold=threshold)


def test_verify_malformed_item_is_corrupted():
    """An item's marker replaced by the reserved byte 0xc1 (checksum recomputed)."""
    archive = with_data(_listed(), lambda d: d.__setitem__(d.index(b"\xa3s50"), 0xC1))
    with msglc.LazyReader(archive) as r, pytest.raises(CorruptedError):
        r.verify()


def _keyed() -> bytes:
    return msglc.dumps({f"k{i:03}": list(range(i)) for i in range(40)}, small_obj_optimization_threshold=64)


def test_verify_key_of_another_type_is_corrupted():
    """A 5-byte str key turned into a 5-byte float (checksum recomputed)."""

    def change(d):
        at = d.index(b"\xa4k007")
        d[at : at + 5] = b"\xca\x00\x00\x00\x00"

    with msglc.LazyReader(with_data(_keyed(), change)) as r, pytest.raises(CorruptedError):
        r.verify()


def test_verify_key_that_is_not_utf8_is_corrupted():
    def change(d):
        at = d.index(b"\xa4k007")
        d[at + 1 : at + 3] = b"\xff\xfe"

    with msglc.LazyReader(with_data(_keyed(), change)) as r, pytest.raises(CorruptedError):
        r.verify()


def test_verify_key_of_a_hash_indexed_dict_that_is_not_utf8_is_corrupted():
    doc = {f"h{i:04}": [i] * (40 if i % 500 == 7 else 1) for i in range(1100)}
    archive = msglc.dumps(doc, small_obj_optimization_threshold=64)

    def change(d):
        at = d.index(b"\xa5h0507")
        d[at + 1 : at + 3] = b"\xff\xfe"

    with msglc.LazyReader(with_data(archive, change)) as r, pytest.raises(CorruptedError):
        r.verify()


# ---- the iterative checks agree with msgspec and with the writer ------------------------------------


def _walk_outcome(data: bytes, mode: str):
    """The iterative walk's answer: the value's end (``check``, ``bounds``) or the value
    (``build``), or the error class it raises."""
    from msglc.format import walk

    try:
        if mode == "build":
            return walk.deep_decode(data)
        if mode == "bounds":
            return walk.item_ends(data, 0, len(data), 1)
        walk.Walker(walk.InMemory(data), 0, len(data), 1).run()
        return [len(data)]
    except MsglcError as e:
        return type(e)


def _msgspec_outcome(data: bytes, mode: str):
    from msglc.format import walk

    try:
        if mode == "build":
            return walk.value_decoder.decode(data)
        if mode == "check":
            walk.value_decoder.decode(data)
        else:
            walk.raw_items.decode(b"\x91" + data)
        return [len(data)]
    except (msgspec.DecodeError, UnicodeDecodeError):
        return CorruptedError
    except MsglcError as e:
        return type(e)


_SAMPLES = [
    {"a": [1, 2.5, None, True, "x" * 40, b"\x00" * 300], "b": {"c": [[1, 2], [3]], 7: -(2**40)}, "d": ""},
    [[[[1]]], {"k": {"k": {"k": [1.5] * 20}}}, [{}, [], ""], list(range(-40, 300, 7))],
    {str(i): [i, str(i) * (i % 5), {"n": i}] for i in range(40)},
]


@pytest.mark.parametrize(("piece", "retry"), [(1, 1), (7, 3), (64, 10**9), (1 << 20, 1)])
def test_iterative_walk_agrees_with_msgspec(monkeypatch, piece, retry):
    """On valid values and on every one-byte change of them, the walk (runs of items in
    windows of ``piece`` bytes handed to msgspec, items stepped into by hand for ``retry``
    steps after a value too deep) finds what msgspec finds: the same end or value, or an
    error where msgspec raises one. Array keys (tuples) included."""
    import random

    from msglc.format import walk

    monkeypatch.setattr(walk, "PIECE", piece)
    monkeypatch.setattr(walk, "RETRY_STEPS", retry)
    rng = random.Random(piece)
    samples = [msgspec.msgpack.encode(value) for value in _SAMPLES]
    samples.append(b"\x82\x92\x01\x92\x02\xa1z\x91\x80\xa1y\xc4\x03abc")  # {(1, (2, "z")): [{}], "y": b"abc"}
    for data in samples:
        changed = [data]
        for _ in range(150):
            bad = bytearray(data)
            bad[rng.randrange(len(bad))] = rng.choice(
                [0xC1, 0xFF, 0x80, 0x9F, 0xDC, 0xD9, 0xC7, 0xA5, rng.randrange(256)]
            )
            changed.append(bytes(bad))
        changed.append(data + b"\x01")  # a trailing byte
        changed.append(data[:-1])
        for candidate in changed:
            for mode in ("check", "bounds", "build"):
                got, want = _walk_outcome(candidate, mode), _msgspec_outcome(candidate, mode)
                if mode == "build" and not isinstance(want, type):  # (NaN != NaN: compared as msgpack)
                    got, want = msgspec.msgpack.encode(got), msgspec.msgpack.encode(want)
                assert got == want, (candidate, mode)


def test_stride_proof_on_any_bytes():
    """The writer's fixed-stride proof, which verify() also runs on file data: known answers
    for real lists, and on every one-byte change of them no exception and no false proof."""
    import random

    from msglc.format import strides

    data = msgspec.msgpack.encode([[1.5, 2.5]] * 30)
    assert strides.stride_dims(bytearray(data), 0, 3, 30, len(data)) == [(3, 30, 19), (1, 2, 9)]
    data = msgspec.msgpack.encode([[[1, 2, 3]] * 4] * 5)
    assert strides.stride_dims(bytearray(data), 0, 1, 5, len(data)) == [(1, 5, 17), (1, 4, 4), (1, 3, 1)]
    data = msgspec.msgpack.encode([[1, 2], [3, 4, 5]])
    assert strides.stride_dims(bytearray(data), 0, 1, 2, len(data)) is None

    rng = random.Random(5)
    lists = [
        [[1.5, 2.5]] * 30,
        [[[1, 2, 3]] * 4] * 5,
        ["abc"] * 10,
        [b"xy"] * 7,
        [[]] * 9,
        [[None, True]] * 3,
        [1.5, 2, 3],
        [[1.5], [2]],
        [[1, 2], [3, 4, 5]],
        [[[0.5] * 3] * 2] * 6,
    ]
    for _ in range(100):
        rows = rng.randrange(1, 6)
        lists.append([[rng.choice([1.25, 7, -3, None]) for _ in range(rng.randrange(1, 4))] for _ in range(rows)])
    for value in lists:
        data = msgspec.msgpack.encode(value)
        for variant in [data] + [data[:k] + bytes([rng.randrange(256)]) + data[k + 1 :] for k in range(1, len(data))]:
            buf = bytearray(variant)
            try:
                is_map, n, h = container_header(variant)
            except MsglcError:
                continue
            got = strides.stride_dims(buf, 0, h, n, len(buf))  # never raises, whatever the bytes
            if got is not None:  # a layout proof: its arithmetic is consistent
                assert got[0] == (h, n, (len(buf) - h) // n)
                assert all(s == h1 + n1 * s1 for (_, _, s), (h1, n1, s1) in zip(got, got[1:], strict=False))


# ---- 2.1 compressed sections: parts changed, every offset and CRC recomputed (tools.fuzz.frames) -


def _zstd(value, **options) -> tuple[bytes, ff.Section]:
    """A compressed (2.1) archive of ``value`` and its section taken apart."""
    data = msglc.dumps(value, compression="zstd", **options)
    return data, ff.parse_section(data[HEADER_SIZE:-TRAILER_SIZE])


def _with_section(data: bytes, section: bytes) -> bytes:
    """The 2.1 archive ``data`` with another compressed section (its trailer made for it)."""
    header = data[:HEADER_SIZE]
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), header)
    return header + section + Trailer.compressed(len(section), t.data_crc, t.threshold).pack(header)


def test_a_frame_is_read_in_place_only_if_laid_out_as_a_raw_frame():
    """A frame the page table calls raw (filter 2) is read in place. One that is not laid out
    as a raw frame of the plain size the table gives (a zstd frame, a raw frame cut short, a
    raw frame whose plain size grew as the next frame's shrank, a raw frame's header damaged)
    was read in place all the same: bytes of another frame, or past the file's end, were
    returned as the value. Sizes no raw frame can have are refused with the page table."""
    blob = random.Random(1).randbytes(100_000)  # incompressible: stored in raw frames
    value = {"head": list(range(30_000)), "blob": blob, "tail": "end" * 10}
    data, sec = _zstd(value, small_obj_optimization_threshold=1 << 16)
    raw = next(i for i, f in enumerate(sec.frames) if f.code == RAW and f.plain > 1000)
    packed = next(i for i, f in enumerate(sec.frames) if f.code == NO_FILTER)

    def relabelled(t: ff.Tables) -> None:
        t.entries[0][packed][2] = RAW

    def grown(t: ff.Tables) -> None:
        t.entries[0][raw][1] += 16
        t.entries[0][raw + 1][1] -= 16

    short = sec.copy()
    short.frames[raw].stored = short.frames[raw].stored[:-5]  # (the page table says so)
    headless = sec.copy()
    headless.frames[raw].stored = b"\x00" + headless.frames[raw].stored[1:]  # not a zstd frame
    # a page table whose sizes cannot be a raw frame's is refused when the page is read
    refused = (ff.build_section(sec, edit_pages=grown), ff.build_section(short))
    for path, section in [("blob", s) for s in refused] + [("head", ff.build_section(sec, edit_pages=relabelled))]:
        with pytest.raises(CorruptedError, match="raw frame"), msglc.LazyReader(_with_section(data, section)) as r:
            msglc.to_obj(r[path])
    # sizes that fit, a header that does not: refused when the frame is first read in place
    with msglc.LazyReader(_with_section(data, ff.build_section(headless))) as r:
        assert msglc.to_obj(r["head"]) == value["head"]
        with pytest.raises(CorruptedError, match="raw frame"):
            msglc.to_obj(r["blob"])


def _with_root(data: bytes, sec: ff.Section, change) -> bytes:
    """The 2.1 archive ``data`` (its section ``sec``) with its root node replaced by
    ``change(node)``, the node's CRC recomputed and the TOC framed again."""
    with msglc.LazyReader(data) as r:
        t = archive_of(r).opened.trailer
        toc = bytes(archive_of(r).read(t.toc_off, t.toc_len))
    pos, size = t.root_pos, t.root_len
    framed = frame_node(change(unframe_node(toc[pos : pos + size], pos)))
    toc = toc[:pos] + framed + toc[pos + size :]
    return _with_section(data, ff.build_section(ff.with_toc(sec, toc, (pos, len(framed)), [len(toc)])))


def test_a_page_of_a_paged_list_referenced_with_a_negative_size_is_corrupted(tmp_path):
    """A paged list's node (type 11) naming a page of -2**63 bytes sent a read of that many
    bytes to the file (fuzz 373:2423: the framed source passed a read that ends before the
    data on to the file unchecked), which the file refused as a truncation. A TOC item of no
    bytes or fewer lies outside the TOC, and no read outside the file is made."""
    data, sec = _zstd(list(range(5_000)), small_obj_optimization_threshold=8)
    with msglc.LazyReader(data) as r:
        root = archive_of(r).node(archive_of(r).opened.trailer.toc_off + sec.root[0], sec.root[1])
        assert isinstance(root, PagedListNode) and len(root.pages) > 1
        in_page_1 = root.firsts[1]
    for size in (-(2**63), -1, 0):
        crafted = _with_root(
            data,
            sec,
            lambda node, size=size: msgspec.structs.replace(
                node, pages=[node.pages[0], (node.pages[1][0], size), *node.pages[2:]]
            ),
        )
        path = tmp_path / "a.mlc"
        path.write_bytes(crafted)
        file = CountingFile(path)
        with pytest.raises(CorruptedError, match="outside the TOC"), msglc.LazyReader(file) as r:  # type: ignore[arg-type]
            r[in_page_1]
        assert all(0 <= at and 0 <= n and at + n <= len(crafted) for at, n in file.reads), file.reads


def test_fuse_node_with_a_negative_slot_width_is_corrupted():
    """A fuse-indexed dict's node (type 7) whose ``slot_bits`` is negative raised ValueError
    ("negative shift count") from the node's checks at open."""
    data, sec = _zstd({f"k{i:05}": i for i in range(1500)}, small_obj_optimization_threshold=1024)
    with msglc.LazyReader(data) as r:
        assert isinstance(
            archive_of(r).node(archive_of(r).opened.trailer.toc_off + sec.root[0], sec.root[1]), FuseMapNode
        )
    for bits in (-1, 0, 33):
        crafted = _with_root(data, sec, lambda node, bits=bits: msgspec.structs.replace(node, slot_bits=bits))
        with pytest.raises(CorruptedError, match="malformed"):
            msglc.LazyReader(crafted)


def test_verify_checks_the_checksums_of_raw_frames():
    """Reads take a raw frame's plain bytes in place, unchecked (as they take a plain
    archive's data bytes); verify() checks what they skip. A raw frame whose zstd checksum
    was damaged passed verify() (unless it lay in a read of 2 MB or more), while batched
    reads, which decompress frames, refused it; and ``zstd -d`` refuses the section."""
    blob, words = random.Random(1).randbytes(100_000), {f"w{i}": i for i in range(20_000)}  # (words: its index raw)
    value = {"head": list(range(30_000)), "blob": blob, "tail": "end" * 10, "words": words}
    data, sec = _zstd(value, small_obj_optimization_threshold=1024)
    spans = sec.spans(HEADER_SIZE)
    data_raw = next(b for a, b, lo, hi, i in spans if sec.frames[i].code == RAW and hi <= sec.data and b - a > 1000)
    toc_raw = next(b for a, b, lo, hi, i in spans if sec.frames[i].code == RAW and lo >= sec.data)
    for end in (data_raw, toc_raw):  # a frame of the data, a frame of the TOC
        damaged = bytearray(data)
        damaged[end - 1] ^= 0x10  # its checksum's last byte
        with msglc.LazyReader(bytes(damaged)) as r:
            assert r["tail"] == value["tail"] and r["blob"] == value["blob"]  # (in place: unchecked)
            with pytest.raises(CorruptedError, match="checksum"):
                r.verify()


_DICTIONARIES = textwrap.dedent(
    """
    import os, resource, sys
    import msglc
    path, margin = sys.argv[1], int(sys.argv[2])
    msglc.LazyReader(msglc.dumps(list(range(100)), compression="zstd")).to_obj()  # imports, arenas
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (size + margin, resource.getrlimit(resource.RLIMIT_AS)[1]))
    try:
        with msglc.LazyReader(path) as r:
            value = r.to_obj()
            r.verify()
            for f in r.frames():
                r.dictionary(f.dictionary)
    except MemoryError:
        sys.exit("MemoryError")
    print(len(value))
    """
)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc to size the limit")
def test_dictionaries_are_not_all_held_at_once(tmp_path):
    """Every dictionary a frame needed was kept for the reader's life: a file of a few KB whose
    frames name hundreds of dictionaries of the largest size a reader takes (one record of a
    few hundred bytes, named by every entry of the index) made to_obj() hold them all, here
    over 512 MB; they are kept now while they take at most 64 MB."""
    import zstandard

    from msglc.format.frames import MAX_DICT

    count = (512 << 20) // MAX_DICT + 1
    value = [i % 7 for i in range(4 * count)]
    data, sec = _zstd(value, small_obj_optimization_threshold=1 << 20)
    plain = msgspec.msgpack.encode(value)
    cuts = [len(plain) * k // count for k in range(count + 1)]
    frames = []
    for d in range(count):  # (compressed without it: a frame decompresses alike with any raw dictionary)
        frame = ff.compress(plain[cuts[d] : cuts[d + 1]], raw_ok=False)
        frame.dict = d + 1
        frames.append(frame)
    sec.frames = frames + sec.frames[sec.data_frames() :]
    sec.dicts = [
        (ff.dictionary_record(zstandard.ZstdCompressor(write_checksum=True).compress(bytes(MAX_DICT))), MAX_DICT)
    ]

    def every_frame_its_own(t: ff.Tables) -> None:
        t.dicts, t.ndicts = [list(t.dicts[0]) for _ in range(count)], count

    path = tmp_path / "dicts.mlc"
    path.write_bytes(_with_section(data, ff.build_section(sec, edit_index=every_frame_its_own)))
    assert path.stat().st_size < 64 << 10
    done = subprocess.run(
        [sys.executable, "-c", _DICTIONARIES, str(path), str(256 << 20)], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout.strip()) == (0, str(len(value))), done.stderr


def test_a_dictionary_larger_than_writers_make_is_refused():
    """A read that needs a frame loads its dictionary (and loads it again once it was let go
    of): dictionaries of up to 16 MB were taken, from records of a few hundred bytes, so that
    a small file whose frames take turns among a few dozen of them made each read of a frame
    decompress 16 MB (a fuzzer case ran past its 30 s walking one). Writers make them of 1 MB
    at most (``DICT_MAX``), and a reader now takes no larger: one costs a read no more than a
    frame does (``MAX_FRAME``)."""
    import zstandard

    from msglc.format.frames import MAX_DICT, MAX_FRAME
    from msglc.write.compress import DICT_MAX

    value = list(range(1000))
    data, sec = _zstd(value, small_obj_optimization_threshold=1 << 20)
    for size, refused in ((MAX_DICT, False), (MAX_DICT + 1, True), (16 << 20, True)):
        new = sec.copy()
        new.frames[0].dict = 1  # (compressed without it: decompresses alike with it)
        record = ff.dictionary_record(zstandard.ZstdCompressor(write_checksum=True).compress(bytes(size)))
        new.dicts = [(record, size)]
        archive = _with_section(data, ff.build_section(new))
        if refused:
            with pytest.raises(CorruptedError, match="dictionary"):
                msglc.LazyReader(archive)
        else:
            with msglc.LazyReader(archive) as r:
                assert r.to_obj() == value and len(r.dictionary(1)) == size
    assert DICT_MAX <= MAX_DICT <= MAX_FRAME


def _span_moved(s: Any, item: Any, k: int, delta: int) -> Any:
    """The ``toc`` mutation of sample ``s`` that moves the start of span ``k`` of the list
    node or page ``item`` by ``delta`` bytes (the TOC laid out again, every CRC recomputed)."""
    from tools.fuzz.layout import relayout
    from tools.fuzz.mutators import Mutation

    def edit(it: Any, node: Any, new_pos: Any, new_len: Any, here: int) -> bytes | None:
        if it is not item:
            return None
        offs = [*node.offs]
        offs[k] += delta
        return frame_node(msgspec.structs.replace(node, offs=offs))

    old = item.node.offs[k]
    desc = f"toc {type(item.node).__name__} at {item.pos}: offs[{k}]: {old} -> {old + delta}"
    items, root = s.toc
    return Mutation(relayout(s.data, items, root, edit), desc, "toc", crafted="toc")


def test_a_span_start_moved_into_an_item_is_the_documented_span_outcome():
    """A crafted TOC that moves where a span of one item starts, two bytes into a uint16 item,
    leaves its last byte: a fixint that frames exactly, read as the item. A read checks a
    span's items against its own bytes alone (docs/reliability.md, "Crafted files"), so this
    is the harness's documented ``span-crafted-toc``, not a bug; ``verify()`` refuses it."""
    from tools.fuzz.corpus import build_corpus
    from tools.fuzz.targets import classify, evaluate

    s = next(x for x in build_corpus() if x.kind == "appended-paged" and x.threshold == 8)
    items = s.toc[0]
    base = s.trailer.data_off  # (the root list's first byte: span offsets count from it)
    moved = None
    for it in items:
        if it.kind != "page":
            continue
        for k in range(len(it.node.starts) - 1):
            a, b = base + it.node.offs[k], base + it.node.offs[k + 1]
            one_uint16 = it.node.starts[k + 1] - it.node.starts[k] == 1 and b - a == 3 and s.data[a] == 0xCD
            if one_uint16 and s.data[b - 1] < 0x80:  # (its last byte alone: a fixint)
                moved = (it, k)
                break
        if moved:
            break
    assert moved is not None, "the corpus no longer has a span of one uint16 item in a page"
    page, k = moved
    mut = _span_moved(s, page, k, 2)
    i = page.node.starts[k]  # the item read: alone (``walk`` reads the one before it first, and fails)
    s = dataclasses.replace(s, paths=[i], expected=[s.truth[i]])
    cls, stages, _ = evaluate(s, mut)
    assert cls == "span-crafted-toc"
    assert isinstance(stages["verify"].error, CorruptedError)
    assert any(st.changed for st in stages.values())
    # only reads of that span alone are excused: a walk through the list reads the span
    # before it too, so a changed value there would still be a bug
    stages["walk"].error, stages["walk"].changed = None, True
    assert classify(s, mut, stages, s.truth)[0] == "wrong-outside-data"


def test_a_span_start_moved_onto_a_list_in_its_item_is_the_span_outcome_for_lookups_too():
    """The same edit as above, nine bytes into the one record of the last span of a list of
    records (one of the deltas the ``toc`` mutator draws): the span then holds the record's
    list, which frames exactly, so a path through the record to a key raises ``TypeError``
    instead of giving a changed value. That is the same documented ``span-crafted-toc``,
    not ``wrong-outside-data``; ``verify()`` refuses the archive."""
    from msglc.format.nodes import ListNode
    from tools.fuzz.corpus import build_corpus
    from tools.fuzz.targets import evaluate

    s = next(x for x in build_corpus() if x.name == "streamed@64")
    items = s.toc[0]
    records = next(it for it in items if it.kind == "node" and isinstance(it.node, ListNode) and it.node.n == 400)
    k = len(records.node.starts) - 1  # the last span: record 399 alone
    with msglc.LazyReader(s.data) as r:
        base = r["records"].location().offset
    last = s.data[base + records.node.offs[k] : base + records.node.offs[k + 1]]
    assert records.node.starts[k] == 399 and isinstance(msgspec.msgpack.decode(last[9:]), list), last

    mut = _span_moved(s, records, k, 9)
    s = dataclasses.replace(s, paths=["records/399/id"], expected=[s.truth["records"][399]["id"]])
    cls, stages, why = evaluate(s, mut)
    assert isinstance(stages["many"].error, TypeError), stages["many"].error
    assert isinstance(stages["verify"].error, CorruptedError)
    assert cls == "span-crafted-toc", why
