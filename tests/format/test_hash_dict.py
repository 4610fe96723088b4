"""Dicts too large for an inline key list: the block hash index (node type 6), collisions,
large values. ``dump`` writes the direct index (type 10, tests/format/test_direct_dict.py) in
plain archives since 1.4; these tests have it write type 6, which streamed, combined and
appended archives still get."""

import random
import zlib

import msgspec
import numpy as np
import pytest
from outcomes import BytesReads, dict_entries, traced_growth

import msglc
from msglc.format import hash_index
from msglc.format.hash_index import BLOCK_BYTES
from msglc.read import dict_index
from msglc.read.stats import LazyStats
from msglc.util import accel
from msglc.write import encoder

N = 5000


@pytest.fixture(scope="module", autouse=True)
def _block_index():
    with pytest.MonkeyPatch.context() as m:
        m.setattr(encoder, "DIRECT_INDEX", False)
        yield


def _colliding_keys():
    """Two str keys whose msgpack encodings have the same CRC-32 (found deterministically)."""
    seen: dict[int, str] = {}
    enc = msgspec.msgpack.encode
    rng = random.Random(0)
    for _ in range(400_000):
        key = f"c{rng.getrandbits(48):012x}"
        h = zlib.crc32(enc(key))
        if h in seen:
            return seen[h], key
        seen[h] = key
    raise AssertionError("no collision found")


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    a, b = _colliding_keys()
    doc: dict[str | int, object] = {f"key{i}": f"value {i}" for i in range(N)}
    doc.update({i: i * i for i in range(N)})  # int keys next to str keys
    doc[a] = "first of a CRC collision"
    doc[b] = "second of a CRC collision"
    doc["large"] = {"nested": list(range(3000))}  # a value with a node of its own
    doc["rows"] = [[1.5, 2.5]] * 2000
    path = tmp_path_factory.mktemp("h") / "big.mlc"
    msglc.dump(path, doc, small_obj_optimization_threshold=1024)
    return path, doc, (a, b)


def test_lookups(big):
    path, doc, (a, b) = big
    with msglc.LazyReader(path, cached=False) as r:
        root = r.read()
        assert type(root).__name__ == "LazyHashDict"
        for k in [*(f"key{i}" for i in range(0, N, 97)), *range(0, N, 89), a, b, "large", "rows"]:
            assert r[k] == doc[k], k
        assert r["large/nested/2999"] == 2999
        assert r["rows/1999/1"] == 2.5
        assert r[a] != r[b]
        for missing in ("key-1", N + 1, "c-none", -5):
            with pytest.raises(KeyError):
                r[missing]
            assert missing not in r
        with pytest.raises(TypeError):
            r[1.0]
        with pytest.raises(TypeError):
            r[True]


def test_iteration_order_and_equality(big):
    path, doc, _ = big
    with msglc.LazyReader(path) as r:
        assert list(r.keys()) == list(doc)
        assert len(r) == len(doc)
        assert [v for v in r.values()][:5] == list(doc.values())[:5]
        assert r.read() == doc
        assert r.to_obj() == doc


def test_one_lookup_reads_little(big):
    path, doc, _ = big
    stats = LazyStats()
    with msglc.LazyReader(path, counter=stats, cached=False) as r:
        r["key1"]  # loads the root node, the block offsets and the page table
        stats.clear()
        assert r["key4321"] == "value 4321"
        # the page's records, the block (about BLOCK_BYTES)
        assert stats.bytes < 200 + 2 * BLOCK_BYTES, str(stats)
        assert stats.calls <= 2


