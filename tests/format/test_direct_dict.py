"""Big dicts of plain archives (1.4): the direct index (node type 10), whose records name each
key's entry by its offset, so that a lookup is one read of records and one of the entry."""

import random
import struct
import zlib
from typing import Any

import msgspec
import numpy as np
import pytest
from outcomes import traced_growth

import msglc
from msglc import CorruptedError, LazyStats
from msglc.format import direct
from msglc.format.fuse import base_hash, mix
from msglc.format.layout import HEADER_SIZE
from msglc.format.nodes import DirectMapNode, frame_node, unframe_node
from msglc.read.part import archive_of
from msglc.util import accel

N = 6000


def _doc(rng: random.Random) -> dict[str | int, object]:
    doc: dict[str | int, object] = {f"key{i}": f"value {i}" * (i % 5) for i in range(N)}
    doc.update({i * 7919: [i] * (i % 9) for i in range(N)})  # int keys next to str keys
    doc["large"] = {"nested": list(range(3000))}  # a value with a node of its own
    doc["long"] = "z" * 50_000  # a scalar longer than what a lookup reads
    doc["rows"] = np.arange(4000.0).reshape(2000, 2)
    rng.shuffle(keys := list(doc))
    return {k: doc[k] for k in keys}


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    doc = _doc(random.Random(1))
    path = tmp_path_factory.mktemp("d") / "direct.mlc"
    msglc.dump(path, doc, small_obj_optimization_threshold=1024)
    return path, doc


def _node(r: msglc.LazyReader) -> DirectMapNode:
    """The root node, a direct-indexed dict."""
    a = archive_of(r)
    t = a.opened.trailer
    node = a.node(t.toc_off + t.root_pos, t.root_len)
    assert isinstance(node, DirectMapNode)
    return node


def _region(r: msglc.LazyReader) -> int:
    """Where the root dict's index region starts."""
    t = archive_of(r).opened.trailer
    return t.toc_off + t.root_pos - _node(r).index[0]


def _same(a, b) -> bool:
    return bool(np.array_equal(a, b)) if isinstance(b, np.ndarray) else a == b


@pytest.mark.parametrize("pure", [False, True], ids=["c", "python"])
def test_every_key_is_found_and_absent_ones_are_not(big, monkeypatch, pure):
    if pure:
        monkeypatch.setattr(accel, "speedups", None)
    path, doc = big
    with msglc.LazyReader(path, cached=False) as r:
        _node(r)
        root = r.read()
        for k in doc:
            assert _same(msglc.to_obj(root[k]), doc[k]), k
            assert k in root
        for missing in ("key-1", "key6000", -1, 7919 * N, 2**70, "", "large2"):
            assert missing not in root
            with pytest.raises(KeyError):
                root[missing]
        assert list(root) == list(doc)  # iteration keeps the stored order, by spans
        r.verify()


def test_c_and_python_paths_write_identical_archives(monkeypatch):
    """The C accelerator changes speed only: the Python path writes the same type-10 bytes."""
    rng = random.Random(7)
    for doc in (_doc(rng), {f"k{i}": rng.random() for i in range(1025)}, {i: b"\0" * (i % 300) for i in range(5000)}):
        for threshold in (0, 64, 8192):
            fast = msglc.dumps(doc, small_obj_optimization_threshold=threshold)
            monkeypatch.setattr(accel, "speedups", None)
            slow = msglc.dumps(doc, small_obj_optimization_threshold=threshold)
            monkeypatch.undo()
            assert fast == slow
            with msglc.LazyReader(fast) as r:
                _node(r)


def test_the_region_is_what_the_spec_builds():
    """The writer's region, groups and bounds are ``format.direct.build`` of the keys, which
    follows docs/format.md line by line (hash, sort, estimate, records, chunks)."""
    doc = {f"w{i * 31 % 9973}-{i}": i % 97 for i in range(9000)}
    data = msglc.dumps(doc)
    with msglc.LazyReader(data) as r:
        node = _node(r)
        stored = archive_of(r).read(_region(r), node.index[1])
    encodings = [msgspec.msgpack.encode(k) for k in doc]
    offs, at = [], 3  # a map16 header
    for k, v in doc.items():
        offs.append(at)
        at += len(msgspec.msgpack.encode(k)) + len(msgspec.msgpack.encode(v))
    offs.append(at)
    shape = direct.writer_shape(len(doc), at)
    built = direct.build([mix(base_hash(e), 0) for e in encodings], offs, set(), shape)
    assert bytes(stored) == built.region
    assert (node.page_bits, node.offs_width, node.off_bits, node.chunk) == shape
    assert (node.groups, node.lo, node.hi, node.entry_read) == (built.groups, built.lo, built.hi, built.entry_read)
    assert shape.group_bits == 3 and shape.width * 8 - shape.off_bits >= 16  # 9000 keys: 8 groups


