"""Global defaults for writing and reading, overridable per call with the same names."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any


@dataclass(frozen=True)
class Config:
    """Options that shape an archive.

    ``small_obj_optimization_threshold``: containers whose encoding is shorter than this many
    bytes (and empty ones) are stored without a TOC entry and read back whole; longer lists are
    cut into blocks of about this size. Smaller means finer random access and a larger TOC; 0
    and 1 give every non-empty container an entry (the published msglc's meaning).
    ``disable_gc``: pause the cyclic garbage collector while encoding or decoding many objects
    (it otherwise rescans the growing heap again and again).
    ``durable``: ``dump`` to a path flushes the file and the rename to disk (``fsync``) before
    returning, so the archive survives a power loss too, not only a crash of the process.
    ``numpy_encoder``: store NumPy arrays as typed binary (read back as arrays, lazily when
    large); with False they are stored as nested lists and read back as lists.
    ``compression``: None (plain msgpack data) or ``"zstd"`` (independent zstd frames of about
    the threshold each; needs ``msglc[zstd]``; every writer: ``dump``, ``dumps``, ``LazyWriter``,
    ``combine``; ``append`` keeps the archive's own; copies of an archive, ``combine`` of
    compressed archives only, default to their source's when this is None);
    ``compression_level``: the zstd level, 1 to 22.
    ``read_threads``: threads that decompress the frames of a compressed archive in bulk reads
    (``np.asarray`` of a large array, ``to_obj`` and ``verify`` of a large part); zstd releases
    the GIL, so up to one per core pays. An int >= 1; default ``min(4, os.cpu_count())``.
    ``enc_hook``: None, or a function called with each value msglc does not store (a UUID,
    Decimal, dataclass, plain ``Enum`` member, date, naive datetime, ...) that returns a value
    it does, e.g. ``str``; without it such values are refused (``TypeError``).
    """

    small_obj_optimization_threshold: int = 8192
    disable_gc: bool = True
    durable: bool = False
    numpy_encoder: bool = True
    compression: str | None = None
    compression_level: int = 3
    read_threads: int = field(default_factory=lambda: min(4, os.cpu_count() or 1))
    enc_hook: Callable[[Any], Any] | None = None


_NAMES = frozenset(f.name for f in fields(Config))
_current = Config()


def _check(options: dict[str, Any]) -> None:
    unknown = set(options) - _NAMES
    if unknown:
        raise TypeError(f"unknown msglc option(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(_NAMES))}")
    threshold = options.get("small_obj_optimization_threshold")
    if threshold is not None and (
        not isinstance(threshold, int) or isinstance(threshold, bool) or not 0 <= threshold <= 2**31
    ):
        raise ValueError(f"small_obj_optimization_threshold must be an int in [0, 2**31], got {threshold!r}")
    if "compression" in options and options["compression"] not in (None, "zstd"):
        raise ValueError(f"compression must be None or 'zstd', got {options['compression']!r}")
    level = options.get("compression_level")
    if level is not None and (not isinstance(level, int) or isinstance(level, bool) or not 1 <= level <= 22):
        raise ValueError(f"compression_level must be an int in [1, 22], got {level!r}")
    if "read_threads" in options:
        threads = options["read_threads"]
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
            raise ValueError(f"read_threads must be an int >= 1, got {threads!r}")
    if options.get("enc_hook") is not None and not callable(options["enc_hook"]):
        raise TypeError(f"enc_hook must be a function or None, got {options['enc_hook']!r}")
    for name in ("disable_gc", "durable", "numpy_encoder"):
        if name in options and not isinstance(options[name], bool):
            raise TypeError(f"{name} must be True or False, got {options[name]!r}")


def configure(**options: Any) -> Config:
    """Set global defaults (see ``Config``); returns the new configuration."""
    global _current
    _check(options)
    _current = replace(_current, **options)
    return _current


def current(**overrides: Any) -> Config:
    """The global configuration with per-call ``overrides`` applied."""
    if not overrides:
        return _current
    _check(overrides)
    return replace(_current, **overrides)
