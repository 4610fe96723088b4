"""Optional dependencies, imported when first needed, with an error that names the extra."""

from __future__ import annotations

from typing import Any


def zstandard() -> Any:
    """The zstd binding (``msglc[zstd]``), for writing or reading compressed archives."""
    try:
        import zstandard as module
    except ImportError:
        raise ImportError("compressed archives need the zstandard package: pip install 'msglc[zstd]'") from None
    return module


def dask_module(name: str) -> Any:
    """``dask``, ``dask.array`` or ``dask.bag`` (``msglc[dask]``), for ``msglc.dask``."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(f"msglc.dask needs {name}: pip install 'msglc[dask]'") from None


def numpy() -> Any:
    """NumPy (``msglc[numpy]``)."""
    try:
        import numpy as module
    except ImportError:
        raise ImportError("this needs NumPy: pip install 'msglc[numpy]'") from None
    return module
