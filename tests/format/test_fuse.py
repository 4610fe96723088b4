"""Fuse-indexed dicts (node type 7): how compressed archives index big dicts, in about 1.13
times the bits of a block number per key. Lookups of every key, absent keys, large values
with nodes of their own, damage caught by the chunk CRCs, crafted slots caught by verify."""

import random
import zlib
from typing import Any

import pytest
from outcomes import BytesReads, dict_entries, traced_growth

import msglc
from msglc import CorruptedError, LazyReader
from msglc.format import fuse
from msglc.format.nodes import FuseMapNode
from msglc.read.part import archive_of
from msglc.util import accel

pytest.importorskip("zstandard")
needs_c = pytest.mark.skipif(accel.speedups is None, reason="the C accelerator builds fuses")

ZSTD: dict[str, Any] = {"compression": "zstd"}  # dump's **options


def table(n, seed=1):
    rng = random.Random(seed)
    d: dict[str | int, int | str] = {f"w{rng.getrandbits(40):010x}": rng.randrange(300) for _ in range(n)}
    d.update({i: f"int {i}" for i in range(0, 3000, 3)})  # int keys too
    return d


def root_node(r):
    return archive_of(r).node(*_root_place(r))


def _root_place(r):
    t = archive_of(r).opened.trailer
    return t.toc_off + t.root_pos, t.root_len


@needs_c
def test_the_math_is_the_c_math():
    """base_hash, mix and slots_of in Python give what the C build placed: every key of a
    built fuse xors to its block, computed in pure Python."""
    keys = [f"key-{i}".encode() for i in range(5000)]
    hashes = b"".join(fuse.base_hash(k).to_bytes(8, "little") for k in keys)
    built = fuse.build(hashes, len(keys), 4)
    assert built is not None
    seed, slot_bits, seg_bits, seg_count, slots = built
    for e, k in enumerate(keys):
        h = fuse.mix(fuse.base_hash(k), seed)
        got = 0
        for s in fuse.slots_of(h, seg_bits, seg_count):
            got ^= fuse.slot_value(slots, s * slot_bits, slot_bits)
        assert got == e >> 4


@needs_c
@pytest.mark.parametrize("pure_reads", [False, True], ids=["C", "pure Python reads"])
def test_every_key_reads_back_and_absent_keys_are_absent(monkeypatch, pure_reads):
    d = table(60_000)
    d["big"] = list(range(5000))  # a value with a node of its own, inside the dict
    data = msglc.dumps(d, **ZSTD)
    if pure_reads:
        monkeypatch.setattr(accel, "speedups", None)
    with LazyReader(data, cached=False) as r:
        assert isinstance(root_node(r), FuseMapNode)
        root = r.read()
        for k in random.Random(2).sample(list(d), 3000):
            assert root[k] == d[k] and k in root
        assert root["big"] == d["big"]
        for k in ["w0000000000", "nope", 1, 3001, -3, "big2"]:
            assert k not in root
            with pytest.raises(KeyError):
                root[k]
        r.verify()
        assert r.to_obj() == d


@needs_c
def test_the_index_takes_under_two_bytes_a_key():
    n = 300_000
    d = {f"k{i:08d}": i % 7 for i in range(n)}
    data = msglc.dumps(d, **ZSTD)
    with LazyReader(data) as r:
        node = root_node(r)
        assert isinstance(node, FuseMapNode)
        assert node.index[1] / n < 2.0, node.index[1] / n
        assert node.index[1] / n < 0.75 * 3.3  # the block index of type 6: about 3.3 bytes a key


