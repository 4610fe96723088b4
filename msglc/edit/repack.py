"""``dump(target, reader_or_lazy_part)``: an archive written by copying encoded bytes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from msglc.config import current
from msglc.io.atomic import output
from msglc.read.extract import compacted
from msglc.read.node import LazyNode, standalone
from msglc.read.reader import LazyReader, archive_of
from msglc.write.dump import dump as dump_decoded


def repack(target: Any, source: LazyReader | LazyNode, options: dict[str, Any]) -> None:
    """Copy the encoded bytes when the threshold is the source's (for a part that ``dump``
    wrote, the result is what ``dump`` of the decoded value writes), else decode and write
    anew."""
    a = archive_of(source)
    cfg = current(**options)
    if cfg.small_obj_optimization_threshold != a.trailer.threshold or cfg.compression is not None:
        return dump_decoded(target, source.to_obj(), **options)
    parts: Iterator[bytes | memoryview] = compacted(a) if isinstance(source, LazyReader) else standalone(source)
    with output(target, cfg.durable) as f:
        for part in parts:
            f.write(part)
