"""Optional dependencies, imported when first needed, with an error that says what to install:
the packages themselves, by their names on PyPI (an extra of this project named by its name
would resolve on PyPI to the unrelated older package called msglc, not to this one)."""

from __future__ import annotations

import sys
from typing import Any


def zstandard() -> Any:
    """The zstd binding (the ``zstd`` extra), for writing or reading compressed archives."""
    try:
        import zstandard as module
    except ImportError:
        raise ImportError("compressed archives need the zstandard package: pip install zstandard") from None
    return module


def dask_module(name: str) -> Any:
    """``dask``, ``dask.array`` or ``dask.bag`` (the ``dask`` extra), for ``msglc.dask``."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(f"msglc.dask needs {name}: pip install 'dask[array,bag]' distributed numpy") from None


def numpy() -> Any:
    """NumPy (the ``numpy`` extra)."""
    try:
        import numpy as module
    except ImportError:
        raise ImportError("this needs NumPy: pip install numpy") from None
    return module


def loaded_numpy() -> Any:
    """NumPy if something has imported it, else None. A value can be a NumPy array or scalar
    only once NumPy is loaded, so the checks for one need not import it."""
    return sys.modules.get("numpy")


def is_ndarray(x: Any) -> bool:
    """Whether ``x`` is a NumPy array (False without importing NumPy when it is not loaded)."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)
