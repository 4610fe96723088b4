"""Datetimes with a timezone are stored as msgpack timestamps (extension -1) and read back as
UTC datetimes; naive ones and other types msgspec would write as something else are refused,
unless the ``enc_hook`` option converts them."""

import dataclasses
import datetime
import decimal
import enum
import io
import os
import uuid

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

import msglc
from msglc import FileInfo, LazyList, LazyReader, LazyWriter, Pairs

UTC = datetime.timezone.utc
WHEN = datetime.datetime(2026, 10, 17, 8, 30, 15, 123456, tzinfo=UTC)


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    tag: uuid.UUID


def as_published(value):
    """What the published msglc wrote for these types (via msgspec): a recipe for enc_hook."""
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (uuid.UUID, decimal.Decimal)):
        return str(value)
    if isinstance(value, (datetime.date, datetime.time)):  # naive datetimes too
        return value.isoformat()
    raise TypeError(f"no conversion for {type(value).__name__}")


@pytest.mark.parametrize("threshold", [0, 8192])
def test_aware_datetimes_round_trip(threshold):
    doc = {"at": WHEN, "many": [WHEN + datetime.timedelta(seconds=i) for i in range(500)], "root-ish": [WHEN]}
    with LazyReader(msglc.dumps(doc, small_obj_optimization_threshold=threshold)) as reader:
        assert reader["at"] == WHEN and reader["at"].tzinfo is not None
        assert reader["many/499"] == WHEN + datetime.timedelta(seconds=499)
        assert reader["many/0:100:300"][-1] == WHEN + datetime.timedelta(seconds=200)
        assert reader.to_obj() == doc
        reader.verify()
    assert msglc.LazyReader(msglc.dumps(WHEN)).read() == WHEN  # a datetime as the whole object


offsets = st.timedeltas(min_value=datetime.timedelta(hours=-23), max_value=datetime.timedelta(hours=23))


@given(
    st.datetimes(min_value=datetime.datetime(2, 1, 1), max_value=datetime.datetime(9998, 12, 31)),
    offsets.map(datetime.timezone),
)
def test_any_aware_datetime_reads_back_as_the_same_instant_in_utc(local, zone):
    when = local.replace(tzinfo=zone)
    got = LazyReader(msglc.dumps({"t": when})).read("t")
    assert got == when
    assert got.tzinfo == UTC
    assert got.replace(tzinfo=None) == when.astimezone(UTC).replace(tzinfo=None)


def test_the_data_section_holds_standard_timestamps():
    data = msglc.dumps([WHEN, datetime.datetime(1969, 7, 20, 20, 17, 40, tzinfo=UTC)])
    with LazyReader(data) as reader:
        raw = reader.protocol_raw_data()
    assert raw[1:3] == b"\xd7\xff"  # timestamp 64 (with nanoseconds), extension type -1
    assert raw[11:14] == b"\xc7\x0c\xff"  # timestamp 96: before 1970
    decoded = msgpack.unpackb(raw, timestamp=3)
    assert decoded == [WHEN, datetime.datetime(1969, 7, 20, 20, 17, 40, tzinfo=UTC)]


def test_lazy_writer_streams_datetimes():
    out = io.BytesIO()
    with LazyWriter(out, small_obj_optimization_threshold=64) as writer:
        writer.write({"log": ({"at": WHEN, "i": i} for i in range(300)), "by": Pairs((str(i), WHEN) for i in range(3))})
    with LazyReader(out.getvalue()) as reader:
        assert isinstance(reader["log"], LazyList)
        assert reader["log/299/at"] == WHEN and reader["by/2"] == WHEN


@pytest.mark.parametrize(
    "value, what",
    [
        (datetime.datetime(2026, 10, 17, 8, 30), "naive datetime"),
        (uuid.UUID(int=7), "UUID"),
        (decimal.Decimal("1.25"), "Decimal"),
        (Color.RED, "Color"),
        (Point(1, uuid.UUID(int=1)), "Point"),
        (datetime.date(2026, 10, 17), "date"),
        (datetime.time(8, 30), "time"),
        (datetime.timedelta(seconds=5), "timedelta"),
    ],
)
def test_other_types_are_refused_naming_enc_hook(value, what, tmp_path):
    for threshold in (0, 64, 8192):
        with pytest.raises(TypeError, match=what) as info:
            msglc.dumps({"rows": [1, {"v": value}]}, small_obj_optimization_threshold=threshold)
        assert "(at rows/1/v)" in str(info.value) and "enc_hook=" in str(info.value)
    with pytest.raises(TypeError, match="enc_hook="), LazyWriter(tmp_path / "s.mlc") as writer:
        writer.write(x for x in [1, value])
    with pytest.raises(TypeError, match="enc_hook="):
        msglc.dump(tmp_path / "d.mlc", [value])
    assert os.listdir(tmp_path) == []


def test_a_naive_datetime_error_says_how_to_fix_it():
    with pytest.raises(TypeError, match="no timezone.*tzinfo=datetime.timezone.utc"):
        msglc.dumps([datetime.datetime(2026, 1, 1)])
    with pytest.raises(TypeError, match="naive"):  # among aware ones: each value is checked
        msglc.dumps([WHEN] * 100 + [datetime.datetime(2026, 1, 1)] + [WHEN])


