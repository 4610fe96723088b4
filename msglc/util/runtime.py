"""Process-level helpers: pausing the garbage collector during bulk work, joining helper threads."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused(pause: bool = True) -> Iterator[None]:
    """Pause the cyclic GC: building millions of objects otherwise triggers repeated full scans."""
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def join(thread: threading.Thread | None) -> None:
    """Wait for a helper thread even through Ctrl-C, so none outlives the call that started it
    (the interrupt is raised once the thread is done)."""
    interrupted = False
    while thread is not None and thread.is_alive():
        try:
            thread.join()
        except KeyboardInterrupt:
            interrupted = True
    if interrupted:
        raise KeyboardInterrupt
