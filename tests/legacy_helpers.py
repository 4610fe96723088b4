"""Archives in the published msglc's format (docs/legacy-format.md) built byte by byte, for
tests that need shapes or sizes the checked-in fixtures do not have."""

from __future__ import annotations

from typing import Any

import msgpack

MAGIC = b"msglc-2024".rjust(30, b"\0")


def legacy_archive(data: bytes, toc: Any = None, raw_toc: bytes | None = None) -> bytes:
    """Magic, the two NUL-padded msgpack header fields, ``data``, then ``toc`` packed (or ``raw_toc``)."""
    toc_bytes: bytes = msgpack.packb(toc, use_bin_type=True) if raw_toc is None else raw_toc
    field: list[bytes] = [msgpack.packb(n).rjust(10, b"\0") for n in (len(data), len(toc_bytes))]
    return MAGIC + field[0] + field[1] + data + toc_bytes


def indexed(value: list[Any] | dict[Any, Any]) -> bytes:
    """An archive of ``value`` whose root has an entry per item (each item stored whole), as
    the published writer makes for a list or dict of items larger than its threshold."""
    packer = msgpack.Packer(use_bin_type=True)
    data = bytearray(
        packer.pack_array_header(len(value)) if isinstance(value, list) else packer.pack_map_header(len(value))
    )
    kids: Any = [] if isinstance(value, list) else {}
    for key, item in enumerate(value) if isinstance(value, list) else value.items():
        if isinstance(value, dict):
            data += packer.pack(key)
        start = len(data)
        data += packer.pack(item)
        if isinstance(kids, list):
            kids.append({"p": [start, len(data)]})
        else:
            kids[key] = {"p": [start, len(data)]}
    return legacy_archive(bytes(data), {"p": [0, len(data)], "t": kids})
