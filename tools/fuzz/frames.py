"""The compressed section of a format 2.1 archive as parts the fuzzer (``tools.fuzz``) can
change and lay out again: its frames (stored bytes, plain size, filter, dictionary), its
dictionary records, and the tables that locate them (page tables, the index and its footer).

``parse_section`` takes a valid section apart with msglc's own parsers; ``build_section``
writes one from the parts, every offset, size and CRC computed again, so that a mutation can
change one thing (a frame's entry, a dictionary, the index's fields, the TOC's frames) and
leave everything else consistent: only the reader's consistency checks can tell. The tables
are packed here from the layout (docs/format.md, and until it is written ``msglc/format/
frames.py``), not with msglc's packers, so that fields msglc derives (counts, sizes, the
footer) can lie too.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import zstandard

from msglc.format.frames import (
    DICT_MAGIC,
    DICT_TAG,
    INDEX_DESCRIPTOR,
    INDEX_MAGIC,
    INDEX_TAG,
    NO_FILTER,
    PAGE_MAGIC,
    PAGE_TAG,
    RAW,
    RAW_MAX,
    SEEKABLE_MAGIC,
    SHUFFLE,
    dictionary_frame,
    pack_raw_frame,
    parse_index,
    parse_page,
)

# the records' layouts, as the format lays them out (little-endian)
SKIPPABLE = struct.Struct("<II")  # magic, content size
INDEX_HEAD = struct.Struct("<II4sQQQIIIII")  # magic, size, tag, data, toc, root pos, root len, frames, per page, pages,
# dicts
INDEX_PAGE = struct.Struct("<QQQI")  # page table's offset, first logical offset, first stored offset, its size
INDEX_DICT = struct.Struct("<QII")  # dictionary record's offset, its size, the dictionary's plain size
FOOTER = struct.Struct("<IBI")  # the index's size, descriptor, seekable magic
PAGE_HEAD = struct.Struct("<II4sI")  # magic, size, tag, frame count
CRC = struct.Struct("<I")


@dataclass
class Frame:
    """One zstd frame: its stored bytes, the plain bytes it holds, its filter (code and
    parameter) and its dictionary (0: none)."""

    stored: bytes
    plain: int
    code: int = NO_FILTER
    param: int = 0
    dict: int = 0


@dataclass
class Section:
    """A 2.1 section taken apart: ``frames`` in order (those of the data, then of the TOC),
    ``data`` and ``toc`` the plain lengths, ``root`` the root node (position in the TOC,
    length), ``dicts`` each dictionary's (record bytes, plain size)."""

    frames: list[Frame]
    data: int
    toc: int
    root: tuple[int, int]
    per_page: int
    dicts: list[tuple[bytes, int]] = field(default_factory=list)

    def copy(self) -> Section:
        return Section(
            [Frame(f.stored, f.plain, f.code, f.param, f.dict) for f in self.frames],
            self.data,
            self.toc,
            self.root,
            self.per_page,
            list(self.dicts),
        )

    def data_frames(self) -> int:
        """How many frames hold the data (the rest hold the TOC)."""
        at = n = 0
        for f in self.frames:
            if at >= self.data:
                break
            at += f.plain
            n += 1
        return n

    def spans(self, base: int) -> list[tuple[int, int, int, int, int]]:
        """(stored start, stored end, plain start, plain end, frame) of every frame as laid out
        by ``build_section`` from ``base`` (the section's offset in the file)."""
        out, at, logical = [], base, 0
        for i, f in enumerate(self.frames):
            out.append((at, at + len(f.stored), logical, logical + f.plain, i))
            at += len(f.stored)
            logical += f.plain
        return out

    def frames_end(self) -> int:
        return sum(len(f.stored) for f in self.frames)

    def records_end(self) -> int:
        """Where the page tables start: after the frames and the dictionary records."""
        return self.frames_end() + sum(len(r) for r, _ in self.dicts)


def parse_section(section: bytes) -> Section:
    """A valid 2.1 section taken apart (its index and page tables checked by msglc)."""
    index = parse_index(section, len(section))
    frames: list[Frame] = []
    for p, (at, first_logical, first_stored, size) in enumerate(index.pages):
        count = min(index.per_page, index.frames - p * index.per_page)
        page = parse_page(section[at : at + size], count, first_logical, first_stored, len(index.dicts))
        for k in range(count):
            frames.append(
                Frame(
                    section[page.stored[k] : page.stored[k + 1]],
                    page.logical[k + 1] - page.logical[k],
                    page.codes[k],
                    page.params[k],
                    page.dictionary(k),
                )
            )
    dicts = [(section[at : at + size], plain) for at, size, plain in index.dicts]
    return Section(frames, index.data, index.toc, index.root, index.per_page or 1, dicts)


