"""Check a whole archive: the data checksum, and every TOC node against the data it describes.

Lazy reads check what they touch (node CRCs, bounds, container headers, keys). ``verify``
is the thorough pass for archives fetched from cold storage: it reads the data section once
and checks every node against the item boundaries, keys and headers found in the bytes (with
the writer's own functions, or loops that give the same answers where those recurse), so a
TOC that passes its checksums but does not describe its data is reported too. The checks do
not depend on the threshold: the parts of a combined archive may have been written with
different ones.

Every failure is an ``MsglcError``. Nothing here recurses on the file's nesting: item
boundaries are found by msgspec at C speed, and where a value is nested deeper than msgspec
can go within Python's recursion limit (a ``combine`` of a ``combine`` ... of an archive, or
another writer's file), by an iterative scan that steps into the deep part and hands the rest
back to msgspec. A valid archive is never called corrupted for being deep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate
from typing import Any

import msgspec

from msglc.errors import CorruptedError, MsglcError, UnsupportedVersionError
from msglc.format.hash_index import MAP_INLINE_MAX, region_of_keys
from msglc.format.msgpack import (
    FIXED_SCALAR_SIZE,
    array_header,
    container_header,
    container_header_size,
    gets_node,
)
from msglc.format.nodes import ArrayNode, BlockHashMapNode, HashMapNode, ListNode, MapNode, Node, Ref, StrideNode
from msglc.format.numpy_ext import ext_hook, parse_head
from msglc.format.strides import stride_dims
from msglc.read.archive import Archive
from msglc.util.checksum import data_crc32

_key_decoder: msgspec.msgpack.Decoder[str | int] = msgspec.msgpack.Decoder(str | int)
_keys_decoder: msgspec.msgpack.Decoder[list[str | int]] = msgspec.msgpack.Decoder(list[str | int])


raw_items = msgspec.msgpack.Decoder(list[msgspec.Raw])


value_decoder = msgspec.msgpack.Decoder(ext_hook=ext_hook)  # as the reader decodes values


_DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError)


CHUNK = 1 << 24


RETRY_STEPS = 64  # items stepped through one by one before msgspec is tried again (doubling)


def verify_archive(a: Archive, progress: Callable[[int], None] | None = None) -> None:
    t = a.trailer
    # a plain data section is as long as the file says; a compressed one's length comes from
    # its seek table, unchecked until its frames decompress: the buffer grows with the data
    plain = a.stored_data_len == t.data_len
    data = bytearray(t.data_len if plain else 0)
    crc32, crc = data_crc32(), 0
    for offset in range(0, t.data_len, CHUNK):  # in pieces, to report progress
        size = min(CHUNK, t.data_len - offset)
        if plain:
            piece = memoryview(data)[offset : offset + size]
            piece[:] = a.read(t.data_off + offset, size)
        else:
            data += a.read(t.data_off + offset, size)
            piece = memoryview(data)[offset:]
        crc = crc32(piece, crc)
        piece.release()
        if progress is not None:
            progress(size)
    if crc != t.data_crc:
        raise CorruptedError(f"data section checksum mismatch ({t.data_len} bytes at offset {t.data_off})")
    if not t.root_len:
        _check_value(data, t.data_off)
        return
    a.container(t.data_off, t.data_len, t.toc_off + t.root_pos, t.root_len)  # checks header and span
    stack = [(0, len(data), t.toc_off + t.root_pos, t.root_len)]
    while stack:
        start, end, pos, size = stack.pop()
        node = a.node(pos, size)
        children, index = _check(data, node, start, end, f"TOC node at offset {pos}", t.data_off)
        if index is not None and bytes(a.read(pos - index[0][0], index[0][1])) != index[1]:
            raise CorruptedError(f"hash index of the TOC node at offset {pos} does not match its dict")
        for ref, child_start, child_end in children:
            child = a.referred(pos, ref)
            a.container(t.data_off + child_start, child_end - child_start, child, ref[1])
            stack.append((child_start, child_end, child, ref[1]))


def _check(
    data: bytes | bytearray, node: Node, start: int, end: int, where: str, data_off: int = 0
) -> tuple[list[tuple[Ref, int, int]], tuple[Ref, bytes] | None]:
    """Check ``node`` against the container at data[start:end]. Returns each child node's
    reference and data span (start, end), in the order of ``node.kids``, and, for a
    hash-indexed dict, its ``index`` reference with the index region the writer writes."""
    view = memoryview(data)
    if isinstance(node, ArrayNode):
        _, _, head = parse_head(view[start:end], start, end - start)
        if (node.head, node.size) != (head, end - start - head):
            raise CorruptedError(f"{where} does not describe the NumPy array at data offset {start}")
        return [], None
    is_map, n, h = container_header(view[start : start + 5])
    if isinstance(node, StrideNode):
        if is_map or [tuple(d) for d in node.dims] != stride_dims(data, start, h, n, end):
            raise CorruptedError(f"{where} does not describe the fixed-stride list at data offset {start}")
        return [], None
    # item boundaries, relative to start: item i (key, value, key, ... for a dict) at offs[i]
    offs, raws = _items(
        data, start + h, end, 2 * n if is_map else n, data_off, head=None if is_map else start, base=start
    )
    if is_map:
        koffs, voffs = offs[0::2], offs[1::2]
        key_raws = (
            raws[0::2]
            if raws is not None
            else [data[start + a : start + b] for a, b in zip(koffs, voffs, strict=False)]
        )
    else:
        koffs = voffs = offs
        key_raws = []
    if isinstance(node, MapNode):
        if (
            not is_map
            or n > MAP_INLINE_MAX
            or node.keys != [_key(r, start, where) for r in key_raws]
            or node.koffs != koffs
            or node.voffs != voffs
            or not _kids_ok(view, start, voffs, node.kids)
        ):
            raise CorruptedError(f"{where} does not describe the dict at data offset {start}")
        return [(ref, start + voffs[j], start + koffs[j + 1]) for j, ref in node.kids.items()], None
    # spans: every span starts at an item boundary; a kid span is one item with a node of its own
    entries = [node.starts[k] for k in node.kids]
    if (
        node.n != n
        or is_map != isinstance(node, HashMapNode)
        or node.offs != [koffs[i] for i in node.starts] + [koffs[n]]
        or not _kids_ok(view, start, voffs, dict.fromkeys(entries))
    ):
        raise CorruptedError(f"{where} does not describe the {'dict' if is_map else 'list'} at data offset {start}")
    children = [(ref, start + voffs[node.starts[k]], start + koffs[node.starts[k] + 1]) for k, ref in node.kids.items()]
    if isinstance(node, ListNode):
        return children, None
    kid_keys = {_key(key_raws[node.starts[k]], start, where): k for k in node.kids}
    if len(set(_keys(key_raws, start, where))) != n:  # (an inline dict's node is checked for this)
        raise CorruptedError(f"{where}: the dict at data offset {start} holds a key twice")
    region = region_of_keys(key_raws, koffs, node.block_bits if isinstance(node, BlockHashMapNode) else None)
    if (
        n <= MAP_INLINE_MAX
        or node.kid_keys != kid_keys
        or (node.page_bits, node.offs_width, node.offs_crc, node.index[1])
        != (region.page_bits, region.width, region.offs_crc, region.size)
    ):
        raise CorruptedError(f"{where} does not describe the dict at data offset {start}")
    return children, (node.index, b"".join(region.parts))


def _kids_ok(data: memoryview, start: int, voffs: list[int], kids: Mapping[int, object]) -> bool:
    """Every child with a node is an array, a map or a NumPy array."""
    return all(gets_node(data, start + voffs[j]) for j in kids)


def _key(raw: msgspec.Raw | bytes | bytearray, start: int, where: str) -> str | int:
    """A dict key as a node lists it: msglc writes str and int keys only."""
    try:
        return _key_decoder.decode(raw)
    except _DECODE_ERRORS:
        raise CorruptedError(
            f"{where}: the dict at data offset {start} has a key that is not a str or an int"
        ) from None


def _keys(raws: Sequence[msgspec.Raw | bytes | bytearray], start: int, where: str) -> list[str | int]:
    """``_key`` of every raw key, decoded in one C call."""
    try:
        return _keys_decoder.decode(array_header(len(raws)) + b"".join(raws))
    except _DECODE_ERRORS:
        raise CorruptedError(
            f"{where}: the dict at data offset {start} has a key that is not a str or an int"
        ) from None


def _too_deep(offset: int) -> MsglcError:
    return MsglcError(
        f"the value at data offset {offset} is nested deeper than this Python process can decode "
        "(its recursion limit, sys.getrecursionlimit()); the archive may well be intact: check it "
        "with a higher limit"
    )


def _check_value(data: bytes | bytearray, data_off: int) -> None:
    """The whole data section (a root without a node) must decode as the reader decodes it;
    a value nested too deeply for that is checked item by item instead."""
    try:
        value_decoder.decode(data)
        return
    except RecursionError:
        pass
    except _DECODE_ERRORS as e:
        raise CorruptedError(f"data at offset {data_off} ({len(data)} bytes) is not valid msgpack: {e}") from None
    except (CorruptedError, UnsupportedVersionError) as e:  # from the NumPy array hook
        raise type(e)(f"data at offset {data_off} ({len(data)} bytes): {e}") from None
    item_ends(data, 0, len(data), 1, data_off, decode=True)


def item_ends(
    data: bytes | bytearray,
    start: int,
    end: int,
    count: int,
    data_off: int = 0,
    decode: bool = False,
    head: int | None = None,
) -> list[int]:
    """The end offsets of the ``count`` msgpack values that fill data[start:end] exactly,
    as msgspec finds them (``indexer.list_raws``). With ``decode``, every value must also
    decode as the reader decodes it (strings, map keys, NumPy arrays). Raises
    ``CorruptedError`` if the bytes are not such values; never recurses on their nesting.
    ``head``: where an array header for these ``count`` items starts (data[head:start]),
    read in place of a copy of the items behind a new one."""
    return _items(data, start, end, count, data_off, decode, head)[0][1:]


def _items(
    data: bytes | bytearray,
    start: int,
    end: int,
    count: int,
    data_off: int,
    decode: bool = False,
    head: int | None = None,
    base: int = 0,
) -> tuple[list[int], list[msgspec.Raw] | None]:
    """The items' offsets from ``base`` (the first item's, then every item's end), and the
    items as ``msgspec.Raw`` views when msgspec found them (see ``item_ends``)."""
    if count > end - start:  # every value takes a byte at least
        raise CorruptedError(f"data at offset {data_off + start}: {count} values cannot fit in {end - start} bytes")
    if not decode and count < 1 << 32:
        try:
            view = memoryview(data)
            raws = raw_items.decode(view[head:end] if head is not None else array_header(count) + view[start:end])
            return list(accumulate(map(len, raws), initial=start - base)), raws
        except RecursionError:
            pass
        except _DECODE_ERRORS as e:
            raise CorruptedError(
                f"data at offset {data_off + start} ({end - start} bytes) is not {count} msgpack values: {e}"
            ) from None
    ends = Scan(data, start, end, count, data_off, decode).run()
    return [start - base] + [e - base for e in ends], None


class Scan:
    """Steps through msgpack values one item at a time, keeping the open containers on a
    list instead of the call stack. The values left at any moment are exactly the remaining
    items of every open container, innermost first, so every so often msgspec is asked to
    take them all as one flat array: once the deep part is behind, it does the rest."""

    def __init__(self, data: bytes | bytearray, start: int, end: int, count: int, data_off: int, decode: bool) -> None:
        self.data, self.view = data, memoryview(data)
        self.end, self.data_off, self.decode = end, data_off, decode
        self.p = start
        # open containers, outermost first: [items left, is a map, its items are (parts of) keys]
        self.stack: list[list[Any]] = [[count, False, False]]
        self.ends: list[int] = []

    def run(self) -> list[int]:
        steps, retry = 0, RETRY_STEPS
        stack = self.stack
        while True:
            top = stack[-1]
            if not top[0]:
                if len(stack) == 1:
                    break
                stack.pop()
                if len(stack) == 1:
                    self.ends.append(self.p)
                continue
            if steps >= retry:
                if self._rest_at_once():
                    break
                retry = 2 * steps
            self._step(top)
            steps += 1
        if self.p != self.end:
            raise self._bad(f"{self.end - self.p} bytes follow the values")
        return self.ends

    def _bad(self, why: str) -> CorruptedError:
        return CorruptedError(f"data at offset {self.data_off + self.p} is not valid msgpack: {why}")

    def _step(self, top: list[Any]) -> None:
        """Take the next item of the innermost open container."""
        as_key = top[2] or (top[1] and not top[0] % 2)
        top[0] -= 1
        p, end = self.p, self.end
        if p >= end:
            raise self._bad("the data ends inside a value")
        first = self.data[p]
        h = container_header_size(first)
        if h:
            if p + h > end:
                raise self._bad("the data ends inside a container header")
            is_map, n, h = container_header(self.view[p : p + h])
            if as_key and is_map and self.decode:
                raise self._bad("a map is used as a map key (keys must be hashable)")
            items = 2 * n if is_map else n
            self.p = p + h
            if items > end - self.p:
                raise self._bad(f"a container of {n} items cannot fit in the {end - self.p} bytes left")
            self.stack.append([items, is_map, as_key])
            return
        size = _scalar_size(self.data, p)
        if size is None:
            raise self._bad(f"byte 0x{first:02x} starts no msgpack value")
        if p + size > end:
            raise self._bad("the data ends inside a value")
        if self.decode:
            self._decode(self.view[p : p + size], as_key, p)
        self.p = p + size
        if len(self.stack) == 1:
            self.ends.append(self.p)

    def _decode(self, raw: msgspec.Raw | memoryview, as_key: bool, at: int) -> None:
        """One value (not too deep: its bytes are one scalar, or its container was skipped by
        msgspec), decoded as the reader would decode it, as a map key if ``as_key``."""
        try:
            value_decoder.decode(b"\x81" + raw + b"\xc0" if as_key else raw)
        except RecursionError:
            raise _too_deep(self.data_off + at) from None
        except _DECODE_ERRORS as e:
            raise CorruptedError(f"data at offset {self.data_off + at} is not valid msgpack: {e}") from None
        except (CorruptedError, UnsupportedVersionError) as e:
            raise type(e)(f"data at offset {self.data_off + at}: {e}") from None

    def _rest_at_once(self) -> bool:
        """Let msgspec take every value left as one flat array; False if that is still too
        deep for it (the scan then steps on)."""
        stack = self.stack
        if self.decode and any(frame[2] for frame in stack):
            return False  # inside a key: its items must be checked as keys, one by one
        counts = [frame[0] for frame in reversed(stack)]  # innermost first, as they come
        rest = self.view[self.p : self.end]
        total = sum(counts)
        if total > len(rest):  # every value takes a byte at least
            raise self._bad(f"{total} values cannot fit in the {len(rest)} bytes left")
        if total >= 1 << 32:
            return False  # more than one msgpack array can hold: step on
        flat = array_header(total) + rest
        try:
            if self.decode:  # first, so that errors come in the order the reader meets them
                value_decoder.decode(flat)
            raws = raw_items.decode(flat)
        except RecursionError:
            return False
        except _DECODE_ERRORS as e:
            raise self._bad(str(e)) from None
        except (CorruptedError, UnsupportedVersionError) as e:  # from the NumPy array hook
            raise type(e)(f"data after offset {self.data_off + self.p}: {e}") from None
        offs = list(accumulate(map(len, raws), initial=self.p))
        if self.decode:
            i = 0
            for frame, count in zip(reversed(stack), counts, strict=True):
                if frame[1]:  # a map's items left: every other one, from the first if even, is a key
                    for j in range(i + count % 2, i + count, 2):
                        self._decode(raws[j], True, offs[j])
                i += count
        i = 0
        for depth, count in zip(range(len(stack) - 1, -1, -1), counts, strict=True):
            i += count
            if depth == 1:  # the top-level container that was open ends here
                self.ends.append(offs[i])
            elif depth == 0:
                self.ends.extend(offs[i - count + 1 : i + 1])
        self.p = self.end
        for frame in stack:
            frame[0] = 0
        del stack[1:]
        return True


def _scalar_size(data: bytes | bytearray, p: int) -> int | None:
    """The encoded size of the msgpack scalar starting at data[p] (None: not a scalar);
    reads the length field of str, bin and ext values, which must lie in ``data``."""
    m = data[p]
    if m < 0x80 or m >= 0xE0 or m in (0xC0, 0xC2, 0xC3):
        return 1
    if 0xA0 <= m <= 0xBF:
        return 1 + (m & 0x1F)
    size = FIXED_SCALAR_SIZE.get(m)
    if size is not None:
        return size
    if 0xD4 <= m <= 0xD8:  # fixext 1, 2, 4, 8, 16: type byte and payload
        return 2 + (1 << (m - 0xD4))
    width = _LENGTH_WIDTH.get(m)
    if width is None:
        return None  # 0xc1, or a container
    if p + 1 + width > len(data):
        return len(data) + 1 - p  # past the end: the caller reports it
    length = int.from_bytes(data[p + 1 : p + 1 + width], "big")
    return 1 + width + length + (1 if m in (0xC7, 0xC8, 0xC9) else 0)


# str 8/16/32, bin 8/16/32, ext 8/16/32: bytes of the length field
_LENGTH_WIDTH = {0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC4: 1, 0xC5: 2, 0xC6: 4, 0xC7: 1, 0xC8: 2, 0xC9: 4}
