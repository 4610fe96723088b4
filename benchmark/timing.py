"""Small timing helpers shared by the benchmarks."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


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


def per_call(fn: Callable[[T], object], args: Sequence[T], repeat: int = 3) -> float:
    """Best mean seconds per call of ``fn(arg)`` over ``args``."""
    return best_of(calls(fn, args), repeat=repeat) / len(args)


def interleaved(
    loops: dict[str, Callable[[], object]], rounds: int = 9, setup: Callable[[str], object] | None = None
) -> dict[str, float]:
    """Minimum wall time of each of ``loops`` over ``rounds`` rounds, each round running every
    loop once in turn (after one warm-up round); ``setup(name)`` runs untimed before each call
    of loop ``name`` (e.g. to remove the file it writes).

    For ratios of fast operations (microseconds per call) on a shared machine: the load of
    other tenants comes in bursts of seconds, so timing one series after the other can give one
    a quiet minute and the other a busy one; taking turns gives them the same chances."""
    for name, fn in loops.items():
        if setup:
            setup(name)
        fn()
    best = dict.fromkeys(loops, float("inf"))
    for _ in range(rounds):
        for name, fn in loops.items():
            if setup:
                setup(name)
            gc.collect()
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def calls(fn: Callable[[T], object], args: Sequence[T]) -> Callable[[], object]:
    """One loop of ``fn(arg)`` over ``args`` (for ``interleaved``; divide by ``len(args)``)."""

    def loop() -> None:
        for a in args:
            fn(a)

    return loop