def test_a_first_lookup_reads_records_then_the_entry(big):
    """Two reads for a key on a fresh reader (its window's chunks, then its entry; the node is
    read with the root), one for a key whose chunks were read before; and a long value is
    read whole, whatever the read size the node suggests."""
    path, doc = big
    stats = LazyStats()
    with msglc.LazyReader(path, counter=stats, cached=False) as r:
        root = r.read()
        stats.clear()
        assert root["key17"] == doc["key17"]
        assert stats.requests == 2
        stats.clear()
        assert root["key17"] == doc["key17"]
        assert stats.requests == 1
        assert _node(r).entry_read < 1000 and root["long"] == doc["long"]


def test_a_damaged_chunk_or_entry_is_reported_not_misread(big, monkeypatch):
    """A flipped byte in a chunk of records fails its CRC, for the keys whose window reads it;
    an entry whose key was changed is a key that no longer has its record's fingerprint."""
    path, doc = big
    data = bytearray(path.read_bytes())
    with msglc.LazyReader(bytes(data)) as r:
        _node(r)
        region = _region(r)
        base = r.read().location().offset
    bad = bytearray(data)
    bad[region + 10] ^= 0x40  # in the first chunk's records
    hit = 0
    for pure in (False, True):
        with pytest.MonkeyPatch.context() as m:
            if pure:
                m.setattr(accel, "speedups", None)
            with msglc.LazyReader(bytes(bad), cached=False) as r:
                for k in list(doc)[:3000]:
                    try:
                        value = r[k]
                    except CorruptedError as e:
                        assert "checksum" in str(e)
                        hit += 1
                    else:
                        assert _same(msglc.to_obj(value), doc[k])
    assert hit >= 2
    key = next(k for k in doc if isinstance(k, str) and k.startswith("key1") and len(k) == 7)
    at = bytes(data).index(msgspec.msgpack.encode(key), base)
    bad = bytearray(data)
    bad[at + 4] ^= 0x01  # "key1..." -> "kez1..."? a byte of the key: another key, same length
    for pure in (False, True):
        with pytest.MonkeyPatch.context() as m:
            if pure:
                m.setattr(accel, "speedups", None)
            with msglc.LazyReader(bytes(bad), cached=False) as r, pytest.raises(CorruptedError, match="direct index"):
                r[key]


def _renode(data: bytes, **changes) -> bytes:
    """``data`` with its root node (a type-10 dict, the TOC's last) rewritten with
    ``changes``, the trailer made to match."""
    with msglc.LazyReader(data) as r:
        t = archive_of(r).opened.trailer
    pos, size = t.toc_off + t.root_pos, t.root_len
    node = unframe_node(data[pos : pos + size], pos)
    framed = frame_node(msgspec.structs.replace(node, **changes))
    trailer = msgspec.structs.replace(t, toc_len=t.toc_len - size + len(framed), root_len=len(framed))
    return data[:pos] + framed + trailer.pack(data[:HEADER_SIZE])


@pytest.mark.parametrize(
    "changes",
    [
        {"page_bits": 27},
        {"offs_width": 9},
        {"off_bits": 0},
        {"chunk": -100},
        {"lo": -1},
        {"entry_read": -1},
        {"offs_crc": "wrong"},
    ],
    ids=str,
)
def test_a_node_whose_fields_do_not_fit_is_refused(changes):
    doc = {f"k{i}": i for i in range(3000)}
    data = msglc.dumps(doc)
    if changes.get("offs_crc") == "wrong":  # the groups' CRC, another of the same size
        with msglc.LazyReader(data) as r:
            changes = {"offs_crc": _node(r).offs_crc ^ 1}
    crafted = _renode(data, **changes)
    with pytest.raises(CorruptedError), msglc.LazyReader(crafted, cached=False) as r:
        r["k5"]


