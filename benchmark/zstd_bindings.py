"""Evidence for the zstd binding and frame size of compressed archives (docs/compression.md):
per-frame decompression cost and ratio at several frame sizes for python-zstandard and
backports.zstd (Python 3.14's compression.zstd), the gain of a byte shuffle on a smooth float64
field, and whether decompression scales with threads (the GIL released).

    pip install zstandard backports.zstd numpy msgspec && python -m benchmark.zstd_bindings
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

import msgspec
import numpy as np
import zstandard
from backports import zstd as backport


def best(f: Callable[[], object], n: int = 5) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def frames(buf: bytes, size: int) -> list[bytes]:
    return [buf[i : i + size] for i in range(0, len(buf), size)]


def shuffled(b: bytes) -> bytes:
    out: bytes = np.frombuffer(b, "u1").reshape(-1, 8).T.copy().tobytes()  # numpy's stubs: .T is Any here
    return out


def per_frame(name: str, buf: bytes) -> None:
    for size in (8 << 10, 64 << 10, 1 << 20):
        compressor = zstandard.ZstdCompressor(level=3)
        parts = [compressor.compress(f) for f in frames(buf, size)]
        ratio = len(buf) / sum(map(len, parts))
        d = zstandard.ZstdDecompressor()

        def with_zstandard(d: zstandard.ZstdDecompressor = d, parts: list[bytes] = parts) -> list[bytes]:
            return [d.decompress(c) for c in parts]

        def with_backport(parts: list[bytes] = parts) -> list[bytes]:
            return [backport.decompress(c) for c in parts]

        t_z = best(with_zstandard) / len(parts)
        t_b = best(with_backport) / len(parts)
        costs = f"zstandard {t_z * 1e6:7.1f} us, backports {t_b * 1e6:7.1f} us"
        print(f"{name:10} {size >> 10:5} KB frames: ratio {ratio:5.2f}; {costs}")


def threads(raw: bytes) -> None:
    parts = [zstandard.ZstdCompressor(level=3).compress(f) for f in frames(raw, 1 << 20)]
    for lib in ("zstandard", "backports"):

        def run(n: int, lib: str = lib) -> float:
            def work(chunk: list[bytes]) -> None:
                if lib == "zstandard":
                    d = zstandard.ZstdDecompressor()  # one per thread: sharing one corrupts data
                    for c in chunk:
                        d.decompress(c)
                else:
                    for c in chunk:
                        backport.decompress(c)

            ts = [threading.Thread(target=work, args=(parts[i::n],)) for i in range(n)]
            t0 = time.perf_counter()
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return time.perf_counter() - t0

        one, two = min(run(1) for _ in range(5)), min(run(2) for _ in range(5))
        print(
            f"{lib}: 1 MB frames, 1 thread {len(raw) / one / 1e6:.0f} MB/s, 2 threads {len(raw) / two / 1e6:.0f} MB/s"
        )


def main() -> None:
    rng = random.Random(0)
    records = [
        {"id": i, "name": f"user-{i}", "score": rng.random(), "tags": ["a", "b", "c"][: i % 4], "ok": i % 3 == 0}
        for i in range(300_000)
    ]
    field = np.sin(np.linspace(0, 60, 8_000_000)).astype("f8").tobytes()
    per_frame("records", msgspec.msgpack.encode(records))
    per_frame("smooth f8", field)
    for size in (64 << 10, 1 << 20):
        c = zstandard.ZstdCompressor(level=3)
        plain = sum(len(c.compress(f)) for f in frames(field, size))
        shuf = sum(len(c.compress(shuffled(f))) for f in frames(field, size))
        ratios = f"{len(field) / plain:.2f} plain, {len(field) / shuf:.2f} byte-shuffled"
        print(f"smooth f8, {size >> 10} KB frames: ratio {ratios}")
    threads(field)


if __name__ == "__main__":
    main()
