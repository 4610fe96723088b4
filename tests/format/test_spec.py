"""docs/format.md, "Compressed archives (format 2.1)" and node types 7 to 12, followed by
hand: archives that msglc writes are decoded here with struct, zlib, zstandard and the
reference msgpack alone, using the constants and layouts the spec states (nothing from msglc
but the writers and, to compare, its reader). If the writers or the spec change, this fails
until the other follows."""

from __future__ import annotations

import io
import random
import struct
import zlib
from bisect import bisect_right
from math import ceil, floor, log
from pathlib import Path
from typing import Any, NamedTuple

import msgpack
import pytest
from archives import near_duplicates

import msglc

zstandard = pytest.importorskip("zstandard")

GOLDEN = Path(__file__).parent.parent / "golden"

# ---- the spec's constants ---------------------------------------------------------------------
MAGIC = b"\x89MLC\r\n\x1a\n"
END_MAGIC = b"\x89MLC-TOC"
DICT_MAGIC, PAGE_MAGIC, INDEX_MAGIC = 0x184D2A5C, 0x184D2A5B, 0x184D2A5A
DICT_TAG, PAGE_TAG, INDEX_TAG = b"MLCD", b"MLCP", b"MLCI"
SEEKABLE_MAGIC = 0x8F92EAB1
INDEX_DESCRIPTOR = 0x7C
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
RAW_DESCRIPTOR = 0xA4
NONE, SHUFFLE, RAW = 0, 1, 2
CHUNK = 1024  # bytes of fuse slots per chunk CRC
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
MIX1, MIX2 = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53
M64 = (1 << 64) - 1


# ---- the container and the compressed section -------------------------------------------------
class Frame(NamedTuple):
    stored: int  # offset in the section
    size: int  # stored bytes
    logical: int  # offset in the plain stream (data, then TOC)
    plain: int  # plain bytes
    code: int
    param: int
    dictionary: int  # 0: none; d: the index's d-th


