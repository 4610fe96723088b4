"""Archives whose checksums are valid but whose TOC lies about the data (crafted files), and
sources that are not plain archives: msglc errors, never wrong values, crashes or hangs."""

import gzip
import io
import os
import threading
import zlib

import msgspec
import pytest

import msglc
from msglc import CorruptedError, MsglcError
from msglc.format.hash_index import block_count, block_layout, block_width
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, Trailer, pack_header, unpack_trailer
from msglc.format.nodes import HashMapNode, frame_node, unframe_node
from msglc.write import encoder


def rewrite_root(data: bytes, change) -> bytes:
    """The archive with its root node replaced by ``change(node)``, all checksums valid."""
    header = data[:HEADER_SIZE]
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), header)
    root_at = t.toc_off + t.root_pos
    node = unframe_node(data[root_at : root_at + t.root_len], root_at)
    new = frame_node(change(node))
    toc = data[t.toc_off : root_at] + new
    fields = msgspec.structs.astuple(t)[:3] + (len(toc), t.root_pos, len(new)) + msgspec.structs.astuple(t)[6:]
    return data[: t.toc_off] + toc + Trailer(*fields).pack(pack_header())


def errors(data: bytes, *paths) -> None:
    """Every path, and verify(), must raise an MsglcError (opening reads the root node, so
    the open may raise it)."""
    for path in paths:
        with pytest.raises(MsglcError), msglc.LazyReader(data, cached=False) as r:
            r[path]
    with pytest.raises(MsglcError), msglc.LazyReader(data) as r:
        r.verify()


def test_inline_dict_keys_that_lie():
    data = msglc.dumps({"a": 1, "b": [2] * 200}, small_obj_optimization_threshold=64)
    swapped = rewrite_root(data, lambda n: msgspec.structs.replace(n, keys=["b", "a"]))
    errors(swapped, "a", "b")


def test_stride_dims_that_lie():
    data = msglc.dumps([[1.5, 2.5]] * 100, small_obj_optimization_threshold=64)
    wrong = rewrite_root(data, lambda n: msgspec.structs.replace(n, dims=[(3, 50, 38), (1, 4, 9)]))
    errors(wrong, "3/1")


def test_list_spans_that_lie():
    data = msglc.dumps([str(i) * (i % 4) for i in range(400)], small_obj_optimization_threshold=64)
    r = msglc.LazyReader(data)
    r.read()
    # shift one span boundary by one item: lazy reads of that span may misplace items, so
    # verify() must say so
    shifted = rewrite_root(
        data, lambda n: msgspec.structs.replace(n, starts=[n.starts[0], n.starts[1] + 1, *n.starts[2:]])
    )
    with msglc.LazyReader(shifted) as r, pytest.raises(CorruptedError):
        r.verify()
    more = rewrite_root(data, lambda n: msgspec.structs.replace(n, n=n.n + 1))
    errors(more, "5")


def test_hash_index_pointing_outside_the_toc():
    data = msglc.dumps({f"k{i}": i for i in range(2000)}, small_obj_optimization_threshold=256)
    for back in (-86508, 0, 10**9):
        errors(rewrite_root(data, lambda n, b=back: msgspec.structs.replace(n, index=(b, n.index[1]))), "k5")
    errors(rewrite_root(data, lambda n: msgspec.structs.replace(n, n=2**32 - 1)), "k5")


def test_kid_reference_with_bad_size():
    data = msglc.dumps({"big": list(range(3000)), "x": 1}, small_obj_optimization_threshold=64)
    errors(
        rewrite_root(
            data, lambda n: msgspec.structs.replace(n, kids={k: (back, -7) for k, (back, _) in n.kids.items()})
        ),
        "big/5",
    )


def test_deep_nesting_in_data():
    """A list nested 200,000 deep with no TOC (another writer's archive): valid msgpack, so
    verify() accepts it and to_obj() decodes it, stepping through the levels msgspec cannot
    reach (issue 29: what verify() accepts, reads decode)."""
    body = b"\x91" * 200_000 + b"\x01"
    header = pack_header()
    t = Trailer(HEADER_SIZE, len(body), HEADER_SIZE + len(body), 0, 0, 0, __import__("zlib").crc32(body), 64)
    with msglc.LazyReader(header + body + t.pack(header)) as r:
        r.verify()
        value = r.to_obj()
    for _ in range(200_000):
        (value,) = value
    assert value == 1


def test_closed_reader_refuses_everything(tmp_path):
    path = tmp_path / "a.mlc"
    msglc.dump(path, {"l": list(range(5000)), "d": {str(i): i for i in range(50)}}, small_obj_optimization_threshold=64)
    r = msglc.LazyReader(path)
    lst, d = r["l"], r["d"]
    lst[10], d["3"]  # cached now
    r.close()
    for use in (
        lambda: len(r),
        lambda: list(r.keys()),
        lambda: "l" in r,
        lambda: len(lst),
        lambda: lst[10],
        lambda: list(d),
        lambda: d["3"],
    ):
        with pytest.raises(ValueError):
            use()


