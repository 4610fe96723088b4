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