class Section:
    """A 2.1 archive opened as the spec says: header, trailer, index, every page table and
    dictionary (a lazy reader reads them when needed; here all of them, to check them all)."""

    def __init__(self, file: bytes) -> None:
        assert file[:8] == MAGIC and (file[8], file[9]) == (2, 2)
        end = int.from_bytes(file[10:16], "little") or len(file)
        trailer = file[end - 64 : end]
        assert trailer[56:] == END_MAGIC
        body = trailer[:52]
        header_as_checked = file[:10] + bytes(6)  # the CRC reads `end` as zero
        assert struct.unpack_from("<I", trailer, 52)[0] == zlib.crc32(body, zlib.crc32(header_as_checked))
        data_off, stored, toc_off, toc_len, root_pos, root_len, self.data_crc, _ = struct.unpack("<QQQQQIII", body)
        assert (data_off, toc_off, toc_len, root_pos, root_len) == (16, 16 + stored, 0, 0, 0)
        assert toc_off + 64 == end
        self.section = s = file[16 : 16 + stored]

        size, descriptor, magic = struct.unpack("<IBI", s[-9:])
        assert (descriptor, magic) == (INDEX_DESCRIPTOR, SEEKABLE_MAGIC) and 69 <= size <= len(s)
        index = s[-size:]
        head = struct.unpack_from("<II4sQQQIIIII", index)
        magic, content, tag, d, t, rpos, rlen, frames, per_page, pages, dicts = head
        assert (magic, content, tag) == (INDEX_MAGIC, size - 8, INDEX_TAG)
        assert size == 56 + 28 * pages + 16 * dicts + 4 + 9
        crc_at = 56 + 28 * pages + 16 * dicts
        assert struct.unpack_from("<I", index, crc_at)[0] == zlib.crc32(index[8:crc_at])
        self.data_len, self.toc_len, self.root = d, t, (rpos, rlen)
        self.per_page = per_page
        page_entries = [struct.unpack_from("<QQQI", index, 56 + 28 * k) for k in range(pages)]
        dict_entries = [struct.unpack_from("<QII", index, 56 + 28 * pages + 16 * k) for k in range(dicts)]
        assert pages == (ceil(frames / per_page) if frames else 0)

        self.dicts = [self._dictionary(s[at : at + length], plain) for at, length, plain in dict_entries]
        self.frames: list[Frame] = []
        for p, (at, first_logical, first_stored, length) in enumerate(page_entries):
            count = min(per_page, frames - p * per_page)
            assert length == 20 + 12 * count
            self.frames += self._page(s[at : at + length], count, first_logical, first_stored)
        self.records_at = min([len(s) - size, *(e[0] for e in page_entries), *(e[0] for e in dict_entries)])
        last = self.frames[-1]
        assert last.stored + last.size == self.records_at  # the frames tile the section up to the records
        assert last.logical + last.plain == d + t
        self._starts = [f.logical for f in self.frames]

    def _page(self, page: bytes, n: int, first_logical: int, first_stored: int) -> list[Frame]:
        magic, content, tag, count = struct.unpack_from("<II4sI", page)
        assert (magic, content, tag, count) == (PAGE_MAGIC, len(page) - 8, PAGE_TAG, n)
        assert struct.unpack_from("<I", page, len(page) - 4)[0] == zlib.crc32(page[12:-4])
        sizes = struct.unpack_from(f"<{2 * n}I", page, 16)
        codes, params = page[16 + 8 * n : 16 + 9 * n], page[16 + 9 * n : 16 + 10 * n]
        dicts = struct.unpack_from(f"<{n}H", page, 16 + 10 * n)
        out, stored, logical = [], first_stored, first_logical
        for k in range(n):
            out.append(Frame(stored, sizes[2 * k], logical, sizes[2 * k + 1], codes[k], params[k], dicts[k]))
            stored += sizes[2 * k]
            logical += sizes[2 * k + 1]
        return out

    @staticmethod
    def _dictionary(record: bytes, plain: int) -> bytes:
        magic, content = struct.unpack_from("<II", record)
        assert (magic, content, record[8:12]) == (DICT_MAGIC, len(record) - 8, DICT_TAG)
        frame = record[12:]
        params = zstandard.get_frame_parameters(frame)
        assert params.content_size == plain and params.has_checksum
        raw: bytes = zstandard.ZstdDecompressor().decompress(frame)
        assert len(raw) == plain
        return raw

    def frame_bytes(self, f: Frame) -> bytes:
        """A frame's plain bytes: decompressed (with its dictionary, as raw content), then
        unshuffled; a raw frame's also read in place, which must agree."""
        stored = self.section[f.stored : f.stored + f.size]
        params = zstandard.get_frame_parameters(stored)
        assert params.content_size == f.plain and params.has_checksum and params.dict_id == 0
        if f.dictionary:
            prefix = zstandard.ZstdCompressionDict(
                self.dicts[f.dictionary - 1], dict_type=zstandard.DICT_TYPE_RAWCONTENT
            )
            out: bytes = zstandard.ZstdDecompressor(dict_data=prefix).decompress(stored)
        else:
            out = zstandard.ZstdDecompressor().decompress(stored)
        assert len(out) == f.plain
        if f.code == RAW:
            assert f.param == 0 and f.size == f.plain + 16 and f.plain <= 1 << 17
            block_header = (8 * f.plain + 1).to_bytes(3, "little")  # last block, raw, of f.plain bytes
            head = ZSTD_MAGIC + bytes([RAW_DESCRIPTOR]) + struct.pack("<I", f.plain) + block_header
            assert stored[:12] == head and stored[12 : 12 + f.plain] == out  # readable in place
        elif f.code == SHUFFLE:
            p = f.param
            assert 2 <= p <= 255 and f.plain % p == 0
            m = f.plain // p
            out = bytes(out[(j % p) * m + j // p] for j in range(f.plain))  # plain j*p+k is stored k*m+j
        else:
            assert f.code == NONE and f.param == 0
        return out

    def plain(self) -> bytes:
        """The whole logical stream: the plain data, then the plain TOC."""
        return b"".join(self.frame_bytes(f) for f in self.frames)

    def read(self, logical: int, size: int) -> bytes:
        """Logical bytes, frame by frame (the frame holding an offset: by bisection)."""
        out, at = b"", logical
        while at < logical + size:
            f = self.frames[bisect_right(self._starts, at) - 1]
            piece = self.frame_bytes(f)[at - f.logical :]
            out += piece[: logical + size - at]
            at += len(piece)
        return out

    def node(self, pos: int, length: int) -> list[Any]:
        """The TOC node at ``pos`` in the TOC: its CRC checked, its msgpack payload decoded."""
        framed = self.read(self.data_len + pos, length)
        assert struct.unpack("<I", framed[-4:])[0] == zlib.crc32(framed[:-4])
        node: list[Any] = msgpack.unpackb(framed[:-4], strict_map_key=False)
        return node

    def region(self, node_pos: int, ref: list[int]) -> bytes:
        back, length = ref
        return self.read(self.data_len + node_pos - back, length)


# ---- lookups, as the spec states them ---------------------------------------------------------
def encode_key(key: str | int) -> bytes:
    packed: bytes = msgpack.packb(key, use_bin_type=True)
    return packed


def fuse_hash(kb: bytes, seed: int) -> int:
    x = zlib.crc32(kb) << 32 | zlib.crc32(kb[::-1])
    x ^= seed * GOLDEN_GAMMA & M64
    x ^= x >> 33
    x = x * MIX1 & M64
    x ^= x >> 33
    x = x * MIX2 & M64
    return x ^ (x >> 33)


def fuse_slots(h: int, seg_bits: int, seg_count: int) -> list[int]:
    length = 1 << seg_bits
    hi = h * (seg_count * length) >> 64
    return [hi, (hi + length) ^ ((h >> 18) & (length - 1)), (hi + 2 * length) ^ (h & (length - 1))]


def fuse_layout(n: int) -> tuple[int, int]:
    """(seg_bits, seg_count) as writers choose them (verify() requires it)."""
    n = max(n, 2)
    seg_bits = min(18, floor(log(n) / log(3.33) + 2.25))
    capacity = round(n * max(1.125, 0.875 + 0.25 * log(1e6) / log(n)))
    return seg_bits, max(1, ceil(capacity / (1 << seg_bits)) - 2)


def block_bits_for(n: int, span: int) -> int:
    """Entries per block of types 7 and 9 as writers choose them: about 4 KB in a lookup table
    (entries under 256 bytes on average), else about 16 KB; at most 1024."""
    target = 4096 if span < 256 * n else 16384
    bits = 0
    while bits < 10 and (2 << bits) * span / n <= target:
        bits += 1
    return bits


def fuse_slot_bytes(hashes: list[int], block_bits: int, slot_bits: int, seg_bits: int, seg_count: int) -> bytes | None:
    """The slots writers store for keys of these mixed hashes (in entry order), by the
    peeling the spec describes; None when the keys do not all peel."""
    ns = (seg_count + 2) << seg_bits
    count, xor = [0] * ns, [0] * ns
    three = [fuse_slots(h, seg_bits, seg_count) for h in hashes]
    for e, slots in enumerate(three):
        for s in slots:
            count[s] += 1
            xor[s] ^= e
    stack = [s for s in range(ns) if count[s] == 1]
    peeled = []
    while stack:
        s = stack.pop()
        if count[s] != 1:
            continue
        e = xor[s]
        peeled.append((e, s))
        for other in three[e]:
            count[other] -= 1
            xor[other] ^= e
            if other != s and count[other] == 1:
                stack.append(other)
    if len(peeled) != len(hashes):
        return None
    values = [0] * ns
    for e, s in reversed(peeled):
        values[s] = e >> block_bits
        for other in three[e]:
            if other != s:
                values[s] ^= values[other]
    packed = 0
    for i, v in enumerate(values):
        packed |= v << (i * slot_bits)
    return packed.to_bytes((ns * slot_bits + 7) // 8, "little")


def walk_block(block: bytes, count: int, kb: bytes) -> Any:
    """The value of the key encoded as ``kb`` among the ``count`` entries of ``block``, else
    KeyError; the block must be exactly ``count`` entries."""
    unpacker = msgpack.Unpacker(strict_map_key=False, raw=False)
    unpacker.feed(block)
    found: Any = KeyError
    for _ in range(count):
        at = unpacker.tell()
        unpacker.skip()
        key_bytes = block[at : unpacker.tell()]
        value = unpacker.unpack()
        if key_bytes == kb:
            found = value
    assert unpacker.tell() == len(block)
    if found is KeyError:
        raise KeyError(kb)
    return found


class BlockDict:
    """A dict of node type 7 or 9 at data offset ``base``, looked up from its region alone."""

    def __init__(self, s: Section, base: int, pos: int, node: list[Any]) -> None:
        self.s, self.base, self.node = s, base, node
        kind, n, _starts, offs, _kids, _kid_keys, page_bits, width, offs_crc, index, block_bits = node[:11]
        assert kind in (7, 9) and page_bits == 0 and width in (4, 8)
        self.n, self.block_bits, self.span = n, block_bits, (offs[0], offs[-1])
        self.blocks = -(-n >> block_bits)
        region = s.region(pos, index)
        table = (self.blocks + 1) * width
        assert zlib.crc32(region[:table]) == offs_crc
        self.offs = struct.unpack(f"<{self.blocks + 1}{'I' if width == 4 else 'Q'}", region[:table])
        rest = region[table:]
        if kind == 7:
            slot_bits, self.seed, self.seg_bits, self.seg_count, crcs_crc = node[11:]
            self.slot_bits: int = slot_bits
            slots = (self.seg_count + 2) << self.seg_bits
            size = (slots * slot_bits + 7) // 8
            chunks = -(-size // CHUNK)
            assert len(rest) == 4 * chunks + size
            assert zlib.crc32(rest[: 4 * chunks]) == crcs_crc
            crcs = struct.unpack(f"<{chunks}I", rest[: 4 * chunks])
            self.slots = rest[4 * chunks :]
            for c in range(chunks):
                assert zlib.crc32(self.slots[c * CHUNK : (c + 1) * CHUNK]) == crcs[c]
        else:
            keys_len, keys_crc = node[11:]
            assert len(rest) == keys_len and zlib.crc32(rest) == keys_crc
            self.firsts = msgpack.unpackb(rest, raw=False)
            assert len(self.firsts) == self.blocks and all(
                a < b for a, b in zip(self.firsts, self.firsts[1:], strict=False)
            )

    def slot(self, i: int) -> int:
        bit = i * self.slot_bits
        word = int.from_bytes(self.slots[bit >> 3 : (bit + self.slot_bits + 7) >> 3], "little")
        return word >> (bit & 7) & ((1 << self.slot_bits) - 1)

    def block_of(self, key: str | int) -> int | None:
        if self.node[0] == 7:
            block = 0
            for i in fuse_slots(fuse_hash(encode_key(key), self.seed), self.seg_bits, self.seg_count):
                block ^= self.slot(i)
            return block if block < self.blocks else None
        if type(key) is not type(self.firsts[0]):
            return None
        block = bisect_right(self.firsts, key) - 1
        return block if block >= 0 else None

    def __getitem__(self, key: str | int) -> Any:
        block = self.block_of(key)
        if block is None:
            raise KeyError(key)
        start, stop = self.offs[block], self.offs[block + 1]
        assert self.span[0] <= start < stop <= self.span[1]
        count = min(1 << self.block_bits, self.n - (block << self.block_bits))
        return walk_block(self.s.read(self.base + start, stop - start), count, encode_key(key))


def expand_compact(node: list[Any]) -> tuple[list[Any], list[int], list[int]]:
    """Type 8 -> the keys and the key and value offsets of the type-2 node it stands for."""
    kind, keys, first, klens, vlens, _kids = node
    assert kind == 8 and len(klens) == len(vlens) == len(keys) and min(klens + vlens) >= 1
    koffs, voffs = [first], []
    for kl, vl in zip(klens, vlens, strict=True):
        voffs.append(koffs[-1] + kl)
        koffs.append(voffs[-1] + vl)
    return keys, koffs, voffs


# ---- the tests ---------------------------------------------------------------------------------
def _checked(data: bytes) -> tuple[Section, bytes]:
    """The section of ``data`` and its plain stream, which must be what msglc reads."""
    s = Section(data)
    plain = s.plain()
    with msglc.LazyReader(data) as r:
        info = r.info()
        assert (info.data_size, info.toc_size) == (s.data_len, s.toc_len)
        assert plain[: s.data_len] == r.protocol_raw_data()
        root = r.info().root
    assert zlib.crc32(plain[: s.data_len]) == s.data_crc
    if s.root[1]:
        assert root is not None
        assert root.position == 16 + s.data_len + s.root[0] and root.size == s.root[1]
    return s, plain


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.glob("*-zstd.mlc")))
def test_golden_compressed_archives_decode_by_the_spec(name):
    data = (GOLDEN / name).read_bytes()
    s, plain = _checked(data)
    msgpack.unpackb(plain[: s.data_len], strict_map_key=False)  # one msgpack value


def test_frames_filters_and_the_root_node_by_the_spec():
    rng = random.Random(7)
    doc = {
        "noise": [rng.randbytes(300) for _ in range(400)],  # incompressible: raw frames
        "m": [[float(i * j) for j in range(120)] for i in range(120)],  # fixed-stride floats: shuffled
        "text": [f"line {i}" for i in range(20_000)],
    }
    data = msglc.dumps(doc, compression="zstd")
    s, _ = _checked(data)
    codes = {f.code for f in s.frames}
    assert codes == {NONE, SHUFFLE, RAW}
    assert all(f.param == 9 for f in s.frames if f.code == SHUFFLE)  # float64: 9 bytes each
    data_frames = [f for f in s.frames if f.logical < s.data_len]
    assert all(f.logical + f.plain <= s.data_len for f in data_frames)  # no frame holds data and TOC
    root = s.node(*s.root)
    keys, koffs, voffs = expand_compact(root)  # an inline dict, compact (type 8)
    assert keys == list(doc) and koffs[-1] == s.data_len
    for j, key in enumerate(keys):
        assert msgpack.unpackb(s.read(koffs[j], voffs[j] - koffs[j])) == key
    assert msgpack.unpackb(s.read(voffs[2], koffs[3] - voffs[2])) == doc["text"]
    assert any(f.logical == s.data_len + s.root[0] for f in s.frames)  # the root node starts a frame


def test_a_dictionary_and_many_pages_by_the_spec():
    from msglc.format.layout import Trailer, compressed_header
    from msglc.write.compress import FrameWriter

    rng = random.Random(1)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(40)) for _ in range(3000)]
    doc = [rng.choice(vocab) for _ in range(12_000)]
    s, _ = _checked(msglc.dumps(doc, compression="zstd"))
    assert len(s.dicts) == 1 and {f.dictionary for f in s.frames} == {0, 1}
    assert s.frames[0].dictionary == 0 and all(f.dictionary == 0 for f in s.frames if f.logical >= s.data_len)

    # more of the same data in 4 KB frames (more than a page's 512) and a dictionary: a section
    # as a streaming writer makes it, read through its page tables
    with msglc.LazyReader(msglc.dumps(doc * 5)) as r:
        plain, info = r.protocol_raw_data(), r.info()
        toc = r.raw_data()[info.toc_offset : info.toc_offset + info.toc_size]
        t = info.root
    assert t is not None
    out = io.BytesIO()
    head = compressed_header()
    out.write(head)
    frames = FrameWriter(out, 4096, 1, 16, head=5)
    frames.choose_dictionary(plain, len(plain))
    frames.write(plain)
    frames.end_data()
    frames.write(toc)
    stored = frames.close((t.position - info.toc_offset, t.size))
    frames.abort()
    out.write(Trailer.compressed(stored, zlib.crc32(plain), info.threshold).pack(head))
    s, _ = _checked(out.getvalue())
    assert s.per_page == 512 and len(s.frames) > 512 and len(s.dicts) == 1
    assert s.read(s.data_len - 10, 10) == plain[-10:]


