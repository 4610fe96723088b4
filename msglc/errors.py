"""The exceptions msglc raises for files it cannot trust.

Every error about a file's content derives from ``MsglcError``, itself a ``ValueError``, so
callers that already guard decoding with ``except ValueError`` keep working.
"""

from __future__ import annotations


class MsglcError(ValueError):
    """Base class: the bytes given are not a readable msglc archive."""


class NotAnArchiveError(MsglcError):
    """The file does not start or end with the msglc magic bytes."""


class UnsupportedVersionError(MsglcError):
    """The archive was written by a format version this reader cannot read."""


class TruncatedError(MsglcError):
    """The file is shorter than its header, trailer or table of contents say."""


class CorruptedError(MsglcError):
    """A checksum does not match, or a table entry points outside where it must."""


class ArchiveChangedError(MsglcError):
    """The file or object changed after the reader opened it (an append, a rewrite): the
    reader's view of it no longer holds. Open a new reader."""
