"""msgpack data walked item by item, without recursion and in bounded memory: the checks,
values and item boundaries of data that msgspec cannot take in one call, because it is nested
deeper than Python's recursion limit lets msgspec go, or too large to decode at once.

The walker keeps the open containers on a list. At each step it lets msgpack's C unpacker
skip as many of the innermost container's remaining items as fit in a window of ``PIECE``
bytes, and hands that run to msgspec in one call (to check or to build its values, exactly
as the reader decodes them). An item that does not fit, or is nested too deeply for either, is
stepped into: its header is taken and its items become the innermost container. A scalar
longer than a window (a long str, bytes or NumPy array) is checked a window at a time, never
held whole. So a run of ordinary items costs two C calls, and only the deep or huge parts
cost a Python step per level.

The bytes come from a ``Data``: an archive's data section read once, in order (``verify``),
or a buffer in memory (``InMemory``).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from itertools import accumulate
from typing import Any, Protocol

import msgspec

from msglc.errors import CorruptedError, MsglcError, UnsupportedVersionError
from msglc.format.msgpack import (
    ARRAY_EXT,
    BIN_MARKERS,
    LENGTH_WIDTH,
    STR_MARKERS,
    array_header,
    container_header,
    container_header_size,
    map_header,
    scalar_size,
)
from msglc.format.numpy_ext import MAX_HEADER, check_text, ext_hook, has_text, parse_payload_header

PIECE = 1 << 20  # bytes decoded in one msgspec call, at most, by the walker (and its windows)


RUN = 1 << 16  # bytes a run of items is looked for in first (a window, PIECE, when the first item is longer)


RETRY_STEPS = 64  # items stepped one by one after msgspec or msgpack met too deep a value (doubling)


MAX_KEY_DEPTH = 1000  # levels of arrays a map key may nest (decoded as tuples); deeper is refused


value_decoder = msgspec.msgpack.Decoder(ext_hook=ext_hook)  # as the reader decodes values


raw_items = msgspec.msgpack.Decoder(list[msgspec.Raw])


DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError)


_NO_KEY = object()


class Data(Protocol):
    """Where the walker's bytes come from. Offsets only grow from one ``take`` to the next
    (a ``take`` may start where the previous one did, not before)."""

    def take(self, a: int, b: int, /) -> bytes | memoryview:
        """Bytes [a, b)."""
        ...

    def skip(self, a: int, b: int, /) -> None:
        """Bytes [a, b) are not looked at (a source that checksums them still reads them)."""
        ...


class InMemory:
    """``Data`` over a buffer in memory."""

    def __init__(self, buf: bytes | bytearray | memoryview) -> None:
        self.view = memoryview(buf)

    def take(self, a: int, b: int) -> memoryview:
        return self.view[a:b]

    def skip(self, a: int, b: int) -> None:
        pass


def _unpacker_module() -> Any:
    import msgpack  # here: only deep or large data need it (import msglc stays fast)

    return msgpack


class Walker:
    """The ``count`` msgpack values (with ``is_map``: ``count`` map entries, key then value)
    that must fill data[start:end] exactly, walked. ``build``: make their values (``run``
    returns them, a list or a dict); else, with ``decode``, check that they decode as the
    reader decodes them, and without it only find their boundaries. ``collect``: keep the
    end of every top-level item (``ends``) and the bytes of every top-level key (``keys``;
    such keys must then be scalars). Raises ``CorruptedError`` (``UnsupportedVersionError``
    for an unknown extension type) naming the offset, ``data_off`` + the position.

    A map key that is an array is decoded as msgspec decodes it, as a tuple; one nested more
    than ``MAX_KEY_DEPTH`` levels is refused (Python hashes a tuple by recursing in C, with
    no bound: a deep enough one crashes the process)."""

    def __init__(
        self,
        data: Data,
        start: int,
        end: int,
        count: int,
        *,
        is_map: bool = False,
        build: bool = False,
        decode: bool = True,
        collect: bool = False,
        data_off: int = 0,
    ) -> None:
        self.data, self.p, self.end, self.data_off = data, start, end, data_off
        self.build, self.decode = build, decode or build
        holder: Any = ({} if is_map else []) if build else None
        # open containers, outermost first: [items left, is a map, its value (build), its
        # pending key (a map's), nesting inside a map key (0: not a key's part)]
        self.stack: list[list[Any]] = [[2 * count if is_map else count, is_map, holder, _NO_KEY, 0]]
        self.ends: list[int] | None = [] if collect else None
        self.keys: list[bytes] | None = [] if collect and is_map else None
        self.steps, self.retry = 0, 0
        self.msgpack = _unpacker_module()
        if (2 * count if is_map else count) > end - start:  # every value takes a byte at least
            raise self._bad(f"{count} {'entries' if is_map else 'values'} cannot fit in {end - start} bytes")

    def run(self) -> Any:
        stack = self.stack
        while True:
            top = stack[-1]
            if not top[0]:
                if len(stack) == 1:
                    break
                stack.pop()
                if top[4]:  # a map key (or a part of one) complete: a tuple
                    self._key_done(top, stack[-1])
                if len(stack) == 1 and self.ends is not None:
                    self.ends.append(self.p)
                continue
            if self.steps >= self.retry and self._run(top):
                continue
            self._step(top)
        if self.p != self.end:
            raise self._bad(f"{self.end - self.p} bytes follow the values")
        return stack[0][2]

    def _bad(self, why: str, at: int | None = None) -> CorruptedError:
        return CorruptedError(
            f"data at offset {self.data_off + (self.p if at is None else at)} is not valid msgpack: {why}"
        )

    def _backoff(self) -> None:
        """A value too deep for msgpack's or msgspec's stack: step on by hand for a while."""
        self.retry = self.steps + max(RETRY_STEPS, self.steps)

    def _run(self, top: list[Any]) -> bool:
        """Take as many of the innermost container's items as fit in a window, in one
        msgspec call; False if none could be (the first is then stepped into)."""
        left, is_map = top[0], top[1]
        if left <= 2:  # (cheaper by hand: a run costs a window's copy and two calls)
            return False
        msgpack = self.msgpack
        p, size = self.p, RUN
        while True:
            window = self.data.take(p, min(self.end, p + size))
            unpacker = msgpack.Unpacker(max_buffer_size=max(len(window), 1))
            unpacker.feed(window)
            offs: list[int] = []
            skip, tell = unpacker.skip, unpacker.tell
            try:
                for _ in range(left):
                    skip()
                    offs.append(tell())
            except msgpack.StackError:
                if not offs:
                    self._backoff()
                    return False
            except Exception:  # too long for the window, or not valid: the item is stepped into, or reported
                pass
            if offs or size >= PIECE or p + size >= self.end:
                break
            size = PIECE  # the first item is longer than a small window: a whole one
        if not offs:
            return False
        lone = is_map and left % 2 == 1  # the first item is a value whose key was taken before
        m = len(offs)
        if is_map and (m - lone) % 2:
            m -= 1  # a key whose value did not fit: taken with it next time, or alone now
            if not m:
                return self._key_alone(top, window[: offs[0]])
        q = offs[m - 1]
        run = window[:q]
        values: Any = None
        try:
            if self.decode:
                values = self._values(run, offs, m, lone, is_map, top[4])
        except RecursionError:
            self._backoff()
            return False
        except DECODE_ERRORS as e:
            raise self._bad(str(e)) from None
        except (CorruptedError, UnsupportedVersionError) as e:  # from the NumPy array hook
            raise type(e)(f"data after offset {self.data_off + p}: {e}") from None
        if top[4] and self.decode and top[4] + _nesting(values) > MAX_KEY_DEPTH:
            raise self._bad(f"a map key is nested more than {MAX_KEY_DEPTH} levels deep")
        if self.build:
            container = top[2]
            if is_map:
                if lone:
                    container[top[3]] = values[0]
                container.update(values[1])
            else:
                container.extend(values)
        if len(self.stack) == 1:
            if self.ends is not None:
                self.ends.extend(p + o for o in offs[:m])
            if self.keys is not None:
                prev = [0, *offs[: m - 1]]
                self.keys.extend(bytes(run[prev[j] : offs[j]]) for j in range(1 if lone else 0, m, 2))
        top[0] -= m
        self.p = p + q
        return True

    @staticmethod
    def _values(run: bytes | memoryview, offs: list[int], m: int, lone: bool, is_map: bool, in_key: int) -> Any:
        """The ``m`` items of ``run`` decoded: a list (a tuple's items inside a map key), or
        for a map (the value of its pending key, the entries as a dict)."""
        if in_key:
            return next(iter(value_decoder.decode(b"\x81" + array_header(m) + run + b"\xc0")))
        if not is_map:
            return value_decoder.decode(array_header(m) + run)
        first = offs[0] if lone else 0
        value = value_decoder.decode(run[:first]) if lone else None
        return value, value_decoder.decode(map_header((m - lone) // 2) + run[first : offs[m - 1]])

    def _key_alone(self, top: list[Any], raw: bytes | memoryview) -> bool:
        """A map key that fits a window when its value does not: decoded now, its value next."""
        try:
            key = next(iter(value_decoder.decode(b"\x81" + raw + b"\xc0"))) if self.decode else None
        except RecursionError:
            self._backoff()
            return False
        except DECODE_ERRORS as e:
            raise self._bad(str(e)) from None
        except (CorruptedError, UnsupportedVersionError) as e:
            raise type(e)(f"data at offset {self.data_off + self.p}: {e}") from None
        top[3] = key
        top[0] -= 1
        self.p += len(raw)
        if len(self.stack) == 1:
            if self.ends is not None:
                self.ends.append(self.p)
            if self.keys is not None:
                self.keys.append(bytes(raw))
        return True

    def _step(self, top: list[Any]) -> None:
        """Take the next item of the innermost open container by hand."""
        p, end = self.p, self.end
        if p >= end:
            raise self._bad("the data ends inside a value")
        head = self.data.take(p, min(end, p + 9))
        first = head[0]
        as_key = top[1] and not top[0] % 2
        in_key = top[4] + 1 if as_key or top[4] else 0  # nesting of this item inside a map key
        top[0] -= 1
        self.steps += 1
        h = container_header_size(first)
        if h:
            if p + h > end:
                raise self._bad("the data ends inside a container header")
            is_map, n, h = container_header(head[:h])
            if in_key:
                if is_map:
                    raise self._bad("map keys must be hashable (a map is not)")
                if in_key > MAX_KEY_DEPTH:
                    raise self._bad(f"a map key is nested more than {MAX_KEY_DEPTH} levels deep")
                if self.keys is not None and len(self.stack) == 1:
                    raise self._bad("a map key is not a str or an int")
            items = 2 * n if is_map else n
            if items > end - p - h:
                raise self._bad(f"a container of {n} items cannot fit in the {end - p - h} bytes left")
            value: Any = ({} if is_map else []) if self.build else None
            if self.build and not in_key:
                self._attach(top, value, False)
            self.stack.append([items, is_map, value, _NO_KEY, in_key])
            self.p = p + h
            return
        size = scalar_size(head, 0)
        if size is None:
            raise self._bad(f"byte 0x{first:02x} starts no msgpack value")
        if p + size > end:
            raise self._bad("the data ends inside a value")
        raw: bytes | memoryview | None = None
        long = size > PIECE and first in LENGTH_WIDTH  # a str, bytes or extension value longer than a window
        if not long or self.build or (as_key and self.keys is not None and len(self.stack) == 1):
            raw = self.data.take(p, p + size)
            if self.decode:
                value = self._decode_one(raw, as_key, in_key, p)
                if self.build:
                    self._attach(top, value, as_key)
        elif self.decode:
            self._check_long(head, p, size, in_key)
        else:
            self.data.skip(p, p + size)
        self.p = p + size
        if len(self.stack) == 1:
            if self.ends is not None:
                self.ends.append(self.p)
            if self.keys is not None and as_key and raw is not None:
                self.keys.append(bytes(raw))

    @staticmethod
    def _attach(top: list[Any], value: Any, as_key: bool) -> None:
        if not top[1]:
            top[2].append(value)
        elif as_key:
            top[3] = value
        else:
            top[2][top[3]] = value

    def _key_done(self, frame: list[Any], parent: list[Any]) -> None:
        """An array inside a map key is complete: as a tuple, a part of the key or the key."""
        if not self.build:
            return
        key = tuple(frame[2])
        if parent[4]:
            parent[2].append(key)
            return
        try:
            hash(key)
        except TypeError:
            raise self._bad("map keys must be hashable") from None
        parent[3] = key

    def _decode_one(self, raw: bytes | memoryview, as_key: bool, in_key: int, at: int) -> Any:
        """One scalar decoded as the reader decodes it: as a map key, or as an item of an
        array that is (a part of) a map key."""
        try:
            if as_key:
                return next(iter(value_decoder.decode(b"\x81" + raw + b"\xc0")))
            if in_key:
                return next(iter(value_decoder.decode(b"\x81\x91" + raw + b"\xc0")))[0]
            return value_decoder.decode(raw)
        except DECODE_ERRORS as e:
            raise self._bad(str(e), at) from None
        except (CorruptedError, UnsupportedVersionError) as e:
            raise type(e)(f"data at offset {self.data_off + at}: {e}") from None

    def _check_long(self, head: bytes | memoryview, p: int, size: int, in_key: int) -> None:
        """A scalar longer than a window, checked a window at a time: a str must be UTF-8,
        an extension value a NumPy array (its header checked, and its str elements); bytes
        are skipped."""
        first = head[0]
        width = LENGTH_WIDTH[first]
        if first in BIN_MARKERS:
            self.data.skip(p, p + size)
        elif first in STR_MARKERS:
            check_utf8(self.data, p + 1 + width, p + size, lambda e: self._bad(f"a str is not UTF-8: {e}", p))
        else:  # ext 8/16/32
            code = int.from_bytes(head[1 + width : 2 + width], "big", signed=True)
            at = p + 2 + width
            length = size - 2 - width
            if code != ARRAY_EXT:
                if code == -1:
                    raise self._bad(f"an msgpack timestamp of {length} bytes", p)
                raise UnsupportedVersionError(
                    f"data at offset {self.data_off + p} holds an msgpack extension value of type {code}, "
                    "unknown to this msglc"
                )
            payload = self.data.take(at, at + min(length, 4 + MAX_HEADER))
            dtype, _, start, _ = parse_payload_header(payload, length, self.data_off + p)
            del payload
            if in_key:
                raise self._bad("map keys must be hashable (a NumPy array is not)", p)
            check_array(self.data, dtype, at + start, p + size, self.data_off + p)


def _nesting(items: tuple[Any, ...]) -> int:
    """How deep tuples nest inside ``items`` (0: none), without recursion."""
    deepest, stack = 0, [(items, 0)]
    while stack:
        here, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((x, depth + 1) for x in here if type(x) is tuple)
    return deepest


def check_utf8(data: Data, a: int, b: int, bad: Callable[[Exception], MsglcError]) -> None:
    """The bytes [a, b) must be UTF-8 (as Python decodes it, strictly), checked a window at
    a time."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        for at in range(a, b, PIECE):
            decoder.decode(data.take(at, min(b, at + PIECE)))
        decoder.decode(b"", True)
    except UnicodeDecodeError as e:
        raise bad(e) from None


def check_array(data: Data, dtype: Any, a: int, b: int, where: int) -> None:
    """The elements [a, b) of a NumPy array of ``dtype``: str elements must be code points
    (``check_text``), a window of whole elements at a time; other elements are skipped."""
    if not has_text(dtype):
        data.skip(a, b)
        return
    import numpy as np  # loaded already: parsing the header needed it

    step = max(1, PIECE // dtype.itemsize) * dtype.itemsize
    for at in range(a, b, step):
        check_text(np.frombuffer(data.take(at, min(b, at + step)), dtype), where)


def check_items(
    data: Data,
    start: int,
    end: int,
    count: int,
    *,
    is_map: bool = False,
    collect: bool = False,
    base: int = 0,
    data_off: int = 0,
) -> tuple[list[int], list[Any]] | None:
    """Check that data[start:end] is exactly ``count`` msgpack values (``is_map``: entries)
    that decode as the reader decodes them: in one msgspec call when it is at most ``PIECE``
    bytes and not too deep for msgspec, else by a ``Walker``. ``collect``: also return the
    items' offsets from ``base`` (the first item's start, then every item's end) and every
    key's bytes (a buffer each)."""
    items = 2 * count if is_map else count
    if end - start <= PIECE and items < 1 << 32:
        buf = data.take(start, end)
        try:
            value_decoder.decode((map_header if is_map else array_header)(count) + buf)
            if not collect:
                return None
            raws = raw_items.decode(array_header(items) + buf)
            return list(accumulate(map(len, raws), initial=start - base)), raws[0::2] if is_map else []
        except RecursionError:
            pass
        except DECODE_ERRORS as e:
            raise CorruptedError(
                f"data at offset {data_off + start} ({end - start} bytes) is not {count} msgpack "
                f"{'entries' if is_map else 'values'}: {e}"
            ) from None
        except (CorruptedError, UnsupportedVersionError) as e:  # from the NumPy array hook
            raise type(e)(f"data at offset {data_off + start} ({end - start} bytes): {e}") from None
        del buf
    walker = Walker(data, start, end, count, is_map=is_map, collect=collect, data_off=data_off)
    walker.run()
    if not collect:
        return None
    return [start - base, *(e - base for e in walker.ends or [])], walker.keys or []


def deep_decode(buf: bytes | bytearray | memoryview, data_off: int = 0) -> Any:
    """The msgpack value that fills ``buf``, decoded as msgspec decodes it (the reader's
    decoder), at any depth: for a value nested deeper than msgspec can go."""
    return Walker(InMemory(buf), 0, len(buf), 1, build=True, data_off=data_off).run()[0]


def item_ends(buf: bytes | bytearray | memoryview, start: int, end: int, count: int, data_off: int = 0) -> list[int]:
    """The end offsets of the ``count`` msgpack values that fill buf[start:end] exactly,
    not decoded, at any depth (``msgspec.Raw`` items where msgspec cannot skip them)."""
    walker = Walker(InMemory(buf), start, end, count, decode=False, collect=True, data_off=data_off)
    walker.run()
    return walker.ends or []