def test_a_dictionary_per_region_by_the_spec():
    """Near-duplicate documents far apart: the data's frames use several dictionaries (each
    region of the data its own, none over 1 MiB), which this reader applies frame by frame."""
    obj = near_duplicates()
    s, plain = _checked(msglc.dumps(obj, compression="zstd"))
    data = [f.dictionary for f in s.frames if f.logical < s.data_len]
    assert len(s.dicts) >= 4 and sorted(set(data) - {0}) == list(range(1, len(s.dicts) + 1))
    assert data[0] == 0 and all(f.dictionary == 0 for f in s.frames if f.logical >= s.data_len)
    assert all(0 < len(d) <= 1 << 20 for d in s.dicts)
    assert msgpack.unpackb(plain[: s.data_len], strict_map_key=False) == obj


@pytest.mark.parametrize("keys", ["str", "int"])
def test_fuse_lookups_by_the_spec(keys):
    rng = random.Random(3)
    d = {(f"k{rng.getrandbits(48):012x}" if keys == "str" else rng.getrandbits(40) - (1 << 39)): i for i in range(8000)}
    data = msglc.dumps({"d": d, "x": 1}, compression="zstd")
    s, _ = _checked(data)
    root_keys, koffs, voffs = expand_compact(s.node(*s.root))
    kid = s.node(*_kid_of(s, root_keys.index("d")))
    assert kid[0] == 7
    pos = _kid_of(s, root_keys.index("d"))[0]
    table = BlockDict(s, voffs[0], pos, kid)
    span = kid[3][-1] - kid[3][0]
    assert (table.seg_bits, table.seg_count) == fuse_layout(len(d))
    assert table.block_bits == block_bits_for(len(d), span)
    assert table.slot_bits == max(1, (table.blocks - 1).bit_length())
    for e, key in enumerate(d):
        assert table.block_of(key) == e >> table.block_bits
    built = None
    for seed in range(8):  # the first seed that peels, and the slots built by the spec's peeling
        hashes = [fuse_hash(encode_key(key), seed) for key in d]
        built = fuse_slot_bytes(hashes, table.block_bits, table.slot_bits, table.seg_bits, table.seg_count)
        if built is not None:
            break
    assert seed == table.seed and built == table.slots
    for key in rng.sample(list(d), 200):
        assert table[key] == d[key]
    for absent in ["absent", -1 if keys == "str" else "k", 2**63]:
        with pytest.raises(KeyError):
            table[absent]


