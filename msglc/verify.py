"""Check a whole archive: the data checksum and every TOC node reachable from the root.

Lazy reads check only what they touch (node CRCs, bounds, index pages); ``verify`` is the
thorough pass for archives fetched from cold storage: it reads everything once, in chunks.
"""

from __future__ import annotations

import struct
import zlib
from typing import TYPE_CHECKING

import msgspec

from .errors import CorruptedError
from .format import HashMapNode, ListNode, MapNode, StrideNode

if TYPE_CHECKING:
    from .reader import Archive

CHUNK = 1 << 24


def verify_archive(a: Archive) -> None:
    t = a.trailer
    crc = 0
    for off in range(t.data_off, t.data_off + t.data_len, CHUNK):
        crc = zlib.crc32(a.read(off, min(CHUNK, t.data_off + t.data_len - off)), crc)
    if crc != t.data_crc:
        raise CorruptedError(f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off})")
    if not t.root_len:
        return
    root = a.view(t.data_off, t.data_len, t.toc_off + t.root_pos, t.root_len)
    stack = [(root._base, root._pos)]
    while stack:
        base, pos = stack.pop()
        node = a.nodes[pos]
        if isinstance(node, StrideNode):
            continue
        if isinstance(node, MapNode):
            spans = {j: (node.voffs[j], node.koffs[j + 1]) for j in node.kids}
        else:
            spans = {k: (node.offs[k], node.offs[k + 1]) for k in node.kids}
            if isinstance(node, HashMapNode):
                _verify_hash_index(a, pos, node)
                kid_key = {k: key for key, k in node.kid_keys.items()}
                if set(kid_key) != set(node.kids):
                    raise CorruptedError(f"TOC node at offset {pos}: large values without keys")
        for k, (start, end) in spans.items():
            if isinstance(node, HashMapNode):
                start += len(_key_bytes(kid_key[k]))
            child = a.child(base + start, end - start, pos, node.kids[k])
            stack.append((child._base, child._pos))
        if isinstance(node, ListNode) and node.offs[-1] > t.data_len:
            raise CorruptedError(f"TOC node at offset {pos} is longer than the data section")


def _key_bytes(key: object) -> bytes:
    return msgspec.msgpack.encode(key)


def _verify_hash_index(a: Archive, pos: int, node: HashMapNode) -> None:
    region = pos - node.index[0]
    if region < a.trailer.toc_off or region + node.index[1] > pos:
        raise CorruptedError(f"hash index of the TOC node at offset {pos} lies outside the TOC")
    n, width, pages = node.n, node.offs_width, 1 << node.page_bits
    offs_bytes = a.read(region, (n + 1) * width)
    if zlib.crc32(offs_bytes) != node.offs_crc:
        raise CorruptedError(f"entry offset table at offset {region} fails its checksum")
    offs = struct.unpack(f"<{n + 1}{'I' if width == 4 else 'Q'}", offs_bytes)
    if offs[0] != node.offs[0] or offs[-1] != node.offs[-1] or not all(map(int.__lt__, offs, offs[1:])):
        raise CorruptedError(f"entry offset table at offset {region} is not increasing within its dict")
    table_at = region + (n + 1) * width
    table_bytes = a.read(table_at, 8 * (pages + 1))
    table = struct.unpack(f"<{2 * (pages + 1)}I", table_bytes)
    firsts, crcs = table[0::2], table[1::2]
    if zlib.crc32(table_bytes[:-4]) != crcs[-1]:
        raise CorruptedError(f"hash page table at offset {table_at} fails its checksum")
    if firsts[0] != 0 or firsts[-1] != n or not all(map(int.__le__, firsts, firsts[1:])):
        raise CorruptedError(f"hash page table at offset {table_at} is inconsistent")
    records = memoryview(a.read(table_at + 8 * (pages + 1), 8 * n))
    for p in range(pages):
        if zlib.crc32(records[8 * firsts[p] : 8 * firsts[p + 1]]) != crcs[p]:
            raise CorruptedError(f"hash index page {p} fails its checksum")