@needs_c
def test_a_damaged_chunk_is_an_error_not_a_wrong_answer():
    d = table(30_000)
    data = bytearray(msglc.dumps(d, **ZSTD))
    with LazyReader(bytes(data)) as r:
        node = root_node(r)
        pos = _root_place(r)[0]
        region = pos - node.index[0]
        slots_at = fuse.fuse_layout(
            node.n, node.block_bits, node.offs_width, node.slot_bits, node.seg_bits, node.seg_count
        )[1]
        frame = next(f for f in r.frames() if f.plain_offset <= region + slots_at + 500 < f.plain_offset + f.plain_size)
        assert frame.filter == 2  # the slots are stored raw: read in place
    at = frame.offset + 12 + region + slots_at + 500 - frame.plain_offset
    data[at] ^= 0x5A
    with LazyReader(bytes(data), cached=False) as r:
        root = r.read()
        outcomes = set()
        for k in random.Random(3).sample(list(d), 4000):
            try:
                assert root[k] == d[k]
                outcomes.add("ok")
            except CorruptedError as e:
                assert "fuse index chunk" in str(e)
                outcomes.add("error")
        assert outcomes == {"ok", "error"}


@needs_c
def test_verify_rebuilds_the_fuse(monkeypatch):
    """A crafted archive: one slot bit flipped before the chunk CRCs (and the CRC of the CRCs)
    are computed, so every checksum holds. Lookups cannot tell; verify does (with and without
    the C accelerator)."""
    d = table(20_000)
    original = fuse.region

    def flipped(offs, slots):
        return original(offs, bytes([slots[0] ^ 0x01]) + slots[1:])

    monkeypatch.setattr(fuse, "region", flipped)
    data = msglc.dumps(d, **ZSTD)
    monkeypatch.undo()
    with LazyReader(data, cached=False) as r:
        assert isinstance(root_node(r), FuseMapNode)
        with pytest.raises(CorruptedError, match="fuse index"):
            r.verify()
    monkeypatch.setattr(accel, "speedups", None)
    with LazyReader(data, cached=False) as r, pytest.raises(CorruptedError, match="fuse index"):
        r.verify()


def test_without_the_c_accelerator_writers_write_a_block_index(monkeypatch):
    monkeypatch.setattr(accel, "speedups", None)
    d = table(5_000)
    with LazyReader(msglc.dumps(d, **ZSTD)) as r:
        assert not isinstance(root_node(r), FuseMapNode) and r.to_obj() == d


@needs_c
def test_keys_that_share_a_base_hash_never_peel():
    hashes = [random.Random(9).getrandbits(64) for _ in range(50)]
    hashes[20] = hashes[3]
    packed = b"".join(h.to_bytes(8, "little") for h in hashes)
    values = b"".join((e >> 2).to_bytes(4, "little") for e in range(50))
    seg_bits, seg_count = fuse.layout(50)
    assert accel.speedups is not None
    assert all(accel.speedups.fuse_build(packed, values, 4, seg_bits, seg_count, seed) is None for seed in range(8))


@needs_c
@pytest.mark.parametrize("meanwhile", [False, True], ids=["on the spot", "meanwhile"])
def test_a_dict_whose_fuse_does_not_peel_gets_a_block_index(monkeypatch, tmp_path, meanwhile):
    """dump and repacking index such a dict as type 6 (its hash records then computed apart),
    and the archive reads and verifies; a fuse built meanwhile that does not peel makes the
    TOC be built again."""
    from msglc.write import indexer

    monkeypatch.setattr(indexer, "DEFER_KEYS", 1 if meanwhile else 1 << 40)
    calls: list[str] = []

    class Counted:  # the accelerator, its one-walk hashing counted
        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return getattr(speedups, name)

    speedups = accel.speedups
    monkeypatch.setattr(accel, "speedups", Counted())
    monkeypatch.setattr(fuse, "build", lambda *args: None)
    d = table(5_000)
    d["big"] = list(range(5000))

    def block_indexed(r: LazyReader) -> bool:
        loc = r["d"].location()
        return type(archive_of(r).node(loc.node, loc.node_size)).__name__ == "BlockHashMapNode"

    with LazyReader(msglc.dumps({"d": d}, **ZSTD)) as r:
        assert block_indexed(r) and r.to_obj() == {"d": d} and r["d"]["big"] == d["big"]
        r.verify()
        calls.clear()
        msglc.dump(tmp_path / "repacked.mlc", r, compression="zstd", small_obj_optimization_threshold=4096)
        assert "map_hashed" in calls  # (re-indexed, not copied)
    with LazyReader(tmp_path / "repacked.mlc") as r:
        assert block_indexed(r) and r.to_obj() == {"d": d}
        r.verify()


