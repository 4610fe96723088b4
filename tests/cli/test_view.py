"""msglc view: the server of the viewer page and one archive (Range requests as a static file
server answers them, nothing but / and /archive, loopback only), locally and from S3."""

from __future__ import annotations

import http.client
import os
import pathlib
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import msglc
from msglc.cli import main
from msglc.cli.view import VIEWER_HTML, ViewServer, archive_for

GOLDEN = pathlib.Path(__file__).parent.parent / "golden"


@contextmanager
def serving(name: str, **options: object) -> Iterator[ViewServer]:
    server = ViewServer(archive_for(name, **options), 0)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        server.archive.close()
        thread.join()


def get(server: ViewServer, path: str, method: str = "GET", **headers: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    try:
        conn.request(method, path, headers={k.replace("_", "-"): v for k, v in headers.items()})
        res = conn.getresponse()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
    finally:
        conn.close()


@pytest.fixture
def archive(tmp_path):
    path = tmp_path / "doc.mlc"
    msglc.dump(path, {"runs": [{"energy": float(i)} for i in range(300)], "name": "x" * 500})
    return path


def test_the_page_opens_the_archive_it_serves(archive):
    with serving(str(archive)) as server:
        status, headers, body = get(server, "/")
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    page = body.decode()
    assert '<meta name="msglc-default-url" content="/archive" data-name="doc.mlc">' in page
    assert page.count("<script") == 1 and "src=" not in page.split("<script", 1)[1].split(">", 1)[0]
    assert "http://" not in page.split("<body", 1)[0]  # nothing fetched from elsewhere


def test_the_whole_archive_with_validators(archive):
    data = archive.read_bytes()
    with serving(str(archive)) as server:
        status, headers, body = get(server, "/archive")
        assert (status, body) == (200, data)
        assert headers["accept-ranges"] == "bytes"
        assert headers["content-length"] == str(len(data))
        assert headers["etag"].startswith('"') and headers["etag"].endswith('"')
        assert headers["last-modified"].endswith(" GMT")
        status, headers, body = get(server, "/archive", "HEAD")
        assert (status, body, headers["content-length"]) == (200, b"", str(len(data)))


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [
        ("bytes=0-15", 0, 16),
        ("bytes=100-", 100, None),
        ("bytes=-64", -64, None),
        ("bytes=-99999999", 0, None),  # a suffix longer than the file: all of it
        ("bytes=10-99999999", 10, None),  # an end past the file: up to its end
    ],
)
def test_ranges(archive, header, start, end):
    data = archive.read_bytes()
    want = data[start:end]
    first = len(data) + start if start < 0 else start
    with serving(str(archive)) as server:
        status, headers, body = get(server, "/archive", Range=header)
    assert (status, body) == (206, want)
    assert headers["content-range"] == f"bytes {first}-{first + len(want) - 1}/{len(data)}"


@pytest.mark.parametrize("header", ["bytes=999999-", "bytes=-0", "bytes=0-1,5-9"])
def test_unsatisfiable_ranges(archive, header):
    size = archive.stat().st_size
    with serving(str(archive)) as server:
        status, headers, _ = get(server, "/archive", Range=header)
    assert status == 416
    assert headers["content-range"] == f"bytes */{size}"


def test_a_range_that_is_not_of_bytes_is_ignored(archive):
    with serving(str(archive)) as server:
        status, _, body = get(server, "/archive", Range="lines=1-2")
    assert (status, body) == (200, archive.read_bytes())


def test_conditions_pin_the_version_read(archive):
    with serving(str(archive)) as server:
        _, headers, _ = get(server, "/archive", Range="bytes=-16")
        etag, modified = headers["etag"], headers["last-modified"]
        assert get(server, "/archive", Range="bytes=0-3", If_Match=etag)[0] == 206
        assert get(server, "/archive", If_None_Match=etag)[0] == 304
        assert get(server, "/archive", Range="bytes=0-3", If_Unmodified_Since=modified)[0] == 206
        # the file replaced, as a writer does: the page's pinned reads are refused
        msglc.dump(archive, {"other": list(range(1000))})
        os.utime(archive, (1e9, 2e9))
        status, _, body = get(server, "/archive", Range="bytes=0-3", If_Match=etag)
        assert status == 412 and b"changed" in body
        assert get(server, "/archive", Range="bytes=0-3", If_Range=etag)[0] == 200  # another version: all of it


