"""The ``memory`` section: the peak memory of reading one value of a large archive, made
(``--make-big``) and read (``--read-one``) in fresh processes."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import msglc

from .common import Row


def memory_target(size_mb: int, tmp: Path) -> list[Row]:
    path = tmp / "big.mlc"
    subprocess.run([sys.executable, "-m", "benchmark.targets", "--make-big", str(path), str(size_mb)], check=True)
    out = subprocess.run(
        [sys.executable, "-m", "benchmark.targets", "--read-one", str(path)], check=True, capture_output=True, text=True
    ).stdout
    delta_mb = json.loads(out)["delta_mb"]
    gb = path.stat().st_size / 1e9
    return [
        Row(
            f"peak memory above baseline reading one value of a {gb:.2f} GB archive (MB)",
            delta_mb,
            "<= 100 MB",
            delta_mb <= 100,
        )
    ]


def make_big(path: str, size_mb: int) -> None:
    """``--make-big``: an archive of about ``size_mb`` MB: blobs, records and a float matrix."""
    rng = random.Random(3)
    blobs = {f"blob{i}": rng.randbytes(1 << 20) for i in range(size_mb * 3 // 4)}
    records = [{"id": i, "name": f"item {i}", "x": rng.random()} for i in range(size_mb * 6500)]
    msglc.dump(path, {"blobs": blobs, "records": records, "meta": {"size_mb": size_mb}})


def read_one(path: str) -> None:
    """``--read-one``: read one value of the archive; print the peak memory above baseline."""
    import resource

    def rss_mb() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux

    base = rss_mb()
    with msglc.LazyReader(path, cached=False) as reader:
        value = reader["records/123456/name"] if len(reader["records"]) > 123456 else reader["records/-1/name"]
        assert isinstance(value, str)
        assert reader["meta/size_mb"] > 0
    print(json.dumps({"delta_mb": rss_mb() - base}))