@needs_c
@pytest.mark.parametrize("placeholder", ["kept", "too wide"])
def test_fuses_built_meanwhile_give_the_bytes_of_fuses_built_on_the_spot(monkeypatch, tmp_path, placeholder):
    """Big dicts' fuses are built on other threads while indexing goes on and put in place at
    the end; a placeholder that cannot be overwritten in place (here: made to encode shorter
    than every real CRC) makes the TOC be built again. Either way, the same archive."""
    from msglc.write import indexer

    d = {"a": table(3_000, seed=2), "b": table(5_000, seed=3), "c": list(range(10))}
    monkeypatch.setattr(indexer, "DEFER_KEYS", 1 << 40)  # every fuse on the spot
    on_the_spot = msglc.dumps(d, **ZSTD)
    msglc.dump(tmp_path / "a.mlc", msglc.LazyReader(msglc.dumps(d)), **ZSTD)  # repacked: reindexed
    monkeypatch.setattr(indexer, "DEFER_KEYS", 1)
    if placeholder == "too wide":
        monkeypatch.setattr(indexer, "PLACEHOLDER_CRC", 0)
    assert msglc.dumps(d, **ZSTD) == on_the_spot
    msglc.dump(tmp_path / "b.mlc", msglc.LazyReader(msglc.dumps(d)), **ZSTD)
    assert (tmp_path / "b.mlc").read_bytes() == (tmp_path / "a.mlc").read_bytes()


@needs_c
def test_a_failed_dump_leaves_no_fuse_threads_behind(monkeypatch):
    import threading

    from msglc.write import indexer

    monkeypatch.setattr(indexer, "DEFER_KEYS", 1)
    before = threading.active_count()
    with pytest.raises(TypeError):
        msglc.dumps({"a": table(3_000), "b": table(3_000, seed=5), "z": {i: object() for i in range(2000)}}, **ZSTD)
    assert threading.active_count() == before


@needs_c
def test_fuse_build_survives_hashes_changed_meanwhile():
    """fuse_build lets the GIL go: a bytearray of hashes may change while it works. It must
    read each hash once (a count that does not match the placement wrote past its arrays)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import os, random, threading
        from msglc.format import fuse
        from msglc.util import accel
        n = 1 << 19
        hb, vb = bytearray(os.urandom(8 * n)), bytes(4 * n)
        seg_bits, seg_count = fuse.layout(n)
        stop = False
        def flip():
            r = random.Random(1)
            while not stop:
                i = r.randrange(n) * 8
                hb[i : i + 8] = r.getrandbits(64).to_bytes(8, "little")
        t = threading.Thread(target=flip)
        t.start()
        try:
            for seed in range(6):
                accel.speedups.fuse_build(hb, vb, 8, seg_bits, seg_count, seed)
        finally:
            stop = True
            t.join()
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


@needs_c
def test_a_toc_built_again_keeps_what_earlier_roots_of_the_builder_wrote(monkeypatch):
    """A builder may index several roots (its TOC grows); a fuse built meanwhile that does
    not peel rebuilds only the last root's part of the TOC: the same bytes as on the spot."""
    import msgspec

    from msglc.write import indexer

    first, second = {"a": table(3_000, seed=2)}, {"b": table(5_000, seed=3)}
    build = fuse.build
    tocs = []
    for defer in (1 << 40, 1):
        monkeypatch.setattr(indexer, "DEFER_KEYS", defer)
        monkeypatch.setattr(fuse, "build", build)
        builder = indexer.TocBuilder(msgspec.msgpack.encode(first), 1024, toc_base=100, fuse=True)
        roots = [builder.build_root(first)]
        builder.buf = msgspec.msgpack.encode(second)
        monkeypatch.setattr(fuse, "build", lambda hashes, n, block_bits: None)  # (the second root's: no fuse)
        roots.append(builder.build_root(second))
        tocs.append((bytes(builder.toc), roots, list(builder.regions)))
    assert tocs[1] == tocs[0]


