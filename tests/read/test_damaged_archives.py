"""Bad files give msglc errors, never crashes, hangs or wrong answers: not an archive, another
format version, truncated, shrunk under an open reader, bit flips, crafted huge lengths."""

import os
from typing import Any

import pytest
from archives import SMALL_DOC as DOC

import msglc
from msglc import CorruptedError, MsglcError, NotAnArchiveError, UnsupportedVersionError
from msglc.format.layout import HEADER_SIZE

SMALL: dict[str, Any] = {"small_obj_optimization_threshold": 64}  # dump's **options


def _walk(x):
    """Touch every part of a lazy value through the lazy API; returns it as plain objects."""
    if isinstance(x, msglc.LazyList):
        items = [_walk(x[i]) for i in range(len(x))]
        assert len(list(x)) == len(items)
        return items
    if isinstance(x, msglc.LazyDict):
        entries = {k: _walk(x[k]) for k in list(x)}
        assert len(dict(x.items())) == len(entries)
        return entries
    return x


def _read_everything(data):
    with msglc.LazyReader(data, cached=False) as r:
        _walk(r.read())
        r.verify()


def test_not_an_archive():
    for data in [b"", b"x", b"{}", b"\x89PNG\r\n\x1a\n" + bytes(100), os.urandom(500)]:
        with pytest.raises(NotAnArchiveError):
            msglc.LazyReader(data)
    with pytest.raises(MsglcError):  # also a ValueError, for code that catches that
        msglc.LazyReader(b"plain msgpack is not an archive" * 3)
    assert issubclass(MsglcError, ValueError)


def test_unsupported_version():
    data = bytearray(msglc.dumps([1, 2, 3]))
    data[8] = 3  # a major version this msglc does not know (2 is compressed archives)
    with pytest.raises(UnsupportedVersionError, match=r"format 3\.\d is not readable .* \(reads 1\.x and 2\.x\)"):
        msglc.LazyReader(bytes(data))


def test_every_truncation_is_refused():
    data = msglc.dumps(DOC, **SMALL)
    for size in range(0, len(data), max(1, len(data) // 400)):
        with pytest.raises(MsglcError):
            msglc.LazyReader(data[:size])


def test_file_shrinking_under_an_open_reader(tmp_path):
    path = tmp_path / "a.mlc"
    msglc.dump(path, DOC, **SMALL)
    with msglc.LazyReader(path, cached=False) as r:
        os.truncate(path, HEADER_SIZE + 10)
        with pytest.raises(msglc.ArchiveChangedError, match="file ended at .* changed after the reader opened it"):
            r["list"][250]


def test_every_bit_flip_is_detected():
    """Flip one bit at every byte. Outside the data section (header, TOC, trailer) the lazy
    reads themselves must raise an MsglcError. Inside it, lazy reads do not checksum the data
    they touch, so they may see a changed value (or a KeyError/IndexError that value implies),
    but never another exception, and verify() must always report it."""
    data = msglc.dumps(DOC, **SMALL)
    _read_everything(data)
    with msglc.LazyReader(data) as r:
        info = r.info()
    data_off, data_end = info.data_offset, info.data_offset + info.data_size
    # every ninth byte outside the data section, every 17th inside it (where only verify()
    # must notice); every bit position (pos % 8) in each
    outside = [*range(0, data_off), *range(data_end, len(data))]
    for pos in sorted(outside[::9] + list(range(data_off, data_end, 17))):
        bad = bytearray(data)
        bad[pos] ^= 1 << (pos % 8)
        in_data = data_off <= pos < data_end
        try:
            with msglc.LazyReader(bytes(bad), cached=False) as r:
                seen = _walk(r.read())
        except MsglcError:
            continue
        except (KeyError, IndexError):
            assert in_data, f"flip at {pos} outside the data section gave a lookup error"
        else:  # unnoticed by lazy reads: fine only in data, or in bytes no lookup depends on
            assert in_data or seen == DOC, f"flip at {pos} outside the data section changed a value"
        with msglc.LazyReader(bytes(bad)) as r, pytest.raises(CorruptedError):
            r.verify()


def test_crafted_huge_lengths_do_not_allocate():
    """A data section claiming a 4-billion-item array is refused, not allocated."""
    import msgspec

    from msglc.format.layout import Trailer, pack_header

    header = pack_header()
    body = b"\xdd\xff\xff\xff\xff" + b"\x01"
    t = Trailer(HEADER_SIZE, len(body), HEADER_SIZE + len(body), 0, 0, 0, __import__("zlib").crc32(body), 64)
    data = header + body + t.pack(header)
    with msglc.LazyReader(data) as r, pytest.raises(CorruptedError):
        r.read()
    assert msgspec  # decoder imported fine
