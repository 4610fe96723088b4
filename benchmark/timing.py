"""Small timing helpers shared by the benchmarks."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


def best_of(
    fn: Callable[[], object], repeat: int = 3, warmup: int = 1, setup: Callable[[], object] | None = None
) -> float:
    """Minimum wall time of ``fn`` over ``repeat`` runs after ``warmup`` runs; ``setup`` runs
    untimed before each.

    The minimum is the figure least disturbed by other load on a shared machine; warm-up runs
    pay the first-touch page faults of fresh memory, which otherwise dominate on some VMs."""
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    times = []
    for _ in range(repeat):
        if setup:
            setup()
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def per_call(fn: Callable[[object], object], args: list, repeat: int = 3) -> float:
    """Best mean seconds per call of ``fn(arg)`` over ``args``."""

    def loop() -> None:
        for a in args:
            fn(a)

    return best_of(loop, repeat=repeat) / len(args)
