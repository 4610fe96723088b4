"""A data section compressed as independent zstd frames plus their tables (``format.frames``;
design: docs/compression.md). Frames are cut where the TOC says items begin, so that a small
item never needs two frames, and runs of fixed-size numbers (fixed-stride lists, NumPy
elements) are cut at whole elements and byte-shuffled where that compresses better. Frames
are compressed in a thread pool (zstd releases the GIL), each thread with its own compressor
(one is not thread-safe)."""

from __future__ import annotations

import sys
import threading
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import accumulate
from operator import add

import msgspec

from msglc.format.frames import (
    MAX_FRAME,
    MIN_FRAME_SIZE,
    NO_FILTER,
    SHUFFLE,
    pack_filter_table,
    pack_seek_table,
)
from msglc.format.msgpack import FIXED_SCALAR_SIZE, array_header
from msglc.format.nodes import ArrayNode, HashMapNode, ListNode, MapNode, StrideNode, node_span, unframe_node
from msglc.format.numpy_ext import parse_head
from msglc.util.optional import zstandard

THREADS = 2  # compression threads (this machine has 2 cores; more only queue)
SLACK = 8  # a frame may exceed the frame size by 1/SLACK to end at an item boundary
MAX_ELEMENT = 255  # the largest element a shuffle filter names (one byte)
ARRAY_FRAME = 1 << 16  # least plain bytes per frame of NumPy elements: bulk reads then cost ~1/8 of
# the per-frame Python work of 8 KB frames, and one element read decompresses 64 KB (~70 us)

# A planned frame: (end offset in the plain data, element size it may be shuffled by, or 0;
# the run it belongs to, or -1: frames of one run are shuffled or not together)
Frame = tuple[int, int, int]


def frame_size(threshold: int) -> int:
    """Plain bytes per frame: about the threshold, so a random read decompresses one small
    frame (docs/compression.md measures the trade-off), within the reader's bound."""
    return min(max(threshold, MIN_FRAME_SIZE), MAX_FRAME)


def compressed_section(data: bytes | memoryview, size: int, level: int) -> Iterator[bytes]:
    """The frames of ``data`` cut every ``size`` bytes, compressed at ``level`` with each
    frame's content size and checksum recorded, in order, then the seek table."""
    if not MIN_FRAME_SIZE <= size <= MAX_FRAME:
        raise ValueError(f"frame size must be in [{MIN_FRAME_SIZE}, {MAX_FRAME}], not {size}")
    total = len(memoryview(data).cast("B"))
    return compressed_frames(data, [(min(end, total), 0, -1) for end in range(size, total + size, size)], level)


def compressed_frames(data: bytes | memoryview, frames: Sequence[Frame], level: int) -> Iterator[bytes]:
    """The frames of ``data`` as planned (``plan_frames``), compressed at ``level`` with each
    frame's content size and checksum recorded, in order; then the filter table (when some
    frame is shuffled) and the seek table. Each run of numbers is shuffled when its first
    frame compresses smaller so."""
    zstd = zstandard()
    local = threading.local()
    view = memoryview(data).cast("B")
    starts = [0, *(end for end, _, _ in frames[:-1])]

    def compressor() -> object:
        c = getattr(local, "compressor", None)
        if c is None:
            c = local.compressor = zstd.ZstdCompressor(level=level, write_checksum=True)
        return c

    def compress(i: int, element: int) -> bytes:
        piece = view[starts[i] : frames[i][0]]
        c: object = compressor()
        frame: bytes = c.compress(shuffle(piece, element) if element else piece)  # type: ignore[attr-defined]
        return frame

    shuffled: dict[int, bool] = {}  # run -> shuffled or not, from its first frame
    for i, (_, element, run) in enumerate(frames):
        if element and run not in shuffled:
            shuffled[run] = len(compress(i, element)) < len(compress(i, 0))
    filters = [(SHUFFLE, e) if e and shuffled[run] else (NO_FILTER, 0) for _, e, run in frames]
    sizes = []
    with ThreadPoolExecutor(THREADS) as pool:
        for i, frame in enumerate(pool.map(compress, range(len(frames)), [e for _, e in filters])):
            sizes.append((len(frame), frames[i][0] - starts[i]))
            yield frame
    if any(code for code, _ in filters):
        yield pack_filter_table(filters)
    yield pack_seek_table(sizes)


def shuffle(piece: memoryview, element: int) -> bytes:
    """Byte 0 of every ``element``-byte element of ``piece``, then byte 1, and so on (the
    reader's ``unshuffle`` undoes it)."""
    data = bytes(piece)
    return b"".join(data[k::element] for k in range(element))


