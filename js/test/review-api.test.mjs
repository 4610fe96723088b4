// API edges found by the adversarial review of the reader (keys order, int keys as numbers).
import { test } from "node:test";
import assert from "node:assert/strict";
import { open } from "../dist/index.js";
import { fixture } from "./core-helpers.mjs";

// make_review.py: {"small": {"b": 1, "10": 2, "a": 3, "2": 4},
//                  "ik": {1: "i", "1": "s", 2**60: "b", -(2**63): "min"}}
const ARCHIVES = ["review-t0.mlc", "review-t8192.mlc"];

for (const name of ARCHIVES) {
  test(`${name}: keys() of a dict gives the stored order, integer-like str keys included`, async () => {
    const r = await open(fixture(name));
    try {
      const small = await r.lazy("small");
      assert.deepEqual(await small.keys(), ["b", "10", "a", "2"]);
      assert.deepEqual(await small.keys(1, 3), ["10", "a"]);
      assert.deepEqual(await small.keys(-2), ["a", "2"]);
      // the value itself is a plain object: every key there, whatever order JS lists them in
      assert.deepEqual(await small.value(), { b: 1, 10: 2, a: 3, 2: 4 });
    } finally {
      await r.close();
    }
  });

  test(`${name}: get() takes an int key beyond 2^53 as a number or a bigint`, async () => {
    const r = await open(fixture(name));
    try {
      const ik = await r.lazy("ik");
      assert.equal(await (await ik.get(2n ** 60n)).value(), "b");
      assert.equal(await (await ik.get(2 ** 60)).value(), "b");
      assert.equal(await (await ik.get(-(2 ** 63))).value(), "min");
      assert.equal(await (await ik.get(1)).value(), "i");
      assert.equal(await (await ik.get(1n)).value(), "i");
      assert.equal(await (await ik.get("1")).value(), "s");
      await assert.rejects(ik.get(2 ** 61), { name: "KeyNotFoundError" });
    } finally {
      await r.close();
    }
  });
}
