"""The seek table of a compressed data section (format/frames.py): what standard zstd tools
read, what msglc maps offsets with, and refusals of every malformed table before any
allocation from its numbers."""

import random
import struct

import pytest

from msglc import CorruptedError, UnsupportedVersionError
from msglc.format.frames import (
    FILTER_MAGIC,
    FOOTER_SIZE,
    NO_FILTER,
    RAW,
    SHUFFLE,
    pack_filter_table,
    pack_page,
    pack_raw_frame,
    pack_seek_table,
    parse_page,
    parse_seek_table,
    seek_table_size,
    tables_size,
)

zstandard = pytest.importorskip("zstandard")


def section(plain: bytes, cuts: list[int]) -> tuple[bytes, list[tuple[int, int]]]:
    """A data section: independent frames of plain[cuts[i]:cuts[i + 1]], then the seek table."""
    compressor = zstandard.ZstdCompressor(level=3, write_checksum=True)
    spans = list(zip(cuts, cuts[1:], strict=False))
    frames = [compressor.compress(plain[a:b]) for a, b in spans]
    sizes = [(len(f), b - a) for f, (a, b) in zip(frames, spans, strict=True)]
    return b"".join(frames) + pack_seek_table(sizes), sizes


def table_of(data: bytes, max_frame: int = 1 << 20):
    size = seek_table_size(data[-FOOTER_SIZE:])
    return parse_seek_table(data[len(data) - size :], len(data), max_frame)


def test_standard_tools_read_the_section_as_the_plain_data():
    rng = random.Random(1)
    plain = bytes(rng.choice(b"abcdefgh") for _ in range(200_000))
    data, _ = section(plain, [0, 50_000, 50_001, 120_000, 200_000])
    with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:
        assert reader.read() == plain  # the seek table is a skippable frame


def test_logical_offsets_map_to_their_frames():
    plain = bytes(range(256)) * 1000
    cuts = [0, 1000, 1001, 60_000, 256_000]
    data, sizes = section(plain, cuts)
    table = table_of(data)
    assert table.frames == 4 and list(table.logical) == cuts
    assert list(table.stored) == [0, *[sum(c for c, _ in sizes[: i + 1]) for i in range(4)]]
    decompressor = zstandard.ZstdDecompressor()
    for offset in (0, 999, 1000, 1001, 59_999, 60_000, 255_999):
        i = table.frame_of(offset)
        assert table.logical[i] <= offset < table.logical[i + 1]
        frame = decompressor.decompress(data[table.stored[i] : table.stored[i + 1]])
        assert frame[offset - table.logical[i]] == plain[offset]


def test_an_empty_section_has_an_empty_table():
    data = pack_seek_table([])
    table = table_of(data)
    assert table.frames == 0 and list(table.logical) == [0]


def _footer(count: int, descriptor: int = 0, magic: int = 0x8F92EAB1) -> bytes:
    return struct.pack("<IBI", count, descriptor, magic)


@pytest.mark.parametrize(
    ("footer", "error", "match"),
    [
        (_footer(1, magic=0x12345678), CorruptedError, "no seek table"),
        (_footer(1, descriptor=0x80), UnsupportedVersionError, "descriptor"),
        (_footer(1, descriptor=0x04), UnsupportedVersionError, "descriptor"),
    ],
)
def test_footers_msglc_does_not_read_are_refused(footer, error, match):
    with pytest.raises(error, match=match):
        seek_table_size(footer)


def test_malformed_tables_are_refused_before_allocating():
    data, sizes = section(bytes(100_000), [0, 40_000, 100_000])
    table_bytes = data[len(data) - seek_table_size(data[-FOOTER_SIZE:]) :]
    # a count of 2**32 - 1 frames: refused from the footer alone (the table cannot fit)
    huge = data[:-FOOTER_SIZE] + _footer(2**32 - 1)
    with pytest.raises(CorruptedError, match="does not fit"):
        table_of(huge)
    # a frame claiming to decompress to more than the reader allows (a decompression bomb):
    # the table opens (at C speed, whatever its size), the frame is refused before it is read
    table = table_of(data)
    assert table.check_frame(0, 50_000) is None
    assert "out of bounds" in table.check_frame(1, 50_000)
    # sizes that do not tile the section
    shifted = bytearray(data)
    entry = len(data) - len(table_bytes) + 8  # the first entry's compressed size
    shifted[entry : entry + 4] = struct.pack("<I", sizes[0][0] + 1)
    with pytest.raises(CorruptedError, match="do not make"):
        table_of(bytes(shifted))
    # a decompressed size of zero, and a stored size below the smallest frame (the stored
    # sizes then no longer tile the section: the last frame takes up the difference)
    for value, where in ((0, entry + 4), (3, entry)):
        bad = bytearray(data)
        bad[where : where + 4] = struct.pack("<I", value)
        if value == 3:
            last = entry + 8
            bad[last : last + 4] = struct.pack("<I", sizes[1][0] + sizes[0][0] - 3)
        assert "out of bounds" in table_of(bytes(bad)).check_frame(0, 1 << 20)
    # not a skippable frame
    bad = bytearray(data)
    bad[len(data) - len(table_bytes)] ^= 1
    with pytest.raises(CorruptedError, match="skippable"):
        table_of(bytes(bad))