def test_groups_that_do_not_rise_or_end_at_n_are_refused():
    doc = {f"k{i}": i for i in range(5000)}
    data = msglc.dumps(doc)
    with msglc.LazyReader(data) as r:
        groups = _node(r).groups
    firsts = list(struct.unpack(f"<{len(groups) // 4}I", groups))
    for bad in ([firsts[0], firsts[2], firsts[1], *firsts[3:]], [*firsts[:-1], firsts[-1] - 1]):
        packed = struct.pack(f"<{len(bad)}I", *bad)
        crafted = _renode(data, groups=packed, offs_crc=zlib.crc32(packed))
        with pytest.raises(CorruptedError), msglc.LazyReader(crafted, cached=False) as r:
            r["k5"]


def test_verify_finds_an_index_that_is_not_the_writers(big):
    """A window wider than the writer's still finds every key, but is not what the writer
    writes: ``verify`` says so."""
    path, doc = big
    data = path.read_bytes()
    with msglc.LazyReader(data) as r:
        node = _node(r)
    with msglc.LazyReader(_renode(data, hi=node.hi + 1)) as r:
        assert r["key7"] == doc["key7"]
        with pytest.raises(CorruptedError, match="direct index"):
            r.verify()


def test_a_node_cannot_make_a_lookup_read_or_allocate_much(monkeypatch):
    """A crafted ``entry_read`` of a terabyte: a lookup in a dict of 600 KB still reads
    less than 200 KB and answers."""
    doc = {f"k{i}": "v" * 10 for i in range(30000)}
    crafted = _renode(msglc.dumps(doc), entry_read=1 << 40)
    for pure in (False, True):
        with pytest.MonkeyPatch.context() as m:
            if pure:
                m.setattr(accel, "speedups", None)
            stats = LazyStats()
            with msglc.LazyReader(crafted, counter=stats, cached=False) as r:
                root = r.read()
                stats.clear()
                assert root["k5"] == "v" * 10 and "k30000" not in root
                assert stats.bytes < 3 * 65536 + 4096


def test_the_index_costs_a_few_bytes_per_key():
    """About fingerprint and offset a key: 5 or 6 bytes for dicts of up to a few hundred MB
    (the block index's 3.4 bought a third read; compressed archives keep their fuse's 1.3)."""
    for n in (2000, 20000, 200_000):
        doc = {f"k{i:07d}": f"v{i * 7919 % 100_003}" for i in range(n)}
        plain = len(msgspec.msgpack.encode(doc))
        archive = msglc.dumps(doc)
        assert len(archive) - plain <= 6 * n + 4 * n // 200 + 8300, n


def test_c_and_python_lookups_make_the_same_reads(tmp_path):
    """A value longer than a lookup's first read (a str, bytes, a NumPy array, a list, a float
    after a long key, a dict whose last item is a long str) costs the same reads in C as in
    Python: the reads the JavaScript reader makes. The C probe once read a MB on where the
    headers give the end."""
    doc: dict[str, object] = {f"k{i}": "v" * 20 for i in range(5000)}
    doc |= {"str": "z" * 50_000, "bin": b"y" * 70_000, "list": list(range(1000)), "array": np.arange(3000.0)}
    doc |= {"a-key-longer-than-the-first-read-" + "x" * 40: 2.5, "bio": {"id": 1, "text": "y" * 5000}}
    doc["huge"] = list(range(2**16, 2**16 + 380_000))  # 1.9 MB: past a second read of 1 MB
    path = tmp_path / "long.mlc"
    msglc.dump(path, doc, small_obj_optimization_threshold=1 << 21)
    keys = ["str", "bin", "list", "array", "huge", "k5", "bio", next(k for k in doc if k.startswith("a-key"))]
    reads = {}
    for pure in (False, True):
        with pytest.MonkeyPatch.context() as m:
            if pure:
                m.setattr(accel, "speedups", None)
            for key in keys:
                stats = LazyStats()
                with msglc.LazyReader(path, counter=stats, cached=False) as r:
                    root = r.read()
                    stats.clear()
                    assert _same(root[key], doc[key])
                    first = (stats.requests, stats.bytes)
                    stats.clear()
                    assert _same(root[key], doc[key])
                    reads[pure, key] = (first, (stats.requests, stats.bytes))
    assert all(reads[False, k] == reads[True, k] for k in keys), reads
    assert reads[False, "k5"][0][0] == 2 and reads[False, "k5"][1][0] == 1
    assert reads[False, "str"][0][0] == 3 and reads[False, "str"][1][0] == 2


