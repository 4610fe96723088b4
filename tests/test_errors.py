"""Bad files give msglc errors (never crashes, hangs or wrong answers); bad input and failed
writes never leave damaged files."""

import datetime
import decimal
import enum
import io
import os
import uuid
from dataclasses import dataclass

import msgspec
import pytest

import msglc
from msglc import CorruptedError, MsglcError, NotAnArchiveError, UnsupportedVersionError
from msglc.format.container import HEADER_SIZE

SMALL = {"small_obj_optimization_threshold": 64}
DOC = {
    "list": list(range(300)),
    "rows": [[float(i), float(-i)] for i in range(40)],
    "map": {f"k{i}": "v" * (i % 5) for i in range(60)},
    "hash": {f"h{i}": i for i in range(1100)},
    "nested": [{"x": [i] * 10} for i in range(20)],
}


def _walk(x):
    """Touch every part of a lazy value through the lazy API; returns it as plain objects."""
    if isinstance(x, msglc.LazyList):
        items = [_walk(x[i]) for i in range(len(x))]
        assert len(list(x)) == len(items)
        return items
    if isinstance(x, msglc.LazyDict):
        items = {k: _walk(x[k]) for k in list(x)}
        assert len(dict(x.items())) == len(items)
        return items
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
    data[8] = 2  # major version
    with pytest.raises(UnsupportedVersionError, match=r"format 2\.\d"):
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
        t = r._a.trailer
    data_end = t.data_off + t.data_len
    # every ninth byte outside the data section, every 17th inside it (where only verify()
    # must notice); every bit position (pos % 8) in each
    outside = [*range(0, t.data_off), *range(data_end, len(data))]
    for pos in sorted(outside[::9] + list(range(t.data_off, data_end, 17))):
        bad = bytearray(data)
        bad[pos] ^= 1 << (pos % 8)
        in_data = t.data_off <= pos < data_end
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

    from msglc.format.container import Trailer, pack_header

    header = pack_header()
    body = b"\xdd\xff\xff\xff\xff" + b"\x01"
    t = Trailer(HEADER_SIZE, len(body), HEADER_SIZE + len(body), 0, 0, 0, __import__("zlib").crc32(body), 64)
    data = header + body + t.pack(header)
    with msglc.LazyReader(data) as r, pytest.raises(CorruptedError):
        r.read()
    assert msgspec  # decoder imported fine


class Color(enum.Enum):
    RED = 1


class Ratio(enum.Enum):
    HALF = 0.5


class Bits(enum.Flag):
    A = 1
    B = 256


class Code(enum.Enum):
    """Makes members for unknown values on the fly: listed nowhere in its class."""

    OK = 1

    @classmethod
    def _missing_(cls, value):
        member = object.__new__(cls)
        member._value_ = value
        member._name_ = f"UNKNOWN_{value}"
        return member


class Addable(enum.Enum):
    """Supports +, so ``sum()`` over a row would not notice it."""

    A = 2.5

    def __radd__(self, other):
        return other + self.value


@dataclass
class Point:
    x: int


