"""What the NumPy tests (format, read, write) share: comparing arrays exactly."""

import numpy as np


def same(a, b) -> None:
    """Same dtype, shape and bytes (NaN payloads included)."""
    assert isinstance(b, np.ndarray)
    assert (a.dtype, a.shape) == (b.dtype, b.shape)
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
