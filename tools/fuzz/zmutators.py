"""Mutations of compressed (2.1) sections: crafted tables, dictionaries, raw frames, TOC
frames and layouts no writer makes."""

from __future__ import annotations

import itertools
import random
import zlib
from collections import Counter
from itertools import accumulate

from msglc.format.frames import (
    MAX_DICT,
    MAX_FRAME,
    NO_FILTER,
    RAW,
    RAW_HEAD,
    RAW_MAX,
    SHUFFLE,
    dictionary_frame,
    pack_raw_frame,
)
from msglc.format.layout import HEADER_SIZE, TRAILER_SIZE, unpack_trailer
from msglc.util.optional import zstandard
from msglc.write.compress import TOC_FRAME

from . import frames as ff
from .corpus import Sample
from .mutators import Mutation, index_edit, toc_edit, zarchive

# ---- 2.1 compressed sections: crafted tables, dictionaries, raw frames, TOC frames ---------------
#
# Each of these takes a 2.1 sample's section apart (``frames``), changes one thing and lays
# it out again with every offset and CRC computed anew (page tables, index, trailer; node CRCs
# for TOC edits): a reader can tell only by checking that the parts agree. Page tables hold
# ``per_page`` frames, chosen at random (1, 2, 3 or the writer's), so that several pages are
# exercised too.

_U32, _U64 = 2**32 - 1, 2**64 - 1


def _per_page(rng: random.Random, sec: ff.Section) -> int:
    return rng.choice([sec.per_page, sec.per_page, 1, 2, 3])


def _clamp(x: int, top: int) -> int:
    return min(max(0, x), top)


def _zmutation(s: Sample, section: bytes, desc: str, region: str = "tables", data_crc: int | None = None) -> Mutation:
    return Mutation(zarchive(s, section, data_crc), desc, region, crafted="toc" if region == "toc" else "tables")


