"""A fault-injecting HTTP proxy for an S3 endpoint (the moto test server of
``tools.remote``, or any other): point s3fs's ``endpoint_url`` at ``proxy.endpoint`` and
tell the proxy which requests to spoil.

    with FaultProxy("http://127.0.0.1:5000") as proxy:
        proxy.inject("CompleteMultipartUpload", "lost")  # the next one is done, its answer lost
        fs = s3fs.S3FileSystem(..., client_kwargs={"endpoint_url": proxy.endpoint})

Faults (``kind``), each for the requests of one S3 operation (or ``"*"``), after the first
``after`` of them, ``times`` times (None: every one from then on):

- ``"500"``, ``"503"``: an S3 error (InternalError, SlowDown) instead of the answer; the
  request is not forwarded. ``"error"``: the same with the ``status`` and ``code`` given (a
  404 NoSuchUpload, as S3 answers the retry of a CompleteMultipartUpload that was done).
- ``"reset"``: the connection is reset before the request is forwarded (nothing was done).
- ``"lost"``: the request is forwarded and done, then the connection is reset (the answer
  lost).
- ``"cut"``: the answer's headers as they are (its Content-Length too), then half its body,
  then the connection closed.
- ``"short"``: half the body, with a Content-Length that matches it (a proxy that shortens
  both); other headers (Content-Range, ETag) as they were. The connection stays usable.
- ``"delay"``: the request is forwarded and done, and its answer held ``seconds`` first.

Standard library only, and no import of the rest of the project, so it can move on its own.
Requests are served by a thread per connection; each forwarded request gets a connection of
its own to the upstream server.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

KINDS = ("500", "503", "error", "reset", "lost", "cut", "short", "delay")

_ERRORS = {
    "500": (500, "Internal Server Error", "InternalError", "We encountered an internal error. Please try again."),
    "503": (503, "Slow Down", "SlowDown", "Please reduce your request rate."),
}

_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer", "upgrade", "expect"}


@dataclass
class Fault:
    operation: str  # an S3 operation name (see ``operation``), or "*" for any
    kind: str
    after: int = 0  # matching requests let through first
    times: int | None = 1  # requests spoiled then (None: all of them)
    seconds: float = 0.0  # for "delay"
    status: int = 0  # for "error"
    code: str = ""  # for "error"
    seen: int = 0  # matching requests so far
    done: int = 0  # requests spoiled so far


def operation(method: str, target: str, headers: dict[str, str]) -> str:
    """The S3 operation of a path-style request (``/bucket/key?query``)."""
    path, _, query = target.partition("?")
    q = parse_qs(query, keep_blank_values=True)
    has_key = len([p for p in path.split("/") if p]) >= 2
    copy = "x-amz-copy-source" in headers
    if method == "POST":
        if "uploads" in q:
            return "CreateMultipartUpload"
        if "uploadId" in q:
            return "CompleteMultipartUpload"
        return "DeleteObjects" if "delete" in q else "PostObject"
    if method == "PUT":
        if "uploadId" in q:
            return "UploadPartCopy" if copy else "UploadPart"
        if has_key:
            return "CopyObject" if copy else "PutObject"
        return "PutBucketPolicy" if "policy" in q else "CreateBucket"
    if method == "DELETE":
        if "uploadId" in q:
            return "AbortMultipartUpload"
        return "DeleteObject" if has_key else "DeleteBucket"
    if method == "HEAD":
        return "HeadObject" if has_key else "HeadBucket"
    if has_key:
        return "ListParts" if "uploadId" in q else "GetObject"
    if "uploads" in q:
        return "ListMultipartUploads"
    return "ListObjectsV2" if "list-type" in q else "ListObjects"


class FaultProxy:
    """An HTTP/1.1 proxy on 127.0.0.1 in front of ``upstream`` (``http://host:port``) that
    spoils the requests it is told to (``inject``) and logs every request it sees (``log``:
    ``(operation, kind or None)``)."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.faults: list[Fault] = []
        self.log: list[tuple[str, str | None]] = []
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.connections: set[socket.socket] = set()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True, name="fault-proxy").start()

    # -- what to spoil --
    def inject(
        self,
        operation: str,
        kind: str,
        *,
        after: int = 0,
        times: int | None = 1,
        seconds: float = 0.0,
        status: int = 0,
        code: str = "",
    ) -> Fault:
        if kind not in KINDS:
            raise ValueError(f"fault kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if kind == "error" and not (400 <= status < 600 and code):
            raise ValueError("an 'error' fault needs an HTTP status (4xx, 5xx) and an S3 error code")
        fault = Fault(operation, kind, after, times, seconds, status, code)
        with self.lock:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        """Forget the faults and the log."""
        with self.lock:
            self.faults.clear()
            self.log.clear()

    def operations(self) -> list[str]:
        with self.lock:
            return [op for op, _ in self.log]

    def spoiled(self) -> list[tuple[str, str]]:
        with self.lock:
            return [(op, kind) for op, kind in self.log if kind is not None]

    def _take(self, op: str) -> Fault | None:
        with self.lock:
            chosen = None
            for fault in self.faults:
                if fault.operation not in ("*", op):
                    continue
                fault.seen += 1
                if chosen is None and fault.seen > fault.after and (fault.times is None or fault.done < fault.times):
                    fault.done += 1
                    chosen = fault
            self.log.append((op, chosen.kind if chosen else None))
            return chosen

    # -- serving --
    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        with self.lock:
            connections = list(self.connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.connections.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        rfile = conn.makefile("rb")
        try:
            while not self.closed and self._one(conn, rfile):
                pass
        except _Reset:
            rfile.close()  # (the socket closes only once its file is closed too)
            _reset(conn)
        except (OSError, ValueError):
            pass
        finally:
            rfile.close()
            with self.lock:
                self.connections.discard(conn)
            conn.close()

    def _one(self, conn: socket.socket, rfile: Any) -> bool:
        """Serve one request on ``conn``; False once the connection is to end."""
        line = rfile.readline(65537)
        if not line.strip():
            return False
        method, target, _ = line.decode("latin-1").split(" ", 2)
        fields: list[tuple[str, str]] = []
        while (header := rfile.readline(65537)) not in (b"\r\n", b"\n", b""):
            name, _, value = header.decode("latin-1").partition(":")
            fields.append((name.strip(), value.strip()))
        lower = {name.lower(): value for name, value in fields}
        op = operation(method, target, lower)
        fault = self._take(op)
        kind = fault.kind if fault else None
        if kind == "reset":
            raise _Reset
        if "100-continue" in lower.get("expect", "").lower():
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = _read_body(rfile, lower)
        if kind in _ERRORS or kind == "error":
            assert fault is not None
            conn.sendall(_error_answer(*(_ERRORS.get(kind) or (fault.status, "Error", fault.code, fault.code))))
            return True
        forwarded = [(n, v) for n, v in fields if n.lower() not in _HOP and n.lower() != "content-length"]
        status, reason, answer, data = self._forward(method, target, forwarded, body)
        if kind == "lost":
            raise _Reset
        if kind == "delay" and fault is not None:
            time.sleep(fault.seconds)
        length = len(data)
        sent = data
        if kind in ("cut", "short") and method != "HEAD":
            sent = data[: len(data) // 2]
            if kind == "short":
                length = len(sent)
        head = [f"HTTP/1.1 {status} {reason}"]
        for name, value in answer:
            if name.lower() in _HOP or (name.lower() == "content-length" and method != "HEAD"):
                continue
            head.append(f"{name}: {value}")
        if method != "HEAD":
            head.append(f"Content-Length: {length}")
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + sent)
        if kind == "cut":  # an orderly end, before the body is complete
            conn.shutdown(socket.SHUT_RDWR)
            return False
        return True

    def _forward(
        self, method: str, target: str, fields: list[tuple[str, str]], body: bytes
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        upstream = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            upstream.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in fields:
                upstream.putheader(name, value)
            if body or method in ("PUT", "POST"):
                upstream.putheader("Content-Length", str(len(body)))
            upstream.endheaders(body or None)
            response = upstream.getresponse()
            data = response.read()
            return response.status, response.reason, response.getheaders(), data
        finally:
            upstream.close()


def _error_answer(status: int, reason: str, code: str, message: str) -> bytes:
    """An S3 error answer, as S3 words it."""
    body = f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code><Message>{message}</Message></Error>"
    payload = body.encode()
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\nContent-Length: {len(payload)}\r\n\r\n"
    return head.encode("latin-1") + payload


class _Reset(Exception):
    """End the connection with a reset."""


def _read_body(rfile: Any, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks: list[bytes] = []
        while True:
            size = int(rfile.readline(65537).split(b";")[0].strip() or b"0", 16)
            if not size:
                while rfile.readline(65537) not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                return b"".join(chunks)
            chunks.append(rfile.read(size))
            rfile.readline(65537)
    length = int(headers.get("content-length", "0") or 0)
    return rfile.read(length) if length else b""


def _reset(conn: socket.socket) -> None:
    """Close ``conn`` with a TCP reset (no orderly end: the peer sees the connection broken)."""
    with contextlib.suppress(OSError):
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        conn.close()
