import { test } from "node:test";
import assert from "node:assert/strict";
import { open } from "../dist/index.js";
import { GOLDEN, loadJson, untag, viaViews } from "./core-helpers.mjs";

const golden = loadJson("core-golden.json.gz");

for (const [name, tagged] of Object.entries(golden)) {
  test(`golden ${name}: read() is the value Python decodes`, async () => {
    const reader = await open(new URL(name, GOLDEN).pathname);
    try {
      const expected = untag(tagged);
      assert.deepStrictEqual(await reader.read(), expected);
      assert.deepStrictEqual(await reader.read(""), expected);
      assert.deepStrictEqual(await reader.read([]), expected);
      assert.deepStrictEqual(await (await reader.lazy()).value(), expected);
    } finally {
      await reader.close();
    }
  });

  test(`golden ${name}: every part read through lazy views`, async () => {
    const reader = await open(new URL(name, GOLDEN).pathname);
    try {
      assert.deepStrictEqual(await viaViews(await reader.lazy()), untag(tagged));
    } finally {
      await reader.close();
    }
  });
}

test("golden archives are all covered (numpy and compressed ones by their own tests)", () => {
  assert.ok(Object.keys(golden).length >= 18);
});