def _crafted_fuse(rng, n=None, block_bits=None, changes=(1, 3)):
    """A dict's entries and its fuse region (as writers make them), then changed as an
    attacker would (slots, block offsets, entries, the slots cut short), every chunk CRC made
    to fit: the bytes and the ``FuseIndex`` fields. ``changes``: how many, at least and most."""
    import msgspec

    n = rng.choice([1, 2, 40, 300, 3000]) if n is None else n
    block_bits = rng.choice([0, 2, 5]) if block_bits is None else block_bits
    keys = list(dict.fromkeys(rng.choice([f"s{rng.getrandbits(20)}", rng.getrandbits(14) - 99]) for _ in range(n)))
    n = len(keys)

    def large(i: int) -> bool:
        return i % 97 == 50

    body, koffs, kids = dict_entries(
        b"\xdd" + n.to_bytes(4, "big"),
        keys,
        large,
        lambda i: list(range(60)) if large(i) else rng.choice([i, f"v{i}", None, [i]]),
    )
    hashes = b"".join(fuse.base_hash(msgspec.msgpack.encode(k)).to_bytes(8, "little") for k in keys)
    built = fuse.build(hashes, n, block_bits)
    assert built is not None
    seed, slot_bits, seg_bits, seg_count, built_slots = built
    offs, width = fuse.block_offsets(koffs, n, block_bits)
    blocks = len(offs) // width - 1
    at = len(body)
    slots, data, crcs = bytearray(built_slots), bytearray(body), None
    for _ in range(rng.randint(*changes)):
        kind = rng.randrange(4)
        if kind == 0:  # a slot's bit
            slots[rng.randrange(len(slots))] ^= 1 << rng.randrange(8)
        elif kind == 1:  # a block offset
            o = width * rng.randrange(blocks + 1)
            old = int.from_bytes(offs[o : o + width], "little")
            new = rng.choice([old + 1, old - 1, 0, koffs[-1] + 1, rng.randrange(koffs[-1] + 1)]) % (1 << 8 * width)
            offs = offs[:o] + new.to_bytes(width, "little") + offs[o + width :]
        elif kind == 2:  # an entry's byte
            data[rng.randrange(5, at)] ^= 1 << rng.randrange(8)
        else:  # a slot's byte after its chunk's CRC was taken: that chunk fails its checksum
            crcs = crcs or fuse.chunk_crcs(bytes(slots))
            slots[rng.randrange(len(slots))] ^= 0x10
    data += offs + (crcs or fuse.chunk_crcs(bytes(slots))) + slots
    fields = (n, width, zlib.crc32(offs), block_bits, slot_bits, seed, seg_bits, seg_count)
    return data, keys, at, fields, (koffs[0], koffs[-1]), kids


@needs_c
def test_c_fuse_lookups_agree_with_python_on_crafted_indexes():
    """The fuse lookup in C (a ``BlockProbe`` of a fuse) answers as the Python path does on
    crafted fuses whose checksums fit (slots naming other blocks, block offsets out of place,
    entries changed): value, miss or error message alike; it answers most lookups itself."""
    import msgspec

    from msglc.read.dict_index import FuseIndex

    rng = random.Random(17)
    answered = asked = 0
    seen: set[str] = set()
    for _ in range(120):
        data, keys, at, fields, span, kids = _crafted_fuse(rng)
        a = BytesReads(data)
        index = FuseIndex(a, at, fields, span, kids)
        probe = index.probe
        assert probe is not None
        for key in [*rng.sample(keys, min(len(keys), 25)), "none", 5000, -5000, "s1"]:
            kb = msgspec.msgpack.encode(key)
            outcomes: list[object] = []
            for with_c in (True, False):
                index.probe = probe if with_c else None
                try:
                    found = index.find(a, 0, kb, zlib.crc32(kb))
                    outcomes.append(None if found is None else (found[0], bytes(found[1])))
                except msglc.MsglcError as e:
                    outcomes.append(f"{type(e).__name__}: {e}")
            asked += 1
            answered += probe.find(a.read, 0, kb, zlib.crc32(kb)) is not NotImplemented
            assert outcomes[0] == outcomes[1], (key, outcomes)
            seen.add("miss" if outcomes[0] is None else "error" if isinstance(outcomes[0], str) else "value")
    assert seen == {"value", "miss", "error"}
    assert answered > asked / 2, (answered, asked)


