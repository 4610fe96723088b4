"""What the target sections share: the result row, the thresholds, the test matrix, the
machine description, and the helpers that time writes and re-run this module in a child."""

from __future__ import annotations

import contextlib
import os
import platform
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import msgspec

import msglc

THRESHOLDS = (4096, 65536, 1 << 20)


@dataclass
class Row:
    figure: str
    measured: float
    target: str
    ok: bool
    detail: str = ""


def fresh(path: Path) -> Path:
    """Remove ``path`` so the next write creates it: replacing an existing file costs extra on
    some file systems (ext4 starts writeback on rename-over), for msglc and the floor alike."""
    path.unlink(missing_ok=True)
    return path


def random_matrix(n: int) -> list[list[float]]:
    rng = random.Random(42)
    return [[rng.random() for _ in range(n)] for _ in range(n)]


def run_child(*args: str) -> str:
    """The output of ``python -m benchmark.targets`` with ``args`` (a hidden flag), run in a
    fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "benchmark.targets", *args], check=True, capture_output=True, text=True
    ).stdout


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = [f"msglc {msglc.__version__}", f"msgspec {msgspec.__version__}"]
    for name in ("numpy", "h5py"):
        with contextlib.suppress(ImportError):
            versions.append(f"{name} {__import__(name).__version__}")
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {', '.join(versions)}"
