"""Mutations of plain archives: damaged bytes, header and trailer fields, crafted TOC nodes,
hash indexes and data."""

from __future__ import annotations

import random
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import msgspec

from msglc.format.fuse import CHUNK, fuse_layout
from msglc.format.hash_index import block_count, block_width
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, Trailer
from msglc.format.nodes import (
    BlockHashMapNode,
    CompactMapNode,
    DirectMapNode,
    FuseMapNode,
    HashMapNode,
    PagedListNode,
    frame_node,
)

from . import frames as ff
from .corpus import Sample
from .layout import TocItem, region_crcs, relayout
from .values import brief

# ---- mutations --------------------------------------------------------------------------------------


@dataclass
class Mutation:
    data: bytes
    desc: str
    region: str  # "data", "header", "free", "toc", "dead", "trailer", "mixed", "mixed-data"
    crafted: str | None = None  # None, or what was recomputed to make it look valid: "toc", "data", "header"
    truth: str = "original"  # or "decode": the truth is the mutated data section
    plain: bytes | None = None  # with "decode", in a compressed archive: the mutated plain data
    copy: bool = False  # run the "copy" stage (compressed archives: a share of the cases, it costs)


INTERESTING = [
    0x00,
    0xFF,
    0x7F,
    0x80,
    0xC0,
    0xC1,
    0xC2,
    0xCA,
    0xCB,
    0xCC,
    0xD9,
    0xDC,
    0xDD,
    0xDE,
    0xDF,
    0x90,
    0x9F,
    0xA0,
    0xBF,
    0xC7,
    0xD4,
]


_SPAN_WEIGHTS = {"header": 1, "data": 5, "toc": 3, "dead": 0.5, "tables": 2, "trailer": 1.5}


def _pick_pos(rng: random.Random, s: Sample) -> int:
    if s.spans:  # 2.1: the section's parts by what they hold
        names = sorted({name for _, _, name in s.spans})
        name = rng.choices(names, [_SPAN_WEIGHTS[k] for k in names])[0]
        parts = [(a, b) for a, b, n in s.spans if n == name]
        a, b = rng.choices(parts, [b - a for a, b in parts])[0]
        return rng.randrange(a, b)
    t = s.trailer
    spans = {
        "header": (0, HEADER_SIZE, 1),
        "data": (t.data_off, t.data_off + t.data_len, 5),
        "toc": (t.toc_off, t.toc_off + t.toc_len, 3),
        "trailer": (len(s.data) - TRAILER_SIZE, len(s.data), 1.5),
        "free": (t.data_off + t.data_len, t.toc_off, 0.5),
    }
    spans = {k: v for k, v in spans.items() if v[1] > v[0]}
    names = list(spans)
    name = rng.choices(names, [spans[k][2] for k in names])[0]
    a, b, _ = spans[name]
    return rng.randrange(a, b)


def _regions(s: Sample, positions: list[int]) -> str:
    """The region of the changed bytes: one name, or "mixed-data" when some of them are data
    bytes (lazy reads may then see a changed value), else "mixed"."""
    found = {s.region(p) for p in positions}
    if len(found) == 1:
        return found.pop()
    return "mixed-data" if "data" in found else "mixed"


