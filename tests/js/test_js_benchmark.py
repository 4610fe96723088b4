"""``python -m benchmark.js_targets`` runs end to end (on small data: its figures are not
checked here, only that every target gets its row)."""

from __future__ import annotations

import subprocess
import sys

from jsread import ROOT, require_dist


def test_the_js_targets_script_prints_every_row():
    require_dist()
    small = ["--n", "120", "--keys", "3000", "--records", "800", "--reads", "60"]
    proc = subprocess.run(
        [sys.executable, "-m", "benchmark.js_targets", *small], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]  # 1: a target missed, on data this small
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]
    figures = " ".join(rows)
    for what in (
        "open the 120x120 matrix",
        "reader.read([i, j])",
        'reader.read(["table", k])',
        "storage reads per key",
    ):
        assert what in figures, proc.stdout
    assert sum("HTTP" in r for r in rows) == 5, proc.stdout
    assert sum("frames decompressed" in r for r in rows) == 2, proc.stdout
