"""A generated corpus for the cross-implementation tests: archives written by this package
from seeded random values, covering every node kind, thresholds from 0 to 8192, NumPy arrays
of every supported dtype in both byte orders (large ones with type-5 nodes, tiled ones),
compressed (one dictionary per region of the data included) and plain, sorted, combined,
appended and streamed archives."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
from archives import near_duplicates

import msglc
from msglc import FileInfo, Pairs

THRESHOLDS = [0, 1, 16, 64, 8192]

DTYPES = ["b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16", "S5", "U3"]
ORDERED = ["M8[ns]", "M8[D]", "m8[s]"]


def _float(rng: random.Random) -> float:
    return rng.choice(
        [
            rng.uniform(-1e6, 1e6),
            float(rng.randint(-5, 5)),
            rng.random() * 10.0 ** rng.randint(-300, 300),
            float("nan"),
            float("inf"),
            -float("inf"),
            -0.0,
            1e16,
            1.5e-5,
            0.1,
        ]
    )


def _int(rng: random.Random) -> int:
    return rng.choice(
        [
            rng.randint(-40, 200),
            rng.randint(-(2**31), 2**32),
            rng.randint(-(2**63), 2**64 - 1),
            2**64 - 1,
            -(2**63),
            2**53 + 1,
        ]
    )


def _text(rng: random.Random) -> str:
    alphabet = "abcxyz_-. 0123456789éß€😀\n\"'\\"
    return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 3, 8, 40, 300])))


def _key(rng: random.Random) -> str:
    return "k" + "".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 6)))


def leaf(rng: random.Random) -> Any:
    kind = rng.randrange(8)
    if kind == 0:
        return _int(rng)
    if kind == 1:
        return _float(rng)
    if kind == 2:
        return _text(rng)
    if kind == 3:
        return rng.randbytes(
            rng.choice([0, 1, 5, 40, 300, 70000]) if rng.random() < 0.02 else rng.choice([0, 1, 5, 40, 300])
        )
    if kind == 4:
        return rng.choice([True, False, None])
    return rng.randint(0, 1000)


def value(rng: random.Random, depth: int = 0, size: int = 8) -> Any:
    """A nested JSON-like value."""
    if depth > 3 or rng.random() < 0.3:
        return leaf(rng)
    n = rng.randint(0, size)
    kind = rng.randrange(4)
    if kind == 0:
        return [value(rng, depth + 1, size) for _ in range(n)]
    if kind == 1:
        return {_key(rng): value(rng, depth + 1, size) for _ in range(n)}
    if kind == 2:
        return {rng.randint(-1000, 10**12): value(rng, depth + 1, size) for _ in range(n)}
    return [[_float(rng) for _ in range(6)] for _ in range(n)]  # fixed-stride rows


def deep(rng: random.Random, levels: int) -> Any:
    v: Any = leaf(rng)
    for i in range(levels):
        v = {"d": v, "i": i} if i % 2 else [v, i]
    return v


def array(rng: random.Random, dtype: str, shape: tuple[int, ...]) -> Any:
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        a = np.array([rng.random() < 0.5 for _ in range(n)], dtype=dt)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = np.array([rng.randint(int(info.min), int(info.max)) for _ in range(n)], dtype=dt)
    elif dt.kind == "f":
        a = np.array([rng.uniform(-1e3, 1e3) for _ in range(n)], dtype=dt)
    elif dt.kind == "c":
        a = np.array([complex(rng.uniform(-9, 9), rng.uniform(-9, 9)) for _ in range(n)], dtype=dt)
    elif dt.kind == "S":
        a = np.array([rng.randbytes(rng.randint(0, dt.itemsize)).replace(b"\0", b"x") for _ in range(n)], dtype=dt)
    elif dt.kind == "U":
        a = np.array(["".join(rng.choice("ab€😀") for _ in range(rng.randint(0, 3))) for _ in range(n)], dtype=dt)
    elif dt.kind in "Mm":
        a = np.array([rng.randint(-(10**9), 10**9) for _ in range(n)], dtype="i8").astype(dt)
    else:
        raise ValueError(dtype)
    return a.reshape(shape)


def arrays(rng: random.Random) -> dict[str, Any]:
    """Every dtype in both byte orders, small (read whole) and long (a type-5 node)."""
    out: dict[str, Any] = {}
    for name in DTYPES + ORDERED:
        for order in "<>":
            dtype = name if name in ("b1", "i1", "u1") or name[0] in "SU" and order == "<" else order + name
            if name[0] == "S" and order == ">":
                continue
            key = f"{name}{order}".replace("[", "_").replace("]", "")
            out[key + "_small"] = array(rng, dtype, (3, 2))
            out[key + "_long"] = array(rng, dtype, (40, 30))
    out["struct"] = np.zeros(20, dtype=[("x", "<f4"), ("n", ">i8"), ("v", "<i2", (2,))])
    out["zero_d"] = np.array(2.5)
    out["empty"] = np.zeros((0, 3), dtype="<f8")
    return out


def big_dicts(rng: random.Random) -> dict[str, Any]:
    return {
        "str_keys": {f"key-{i}-{rng.randint(0, 99)}": rng.randint(0, 10**6) for i in range(1500)},
        "int_keys": {i * 7919 - 5000: _text(rng)[:5] for i in range(1300)},
    }


def matrix(rng: random.Random, rows: int, cols: int) -> list[list[float]]:
    return [[round(rng.uniform(-100, 100), 3) for _ in range(cols)] for _ in range(rows)]


def write_corpus(folder: Path, seed: int = 33) -> list[Path]:
    """Write the corpus into ``folder``; the archives written."""
    rng = random.Random(seed)
    written: list[Path] = []

    def dump(name: str, obj: Any, **options: Any) -> None:
        path = folder / f"{name}.mlc"
        msglc.dump(path, obj, **options)
        written.append(path)

    for t in THRESHOLDS:
        mixed = {
            "values": [value(rng) for _ in range(20)],
            "nested": value(rng, size=12),
            "matrix": matrix(rng, 30, 12),
            "deep": deep(rng, 60),
            "arrays": arrays(rng) if t in (64, 8192) else {"f8": array(rng, "<f8", (10, 10))},
        }
        dump(f"mixed-t{t}", mixed, small_obj_optimization_threshold=t)
        if t in (1, 64):
            dump(f"mixed-t{t}-zstd", mixed, small_obj_optimization_threshold=t, compression="zstd")
    dump("big-dicts", big_dicts(rng), small_obj_optimization_threshold=64)
    dump("big-dicts-zstd", big_dicts(rng), small_obj_optimization_threshold=64, compression="zstd")
    dump("big-dicts-sorted", big_dicts(rng), small_obj_optimization_threshold=64, order="sorted")
    dump(
        "big-dicts-sorted-zstd", big_dicts(rng), small_obj_optimization_threshold=64, order="sorted", compression="zstd"
    )
    dump("matrix", matrix(rng, 200, 50), small_obj_optimization_threshold=64)
    dump("matrix-zstd", matrix(rng, 200, 50), small_obj_optimization_threshold=64, compression="zstd")
    big = {
        "f8": np.arange(400 * 400, dtype="<f8").reshape(400, 400) * 0.5,  # 1.28 MB: tiled by default
        "i2": np.arange(37 * 29, dtype=">i2").reshape(37, 29),
        "u4": np.arange(5 * 6 * 7, dtype="<u4").reshape(5, 6, 7),
    }
    dump("tiled-zstd", big, small_obj_optimization_threshold=64, compression="zstd")
    dump("tiled-small-zstd", {k: v for k, v in big.items() if k != "f8"}, compression="zstd", tiles=(4, 3, 2)[:2])
    dump("regions-zstd", near_duplicates(), compression="zstd")  # several dictionaries, one per region
    dump("scalar", 3.25)
    dump("small", {"a": [1, 2.0, None], "b": b"\x00"})

    # combined, appended, streamed
    parts = [folder / "mixed-t64.mlc", folder / "matrix.mlc", folder / "small.mlc"]
    out = folder / "combined.mlc"
    msglc.combine(out, [FileInfo(str(p), p.stem) for p in parts] + [FileInfo(None, "extra", obj={"x": 1})])
    written.append(out)
    out = folder / "combined-list.mlc"
    msglc.combine(out, [FileInfo(str(p)) for p in parts[1:]])
    written.append(out)
    zparts = [folder / "mixed-t64-zstd.mlc", folder / "matrix-zstd.mlc"]
    out = folder / "combined-zstd.mlc"
    msglc.combine(out, [FileInfo(str(p), p.stem) for p in zparts])
    written.append(out)
    out = folder / "appended.mlc"
    msglc.combine(out, [FileInfo(str(folder / "big-dicts.mlc"), "h"), FileInfo(None, "x", obj=1)])
    for i in range(18):  # past 16 entries: the root header outgrows its first byte
        msglc.append(out, [FileInfo(None, f"y{i}", obj=value(rng))])
    msglc.append(out, [FileInfo(str(folder / "matrix.mlc"), "m")])
    written.append(out)
    out = folder / "appended-zstd.mlc"
    msglc.combine(out, [FileInfo(str(folder / "matrix-zstd.mlc"), "m")])
    msglc.append(out, [FileInfo(None, "y", obj=[1, 2])])
    written.append(out)
    for compression in (None, "zstd"):
        out = folder / f"streamed{'-zstd' if compression else ''}.mlc"
        with msglc.LazyWriter(out, small_obj_optimization_threshold=64, compression=compression) as w:
            w.write(
                {
                    "gen": (value(rng) for _ in range(100)),
                    "pairs": Pairs((f"p{i}", [i, _float(rng)]) for i in range(200)),
                    "short": (i for i in range(3)),
                }
            )
        written.append(out)
    return written
