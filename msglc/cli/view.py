"""``msglc view ARCHIVE``: the browser viewer of one archive, served on loopback.

The server answers two paths and nothing else: ``/``, the viewer (one self-contained HTML
page built from ``viewer/``), and ``/archive``, the archive's bytes with ``Range`` support as a
static file server gives them (suffix and normal ranges, 416, ETag, Last-Modified and the
conditions the viewer's reader sends). A remote archive (``s3://...``, any fsspec URL) is
served by ranges of the object, read through the package's remote source.
"""

from __future__ import annotations

import argparse
import email.utils
import hashlib
import os
import re
import signal
import stat
import sys
import threading
import time
import webbrowser
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from msglc.cli.errors import CliError
from msglc.errors import ArchiveChangedError
from msglc.format.legacy import MAGIC as LEGACY_MAGIC
from msglc.format.legacy import is_legacy
from msglc.io.base import Source
from msglc.io.names import RemotePath, resolve_name
from msglc.io.open_source import open_source

VIEWER_HTML = Path(__file__).with_name("viewer.html")
CHUNK = 1 << 20  # bytes a response writes at a time
_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.IGNORECASE)
# the page opens this URL when it has no ?url= of its own (an empty content: it waits for a file)
_DEFAULT_URL = '<meta name="msglc-default-url" content="">'


class Version:
    """What one request sees of the archive: its size and validators."""

    def __init__(self, size: int, etag: str, mtime: float | None) -> None:
        self.size = size
        self.etag = etag
        self.mtime = mtime

    @property
    def last_modified(self) -> str | None:
        return None if self.mtime is None else email.utils.formatdate(self.mtime, usegmt=True)


