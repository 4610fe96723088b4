import { test } from "node:test";
import assert from "node:assert/strict";
import { open, NotAnArchiveError } from "../dist/index.js";

test("bytes that are not an archive give NotAnArchiveError", async () => {
  await assert.rejects(open(new Uint8Array(100)), NotAnArchiveError);
});

test("a golden archive opens", async () => {
  const reader = await open(new URL("../../tests/golden/small-dict.mlc", import.meta.url).pathname);
  assert.equal(reader.body.major, 1);
  await reader.close();
});
