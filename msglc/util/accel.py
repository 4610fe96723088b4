"""The optional C accelerator ``msglc._speedups``: every user checks ``accel.speedups`` at
call time, so one switch (``MSGLC_PURE_PYTHON=1``, or a test setting it to None) selects
the pure-Python paths, which write and read the same bytes."""

from __future__ import annotations

import os
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("MSGLC_PURE_PYTHON", "").lower() in ("1", "true", "yes"):
        return None
    try:
        from msglc import _speedups
    except ImportError:  # pragma: no cover - depends on the build
        return None
    return _speedups


speedups: ModuleType | None = _load()