def test_close_racing_reads(tmp_path):
    path = tmp_path / "a.mlc"
    msglc.dump(path, [[float(i)] * 100 for i in range(2000)], small_obj_optimization_threshold=64)
    r = msglc.LazyReader(path, cached=False)
    seen = []
    started = threading.Barrier(4)  # close while all three read (reads from a map keep the GIL)

    def work():
        try:
            for k in range(10_000_000):
                assert r[k % 2000][7] == float(k % 2000)
                if k == 100:
                    started.wait()
        except ValueError as e:
            seen.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    started.wait()
    r.close()
    for t in threads:
        t.join()
    assert len(seen) == 3  # every reader stopped with ValueError, none read a wrong value


def test_sources_that_are_not_plain_files(tmp_path):
    data = msglc.dumps({"a": list(range(100))}, small_obj_optimization_threshold=64)
    gz = tmp_path / "a.mlc.gz"
    with gzip.open(gz, "wb") as f:
        f.write(data)
    with gzip.open(gz, "rb") as f, msglc.LazyReader(f) as r:
        assert r["a/99"] == 99
    stream = io.BytesIO(b"junk" + data)
    stream.seek(4)
    with pytest.raises(MsglcError):  # reads the whole stream: the junk is part of it
        msglc.LazyReader(stream)
    assert stream.tell() == 4  # the caller's position is kept
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(TypeError, match="regular file"):
        msglc.LazyReader(fifo)  # refused at once, no hang waiting for a writer


def test_stride_rows_that_lie_about_their_items():
    """A node whose rows are said to hold 18 one-byte items, where the data's rows hold two
    floats: item 1 would read a float's first byte as the int 63. The view checks the first
    row's header against the node, in the read it makes anyway."""
    data = msglc.dumps([[1.5, 2.5]] * 100, small_obj_optimization_threshold=64)
    wrong = rewrite_root(data, lambda n: msgspec.structs.replace(n, dims=[(3, 100, 19), (1, 18, 1)]))
    errors(wrong, "3/1", "0")


def test_inline_dict_node_listing_a_key_twice():
    data = msglc.dumps({"a": 1, "b": [2] * 100}, small_obj_optimization_threshold=64)
    errors(rewrite_root(data, lambda n: msgspec.structs.replace(n, keys=["b", "b"])), "a", "b")


def _region_of_root(data: bytes):
    """(offset, node) of the root dict's index region and its node."""
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), data[:HEADER_SIZE])
    root_at = t.toc_off + t.root_pos
    node = unframe_node(data[root_at : root_at + t.root_len], root_at)
    assert isinstance(node, HashMapNode)
    return root_at - node.index[0], node


def test_block_index_that_lies_about_its_blocks(monkeypatch):
    """Block offsets that name the wrong bytes fail their CRC; with the CRC made to match they
    still give CorruptedError for the keys of the blocks they misplace, never a KeyError or
    another value."""
    monkeypatch.setattr(encoder, "DIRECT_INDEX", False)  # (dump writes type 10 since 1.4)
    import zlib

    doc = {f"key{i:05d}": f"value {i}" for i in range(3000)}
    data = msglc.dumps(doc)
    region, node = _region_of_root(data)
    assert type(node).__name__ == "BlockHashMapNode" and node.block_bits > 0
    entries = 1 << node.block_bits
    keys_of_block_1 = list(doc)[entries : 2 * entries]
    offsets = (block_count(node.n, node.block_bits) + 1) * node.offs_width
    for delta in (1, -1, 7):  # block 1 starts a few bytes off
        bad = bytearray(data)
        at = region + node.offs_width
        bad[at : at + 4] = (int.from_bytes(bad[at : at + 4], "little") + delta).to_bytes(4, "little")
        errors(bytes(bad), "key00000")
        crc = zlib.crc32(bad[region : region + offsets])
        fixed = rewrite_root(bytes(bad), lambda n, crc=crc: msgspec.structs.replace(n, offs_crc=crc))
        with msglc.LazyReader(fixed, cached=False) as r:
            for key in keys_of_block_1[:5]:
                with pytest.raises(CorruptedError):
                    r[key]
            intact = list(doc)[2 * entries]  # block 2: its offsets and bytes are as written
            assert r[intact] == doc[intact]
        with pytest.raises(CorruptedError), msglc.LazyReader(fixed) as r:
            r.verify()
    errors(rewrite_root(data, lambda n: msgspec.structs.replace(n, block_bits=40)), "key00005")
    errors(rewrite_root(data, lambda n: msgspec.structs.replace(n, block_bits=node.block_bits + 1)), "key00005")


