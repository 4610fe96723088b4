"""The ``compression`` section (issue 16, targets 2-4): compressed archives (``compression="zstd"``)
against the whole file compressed by zstd as one frame, and against h5py gzip datasets.

- T2: the ``dict`` section's 2M-entry str -> str dict, and 300,000 JSON-like records (stored as
  ``{"records": [...]}``): size, open, one lookup or record with ``cached=False``, dump time.
- T3: 2000 x 2000 random floats as nested lists, threshold 64 KB: size and random element reads
  against h5py gzip with 64 KB chunks (64 x 128, level 4).
- T4: a smooth float64 field (``--array-mb``, 400 MB by default, 5000 columns), frames of 1 MB:
  ``np.asarray`` of the lazy array against reading the whole h5py gzip dataset (chunks of whole
  rows, about 1 MB), and with ``read_threads=2`` against 1.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

import msglc

from ..compressed import LEVEL, has_read_threads, read_threads, records, row_chunks, smooth_field, zstd_whole
from ..timing import best_of, interleaved, per_call
from .common import Row, fresh
from .dicts import str_dict

MATRIX_N = 2000
MATRIX_THRESHOLD = 65536
H5_MATRIX_CHUNKS = (64, 128)  # 64 KB of float64
H5_GZIP_LEVEL = 4  # h5py's default gzip level
ARRAY_THRESHOLD = 1 << 20  # frames of 1 MB (the frame size's ceiling)
ARRAY_COLS = 5000


def compression_targets(keys: int, lookups: int, n_records: int, reads: int, array_mb: int, tmp: Path) -> list[Row]:
    rows = dict_rows(keys, lookups, tmp)
    rows += record_rows(n_records, lookups, tmp)
    rows += matrix_rows(reads, tmp)
    rows += array_rows(array_mb, tmp)
    return rows


def _zstd_dump_rows(what: str, obj: Any, path: Path, tmp: Path, **options: Any) -> tuple[list[Row], float]:
    """Size and dump time of ``obj`` compressed, against msgspec encode + zstd -3 of the whole
    + write (one frame: the smallest file and the fastest compressed write, no random access).
    Returns the rows and the plain msgpack size."""
    enc = msgspec.msgpack.Encoder()
    whole = tmp / "whole.msgpack.zst"
    data = enc.encode(obj)
    plain_size, whole_size = len(data), len(zstd_whole(data))
    del data

    def floor_write() -> None:
        with open(whole, "wb") as f:
            f.write(zstd_whole(enc.encode(obj)))

    floor = best_of(floor_write, setup=lambda: fresh(whole))
    ours = best_of(
        lambda: msglc.dump(path, obj, compression="zstd", compression_level=LEVEL, **options),
        setup=lambda: fresh(path),
    )
    size = path.stat().st_size
    rows = [
        Row(
            f"{what}, zstd: archive size / whole plain msgpack by zstd -{LEVEL}",
            size / whole_size,
            "<= 1.25",
            size / whole_size <= 1.25,
            f"{size / 1e6:.2f} MB vs {whole_size / 1e6:.2f} MB (plain msgpack {plain_size / 1e6:.1f} MB)",
        ),
        Row(
            f"{what}, zstd: dump / (encode + zstd -{LEVEL} of the whole + write)",
            ours / floor,
            "<= 2",
            ours / floor <= 2,
            f"{ours:.3f}s vs {floor:.3f}s",
        ),
    ]
    return rows, plain_size


def _open_ms(path: Path, first: Callable[[msglc.LazyReader], object]) -> float:
    """Median time to open a fresh reader (``cached=False``; the file is in the page cache),
    each followed by one read outside the timer."""
    opens = []
    for _ in range(20):
        t0 = time.perf_counter()
        reader = msglc.LazyReader(path, cached=False)
        opens.append(time.perf_counter() - t0)
        first(reader)
        reader.close()
    return sorted(opens)[len(opens) // 2] * 1e3


def _open_row(what: str, ms: float) -> Row:
    return Row(f"{what}, zstd: open (ms, median)", ms, "<= 5 ms", ms <= 5)


def dict_rows(n: int, lookups: int, tmp: Path) -> list[Row]:
    d, rng = str_dict(n)
    path = tmp / "dict-zstd.mlc"
    what = f"{n:,}-key str dict"
    rows, _ = _zstd_dump_rows(what, d, path, tmp)
    keys = rng.sample(list(d), lookups)
    rows.append(_open_row(what, _open_ms(path, lambda r: r[keys[0]])))
    with msglc.LazyReader(path, cached=False) as reader:
        assert all(reader[k] == d[k] for k in keys[:200])
        later = per_call(reader.__getitem__, keys)
    rows.append(Row(f"{what}, zstd: lookup, cached=False (us each)", later * 1e6, "<= 30 us", later <= 30e-6))
    return rows


def record_rows(n: int, reads: int, tmp: Path) -> list[Row]:
    recs = records(n)
    path = tmp / "records-zstd.mlc"
    what = f"{n:,} JSON-like records"
    rows, _ = _zstd_dump_rows(what, {"records": recs}, path, tmp)
    rng = random.Random(12)
    indexes = [rng.randrange(n) for _ in range(reads)]
    rows.append(_open_row(what, _open_ms(path, lambda r: r["records"][indexes[0]])))
    with msglc.LazyReader(path, cached=False) as reader:
        assert all(reader["records"][i] == recs[i] for i in indexes[:200])
        one = per_call(lambda i: reader["records"][i], indexes)
    rows.append(
        Row(f"{what}, zstd: one record reader['records'][i], cached=False (us)", one * 1e6, "<= 60 us", one <= 60e-6)
    )
    return rows


def matrix_rows(reads: int, tmp: Path) -> list[Row]:
    import h5py
    import numpy as np

    array = np.random.default_rng(0).random((MATRIX_N, MATRIX_N))
    lists = array.tolist()
    path, h5path = tmp / "matrix-zstd.mlc", tmp / "matrix-gzip.h5"
    msglc.dump(
        path,
        {"m": lists},
        compression="zstd",
        compression_level=LEVEL,
        small_obj_optimization_threshold=MATRIX_THRESHOLD,
    )
    with h5py.File(h5path, "w") as f:
        f.create_dataset("m", data=array, chunks=H5_MATRIX_CHUNKS, compression="gzip", compression_opts=H5_GZIP_LEVEL)
    what = f"{MATRIX_N}x{MATRIX_N} random floats as lists, threshold {MATRIX_THRESHOLD >> 10} KB, zstd"
    size, h5size = path.stat().st_size, h5path.stat().st_size
    rows = [
        Row(
            f"{what}: archive size / h5py gzip ({H5_MATRIX_CHUNKS[0]}x{H5_MATRIX_CHUNKS[1]} chunks)",
            size / h5size,
            "<= 1",
            size <= h5size,
            f"{size / 1e6:.2f} MB vs {h5size / 1e6:.2f} MB (raw {array.nbytes / 1e6:.1f} MB)",
        )
    ]
    rng = random.Random(44)
    points = [(rng.randrange(MATRIX_N), rng.randrange(MATRIX_N)) for _ in range(reads)]
    with msglc.LazyReader(path, cached=False) as reader, h5py.File(h5path, "r") as f:
        ds = f["m"]
        assert all(reader["m"][i][j] == lists[i][j] == ds[i, j] for i, j in points[:50])
        ours = per_call(lambda p: reader["m"][p[0]][p[1]], points)
        h5 = per_call(lambda p: ds[p[0], p[1]], points[: max(200, reads // 5)])
    rows.append(
        Row(
            f"{what}: random read reader['m'][i][j], cached=False / h5py gzip ds[i, j]",
            ours / h5,
            "<= 0.333",
            ours / h5 <= 1 / 3,
            f"{ours * 1e6:.1f}us vs {h5 * 1e6:.1f}us",
        )
    )
    return rows


def _warm(path: Path) -> None:
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 24):
            pass


def array_rows(mb: int, tmp: Path) -> list[Row]:
    """T4. Memory: the field, one read result at a time (about 2x the array at the peak)."""
    import h5py
    import numpy as np

    a = smooth_field(max(1, mb * 10**6 // (8 * ARRAY_COLS)), ARRAY_COLS)
    path, gz, gz_shuffle = tmp / "field-zstd.mlc", tmp / "field-gzip.h5", tmp / "field-gzip-shuffle.h5"
    chunks = row_chunks(a.shape, ARRAY_THRESHOLD)
    msglc.dump(path, a, compression="zstd", compression_level=LEVEL, small_obj_optimization_threshold=ARRAY_THRESHOLD)
    for h5path, shuffle in ((gz, False), (gz_shuffle, True)):
        with h5py.File(h5path, "w") as f:
            f.create_dataset(
                "a", data=a, chunks=chunks, compression="gzip", compression_opts=H5_GZIP_LEVEL, shuffle=shuffle
            )
    what = f"{a.nbytes / 1e6:.0f} MB smooth float64 array, zstd"
    nbytes, shape = a.nbytes, a.shape
    with msglc.LazyReader(path, cached=False) as reader:
        assert np.array_equal(np.asarray(reader.read()), a)
    del a
    gc.collect()

    def ours() -> None:
        with msglc.LazyReader(path, cached=False) as reader:
            np.asarray(reader.read())

    def h5(h5path: Path) -> None:
        with h5py.File(h5path, "r") as f:
            f["a"][...]

    def threads(n: int) -> Callable[[], None]:
        def run() -> None:
            with read_threads(n):
                ours()

        return run

    # each read opens the file afresh: no frame or chunk cache carries over between reads; the
    # thread counts take turns (a burst of other load must not fall on one of them alone)
    for p in (path, gz, gz_shuffle):
        _warm(p)
    times = interleaved({"msglc 1": threads(1), "msglc 2": threads(2), "msglc default": ours}, rounds=3)
    for label, h5path in (("gzip", gz), ("gzip shuffle", gz_shuffle)):
        times[label] = best_of(partial(h5, h5path))
    gc.collect()

    def speed(t: float) -> str:
        return f"{t:.3f}s ({nbytes / t / 1e6:.0f} MB/s)"

    threads_note = "" if has_read_threads() else "; no read_threads option in this msglc: default threads"
    chunk_note = f"h5py chunks {chunks[0]}x{chunks[1]}, msglc threshold {ARRAY_THRESHOLD >> 20} MB"
    sizes = {p: p.stat().st_size for p in (path, gz, gz_shuffle)}
    return [
        Row(
            f"{what}: h5py gzip whole read / np.asarray(lazy), read_threads=2",
            times["gzip"] / times["msglc 2"],
            ">= 3",
            times["gzip"] / times["msglc 2"] >= 3,
            f"{speed(times['gzip'])} vs {speed(times['msglc 2'])}; {chunk_note}{threads_note}",
        ),
        Row(
            f"{what}: np.asarray(lazy) read_threads=1 / read_threads=2",
            times["msglc 1"] / times["msglc 2"],
            ">= 1.6",
            times["msglc 1"] / times["msglc 2"] >= 1.6,
            f"{speed(times['msglc 1'])} vs {speed(times['msglc 2'])}; default: {speed(times['msglc default'])}"
            f"{threads_note}",
        ),
        Row(
            f"{what}: h5py gzip + shuffle whole read / np.asarray(lazy), read_threads=2",
            times["gzip shuffle"] / times["msglc 2"],
            "(reported)",
            True,
            f"{speed(times['gzip shuffle'])} vs {speed(times['msglc 2'])}",
        ),
        Row(
            f"{what}: archive size / h5py gzip size",
            sizes[path] / sizes[gz],
            "(reported)",
            True,
            f"{sizes[path] / 1e6:.1f} MB vs {sizes[gz] / 1e6:.1f} MB (gzip + shuffle {sizes[gz_shuffle] / 1e6:.1f} MB;"
            f" raw {nbytes / 1e6:.0f} MB, shape {shape[0]}x{shape[1]})",
        ),
    ]