@dataclass
class Tables:
    """Every field the tables of a section hold, as ``build_section`` computed them: a
    mutation changes some before they are packed (CRCs are computed from what it leaves).
    ``entries[p]``: page p's frames as [stored, plain, code, param, dict]; ``counts[p]``: the
    count page p's own header states; ``pages``: [offset, first logical, first stored, size];
    ``dicts``: [offset, record size, plain size]; ``npages``/``ndicts``: the counts the index
    states; ``size_delta``: added to the size the footer states."""

    data: int
    toc: int
    root_pos: int
    root_len: int
    frames: int
    per_page: int
    entries: list[list[list[int]]]
    counts: list[int]
    pages: list[list[int]]
    dicts: list[list[int]]
    npages: int
    ndicts: int
    size_delta: int = 0
    descriptor: int = INDEX_DESCRIPTOR


def pack_page(entries: list[list[int]], count: int) -> bytes:
    """A page table of these frame entries, stating ``count`` frames, its CRC computed."""
    n = len(entries)
    body = struct.pack(f"<I{2 * n}I", count, *(x for e in entries for x in (e[0], e[1])))
    body += (
        bytes(e[2] for e in entries) + bytes(e[3] for e in entries) + struct.pack(f"<{n}H", *(e[4] for e in entries))
    )
    body += CRC.pack(zlib.crc32(body))
    return SKIPPABLE.pack(PAGE_MAGIC, 4 + len(body)) + PAGE_TAG + body


def pack_index(t: Tables) -> bytes:
    body = b"".join(INDEX_PAGE.pack(*p) for p in t.pages) + b"".join(INDEX_DICT.pack(*d) for d in t.dicts)
    size = INDEX_HEAD.size + len(body) + CRC.size + FOOTER.size
    head = INDEX_HEAD.pack(
        INDEX_MAGIC,
        size - SKIPPABLE.size,
        INDEX_TAG,
        t.data,
        t.toc,
        t.root_pos,
        t.root_len,
        t.frames,
        t.per_page,
        t.npages,
        t.ndicts,
    )
    crc = zlib.crc32(head[SKIPPABLE.size :] + body)
    return head + body + CRC.pack(crc) + FOOTER.pack((size + t.size_delta) % 2**32, t.descriptor, SEEKABLE_MAGIC)


def build_section(
    sec: Section,
    per_page: int | None = None,
    edit_pages: Callable[[Tables], None] | None = None,
    edit_index: Callable[[Tables], None] | None = None,
) -> bytes:
    """The section of ``sec``: its frames, its dictionary records, its page tables of
    ``per_page`` frames (default: the section's), its index. ``edit_pages`` may change the
    page tables' fields (the layout then follows what they pack to), ``edit_index`` the
    index's (after the layout: what it changes is what the index states)."""
    per_page = per_page or sec.per_page
    n = len(sec.frames)
    entries = [[len(f.stored), f.plain, f.code, f.param, f.dict] for f in sec.frames]
    by_page = [entries[a : a + per_page] for a in range(0, n, per_page)]
    t = Tables(
        sec.data,
        sec.toc,
        sec.root[0],
        sec.root[1],
        n,
        per_page if n else 0,
        by_page,
        [len(p) for p in by_page],
        [],
        [],
        len(by_page),
        len(sec.dicts),
    )
    if edit_pages is not None:
        edit_pages(t)
    out = bytearray(b"".join(f.stored for f in sec.frames))
    for record, plain in sec.dicts:
        t.dicts.append([len(out), len(record), plain])
        out += record
    logical = stored = 0
    for page, count in zip(t.entries, t.counts, strict=True):
        packed = pack_page(page, count)
        t.pages.append([len(out), logical, stored, len(packed)])
        logical += sum(e[1] for e in page)
        stored += sum(e[0] for e in page)
        out += packed
    if edit_index is not None:
        edit_index(t)
    return bytes(out + pack_index(t))


def dictionary_record(frame: bytes) -> bytes:
    """The skippable record holding a dictionary's zstd frame."""
    return SKIPPABLE.pack(DICT_MAGIC, 4 + len(frame)) + DICT_TAG + frame


