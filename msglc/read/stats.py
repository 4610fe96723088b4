"""``LazyStats``: the storage requests and bytes a reader made (``LazyReader(counter=...)``)."""

from __future__ import annotations

import threading


class LazyStats:
    """Counts storage requests and bytes: ``stats()`` is the number of bytes read so far,
    ``stats.requests`` the requests made (each ``pread`` of a local file; each ranged GET of
    a remote one, reads served from its block cache not counted). ``calls`` is ``requests``;
    ``stats += n`` counts one request of ``n`` bytes, and ``bytes_per_call()`` is the mean
    (the published msglc's names)."""

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        return self.requests

    def add(self, size: int, requests: int = 1) -> None:
        with self._lock:
            self.requests += requests
            self.bytes += size

    def __iadd__(self, size: int) -> LazyStats:
        if not isinstance(size, int) or isinstance(size, bool):
            raise TypeError(f"LazyStats += takes a number of bytes (an int), not {type(size).__name__}")
        if size < 0:
            raise ValueError(f"LazyStats += takes a number of bytes >= 0, not {size}")
        self.add(size)
        return self

    def bytes_per_call(self) -> float:
        """Bytes per request; ``ZeroDivisionError`` before the first (no mean to give)."""
        with self._lock:
            requests, size = self.requests, self.bytes
        if not requests:
            raise ZeroDivisionError("LazyStats.bytes_per_call(): no request counted yet")
        return size / requests

    def __call__(self) -> int:
        return self.bytes

    def clear(self) -> None:
        with self._lock:
            self.requests = 0
            self.bytes = 0

    def __str__(self) -> str:
        return f"{self.requests} requests, {self.bytes} bytes"

    def __repr__(self) -> str:
        return f"<LazyStats {self}>"