@needs_c
@pytest.mark.parametrize("n", [3000, 300_000], ids=["slots read at once", "a chunk at a time"])
def test_the_c_lookup_reads_a_key_s_slots_in_one_request_where_they_lie_close(n):
    """A key's three slots lie in three consecutive segments: in a dict of a few thousand keys
    within a few KB, which the C lookup reads in one request (then the block: two in all); in
    a larger dict a chunk at a time. Either way it answers as the Python path does, a slot
    damaged behind its CRC included."""
    import msgspec

    from msglc.read.dict_index import FuseIndex

    rng = random.Random(n)
    for changes in ((0, 0), (1, 1)):
        data, keys, at, fields, span, kids = _crafted_fuse(rng, n, block_bits=0, changes=changes)
        a = BytesReads(data)
        index = FuseIndex(a, at, fields, span, kids)
        probe = index.probe
        assert probe is not None
        reads = []
        for key in [*rng.sample(keys, 300), "none", -5000]:
            kb = msgspec.msgpack.encode(key)
            outcomes: list[object] = []
            for with_c in (True, False):
                index.probe = probe if with_c else None
                before = a.reads
                try:
                    found = index.find(a, 0, kb, zlib.crc32(kb))
                    outcomes.append(None if found is None else (found[0], bytes(found[1])))
                except msglc.MsglcError as e:
                    outcomes.append(f"{type(e).__name__}: {e}")
                if with_c and changes == (0, 0):
                    reads.append(a.reads - before)
            assert outcomes[0] == outcomes[1], (key, outcomes)
        if changes == (0, 0):  # the first lookups, before chunks are kept: slots then the block
            assert reads[0] == (2 if n == 3000 else 4), reads[:5]


class _Unreadable(BytesReads):
    """Bytes of which [lo, hi) cannot be read, as if they lay in a frame that fails its
    checksum."""

    def __init__(self, data: bytes, lo: int, hi: int) -> None:
        super().__init__(data)
        self.lo, self.hi = lo, hi

    def read(self, offset: int, size: int) -> memoryview:
        if offset < self.hi and self.lo < offset + size:
            raise CorruptedError(f"the frame of bytes {self.lo}..{self.hi} fails its checksum")
        return super().read(offset, size)


