import { test } from "node:test";
import assert from "node:assert/strict";
import { open } from "../dist/index.js";
import { INDEX_MEMORY } from "../dist/read/lookup.js";

const GOLDEN = new URL("../../tests/golden/hash-dict.mlc", import.meta.url).pathname;

// A dict of millions of keys has block offsets and a page table too big to keep: its
// lookups read the page table's slot and the block's offsets each time. Force that path on a
// small dict and check it finds what the kept-tables path finds.
test("a big dict's lookups without its tables in memory find every key", async () => {
  const kept = await open(GOLDEN);
  const whole = await kept.read("");
  const keys = Object.keys(whole);
  const saved = { ...INDEX_MEMORY };
  INDEX_MEMORY.tables = 0;
  INDEX_MEMORY.records = 0;
  try {
    const lean = await open(GOLDEN);
    const view = await lean.lazy("");
    for (const k of keys) assert.deepEqual(await (await view.get(k)).value(), whole[k], k);
    await assert.rejects(view.get("no such key"), { name: "KeyNotFoundError" });
    await lean.close();
  } finally {
    Object.assign(INDEX_MEMORY, saved);
    await kept.close();
  }
});
