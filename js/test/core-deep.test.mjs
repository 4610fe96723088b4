import { test } from "node:test";
import assert from "node:assert/strict";
import { open } from "../dist/index.js";
import { fixture } from "./core-helpers.mjs";

const DEPTH = 3000; // tests/test_depth.py: three times Python's default recursion limit

function unnest(value, depth) {
  for (let i = 0; i < depth; i++) value = value[0];
  return value;
}

for (const name of ["core-deep-t0.mlc", "core-deep-t8192.mlc"]) {
  test(`${name}: a value ${DEPTH} levels deep reads whole, by view and by a path of ${DEPTH} segments`, async () => {
    const reader = await open(fixture(name));
    const whole = await reader.read();
    assert.equal(unnest(whole.deep, DEPTH), 1);
    assert.deepStrictEqual(whole.pad, [1, 2]);
    assert.equal(unnest(await reader.read("deep"), DEPTH), 1);
    assert.equal(unnest(await reader.read(["deep", ...Array(1500).fill(0)]), DEPTH - 1500), 1);
    assert.equal(await reader.read(["deep", ...Array(DEPTH).fill(0)]), 1);
    assert.equal(await reader.read("deep/" + Array(DEPTH).fill("-1").join("/")), 1);
    await assert.rejects(reader.read(["deep", ...Array(DEPTH).fill(0), 0]), TypeError);
    await reader.close();
  });
}