def m_zindex(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A field of the section's index changed, its CRC recomputed: the data/TOC split (the
    root moved along, the data CRC recomputed), the root node, the frame count, frames per
    page, a page's or a dictionary's place, the counts, the footer's size or descriptor."""
    sec = s.section
    if sec is None or s.plain is None or s.toc_plain is None:
        return None
    per_page = _per_page(rng, sec)
    what = rng.choice(["split", "split", "root", "root", "frames", "per_page", "page", "page", "dict", "counts"])
    what = rng.choice([what, what, "footer", "lengths"])
    stream = s.plain + s.toc_plain[0]
    desc: list[str] = []
    crc: list[int] = []

    def edit(t: ff.Tables) -> None:
        if what == "split":  # data and TOC meet elsewhere: at another frame's start, or inside one
            starts = list(accumulate((f.plain for f in sec.frames), initial=0))
            k = rng.choice([1, -1, 2, -3, rng.choice(starts) - t.data, -t.data, t.toc])
            k = max(-t.data, min(k, t.toc))
            t.data, t.toc = t.data + k, t.toc - k
            moved = t.root_len and rng.random() < 0.7
            if moved:
                t.root_pos = _clamp(t.root_pos - k, _U64)
            crc.append(zlib.crc32(stream[: t.data]))
            desc.append(f"data/TOC split moved by {k}{', the root with it' if moved else ''}, data CRC recomputed")
        elif what == "root":
            how = rng.randrange(4)
            old_root = (t.root_pos, t.root_len)
            if how == 0:
                t.root_pos = _clamp(t.root_pos + rng.choice([1, -1, 4, -4]), _U64)
            elif how == 1:
                t.root_len = _clamp(t.root_len + rng.choice([1, -1, 4, -4, -t.root_len]), _U32)
            elif how == 2 and s.vtoc is not None:  # another node as the root
                assert s.toc_plain is not None  # (a 2.1 sample's, as vtoc)
                base = HEADER_SIZE + len(stream) - len(s.toc_plain[0])
                other = rng.choice([it for it in s.vtoc[0] if it.kind == "node"])
                t.root_pos, t.root_len = other.pos - base, other.size
            else:
                t.root_pos, t.root_len = rng.choice([(_U64 >> 1, t.root_len), (t.root_pos, _U32), (0, 0)])
            desc.append(f"root {old_root} -> {(t.root_pos, t.root_len)}")
        elif what == "frames":
            old = t.frames
            t.frames = _clamp(rng.choice([old + 1, old - 1, 0, _U32]), _U32)
            desc.append(f"frame count {old} -> {t.frames}")
        elif what == "per_page":
            old = t.per_page
            t.per_page = _clamp(rng.choice([old + 1, old - 1, 0, _U32, 2 * old]), _U32)
            desc.append(f"frames per page {old} -> {t.per_page}")
        elif what == "page" and t.pages:
            p = rng.randrange(len(t.pages))
            how = rng.randrange(5)
            if how == 0 and len(t.pages) > 1:
                q = rng.randrange(len(t.pages))
                t.pages[p], t.pages[q] = t.pages[q], t.pages[p]
                desc.append(f"pages {p} and {q} swapped")
            elif how == 1:
                t.pages.pop()
                if rng.random() < 0.5:
                    t.npages -= 1
                desc.append(f"the last page dropped, {t.npages} stated")
            elif how == 2:
                t.pages.insert(p, list(t.pages[p]))
                if rng.random() < 0.5:
                    t.npages += 1
                desc.append(f"page {p} listed twice, {t.npages} stated")
            else:
                f = rng.randrange(4)
                old = t.pages[p][f]
                top = _U32 if f == 3 else _U64
                t.pages[p][f] = _clamp(old + rng.choice([1, -1, 8, -8, 12, -12, t.pages[p][3], 2**32]), top)
                name = ["offset", "first logical", "first stored", "size"][f]
                desc.append(f"page {p} {name} {old} -> {t.pages[p][f]}")
        elif what == "dict":
            how = rng.randrange(4)
            if how == 0 or not t.dicts:  # a dictionary no frame needs, or one in a page table's place
                place = [t.pages[0][0], t.pages[0][3], 64] if t.pages and rng.random() < 0.5 else [0, 16, 1 << 16]
                t.dicts.append(place)
                t.ndicts += 1
                desc.append(f"dictionary {place} added")
            elif how == 1:
                t.dicts.pop()
                if rng.random() < 0.5:
                    t.ndicts -= 1
                desc.append(f"the last dictionary dropped, {t.ndicts} stated")
            else:
                d, f = rng.randrange(len(t.dicts)), rng.randrange(3)
                old = t.dicts[d][f]
                top = _U64 if f == 0 else _U32
                deltas = [1, -1, 8, -8, 2**20] + ([-old, MAX_DICT + 1 - old, old] if f == 2 else [])
                t.dicts[d][f] = _clamp(old + rng.choice(deltas), top)
                desc.append(f"dictionary {d + 1} {['offset', 'record size', 'plain size'][f]} {old} -> {t.dicts[d][f]}")
        elif what == "counts":
            if rng.random() < 0.5:
                t.npages = _clamp(t.npages + rng.choice([1, -1]), _U32)
            else:
                t.ndicts = _clamp(t.ndicts + rng.choice([1, -1]), _U32)
            desc.append(f"counts stated: {t.npages} pages, {t.ndicts} dictionaries")
        elif what == "footer":
            if rng.random() < 0.6:
                t.size_delta = rng.choice([1, -1, 4, -4, 9, -9, 2**31])
                desc.append(f"footer size {t.size_delta:+}")
            else:
                t.descriptor = rng.choice([0, 0x7D, 0xFC, 0x80, 0x3C, 0x78])
                desc.append(f"footer descriptor {t.descriptor:#x}")
        else:  # the plain lengths, one without the other
            name = rng.choice(["data", "toc"])
            old = getattr(t, name)
            setattr(t, name, _clamp(old + rng.choice([1, -1, 64, 1 << 20, -old, 2**40]), _U64))
            desc.append(f"{name} length {old} -> {getattr(t, name)}")

    section = ff.build_section(sec, per_page, edit_index=edit)
    if not desc:
        return None
    return _zmutation(s, section, f"zindex: {desc[0]} ({per_page} frames a page)", data_crc=crc[0] if crc else None)


