"""What the harness's parts share: the outcome classes, the stages, and values decoded as a
reader decodes them."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import msgspec

from msglc.format.numpy_ext import ext_hook
from msglc.format.walk import deep_decode

BUG_CLASSES = (
    "undocumented",
    "hang",
    "memory",
    "worker-died",
    "wrong-verify-passes",
    "wrong-outside-data",
    "undetected-damage",
    "valid-fails",
    "verify-passes-unreadable",
    "read-outside-file",
    "bad-copy",
)
INFO_CLASSES = ("ok", "error", "changed-in-data", "lookup-crafted-toc", "span-crafted-toc")
KIND_WEIGHTS = {
    "bitflip": 20,
    "overwrite": 12,
    "insert": 5,
    "delete": 5,
    "truncate": 4,
    "splice": 4,
    "header": 8,
    "toc": 22,
    "index": 5,
    "datacrc": 12,
    "datashift": 4,
    "value": 8,
    "zindex": 5,
    "zpage": 6,
    "zdict": 3,
    "zraw": 4,
    "ztoc": 8,
    "zhash": 4,
    "zlayout": 3,
}
STAGES = ("open", "inspect", "walk", "iter", "paths", "many", "stream", "root_to_obj", "to_obj", "verify", "copy")
LOOKUP_STAGES = ("walk", "iter", "paths", "many", "stream")  # where a changed data byte may imply a lookup error
SLOW_SECONDS = 2.0
_decoder = msgspec.msgpack.Decoder(ext_hook=ext_hook)
MISSING = object()


DEEP_LIMIT = 20_000  # the recursion limit the harness compares deep values with (never the readers)


@contextlib.contextmanager
def deep_limit() -> Any:
    """Python's recursion limit raised, for the harness's own recursive comparisons of
    values nested deeper than the default limit allows."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, DEEP_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def decode_data(data: bytes | memoryview) -> Any:
    """A data section decoded as the reader decodes it, at any depth."""
    try:
        return _decoder.decode(data)
    except RecursionError:
        return deep_decode(data)


class CaseTimeout(BaseException):
    """Raised by the soft timer: a BaseException, so no ``except Exception`` takes it."""
