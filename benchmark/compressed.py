"""What the compressed-archive benchmarks share (issue 16): the data (JSON-like records, a smooth
float64 field), the whole-file zstd floor, and the ``read_threads`` switch.

``read_threads`` (threads that decompress frames for bulk reads) is set through
``msglc.configure`` where this msglc has the option; an older msglc runs with its default, and
the run says so on stderr, so the same benchmark code measures both before and after it lands.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msglc

LEVEL = 3  # zstd level of the archives and of the whole-file floor


def have_zstd() -> bool:
    """Whether compressed archives can be written here (the ``msglc[zstd]`` extra)."""
    return importlib.util.find_spec("zstandard") is not None


def has_read_threads() -> bool:
    return "read_threads" in {f.name for f in dataclasses.fields(msglc.config.Config)}


_said: set[str] = set()


def note_once(text: str) -> None:
    if text not in _said:
        _said.add(text)
        print(f"note: {text}", file=sys.stderr, flush=True)


@contextmanager
def read_threads(n: int) -> Iterator[bool]:
    """``msglc.configure(read_threads=n)`` inside the block, restored after; yields whether the
    option exists (without it the block runs with msglc's default, said once on stderr)."""
    if not has_read_threads():
        note_once(f"this msglc has no read_threads option: bulk reads ran with its default, not {n} thread(s)")
        yield False
        return
    before = msglc.config.current().read_threads
    msglc.configure(read_threads=n)
    try:
        yield True
    finally:
        msglc.configure(read_threads=before)


def zstd_whole(data: bytes, level: int = LEVEL) -> bytes:
    """``data`` compressed as one zstd frame, as ``zstd -3 file`` would (the size floor)."""
    import zstandard

    return zstandard.ZstdCompressor(level=level).compress(data)


def records(n: int, seed: int = 11) -> list[dict[str, Any]]:
    """``n`` JSON-like records with repeated keys: id, name, score, a few tags, nested params."""
    rng = random.Random(seed)
    tags = [f"tag{k}" for k in range(40)]
    optimizers = ["adam", "sgd", "rmsprop", "adagrad"]
    return [
        {
            "id": i,
            "name": f"run{i}",
            "score": rng.random(),
            "tags": rng.sample(tags, rng.randrange(0, 5)),
            "params": {
                "lr": rng.choice((0.1, 0.03, 0.01, 0.003, 0.001)),
                "depth": rng.randrange(2, 13),
                "optimizer": rng.choice(optimizers),
                "dropout": round(rng.random() * 0.5, 2),
                "seed": rng.getrandbits(31),
            },
        }
        for i in range(n)
    ]


def smooth_field(rows: int, cols: int = 5000) -> Any:
    """A smooth float64 field: two superposed waves quantized to 2**-20 (about six decimals, as
    measured data stored as float64; unquantized, the mantissas' low bits are noise and zstd
    and gzip store most blocks raw, so "decompression" would be a copy). zstd -3 compresses it
    about 3.1x (4.8x byte-shuffled), gzip -4 about 2.7x. Built in bands of 1000 rows so that no
    temporary is larger than 40 MB; a row's values do not depend on ``rows``."""
    import numpy as np

    out = np.empty((rows, cols))
    y = np.arange(cols) * (8 * np.pi / cols)
    for start in range(0, rows, 1000):
        x = np.arange(start, min(rows, start + 1000)) * 0.002
        band = out[start : start + len(x)]
        np.multiply(np.sin(x)[:, None], np.cos(y)[None, :], out=band)
        band += 0.25 * np.cos(x[:, None] * 1.7 - y[None, :] * 0.9)
        band *= 2.0**20
        np.round(band, out=band)
        band /= 2.0**20
    return out


def row_chunks(shape: tuple[int, int], chunk_bytes: int) -> tuple[int, int]:
    """h5py chunks of whole rows holding about ``chunk_bytes`` of float64: the same bytes, in
    the same order, as a frame of that size of the array's C-order data."""
    return max(1, min(shape[0], round(chunk_bytes / (8 * shape[1])))), shape[1]