def test_streamed_big_dicts_get_the_direct_index_in_plain_archives_only():
    """``LazyWriter`` indexes a big dict as ``dump`` does: type 10 in a plain archive (its
    lookups then take two reads), type 6 in a compressed one (it has no fuse)."""
    import io

    from msglc import LazyWriter, Pairs
    from msglc.format.nodes import BlockHashMapNode

    cases: list[tuple[dict[str, Any], type]] = [({}, DirectMapNode), ({"compression": "zstd"}, BlockHashMapNode)]
    for options, kind in cases:
        out = io.BytesIO()
        with LazyWriter(out, **options) as w:
            w.write(Pairs((f"p{i}", [i]) for i in range(5000)))
        with msglc.LazyReader(out.getvalue()) as r:
            a = archive_of(r)
            t = a.opened.trailer
            assert type(a.node(t.toc_off + t.root_pos, t.root_len)) is kind
            assert r["p4321"] == [4321] and "p5000" not in r
            r.verify()


def _one_chunk(data: bytes, chunk: int) -> bytes:
    """``data`` (a type-10 root dict) with its region laid out again as one chunk, its CRC
    right, and the node's ``chunk`` set to ``chunk`` (n or more: the same layout)."""
    with msglc.LazyReader(data) as r:
        t = archive_of(r).opened.trailer
    pos, size = t.toc_off + t.root_pos, t.root_len
    node = unframe_node(data[pos : pos + size], pos)
    assert isinstance(node, DirectMapNode)
    back, length = node.index
    start, width = pos - back, node.offs_width
    old, records, left, at = data[start : start + length], b"", node.n, 0
    while left:
        k = min(node.chunk, left)
        records += old[at : at + k * width]
        at, left = at + k * width + 4, left - k
    region = records + zlib.crc32(records).to_bytes(4, "little")
    gap = data[start + length : pos]
    new_pos = start + len(region) + len(gap)
    framed = frame_node(msgspec.structs.replace(node, chunk=chunk, index=(new_pos - start, len(region))))
    trailer = msgspec.structs.replace(
        t, toc_len=new_pos + len(framed) - t.toc_off, root_pos=new_pos - t.toc_off, root_len=len(framed)
    )
    return data[:start] + region + gap + framed + trailer.pack(data[:HEADER_SIZE])


@pytest.mark.parametrize("chunk", [2000, 2**63 - 1, 2**63, 2**64 - 1], ids=hex)
def test_a_chunk_of_any_size_past_n_is_the_one_chunk(chunk):
    """The spec allows any ``chunk`` of at least 1; one of n or more is one chunk, whatever its
    size (the C probe once overflowed its chunk count there, or refused the number)."""
    doc = {f"k{i}": i for i in range(2000)}
    data = _one_chunk(msglc.dumps(doc), chunk)
    for pure in (False, True):
        with pytest.MonkeyPatch.context() as m:
            if pure:
                m.setattr(accel, "speedups", None)
            with msglc.LazyReader(data, cached=False) as r:
                assert r["k5"] == 5 and r["k1999"] == 1999 and "k2000" not in r


def test_hashes_alike_in_their_top_bits_are_sorted_as_the_spec_sorts_them():
    """Keys whose hashes share the bits the build's radix passes sort by (keys can be chosen
    so: CRC-32 is affine and the mix invertible) leave long runs to sort: the order is still
    (hash, entry), as ``format.direct.build`` has it."""
    from msglc.format.fuse import MASK64

    speedups = accel.speedups
    assert speedups is not None
    n = 3000
    inverse = (pow(0xC4CEB9FE1A85EC53, -1, 1 << 64), pow(0xFF51AFD7ED558CCD, -1, 1 << 64))

    def unmix(h: int) -> int:  # the base hash that ``mix(base, 0)`` takes to h
        x = (h ^ (h >> 33)) * inverse[0] & MASK64
        x = ((x ^ (x >> 33)) * inverse[1]) & MASK64
        return x ^ (x >> 33)

    rng = random.Random(3)
    hashes = [(0x2D2D2D2D2D2 << 22) | rng.getrandbits(22) for _ in range(n)]  # 42 bits alike: one run
    hashes[7] = hashes[9]  # two equal: by entry
    bases = [unmix(h) for h in hashes]
    assert [mix(b, 0) for b in bases] == hashes
    offs = list(range(3, 3 + 10 * (n + 1), 10))
    shape = direct.writer_shape(n, offs[-1])
    packed = b"".join(b.to_bytes(8, "little") for b in bases)
    offs_bytes = b"".join(o.to_bytes(4, "little") for o in offs)
    assert speedups.direct_build(packed, offs_bytes, 4, b"", *shape) == tuple(direct.build(hashes, offs, set(), shape))