def m_bitflip(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    pos = _pick_pos(rng, s)
    bad = bytearray(s.data)
    flips = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        p = min(len(bad) - 1, pos + rng.randrange(0, 3))
        bit = rng.randrange(8)
        bad[p] ^= 1 << bit
        flips.append(f"{p}.{bit}")
    positions = [int(f.split(".")[0]) for f in flips]
    return Mutation(bytes(bad), f"bitflip {' '.join(flips)} ({_regions(s, positions)})", _regions(s, positions))


def m_overwrite(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    pos = _pick_pos(rng, s)
    n = min(rng.choice([1, 1, 2, 4]), len(s.data) - pos)
    new = bytes(rng.choice(INTERESTING) if rng.random() < 0.6 else rng.randrange(256) for _ in range(n))
    bad = s.data[:pos] + new + s.data[pos + n :]
    region = _regions(s, list(range(pos, pos + n)))
    return Mutation(bad, f"overwrite {pos}+{n} with {new.hex()} ({region})", region)


def m_insert(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    pos = _pick_pos(rng, s)
    n = rng.choice([1, 1, 2, 5, 16])
    new = bytes(rng.randrange(256) for _ in range(n)) if rng.random() < 0.5 else s.data[pos : pos + n] or b"\x00"
    region = s.region(pos)
    return Mutation(s.data[:pos] + new + s.data[pos:], f"insert {new.hex()} at {pos} ({region})", region)


def m_delete(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    pos = _pick_pos(rng, s)
    n = min(rng.choice([1, 1, 2, 5, 16]), len(s.data) - pos)
    region = _regions(s, list(range(pos, pos + n)))
    return Mutation(s.data[:pos] + s.data[pos + n :], f"delete {pos}+{n} ({region})", region)


def m_truncate(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    how = rng.randrange(3)
    if how == 0:
        size = rng.randrange(len(s.data))
        return Mutation(s.data[:size], f"truncate to {size}", "mixed")
    if how == 1:
        k = rng.randrange(1, 80)
        return Mutation(s.data[:-k], f"truncate the last {k}", "trailer")
    k = rng.randrange(1, len(s.data))
    return Mutation(s.data[k:], f"drop the first {k}", "mixed")


def m_splice(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    other = rng.choice(corpus)
    if other.data == s.data:
        return None  # type: ignore[return-value]
    if rng.random() < 0.5:  # this archive's header and data with the other's TOC and trailer
        t, u = s.trailer, other.trailer
        cut, at = (t.data_off + t.data_len, u.data_off + u.data_len) if rng.random() < 0.5 else (t.toc_off, u.toc_off)
    else:
        cut, at = rng.randrange(len(s.data)), rng.randrange(len(other.data))
    bad = s.data[:cut] + other.data[at:]
    if bad == other.data:  # the other archive, whole: nothing damaged
        return None  # type: ignore[return-value]
    region = "mixed-data" if cut < s.trailer.data_off + s.trailer.data_len else "mixed"
    return Mutation(bad, f"splice {s.name}[:{cut}] + {other.name}[{at}:]", region)


def m_header(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation:
    data = bytearray(s.data)
    t = s.trailer
    fields = list(msgspec.structs.astuple(t))
    names = ["data_off", "data_len", "toc_off", "toc_len", "root_pos", "root_len", "data_crc", "threshold"]
    what = rng.choice(["minor", "major", "end", "end"] + names * 2 + ["tile"])
    recrc = rng.random() < 0.75
    if what in ("minor", "major"):
        at = 9 if what == "minor" else 8
        data[at] = rng.choice([0, 1, 2, 3, 255, data[at] ^ 1])
        desc = f"header {what} = {data[at]}"
    elif what == "end":
        end = rng.choice(
            [
                len(s.data),
                len(s.data) - 1,
                len(s.data) + 1,
                rng.randrange(len(s.data)),
                2**48 - 1,
                HEADER_SIZE + TRAILER_SIZE,
            ]
        )
        data[10:16] = end.to_bytes(6, "little")
        desc = f"header end = {end} (size {len(s.data)})"
        recrc = False  # the trailer CRC reads end as zero
    elif what == "tile":  # shrink the data, grow the free space: consistent offsets
        k = rng.choice([1, 2, 9])
        if t.data_len <= k:
            return None  # type: ignore[return-value]
        fields[1] -= k
        if rng.random() < 0.5:
            fields[6] = zlib.crc32(s.data[t.data_off : t.data_off + fields[1]])
        data[9] = max(data[9], 2)
        desc = f"trailer data_len -{k}, minor 2"
    else:
        i = names.index(what)
        old = fields[i]
        delta = rng.choice([1, -1, 2, -2, 8, -8, 64, 1 << 20, -old, 2**32, 2**63 - 1 - old])
        fields[i] = max(0, old + delta) if i < 6 else (old + delta) % 2**32
        if i == 5 and fields[i] >= 2**32:
            fields[i] %= 2**32
        desc = f"trailer {what} {old} -> {fields[i]}"
    header = bytes(data[:HEADER_SIZE])
    if what not in ("minor", "major", "end") or recrc:
        try:
            packed = Trailer(*fields).pack(header) if recrc else _pack_keep_crc(Trailer(*fields), s.data)
        except struct.error:
            return None  # type: ignore[return-value]
        data[-TRAILER_SIZE:] = packed
    desc += ", trailer CRC recomputed" if recrc else ""
    return Mutation(
        bytes(data),
        desc,
        "trailer" if what in names or what == "tile" else "header",
        crafted="header" if recrc else None,
    )


def _pack_keep_crc(t: Trailer, original: bytes) -> bytes:
    """The trailer with these fields and the original (now wrong) CRC."""
    body = struct.pack("<QQQQQIII", *msgspec.structs.astuple(t))
    return body + original[-12:]


def _slots(holder: Any, key: Any, label: str, out: list[Any], depth: int = 0) -> None:
    value = holder[key]
    out.append((holder, key, value, label))
    if depth >= 3:
        return
    if isinstance(value, list):
        for i in range(min(len(value), 64)):
            _slots(value, i, f"{label}[{i}]", out, depth + 1)
    elif isinstance(value, dict):
        for k in list(value)[:64]:
            _slots(value, k, f"{label}[{k!r}]", out, depth + 1)


def _mutate_payload(rng: random.Random, payload: list[Any], names: tuple[str, ...]) -> str:
    """Change one field of a node's payload ([tag, field, ...]) in place; returns what."""
    slots: list[Any] = []
    for i in range(len(payload)):
        _slots(payload, i, "tag" if i == 0 else names[i - 1], slots)
    holder, key, value, where = rng.choice(slots)
    if where == "tag":
        new: Any = rng.choice([1, 2, 3, 4, 5, 6, 11, 12, 0, 255])
    elif isinstance(value, bool) or value is None:
        new = rng.choice([0, 1, "x", None, True])
    elif isinstance(value, int):
        if rng.random() < 0.8:
            new = value + rng.choice([1, -1, 1, -1, 2, -2, 9, -9, 256, -256])
        else:
            new = rng.choice([0, -1, 2**32, 2**63 - 1, -(2**63), 2**64 - 1, 6, 255])
    elif isinstance(value, str):
        new = rng.choice([value + "x", value[:-1], "", value.upper(), 7])
    elif isinstance(value, list):
        new = list(value)
        op = rng.randrange(5)
        if op == 0 and new:
            del new[rng.randrange(len(new))]
        elif op == 1 and new:
            j = rng.randrange(len(new))
            new.insert(j, new[j])
        elif op == 2 and len(new) > 1:
            i, j = rng.sample(range(len(new)), 2)
            new[i], new[j] = new[j], new[i]
        elif op == 3:
            new.append(new[-1] if new else 0)
        else:
            new = []
    elif isinstance(value, dict):
        new = dict(value)
        keys = list(new)
        op = rng.randrange(4)
        if op == 0 and keys:
            del new[rng.choice(keys)]
        elif op == 1 and keys:
            k = rng.choice(keys)
            new[k + 1 if isinstance(k, int) else k + "x"] = new.pop(k)
        elif op == 2 and keys:
            k = rng.choice(keys)
            ints = [x for x in keys if isinstance(x, int)]
            new[max(ints) + 1 if ints else "new"] = new[k]
        else:
            new = {}
    else:
        new = rng.choice([0, "x", [], {}])
    holder[key] = new
    return f"{where}: {brief(value)} -> {brief(new)}"


def m_toc(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    if s.toc is None:
        return None
    bad, desc = toc_edit(rng, s.data, s.toc)
    return Mutation(bad, desc, "toc", crafted="toc")


def toc_edit(rng: random.Random, data: bytes, toc: tuple[list[TocItem], int]) -> tuple[bytes, str]:
    """One TOC node of the plain archive ``data`` changed (a field, a child reference, or for a
    type-8 node a key's length moved into its value's), the TOC laid out again with every
    reference and CRC recomputed."""
    items, root = toc
    nodes = [i for i, it in enumerate(items) if it.kind in ("node", "page")]
    target = items[root_index(items, root)] if rng.random() < 0.25 else items[rng.choice(nodes)]
    mode = rng.random()
    desc = []

    def edit(it: TocItem, node: Any, new_pos: dict[int, int], new_len: dict[int, int], here: int) -> bytes | None:
        if it is not target:
            return None
        if mode < 0.15 and isinstance(node, PagedListNode) and len(node.pages) > 1:  # a page named twice
            p, q = rng.sample(range(len(node.pages)), 2)
            pages = [*node.pages]
            pages[p] = pages[q]
            desc.append(f"page {p} -> page {q}")
            return frame_node(msgspec.structs.replace(node, pages=pages))
        kids = getattr(node, "kids", None)
        if mode < 0.15 and kids:  # point a child reference at another node before this one
            framed = {x.pos for x in items if x.kind in ("node", "page")}
            earlier = [p for p in new_pos if p != it.pos and p in framed]
            if earlier:
                k = rng.choice(list(kids))
                other = rng.choice(earlier)
                node = msgspec.structs.replace(node, kids={**kids, k: (here - new_pos[other], new_len[other])})
                desc.append(f"kid {k} -> the node at old offset {other}")
                return frame_node(CompactMapNode.of(node) if it.compact else node)
        stored = CompactMapNode.of(node) if it.compact else node
        payload = msgspec.msgpack.decode(msgspec.msgpack.encode(stored))
        if it.compact and mode > 0.7:  # a key's length moved into its value's (or back): the sum holds
            j = rng.randrange(len(payload[3]))
            d = rng.choice([1, -1, 2, payload[3][j], -payload[4][j]])
            payload[3][j] += d
            payload[4][j] -= d
            desc.append(f"klens[{j}] {d:+}, vlens[{j}] {-d:+}")
        else:
            desc.append(_mutate_payload(rng, payload, type(stored).__struct_fields__))
        body = msgspec.msgpack.encode(payload)
        return body + struct.pack("<I", zlib.crc32(body))

    bad = relayout(data, items, root, edit)
    kind = "CompactMapNode" if target.compact else type(target.node).__name__
    return bad, f"toc {kind} at {target.pos}: {desc[0] if desc else '?'}"


def root_index(items: list[TocItem], root: int) -> int:
    return next(i for i, it in enumerate(items) if it.pos == root)


def m_index(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    if s.toc is None:
        return None
    made = index_edit(rng, s.data, s.toc)
    return None if made is None else Mutation(made[0], made[1], "toc", crafted="toc")


def index_edit(rng: random.Random, data: bytes, toc: tuple[list[TocItem], int]) -> tuple[bytes, str] | None:
    """The hash index region of a dict in the plain archive ``data`` changed (type 3: an entry
    offset, a record, a page bound; type 6: a block offset, a record's block or fingerprint, a
    page bound; type 7: a block offset, slots, a chunk CRC, or the fuse's shape; type 10: a
    record's offset or fingerprint, two records swapped, a chunk CRC), its CRCs and
    the node's recomputed, the TOC laid out again."""
    items, root = toc
    regions = [it for it in items if it.kind == "region"]
    if not regions:
        return None
    target = rng.choice(regions)
    owner = next(it for it in items if it.pos == target.owner)
    node = owner.node
    raw = bytearray(data[target.pos : target.pos + target.size])
    new_node: dict[str, Any] = {}  # fields of the node changed with its region
    if isinstance(node, FuseMapNode):
        desc = _fuse_edit(rng, node, raw, new_node)
    elif isinstance(node, DirectMapNode):
        desc = _direct_edit(rng, node, raw)
    elif isinstance(node, BlockHashMapNode):
        desc = _block_index_edit(rng, node, raw)
    else:
        desc = _entry_index_edit(rng, node, raw)

    def edit(it: TocItem, node: Any, new_pos: dict[int, int], new_len: dict[int, int], here: int) -> bytes | None:
        if it is target:
            return bytes(raw)
        if it is owner and new_node:
            node = region_crcs(msgspec.structs.replace(node, **new_node), bytes(raw))
            return frame_node(node)
        return None

    return relayout(data, items, root, edit), f"index of the dict at {target.owner}: {desc}, CRCs recomputed"


def _bump(rng: random.Random, raw: bytearray, fmt: str, at: int, deltas: list[int]) -> tuple[int, int]:
    """Add one of ``deltas`` to the unsigned integer at ``at`` (kept in range); (old, new)."""
    old = struct.unpack_from(fmt, raw, at)[0]
    new = min(max(0, old + rng.choice(deltas)), 2 ** (8 * struct.calcsize(fmt)) - 1)
    struct.pack_into(fmt, raw, at, new)
    return old, new


def _entry_index_edit(rng: random.Random, node: HashMapNode, raw: bytearray) -> str:
    """Type 3: entry offsets | page table | records (hash << 32 | entry)."""
    n, width, pages = node.n, node.offs_width, 1 << node.page_bits
    table_at = (n + 1) * width
    rec_at = table_at + (pages + 1) * 8
    what = rng.randrange(4)
    if what == 0:  # an entry offset moved
        j = rng.randrange(n + 1)
        old, new = _bump(rng, raw, "<I" if width == 4 else "<Q", j * width, [1, -1, 2, -7])
        desc = f"entry offset {j}: {old} -> {new}"
    elif what == 1:  # a record points at another entry
        r = rng.randrange(n)
        rec = struct.unpack_from("<Q", raw, rec_at + 8 * r)[0]
        entry = rng.randrange(n + 2)
        struct.pack_into("<Q", raw, rec_at + 8 * r, (rec >> 32) << 32 | entry)
        desc = f"record {r}: entry {rec & 0xFFFFFFFF} -> {entry}"
    elif what == 2:  # a record's hash changed
        r = rng.randrange(n)
        rec = struct.unpack_from("<Q", raw, rec_at + 8 * r)[0]
        struct.pack_into("<Q", raw, rec_at + 8 * r, rec ^ (1 << rng.randrange(32, 64)))
        desc = f"record {r}: hash bit flipped"
    else:  # a page bound moved
        p = rng.randrange(pages + 1)
        old, new = _bump(rng, raw, "<I", table_at + 8 * p, [1, -1, 3])
        desc = f"page {p} first record {old} -> {new}"
    _fix_page_crcs(raw, table_at, rec_at, n, 8, pages)
    return desc


def _block_index_edit(rng: random.Random, node: BlockHashMapNode, raw: bytearray) -> str:
    """Type 6: block offsets | page table | records (fingerprint byte, block number)."""
    n, width, pages = node.n, node.offs_width, 1 << node.page_bits
    blocks = block_count(n, node.block_bits)
    size = 1 + block_width(blocks)
    table_at = (blocks + 1) * width
    rec_at = table_at + (pages + 1) * 8
    what = rng.randrange(4)
    if what == 0:  # a block offset moved
        j = rng.randrange(blocks + 1)
        old, new = _bump(rng, raw, "<I" if width == 4 else "<Q", j * width, [1, -1, 2, -7])
        desc = f"block offset {j}: {old} -> {new}"
    elif what == 1:  # a record names another block
        r = rng.randrange(n)
        block = rng.randrange(min(blocks + 2, 1 << (8 * (size - 1))))
        raw[rec_at + size * r + 1 : rec_at + size * (r + 1)] = block.to_bytes(size - 1, "little")
        desc = f"record {r}: block -> {block}"
    elif what == 2:  # a record's fingerprint changed
        r = rng.randrange(n)
        raw[rec_at + size * r] ^= 1 << rng.randrange(8)
        desc = f"record {r}: fingerprint bit flipped"
    else:  # a page bound moved
        p = rng.randrange(pages + 1)
        old, new = _bump(rng, raw, "<I", table_at + 8 * p, [1, -1, 3])
        desc = f"page {p} first record {old} -> {new}"
    _fix_page_crcs(raw, table_at, rec_at, n, size, pages)
    return desc


def _direct_edit(rng: random.Random, node: DirectMapNode, raw: bytearray) -> str:
    """Type 10: chunks of records (fingerprint above the entry's offset), each followed by its
    CRC. A record's offset moved or its fingerprint changed, two records swapped (their chunks'
    CRCs recomputed), or a chunk's CRC changed."""
    n, width, chunk = node.n, node.offs_width, node.chunk
    step = chunk * width + 4

    def at(i: int) -> int:
        return (i // chunk) * step + (i % chunk) * width

    def recrc(i: int) -> None:
        c = i // chunk
        size = min(chunk, n - c * chunk) * width
        struct.pack_into("<I", raw, c * step + size, zlib.crc32(raw[c * step : c * step + size]))

    what = rng.randrange(4)
    i = rng.randrange(n)
    rec = int.from_bytes(raw[at(i) : at(i) + width], "little")
    if what == 0:  # the offset moved: another entry, the middle of one, or past the dict
        off = rec & ((1 << node.off_bits) - 1)
        new = max(0, off + rng.choice([1, -1, 5, 1 << 20]))
        rec = rec >> node.off_bits << node.off_bits | new & ((1 << node.off_bits) - 1)
        desc = f"record {i}: offset {off} -> {new}"
    elif what == 1:  # a fingerprint bit flipped
        rec ^= 1 << rng.randrange(node.off_bits, 8 * width)
        desc = f"record {i}: fingerprint bit flipped"
    elif what == 2:  # two records swapped
        j = rng.randrange(n)
        other = raw[at(j) : at(j) + width]
        raw[at(j) : at(j) + width] = rec.to_bytes(width, "little")
        recrc(j)
        rec = int.from_bytes(other, "little")
        desc = f"records {i} and {j} swapped"
    else:  # a chunk CRC changed
        c = i // chunk
        size = min(chunk, n - c * chunk) * width
        raw[c * step + size] ^= 1 << rng.randrange(8)
        return f"chunk {c}: CRC changed"
    raw[at(i) : at(i) + width] = rec.to_bytes(width, "little")
    recrc(i)
    return f"{desc}, chunk CRC recomputed"


def _fuse_edit(rng: random.Random, node: FuseMapNode, raw: bytearray, new_node: dict[str, Any]) -> str:
    """Type 7: block offsets | chunk CRCs | slots. A block offset moved, slots changed (their
    chunk's CRC recomputed), a chunk CRC changed, or the fuse's shape or seed changed with the
    region laid out for it (``new_node``: the node's new fields)."""
    width = node.offs_width
    blocks = block_count(node.n, node.block_bits)
    crcs_at, slots_at, end = fuse_layout(node.n, node.block_bits, width, node.slot_bits, node.seg_bits, node.seg_count)
    what = rng.randrange(6)
    if what == 0:  # a block offset moved
        j = rng.randrange(blocks + 1)
        old, new = _bump(rng, raw, "<I" if width == 4 else "<Q", j * width, [1, -1, 2, -7])
        return f"block offset {j}: {old} -> {new}"
    if what in (1, 2):  # a slot's bits changed, or a run of slots zeroed: keys map to other blocks
        at = slots_at + rng.randrange(end - slots_at)
        if what == 1:
            raw[at] ^= rng.randrange(1, 256)
        else:
            raw[at : at + 16] = bytes(len(raw[at : at + 16]))
        chunk = (at - slots_at) // CHUNK
        lo = slots_at + chunk * CHUNK
        struct.pack_into("<I", raw, crcs_at + 4 * chunk, zlib.crc32(raw[lo : min(lo + CHUNK, end)]))
        return f"slot byte {at - slots_at} {'changed' if what == 1 else 'and 15 after it zeroed'}, chunk CRC recomputed"
    if what == 3:  # a chunk CRC changed (the node's CRC of them recomputed)
        c = rng.randrange((slots_at - crcs_at) // 4)
        raw[crcs_at + 4 * c] ^= 1 << rng.randrange(8)
        return f"chunk CRC {c} changed"
    # the shape or seed: the region laid out for the new fields (offsets kept, slots cut or padded)
    name = rng.choice(["seed", "seed", "seg_bits", "seg_count", "slot_bits", "block_bits"])
    old = getattr(node, name)
    new = old + rng.choice([1, -1]) if name != "seed" else rng.choice([old + 1, old ^ 1, 0, 2**64 - 1])
    fields = {k: getattr(node, k) for k in ("block_bits", "slot_bits", "seg_bits", "seg_count")} | {name: new}
    if min(fields.values()) < 0 or new < 0:
        return f"{name} kept (no smaller value)"
    new_node[name] = new
    c2, s2, e2 = fuse_layout(
        node.n, fields["block_bits"], width, fields["slot_bits"], fields["seg_bits"], fields["seg_count"]
    )
    offs = bytes(raw[:crcs_at])[:c2]
    while len(offs) < c2:  # more blocks: each starts where the dict ends
        offs += bytes(raw[crcs_at - width : crcs_at])
    slots = bytes(raw[slots_at:end])[: e2 - s2].ljust(e2 - s2, b"\0")
    crcs = b"".join(struct.pack("<I", zlib.crc32(slots[a : a + CHUNK])) for a in range(0, len(slots), CHUNK))
    raw[:] = offs + crcs + slots
    return f"{name} {old} -> {new}, region laid out for it"


def _fix_page_crcs(raw: bytearray, table_at: int, rec_at: int, n: int, size: int, pages: int) -> None:
    """Recompute a hash index's page CRCs (records of ``size`` bytes) and its table's CRC."""
    firsts = [struct.unpack_from("<I", raw, table_at + 8 * p)[0] for p in range(pages + 1)]
    for p in range(pages):
        a, b = firsts[p], firsts[p + 1]
        crc = zlib.crc32(raw[rec_at + size * a : rec_at + size * b]) if 0 <= a <= b <= n else 0
        struct.pack_into("<I", raw, table_at + 8 * p + 4, crc)
    struct.pack_into("<I", raw, table_at + 8 * pages + 4, zlib.crc32(raw[table_at : table_at + 8 * pages + 4]))


def _with_data(s: Sample, data_section: bytes, fields: dict[str, Any] | None = None) -> bytes:
    t = s.trailer
    header = s.data[:HEADER_SIZE]
    shift = len(data_section) - t.data_len
    new = msgspec.structs.replace(
        t, data_len=len(data_section), toc_off=t.toc_off + shift, data_crc=zlib.crc32(data_section), **(fields or {})
    )
    return header + data_section + s.data[t.data_off + t.data_len : -TRAILER_SIZE] + new.pack(header)


def zarchive(s: Sample, section: bytes, data_crc: int | None = None) -> bytes:
    """The sample's header, ``section`` and a trailer for it (the data CRC kept unless given)."""
    header = s.data[:HEADER_SIZE]
    crc = s.trailer.data_crc if data_crc is None else data_crc
    return header + section + Trailer.compressed(len(section), crc, s.trailer.threshold).pack(header)


def _reframed(s: Sample, section: bytes) -> bytes:
    """A compressed sample with the plain data ``section``: the frames that hold what changed
    made again as they were made (raw, shuffled, with their dictionary), the TOC's frames as
    they are (the TOC names plain offsets), every checksum recomputed (``frames``)."""
    assert s.section is not None and s.plain is not None
    sec = ff.with_data(s.section, s.plain, section, s.dict_content)
    return zarchive(s, ff.build_section(sec), zlib.crc32(section))


def _crafted_data(s: Sample, section: bytes, desc: str) -> Mutation:
    """The mutation that gives ``s`` the data section ``section`` (plain bytes), every
    checksum valid: only decoding, or the TOC's checks, can tell."""
    if s.plain is not None:
        return Mutation(_reframed(s, section), desc + ", frames made again", "data", "data", "decode", section)
    return Mutation(_with_data(s, section), desc, "data", crafted="data", truth="decode")


def _section(s: Sample) -> bytes:
    """The sample's data section as plain msgpack."""
    t = s.trailer
    return s.plain if s.plain is not None else s.data[t.data_off : t.data_off + t.data_len]


def m_datacrc(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    t = s.trailer
    section = bytearray(_section(s))
    pos = rng.randrange(len(section))
    n = min(rng.choice([1, 1, 2, 3]), len(section) - pos)
    for k in range(n):
        section[pos + k] = rng.choice(INTERESTING) if rng.random() < 0.5 else section[pos + k] ^ (1 << rng.randrange(8))
    desc = f"data {t.data_off + pos}+{n} = {bytes(section[pos : pos + n]).hex()}, data CRC recomputed"
    return _crafted_data(s, bytes(section), desc)


def m_value(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A value made one that a read refuses: a byte of a str payload made invalid UTF-8, or
    a byte of a NumPy array's header (its descr or shape) changed; the data CRC recomputed."""
    t = s.trailer
    section = bytearray(_section(s))
    if "values" not in s.cache:  # (once per sample: a scan of its bytes)
        s.cache["values"] = (
            [p for p in range(len(section) - 1) if 0xA1 <= section[p] <= 0xBF],  # fixstr markers (or look-alikes)
            [
                p + 2 + width
                for width, marker in ((1, 0xC7), (2, 0xC8), (4, 0xC9))
                for p in range(len(section) - 2 - width)
                if section[p] == marker and section[p + 1 + width] == 78
            ],
        )
    strs, arrays = s.cache["values"]
    if arrays and (not strs or rng.random() < 0.4):
        at = rng.choice(arrays) + 4 + rng.randrange(12)  # past the header's length: its descr and shape
        if at >= len(section):
            return None
        section[at] = rng.choice([0x00, 0x7F, 0xC1, 0x91, 0x92, 0x93, section[at] ^ 1, section[at] ^ 0x40])
        what = "a NumPy header byte"
    elif strs:
        p = rng.choice(strs)
        at = p + 1 + rng.randrange(section[p] & 0x1F)
        if at >= len(section):
            return None
        section[at] = rng.choice([0x80, 0xBF, 0xC0, 0xC3, 0xED, 0xF8, 0xFF])
        what = "a str byte"
    else:
        return None
    desc = f"value: {what} at {t.data_off + at} = {section[at]:02x}, data CRC recomputed"
    return _crafted_data(s, bytes(section), desc)


def m_datashift(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    t = s.trailer
    section = _section(s)
    pos = rng.randrange(len(section))
    if rng.random() < 0.5:
        new = bytes([rng.choice(INTERESTING)]) * rng.choice([1, 1, 2])
        section = section[:pos] + new + section[pos:]
        desc = f"data: insert {new.hex()} at {t.data_off + pos}"
    else:
        k = min(rng.choice([1, 1, 2]), len(section) - pos)
        section = section[:pos] + section[pos + k :]
        desc = f"data: delete {t.data_off + pos}+{k}"
    if not section:
        return None
    return _crafted_data(s, section, desc + ", trailer offsets and CRC recomputed")