def test_block_index_record_naming_a_block_past_the_end(monkeypatch):
    """A record (its page's and the table's CRCs made to match) naming a block the dict does
    not have: CorruptedError for the keys of that page that reach it."""
    monkeypatch.setattr(encoder, "DIRECT_INDEX", False)  # (dump writes type 10 since 1.4)
    import zlib

    doc = {f"key{i:05d}": i for i in range(3000)}
    data = msglc.dumps(doc)
    region, node = _region_of_root(data)
    blocks = block_count(node.n, node.block_bits)
    size = 1 + block_width(blocks)
    table, records, _ = block_layout(node.n, node.page_bits, node.offs_width, node.block_bits)
    bad = bytearray(data)
    slot = region + table  # page 0: its first record names block 0xFF.., its CRC and the table's fixed
    first, end = int.from_bytes(bad[slot : slot + 4], "little"), int.from_bytes(bad[slot + 8 : slot + 12], "little")
    recs = region + records + size * first
    bad[recs + 1 : recs + size] = b"\xff" * (size - 1)
    bad[slot + 4 : slot + 8] = zlib.crc32(bad[recs : region + records + size * end]).to_bytes(4, "little")
    bad[region + records - 4 : region + records] = zlib.crc32(bad[region + table : region + records - 4]).to_bytes(
        4, "little"
    )
    page0 = [k for k in doc if zlib.crc32(msgspec.msgpack.encode(k)) >> (32 - node.page_bits) == 0]
    with msglc.LazyReader(bytes(bad), cached=False) as r:
        outcomes = set()
        for key in page0:
            try:
                outcomes.add(r[key] == doc[key])
            except CorruptedError as e:
                assert "names block" in str(e)
                outcomes.add("corrupted")
        assert outcomes == {True, "corrupted"}


def _block_indexed(pairs, block_bits=4):
    """An archive of the map of ``pairs`` (duplicates allowed) with a type-6 root node whose
    index is what a writer computes from those entries, every CRC valid."""
    import zlib

    from msglc.format.hash_index import region_of_keys
    from msglc.format.msgpack import map_header
    from msglc.format.nodes import BlockHashMapNode

    data = bytearray(map_header(len(pairs)))
    koffs, key_raws = [], []
    for key, value in pairs:
        koffs.append(len(data))
        key_raws.append(msgspec.msgpack.encode(key))
        data += key_raws[-1] + msgspec.msgpack.encode(value)
    koffs.append(len(data))
    region = region_of_keys(key_raws, koffs, block_bits)
    toc = b"".join(bytes(part) for part in region.parts)
    node = BlockHashMapNode(
        n=len(pairs), starts=[0], offs=[koffs[0], koffs[-1]], kids={}, kid_keys={}, page_bits=region.page_bits,
        offs_width=region.width, offs_crc=region.offs_crc, index=(len(toc), len(toc)), block_bits=block_bits,
    )  # fmt: skip
    framed = frame_node(node)
    t = Trailer.contiguous(len(data), len(toc) + len(framed), (len(toc), len(framed)), zlib.crc32(data), 1024)
    return pack_header() + bytes(data) + toc + framed + t.pack(pack_header())


def test_verify_refuses_a_hash_indexed_dict_holding_a_key_twice():
    """Lookups would answer one of the two values and to_obj() the other: verify() says so."""
    pairs: list[tuple[str, int | str]] = [(f"k{i:05d}", i) for i in range(2000)]
    with msglc.LazyReader(_block_indexed(pairs)) as r:
        r.verify()
        assert r["k01500"] == 1500
    pairs[1500] = ("k00003", "again")
    with msglc.LazyReader(_block_indexed(pairs)) as r, pytest.raises(CorruptedError, match="twice"):
        r.verify()


def test_hash_dict_naming_one_large_value_under_two_keys():
    """A span holds one entry: a TOC that names a large value under a second key of the same
    length must not give that value for the second key, whichever is looked up first (the
    view of the first is kept for reuse)."""
    doc = {f"k{i}": i for i in range(3000)} | {"a1": list(range(3000)), "b1": list(range(5000, 8000))}
    data = msglc.dumps(doc, small_obj_optimization_threshold=256)

    def alias(n):
        return msgspec.structs.replace(n, kid_keys={**n.kid_keys, "c1": n.kid_keys["a1"]})

    crafted = rewrite_root(data, alias)
    for cached in (False, True):
        with pytest.raises(MsglcError), msglc.LazyReader(crafted, cached=cached) as r:
            assert r["a1"][5] == 5
            r["c1"]
    errors(crafted, "c1", "a1")


def test_a_node_with_a_field_more_or_less_is_refused():
    """A node holds exactly the fields its type lists (docs/format.md, "Framing"): one with a
    trailing field more, or one fewer, is corrupted, as the JavaScript reader says too."""
    data = msglc.dumps({"a": [1] * 300, "b": 2}, small_obj_optimization_threshold=64)
    header = data[:HEADER_SIZE]
    t = unpack_trailer(data[-TRAILER_SIZE:], len(data), header)
    root_at = t.toc_off + t.root_pos
    payload = msgspec.msgpack.decode(data[root_at : root_at + t.root_len - 4])
    for changed in ([*payload, 0], payload[:-1]):
        body = msgspec.msgpack.encode(changed)
        new = body + zlib.crc32(body).to_bytes(4, "little")
        toc = data[t.toc_off : root_at] + new
        fields = msgspec.structs.astuple(t)[:3] + (len(toc), t.root_pos, len(new)) + msgspec.structs.astuple(t)[6:]
        crafted = data[: t.toc_off] + toc + Trailer(*fields).pack(pack_header())
        with pytest.raises(CorruptedError, match="malformed"):
            msglc.LazyReader(crafted)
