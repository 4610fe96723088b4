"""The ``matrix`` section: a random float matrix written and read at each threshold, against
plain msgpack (encode + write, pread + decode) and h5py."""

from __future__ import annotations

import os
import random
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

import msglc

from ..experiment import h5_chunk
from ..timing import best_of, per_call
from .common import THRESHOLDS, Row, fresh, random_matrix


def matrix_targets(n: int, reads: int, tmp: Path) -> list[Row]:
    import h5py
    import numpy as np

    matrix = random_matrix(n)
    rng = random.Random(43)
    enc = msgspec.msgpack.Encoder()
    plain = tmp / "matrix.msgpack"

    def floor_write() -> None:
        with open(plain, "wb") as f:
            f.write(enc.encode(matrix))

    rows: list[Row] = []
    floor = best_of(floor_write, setup=lambda: fresh(plain))
    for t in THRESHOLDS:
        path = tmp / f"matrix-{t}.mlc"
        ours = best_of(
            partial(msglc.dump, path, matrix, small_obj_optimization_threshold=t), setup=partial(fresh, path)
        )
        rows.append(
            Row(
                f"dump {n}x{n} matrix, threshold {t >> 10} KB / (encode + write)",
                ours / floor,
                "<= 1.5",
                ours / floor <= 1.5,
                f"{ours:.3f}s vs {floor:.3f}s",
            )
        )

    points = [(rng.randrange(n), rng.randrange(n)) for _ in range(reads)]
    fd = os.open(plain, os.O_RDONLY)
    dec = msgspec.msgpack.Decoder()
    row_bytes = 3 + 9 * n
    header = 3 if n < 65536 else 5

    def pread_point(p: tuple[int, int]) -> Any:
        return dec.decode(os.pread(fd, 9, header + p[0] * row_bytes + 3 + 9 * p[1]))

    floor_read = per_call(pread_point, points)
    os.close(fd)
    array = np.asarray(matrix)
    for t in THRESHOLDS:
        h5path = tmp / f"matrix-{t}.h5"
        with h5py.File(h5path, "w") as f:
            f.create_dataset("m", data=array, chunks=h5_chunk(t, n))
        with msglc.LazyReader(tmp / f"matrix-{t}.mlc", cached=False) as reader, h5py.File(h5path, "r") as f:
            ds = f["m"]
            assert all(reader[i][j] == matrix[i][j] for i, j in points[:50])

            def nested(p: tuple[int, int], r: msglc.LazyReader = reader) -> Any:
                return r[p[0]][p[1]]

            def h5_item(p: tuple[int, int], d: Any = ds) -> Any:
                return d[p[0], p[1]]

            ours = per_call(nested, points)
            h5 = per_call(h5_item, points[: max(200, reads // 5)])
        rows.append(
            Row(
                f"random read reader[i][j], threshold {t >> 10} KB / h5py ds[i, j]",
                ours / h5,
                "<= 0.333",
                ours / h5 <= 1 / 3,
                f"{ours * 1e6:.2f}us vs {h5 * 1e6:.2f}us",
            )
        )
        rows.append(
            Row(
                f"random read reader[i][j], threshold {t >> 10} KB / pread+decode",
                ours / floor_read,
                "<= 1.5",
                ours / floor_read <= 1.5,
                f"{ours * 1e6:.2f}us vs {floor_read * 1e6:.2f}us",
            )
        )

    data = plain.read_bytes()
    full = best_of(lambda: dec.decode(data))
    with msglc.LazyReader(tmp / "matrix-65536.mlc") as reader:
        ours = best_of(reader.to_obj)
    rows.append(
        Row(
            "to_obj() of the matrix archive / msgspec decode",
            ours / full,
            "<= 1.3",
            ours / full <= 1.3,
            f"{ours:.3f}s vs {full:.3f}s",
        )
    )
    return rows