def _filtered(filters: list[tuple[int, int]], cuts: list[int]) -> bytes:
    """A section of frames cut at ``cuts`` of zeros, with a filter table naming ``filters``."""
    data, sizes = section(bytes(cuts[-1]), cuts)
    return data[: -len(pack_seek_table(sizes))] + pack_filter_table(filters) + pack_seek_table(sizes)


def test_a_filter_table_names_each_frames_filter():
    data = _filtered([(SHUFFLE, 8), (NO_FILTER, 0)], [0, 4096, 5000])
    table = _table(data)
    assert (table.shuffle(0), table.shuffle(1)) == (8, 0) and table.frames == 2
    assert table.check_frame(0, 1 << 20) is None
    # an element size that does not divide its frame is refused when the frame is read
    bad = _table(_filtered([(SHUFFLE, 3), (NO_FILTER, 0)], [0, 4096, 5000]))
    assert "do not divide" in bad.check_frame(0, 1 << 20)


def _table(data: bytes):
    return parse_seek_table(data[-tables_size(data[-FOOTER_SIZE:], len(data)) :], len(data), 1 << 20)


@pytest.mark.parametrize(
    ("filters", "error", "match"),
    [
        ([(7, 0), (NO_FILTER, 0)], UnsupportedVersionError, "filter 7 is unknown"),
        ([(NO_FILTER, 4), (NO_FILTER, 0)], CorruptedError, "parameter"),
        ([(SHUFFLE, 1), (NO_FILTER, 0)], CorruptedError, "parameter"),
        ([(SHUFFLE, 0), (NO_FILTER, 0)], CorruptedError, "parameter"),
    ],
)
def test_filter_tables_msglc_cannot_read_are_refused(filters, error, match):
    with pytest.raises(error, match=match):
        _table(_filtered(filters, [0, 4096, 8192]))


def test_crafted_filter_tables_are_refused():
    good = _filtered([(SHUFFLE, 8), (NO_FILTER, 0)], [0, 4096, 8192])
    start = good.index(struct.pack("<I", FILTER_MAGIC))
    for offset, value in ((0, 0x184D2A50), (8, 0x46434C4E), (12, 3)):  # magic, tag, frame count
        bad = bytearray(good)
        bad[start + offset : start + offset + 4] = struct.pack("<I", value)
        with pytest.raises(CorruptedError, match="filter table"):
            _table(bytes(bad))
    for at in range(start + 16, start + 20):  # a code or an element size changed: the CRC tells
        bad = bytearray(good)
        bad[at] ^= 0x10
        with pytest.raises((CorruptedError, UnsupportedVersionError), match="filter"):
            _table(bytes(bad))
    # a table that is not there, though the frames leave room for one: the section does not tile
    data, sizes = section(bytes(8192), [0, 4096, 8192])
    for pad, match in ((24, "filter table is not well formed"), (25, "do not make")):  # 24: a filter table's size
        padded = data[: -len(pack_seek_table(sizes))] + b"\0" * pad + pack_seek_table(sizes)
        with pytest.raises(CorruptedError, match=match):
            _table(padded)


def test_a_page_table_gives_each_raw_frame_its_exact_stored_size():
    """A raw frame (2.1, filter 2) is read in place, 12 bytes in: its page table entry must
    say it stores its plain bytes and 16 more, else a read inside it would return bytes of
    the frames after it (found writing docs/format.md: the entry was not checked)."""
    frame = pack_raw_frame(bytes(100), b"\0" * 4)
    assert len(frame) == 116
    good = pack_page([(116, 100), (116, 100)], [(RAW, 0), (RAW, 0)], [0, 0])
    assert parse_page(good, 2, 0, 0, 0).stored == [0, 116, 232]
    for sizes in ([(116, 101), (116, 99)], [(115, 100), (117, 100)], [(16 + (1 << 17) + 1, (1 << 17) + 1), (116, 100)]):
        with pytest.raises(CorruptedError, match="raw frame at offset 0 of the section stores"):
            parse_page(pack_page(sizes, [(RAW, 0), (NO_FILTER, 0)], [0, 0]), 2, 0, 0, 0)


def test_a_page_table_names_only_dictionaries_the_section_has():
    """Each frame's dictionary number is checked against the section's count of them when the
    page is read, not when the frame is: a frame naming dictionary 3 of a section of 2 is
    refused with its page (a page of no frames names none)."""
    page = pack_page([(50, 100), (60, 100)], [(NO_FILTER, 0), (NO_FILTER, 0)], [0, 3])
    assert parse_page(page, 2, 0, 0, 3).dictionary(1) == 3
    with pytest.raises(CorruptedError, match="names a dictionary the section does not have"):
        parse_page(page, 2, 0, 0, 2)
    assert parse_page(pack_page([], [], []), 0, 0, 0, 0).stored == [0]