def plan_frames(
    total: int,
    size: int,
    boundaries: Sequence[int],
    runs: Sequence[tuple[int, int, int, int]] = (),
    forced: Sequence[int] = (),
) -> list[Frame]:
    """Frames for ``total`` plain bytes of about ``size`` each: outside runs, cut at the last
    item boundary (``boundaries``, any order) within ``size`` (plus a little slack), else at
    ``size``, and always at ``forced`` offsets; a run (start, end, element, least) of
    fixed-size numbers starts a frame and is cut into whole multiples of ``element`` bytes of
    about ``max(size, least)`` (its last frame takes the rest)."""
    cuts = sorted(set(boundaries).union(forced))
    must = sorted(set(forced))
    runs = sorted(runs)
    out: list[Frame] = []
    pos, r = 0, 0
    while pos < total:
        if r < len(runs) and runs[r][0] <= pos:
            start, end, element, least = runs[r]
            step = max(element, min(max(size, least), MAX_FRAME) // element * element)
            while pos < end:
                stop = min(end, pos + step)
                out.append((stop, element if (stop - pos) % element == 0 else 0, r))
                pos = stop
            r += 1
            continue
        limit = min(total, pos + size + size // SLACK, MAX_FRAME + pos)
        if r < len(runs) and runs[r][0] <= limit:
            limit = runs[r][0]
        f = bisect_right(must, pos)
        if f < len(must) and must[f] <= limit:
            limit = must[f]
        k = bisect_right(cuts, limit) - 1
        stop = cuts[k] if k >= 0 and cuts[k] > pos else min(limit, pos + size)
        out.append((stop, 0, -1))
        pos = stop
    return out


def toc_layout(
    toc: bytes | bytearray, root: tuple[int, int], data: bytes | memoryview
) -> tuple[list[int], list[tuple[int, int, int, int]], list[int]]:
    """Where frames may be cut in ``data`` (the plain data section) whose TOC is ``toc``
    with its root node at ``root`` (position, length; (0, 0): none): the offsets where the
    spans and entries of its list and dict nodes start; its runs of fixed-size numbers as
    (start, end, element size, least frame size): fixed-stride lists of numbers and NumPy
    elements (in frames of at least ``ARRAY_FRAME``: mostly read in bulk); and where
    frames must be cut: the spans of a hash-indexed dict, and the entry nearest the middle of
    each (a lookup reads one entry, so it decompresses half a span; iterating reads both)."""
    boundaries: list[int] = []
    runs: list[tuple[int, int, int, int]] = []
    forced: list[int] = []
    if not root[1]:
        return boundaries, runs, forced
    work: list[tuple[int, int, int, bool]] = [(root[0], root[1], 0, True)]  # pos, length, base or end, is base
    while work:
        pos, length, at, is_base = work.pop()
        node = unframe_node(memoryview(toc)[pos : pos + length], pos)
        base = at if is_base else at - node_span(node)
        if isinstance(node, ListNode):
            boundaries.extend(base + o for o in node.offs)
            work.extend((pos - back, size, base + node.offs[k], True) for k, (back, size) in node.kids.items())
        elif isinstance(node, HashMapNode):
            forced.extend(base + o for o in node.offs)
            forced.extend(_middles(data, base, node))
            # a kid span holds a key, then the value with the node: the value ends the span
            work.extend((pos - back, size, base + node.offs[k + 1], False) for k, (back, size) in node.kids.items())
        elif isinstance(node, MapNode):
            boundaries.extend(base + o for o in node.koffs)
            work.extend((pos - back, size, base + node.voffs[j], True) for j, (back, size) in node.kids.items())
        elif isinstance(node, StrideNode):
            first = base + sum(h for h, _, _ in node.dims)
            element = node.dims[-1][2]
            if 2 <= element <= MAX_ELEMENT and FIXED_SCALAR_SIZE.get(data[first]) == element:
                runs.append((first, base + node_span(node), element, 0))
        elif isinstance(node, ArrayNode) and "numpy" in sys.modules:
            dtype, _, start = parse_head(data[base : base + node.head], base, node.head + node.size)
            if 2 <= dtype.itemsize <= MAX_ELEMENT and node.size:
                runs.append((base + start, base + start + node.size, dtype.itemsize, ARRAY_FRAME))
    return boundaries, runs, forced


_raws = msgspec.msgpack.Decoder(list[msgspec.Raw])


def _middles(data: bytes | memoryview, base: int, node: HashMapNode) -> Iterator[int]:
    """For each span of a hash-indexed dict (but those holding one large value), where the
    entry nearest its middle starts (its entries read as raw items at C speed)."""
    view = memoryview(data)
    ends = [*node.starts[1:], node.n]
    for k in range(len(node.starts)):
        count = ends[k] - node.starts[k]
        if k in node.kids or count < 2:
            continue
        a, b = base + node.offs[k], base + node.offs[k + 1]
        lens = list(map(len, _raws.decode(array_header(2 * count) + view[a:b])))
        offs = list(accumulate(map(add, lens[0::2], lens[1::2]), initial=a))  # entry j starts at offs[j]
        mid = (a + b) // 2
        j = min(max(bisect_right(offs, mid), 1), count - 1)
        yield offs[j] if offs[j] - mid < mid - offs[j - 1] or j == 1 else offs[j - 1]