@pytest.mark.skipif(accel.speedups is None, reason="the C accelerator is not built")
@pytest.mark.parametrize("threshold", [64, 1024, 8192, 1 << 20])
def test_c_and_python_paths_write_identical_archives(threshold, monkeypatch):
    """The optional C accelerator must change speed only, never a byte."""
    rng = random.Random(threshold)
    docs: list[dict[str | int, object]] = [
        {f"k{i}": rng.random() for i in range(1025)},
        {**{i * 7919: str(i) for i in range(3000)}, **{f"s{i}": [i] * (i % 50) for i in range(3000)}},
        {f"big{i}": {"rows": [[float(j)] * 3 for j in range(20)], "x": list(range(i % 97))} for i in range(1100)},
        {str(i): {"nested": {f"n{j}": j for j in range(1500)}} if i % 500 == 0 else i for i in range(2500)},
        {(-1) ** i * i: b"\x00" * (i % 300) for i in range(5000)},
        {
            **{f"arr{i}": np.arange(i % 300, dtype="<f8").reshape(-1, 1) for i in range(1500)},
            "big": np.ones((300, 300)),
        },
        {
            "records": [{"id": i, "x": rng.random(), "v": [i] * (i % 70)} for i in range(20000)],
            "arrays": [np.arange(i) for i in range(300)],
        },
    ]
    for doc in docs:
        fast = msglc.dumps(doc, small_obj_optimization_threshold=threshold)
        monkeypatch.setattr(accel, "speedups", None)
        slow = msglc.dumps(doc, small_obj_optimization_threshold=threshold)
        monkeypatch.undo()
        assert fast == slow
        with msglc.LazyReader(fast) as r:
            r.verify()
            key = list(doc)[len(doc) // 2]
            assert msglc.dumps(msglc.to_obj(r[[key]])) == msglc.dumps(doc[key])  # same value, arrays included


def _other_page(key, d):
    """A key of ``d`` in another hash page than ``key`` (the top bit of its CRC-32 differs)."""
    top = zlib.crc32(msgspec.msgpack.encode(key)) >> 31
    return next(k for k in d if zlib.crc32(msgspec.msgpack.encode(k)) >> 31 != top)


def test_keys_with_equal_hashes_are_probed_in_record_order():
    """Two keys whose encodings have the same CRC-32 share a page run and a fingerprint: each
    costs what any key costs (its page's records and its block; the block offsets and page
    table are read once, by the first lookup; a page's records are kept, so a key's second
    lookup reads its block alone), and damage to one's entry is reported for it without
    disturbing the other."""
    first, second = "s29685295", "s32060020"  # crc32 of their msgpack encodings collide
    assert zlib.crc32(msgspec.msgpack.encode(first)) == zlib.crc32(msgspec.msgpack.encode(second))
    d = {f"k{i}": i for i in range(3000)} | {first: "A", second: "B"}
    data = msglc.dumps(d)
    requests = {}
    for key in (first, second, "k5"):
        stats = LazyStats()
        with msglc.LazyReader(data, counter=stats, cached=False) as r:
            r[_other_page(key, d)]
            stats.clear()
            assert r[key] == d[key]
            once = stats.requests
            stats.clear()
            assert r[key] == d[key]
            requests[key] = (once, stats.requests)
    assert requests == {first: (2, 1), second: (2, 1), "k5": (2, 1)}
    with msglc.LazyReader(data) as r:
        where = r.read().location()
    bad = bytearray(data)
    at = bad.index(msgspec.msgpack.encode(second), where.offset)  # the second entry's key
    bad[at + 1] ^= 0x20  # another key now: its record no longer matches it
    with msglc.LazyReader(bytes(bad)) as r:
        assert r[first] == "A"
        with pytest.raises(msglc.CorruptedError, match="does not match its hash index"):
            r[second]


def test_pure_python_block_lookups_agree_with_c(big, monkeypatch):
    """Without the C accelerator, entries are found in a block by decoding it as raw items:
    the same answers, absent keys and collisions included."""
    path, doc, (a, b) = big
    monkeypatch.setattr(accel, "speedups", None)
    with msglc.LazyReader(path, cached=False) as r:
        for k in [*(f"key{i}" for i in range(0, N, 131)), *range(0, N, 113), a, b, "large"]:
            assert r[k] == doc[k], k
        for missing in ("key-1", N + 1, "c-none"):
            with pytest.raises(KeyError):
                r[missing]


@pytest.mark.parametrize("n", [1025, 20_000])
def test_the_index_costs_a_few_bytes_per_key(n, tmp_path):
    """Cold storage is paid by the byte: a big dict's index (block offsets, page table,
    records of a fingerprint byte and a block number) costs at most 4 bytes per key."""
    doc = {f"k{i:07d}": f"v{i * 7919 % 100_003}" for i in range(n)}
    plain = len(msgspec.msgpack.encode(doc))
    archive = msglc.dumps(doc)
    assert len(archive) - plain <= 4 * n + 300
    with msglc.LazyReader(archive) as r:
        assert r[f"k{n - 1:07d}"] == doc[f"k{n - 1:07d}"]


def test_a_lookup_never_reads_a_large_value_beside_its_key(tmp_path):
    """A value with a node of its own may share a block with small ones: looking up a small one
    reads the rest of the block around it, not the large value."""
    doc: dict[str, int | list[int]] = {f"k{i:05d}": i for i in range(3000)}
    keys = list(doc)
    doc[keys[100]] = list(range(300_000))  # about 1.5 MB, in the block of keys 96..127
    path = tmp_path / "big-neighbour.mlc"
    msglc.dump(path, doc)
    for pure in (False, True):
        with pytest.MonkeyPatch.context() as m:
            if pure:
                m.setattr(accel, "speedups", None)
            stats = LazyStats()
            with msglc.LazyReader(path, counter=stats, cached=False) as r:
                r["k00000"]  # the root node and the index tables
                for key in (keys[99], keys[101], keys[127], keys[96]):
                    stats.clear()
                    assert r[key] == doc[key]
                    assert stats.bytes < 4 * BLOCK_BYTES, str(stats)
                with pytest.raises(KeyError):
                    r["k-none"]
                assert r[keys[100]][299_999] == 299_999
                r.verify()


@pytest.mark.skipif(accel.speedups is None, reason="the pure-Python path refuses such nesting with an msglc error")
def test_a_deeply_nested_neighbour_does_not_break_lookups():
    """A small value nested 3000 deep inside a block: with the C accelerator, the other keys
    and misses of its block are answered as usual (items are skipped without recursion)."""
    import sys

    deep: list[object] = [1]
    for _ in range(3000):
        deep = [deep]
    doc: dict[str, object] = {f"k{i:05d}": i for i in range(2000)}
    doc["deep"] = deep
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        data = msglc.dumps(doc)
    finally:
        sys.setrecursionlimit(limit)
    with msglc.LazyReader(data, cached=False) as r:
        assert all(r[k] == doc[k] for k in doc if k != "deep")
        for missing in (f"m{i}" for i in range(3000)):
            with pytest.raises(KeyError):
                r[missing]


def _outcome(r, key):
    try:
        return "value", msglc.to_obj(r[key])
    except (KeyError, msglc.MsglcError) as e:  # (messages differ: C and msgspec name a bad block's bytes apart)
        return type(e).__name__, None


@pytest.mark.skipif(accel.speedups is None, reason="compares the C lookup with the pure-Python one")
def test_c_lookups_agree_with_python_on_damaged_archives(monkeypatch):
    """The lookup in C (``BlockProbe``) hands anything unusual to the Python path: on an
    archive with any one byte of its index or entries flipped, both give the same value or
    the same error, for keys held and keys not held."""
    rng = random.Random(5)
    doc: dict[str, str | list[int]] = {f"key{i:05d}": f"v{rng.getrandbits(40):x}" for i in range(6000)}
    doc["large"] = list(range(5000))  # a value with a node of its own, inside a block
    data = msglc.dumps(doc, small_obj_optimization_threshold=1024)
    with msglc.LazyReader(data) as r:
        info = r.info()
    keys = [*rng.sample(list(doc), 40), "key-none", "other", "large"]
    speedups = accel.speedups
    differ = []
    for _ in range(150):
        bad = bytearray(data)
        at = rng.randrange(info.data_offset + 1, info.toc_offset + info.toc_size)
        bad[at] ^= 1 << rng.randrange(8)
        outcomes = []
        for mode in (speedups, None):
            monkeypatch.setattr(accel, "speedups", mode)
            try:
                with msglc.LazyReader(bytes(bad), cached=False) as r:
                    outcomes.append([_outcome(r, k) for k in keys])
            except msglc.MsglcError as e:
                outcomes.append([(type(e).__name__, None)])
        if outcomes[0] != outcomes[1]:
            differ.append((at, outcomes))
    monkeypatch.setattr(accel, "speedups", speedups)
    assert not differ, differ[:2]


@pytest.mark.skipif(accel.speedups is None, reason="checks the C lookup")
def test_a_c_lookup_out_of_memory_raises_memory_error():
    """Whichever allocation fails during a lookup in C, the lookup raises MemoryError (or
    answers): it never returns with an error still set (the next C call would then fail
    with a SystemError that names another function)."""
    testcapi = pytest.importorskip("_testcapi")
    if not hasattr(testcapi, "set_nomemory"):
        pytest.skip("needs _testcapi.set_nomemory")
    data = msglc.dumps({f"k{i}": f"v{i}" * 3 for i in range(5000)})
    with msglc.LazyReader(data) as r:
        root = r.read()
        root["k1"]
        probe, read, base = root._index.probe, root._a.read, root._base  # noqa: SLF001
        assert probe is not None
        keys = [msgspec.msgpack.encode(f"{c}{i}") for c in "km" for i in range(30)]
        crcs = [zlib.crc32(kb) for kb in keys]
        broken = []
        for start in range(40):
            for kb, h in zip(keys, crcs, strict=True):
                testcapi.set_nomemory(start, 0)
                try:
                    probe.find(read, base, kb, h)
                except MemoryError:
                    pass
                finally:
                    try:
                        testcapi.remove_mem_hooks()
                    except SystemError:  # find returned with MemoryError still set
                        broken.append((start, kb))
        assert not broken, broken[:3]


def _crafted_index(rng):
    """A dict's entries and its block index (as writers make it), then changed as an attacker
    would (records, page bounds, block offsets, entries), every checksum made to fit: the
    entries and index bytes, the ``BlockIndex`` fields and the large values' spans."""
    n = rng.choice([1, 2, 7, 64, 65, 300])
    block_bits = rng.choice([0, 1, 3, 6, 16])
    keys = list(dict.fromkeys(rng.choice([f"s{rng.getrandbits(16)}", rng.getrandbits(12) - 99]) for _ in range(n)))
    n = len(keys)

    def large(i: int) -> bool:
        return i % 9 == 4

    def value(i: int) -> object:
        return list(range(i % 40)) if large(i) else rng.choice([i, f"v{i}", None, [i], b"x" * (i % 30)])

    body, koffs, kids = dict_entries(b"\xdc" + n.to_bytes(2, "big"), keys, large, value)
    region = hash_index.region_of_keys([msgspec.msgpack.encode(k) for k in keys], koffs, block_bits)
    page_bits, width = region.page_bits, region.width
    table, records, _ = hash_index.block_layout(n, page_bits, width, block_bits)
    blocks = hash_index.block_count(n, block_bits)
    size = 1 + hash_index.block_width(blocks)
    at = len(body)
    data = body + b"".join(map(bytes, region.parts))
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(5)
        if kind == 0:  # a record: its fingerprint or block
            data[at + records + rng.randrange(size * n)] ^= 1 << rng.randrange(8)
        elif kind == 1:  # a page's bounds
            slot = at + table + 8 * rng.randrange((1 << page_bits) + 1)
            data[slot : slot + 4] = rng.choice([0, n, n + 1, rng.randrange(n + 1), 2**32 - 1]).to_bytes(4, "little")
        elif kind == 2:  # a block offset
            o = at + width * rng.randrange(blocks + 1)
            old = int.from_bytes(data[o : o + width], "little")
            new = rng.choice([old + 1, old - 1, 0, koffs[-1] + 1, rng.randrange(koffs[-1] + 1)]) % (1 << 8 * width)
            data[o : o + width] = new.to_bytes(width, "little")
        elif kind == 3:  # an entry's byte
            data[rng.randrange(at)] ^= 1 << rng.randrange(8)
        else:  # a record naming another block
            r = at + records + size * rng.randrange(n)
            data[r + 1 : r + size] = rng.randrange(blocks).to_bytes(size - 1, "little")
        for p in range(1 << page_bits):  # the checksums, made to fit
            first, end = (
                int.from_bytes(data[at + table + 8 * q : at + table + 8 * q + 4], "little") for q in (p, p + 1)
            )
            if first <= end <= n:
                crc = zlib.crc32(data[at + records + size * first : at + records + size * end])
                data[at + table + 8 * p + 4 : at + table + 8 * p + 8] = crc.to_bytes(4, "little")
        end = at + records - 4
        data[end : end + 4] = zlib.crc32(data[at + table : end]).to_bytes(4, "little")
    fields = (n, page_bits, width, zlib.crc32(data[at : at + table]), block_bits)
    return bytes(data), keys, at, fields, (koffs[0], koffs[-1]), kids


@pytest.mark.skipif(accel.speedups is None, reason="compares the C lookup with the Python one")
def test_c_lookups_agree_with_python_on_crafted_indexes():
    """Damage whose checksums were made to fit (records naming other blocks, page bounds and
    block offsets out of place, entries changed): the lookup in C answers as the Python path
    does, value, miss or error message alike."""
    rng = random.Random(11)
    answered = asked = 0
    for _ in range(150):
        data, keys, at, fields, span, kids = _crafted_index(rng)
        a = BytesReads(data)
        try:
            index = dict_index.BlockIndex(a, at, fields, span, kids)
        except msglc.CorruptedError:
            continue
        probe = index.probe
        assert probe is not None
        for key in [*rng.sample(keys, min(len(keys), 20)), "none", 5000, -5000]:
            kb = msgspec.msgpack.encode(key)
            h = zlib.crc32(kb)
            outcomes: list[tuple[int, bytes] | str | None] = []
            for with_c in (True, False):
                index.probe = probe if with_c else None
                try:
                    found = index.find(a, 0, kb, h)
                    outcomes.append(None if found is None else (found[0], bytes(found[1])))
                except msglc.MsglcError as e:
                    outcomes.append(f"{type(e).__name__}: {e}")
            asked += 1
            answered += probe.find(a.read, 0, kb, h) is not NotImplemented
            assert outcomes[0] == outcomes[1], (key, outcomes)
    assert answered > asked / 4, (answered, asked)  # the C lookup answered many itself


@pytest.mark.parametrize("pure", [False, True])
def test_page_records_are_kept_once_checked(big, monkeypatch, pure):
    """A page's records are read once and kept: later lookups in the page read their block
    alone. Records that fail their checksum are reported each time, never kept."""
    if pure:
        monkeypatch.setattr(accel, "speedups", None)
    path, doc, _ = big
    stats = LazyStats()
    with msglc.LazyReader(path, counter=stats, cached=False) as r:
        r["key1"]  # the block offsets and the page table
        keys, first = [f"key{i}" for i in range(0, N, 7)], []
        for k in keys:
            stats.clear()
            assert r[k] == doc[k]
            first.append(stats.requests)
        again = []
        for k in keys:
            stats.clear()
            assert r[k] == doc[k]
            again.append(stats.requests)
        pages = first.count(2)  # a page's records, then the block; later keys of the page: the block
        assert pages > 50 and again.count(1) > len(keys) * 9 // 10, (first, again)
        assert all(m <= n for n, m in zip(first, again, strict=True)) and sum(again) < sum(first)
    data = bytearray(path.read_bytes())
    with msglc.LazyReader(bytes(data)) as r:
        region = r.info().toc_offset  # the hash index lies in the TOC, after the data
    bad = None
    for at in range(len(data) - 200, region, -7):  # flip a byte until some lookup reports damage
        trial = bytearray(data)
        trial[at] ^= 0x40
        try:
            r = msglc.LazyReader(bytes(trial), cached=False)
            r["key1"]
        except msglc.MsglcError:
            continue  # the root or a table: not a page's records
        with r:
            failing = []
            for k in keys:
                try:
                    r[k]
                except msglc.CorruptedError as e:
                    if "page" in str(e):
                        failing.append(k)
            if failing:
                bad = (bytes(trial), failing[0])
                break
    assert bad is not None
    with msglc.LazyReader(bad[0], cached=False) as r:
        for _ in range(3):
            with pytest.raises(msglc.CorruptedError, match="page"):
                r[bad[1]]


@pytest.mark.skipif(accel.speedups is None, reason="the C accelerator is not built")
def test_c_and_python_keep_page_records_alike():
    assert accel.speedups is not None
    assert accel.speedups.RECORDS_KEPT == dict_index.RECORDS_KEPT


@pytest.mark.skipif(accel.speedups is None, reason="the C accelerator is not built")
def test_c_keeps_only_the_records_of_the_pages_looked_up():
    """The C lookup's memory grows with the pages it reads, not with the dict: one lookup in
    each of many dicts must not take all their records (calloc clears whatever it takes from
    the heap, so one buffer for a dict's records costs them all at its first lookup)."""
    import tracemalloc

    n, dicts = 20000, 20
    data = msglc.dumps([{f"k{i}": i for i in range(n)} for _ in range(dicts)])
    with msglc.LazyReader(data, cached=False) as r:
        views = [r[j] for j in range(dicts)]
        views[0]["k5"]
        index = views[0].loaded_index()
        assert index is not None and index.probe is not None
        records = index.size * n  # the records of one dict (about 3 bytes a key)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for v in views[1:]:
                assert v["k5"] == 5 and v["k5"] == 5
            grown = (tracemalloc.get_traced_memory()[0] - before) / (dicts - 1)
        finally:
            tracemalloc.stop()
    assert grown < records / 2, (grown, records)  # its tables, a pointer a page and one page's records


@pytest.mark.skipif(accel.speedups is None, reason="the C accelerator is not built")
def test_lookups_and_in_keep_the_page_records_once():
    """A page's records, once read, are kept once (up to ``RECORDS_KEPT`` a dict): ``in``
    walks the blocks the C lookup's kept records name, so a dict looked up with both ``[]``
    and ``in`` holds its records once, not twice."""
    n = 100_000
    keys = random.Random(3).sample(range(n), 10_000)
    with msglc.LazyReader(msglc.dumps({f"k{i}": i for i in range(n)}), cached=False) as r:
        root = r.read()
        assert root["k0"] == 0
        index = root.loaded_index()
        assert isinstance(index, dict_index.BlockIndex) and index.probe is not None
        records = index.size * n

        def lookups():
            for i in keys:
                assert root[f"k{i}"] == i

        def contains():
            for i in keys:
                assert f"k{i}" in root

        by_lookups, by_in = traced_growth(lookups, contains)
    assert by_lookups > records / 2, (by_lookups, records)  # the records kept by the lookups
    assert by_in < records / 8, (by_in, records)  # and not again by ``in``