@pytest.mark.parametrize(
    "path",
    ["/archive/", "/index.html", "/x", "/archive/../archive2", "/..%2f..%2fetc/passwd", "/viewer.html", "/ARCHIVE"],
)
def test_nothing_else_is_served(archive, path):
    with serving(str(archive)) as server:
        status, _, body = get(server, path)
    assert status == 404
    assert b"serves / (the viewer) and /archive" in body


def test_another_host_name_is_refused(archive):
    # a page of another site whose name was rebound to 127.0.0.1 must not read the archive
    with serving(str(archive)) as server:
        assert get(server, "/archive", Host="attacker.example")[0] == 403
        assert get(server, "/archive", Host=f"localhost:{server.server_address[1]}")[0] == 200


def test_the_server_listens_on_loopback_only(archive):
    with serving(str(archive)) as server:
        assert server.server_address[0] == "127.0.0.1"


def test_a_remote_archive_is_served_by_ranges(s3_options):
    from tools.remote import s3_bucket

    doc = {"values": list(range(20_000)), "name": "remote"}
    options = s3_options
    with s3_bucket(options, "viewer") as fs:
        msglc.dump("s3://viewer/doc.mlc", doc, storage_options=options)
        data = fs.cat_file("viewer/doc.mlc")
        with serving("s3://viewer/doc.mlc", storage_options=options) as server:
            status, headers, body = get(server, "/archive", Range="bytes=-100")
            assert (status, body) == (206, data[-100:])
            etag = headers["etag"]
            status, _, body = get(server, "/archive", Range="bytes=5-1000", If_Match=etag)
            assert (status, body) == (206, data[5:1001])
            assert get(server, "/archive")[2] == data


def test_errors_before_serving(tmp_path, capsys):
    assert main(["view", str(tmp_path / "missing.mlc"), "--no-browser", "--port", "0"]) == 1
    assert "cannot serve" in capsys.readouterr().err
    assert main(["view", str(tmp_path), "--no-browser", "--port", "0"]) == 1
    assert "not a regular file" in capsys.readouterr().err
    legacy = GOLDEN / "legacy" / "blocked-list-t1024.msg"
    assert main(["view", str(legacy), "--no-browser", "--port", "0"]) == 1
    assert f"msglc convert {legacy} NEW.mlc" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["view", str(tmp_path / "x.mlc"), "--port", "70000"])
    assert e.value.code == 2


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_the_command_prints_its_port_and_stops_on_ctrl_c_or_kill(archive, stop):
    proc = subprocess.Popen(
        [sys.executable, "-m", "msglc", "view", str(archive), "--no-browser", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(f"msglc view: serving {archive} at http://127.0.0.1:")
        port = int(line.split("127.0.0.1:", 1)[1].split("/", 1)[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/archive", headers={"Range": "bytes=0-3"})
        assert conn.getresponse().read() == archive.read_bytes()[:4]
        conn.close()
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0
        assert "stopped" in err and "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_page_is_package_data():
    # the installed package serves this file; viewer/test checks it is the current build
    page = VIEWER_HTML.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    assert '<meta name="msglc-default-url" content="">' in page


def test_golden_archives_serve_whole():
    for path in sorted(GOLDEN.glob("*.mlc"))[:3]:
        with serving(str(path)) as server:
            assert get(server, "/archive")[2] == path.read_bytes()


def test_the_browser_is_opened_at_the_url_printed(archive, monkeypatch, capsys):
    opened = threading.Event()
    urls: list[str] = []

    def fake_open(url: str) -> bool:
        urls.append(url)
        opened.set()
        return True

    def serve_until_opened(self: ViewServer, poll_interval: float = 0.5) -> None:
        opened.wait(10)
        raise KeyboardInterrupt  # as Ctrl-C does

    monkeypatch.setattr("webbrowser.open", fake_open)
    monkeypatch.setattr(ViewServer, "serve_forever", serve_until_opened)
    assert main(["view", str(archive), "--port", "0"]) == 0
    out, err = capsys.readouterr()
    assert len(urls) == 1 and urls[0].startswith("http://127.0.0.1:") and urls[0] in out
    assert "stopped" in err


def test_a_port_in_use_is_one_line(archive, capsys):
    with serving(str(archive)) as server:
        port = server.server_address[1]
        assert main(["view", str(archive), "--no-browser", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--port 0" in err


def test_an_archive_that_cannot_be_read_is_a_502(archive):
    with serving(str(archive)) as server:
        archive.unlink()  # gone after the server started: the page gets a status, not a hang
        status, _, body = get(server, "/archive", Range="bytes=0-15")
    assert status == 502
    assert b"cannot read the archive: FileNotFoundError" in body
