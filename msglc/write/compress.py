"""A data section compressed as independent zstd frames plus their tables (``format.frames``;
design: docs/compression.md). Frames are cut where the TOC says items begin, so that a small
item never needs two frames, and runs of fixed-size numbers (fixed-stride lists, NumPy
elements) are cut at whole elements and byte-shuffled where that compresses better. Frames
are shuffled and compressed in a thread pool (the C shuffle and zstd release the GIL), each
thread with its own compressor (one is not thread-safe)."""

from __future__ import annotations

import random
import sys
import threading
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import accumulate, groupby
from operator import add
from typing import Any, NamedTuple

import msgspec

from msglc.format.frames import (
    MAX_FRAME,
    MIN_FRAME_SIZE,
    NO_FILTER,
    RAW,
    RAW_MAX,
    SHUFFLE,
    Index,
    pack_dictionary,
    pack_index,
    pack_page,
    pack_raw_frame,
)
from msglc.format.fuse import is_table
from msglc.format.hash_index import block_count, le_array
from msglc.format.msgpack import FIXED_SCALAR_SIZE, HEAD_MAX, array_header
from msglc.format.nodes import (
    ArrayNode,
    BlockHashMapNode,
    FuseMapNode,
    HashMapNode,
    ListNode,
    MapNode,
    Node,
    PagedListNode,
    SortedMapNode,
    StrideNode,
    node_span,
    paged_spans,
    unframe_node,
)
from msglc.format.numpy_ext import parse_head
from msglc.format.shuffle import MAX_ELEMENT, shuffle
from msglc.format.tiles import frame_cuts
from msglc.util.optional import zstandard

THREADS = 2  # compression threads (this machine has 2 cores; more only queue)
GROUP = 1 << 18  # plain bytes compressed per thread-pool task (many small frames per task: less overhead)
SLACK = 8  # a frame may exceed the frame size by 1/SLACK to end at an item boundary
ARRAY_FRAME = 1 << 16  # least plain bytes per frame of NumPy elements: bulk reads then cost ~1/8 of
# the per-frame Python work of 8 KB frames, and one element read decompresses 64 KB (~70 us)

# A planned frame: (end offset in the plain data, element size it may be shuffled by, or 0;
# the run it belongs to, or -1: frames of one run are shuffled or not together; or TABLE, HEAD)
Frame = tuple[int, int, int]
TABLE = -2  # a planned frame's run: a frame of a lookup table (read a small frame at a time)
HEAD = -3  # ... the key and header of a container of HEAD_SPAN frames or more (toc_layout)
HEAD_SPAN = 2  # such a container (with a node, in a dict or list with a node) spans this many frames' bytes
HEAD_ITEMS = 256  # a head takes the container's first items too when they end within this many bytes


DATA_FRAME = 1 << 16  # plain bytes per frame of the data (docs/compression.md measures the trade-off)
TOC_FRAME = 1 << 15  # ... of the TOC: opening decompresses the one holding the root node
TABLE_FRAME = 1 << 13  # plain bytes per frame inside a fuse- or sorted-indexed lookup table (fuse.is_table)
RAW_FRAME = 1 << 15  # plain bytes per frame written raw on purpose (write_raw)
RAW_RATIO = 0.97  # a frame that zstd shrinks by less than 3% is stored raw (read in place) ...
RAW_MIN = 1 << 10  # ... unless smaller: a reader decompresses such a frame once and keeps it (heads)
HEAD_FRAME = 5  # the data's first bytes (the root's header, as a reader reads it) make a frame of their own
DICT_SAMPLE = 4 << 20  # a streamed section's first bytes, buffered to choose its dictionary from
DICT_PIECE = 4096  # a dictionary is pieces of this size taken evenly from the data
DICT_MAX = 1 << 20  # bytes of a dictionary at most (and 1/8 of the data)
DICT_MIN_DATA = 1 << 18  # less data than this gets no dictionary: it would not pay for itself
DICT_TRIAL = 48  # frames compressed both ways to decide (16 chose wrongly on 2 of 8 real datasets)
DICT_GAIN = 0.98  # a dictionary is kept when the trial frames and it take less than this share
DICT_FIRST = 16  # trial frames compressed first (every third); the rest only when their share is not
DICT_CLEAR = (0.90, 1.06)  # outside this: 16 frames differed from 48 by 0.04 at most on 8 datasets
DICT_LEVEL = 9  # dictionaries are stored compressed at this level at least (once per archive)
NUMBERS_LEVELS = (1, 3)  # a run of shuffled numbers at the first of these levels that costs at most ...
NUMBERS_SLACK = 1.005  # ... this much more than the writer's level on its first frame (write_planned)
TABLE_TRIAL = 64  # frames of lookup tables compressed both ways to decide whether they use the dictionary
# (one drawn from each of this many equal runs of them: a table whose frames gain much beside one
# whose frames do not is weighed by its share, where 24 drawn anywhere missed an 8% gain)
TABLE_DICT_GAIN = 0.95  # ... which they do when it makes them smaller than this share
NUMBERS_SHARE = 0.25  # runs of numbers above this share of the data: its dictionary is chosen from the rest
MAX_DICTS = 65535  # dictionaries in one section (a frame names its own in two bytes)
REGION = 1 << 21  # plain bytes of data per dictionary of a region at least (choose_regions)
REGION_PIECE = 1 << 16  # ... which is pieces of this size taken evenly from its region
REGION_SHARE = 2  # ... up to this share of it
MAX_REGIONS = 32  # regions at most: a reader that touches them all loads 32 MB of dictionaries
REGION_TRIAL = 4  # regions tried (8 frames each) to decide
REGION_GAIN = 0.8  # regions are kept when the trial says they make the data a fifth smaller
REGION_TRIAL_LEVEL = 3  # the trial's regions' dictionaries are compressed at this level (faster; a bit larger)
DIGESTS_KEPT = 4  # digested dictionaries kept while frames are compressed (the regions' in turn)
PAGE_FRAMES = 512  # frames per page table at least ...
MAX_PAGES = 1024  # ... and as many more as keep the index to this many pages (about 28 KB)


def frame_size(threshold: int) -> int:
    """Plain bytes per frame of the data: ``DATA_FRAME``, whatever the threshold (which sets
    how finely the TOC indexes the data; frames set what is compressed together), within the
    reader's bound."""
    return min(max(DATA_FRAME, MIN_FRAME_SIZE), MAX_FRAME)