def test_a_datetime_subclass_is_refused():
    class Stamp(datetime.datetime):
        pass

    with pytest.raises(TypeError, match="Stamp"):
        msglc.dumps([Stamp(2026, 1, 1, tzinfo=UTC)])
    converted = msglc.dumps(
        [Stamp(2026, 1, 1, tzinfo=UTC)], enc_hook=lambda d: datetime.datetime.fromtimestamp(d.timestamp(), UTC)
    )
    assert LazyReader(converted).read() == [datetime.datetime(2026, 1, 1, tzinfo=UTC)]


DOC = {
    "color": Color.RED,
    "point": Point(3, uuid.UUID(int=9)),
    "price": (decimal.Decimal("9.99"), {decimal.Decimal("0.5")}),
    "day": datetime.date(2026, 10, 17),
    "naive": datetime.datetime(2026, 10, 17, 8, 30),
    "aware": WHEN,
    uuid.UUID(int=1): "a UUID key",
    "plain": [1, 2.5, "x", None],
}
EXPECTED = {
    "color": "red",
    "point": {"x": 3, "tag": "00000000-0000-0000-0000-000000000009"},
    "price": ["9.99", ["0.5"]],
    "day": "2026-10-17",
    "naive": "2026-10-17T08:30:00",
    "aware": WHEN,
    "00000000-0000-0000-0000-000000000001": "a UUID key",
    "plain": [1, 2.5, "x", None],
}


@pytest.mark.parametrize("threshold", [0, 8192])
def test_enc_hook_converts_per_call_in_every_writer(threshold, tmp_path):
    options = {"small_obj_optimization_threshold": threshold, "enc_hook": as_published}
    assert LazyReader(msglc.dumps(DOC, **options)).to_obj() == EXPECTED
    msglc.dump(tmp_path / "d.mlc", DOC, **options)
    assert LazyReader(tmp_path / "d.mlc").to_obj() == EXPECTED

    out = io.BytesIO()
    with LazyWriter(out, **options) as writer:
        writer.write({"gen": (DOC for _ in range(3)), "pairs": Pairs(iter(DOC.items()))})
    assert LazyReader(out.getvalue()).to_obj() == {"gen": [EXPECTED] * 3, "pairs": EXPECTED}

    msglc.combine(tmp_path / "c.mlc", [FileInfo(None, "doc", obj=DOC)], **options)
    msglc.append(tmp_path / "c.mlc", [FileInfo(None, "more", obj=[Color.RED])], **options)
    assert LazyReader(tmp_path / "c.mlc").to_obj() == {"doc": EXPECTED, "more": ["red"]}


def test_enc_hook_through_configure():
    from msglc.config import configure, current

    before = current().enc_hook
    try:
        configure(enc_hook=as_published)
        assert LazyReader(msglc.dumps([Color.RED, uuid.UUID(int=2)])).read() == [
            "red",
            "00000000-0000-0000-0000-000000000002",
        ]
        with pytest.raises(TypeError, match="enc_hook="):
            msglc.dumps([Color.RED], enc_hook=None)  # per call, None turns it off again
    finally:
        configure(enc_hook=before)


def test_enc_hook_sees_only_refused_values():
    seen = []

    def hook(value):
        seen.append(value)
        return str(value)

    doc = {"ints": list(range(1000)), "aware": WHEN, "nested": [[1.5, 2.5]] * 50, "odd": uuid.UUID(int=3)}
    assert LazyReader(msglc.dumps(doc, enc_hook=hook))["odd"] == "00000000-0000-0000-0000-000000000003"
    assert seen == [uuid.UUID(int=3)]
    data = msglc.dumps({"x": [1, 2]}, enc_hook=hook)
    assert seen == [uuid.UUID(int=3)] and data == msglc.dumps({"x": [1, 2]})  # plain data: same bytes


def test_enc_hook_results_are_converted_and_checked():
    def twice(value):  # a dataclass becomes a dict holding a UUID, converted in turn
        return as_published(value)

    assert LazyReader(msglc.dumps([Point(1, uuid.UUID(int=5))], enc_hook=twice)).read() == [
        {"x": 1, "tag": "00000000-0000-0000-0000-000000000005"}
    ]
    with pytest.raises(TypeError, match="returned a UUID for a UUID"):
        msglc.dumps([uuid.UUID(int=1)], enc_hook=lambda v: v)
    with pytest.raises(TypeError, match="returned a datetime for a datetime"):  # still naive
        msglc.dumps([datetime.datetime(2026, 1, 1)], enc_hook=lambda d: d.replace(microsecond=1))
    with pytest.raises(ValueError, match="same key"):
        msglc.dumps({uuid.UUID(int=1): 1, uuid.UUID(int=2): 2}, enc_hook=lambda v: "one")
    with pytest.raises(TypeError, match="no conversion for complex"):  # the hook's own error
        msglc.dumps([complex(1, 2)], enc_hook=as_published)
    with pytest.raises(TypeError, match="enc_hook must be a function"):
        msglc.dumps([1], enc_hook="str")
    assert LazyReader(
        msglc.dumps([datetime.datetime(2026, 1, 1)], enc_hook=lambda d: d.replace(tzinfo=UTC))
    ).read() == [datetime.datetime(2026, 1, 1, tzinfo=UTC)]
