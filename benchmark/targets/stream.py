"""The ``stream`` section: small records written from a generator, each side in a fresh
process (``--stream`` and ``--stream-floor``) so that its peak memory is its own."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec

import msglc

from ..timing import best_of
from .common import Row, fresh, run_child


def _records(n: int) -> Iterator[dict[str, float]]:
    return ({"id": i, "x": i * 0.25} for i in range(n))


def stream_targets(n: int, tmp: Path) -> list[Row]:
    """n small records written from a generator, in a fresh process each (peak memory)."""
    ours = json.loads(run_child("--stream", str(tmp / "stream.mlc"), str(n)))
    floor = json.loads(run_child("--stream-floor", str(tmp / "floor.msgpack"), str(n)))
    alone = floor["generator_s"]
    with msglc.LazyReader(tmp / "stream.mlc") as reader:
        assert len(reader["records"]) == n and reader[f"records/{n - 1}/id"] == n - 1
    build = floor["build_s"] + floor["encode_write_s"]
    floor_s = alone + floor["encode_write_s"]  # the generator has to run either way
    return [
        Row(
            f"stream {n:,} records from a generator: peak memory above baseline (MB)",
            ours["delta_mb"],
            "<= 200 MB",
            ours["delta_mb"] <= 200,
        ),
        Row(
            "  the same, time / (the generator's own time + msgspec encode of that list prebuilt + write)",
            ours["seconds"] / floor_s,
            "<= 2",
            ours["seconds"] / floor_s <= 2,
            f"{ours['seconds']:.2f}s vs {alone:.2f}s + {floor['encode_write_s']:.2f}s",
        ),
        Row(
            "  the same, time / (building the list in memory + encode + write)",
            ours["seconds"] / build,
            "(reported)",
            True,
            f"{ours['seconds']:.2f}s vs {build:.2f}s",
        ),
    ]


def _rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


def stream(path: str, n: int) -> None:
    """``--stream``: write n records from a generator; print the time and the peak memory."""
    base = _rss_mb()
    t = time.perf_counter()
    with msglc.LazyWriter(path) as writer:
        writer.write({"meta": {"n": n}, "records": _records(n)})
    print(json.dumps({"seconds": time.perf_counter() - t, "delta_mb": _rss_mb() - base}))


def stream_floor(path: str, n: int) -> None:
    """``--stream-floor``: the generator alone, the list built, and msgspec's encode + write."""
    t = time.perf_counter()
    for _ in _records(n):
        pass
    generator_s = time.perf_counter() - t
    base = _rss_mb()
    t = time.perf_counter()
    records = list(_records(n))
    build_s = time.perf_counter() - t
    list_mb = _rss_mb() - base
    enc = msgspec.msgpack.Encoder()

    def encode_write() -> None:
        with open(path, "wb") as f:
            f.write(enc.encode({"meta": {"n": n}, "records": records}))

    encode_write_s = best_of(encode_write, setup=lambda: fresh(Path(path)), repeat=2)
    print(
        json.dumps(
            {"generator_s": generator_s, "build_s": build_s, "encode_write_s": encode_write_s, "list_mb": list_mb}
        )
    )