class Archive:
    """The bytes served at ``/archive``: ``open()`` gives the version of this request and a
    reader of its bytes, closed by ``close()``."""

    name: str

    def open(self) -> tuple[Version, Callable[[int, int], bytes], Callable[[], None]]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class LocalArchive(Archive):
    """A local file, opened anew for each request, as a static server does: a file replaced
    while the page is open gets a new ETag, so the viewer's pinned reads see the change."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.name = os.path.basename(path)
        try:
            st = os.stat(path)
        except OSError as e:
            raise CliError(f"cannot serve {path}: {e.strerror}") from e
        if not stat.S_ISREG(st.st_mode):
            raise CliError(f"cannot serve {path}: not a regular file")
        try:
            with open(path, "rb") as f:
                head = f.read(len(LEGACY_MAGIC))
        except OSError as e:
            raise CliError(f"cannot serve {path}: {e.strerror}") from e
        if is_legacy(head):
            # the viewer's reader reads this package's format only; the page would call it "not an archive"
            raise CliError(
                f"{path} is an archive of the published msglc, which the viewer does not read; "
                f"convert it first: msglc convert {path} NEW.mlc"
            )

    def open(self) -> tuple[Version, Callable[[int, int], bytes], Callable[[], None]]:
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            st = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        etag = f'"{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}"'

        def read(offset: int, size: int) -> bytes:
            return os.pread(fd, size, offset)

        return Version(st.st_size, etag, st.st_mtime), read, lambda: os.close(fd)


class RemoteArchive(Archive):
    """A remote object, read through the package's remote source (pinned to the version it
    opened: a replaced object gives 412 from then on, and the viewer says the archive changed)."""

    def __init__(self, url: str, source: Source) -> None:
        self.name = url.rstrip("/").rsplit("/", 1)[-1]
        self.source = source
        pin = getattr(source, "etag", None) or f"{url}:{source.size}:{time.time_ns()}"
        self.version = Version(source.size, '"' + hashlib.sha256(str(pin).encode()).hexdigest()[:32] + '"', None)

    def open(self) -> tuple[Version, Callable[[int, int], bytes], Callable[[], None]]:
        def read(offset: int, size: int) -> bytes:
            return bytes(self.source.read(offset, size))

        return self.version, read, lambda: None

    def close(self) -> None:
        self.source.close()


def archive_for(name: str, storage_options: dict[str, Any] | None = None) -> Archive:
    """The archive ``name`` names: a local file, or a remote object (a URL fsspec opens)."""
    target = resolve_name(name, storage_options=storage_options)
    if isinstance(target, RemotePath):
        try:
            source = open_source(target)
        except FileNotFoundError as e:
            raise CliError(f"cannot serve {name}: no such object") from e
        return RemoteArchive(name, source)
    return LocalArchive(os.fspath(target))


def parse_range(header: str, size: int) -> tuple[int, int] | None | str:
    """``(start, end)`` (end exclusive) of a ``Range`` header; None to ignore it (not a bytes
    range we read: a static server then answers 200); "unsatisfiable" for a 416."""
    if "," in header:
        return "unsatisfiable"  # the viewer asks one range at a time; several are refused
    m = _RANGE.match(header)
    if m is None:
        return None
    first, last = m.group(1), m.group(2)
    if not first and not last:
        return None
    if not first:  # a suffix: the last N bytes
        n = int(last)
        if n == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - n), size
    start = int(first)
    end = size if not last else int(last) + 1
    if last and end <= start:
        return None  # invalid: ignored, as RFC 9110 asks
    if start >= size:
        return "unsatisfiable"
    return start, min(end, size)


def _http_date(value: str) -> float | None:
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None


def _etag_matches(header: str, etag: str, weak: bool) -> bool:
    """``If-Match`` (strong comparison) or ``If-None-Match`` (weak) against ``etag``."""
    if header.strip() == "*":
        return True
    for tag in header.split(","):
        tag = tag.strip()
        if weak and tag.startswith("W/"):
            tag = tag[2:]
        if tag == etag:
            return True
    return False


class Handler(BaseHTTPRequestHandler):
    server: ViewServer
    started = False  # the archive's answer has begun: an error can no longer become a status
    protocol_version = "HTTP/1.1"
    server_version = "msglc-view"
    # headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and the
    # browser's delayed ACK hold each small answer back by about 40 ms
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a viewer's page makes many small requests; the terminal stays quiet

    def do_GET(self) -> None:
        self.answer(body=True)

    def do_HEAD(self) -> None:
        self.answer(body=False)

    def answer(self, body: bool) -> None:
        if not self.host_allowed():
            self.plain(HTTPStatus.FORBIDDEN, "this server answers requests for 127.0.0.1 and localhost only\n", body)
            return
        path = self.path.split("?", 1)[0]
        if path == "/":
            self.page(body)
        elif path == "/archive":
            try:
                self.archive(body)
            except ArchiveChangedError as e:
                self.plain(HTTPStatus.PRECONDITION_FAILED, f"{e}\n", body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the page went away or cancelled a read
            except Exception as e:  # a remote read failed, a local file vanished: say so, once
                if self.started:
                    self.close_connection = True  # the body is cut short; the page sees a short read
                else:
                    self.plain(HTTPStatus.BAD_GATEWAY, f"cannot read the archive: {type(e).__name__}: {e}\n", body)
        else:
            self.plain(HTTPStatus.NOT_FOUND, "not found: this server serves / (the viewer) and /archive\n", body)

    def host_allowed(self) -> bool:
        """Refuse a Host other than loopback's names: a page of another site that rebinds its
        name to 127.0.0.1 must not read the archive."""
        host = (self.headers.get("Host") or "").strip().lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name in ("127.0.0.1", "localhost", "[::1]", "")

    def plain(self, status: HTTPStatus, text: str, body: bool, headers: dict[str, str] | None = None) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def page(self, body: bool) -> None:
        data = self.server.page
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def archive(self, body: bool) -> None:
        self.started = False
        version, read, close = self.server.archive.open()
        try:
            self.send_archive(version, read, body)
        finally:
            close()

    def send_archive(self, version: Version, read: Callable[[int, int], bytes], body: bool) -> None:
        size = version.size
        validators = {"ETag": version.etag, "Accept-Ranges": "bytes"}
        if version.last_modified:
            validators["Last-Modified"] = version.last_modified
        h = self.headers
        if h.get("If-Match") is not None and not _etag_matches(h["If-Match"], version.etag, weak=False):
            self.plain(HTTPStatus.PRECONDITION_FAILED, "the archive changed (If-Match)\n", body, validators)
            return
        since = _http_date(h.get("If-Unmodified-Since") or "")
        if h.get("If-Match") is None and since is not None and version.mtime is not None and int(version.mtime) > since:
            self.plain(HTTPStatus.PRECONDITION_FAILED, "the archive changed (If-Unmodified-Since)\n", body, validators)
            return
        if h.get("If-None-Match") is not None and _etag_matches(h["If-None-Match"], version.etag, weak=True):
            self.send_response(HTTPStatus.NOT_MODIFIED)
            for k, v in validators.items():
                self.send_header(k, v)
            self.end_headers()
            return
        wanted = parse_range(h["Range"], size) if h.get("Range") is not None else None
        if_range = h.get("If-Range")
        if wanted is not None and if_range is not None:
            date = _http_date(if_range)
            fresh = (
                if_range.strip() == version.etag
                if date is None
                else version.mtime is not None and int(version.mtime) <= date
            )
            if not fresh:
                wanted = None  # another version: the whole of this one
        if wanted == "unsatisfiable":
            self.plain(
                HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE,
                f"range not satisfiable: {h['Range']} of {size} bytes\n",
                body,
                {**validators, "Content-Range": f"bytes */{size}"},
            )
            return
        self.started = True
        if isinstance(wanted, tuple):
            start, end = wanted
            self.send_response(HTTPStatus.PARTIAL_CONTENT)
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        else:
            start, end = 0, size
            self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start))
        self.send_header("Cache-Control", "no-cache")
        for k, v in validators.items():
            self.send_header(k, v)
        self.end_headers()
        if not body:
            return
        at = start
        while at < end:
            data = read(at, min(CHUNK, end - at))
            if not data:  # the file shrank under us: the connection ends short, as a static server's would
                self.close_connection = True
                return
            self.wfile.write(data)
            at += len(data)
            self.server.served += len(data)


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, archive: Archive, port: int) -> None:
        self.archive = archive
        self.served = 0  # archive bytes sent, for the benchmark's count
        self.page = page_for(archive)
        super().__init__(("127.0.0.1", port), Handler)


def page_for(archive: Archive) -> bytes:
    try:
        html = VIEWER_HTML.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise CliError(f"the viewer page is missing from the installed package ({VIEWER_HTML})") from e
    if _DEFAULT_URL not in html:
        raise CliError(f"the viewer page {VIEWER_HTML} has no place for the archive's URL: reinstall msglc")
    from html import escape

    html = html.replace(
        _DEFAULT_URL,
        f'<meta name="msglc-default-url" content="/archive" data-name="{escape(archive.name, quote=True)}">',
        1,
    )
    return html.encode("utf-8")


@contextmanager
def _stopped_by_sigterm() -> Iterator[None]:
    """``kill`` stops the server as Ctrl-C does (a clean stop, status 0): SIGTERM raises
    KeyboardInterrupt in the main thread while serving."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cmd_view(args: argparse.Namespace) -> int:
    archive = archive_for(args.archive)
    try:
        try:
            server = ViewServer(archive, args.port)
        except OSError as e:
            hint = " (--port 0 picks a free port)" if args.port else ""
            raise CliError(f"cannot listen on 127.0.0.1:{args.port}: {e.strerror or e}{hint}") from e
        with server:
            url = f"http://127.0.0.1:{server.server_address[1]}/"
            print(f"msglc view: serving {args.archive} at {url} (Ctrl-C stops)", flush=True)
            if not args.no_browser:
                threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
            try:
                with _stopped_by_sigterm():
                    server.serve_forever(poll_interval=0.2)
            except KeyboardInterrupt:
                print("msglc view: stopped", file=sys.stderr, flush=True)
    finally:
        archive.close()
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("archive", metavar="ARCHIVE", help="a local archive, or a URL such as s3://bucket/key")
    p.add_argument("--port", type=_port, default=8765, help="the port on 127.0.0.1 (default 8765; 0: any free one)")
    p.add_argument("--no-browser", action="store_true", help="print the URL without opening a browser")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535, not {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535, not {port}")
    return port
