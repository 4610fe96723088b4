"""The published msglc's ``msglc.writer`` import path, so that ``from msglc.writer import
LazyWriter`` runs unchanged; the writer lives in ``msglc.write``."""

from msglc.write.streaming import LazyWriter

__all__ = ["LazyWriter"]
