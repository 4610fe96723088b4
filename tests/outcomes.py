"""What a read gives, as plain comparable objects, and the same read with the C accelerator
and with the pure-Python path (tests of the C read paths)."""

from __future__ import annotations

import struct

import numpy as np

from msglc.read.part import LazyPart
from msglc.util import accel


def plain(v):
    """A value as plain objects, its floats as their bits (so that NaN and -0.0 compare)."""
    if isinstance(v, LazyPart):
        v = v.to_obj()
    if isinstance(v, float):
        return ("float", struct.pack(">d", v))
    if isinstance(v, tuple):
        return tuple(plain(x) for x in v)
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.tolist())
    if isinstance(v, np.generic):
        return ("numpy", v.dtype.str, v.item())
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def answer(f):
    """What ``f()`` gives: ("ok", value as plain objects) or (exception type, message)."""
    try:
        return ("ok", plain(f()))
    except Exception as e:  # the outcome compared, whatever it is
        return (type(e).__name__, str(e))


def both_modes(monkeypatch, run):
    """``run()`` with the C accelerator, then with the pure-Python path."""
    with_c = run()
    with monkeypatch.context() as m:
        m.setattr(accel, "speedups", None)
        pure = run()
    return with_c, pure
