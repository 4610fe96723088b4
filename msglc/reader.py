"""The published msglc's ``msglc.reader`` import path, so that ``from msglc.reader import
LazyReader, LazyStats, async_to_obj`` runs unchanged; the names live in ``msglc.read``."""

from msglc.read.lazy_reader import LazyReader, async_to_obj, to_obj
from msglc.read.stats import LazyStats
from msglc.read.views import LazyDict, LazyList

__all__ = ["LazyDict", "LazyList", "LazyReader", "LazyStats", "async_to_obj", "to_obj"]
