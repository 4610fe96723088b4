"""The ``combine`` section: two archives combined, against copying the two files; then a small
run appended in place, against writing that run and against copying the whole archive."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import msglc

from ..timing import best_of
from .common import Row, fresh

if TYPE_CHECKING:
    import numpy as np


def combine_targets(mb: int, tmp: Path) -> list[Row]:
    """Two archives of ``mb`` MB each combined, against copying the two files."""
    import shutil

    import numpy as np

    rng = np.random.default_rng(11)
    parts = []
    for k in range(2):
        part = tmp / f"part{k}.mlc"
        msglc.dump(part, {"run": k, "field": rng.random(mb * (1 << 20) // 8)})
        parts.append(part)
    copy, out = tmp / "copy.bin", tmp / "combined.mlc"

    def copy_both() -> None:
        with open(copy, "wb") as dst:
            for part in parts:
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, dst)

    floor = best_of(copy_both, setup=lambda: fresh(copy))
    infos = [msglc.FileInfo(p, f"run{k}") for k, p in enumerate(parts)]
    ours = best_of(lambda: msglc.combine(out, infos), setup=lambda: fresh(out))
    with msglc.LazyReader(out) as reader:
        assert reader["run1/run"] == 1 and reader["run0/field"].shape == (mb * (1 << 20) // 8,)
    rows = [
        Row(
            f"combine two {mb} MB archives / shutil.copyfileobj of both",
            ours / floor,
            "<= 1.5",
            ours / floor <= 1.5,
            f"{ours:.3f}s vs {floor:.3f}s",
        )
    ]
    return rows + append_targets(out, tmp, floor, rng)


def append_targets(archive: Path, tmp: Path, rewrite: float, rng: np.random.Generator) -> list[Row]:
    """A 1 MB run appended to the combined archive, in place: against writing that run to a new
    file (copy and fsync: appending flushes too), and against ``rewrite``, the time to copy
    the whole archive (what appending cost when it wrote a new file)."""
    import shutil

    run, copy = tmp / "small.mlc", tmp / "small-copy.bin"
    msglc.dump(run, {"run": -1, "field": rng.random((1 << 20) // 8)})

    def copy_run() -> None:
        with open(run, "rb") as src, open(copy, "wb") as dst:
            shutil.copyfileobj(src, dst)
            dst.flush()
            os.fsync(dst.fileno())

    floor = best_of(copy_run, setup=lambda: fresh(copy))
    names = iter(range(10**6))
    size = archive.stat().st_size
    ours = best_of(lambda: msglc.append(archive, [msglc.FileInfo(run, f"extra{next(names)}")]), repeat=5)
    with msglc.LazyReader(archive) as reader:
        assert reader["extra5/run"] == -1 and len(reader) == 2 + 6
    return [
        Row(
            f"append a 1 MB run to the {size >> 20} MB archive / copy+fsync of the run",
            ours / floor,
            "<= 3",
            ours / floor <= 3,
            f"{ours * 1e3:.1f} ms vs {floor * 1e3:.1f} ms",
        ),
        Row(
            f"append a 1 MB run / copying the whole {size >> 20} MB archive",
            ours / rewrite,
            "(reported)",
            True,
            f"{ours * 1e3:.1f} ms vs {rewrite:.3f}s",
        ),
    ]