def test_a_dict_too_big_for_8_byte_records_gets_a_block_index(monkeypatch):
    """A dict of 2**48 bytes or more would need records of 9 bytes, which readers refuse: it
    gets type 6 (here a small dict made to look that big to the writer)."""
    from msglc.format.nodes import BlockHashMapNode

    real = direct.writer_shape
    monkeypatch.setattr(direct, "writer_shape", lambda n, length: real(n, length)._replace(width=9))
    data = msglc.dumps({f"k{i}": i for i in range(3000)})
    monkeypatch.undo()
    with msglc.LazyReader(data) as r:
        a = archive_of(r)
        t = a.opened.trailer
        assert type(a.node(t.toc_off + t.root_pos, t.root_len)) is BlockHashMapNode
        assert r["k2999"] == 2999 and "k3000" not in r
        r.verify()


@pytest.mark.skipif(accel.speedups is None, reason="the C probe keeps the records")
def test_lookups_and_in_keep_the_record_chunks_once():
    """A chunk of records, once read and checked, is kept once (up to ``RECORDS_KEPT`` a
    dict): ``in`` and the Python path's lookups take the window's records from the C probe,
    so a dict looked up with both ``[]`` and ``in`` holds its records once, not twice."""
    from msglc.read.dict_index import DirectIndex

    n = 200_000
    keys = random.Random(3).sample(range(n), 20_000)
    with msglc.LazyReader(msglc.dumps({f"k{i}": i for i in range(n)}), cached=False) as r:
        root = r.read()
        assert root["k0"] == 0
        index = root.loaded_index()
        assert isinstance(index, DirectIndex) and index.probe is not None
        records = index.shape.width * n

        def lookups():
            for i in keys:
                assert root[f"k{i}"] == i

        def contains():
            for i in [*keys, *range(n, n + 2000)]:
                assert (f"k{i}" in root) == (i < n)

        by_lookups, by_in = traced_growth(lookups, contains)
    assert by_lookups > records / 2, (by_lookups, records)  # the records kept by the lookups
    assert by_in < records / 8, (by_in, records)  # and not again by ``in``


@pytest.mark.parametrize("pure", [False, True], ids=["c", "python"])
def test_windows_wider_than_a_c_lookup_reads_keep_their_chunks_once(monkeypatch, pure):
    """Bounds that make a window span more than the 8 chunks a C lookup reads (9 here; a
    writer's windows span two or three) send its lookups to the Python path, which takes
    the window's records from the probe too: the dict keeps its records once, not once in
    the probe and again in ``DirectIndex`` (twice, before), and once every key was asked a
    lookup reads entries only."""
    import tracemalloc

    if pure:
        monkeypatch.setattr(accel, "speedups", None)
    n = 2000
    data = msglc.dumps({f"k{i}": "v" * 40 for i in range(n)})
    with msglc.LazyReader(data) as r:
        node = _node(r)
    assert (node.page_bits, node.offs_width, node.chunk) == (0, 5, 204)  # one group of 10 chunks
    chunk_bytes = node.offs_width * node.chunk
    stats = LazyStats()
    with msglc.LazyReader(_renode(data, lo=4 * node.chunk, hi=4 * node.chunk), counter=stats, cached=False) as r:
        root = r.read()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(n):
                assert root[f"k{i}"] == "v" * 40 and f"k{i}" in root
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        for i in range(n):
            for ask in (lambda k: root[k], lambda k: k in root):
                stats.clear()
                assert ask(f"k{i}")
                assert stats.bytes < chunk_bytes, (i, stats.bytes)  # entries, no chunk of records
    assert kept < 1.3 * node.offs_width * n, (kept, node.offs_width * n)
