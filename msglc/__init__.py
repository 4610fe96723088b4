"""msglc: msgpack archives with an embedded table of contents, read lazily.

``dump(path, obj)`` writes plain msgpack plus a TOC; ``LazyReader(path)["a/b/3"]`` reads just
that value. See README.md and docs/format.md.
"""

from msglc.api import combine, concat, dump, dumps
from msglc.config import Config, configure
from msglc.edit.append import append
from msglc.edit.inputs import FileInfo
from msglc.errors import (
    ArchiveChangedError,
    CorruptedError,
    MsglcError,
    NotAnArchiveError,
    TruncatedError,
    UnsupportedVersionError,
)
from msglc.read.archive import Location
from msglc.read.array import LazyArray
from msglc.read.inspect import ArchiveInfo, FrameInfo, NodeInfo
from msglc.read.lazy_reader import LazyReader, async_to_obj, to_obj
from msglc.read.stats import LazyStats
from msglc.read.views import LazyDict, LazyList
from msglc.write.streaming import LazyWriter
from msglc.write.unsized import Pairs

__all__ = [
    "ArchiveChangedError",
    "ArchiveInfo",
    "Config",
    "CorruptedError",
    "FileInfo",
    "FrameInfo",
    "LazyArray",
    "LazyDict",
    "LazyList",
    "LazyReader",
    "LazyWriter",
    "Location",
    "LazyStats",
    "MsglcError",
    "NodeInfo",
    "NotAnArchiveError",
    "Pairs",
    "TruncatedError",
    "UnsupportedVersionError",
    "append",
    "async_to_obj",
    "combine",
    "concat",
    "configure",
    "dump",
    "dumps",
    "to_obj",
]
__version__ = "0.1.0"  # the one place the version is stated (pyproject.toml reads it)
