// The targets benchmark (benchmark/viewer_targets.py) keeps working: a --quick run, on small
// archives, drives the same steps through the browser. Its figures are not asserted here.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { PYTHON, ROOT } from "./helpers.mjs";

test("python -m benchmark.viewer_targets --quick runs every step", () => {
  const out = execFileSync(PYTHON, ["-m", "benchmark.viewer_targets", "--quick"], { cwd: ROOT, encoding: "utf8", timeout: 600_000 });
  for (const figure of [
    "GB archive and show its root",
    "first page of keys of a 20,000-key dict",
    "a key search in it",
    "heatmap of a 500 x 500 float64 array shown",
    "all its sample rows drawn; bytes read",
  ]) {
    assert.ok(out.includes(figure), `no row "${figure}" in:\n${out}`);
  }
  const report = JSON.parse(out.slice(out.indexOf("{")));
  assert.equal(report.steps.length, 4);
  assert.ok(report.big_served > 0 && report.big_served === report.open_big.total_bytes, "the server's count and the page's agree");
});
