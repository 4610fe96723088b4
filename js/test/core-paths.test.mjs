import { test } from "node:test";
import assert from "node:assert/strict";
import { open, KeyNotFoundError, IndexOutOfRangeError } from "../dist/index.js";
import { fixture, loadJson, untag, PY_ERRORS } from "./core-helpers.mjs";

const answers = loadJson("core-paths.json");

for (const [name, cases] of Object.entries(answers)) {
  test(`${name}: paths resolve as Python resolves them`, async () => {
    const reader = await open(fixture(name));
    try {
      for (const c of cases) {
        const label = JSON.stringify(c.path);
        if ("error" in c) {
          await assert.rejects(reader.read(c.path), (e) => {
            assert.equal(e.name, PY_ERRORS[c.error], `${label}: ${e.name}: ${e.message}`);
            return true;
          }, label);
        } else {
          assert.deepStrictEqual(await reader.read(c.path), untag(c.value), label);
        }
      }
    } finally {
      await reader.close();
    }
  });
}

test("KeyNotFoundError and IndexOutOfRangeError name the path", async () => {
  const reader = await open(fixture("core-big.mlc"));
  await assert.rejects(reader.read("strs/nope"), (e) => {
    assert.ok(e instanceof KeyNotFoundError);
    assert.equal(e.path, "strs/nope");
    assert.equal(e.key, "nope");
    assert.match(e.message, /strs\/nope/);
    return true;
  });
  await assert.rejects(reader.read(["ints", 5]), (e) => e instanceof KeyNotFoundError && e.path === "ints/5");
  const t64 = await open(fixture("core-t64.mlc"));
  await assert.rejects(t64.read("rows/40/name"), (e) => {
    assert.ok(e instanceof IndexOutOfRangeError);
    assert.equal(e.path, "rows/40");
    assert.equal(e.index, 40);
    return true;
  });
  await assert.rejects(t64.read("nested/a/b/c/2/zz"), (e) => e instanceof KeyNotFoundError && e.path === "nested/a/b/c/2/zz");
  await reader.close();
  await t64.close();
});

test("lazy() takes the same paths, and a view's get() takes keys and negative indices", async () => {
  const reader = await open(fixture("core-t0.mlc"));
  const view = await reader.lazy(["rows", -2]);
  assert.equal(view.path, "rows/38");
  assert.equal(await (await view.get("id")).value(), 38);
  assert.deepStrictEqual(await (await reader.lazy("int_keys")).keys(), [1, 2, -3]);
  assert.equal(await (await (await reader.lazy("int_keys")).get(-3)).value(), "minus three");
  assert.equal(await (await (await reader.lazy("int_keys")).get(-3n)).value(), "minus three");
  await assert.rejects((await reader.lazy("int_keys")).get("1"), KeyNotFoundError);
  await reader.close();
});