def choose_dictionary(
    sample: bytes | bytearray | memoryview, size: int, level: int, total: int | None = None
) -> tuple[bytes, bytes] | None:
    """A raw-content dictionary for frames of ``size`` plain bytes of data like ``sample``
    (the data, or its first bytes; ``total``: the data's length when known), and its stored
    (compressed) form, or None when it would not pay for itself: pieces of ``DICT_PIECE`` bytes
    taken evenly from ``sample``, up to ``DICT_MAX`` and 1/8 of the data, kept when
    ``DICT_TRIAL`` frames spread over the sample plus the dictionary (compressed) come out
    smaller than the frames alone by 2%. Frames that refer back into data like their own
    compress like a much larger frame (measured on real JSON: docs/compression.md). The three
    compressions run on two threads (zstd releases the GIL)."""
    view = memoryview(sample).cast("B")
    n = len(view)
    whole = n if total is None else max(total, n)
    if whole < DICT_MIN_DATA or n < 2 * size:
        return None
    budget = min(DICT_MAX, whole // 8) // DICT_PIECE * DICT_PIECE
    if budget < 4 * DICT_PIECE:
        return None
    pieces = budget // DICT_PIECE
    step = max(DICT_PIECE, (n - DICT_PIECE) // pieces)
    raw = b"".join(view[at : at + DICT_PIECE] for at in range(0, n - DICT_PIECE + 1, step)[:pieces])
    zstd = zstandard()
    trial_step = max(size, (n - size) // DICT_TRIAL)
    frames = [view[at : at + size] for at in range(0, n - size + 1, trial_step)[:DICT_TRIAL]]

    def cost(with_dict: bool, some: list[memoryview]) -> int:
        dict_data = zstd.ZstdCompressionDict(raw, dict_type=zstd.DICT_TYPE_RAWCONTENT) if with_dict else None
        c = zstd.ZstdCompressor(level=level, dict_data=dict_data)
        return sum(len(c.compress(f)) for f in some)

    def share(plain_cost: int, dict_cost: int, tried: int) -> float:
        """The archive's size with the dictionary over its size without, as the trial says."""
        scale = whole / (tried * size)  # the trial frames stand for the whole data
        return (dict_cost * scale + len(record)) / (plain_cost * scale)

    # a third of the trial frames first: when that leaves no doubt, the rest is not compressed
    first = frames[1::3] if len(frames) >= 3 * DICT_FIRST else frames
    rest = [f for i, f in enumerate(frames) if i % 3 != 1] if first is not frames else []
    with ThreadPoolExecutor(THREADS) as pool:
        stored = pool.submit(stored_dictionary, raw, level)
        plain_cost, dict_cost = pool.map(cost, (False, True), (first, first))
        record = stored.result()
        if rest and DICT_CLEAR[0] <= share(plain_cost, dict_cost, len(first)) <= DICT_CLEAR[1]:
            more_plain, more_dict = pool.map(cost, (False, True), (rest, rest))
            plain_cost, dict_cost = plain_cost + more_plain, dict_cost + more_dict
            first = frames
    return (raw, record) if share(plain_cost, dict_cost, len(first)) < DICT_GAIN else None


# Dictionaries chosen for the data: (plain offset where its frames begin to use it, its raw
# content, its record), by offset; the first begins at 0
Chosen = list[tuple[int, bytes, bytes]]


def choose_dictionaries(data: bytes | bytearray | memoryview, size: int, level: int) -> Chosen | None:
    """The dictionaries for frames of ``size`` plain bytes of the whole data ``data``: one for
    all of it (``choose_dictionary``), or, when that makes it a fifth smaller, one for each
    region of it (``choose_regions``); None: no dictionary."""
    whole = choose_dictionary(data, size, level)
    return choose_regions(data, size, level, whole) or (None if whole is None else [(0, *whole)])


def choose_regions(
    data: bytes | bytearray | memoryview, size: int, level: int, whole: tuple[bytes, bytes] | None
) -> Chosen | None:
    """A dictionary for each of some regions of ``data`` (evenly cut, ``REGION`` bytes each at
    least, ``MAX_REGIONS`` at most), of pieces of ``REGION_PIECE`` bytes taken evenly from its
    region, up to half of it and ``DICT_MAX``, or None when they do not make the data a fifth
    smaller than the dictionary ``whole`` (or none) does. Documents that repeat their
    neighbours farther apart than a frame (766 near-identical locales, 52 KB each, in
    cldr-dates) find them in their region's dictionary, where one dictionary for all holds
    too few of each (docs/compression.md). Decided on ``REGION_TRIAL`` regions spread over the
    data: 8 frames each, at places drawn at random (pieces lie at even steps: frames at even
    steps would overlap them by chance), compressed both ways, scaled to the region, plus
    the regions' dictionaries (compressed at level 3: a little larger than stored) against
    the whole one's share."""
    view = memoryview(data).cast("B")
    n = len(view)
    count = min(MAX_REGIONS, n // REGION)
    if count < 4 or n < 8 * size:
        return None
    edges = [n * r // count for r in range(count + 1)]
    zstd = zstandard()

    def raw_of(r: int) -> bytes:
        lo, hi = edges[r], edges[r + 1]
        pieces = min(DICT_MAX, (hi - lo) // REGION_SHARE) // REGION_PIECE
        step = max(REGION_PIECE, (hi - lo - REGION_PIECE) // pieces)
        return b"".join(view[at : at + REGION_PIECE] for at in range(lo, hi - REGION_PIECE + 1, step)[:pieces])

    tried = sorted({count * k // REGION_TRIAL + count // (2 * REGION_TRIAL) for k in range(REGION_TRIAL)})
    draw = random.Random(n)  # (seeded: the same data gets the same archive)
    starts = {r: sorted(draw.randrange(edges[r], edges[r + 1] - size) for _ in range(8)) for r in tried}
    digest = None
    if whole is not None:
        digest = zstd.ZstdCompressionDict(whole[0], dict_type=zstd.DICT_TYPE_RAWCONTENT)
        digest.precompute_compress(level=level)

    def trial(r: int) -> tuple[float, float]:
        """Region ``r``'s frames with its own dictionary (and that dictionary, stored at least
        as small as at ``REGION_TRIAL_LEVEL``), and with the whole one."""
        raw = raw_of(r)
        own = zstd.ZstdCompressionDict(raw, dict_type=zstd.DICT_TYPE_RAWCONTENT)
        own.precompute_compress(level=level)
        c_own = zstd.ZstdCompressor(level=level, dict_data=own)
        c_whole = zstd.ZstdCompressor(level=level, dict_data=digest) if digest else zstd.ZstdCompressor(level=level)
        frames = [view[at : at + size] for at in starts[r]]
        scale = (edges[r + 1] - edges[r]) / (len(frames) * size)
        stored = len(zstd.ZstdCompressor(level=min(level, REGION_TRIAL_LEVEL)).compress(raw))
        mine = scale * sum(len(c_own.compress(f)) for f in frames) + stored
        theirs = scale * sum(len(c_whole.compress(f)) for f in frames)
        return mine, theirs

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(trial, tried))
        mine = sum(m for m, _ in results)
        theirs = sum(t for _, t in results) + (len(whole[1]) * len(tried) / count if whole else 0)
        if mine >= REGION_GAIN * theirs:
            return None
        raws = [raw_of(r) for r in range(count)]
        records = list(pool.map(lambda raw: stored_dictionary(raw, level), raws))
    return [(edges[r], raws[r], records[r]) for r in range(count)]


def planned_dictionaries(
    view: memoryview,
    frames: Sequence[Frame],
    starts: Sequence[int],
    size: int,
    level: int,
    meanwhile: Callable[[], Chosen | None] | None = None,
) -> Chosen | None:
    """The dictionaries for data planned as ``frames`` (``plan_frames``; ``starts``: where each
    begins), whose runs of numbers are compressed shuffled and without one (a raw-content
    dictionary does not help byte planes): none when less than ``DICT_MIN_DATA`` bytes lie
    outside those runs; one chosen from the bytes outside them when the runs are more than
    ``NUMBERS_SHARE`` of the data (a trial over all of it would judge frames that are not
    written so); otherwise the choice ``meanwhile`` made from all of it (``dump`` makes it
    while the TOC is built), or ``choose_dictionaries``."""
    numbers = sum(end - start for (end, element, _), start in zip(frames, starts, strict=True) if element)
    if len(view) - numbers < DICT_MIN_DATA:
        return None
    if numbers > NUMBERS_SHARE * len(view):
        rest = b"".join(view[start:end] for (end, element, _), start in zip(frames, starts, strict=True) if not element)
        chosen = choose_dictionary(rest, size, level)
        return None if chosen is None else [(0, *chosen)]
    return meanwhile() if meanwhile is not None else choose_dictionaries(view, size, level)


def table_dictionaries(
    view: memoryview, frames: Sequence[Frame], starts: Sequence[int], chosen: Chosen | None, level: int
) -> tuple[Chosen | None, bool]:
    """The dictionaries ``chosen`` for the data, and whether the frames of its lookup tables
    (``TABLE``) are compressed without them: when they make those frames less than a
    ``1 - TABLE_DICT_GAIN`` share smaller, as ``TABLE_TRIAL`` of them spread over the tables
    say. A lookup there decompresses one small frame, against a 1 MB dictionary about 3x
    slower (npm-names' 16 KB frames: 23-30 us against 8); what a dictionary saves on a word
    list is often 2%, on near-duplicate lists much more. Then a dictionary that only table
    frames would use is dropped (the first kept one begins at 0; heads, ``HEAD``, use none)."""
    tables = [(a, end) for (end, _, run), a in zip(frames, starts, strict=True) if run == TABLE]
    if not chosen or not tables:
        return chosen, False
    zstd = zstandard()
    offsets = [at for at, _, _ in chosen]
    digests: dict[int, Any] = {}
    plain = zstd.ZstdCompressor(level=level)
    with_dict = alone = 0
    # one frame drawn at random (seeded: the same data gets the same archive) from each of
    # ``TABLE_TRIAL`` equal runs of them, so that each table weighs by its share (frames drawn
    # anywhere may miss the one table whose frames gain: 24 of them judged an 8% gain as 3.6%);
    # frames at even steps would meet the dictionary's own pieces, taken at even steps
    draw, k = random.Random(len(view)), min(TABLE_TRIAL, len(tables))
    for a, end in (tables[draw.randrange(len(tables) * i // k, len(tables) * (i + 1) // k)] for i in range(k)):
        r = max(0, bisect_right(offsets, a) - 1)
        if r not in digests:
            digest = zstd.ZstdCompressionDict(chosen[r][1], dict_type=zstd.DICT_TYPE_RAWCONTENT)
            digests[r] = zstd.ZstdCompressor(level=level, dict_data=digest)
        with_dict += len(digests[r].compress(view[a:end]))
        alone += len(plain.compress(view[a:end]))
    if with_dict < TABLE_DICT_GAIN * alone:
        return chosen, False
    used = {  # the regions of the frames that keep a dictionary
        max(0, bisect_right(offsets, a) - 1)
        for (end, _, run), a in zip(frames, starts, strict=True)
        if run != TABLE and run != HEAD
    }
    kept = [entry for r, entry in enumerate(chosen) if r in used]
    if not kept:
        return None, True
    return [(0, *kept[0][1:]), *kept[1:]], True


def stored_dictionary(raw: bytes, level: int) -> bytes:
    """The record of a dictionary of raw content ``raw`` in a section: compressed at
    ``level`` (``DICT_LEVEL`` at least: once per archive), as a skippable frame."""
    compressed: bytes = zstandard().ZstdCompressor(level=max(level, DICT_LEVEL), write_checksum=True).compress(raw)
    return pack_dictionary(compressed)


def _groups(plain: Sequence[int]) -> list[range]:
    """Consecutive frames of about ``GROUP`` plain bytes together (``plain``: each frame's):
    one thread-pool task and one write each, rather than one per frame."""
    out, first, total = [], 0, 0
    for i, size in enumerate(plain):
        total += size
        if total >= GROUP:
            out.append(range(first, i + 1))
            first, total = i + 1, 0
    if first < len(plain):
        out.append(range(first, len(plain)))
    return out


PLANE_BLOCK = 1024  # bytes of a shuffled frame's byte plane at least for it to end a zstd block


def planes_compressed(c: Any, shuffled: bytes, element: int) -> bytes:
    """A zstd frame of ``shuffled`` (a byte-shuffled frame: ``element`` planes of equal
    length), each plane ending a zstd block (when planes hold ``PLANE_BLOCK`` bytes at least):
    each block then has entropy tables of its own, fitted to its plane (the exponent bytes of
    floats, their random low bytes...): 4% smaller on random float64, 7% on smooth, than
    one table over the planes mixed. The frame is an ordinary zstd frame."""
    m = len(shuffled) // element
    if m < PLANE_BLOCK:
        frame: bytes = c.compress(shuffled)
        return frame
    z = zstandard()
    obj = c.compressobj(size=len(shuffled))
    parts = []
    for k in range(element):
        parts.append(obj.compress(shuffled[k * m : (k + 1) * m]))
        parts.append(obj.flush(z.COMPRESSOBJ_FLUSH_BLOCK))
    parts.append(obj.flush())
    return b"".join(parts)


def plan_frames(
    total: int,
    size: int,
    boundaries: Sequence[int],
    runs: Sequence[tuple[int, int, int, int, int]] = (),
    forced: Sequence[int] = (),
    tables: Sequence[tuple[int, int]] = (),
    heads: Sequence[tuple[int, int]] = (),
) -> list[Frame]:
    """Frames for ``total`` plain bytes of about ``size`` each: outside runs, cut at the last
    item boundary (``boundaries``, any order) within ``size`` (plus a little slack), else at
    ``size``, and always at ``forced`` offsets; a run (start, end, element, least, kind) of
    fixed-size numbers starts a frame and is cut into whole multiples of ``element`` bytes of
    about ``max(size, least)`` (its last frame takes the rest). Runs of one ``kind`` (the
    tiles of one array) are shuffled or not together. A frame that lies mostly inside
    ``tables`` (lookup tables: disjoint [start, end) ranges) is marked ``TABLE`` (the first
    frame of a table mostly begins a little before it: at its key, or its list's header). A
    frame that is one of ``heads`` ([start, end) ranges, cut at both ends by ``forced``) is
    marked ``HEAD``."""
    cuts = sorted(set(boundaries).union(forced))
    head_frames = set(heads)
    must = sorted(set(forced))
    runs = sorted(runs)
    table_starts, table_ends = [a for a, _ in sorted(tables)], [b for _, b in sorted(tables)]
    out: list[Frame] = []
    pos, r = 0, 0
    while pos < total:
        if r < len(runs) and runs[r][0] <= pos:
            start, end, element, least, kind = runs[r]
            step = max(element, min(max(size, least), MAX_FRAME) // element * element)
            while pos < end:
                stop = min(end, pos + step)
                out.append((stop, element if (stop - pos) % element == 0 else 0, kind))
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
        # the last item boundary within the limit, unless it leaves the frame nearly empty (a long
        # run of items the TOC does not list: cut it at the frame size instead)
        early = pos + size // 4 if not (f < len(must) and must[f] == limit) else pos
        stop = cuts[k] if k >= 0 and cuts[k] > early else min(limit, pos + size)
        if (pos, stop) in head_frames:
            out.append((stop, 0, HEAD))
        else:
            out.append((stop, 0, TABLE if 2 * _overlap(table_starts, table_ends, pos, stop) > stop - pos else -1))
        pos = stop
    return out


def _overlap(starts: Sequence[int], ends: Sequence[int], pos: int, stop: int) -> int:
    """The bytes of [pos, stop) inside the disjoint ranges [starts[k], ends[k]) (sorted)."""
    k, inside = bisect_right(ends, pos), 0
    while k < len(starts) and starts[k] < stop:
        inside += min(stop, ends[k]) - max(pos, starts[k])
        k += 1
    return inside


class Layout(NamedTuple):
    """What ``toc_layout`` finds in the data for ``plan_frames`` (its arguments after the size)."""

    boundaries: list[int]
    runs: list[tuple[int, int, int, int, int]]
    forced: list[int]
    tables: list[tuple[int, int]]
    heads: list[tuple[int, int]]


def toc_layout(toc: bytes | bytearray, root: tuple[int, int], data: bytes | memoryview, size: int) -> Layout:
    """Where frames may be cut in ``data`` (the plain data section) whose TOC is ``toc``
    with its root node at ``root`` (position, length; (0, 0): none): the offsets where the
    spans and entries of its list and dict nodes and the blocks of its block-indexed dicts
    start; its runs of fixed-size numbers as
    (start, end, element size, least frame size, kind): fixed-stride lists of numbers and
    NumPy elements (in frames of at least ``ARRAY_FRAME``: mostly read in bulk; a tiled
    array's in frames of whole tiles, a run each, of one kind); and where
    frames must be cut: the spans of a type-3 hash-indexed dict, and the entry nearest the middle of
    each (a lookup reads one entry, so it decompresses half a span; iterating reads both), and
    block starts of a block-indexed dict about ``lookup_frame(size)`` apart (a lookup reads
    one block and decompresses its frame: smaller frames, at little cost in ratio); and the
    [start, end) of its lookup tables (lists of small scalars; fuse- or sorted-indexed dicts
    of small entries, none with a node of its own), read a small frame at a time; and the
    ``heads`` of the root and of the containers of ``HEAD_SPAN`` frames or more in dict and
    list nodes (from the entry's key, or a list item's start, to the end of the container's
    header as a walk reads it: ``head_length``), which are cut out as frames of their own (a
    walk through such a container checks those bytes, and would otherwise decompress a whole
    frame for them; opening reads the root's)."""
    layout = Layout([], [], [], [], [])
    boundaries, runs, forced, tables, heads = layout
    if not root[1]:  # a root without a node: its header alone, as a reader opening it reads it
        if len(data) > HEAD_FRAME:
            heads.append((0, HEAD_FRAME))
            forced.append(HEAD_FRAME)
        return layout
    big = HEAD_SPAN * size
    # pos, length, base or end, is base, where its entry starts when its head gets a frame (else -1)
    work: list[tuple[int, int, int, bool, int]] = [(root[0], root[1], 0, True, 0)]  # (opening reads the root's head)
    while work:
        pos, length, at, is_base, entry = work.pop()
        node = unframe_node(memoryview(toc)[pos : pos + length], pos)
        base = at if is_base else at - node_span(node)
        if isinstance(node, PagedListNode):
            node = paged_spans(toc, pos, node)
        if entry >= 0:
            heads.append((entry, base + min(head_length(node), node_span(node))))
        if isinstance(node, ListNode):
            offs = node.offs
            boundaries.extend(base + o for o in offs)
            if _scalar_table(data, base, node):  # read by index like a lookup table: a frame a span
                forced.extend(base + o for o in _spaced(offs, TABLE_FRAME))
                tables.append((base, base + offs[-1]))  # (its header too)
            work.extend(
                (pos - back, n, base + offs[k], True, base + offs[k] if offs[k + 1] - offs[k] >= big else -1)
                for k, (back, n) in node.kids.items()
            )
        elif isinstance(node, BlockHashMapNode):  # a lookup reads one block: never cut one in two
            starts = _block_starts(toc, pos, node)
            boundaries.extend(base + o for o in starts)
            table = isinstance(node, (FuseMapNode, SortedMapNode)) and is_table(node.offs[-1] - node.offs[0], node.n)
            step = TABLE_FRAME if table else lookup_frame(size)  # a lookup table: small frames, fast lookups
            forced.extend(base + o for o in _spaced(starts, step))
            if table and not node.kids:
                tables.append((base, base + node.offs[-1]))  # (its header too)
            work.extend((pos - back, n, base + node.offs[k + 1], False, -1) for k, (back, n) in node.kids.items())
        elif isinstance(node, HashMapNode):
            forced.extend(base + o for o in node.offs)
            forced.extend(_middles(data, base, node))
            # a kid span holds a key, then the value with the node: the value ends the span
            work.extend((pos - back, n, base + node.offs[k + 1], False, -1) for k, (back, n) in node.kids.items())
        elif isinstance(node, MapNode):
            koffs, voffs = node.koffs, node.voffs
            boundaries.extend(base + o for o in koffs)
            work.extend(
                (pos - back, n, base + voffs[j], True, base + koffs[j] if koffs[j + 1] - voffs[j] >= big else -1)
                for j, (back, n) in node.kids.items()
            )
        elif isinstance(node, StrideNode):
            first = base + sum(h for h, _, _ in node.dims)
            element = node.dims[-1][2]
            if 2 <= element <= MAX_ELEMENT and FIXED_SCALAR_SIZE.get(data[first]) == element:
                start, end = first, base + node_span(node)
                if entry >= 0 and heads[-1][1] > first:  # (its head: headers of less than HEAD_MAX)
                    # the head takes the numbers a walk's read reaches into, and the run starts
                    # after them: else it would begin in the run's first frame, and not be a frame
                    start = min(end, first + -(-(heads[-1][1] - first) // element) * element)
                    heads[-1] = (entry, start)
                if start < end:
                    runs.append((start, end, element, 0, start))
        elif isinstance(node, ArrayNode) and "numpy" in sys.modules:
            dtype, shape, start, tile = parse_head(data[base : base + node.head], base, node.head + node.size)
            at, end = base + start, base + start + node.size
            if tile is not None and node.size:
                cuts = [at + c for c in frame_cuts(shape, tile, dtype.itemsize, ARRAY_FRAME)]
                if 2 <= dtype.itemsize <= MAX_ELEMENT:
                    runs.extend(
                        (a, b, dtype.itemsize, b - a, at) for a, b in zip([at, *cuts], [*cuts, end], strict=True)
                    )
                else:
                    forced.extend([at, *cuts, end])
            elif 2 <= dtype.itemsize <= MAX_ELEMENT and node.size:
                runs.append((at, end, dtype.itemsize, ARRAY_FRAME, at))
    layout.heads[:] = _merged(heads)
    forced.extend(x for head in layout.heads for x in head)
    return layout


def head_length(node: Node) -> int:
    """The bytes at a container's start that a walk into it reads to check them against its
    node (``Archive.container``; a dict entry's key before them), and on to the end of its
    first items when they end within ``HEAD_ITEMS`` bytes (a read of one then stays in the
    head's frame)."""
    if isinstance(node, ArrayNode):
        return node.head
    if isinstance(node, StrideNode):
        return max(HEAD_MAX, sum(h for h, _, _ in node.dims))  # (toc_layout: on to a number's end)
    offs = node.koffs if isinstance(node, MapNode) else node.offs if isinstance(node, ListNode) else ()
    k = bisect_left(offs, HEAD_MAX)
    return offs[k] if k < len(offs) and offs[k] <= HEAD_ITEMS else HEAD_MAX


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Ranges [a, b) joined where they overlap or touch (a dict's first entry's head lies in its own)."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        else:
            out.append((a, b))
    return out


_raws = msgspec.msgpack.Decoder(list[msgspec.Raw])


def _block_starts(toc: bytes | bytearray, pos: int, node: BlockHashMapNode) -> array[int]:
    """Where the blocks of a block-indexed dict start (its index region's block offsets; the
    last is the dict's end)."""
    blocks = block_count(node.n, node.block_bits)
    at = pos - node.index[0]
    return le_array("I" if node.offs_width == 4 else "Q", bytes(toc[at : at + (blocks + 1) * node.offs_width]))


def lookup_frame(size: int) -> int:
    """Plain bytes per frame inside a block-indexed dict, for frames of ``size`` elsewhere:
    3/4 of it (not below ``MIN_FRAME_SIZE``). Measured on 2M short str -> str entries, 8 KB
    frames: a lookup decompresses 30% less for 0.3% more bytes."""
    return max(MIN_FRAME_SIZE, size * 3 // 4)


def _scalar_table(data: bytes | memoryview, base: int, node: ListNode) -> bool:
    """Is the list a table of small scalars (strings or numbers under ``SMALL_ENTRY`` bytes on
    average, judged by the items that start its spans), which is read an item at a time, so
    that its frames are best one span each (npm-names: 103 us a read at 64 KB frames, 1.7%
    more bytes at 16 KB)?"""
    if len(node.offs) < 3 or node.kids or not is_table(node.offs[-1] - node.offs[0], node.n):
        return False
    firsts = node.offs[: -1 : max(1, len(node.offs) // 64)]
    return not any(data[base + o] in _CONTAINER_MARKERS for o in firsts)


_CONTAINER_MARKERS = frozenset([*range(0x80, 0xA0), 0xDC, 0xDD, 0xDE, 0xDF])  # msgpack maps and arrays


def _spaced(starts: Sequence[int], step: int) -> list[int]:
    """Some of ``starts`` (sorted; the last is the end), about ``step`` apart: each the one
    nearest to ``step`` after the one before."""
    cuts: list[int] = []
    last, end = starts[0], starts[-1]
    while last + step < end:
        i = bisect_right(starts, last + step) - 1  # starts[i] <= last + step < starts[i + 1]
        below, above = starts[i], starts[i + 1]
        last = below if below > last and last + step - below <= above - last - step else above
        cuts.append(last)
    return cuts


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


AHEAD = 2 * THREADS  # tasks in flight before the writer waits for the oldest


def raw_frame(content: bytes | bytearray | memoryview) -> bytes:
    """A zstd frame holding ``content`` (at most 255 bytes) uncompressed, in one raw block, with
    its content size and checksum: always ``13 + len(content)`` bytes, whatever the content, so
    that it can be rewritten in place once the content is known (a streamed container's count).
    The checksum (low 32 bits of XXH64) is taken from zstd's own frame of the same content."""
    size = len(content)
    if not 0 < size < 256:
        raise ValueError(f"a raw frame holds 1 to 255 bytes, not {size}")
    checksum: bytes = zstandard().ZstdCompressor(write_checksum=True).compress(bytes(content))[-4:]
    # magic | descriptor: single segment, checksum, 1-byte content size | size | last raw block of size
    head = (0xFD2FB528).to_bytes(4, "little") + bytes((0x24, size)) + (1 | size << 3).to_bytes(3, "little")
    return head + bytes(content) + checksum


# frames copied from another section: stored bytes, (stored, plain) sizes, filters, dictionaries
_Copied = tuple[bytes | memoryview, list[tuple[int, int]], list[tuple[int, int]], list[int]]


class Slot:
    """``size`` plain bytes at plain offset ``at`` whose content ``FrameWriter.fill`` gives
    later. While they are buffered they are patched there; once their frame had to go, they are
    a raw frame of their own (``stored_at`` from the section's start once written)."""

    __slots__ = ("at", "size", "frame", "stored_at")

    def __init__(self, at: int, size: int) -> None:
        self.at = at
        self.size = size
        self.frame: bytearray | None = None
        self.stored_at: int | None = None


class FrameWriter:
    """A compressed section (format 2.1) written as it is produced, in bounded memory: the data,
    then (after ``end_data``) the TOC, then ``close`` writes the dictionaries, the page tables
    and the index. Plain bytes are buffered and compressed in frames of ``size`` bytes (TOC:
    ``TOC_FRAME``) in a thread pool, a few tasks ahead, written in order; ``write_planned``
    takes frames planned from a TOC (``dump``); frames of another archive are copied as they
    are (``copy_frames``). The data's frames use a dictionary sampled from its first
    ``DICT_SAMPLE`` bytes when that makes them smaller (``choose_dictionary``; the data given
    whole to ``write_planned``: one dictionary, or one per region, ``choose_dictionaries``), and
    it is decided before any frame is compressed: until then the bytes stay buffered. ``out`` needs
    ``write``; ``seek`` and ``tell`` only when a ``Slot`` is filled after its frame was written
    (``base``: where the section starts in ``out``)."""

    def __init__(self, out: Any, size: int, level: int, base: int = 0, head: int = 0) -> None:
        """``head``: the data's first bytes (the root container's header) form a frame of their
        own, without a dictionary: opening an archive reads them, and then never loads one.
        (Data that ``write`` takes; ``write_planned`` finds the root's head in its plan.)"""
        if not MIN_FRAME_SIZE <= size <= MAX_FRAME:
            raise ValueError(f"frame size must be in [{MIN_FRAME_SIZE}, {MAX_FRAME}], not {size}")
        self._zstd = zstandard()
        self.out = out
        self.size = size
        self.level = level
        self.base = base
        self.group = max(GROUP // size, 1) * size
        self.plain = 0  # plain bytes taken so far
        self.stored = 0  # bytes written to ``out`` so far
        self.data: int | None = None  # the plain data's length, once the TOC begins
        self.entries: list[tuple[int, int]] = []  # (compressed, decompressed) of each frame written
        self.filters: list[tuple[int, int]] = []  # (filter code, parameter) of each frame written
        self.frame_dicts: list[int] = []  # the dictionary of each frame written (0: none)
        self.dicts: list[bytes] = []  # the dictionaries (raw content), numbered from 1
        self._records: list[bytes | None] = []  # each dictionary's record, when made already
        self._dict_numbers: dict[tuple[int, int], int] = {}  # (length, CRC-32) -> number
        self.own = 0  # the dictionary of the frames compressed here (0: none)
        self._region_starts: list[int] = []  # where the regions of the data begin (use_dictionaries) ...
        self._region_dicts: list[int] = []  # ... and the dictionary of the frames in each
        self.deciding = True  # the data's first bytes are buffered until the dictionary is chosen
        self.head = head
        self._buf = bytearray()
        self._buf_at = 0  # plain offset of _buf[0]
        self._slots: list[Slot] = []  # slots still in _buf
        self._queue: deque[Future[list[tuple[bytes, int, tuple[int, int], int]]] | Slot | _Copied] = deque()
        self._pool = ThreadPoolExecutor(THREADS)
        self._local = threading.local()
        self._digests: dict[tuple[int, int], Any] = {}  # (dictionary, level) -> digested (``_digested``)
        self._dict_lock = threading.Lock()

    # -- the dictionary --
    def choose_dictionary(self, sample: bytes | bytearray | memoryview, total: int | None = None) -> None:
        """Decide the data's dictionary from ``sample`` (the plain data, or its first bytes;
        ``total``: the data's whole length when known) before any frame is compressed."""
        self.use_dictionary(choose_dictionary(sample, self.size, self.level, total))

    def use_dictionary(self, chosen: tuple[bytes, bytes] | None) -> None:
        """Compress the data's frames with the dictionary ``chosen`` by ``choose_dictionary``
        for this writer's frame size and level (its raw content and record), or with none."""
        self.use_dictionaries(None if chosen is None else [(0, *chosen)])

    def use_dictionaries(self, chosen: Chosen | None) -> None:
        """Compress the data's frames with the dictionaries ``chosen`` by
        ``choose_dictionaries`` for this writer's frame size and level (frames that
        ``write_planned`` takes use the one of the region they begin in; others the first), or
        with none."""
        self.deciding = False
        if chosen:
            self._region_starts = [start for start, _, _ in chosen]
            self._region_dicts = [self.adopt_dictionary(raw, record) for _, raw, record in chosen]
            self.own = self._region_dicts[0]

    def _dictionary_at(self, start: int) -> int:
        """The dictionary of a data frame beginning at plain offset ``start``."""
        if not self._region_dicts:
            return self.own
        return self._region_dicts[max(0, bisect_right(self._region_starts, start) - 1)]

    def _planned_dictionary(self, frame: tuple[int, int, int, int]) -> int:
        """The dictionary of a planned frame (start, end, element, level): none when shuffled."""
        return 0 if frame[2] else self._dictionary_at(frame[0])

    def adopt_dictionary(self, raw: bytes, record: bytes | None = None) -> int:
        """The number of the dictionary ``raw`` in this section (added if new): frames copied
        from another archive keep theirs. ``record``: its stored form, when made already."""
        key = (len(raw), zlib.crc32(raw))
        number = self._dict_numbers.get(key)
        if number is None:
            if len(self.dicts) >= MAX_DICTS:
                raise ValueError(f"a compressed section holds at most {MAX_DICTS} dictionaries")
            self.dicts.append(raw)
            self._records.append(record)
            number = self._dict_numbers[key] = len(self.dicts)
        return number

    # -- plain bytes --
    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Plain bytes, appended to the section a task's worth at a time (a large chunk is never
        buffered or copied whole)."""
        view = memoryview(data)
        if view.ndim != 1 or view.format != "B":
            view = view.cast("B")
        for lo in range(0, len(view), self.group):
            piece = view[lo : lo + self.group]
            self._buf += piece
            self.plain += len(piece)
            if self.deciding:
                if len(self._buf) >= DICT_SAMPLE:
                    self.choose_dictionary(self._buf)
                else:
                    continue
            if len(self._buf) >= self.group + self.size:
                self._cut(len(self._buf) - len(self._buf) % self.group)

    def write_planned(
        self,
        data: bytes | memoryview,
        frames: Sequence[Frame],
        meanwhile: Callable[[], Chosen | None] | None = None,
    ) -> None:
        """The whole plain data, in frames as planned (``plan_frames``): the dictionaries are
        ``planned_dictionaries`` (``meanwhile``: a choice made from all the data meanwhile),
        unless ``use_dictionaries`` chose them; each run of numbers is shuffled when its first
        frame compresses smaller so (and then without a dictionary), and then compressed at the
        first of ``NUMBERS_LEVELS`` that makes its first frame at most ``NUMBERS_SLACK`` times
        larger (random floats: level 1, the same size, about half the time of level 5; a smooth
        field 2.6% larger at level 3: kept at level 5)."""
        if self.plain or self._buf:
            raise ValueError("write_planned() takes the whole data section, first")
        view = memoryview(data).cast("B")
        starts = [0, *(end for end, _, _ in frames[:-1])] if frames else []
        plain_tables = False  # lookup tables' frames without a dictionary
        if self.deciding:  # (not chosen already by use_dictionaries)
            chosen = planned_dictionaries(view, frames, starts, self.size, self.level, meanwhile)
            chosen, plain_tables = table_dictionaries(view, frames, starts, chosen, self.level)
            self.use_dictionaries(chosen)
        shuffled: dict[int, int] = {}  # run -> level of its shuffled frames, from its first (0: not shuffled)
        for i, (end, element, run) in enumerate(frames):
            if element and run not in shuffled:
                piece = view[starts[i] : end]
                plain_size = len(self._compressor(self._dictionary_at(starts[i])).compress(piece))
                mixed = shuffle(piece, element)
                size = len(planes_compressed(self._compressor(0), mixed, element))
                shuffled[run] = 0 if size >= plain_size else self._numbers_level(mixed, element, size)
        planned = [
            (start, end, element, shuffled[run]) if element and shuffled[run] else (start, end, 0, 0)
            for (end, element, run), start in zip(frames, starts, strict=True)
        ]
        # frames without a dictionary, by their ends: heads (a walk that reads one then loads no
        # dictionary for it; the root's, which opening reads), and lookup tables' when
        # table_dictionaries says so
        alone = {end for end, _, run in frames if run == HEAD or (plain_tables and run == TABLE)}

        def dictionary(frame: tuple[int, int, int, int]) -> int:
            return 0 if frame[1] in alone else self._planned_dictionary(frame)

        for group in _groups([end - start for start, end, _, _ in planned]):
            for d, same in groupby((planned[i] for i in group), key=dictionary):
                self._queue.append(self._pool.submit(self._compress_planned, view, list(same), d))
            self._drain(AHEAD)
        self.plain = self._buf_at = len(view)

    def _numbers_level(self, mixed: bytes, element: int, size: int) -> int:
        """The level for a run of shuffled numbers whose first frame is ``mixed`` (``size``
        bytes at the writer's level): the first of ``NUMBERS_LEVELS`` below the writer's that
        makes it at most ``NUMBERS_SLACK`` times larger, else the writer's. (Frames of less than
        ``PLANE_BLOCK`` bytes a plane keep the writer's: too small to tell.)"""
        if len(mixed) >= PLANE_BLOCK * element:
            for level in NUMBERS_LEVELS:
                if level < self.level:
                    faster = len(planes_compressed(self._compressor(0, level), mixed, element))
                    if faster <= NUMBERS_SLACK * size:
                        return level
        return self.level

    def reserve(self, size: int) -> Slot:
        """``size`` plain bytes (zeros for now) that ``fill`` gives later."""
        slot = Slot(self.plain, size)
        self._slots.append(slot)
        self.write(bytes(size))
        return slot

    def fill(self, slot: Slot, content: bytes) -> None:
        """The content of a reserved slot: patched in the buffer, in its queued raw frame, or
        (once written) in ``out`` in place (its raw frame keeps its size)."""
        if len(content) != slot.size:
            raise ValueError(f"a slot of {slot.size} bytes cannot take {len(content)}")
        if slot in self._slots:
            at = slot.at - self._buf_at
            self._buf[at : at + slot.size] = content
            self._slots.remove(slot)
        elif slot.stored_at is None:
            assert slot.frame is not None
            slot.frame[:] = raw_frame(content)
        else:
            back = self.out.tell()
            self.out.seek(self.base + slot.stored_at)
            self.out.write(raw_frame(content))
            self.out.seek(back)

    def copy_frames(
        self,
        stored: bytes | memoryview,
        entries: list[tuple[int, int]],
        filters: list[tuple[int, int]],
        dicts: list[int] | None = None,
    ) -> None:
        """Frames of another section, copied as they are: ``stored`` holds them all, ``entries``
        their (compressed, decompressed) sizes, ``filters`` their (filter code, parameter),
        ``dicts`` their dictionaries as numbered here (``adopt_dictionary``). The buffered plain
        bytes end a frame first."""
        if self.deciding:  # what is buffered is all the sample there is before these frames
            self.choose_dictionary(self._buf)
        self._cut(len(self._buf))
        self._queue.append((stored, entries, filters, dicts or [0] * len(entries)))
        self.plain += sum(d for _, d in entries)
        self._buf_at = self.plain
        self._drain(AHEAD)

    def write_raw(self, data: bytes | bytearray | memoryview) -> None:
        """Plain bytes stored as raw frames (filter 2) whatever zstd would make of them: random
        bytes (an index's slots or records) that lookups read a few at a time, in place."""
        self.cut()
        view = memoryview(data).cast("B")
        for lo in range(0, len(view), RAW_FRAME):
            piece = bytes(view[lo : lo + RAW_FRAME])
            self._queue.append(self._pool.submit(self._raw_frame, piece))
            self.plain += len(piece)
            self._buf_at = self.plain
            self._drain(AHEAD)

    def _raw_frame(self, piece: bytes) -> list[tuple[bytes, int, tuple[int, int], int]]:
        checksum = self._compressor(0, 1).compress(piece)[-4:]  # zstd's checksum of it, whatever the level
        return [(pack_raw_frame(piece, checksum), len(piece), (RAW, 0), 0)]

    def cut(self) -> None:
        """End the current frame here (the TOC's root node then starts a frame: opening
        decompresses no more than it)."""
        if not self.deciding:
            self._cut(len(self._buf))

    def end_data(self) -> None:
        """The data section ends here: what follows is the TOC (frames of its own, without a
        dictionary, so that opening an archive never loads one)."""
        if self._slots:
            raise ValueError("a reserved slot was never filled")
        if self.deciding:
            self.choose_dictionary(self._buf, len(self._buf))
        self._cut(len(self._buf))
        self.data = self.plain
        self.own = 0
        self.size = TOC_FRAME
        self.group = max(GROUP // TOC_FRAME, 1) * TOC_FRAME

    def close(self, root: tuple[int, int]) -> int:
        """Compress what is buffered, write every frame, then the dictionaries, the page tables
        and the index (``root``: the root node's position in the TOC and length); returns the
        section's stored size."""
        if self.data is None:
            self.end_data()
        self._cut(len(self._buf))
        self._drain(0)
        self._pool.shutdown()
        frames_end = self.stored
        dict_places = []
        for raw, made in zip(self.dicts, self._records, strict=True):
            record = made if made is not None else stored_dictionary(raw, self.level)
            dict_places.append((self.stored, len(record), len(raw)))
            self._put(record)
        pages = []
        n = len(self.entries)
        per_page = max(PAGE_FRAMES, -(-n // MAX_PAGES))
        logical = stored = 0
        for first in range(0, n, per_page):
            last = min(n, first + per_page)
            page = pack_page(self.entries[first:last], self.filters[first:last], self.frame_dicts[first:last])
            pages.append((self.stored, logical, stored, len(page)))
            logical += sum(d for _, d in self.entries[first:last])
            stored += sum(c for c, _ in self.entries[first:last])
            self._put(page)
        assert stored == frames_end and logical == self.plain
        index = Index(self.data or 0, self.plain - (self.data or 0), root, n, per_page if n else 0, pages, dict_places)
        self._put(pack_index(index))
        return self.stored

    def abort(self) -> None:
        """Stop the compression threads (after a failure: nothing more is written)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    # -- compressing --
    def _compressor(self, d: int, level: int | None = None) -> Any:
        """This thread's compressor for frames of dictionary ``d`` (0: none): one per thread
        and dictionary, since a compressor is not thread-safe."""
        made: dict[tuple[int, int], Any] | None = getattr(self._local, "compressors", None)
        if made is None:
            made = self._local.compressors = {}
        level = self.level if level is None else level
        c = made.get((d, level))
        if c is None:
            zstd = self._zstd
            if d:
                for key in [k for k in made if k[0] not in (0, d)]:  # frames use the regions' one after another
                    del made[key]
                c = zstd.ZstdCompressor(level=level, write_checksum=True, dict_data=self._digested(d, level))
            else:
                c = zstd.ZstdCompressor(level=level, write_checksum=True)
            made[d, level] = c
        return c

    def _digested(self, d: int, level: int) -> Any:
        """Dictionary ``d`` digested once for ``level`` and shared by the threads' compressors
        (read-only once made): a frame then starts from its tables instead of indexing its
        bytes again (about 10-30% faster per 64 KB frame with a 1 MB dictionary)."""
        with self._dict_lock:
            made = self._digests.get((d, level))
            if made is None:
                zstd = self._zstd
                made = zstd.ZstdCompressionDict(self.dicts[d - 1], dict_type=zstd.DICT_TYPE_RAWCONTENT)
                made.precompute_compress(level=level)
                self._digests[d, level] = made
                while len(self._digests) > DIGESTS_KEPT:  # (a few MB each; frames use them in turn)
                    del self._digests[next(iter(self._digests))]
            return made

    def _cut(self, n: int) -> None:
        """Queue the first ``n`` buffered bytes as frames: runs of ``size`` compressed in the
        pool, and each slot still unfilled among them as a raw frame of its own."""
        if not n:
            return
        at0 = self._buf_at
        for slot in self._slots:  # never cut through a slot: it is written whole, so it is buffered whole
            if slot.at - at0 < n < slot.at - at0 + slot.size:
                n = slot.at - at0 + slot.size
        with memoryview(self._buf) as buf, buf[:n] as head:
            data = bytes(head)  # one copy, which the compression tasks share
        del self._buf[:n]
        start = 0
        for slot in [s for s in self._slots if s.at - at0 < n]:
            self._submit(data, start, slot.at - at0)
            slot.frame = bytearray(raw_frame(data[slot.at - at0 : slot.at - at0 + slot.size]))
            self._queue.append(slot)
            self._slots.remove(slot)
            start = slot.at - at0 + slot.size
        self._submit(data, start, n)
        self._buf_at += n
        self._drain(AHEAD)

    def _submit(self, data: bytes, start: int, end: int) -> None:
        if self.head and self._buf_at + start == 0 and end > start and self.data is None:  # the root header alone
            head = min(self.head, end)
            self._queue.append(self._pool.submit(self._compress_planned, memoryview(data), [(0, head, 0, 0)], 0))
            start = head
        for lo in range(start, end, self.group):
            hi = min(lo + self.group, end)
            planned = [(a, min(a + self.size, hi), 0, 0) for a in range(lo, hi, self.size)]
            self._queue.append(self._pool.submit(self._compress_planned, memoryview(data), planned, self.own))

    def _compress_planned(
        self, view: memoryview, planned: list[tuple[int, int, int, int]], d: int
    ) -> list[tuple[bytes, int, tuple[int, int], int]]:
        """Frames [start, end) of ``view`` (each shuffled by its element size, or not),
        compressed with dictionary ``d`` at their level (0: the writer's): (frame, plain size,
        filter, dictionary). A frame of ``RAW_MIN`` bytes or more that zstd does not shrink by
        ``1 - RAW_RATIO`` is stored raw: read in place, unchecked."""
        out = []
        for start, end, element, level in planned:
            piece = view[start:end]
            c = self._compressor(d, level or None)
            frame = planes_compressed(c, shuffle(piece, element), element) if element else c.compress(piece)
            if not element and len(frame) >= RAW_RATIO * len(piece) and RAW_MIN <= len(piece) <= RAW_MAX:
                out.append((pack_raw_frame(piece, frame[-4:]), end - start, (RAW, 0), 0))  # read in place
            else:
                out.append((frame, end - start, (SHUFFLE, element) if element else (NO_FILTER, 0), d))
        return out

    def _drain(self, ahead: int) -> None:
        """Write queued frames in order until at most ``ahead`` compression tasks remain."""
        queue = self._queue
        while queue and (len(queue) > ahead or not isinstance(queue[0], Future) or queue[0].done()):
            item = queue.popleft()
            if isinstance(item, Future):
                for frame, plain, filter_, d in item.result():
                    self._emit(frame, plain, filter_, d)
            elif isinstance(item, Slot):
                assert item.frame is not None
                item.stored_at = self.stored
                self._emit(bytes(item.frame), item.size, (NO_FILTER, 0), 0)
            else:
                stored, entries, filters, dicts = item
                self._put(stored)
                self.entries += entries
                self.filters += filters
                self.frame_dicts += dicts

    def _emit(self, frame: bytes, plain: int, filter_: tuple[int, int], d: int) -> None:
        self._put(frame)
        self.entries.append((len(frame), plain))
        self.filters.append(filter_)
        self.frame_dicts.append(d)

    def _put(self, data: bytes | memoryview) -> None:
        self.out.write(data)
        self.stored += len(data)
