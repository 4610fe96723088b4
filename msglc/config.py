"""Global defaults for writing and reading, overridable per call with the same names.

``configure()`` also takes every option name of the published msglc (PyPI 261017), so code
written for it runs unchanged: those that mean something here keep msglc's meaning, the others
are checked as it checks them, kept (``config`` shows them) and have no effect
(docs/migrating.md says why, one by one). ``config`` and the GC counter functions are its names
too."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any


@dataclass(frozen=True)
class Config:
    """Options that shape an archive.

    ``small_obj_optimization_threshold``: containers whose encoding is shorter than this many
    bytes (and empty ones) are stored without a TOC entry and read back whole; longer lists are
    cut into blocks of about this size. Smaller means finer random access and a larger TOC; 0
    and 1 give every non-empty container an entry (the published msglc's meaning). Unless one
    is given, a compressed archive's is ``COMPRESSED_THRESHOLD`` (16 KB).
    ``disable_gc``: pause the cyclic garbage collector while encoding or decoding many objects
    (it otherwise rescans the growing heap again and again).
    ``durable``: ``dump`` to a path flushes the file and the rename to disk (``fsync``) before
    returning, so the archive survives a power loss too, not only a crash of the process.
    ``numpy_encoder``: store NumPy arrays as typed binary (read back as arrays, lazily when
    large); with False they are stored as nested lists and read back as lists.
    ``compression``: None (plain msgpack data) or ``"zstd"`` (independent zstd frames of about
    the threshold each; needs ``zstandard`` (the ``zstd`` extra); every writer: ``dump``, ``dumps``, ``LazyWriter``,
    ``combine``; ``append`` keeps the archive's own; copies of an archive, ``combine`` of
    compressed archives only, default to their source's when this is None);
    ``compression_level``: the zstd level, 1 to 22.
    ``order``: None (dicts keep their insertion order) or ``"sorted"`` (msgspec's name): ``dump``
    and ``dumps`` store every dict with its keys sorted (ints before strs), and index a big
    dict of str keys or of int keys by the first key of each block (node type 9, in compressed
    archives): a lookup table that needs no insertion order then takes almost no index.
    ``read_threads``: threads that decompress the frames of a compressed archive in bulk reads
    (``np.asarray`` of a large array, ``to_obj`` and ``verify`` of a large part); zstd releases
    the GIL, so up to one per core pays. An int >= 1; default ``min(4, os.cpu_count())``.
    ``tiles``: how a compressed archive stores large NumPy arrays. True: arrays of 2 to 16
    axes and at least 1 MiB are stored tile by tile, about 128 KB a tile (format 2.1), so a
    block of the array decompresses only the tiles it touches; False: in C order, as a plain
    archive stores them (any msglc 2.x reads them); a tuple of ints: that tile shape for every
    array with as many axes, of any size (each size capped at the axis's length), the others
    as with True. Plain archives never tile (their format has no tiles).
    ``enc_hook``: None, or a function called with each value msglc does not store (a UUID,
    Decimal, dataclass, plain ``Enum`` member, date, naive datetime, ...) that returns a value
    it does, e.g. ``str``; without it such values are refused (``TypeError``).
    """

    small_obj_optimization_threshold: int = 8192
    disable_gc: bool = True
    durable: bool = False
    numpy_encoder: bool = True
    compression: str | None = None
    compression_level: int = 5  # frames need more search than a whole file to come out as small
    order: str | None = None
    read_threads: int = field(default_factory=lambda: min(4, os.cpu_count() or 1))
    enc_hook: Callable[[Any], Any] | None = None
    tiles: bool | tuple[int, ...] = True


_NAMES = frozenset(f.name for f in fields(Config))
_current = Config()
# The threshold of a compressed archive when none is given (per call or by configure()): its
# frames hold 64 KB anyway, so a finer TOC costs bytes (8 KB: up to 9% more on real documents),
# but a coarser one decodes values up to its size whole on every read (64 KB: reads of real
# documents 1.5-3x slower than at 16 KB, for 0-4% less; docs/compression.md).
COMPRESSED_THRESHOLD = 16384
_threshold_given = False  # configure() was given small_obj_optimization_threshold


def _int_above_0(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


def _flag(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def _fraction(name: str, value: Any) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not 0 <= value <= 1:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


def _magic(name: str, value: Any) -> None:
    if not isinstance(value, bytes):
        raise TypeError(f"{name} must be bytes, got {value!r}")
    if not 0 < len(value) <= 30:
        raise ValueError(f"{name} must be 1 to 30 bytes, got {len(value)}")


def _callable(name: str, value: Any) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be a callable or None, got {value!r}")


def _no_fs(name: str, value: Any) -> None:
    if value is not None:
        raise ValueError(
            "configure(fs=...) is not supported: msglc has no default file system. Pass fs= to each call "
            "(dump, LazyReader, LazyWriter, combine, FileInfo) or name the archive by a URL such as 's3://bucket/key'"
        )


# The published msglc's options that have no effect here: (default, check). Its I/O buffer
# and chunk sizes (msglc reads with pread and copies in chunks of its own), its reading
# strategy (msglc decodes a container in one call), its TOC shape (trivial_size: msglc's
# TOC is laid out differently), its repr choice (msglc's repr never reads), its Rust
# back-end's switches, and its magic (a different format: changing it would make archives
# nothing reads). ``fs`` is refused but for None: ignoring it would write elsewhere.
_INERT: dict[str, tuple[Any, Callable[[str, Any], None]]] = {
    "write_buffer_size": (2**23, _int_above_0),
    "read_buffer_size": (2**16, _int_above_0),
    "copy_chunk_size": (2**24, _int_above_0),
    "fast_loading": (True, _flag),
    "fast_loading_threshold": (0.3, _fraction),
    "trivial_size": (20, _int_above_0),
    "simple_repr": (True, _flag),
    "numpy_fast_int_pack": (False, _flag),
    "enable_custom_container": (True, _flag),
    "has_set": (True, _flag),
    "has_tuple": (True, _flag),
    "has_numpy": (True, _flag),
    "magic": (b"msglc-2024", _magic),
    "compatibility_check": (None, _callable),
    "fs": (None, _no_fs),
}
_inert: dict[str, Any] = {name: default for name, (default, _) in _INERT.items()}
# published names whose None means "leave unchanged" (as its configure() takes them)
_NONE_KEEPS = (frozenset(_INERT) - {"fs", "compatibility_check"}) | {
    "small_obj_optimization_threshold",
    "disable_gc",
    "numpy_encoder",
}


def _check(options: dict[str, Any], known: frozenset[str] = _NAMES) -> None:
    unknown = set(options) - known
    if unknown:
        raise TypeError(f"unknown msglc option(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    threshold = options.get("small_obj_optimization_threshold")
    if threshold is not None and (
        not isinstance(threshold, int) or isinstance(threshold, bool) or not 0 <= threshold <= 2**31
    ):
        raise ValueError(f"small_obj_optimization_threshold must be an int in [0, 2**31], got {threshold!r}")
    if "order" in options and options["order"] not in (None, "sorted"):
        raise ValueError(f"order must be None or 'sorted', got {options['order']!r}")
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
    if "tiles" in options:
        tiles = options["tiles"]
        if not isinstance(tiles, bool) and not (isinstance(tiles, tuple) and all(type(t) is int for t in tiles)):
            raise TypeError(f"tiles must be True, False or a tuple of positive ints (a tile shape), got {tiles!r}")
        if isinstance(tiles, tuple) and any(t < 1 for t in tiles):
            raise ValueError(f"a tile shape's sizes are at least 1, got {tiles!r}")
        if isinstance(tiles, tuple) and not 1 <= len(tiles) <= 16:
            raise ValueError(f"a tile shape has 1 to 16 sizes (a tiled array has at most 16 axes), got {tiles!r}")
    for name in ("disable_gc", "durable", "numpy_encoder"):
        if name in options and not isinstance(options[name], bool):
            raise TypeError(f"{name} must be True or False, got {options[name]!r}")


def configure(**options: Any) -> Config:
    """Set global defaults (see ``Config``); returns the new configuration. The published
    msglc's other option names are accepted too and have no effect (docs/migrating.md); None
    for one of its names leaves that option as it is, as there."""
    global _current
    options = {k: v for k, v in options.items() if v is not None or k not in _NONE_KEEPS}
    inert = {k: options.pop(k) for k in list(options) if k in _INERT}
    _check(options, _NAMES | _INERT.keys())
    for name, value in inert.items():
        _INERT[name][1](name, value)
    global _threshold_given
    _current = replace(_current, **options)
    _inert.update(inert)
    _threshold_given = _threshold_given or "small_obj_optimization_threshold" in options
    return _current


# the published msglc's codec and back-end arguments
CODEC_ARGS = frozenset(("packer", "unpacker", "backend"))


def check_codec_arg(name: str, value: Any) -> None:
    """Refuse a codec plug-in or back-end of the published msglc (``packer=``, ``unpacker=``,
    ``backend=``) other than its default: msglc has neither, and ignoring one would write or
    read another format than the caller asked for."""
    if value is None or (name == "backend" and isinstance(value, str) and value == "python"):
        return
    if name == "backend":
        raise ValueError(
            f"backend={value!r}: msglc has one writer (msgspec with a C accelerator), not the published msglc's "
            "Rust back-end; drop backend= (or pass 'python')"
        )
    raise ValueError(
        f"{name}={value!r}: msglc archives are always msgpack; the codec plug-ins of the published msglc "
        "(CBOR, ormsgpack, custom codecs) are not supported. Drop the argument: msglc writes and reads msgpack "
        "itself (for CBOR data, store the encoded bytes, or convert the values before dump)"
    )


def refuse_order(options: dict[str, Any], writer: str) -> None:
    """``order="sorted"`` asked of a writer that keeps dicts in the order it gets them
    (``LazyWriter``, ``combine``, ``concat``, ``append``): refused rather than ignored."""
    if options.get("order") == "sorted":
        raise ValueError(
            f"order='sorted' is an option of dump() and dumps(): {writer} keeps the order it is given; "
            "sort the dicts first, or dump the result again with order='sorted'"
        )


def current(**overrides: Any) -> Config:
    """The global configuration with per-call ``overrides`` applied (the published msglc's
    ``packer``/``unpacker``/``backend`` arguments with their default values are dropped)."""
    if not overrides:
        return _current if _current.compression is None else _compressed_default(_current, overrides)
    if not CODEC_ARGS.isdisjoint(overrides):
        for name in CODEC_ARGS & overrides.keys():
            check_codec_arg(name, overrides[name])
        overrides = {k: v for k, v in overrides.items() if k not in CODEC_ARGS}
    _check(overrides)
    cfg = replace(_current, **overrides)
    return cfg if cfg.compression is None else _compressed_default(cfg, overrides)


def _compressed_default(cfg: Config, overrides: dict[str, Any]) -> Config:
    """``cfg`` of a compressed archive, with ``COMPRESSED_THRESHOLD`` unless a threshold was
    given (per call, or configured)."""
    if _threshold_given or "small_obj_optimization_threshold" in overrides:
        return cfg
    return replace(cfg, small_obj_optimization_threshold=COMPRESSED_THRESHOLD)


class Settings:
    """``msglc.config.config``: the current settings by attribute, the published msglc's
    options included (``config.small_obj_optimization_threshold``); setting one is
    ``configure(name=value)``, checked the same way."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name in _NAMES:
            return getattr(_current, name)
        if name in _inert:
            return _inert[name]
        raise AttributeError(f"no msglc option {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        configure(**{name: value})

    def __dir__(self) -> list[str]:
        return sorted(_NAMES | _inert.keys())

    def __repr__(self) -> str:
        return f"<msglc settings {_current!r}>"


config = Settings()


_gc_count = 0
_gc_lock = threading.Lock()


def increment_gc_counter() -> int:
    """The published msglc's GC counter: with ``disable_gc`` on, count one more user of the
    pause, the first pausing the cyclic GC; returns the count. msglc's own readers and
    writers do not use it (they pause the GC only while they decode or encode in bulk)."""
    global _gc_count
    with _gc_lock:
        if _current.disable_gc:
            if _gc_count == 0:
                gc.disable()
            _gc_count += 1
        return _gc_count


def decrement_gc_counter() -> int:
    """One user of the pause fewer; the last one re-enables the GC and collects. Returns the
    count. A decrement with none counted raises ``RuntimeError`` (when ``disable_gc`` is on;
    otherwise it does nothing), and counted ones are undone even if ``disable_gc`` was turned
    off meanwhile, so balanced calls always leave the GC as they found it."""
    global _gc_count
    with _gc_lock:
        if _gc_count == 0:
            if _current.disable_gc:
                raise RuntimeError("decrement_gc_counter() called more often than increment_gc_counter()")
            return 0
        _gc_count -= 1
        count = _gc_count
        if count == 0:
            gc.enable()
    if count == 0:
        gc.collect()
    return count