def like(frame: Frame, plain: bytes, dicts: list[bytes]) -> Frame:
    """A frame of ``plain`` made as ``frame`` was (raw, byte-shuffled, with its dictionary;
    ``dicts``: the dictionaries' raw content), as far as ``plain``'s length allows."""
    size = len(plain)
    if frame.code == RAW and 0 < size <= RAW_MAX:
        checksum = zstandard.ZstdCompressor(write_checksum=True).compress(plain)[-4:]
        return Frame(pack_raw_frame(plain, checksum), size, RAW)
    if frame.code == SHUFFLE and size % frame.param == 0:
        shuffled = b"".join(plain[k :: frame.param] for k in range(frame.param))
        stored = zstandard.ZstdCompressor(level=3, write_checksum=True).compress(shuffled)
        return Frame(stored, size, SHUFFLE, frame.param)
    if frame.dict:
        made = compress(plain, dict_data=dicts[frame.dict - 1])
        made.dict = frame.dict
        return made
    return compress(plain, raw_ok=False)


def _common(same: Callable[[int], bool], most: int) -> int:
    """The largest m <= ``most`` with ``same(m)`` (true up to some m, false after), by
    bisection: slices compared at C speed."""
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if same(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def with_data(sec: Section, old: bytes, new: bytes, dicts: list[bytes]) -> Section:
    """``sec`` (whose plain data is ``old``) holding the plain data ``new`` instead: the frames
    that hold the bytes that differ made again as they were made (``like``; the last of them
    takes what ``new`` adds or drops), every other frame kept as it is, the TOC's too."""
    p = _common(lambda m: old[:m] == new[:m], min(len(old), len(new)))
    q = _common(lambda m: old[len(old) - m :] == new[len(new) - m :], min(len(old), len(new)) - p)
    n = sec.data_frames()
    starts = [0]
    for f in sec.frames[:n]:
        starts.append(starts[-1] + f.plain)
    first = max(0, min(n - 1, next((i for i in range(n) if starts[i + 1] > p), n - 1)))
    end = max(p + 1, len(old) - q)  # the changed bytes of ``old`` end here (an insertion: after p)
    last = max(first, next((i for i in range(n) if starts[i + 1] >= end), n - 1))
    delta = len(new) - len(old)
    made = []
    for i in range(first, last + 1):
        a, b = starts[i], starts[i + 1] + (delta if i == last else 0)
        if b > a:
            made.append(like(sec.frames[i], new[a:b], dicts))
    out = sec.copy()
    out.frames = out.frames[:first] + made + out.frames[last + 1 : n] + out.frames[n:]
    out.data = len(new)
    return out


def compress(plain: bytes, level: int = 3, dict_data: bytes | None = None, raw_ok: bool = True) -> Frame:
    """A frame of ``plain`` as msglc's writers make one: zstd with its content size and
    checksum, or a raw frame when zstd does not shrink it (``raw_ok``)."""
    d = zstandard.ZstdCompressionDict(dict_data, dict_type=zstandard.DICT_TYPE_RAWCONTENT) if dict_data else None
    stored = zstandard.ZstdCompressor(level=level, write_checksum=True, dict_data=d).compress(plain)
    if raw_ok and dict_data is None and len(stored) >= 0.97 * len(plain) and 0 < len(plain) <= RAW_MAX:
        return Frame(pack_raw_frame(plain, stored[-4:]), len(plain), RAW)
    return Frame(stored, len(plain), NO_FILTER, 0, 0)


def frames_of(plain: bytes, cuts: list[int]) -> list[Frame]:
    """``plain`` in frames ending at ``cuts`` (ascending; the last is its length)."""
    out, at = [], 0
    for end in cuts:
        if end > at:
            out.append(compress(plain[at:end]))
            at = end
    return out


def with_toc(sec: Section, toc: bytes, root: tuple[int, int], cuts: list[int]) -> Section:
    """``sec`` with its TOC replaced by ``toc`` (root node at ``root``), framed anew at ``cuts``
    (offsets in the TOC); the data's frames and the dictionaries are kept as they are."""
    new = sec.copy()
    new.frames = new.frames[: sec.data_frames()] + frames_of(toc, cuts)
    new.toc, new.root = len(toc), root
    return new


def dictionary_content(record: bytes, plain: int) -> bytes:
    """The dictionary a record holds, decompressed (at most ``plain`` bytes)."""
    content: bytes = zstandard.ZstdDecompressor().decompress(bytes(dictionary_frame(record)), max_output_size=plain)
    return content
