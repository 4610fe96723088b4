// The page msglc view serves (msglc/cli/viewer.html, package data, so that an installed
// package needs no Node) must be the current build of this package: rebuild and copy it with
// `npm run build && npm run sync` after changing the viewer or the reader.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ROOT } from "./helpers.mjs";

test("msglc/cli/viewer.html is the current build of the viewer", () => {
  const built = readFileSync(join(ROOT, "viewer", "dist", "index.html"), "utf8");
  const packaged = readFileSync(join(ROOT, "msglc", "cli", "viewer.html"), "utf8");
  assert.ok(
    built === packaged,
    "msglc/cli/viewer.html differs from viewer/dist/index.html: run `npm run build && npm run sync` in viewer/ and commit it",
  );
});

test("the built page fetches nothing: no external script, style, font or image", () => {
  const built = readFileSync(join(ROOT, "viewer", "dist", "index.html"), "utf8");
  assert.doesNotMatch(built, /<script[^>]*\ssrc=/i);
  assert.doesNotMatch(built, /<link[^>]*rel=["']?stylesheet/i);
  assert.doesNotMatch(built, /url\(\s*["']?(https?:)?\/\//i);
  assert.doesNotMatch(built, /@import/i);
});
