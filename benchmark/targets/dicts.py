"""The ``dict`` section: a large str-keyed dict written, opened and looked up, against plain
msgpack (encode + write, decode of the whole file)."""

from __future__ import annotations

import random
import time
from pathlib import Path

import msgspec

import msglc

from ..timing import best_of, per_call
from .common import Row, fresh


def str_dict(n: int) -> tuple[dict[str, str], random.Random]:
    """The section's dict of ``n`` short str -> str entries, and the generator that made it
    (it then picks the keys looked up), so the compressed section uses the same data."""
    rng = random.Random(7)
    return {f"key{i:08d}": f"v{rng.getrandbits(48):x}" for i in range(n)}, rng


def dict_targets(n: int, lookups: int, tmp: Path) -> list[Row]:
    d, rng = str_dict(n)
    enc = msgspec.msgpack.Encoder()
    plain = tmp / "dict.msgpack"
    path = tmp / "dict.mlc"

    def floor_write() -> None:
        with open(plain, "wb") as f:
            f.write(enc.encode(d))

    floor = best_of(floor_write, setup=lambda: fresh(plain))
    ours = best_of(lambda: msglc.dump(path, d), setup=lambda: fresh(path))
    rows = [
        Row(
            f"dump {n:,}-key str dict / (encode + write)",
            ours / floor,
            "<= 5",
            ours / floor <= 5,
            f"{ours:.3f}s vs {floor:.3f}s",
        )
    ]

    data = plain.read_bytes()
    dec = msgspec.msgpack.Decoder()
    full = best_of(lambda: dec.decode(data), repeat=2)
    keys = rng.sample(list(d), lookups)
    # cold figures: each opens a fresh reader (the OS page cache is warm, as for any re-read)
    opens, firsts = [], []
    for k in keys[:20]:
        t0 = time.perf_counter()
        reader = msglc.LazyReader(path, cached=False)
        t1 = time.perf_counter()
        value = reader[k]
        t2 = time.perf_counter()
        assert value == d[k]
        reader.close()
        opens.append(t1 - t0)
        firsts.append(t2 - t1)
    open_s, first_s = sorted(opens)[len(opens) // 2], sorted(firsts)[len(firsts) // 2]
    rows.append(Row("open the dict archive (ms, median)", open_s * 1e3, "<= 5 ms", open_s <= 0.005))
    rows.append(
        Row(
            "first lookup / decode of the whole plain file",
            first_s / full,
            "<= 0.01",
            first_s / full <= 0.01,
            f"{first_s * 1e3:.2f}ms vs {full:.3f}s",
        )
    )
    with msglc.LazyReader(path, cached=False) as reader:
        reader[keys[0]]
        later = per_call(reader.__getitem__, keys)
    rows.append(Row("later lookups, cached=False (us each)", later * 1e6, "<= 10 us", later <= 10e-6))
    size_ratio = path.stat().st_size / plain.stat().st_size
    rows.append(
        Row(
            "dict archive size / plain msgpack size",
            size_ratio,
            "<= 1.15",
            size_ratio <= 1.15,
            f"{path.stat().st_size / 1e6:.1f} MB vs {plain.stat().st_size / 1e6:.1f} MB",
        )
    )
    return rows
