"""Archives of the published msglc (``read.legacy``) written as msglc archives: ``dump(target,
reader)``, ``msglc convert``, and ``combine`` of such inputs."""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any, cast

from msglc.read.lazy_reader import LazyDict, LazyReader, to_obj
from msglc.read.part import LazyPart, archive_of, rebound
from msglc.write.streaming import LazyWriter
from msglc.write.unsized import Pairs

STREAM_ABOVE = 1 << 24  # a part of a published-msglc archive larger than this is written item by item


def convert_legacy(target: Any, source: LazyReader | LazyPart, options: dict[str, Any]) -> None:
    """An archive of the published msglc (or a part of one) written as an msglc archive: parts
    of up to ``STREAM_ABOVE`` bytes decoded whole, larger ones streamed item by item through a
    ``LazyWriter``, so memory stays bounded whatever the archive's size."""
    root = source.read() if isinstance(source, LazyReader) else source
    with LazyWriter(target, **options) as writer:
        writer.write(_streamed(root))


def converted(source: Any, options: dict[str, Any]) -> bytes:
    """The archive of the published msglc at ``source`` (a path or a reader) as msglc bytes:
    ``combine`` copies them like any other input's."""
    out = io.BytesIO()
    if isinstance(source, LazyReader):
        convert_legacy(out, source, options)
    else:
        with LazyReader(source, cached=False) as reader:
            convert_legacy(out, reader, options)
    return out.getvalue()


def _streamed(value: Any) -> Any:
    if not isinstance(value, LazyPart) or value.location().size <= STREAM_ABOVE:
        return to_obj(value)
    value = rebound(value, archive_of(value))  # without a cache: a cached reader's would keep every item
    if isinstance(value, LazyDict):
        return Pairs((key, _streamed(item)) for key, item in value.items())
    items = cast(Iterable[Any], value)  # a LazyList: the one other kind a published-msglc archive has
    return (_streamed(item) for item in items)