@pytest.mark.parametrize(
    "obj, what, where",
    [
        ({"a": [1, datetime.date(2020, 1, 1)]}, "date", "a/1"),
        ([decimal.Decimal("1.5")], "Decimal", "0"),
        ({"u": {"v": uuid.uuid4()}}, "UUID", "u/v"),
        ({"c": Color.RED}, "Color", "c"),
        ([Point(1)], "Point", "0"),
        (object(), "object", "the root"),
        ({1.5: 1}, "key of type float", "the root"),
        ({"x": {(1, 2): 1}}, "key of type tuple", "x"),
        ({True: 1}, "key of type bool", "the root"),
        ({None: 1}, "key of type NoneType", "the root"),
        ([list(range(100))] * 30 + [[1, 2, complex(1, 2)]], "complex", "30/2"),
        ([[1.5, 2.5]] * 300 + [[1.5, Ratio.HALF]], "Ratio", "300/1"),  # in a fixed-stride matrix
        ([[300, 400]] * 300 + [[500, Bits.A | Bits.B]], "Bits", "300/1"),  # a Flag combination
        ([[1, 2]] * 300 + [[1, Color.RED]], "Color", "300/1"),
        ([[70001] * 20] * 20 + [[70001] * 19 + [Code(70000)]], "Code", "20/19"),
        ([[1.5] * 20] * 20 + [[1.5] * 19 + [Code(2.5)]], "Code", "20/19"),
        ([[1.5] * 20] * 20 + [[1.5] * 19 + [Addable.A]], "Addable", "20/19"),
        ([1.5] * 50 + [msgspec.Raw(b"\xcb" + bytes(8))], "Raw", "50"),
    ],
)
def test_unsupported_values_name_type_and_place(obj, what, where, tmp_path):
    for threshold in (64, 8192):
        with pytest.raises(TypeError, match=what) as info:
            msglc.dumps(obj, small_obj_optimization_threshold=threshold)
        assert where in str(info.value)
    target = tmp_path / "out.mlc"
    with pytest.raises(TypeError):
        msglc.dump(target, obj)
    assert not target.exists() and os.listdir(tmp_path) == []


def test_int_out_of_range():
    with pytest.raises(OverflowError, match="a/2"):
        msglc.dumps({"a": [0, 1, 2**64]})


def test_invalid_unicode():
    with pytest.raises(ValueError, match="x/1"):
        msglc.dumps({"x": ["ok", "bad \ud800"]})
    with pytest.raises(ValueError, match="surrogate"):
        msglc.dumps({"\udc00": 1})


def test_reference_cycle():
    cyclic = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="itself"):
        msglc.dumps(cyclic)


def test_failed_dump_leaves_target_untouched(tmp_path, monkeypatch):
    target = tmp_path / "keep.mlc"
    msglc.dump(target, {"old": True})
    before = target.read_bytes()

    with pytest.raises(TypeError):
        msglc.dump(target, {"new": object()})
    assert target.read_bytes() == before

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(msglc.io.atomic.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        msglc.dump(target, list(range(10_000)))
    monkeypatch.undo()
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.mlc"]

    def interrupted(self):  # fails halfway through writing
        raise KeyboardInterrupt

    monkeypatch.setattr(msglc.write.encoder.Encoded, "trailer", interrupted)
    with pytest.raises(KeyboardInterrupt):
        msglc.dump(target, list(range(100_000)))
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.mlc"]


def test_dump_targets(tmp_path):
    data = msglc.dumps(DOC, **SMALL)
    msglc.dump(str(tmp_path / "s.mlc"), DOC, **SMALL)
    assert (tmp_path / "s.mlc").read_bytes() == data
    buf = io.BytesIO()
    msglc.dump(buf, DOC, **SMALL)
    assert buf.getvalue() == data

    class Sink:  # write-only, cannot seek: a pipe or socket
        def __init__(self):
            self.parts = []

        def write(self, b):
            self.parts.append(bytes(b))

    sink = Sink()
    msglc.dump(sink, DOC, **SMALL)
    assert b"".join(sink.parts) == data
    with pytest.raises(TypeError):
        msglc.dump(42, DOC)
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "s.mlc").stat().st_mode & 0o777 == 0o666 & ~umask


def test_options_are_checked():
    with pytest.raises(TypeError, match="unknown"):
        msglc.dumps([1], small_obj_optimization=10)
    with pytest.raises(ValueError):
        msglc.dumps([1], small_obj_optimization_threshold=0)
    from msglc.config import configure as configure_from_module

    try:
        configure_from_module(small_obj_optimization_threshold=128)
        assert msglc.LazyReader(msglc.dumps(list(range(100))))._a.trailer.threshold == 128
    finally:
        msglc.configure(small_obj_optimization_threshold=8192)


def test_durable_dump_writes_the_same_archive(tmp_path):
    path = tmp_path / "d.mlc"
    msglc.dump(path, DOC, durable=True, **SMALL)
    assert path.read_bytes() == msglc.dumps(DOC, **SMALL)
    assert os.listdir(tmp_path) == ["d.mlc"]
    with msglc.LazyReader(path) as r:
        r.verify()
