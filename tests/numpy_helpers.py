"""What the NumPy tests (format, read, write) share: comparing arrays exactly."""

import numpy as np


def same(a: object, b: object) -> None:
    """``a`` (an array or a NumPy scalar) and the array ``b`` have the same dtype, shape and
    bytes (NaN payloads included)."""
    assert isinstance(a, (np.ndarray, np.generic))
    assert isinstance(b, np.ndarray)
    assert (a.dtype, a.shape) == (b.dtype, b.shape)
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
