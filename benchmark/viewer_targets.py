"""The viewer's targets (issue 34), measured in headless Chromium against ``msglc view``'s server:

1. opening a 1 GB archive and showing its root reads at most 1 MB (bytes served, counted by the
   server, and bytes the page's reader counted);
2. a 2,000,000-key dict's first page of keys, and a key search, each shown in <= 200 ms;
3. a 5000 x 5000 array's heatmap shown in <= 1 s, reading only the rows its pixels need.

    python -m benchmark.viewer_targets [--quick] [--keep DIR]

Needs the viewer built (``cd viewer && npm ci && npm run build``) and Chromium
(/usr/bin/chromium, or $CHROMIUM). Writes the archives under a temporary folder (about 1.3 GB;
--quick: small sizes, for a smoke run). Prints a Markdown table and the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

import msglc
from msglc.cli.view import ViewServer, archive_for

from .targets.memory import make_big

ROOT = Path(__file__).resolve().parent.parent
VIEWER = ROOT / "viewer"
DRIVER = Path(__file__).with_name("viewer_driver.mjs")


def build_archives(folder: Path, quick: bool) -> dict[str, Any]:
    """The benchmark's largest archive (memory.make_big, about 1 GB) and one with a 2M-key dict
    and a 5000 x 5000 float array; each write timed."""
    big_mb, keys, side = (32, 20_000, 500) if quick else (1024, 2_000_000, 5000)
    out: dict[str, Any] = {"big_mb": big_mb, "keys": keys, "side": side}
    t = time.perf_counter()
    make_big(str(folder / "big.mlc"), big_mb)
    out["big_write_s"] = time.perf_counter() - t
    out["big_size"] = (folder / "big.mlc").stat().st_size
    t = time.perf_counter()
    rng = np.random.default_rng(5)
    y, x = np.mgrid[0:side, 0:side]
    image = np.sin(x / (side / 12)) * np.cos(y / (side / 9)) + rng.normal(0, 0.05, (side, side))
    msglc.dump(folder / "targets.mlc", {"dict": {f"key-{i}": i for i in range(keys)}, "image": image})
    out["targets_write_s"] = time.perf_counter() - t
    out["targets_size"] = (folder / "targets.mlc").stat().st_size
    return out


class Served:
    """``msglc view``'s server in this process, so the bytes it sends can be counted."""

    def __init__(self, path: Path) -> None:
        self.server = ViewServer(archive_for(str(path)), 0)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.server.archive.close()


def drive(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    plan = {"chromium": chromium, "viewerDir": str(VIEWER), "steps": steps}
    run = subprocess.run(["node", str(DRIVER), json.dumps(plan)], capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        raise SystemExit(f"the browser driver failed:\n{run.stderr}")
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    for row in rows:
        if "errors" in row:
            raise SystemExit(f"the page raised: {row['errors']}")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small archives: a smoke run, not the targets")
    p.add_argument("--keep", type=Path, help="write (or reuse) the archives in this folder and keep them")
    p.add_argument("--screenshots", type=Path, help="save a screenshot of each step here")
    args = p.parse_args(argv)
    if not (VIEWER / "node_modules" / "playwright-core").exists():
        raise SystemExit("run `cd viewer && npm ci` first (the driver uses its playwright-core)")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="msglc-viewer-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if (folder / "targets.mlc").exists() and (folder / "big.mlc").exists():
            sizes = json.loads((folder / "sizes.json").read_text())
        else:
            sizes = build_archives(folder, args.quick)
            (folder / "sizes.json").write_text(json.dumps(sizes))
        shots = args.screenshots
        if shots:
            shots.mkdir(parents=True, exist_ok=True)

        def shot(name: str) -> dict[str, str]:
            return {"screenshot": str(shots / f"{name}.png")} if shots else {}

        big = Served(folder / "big.mlc")
        try:
            (opened,) = drive(
                [
                    {
                        "name": "open 1 GB",
                        "do": "open",
                        "url": big.url,
                        "children": ["blobs", "records", "meta"],
                        **shot("big-root"),
                    }
                ]
            )
            big_served = big.server.served
        finally:
            big.close()
        targets = Served(folder / "targets.mlc")
        try:
            steps = drive(
                [
                    {"name": "open", "do": "open", "url": targets.url, "children": ["dict", "image"]},
                    {"name": "first page of keys", "do": "expand", "path": "dict", "page": 100, **shot("dict-page")},
                    {
                        "name": "key search",
                        "do": "search",
                        "path": "dict",
                        "key": f"key-{sizes['keys'] - 7}",
                        **shot("dict-search"),
                    },
                    {
                        "name": "heatmap",
                        "do": "select",
                        "path": "image",
                        "wait": "canvas.heatmap",
                        "complete": "canvas.heatmap[data-complete]",
                        **shot("heatmap"),
                    },
                ]
            )
        finally:
            targets.close()
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)

    by = {s["step"]: s for s in steps}
    side = sizes["side"]
    rows_needed = -(-side // -(-side // 560))  # the heatmap's sample rows (560 at most)
    heat_bytes = by["heatmap"]["bytes"]
    row_bytes = rows_needed * side * 8  # whole sample rows: the columns between are too close to skip
    table = [
        (
            f"bytes served to open the {sizes['big_size'] / 1e9:.2f} GB archive and show its root",
            f"{big_served:,} B ({opened['requests']} requests)",
            "<= 1 MB",
            big_served <= 1 << 20,
        ),
        (
            f"first page of keys of a {sizes['keys']:,}-key dict",
            f"{by['first page of keys']['shown_ms']:.0f} ms",
            "<= 200 ms",
            by["first page of keys"]["shown_ms"] <= 200,
        ),
        (
            "a key search in it",
            f"{by['key search']['shown_ms']:.0f} ms ({by['key search']['requests']} requests)",
            "<= 200 ms",
            by["key search"]["shown_ms"] <= 200,
        ),
        (
            f"heatmap of a {side} x {side} float64 array shown (every 4th sample row first)",
            f"{by['heatmap']['shown_ms']:.0f} ms",
            "<= 1 s",
            by["heatmap"]["shown_ms"] <= 1000,
        ),
        (
            "... all its sample rows drawn; bytes read",
            f"{by['heatmap']['complete_ms']:.0f} ms; {heat_bytes / 1e6:.1f} MB in {by['heatmap']['requests']} requests"
            f" ({rows_needed} of {side} rows: {row_bytes / 1e6:.1f} MB)",
            "only the rows needed",
            heat_bytes <= row_bytes + (1 << 20),
        ),
    ]
    print(
        f"archives: {sizes['big_size'] / 1e9:.2f} GB written in {sizes['big_write_s']:.0f} s; "
        f"{sizes['targets_size'] / 1e6:.0f} MB (dict and image) in {sizes['targets_write_s']:.0f} s"
    )
    print("| figure | measured | target | verdict |")
    print("| --- | --- | --- | --- |")
    for figure, measured, target, ok in table:
        print(f"| {figure} | {measured} | {target} | {'met' if ok else 'MISSED'} |")
    print(json.dumps({"sizes": sizes, "open_big": opened, "big_served": big_served, "steps": steps}, indent=1))
    if args.quick:
        return 0
    return 0 if all(ok for *_, ok in table) else 1


if __name__ == "__main__":
    sys.exit(main())