def test_sorted_lookups_by_the_spec():
    rng = random.Random(4)
    d = {f"w{rng.getrandbits(40):010x}": rng.randrange(300) for _ in range(6000)}
    data = msglc.dumps(d, compression="zstd", order="sorted")
    s, _ = _checked(data)
    node = s.node(*s.root)
    assert node[0] == 9
    table = BlockDict(s, 0, s.root[0], node)
    assert table.block_bits == block_bits_for(len(d), node[3][-1] - node[3][0])
    for key in rng.sample(list(d), 300):
        assert table[key] == d[key]
    for absent in ("", "a", "w", "wzzzzzzzzzz", 3):
        with pytest.raises(KeyError):
            table[absent]


def _kid_of(s: Section, j: int) -> tuple[int, int]:
    """(position in the TOC, length) of the node of the root's entry ``j``."""
    root = s.node(*s.root)
    back, length = root[5][j]
    return s.root[0] - back, length


# ---- node type 10 in a plain (1.4) archive ------------------------------------------------------
class DirectDict:
    """A dict of node type 10 at data offset ``base`` of the plain archive ``file``, looked up
    from its node and region alone, as docs/format.md "Type 10" says."""

    def __init__(self, file: bytes, base: int, pos: int, node: list[Any]) -> None:
        kind, n, _starts, offs, _kids, _kid_keys, gbits, width, groups_crc, (back, length) = node[:10]
        off_bits, chunk, lo, hi, entry_read, groups = node[10:]
        assert kind == 10 and zlib.crc32(groups) == groups_crc and len(groups) == 4 * ((1 << gbits) + 1)
        self.file, self.base, self.n, self.end = file, base, n, offs[-1]
        self.gbits, self.width, self.off_bits, self.chunk, self.lo, self.hi = gbits, width, off_bits, chunk, lo, hi
        self.entry_read = entry_read
        self.first = struct.unpack(f"<{len(groups) // 4}I", groups)
        self.fp_bits = min(32, 8 * width - off_bits)
        region = file[pos - back : pos - back + length]
        chunks = -(-n // chunk)
        assert len(region) == n * width + 4 * chunks
        self.records = []
        for c in range(chunks):
            count = min(chunk, n - c * chunk)
            part = region[c * (chunk * width + 4) :][: count * width + 4]
            assert zlib.crc32(part[:-4]) == struct.unpack("<I", part[-4:])[0]
            self.records += [int.from_bytes(part[i * width : (i + 1) * width], "little") for i in range(count)]

    def fingerprint(self, h: int) -> int:
        fp: int = ((h << self.gbits) & M64) >> (64 - self.fp_bits)
        return fp

    def estimate(self, h: int) -> tuple[int, int, int]:
        g = h >> (64 - self.gbits) if self.gbits else 0
        first, end = self.first[g], self.first[g + 1]
        return first, end, first + ((((h >> (48 - self.gbits)) & 0xFFFF) * (end - first)) >> 16)

    def __getitem__(self, key: str | int) -> Any:
        kb = encode_key(key)
        h = fuse_hash(kb, 0)
        first, end, e = self.estimate(h)
        for i in range(max(first, e - self.lo), min(end, e + self.hi + 1)):
            r = self.records[i]
            if r >> self.off_bits != self.fingerprint(h):
                continue
            at = self.base + (r & ((1 << self.off_bits) - 1))
            unpacker = msgpack.Unpacker(strict_map_key=False, raw=False)
            unpacker.feed(self.file[at : self.base + self.end])
            unpacker.skip()
            if self.file[at : at + unpacker.tell()] == kb:
                return unpacker.unpack()
        raise KeyError(key)


def _plain_root(file: bytes) -> tuple[int, int, list[Any]]:
    """(data offset, TOC offset, root node) of a plain archive, from its header and trailer."""
    assert file[:8] == MAGIC and (file[8], file[9]) == (1, 5)
    data_off, _data_len, toc_off, _toc_len, root_pos, root_len, *_ = struct.unpack("<QQQQQIII", file[-64:-12])
    pos = toc_off + root_pos
    framed = file[pos : pos + root_len]
    assert zlib.crc32(framed[:-4]) == struct.unpack("<I", framed[-4:])[0]
    return data_off, pos, msgpack.unpackb(framed[:-4], strict_map_key=False, raw=False)


@pytest.mark.parametrize("keys", ["str", "int"])
def test_direct_lookups_and_region_by_the_spec(keys):
    rng = random.Random(10)
    d: dict[str | int, Any] = {
        (f"k{rng.getrandbits(48):012x}" if keys == "str" else rng.getrandbits(40) - (1 << 39)): i for i in range(9000)
    }
    d["long" if keys == "str" else 1 << 50] = "z" * 5000
    data = msglc.dumps(d)
    data_off, pos, node = _plain_root(data)
    table = DirectDict(data, data_off, pos, node)
    for key in rng.sample(list(d), 300):
        assert table[key] == d[key]
    for absent in ["absent", -1 if keys == "str" else "k", 2**63]:
        with pytest.raises(KeyError):
            table[absent]
    # the writer's region and fields, built as the spec says
    n, offs = len(d), []
    at = data_off + len(msgpack.packb({}) if n < 16 else b"\xde\x00\x00")  # (a map16 header)
    for key, value in d.items():
        offs.append(at - data_off)
        at += len(encode_key(key)) + len(msgpack.packb(value, use_bin_type=True))
    end = at - data_off
    assert end == node[3][-1]
    gbits = max(0, (n // 1024).bit_length() - 1)
    off_bits = end.bit_length()
    width = -(-(off_bits + 16) // 8)
    chunk = 1020 // width
    assert (node[6], node[7], node[10], node[11]) == (gbits, width, off_bits, chunk)
    hashes = [fuse_hash(encode_key(key), 0) for key in d]
    order = sorted(range(n), key=lambda e: (hashes[e], e))
    assert [table.records[i] & ((1 << off_bits) - 1) for i in range(n)] == [offs[e] for e in order]
    assert [table.records[i] >> off_bits for i in range(n)] == [table.fingerprint(hashes[e]) for e in order]
    est = [table.estimate(hashes[e])[2] for e in order]
    assert (node[12], node[13]) == (
        max(0, *(x - i for i, x in enumerate(est))),
        max(0, *(i - x for i, x in enumerate(est))),
    )
    lengths = sorted(b - a for a, b in zip(offs, [*offs[1:], end], strict=True))  # (no kids here)
    by_bits: dict[int, int] = {}
    for length in lengths:
        by_bits[length.bit_length()] = by_bits.get(length.bit_length(), 0) + 1
    total = 0
    for bits in sorted(by_bits):
        total += by_bits[bits]
        if total * 1000 >= n * 999:
            break
    assert node[14] == max(x for x in lengths if x.bit_length() <= bits)


# ---- what a reader refuses, and with which error ----------------------------------------------
def _page_of_frame_0(data: bytes) -> tuple[int, int]:
    """(offset in the file, length) of the first page table."""
    s = Section(data)
    index = s.section[-struct.unpack("<I", s.section[-9:-5])[0] :]
    at, _, _, length = struct.unpack_from("<QQQI", index, 56)
    return 16 + at, length


def _with_page(data: bytes, edit: Any) -> bytes:
    """``data`` with its first page table edited by ``edit(page: bytearray, n)`` and its CRC
    made again (damage that a checksum cannot tell: crafted)."""
    at, length = _page_of_frame_0(data)
    page = bytearray(data[at : at + length])
    edit(page, struct.unpack_from("<I", page, 12)[0])
    page[-4:] = struct.pack("<I", zlib.crc32(page[12:-4]))
    return data[:at] + bytes(page) + data[at + length :]


def test_a_frame_filter_this_reader_does_not_know_is_unsupported():
    data = msglc.dumps({"t": [f"line {i}" for i in range(20_000)]}, compression="zstd")

    def code_3(page, n):
        page[16 + 8 * n] = 3  # frame 0's filter code

    with pytest.raises(msglc.UnsupportedVersionError, match="frame filter 3"):
        msglc.LazyReader(_with_page(data, code_3))


def test_an_index_descriptor_this_reader_does_not_know_is_unsupported():
    data = bytearray(msglc.dumps({"t": list(range(10))}, compression="zstd"))
    data[-64 - 5] = 0  # the footer's descriptor, as a 2.0 seek table has it
    with pytest.raises(msglc.UnsupportedVersionError, match="descriptor"):
        msglc.LazyReader(bytes(data))


def test_a_raw_frame_must_store_its_plain_bytes_and_16_more():
    """A raw frame is read in place: a page table claiming it holds more plain bytes than it
    stores (the next frame fewer, so that every total still adds up) would make reads inside
    it return bytes of the frames after it. The page is refused instead."""
    rng = random.Random(8)
    doc = [rng.randbytes(300) for _ in range(600)]
    data = msglc.dumps(doc, compression="zstd")
    s = Section(data)
    k = next(i for i, f in enumerate(s.frames[:-1]) if i and f.code == RAW and s.frames[i + 1].code == RAW)
    item = msgpack.packb(doc[0])
    inside = next(j for j in range(len(doc)) if s.frames[k].logical + 3 * len(item) <= 5 + j * len(item))

    def one_more(page, n):
        for frame, delta in ((k, 1), (k + 1, -1)):
            plain = struct.unpack_from("<I", page, 16 + 8 * frame + 4)[0]
            struct.pack_into("<I", page, 16 + 8 * frame + 4, plain + delta)

    bad = _with_page(data, one_more)
    with pytest.raises(msglc.CorruptedError, match="raw frame"), msglc.LazyReader(bad, cached=False) as r:
        r[inside]


# ---- paged lists (node types 11 and 12) ---------------------------------------------------------
def _paged_spans(node: list[Any], pos: int, read_node: Any) -> tuple[list[int], list[int], dict[int, int]]:
    """The type-1 span table a type-11 node at ``pos`` describes, from its pages as the spec
    says (each checked against the node); kids as (span -> absolute position of their node)."""
    assert node[0] == 11
    _, n, firsts, offs, pages = node
    assert firsts[0] == 0 and len(offs) == len(firsts) + 1 and len(pages) == len(firsts)
    starts: list[int] = []
    span_offs: list[int] = []
    kids: dict[int, int] = {}
    for p, (back, length) in enumerate(pages):
        page = read_node(pos - back, length)
        assert page[0] == 12
        _, p_starts, p_offs, p_kids = page
        end = firsts[p + 1] if p + 1 < len(firsts) else n
        assert p_starts[0] == firsts[p] and p_starts[-1] < end and len(p_offs) == len(p_starts) + 1
        assert p_offs[0] == offs[p] and p_offs[-1] == offs[p + 1]
        kids.update({len(starts) + k: pos - back - kid_back for k, (kid_back, _) in p_kids.items()})
        starts += p_starts
        span_offs += p_offs[:-1]
    return starts, [*span_offs, offs[-1]], kids


def _check_spans(data: bytes, n: int, starts: list[int], offs: list[int], kids: dict[int, int]) -> list[Any]:
    """The items the spans of a list stored at ``data`` (its encoding) hold: each span decoded
    behind an array header for its item count, a kid's span as one value."""
    items: list[Any] = []
    for k, start in enumerate(starts):
        count = (starts[k + 1] if k + 1 < len(starts) else n) - start
        span = data[offs[k] : offs[k + 1]]
        if k in kids:
            assert count == 1
            items.append(msgpack.unpackb(span, strict_map_key=False))
        else:
            head = bytes([0x90 | count]) if count < 16 else b"\xdc" + count.to_bytes(2, "big")
            items += msgpack.unpackb(head + span, strict_map_key=False)
    return items


@pytest.mark.parametrize("compressed", [False, True])
def test_paged_lists_by_the_spec(compressed):
    items: list[Any] = [i if i % 2 else f"s{i}" for i in range(5000)]
    items[10] = {"k": [1, 2, 3] * 5}
    items[4000] = [list(range(12))]
    data = msglc.dumps(items, small_obj_optimization_threshold=8, **({"compression": "zstd"} if compressed else {}))
    if compressed:
        s, plain = _checked(data)
        pos, length = s.root
        node = s.node(pos, length)
        starts, offs, kids = _paged_spans(node, pos, s.node)
        stored = plain[: s.data_len]
    else:
        data_off, pos, node = _plain_root(data)
        _, _, toc_off, *_ = struct.unpack("<QQQQQIII", data[-64:-12])

        def read_node(at: int, length: int) -> list[Any]:
            framed = data[at : at + length]
            assert zlib.crc32(framed[:-4]) == struct.unpack("<I", framed[-4:])[0]
            page: list[Any] = msgpack.unpackb(framed[:-4], strict_map_key=False)
            return page

        starts, offs, kids = _paged_spans(node, pos, read_node)
        stored = data[data_off : data_off + offs[-1]]
    assert len(node[4]) >= 3 and len(kids) == 2 and offs[0] == 3  # (array16 header)
    assert _check_spans(stored, node[1], starts, offs, kids) == items
