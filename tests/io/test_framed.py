"""The framed source (format 2.0 in progress, docs/compression.md): a data section written as
zstd frames by write/frames.py reads back through io/framed.py as the plain data, at any
offset and across the section's edges; damaged frames, and frames that claim another size
than the seek table (a decompression bomb), raise CorruptedError."""

import random

import pytest

from msglc import CorruptedError
from msglc.format.frames import FOOTER_SIZE, MAX_FRAME, parse_seek_table, seek_table_size
from msglc.io.framed import FramedSource
from msglc.io.local import BufferSource
from msglc.write.frames import compressed_section, frame_size

pytest.importorskip("zstandard")

HEAD, TAIL = b"H" * 16, b"T" * 100  # stand-ins for the header, and the TOC and trailer


def framed(plain: bytes, size: int = 4096, level: int = 3) -> tuple[bytes, FramedSource]:
    section = b"".join(compressed_section(plain, size, level))
    table = parse_seek_table(section[-seek_table_size(section[-FOOTER_SIZE:]) :], len(section), MAX_FRAME)
    file = HEAD + section + TAIL
    return file, FramedSource(BufferSource(file), len(HEAD), table, len(section))


def test_reads_anywhere_give_the_plain_bytes():
    rng = random.Random(7)
    plain = bytes(rng.choice(b"msglc archive ") for _ in range(50_000))
    file, source = framed(plain)
    whole = HEAD + plain + TAIL
    assert source.size == len(whole) and len(file) < len(whole)
    assert bytes(source.read(0, len(whole))) == whole
    for _ in range(300):
        offset = rng.randrange(len(whole))
        size = rng.randrange(min(20_000, len(whole) - offset) + 1)
        assert bytes(source.read(offset, size)) == whole[offset : offset + size]
    assert len(source.table.stored) - 1 == -(-len(plain) // 4096)  # frames of 4 KB
    with pytest.raises(Exception, match="ended|truncated"):
        source.read(len(whole) - 5, 10)


def test_empty_data_and_frame_sizes():
    file, source = framed(b"")
    assert bytes(source.read(0, source.size)) == HEAD + TAIL
    assert frame_size(64) == 4096 and frame_size(8192) == 8192 and frame_size(1 << 30) == MAX_FRAME
    with pytest.raises(ValueError, match="frame size"):
        list(compressed_section(b"x", 100, 3))


def test_damaged_frames_raise_corrupted_error():
    plain = bytes(range(256)) * 100
    file, source = framed(plain)
    start = len(HEAD) + source.table.stored[1]
    bad = bytearray(file)
    bad[start + 20] ^= 0xFF  # inside frame 1's compressed bytes: its checksum or structure fails
    damaged = FramedSource(BufferSource(bytes(bad)), len(HEAD), source.table, len(file) - len(HEAD) - len(TAIL))
    assert bytes(damaged.read(16, 100)) == plain[:100]  # frame 0 is intact
    with pytest.raises(CorruptedError, match="frame 1"):
        damaged.read(16 + 4096, 10)


def test_a_frame_claiming_another_size_is_refused_before_decompressing():
    """The seek table says 4096 bytes; a frame declaring more (here: one from a larger input
    put in its place) is refused from its header, without decompressing it."""
    import zstandard

    plain = bytes(8192)
    file, source = framed(plain)
    bomb = zstandard.ZstdCompressor(level=3, write_checksum=True).compress(bytes(64 << 20))
    start, stop = len(HEAD) + source.table.stored[0], len(HEAD) + source.table.stored[1]
    swapped = file[:start] + bomb + file[stop:]
    shift = len(bomb) - (stop - start)
    table = source.table._replace(
        stored=[0, *(s + shift for s in source.table.stored[1:])]
    )
    bombed = FramedSource(BufferSource(swapped), len(HEAD), table, len(swapped) - len(HEAD) - len(TAIL))
    with pytest.raises(CorruptedError, match="declares 67108864 bytes where the seek table says 4096"):
        bombed.read(16, 10)
