"""msglc: msgpack archives with an embedded table of contents, read lazily.

``dump(path, obj)`` writes plain msgpack plus a TOC; ``LazyReader(path)["a/b/3"]`` reads just
that value. See README.md and docs/format.md.
"""

from .append import append
from .batch import async_to_obj
from .combine import FileInfo, combine
from .config import Config, configure
from .errors import ArchiveChangedError, CorruptedError, MsglcError, NotAnArchiveError, TruncatedError, UnsupportedVersionError
from .lazy import LazyDict, LazyList
from .lazy_array import LazyArray
from .lazy_writer import LazyWriter
from .reader import LazyReader, LazyStats, to_obj
from .streamed import Pairs
from .writer import dump, dumps

__all__ = [
    "ArchiveChangedError",
    "Config",
    "CorruptedError",
    "FileInfo",
    "LazyArray",
    "LazyDict",
    "LazyList",
    "LazyReader",
    "LazyWriter",
    "LazyStats",
    "MsglcError",
    "NotAnArchiveError",
    "Pairs",
    "TruncatedError",
    "UnsupportedVersionError",
    "append",
    "async_to_obj",
    "combine",
    "configure",
    "dump",
    "dumps",
    "to_obj",
]
__version__ = "0.1.0"
