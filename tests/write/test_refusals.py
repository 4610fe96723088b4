"""Bad input never leaves a damaged file: values msglc cannot store faithfully are refused,
naming their type and where they sit, before anything is written; options are checked."""

import datetime
import decimal
import enum
import os
import uuid
from dataclasses import dataclass

import msgspec
import pytest

import msglc


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
    cyclic: list[object] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="itself"):
        msglc.dumps(cyclic)


def test_options_are_checked():
    with pytest.raises(TypeError, match="unknown"):
        msglc.dumps([1], small_obj_optimization=10)
    with pytest.raises(ValueError):
        msglc.dumps([1], small_obj_optimization_threshold=-1)
    with pytest.raises(ValueError):
        msglc.dumps([1], small_obj_optimization_threshold=True)
    from msglc.config import configure as configure_from_module

    try:
        configure_from_module(small_obj_optimization_threshold=128)
        assert msglc.LazyReader(msglc.dumps(list(range(100)))).info().threshold == 128
    finally:
        msglc.configure(small_obj_optimization_threshold=8192)