def m_zpage(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A frame's entry in its page table changed, the CRC recomputed (the index's page
    offsets follow the sums): stored or plain sizes (moved from the next frame or not: frames
    overlap, leave gaps, or claim more than they hold), a bomb (a large plain size, the
    section's plain length grown to match or not), zero sizes, filter codes and parameters,
    dictionary numbers, two entries swapped, a page's stated count."""
    sec = s.section
    if sec is None:
        return None
    per_page = _per_page(rng, sec)
    n = len(sec.frames)
    i = rng.randrange(n)
    p, k = divmod(i, per_page)
    in_data = i < sec.data_frames()
    what = rng.choice(["stored", "stored", "plain", "plain", "bomb", "zero", "code", "param", "dict", "swap", "count"])
    desc: list[str] = []

    def edit(t: ff.Tables) -> None:
        e = t.entries[p][k]
        nxt = t.entries[(i + 1) // per_page][(i + 1) % per_page] if i + 1 < n else None
        moved = nxt is not None and rng.random() < 0.7  # the next frame gives or takes as much
        length = "data" if in_data else "toc"
        if what in ("stored", "plain", "zero"):
            f = 0 if what == "stored" or (what == "zero" and rng.random() < 0.5) else 1
            d = -e[f] if what == "zero" else rng.choice([1, -1, 2, -4, 9, -(e[f] // 2), e[f]])
            d = max(d, -e[f])
            e[f] += d
            if moved and nxt is not None:
                nxt[f] = _clamp(nxt[f] - d, _U32)
            elif f == 1 and rng.random() < 0.5:  # the section's plain length follows
                setattr(t, length, _clamp(getattr(t, length) + d, _U64))
            which = "stored" if f == 0 else "plain"
            desc.append(f"frame {i} {which} size {d:+}{', the next frame the opposite' if moved else ''}")
        elif what == "bomb":
            new = rng.choice([MAX_FRAME, MAX_FRAME + 1, RAW_MAX + 1, 64 * e[1], 2**31, _U32])
            d = new - e[1]
            e[1] = _clamp(new, _U32)
            if rng.random() < 0.6:
                setattr(t, length, getattr(t, length) + d)
            desc.append(f"frame {i} claims {e[1]} plain bytes ({length} {getattr(t, length)})")
        elif what == "code":
            e[2] = rng.choice([NO_FILTER, SHUFFLE, RAW, 3, 255])
            if rng.random() < 0.8:
                e[3] = rng.choice([2, 4, 8, 3, min(e[1], 255)]) if e[2] == SHUFFLE else 0
            desc.append(f"frame {i} filter {e[2]} parameter {e[3]}")
        elif what == "param":
            e[3] = rng.choice([0, 1, 2, 3, 4, 8, 9, 255])
            desc.append(f"frame {i} filter {e[2]} parameter {e[3]}")
        elif what == "dict":
            e[4] = rng.choice([0, 1, 1, len(sec.dicts), len(sec.dicts) + 1, 65535])
            desc.append(f"frame {i} dictionary {e[4]} (the section has {len(sec.dicts)})")
        elif what == "swap" and n > 1:
            j = rng.choice([x for x in range(n) if x != i])
            other = t.entries[j // per_page][j % per_page]
            e[:], other[:] = list(other), list(e)
            desc.append(f"frames {i} and {j} swapped in the page tables")
        else:
            if rng.random() < 0.5:
                t.counts[p] = _clamp(t.counts[p] + rng.choice([1, -1]), _U32)
                desc.append(f"page {p} states {t.counts[p]} frames of {len(t.entries[p])}")
            else:
                del t.entries[p][k]
                t.counts[p] -= 1
                desc.append(f"frame {i}'s entry dropped from page {p}")

    section = ff.build_section(sec, per_page, edit_pages=edit)
    if not desc:
        return None
    # a filter is taken from the table (nothing in a frame names it): a data frame's changed
    # filter changes the plain data, which lazy reads do not checksum (a TOC frame's, nodes' CRCs)
    region = "data" if in_data and what in ("code", "param", "swap") else "tables"
    return _zmutation(s, section, f"zpage: {desc[0]} ({per_page} frames a page)", region)


def m_zdict(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A dictionary record changed, the section laid out again: its zstd frame swapped for
    another (of its content with a byte changed, shorter or longer, of other data, without a
    checksum or a content size, a raw frame, bytes that are no frame), its declared size
    wrong, its record's header changed."""
    sec = s.section
    if sec is None or not sec.dicts or s.plain is None:
        return None
    zstd = zstandard()
    new = sec.copy()
    d = rng.randrange(len(sec.dicts))
    record, plain = sec.dicts[d]
    content = ff.dictionary_content(record, plain)
    what = rng.choice(["byte", "byte", "length", "other", "nochecksum", "nosize", "raw", "garbage", "declared"])
    what = rng.choice([what, "record"]) if rng.random() < 0.2 else what
    frame = bytes(dictionary_frame(record))
    if what == "byte":
        changed = bytearray(content)
        at = rng.randrange(len(changed))
        changed[at] ^= rng.randrange(1, 256)
        frame = zstd.ZstdCompressor(level=3, write_checksum=True).compress(bytes(changed))
        desc = f"byte {at} of its content changed"
    elif what == "length":
        k = rng.choice([1, 64, 4096])
        resized = content[:-k] if rng.random() < 0.5 else content + content[:k]
        frame = zstd.ZstdCompressor(level=3, write_checksum=True).compress(resized)
        if rng.random() < 0.7:
            plain = len(resized)
        desc = f"content of {len(resized)} bytes, {plain} declared"
    elif what == "other":
        other = (s.plain * (1 + len(content) // max(len(s.plain), 1)))[rng.randrange(len(s.plain)) :][: len(content)]
        frame = zstd.ZstdCompressor(level=3, write_checksum=True).compress(other)
        plain = len(other)
        desc = f"a frame of other data ({len(other)} bytes)"
    elif what == "nochecksum":
        frame = zstd.ZstdCompressor(level=3, write_checksum=False).compress(content)
        desc = "a frame of its content without a checksum"
    elif what == "nosize":
        frame = zstd.ZstdCompressor(level=3, write_checksum=True, write_content_size=False).compress(content)
        desc = "a frame of its content without its size"
    elif what == "raw" and len(content) <= RAW_MAX:
        checksum = zstd.ZstdCompressor(write_checksum=True).compress(content)[-4:]
        frame = bytes(pack_raw_frame(content, checksum))
        desc = "its content as a raw frame (the same dictionary)"
    elif what == "garbage":
        frame = bytes(rng.randrange(256) for _ in range(len(frame)))
        desc = "bytes that are no zstd frame"
    elif what == "declared":
        old = plain
        plain = _clamp(plain + rng.choice([1, -1, -plain, MAX_DICT + 1 - plain, plain]), _U32)
        desc = f"declared plain size {old} -> {plain}"
    else:
        what = "record"
    record = ff.dictionary_record(frame)
    if what == "record":
        changed_record = bytearray(record)
        at = rng.randrange(12)
        changed_record[at] ^= 1 << rng.randrange(8)
        record = bytes(changed_record)
        desc = f"record header byte {at} changed"
    new.dicts[d] = (record, plain)
    section = ff.build_section(new, _per_page(rng, sec))
    return _zmutation(s, section, f"zdict: dictionary {d + 1}: {desc}")


def m_zraw(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """Raw frames (filter 2, read in place): a header byte or the checksum changed, the frame
    made shorter or longer, a zstd frame labelled raw (or a raw one labelled otherwise), a raw
    frame's plain size grown (the next frame's shrunk, or the section's grown): in-place reads
    past its end."""
    sec = s.section
    if sec is None:
        return None
    raws = [i for i, f in enumerate(sec.frames) if f.code == RAW]
    others = [i for i, f in enumerate(sec.frames) if f.code != RAW]
    new = sec.copy()
    per_page = _per_page(rng, sec)
    what = rng.choice(["header", "header", "checksum", "short", "long", "relabel", "unraw", "past", "past"])
    if not raws or what == "relabel" and others:
        i = rng.choice(others)
        what = "relabel"
    else:
        i = rng.choice(raws)
    f = new.frames[i]
    desc: list[str] = []
    if what in ("header", "checksum", "short", "long"):
        stored = bytearray(f.stored)
        if what == "header":
            at = rng.randrange(RAW_HEAD)
            stored[at] = rng.choice([stored[at] ^ (1 << rng.randrange(8)), 0, 0xFF, stored[at] + 1 & 0xFF])
            desc.append(f"raw frame {i}: header byte {at} = {stored[at]:#04x}")
        elif what == "checksum":
            stored[-1 - rng.randrange(4)] ^= 1 << rng.randrange(8)
            desc.append(f"raw frame {i}: checksum changed")
        elif what == "short":
            k = rng.choice([1, 4, 5])
            del stored[-k:]
            desc.append(f"raw frame {i}: its last {k} bytes gone (the page says so)")
        else:
            k = rng.choice([1, 4, 16])
            stored += bytes(rng.randrange(256) for _ in range(k))
            desc.append(f"raw frame {i}: {k} bytes after its checksum (the page says so)")
        f.stored = bytes(stored)
        section = ff.build_section(new, per_page)
        return _zmutation(s, section, f"zraw: {desc[0]} ({per_page} frames a page)")

    def edit(t: ff.Tables) -> None:
        e = t.entries[i // per_page][i % per_page]
        if what == "relabel":
            old = e[2]
            e[2], e[3] = RAW, 0
            desc.append(f"frame {i} (filter {old}) labelled raw")
        elif what == "unraw":
            e[2] = rng.choice([NO_FILTER, SHUFFLE])
            e[3] = rng.choice([2, 4]) if e[2] == SHUFFLE else 0
            desc.append(f"raw frame {i} labelled filter {e[2]} parameter {e[3]}")
        else:
            d = rng.choice([1, 4, 16, 4096, RAW_MAX])
            e[1] = _clamp(e[1] + d, _U32)  # (its plain size, so it no longer fits the frame)
            if i + 1 < len(sec.frames) and rng.random() < 0.6:
                nxt = t.entries[(i + 1) // per_page][(i + 1) % per_page]
                nxt[1] = _clamp(nxt[1] - d, _U32)
                desc.append(f"raw frame {i} plain size {d:+}, the next frame's {-d:+}")
            else:
                name = "data" if i < sec.data_frames() else "toc"
                setattr(t, name, getattr(t, name) + d)
                desc.append(f"raw frame {i} plain size {d:+}, the {name} length with it")

    section = ff.build_section(new, per_page, edit_pages=edit)
    region = "data" if what == "unraw" and i < sec.data_frames() else "tables"  # (as in zpage: a filter)
    return _zmutation(s, section, f"zraw: {desc[0]} ({per_page} frames a page)", region)


def _toc_cuts(rng: random.Random, size: int, root: int) -> list[int]:
    """Where frames of a TOC of ``size`` bytes end: as writers cut it (``TOC_FRAME`` bytes, the
    root node starting a frame), in one frame, or in small frames that cut nodes in two."""
    how = rng.randrange(3)
    if how == 0:
        cuts = sorted({*range(TOC_FRAME, size, TOC_FRAME), root, size} - {0})
    elif how == 1:
        cuts = [size]
    else:
        step = max(rng.choice([7, 50, 300, 2000]), size // 100)  # at most about 200 frames
        cuts, at = [], 0
        while at < size:
            at = min(size, at + rng.randrange(1, step + 1))
            cuts.append(at)
    return cuts


def _zreframed_toc(rng: random.Random, s: Sample, virtual: bytes, desc: str) -> Mutation:
    """A 2.1 mutation from a TOC edit made on the sample's plain ``virtual`` archive: its TOC
    framed again into the section (the data's frames and the dictionaries as they are)."""
    assert s.section is not None
    t = unpack_trailer(virtual[-TRAILER_SIZE:], len(virtual), virtual[:HEADER_SIZE])
    toc = virtual[t.toc_off : t.toc_off + t.toc_len]
    cuts = _toc_cuts(rng, len(toc), t.root_pos)
    sec = ff.with_toc(s.section, toc, (t.root_pos, t.root_len), cuts)
    per_page = _per_page(rng, sec)
    section = ff.build_section(sec, per_page)
    return _zmutation(s, section, f"{desc} (2.1: TOC in {len(cuts)} frames, {per_page} a page)", region="toc")


def m_ztoc(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A TOC node of a 2.1 archive changed as ``toc`` changes a plain archive's (types 7 and
    8 included: a fuse's seed and shape fields, a compact dict's key and value lengths), node
    CRCs recomputed, the TOC framed again."""
    if s.vtoc is None or s.virtual is None:
        return None
    bad, desc = toc_edit(rng, s.virtual, s.vtoc)
    return _zreframed_toc(rng, s, bad, desc)


def m_zhash(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """A hash index region of a 2.1 archive changed as ``index`` changes a plain archive's (a
    fuse's slots, chunk CRCs, block offsets, its shape), CRCs recomputed, the TOC framed again."""
    if s.vtoc is None or s.virtual is None:
        return None
    made = index_edit(rng, s.virtual, s.vtoc)
    return None if made is None else _zreframed_toc(rng, s, made[0], made[1])


def _shuffled(piece: bytes, element: int) -> bytes:
    return b"".join(piece[k::element] for k in range(element))


MANY_DICTS_SHARE = 0.05  # of the zlayout cases: dictionaries of the largest size, one per frame
_BIG_DICT: list[bytes] = []  # its record, made once per process


def _many_dictionaries(rng: random.Random, s: Sample) -> Mutation:
    """A valid layout a writer would not make: the data in ``n`` frames, each naming a
    dictionary of its own, every dictionary the largest a reader takes (``MAX_DICT`` zeros;
    their records all one, a few hundred bytes). (The frames do not refer into them:
    compressed without one, a frame decompresses alike with any raw-content dictionary.) It
    must read back. It found that readers kept every dictionary loaded (with 16 MB ones then:
    MemoryError), and then that loading them again cost 16 MB each."""
    assert s.section is not None and s.plain is not None
    if not _BIG_DICT:
        zstd = zstandard()
        _BIG_DICT.append(
            ff.dictionary_record(zstd.ZstdCompressor(level=19, write_checksum=True).compress(bytes(MAX_DICT)))
        )
    # (60 of 1 MB fit the reader's 64 MB of kept dictionaries: more are loaded again when reads
    # take turns among them, each load costing what a 1 MB frame does, which reading a block of
    # a hash-indexed dict cut in 80 frames does ~1000 times in the walk: past the timeout)
    n = min(rng.choice([16, 60]), len(s.plain))
    cuts = [len(s.plain) * k // n for k in range(n + 1)]
    frames = []
    for d, (a, b) in enumerate(itertools.pairwise(cuts)):
        frame = ff.compress(s.plain[a:b], raw_ok=False)
        frame.dict = d + 1
        frames.append(frame)
    new = s.section.copy()
    new.frames = frames + new.frames[s.section.data_frames() :]
    new.dicts = [(_BIG_DICT[0], MAX_DICT)]

    def edit(t: ff.Tables) -> None:  # n entries in the index, one record
        t.dicts = [list(t.dicts[0]) for _ in range(n)]
        t.ndicts = n

    section = ff.build_section(new, rng.choice([1, 512]), edit_index=edit)
    desc = f"zlayout: {n} data frames, each with a dictionary of its own of {MAX_DICT} bytes (one record)"
    return Mutation(zarchive(s, section), desc, "none", crafted="none")


def m_zlayout(rng: random.Random, s: Sample, corpus: list[Sample]) -> Mutation | None:
    """No change to what the archive holds, a layout no writer makes: the data in frames of
    random sizes (zstd, raw, byte-shuffled or with the section's dictionary, at random), the
    TOC in random frames, page tables of a few frames. The archive must read back."""
    sec = s.section
    if sec is None or s.plain is None or s.toc_plain is None:
        return None
    if rng.random() < MANY_DICTS_SHARE:
        return _many_dictionaries(rng, s)
    dicts = s.dict_content
    new = sec.copy()
    data: list[ff.Frame] = new.frames[: sec.data_frames()]
    kinds: Counter[str] = Counter()
    if rng.random() < 0.7:
        data, at = [], 0
        step = max(rng.choice([64, 1000, 20000, 70000]), len(s.plain) // 20)  # at most about 40 frames
        while at < len(s.plain):
            size = min(len(s.plain) - at, rng.randrange(1, step + 1))
            data.append(_any_frame(rng, s.plain[at : at + size], dicts, kinds))
            at += size
    toc, root = s.toc_plain
    cuts = _toc_cuts(rng, len(toc), root[0]) if toc else []
    toc_kinds: Counter[str] = Counter()
    if rng.random() < 0.5:  # as writers frame a TOC (zstd, or raw when that does not shrink it)
        toc_frames = ff.frames_of(toc, cuts)
    else:  # a TOC's frames made as any frame may be: shuffled, with a dictionary (writers never do)
        toc_frames = [_any_frame(rng, toc[a:b], dicts, toc_kinds) for a, b in itertools.pairwise([0, *cuts])]
    new.frames = data + toc_frames
    per_page = rng.choice([sec.per_page, 1, 2, 3, 5])
    section = ff.build_section(new, per_page)
    made = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "as they were"
    in_toc = ", ".join(f"{n} {k}" for k, n in sorted(toc_kinds.items())) or "as writers make them"
    desc = f"zlayout: data frames {made}; TOC in {len(cuts)} frames ({in_toc}); {per_page} frames a page"
    return Mutation(zarchive(s, section), desc, "none", crafted="none")


def _any_frame(rng: random.Random, piece: bytes, dicts: list[bytes], kinds: Counter[str]) -> ff.Frame:
    """A frame of ``piece`` made at random as the format allows: zstd at levels 1 to 5, raw,
    byte-shuffled by an element size that divides it, or with one of the ``dicts``."""
    zstd = zstandard()
    size = len(piece)
    kind = rng.choice(["zstd", "zstd", "raw", "shuffle", "dict"])
    elements = [e for e in (2, 4, 8, 9) if size % e == 0]
    if kind == "raw" and size <= RAW_MAX:
        checksum = zstd.ZstdCompressor(write_checksum=True).compress(piece)[-4:]
        frame = ff.Frame(pack_raw_frame(piece, checksum), size, RAW)
    elif kind == "shuffle" and elements:
        element = rng.choice(elements)
        compressor = zstd.ZstdCompressor(level=rng.randrange(1, 6), write_checksum=True)
        frame = ff.Frame(compressor.compress(_shuffled(piece, element)), size, SHUFFLE, element)
    elif kind == "dict" and dicts:
        d = rng.randrange(len(dicts))
        raw = zstd.ZstdCompressionDict(dicts[d], dict_type=zstd.DICT_TYPE_RAWCONTENT)
        compressor = zstd.ZstdCompressor(level=rng.randrange(1, 6), write_checksum=True, dict_data=raw)
        frame = ff.Frame(compressor.compress(piece), size, NO_FILTER, 0, d + 1)
    else:
        kind = "zstd"
        compressor = zstd.ZstdCompressor(level=rng.randrange(1, 6), write_checksum=True)
        frame = ff.Frame(compressor.compress(piece), size)
    kinds[kind] += 1
    return frame