@needs_c
def test_the_c_lookup_answers_when_bytes_between_a_key_s_slots_cannot_be_read():
    """The C lookup reads a key's slots in one request, the chunks between them included. A
    chunk between them that cannot be read (a damaged frame that holds none of the slots)
    is not the lookup's business: it answers, as the Python path, which reads the slots'
    chunks alone, does."""
    import msgspec

    from msglc.read.dict_index import FuseIndex

    rng = random.Random(20)
    data, keys, at, fields, span, kids = _crafted_fuse(rng, 20_000, block_bits=0, changes=(0, 0))
    slot_bits, seed, seg_bits, seg_count = fields[4:]
    clean = FuseIndex(BytesReads(data), at, fields, span, kids)
    slots_at = at + clean.slots_at
    tried = 0
    for key in rng.sample(keys, 400):
        kb = msgspec.msgpack.encode(key)
        needed = set()
        for slot in fuse.slots_of(fuse.mix(fuse.base_hash(kb), seed), seg_bits, seg_count):
            bit = slot * slot_bits
            needed |= {(bit >> 3) // fuse.CHUNK, ((bit + slot_bits - 1) >> 3) // fuse.CHUNK}
        between = [c for c in range(min(needed), max(needed)) if c not in needed]
        if not between or max(needed) - min(needed) >= 16:  # (read a chunk at a time anyway)
            continue
        lo = slots_at + between[0] * fuse.CHUNK
        a = _Unreadable(data, lo, lo + fuse.CHUNK)
        found = FuseIndex(a, at, fields, span, kids).find(a, 0, kb, zlib.crc32(kb))
        expected = clean.find(BytesReads(data), 0, kb, zlib.crc32(kb))
        assert found is not None and expected is not None
        assert (found[0], bytes(found[1])) == (expected[0], bytes(expected[1])), key
        tried += 1
    assert tried > 20, tried


@needs_c
def test_a_fuse_probe_refuses_a_shape_its_slots_do_not_fit():
    """The probe's fields are checked when it is made: slots and chunk CRCs of the sizes the
    fuse's shape gives, or ValueError (never a read past them)."""
    assert accel.speedups is not None
    make = accel.speedups.BlockProbe
    slots = fuse.slot_bytes(4, 3, 5)
    crcs, offs = b"\0" * (4 * ((slots + 1023) // 1024)), b"\0" * 8
    make(crcs, offs, 4, b"", 0, 10, 0, 1, 4, 0, 0, (4, 1, 3, 5, slots))
    for shape in [(4, 1, 3, 5, slots + 1), (0, 1, 3, 5, slots), (33, 1, 3, 5, slots), (4, 1, 19, 5, slots),
                  (4, 1, 3, 0, slots), (4, 1, 3, 2**32 + 1, slots), (4, 1, -1, 5, slots),
                  (4, 1, 3, 2**64 + 5, slots), (4, -1, 3, 5, slots), (4, 2**64, 3, 5, slots)]:  # fmt: skip
        with pytest.raises(ValueError, match="out of range"):
            make(crcs, offs, 4, b"", 0, 10, 0, 1, 4, 0, 0, shape)
    with pytest.raises(ValueError, match="out of range"):
        make(crcs + b"\0\0\0\0", offs, 4, b"", 0, 10, 0, 1, 4, 0, 0, (4, 1, 3, 5, slots))
    with pytest.raises(ValueError, match="out of range"):  # a fuse has no pages
        make(crcs, offs, 4, b"", 0, 10, 1, 1, 4, 0, 0, (4, 1, 3, 5, slots))


@needs_c
def test_lookups_and_in_keep_the_fuse_slots_once():
    """The slot chunks a fuse-indexed dict keeps once read (up to ``FUSE_KEPT`` a dict) are
    kept once: ``in`` walks the block the C lookup's chunks name, so a dict looked up with
    both ``[]`` and ``in`` holds its slots once, not twice (and reads them once)."""
    d = {f"k{i}": i for i in range(100_000)}
    keys = random.Random(3).sample(list(d), 10_000)
    with LazyReader(msglc.dumps(d, **ZSTD), cached=False) as r:
        node = root_node(r)
        assert isinstance(node, FuseMapNode)
        slots = fuse.slot_bytes(node.slot_bits, node.seg_bits, node.seg_count)
        root = r.read()
        assert root["k0"] == 0

        def lookups():
            for k in keys:
                assert root[k] == d[k]

        def contains():
            for k in keys:
                assert k in root

        by_lookups, by_in = traced_growth(lookups, contains)
    assert by_lookups > slots / 2, (by_lookups, slots)  # the chunks kept by the lookups
    assert by_in < slots / 8, (by_in, slots)  # and not again by ``in``


@needs_c
def test_c_and_python_agree_on_the_fuse_constants():
    """The C probe's slot bytes per CRC, the slots a dict keeps and the largest segments it
    accepts are Python's (``_speedups.c`` defines its own copies)."""
    from msglc.read import dict_index

    assert accel.speedups is not None
    assert accel.speedups.FUSE_CHUNK == fuse.CHUNK
    assert accel.speedups.FUSE_KEPT == dict_index.FUSE_KEPT
    assert accel.speedups.FUSE_MAX_SEG_BITS == fuse.MAX_SEG_BITS
