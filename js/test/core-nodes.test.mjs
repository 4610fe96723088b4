import { test } from "node:test";
import assert from "node:assert/strict";
import { open } from "../dist/index.js";
import { Recording, fixture, loadJson, untag, viaViews } from "./core-helpers.mjs";

const expected = loadJson("core-expected.json.gz");

for (const [name, tagged] of Object.entries(expected)) {
  test(`${name}: read() and lazy views give the value Python decodes`, async () => {
    const reader = await open(fixture(name));
    try {
      const want = untag(tagged);
      assert.deepStrictEqual(await reader.read(), want);
      assert.deepStrictEqual(await viaViews(await reader.lazy()), want);
      const root = await reader.lazy();
      for (const key of await root.keys()) assert.deepStrictEqual(await reader.read([key]), want instanceof Map ? want.get(key) : want[key]);
    } finally {
      await reader.close();
    }
  });
}

/** The node types an archive holds, from its TOC. */
async function nodeTypes(reader) {
  const { parseNode } = await import("../dist/format/nodes.js");
  const types = new Set();
  const stack = [reader.body.root];
  const seen = new Set();
  while (stack.length) {
    const ref = stack.pop();
    if (!ref.len || seen.has(ref.pos)) continue;
    seen.add(ref.pos);
    const node = parseNode(await reader.body.readToc(ref.pos, ref.len), ref);
    types.add(node.type);
    for (const kid of node.kids?.values() ?? []) stack.push(kid);
  }
  return types;
}

test("the fixtures hold every node kind a plain archive can hold but 3 and 5", async () => {
  const all = new Set();
  for (const name of Object.keys(expected)) {
    const reader = await open(fixture(name));
    for (const t of await nodeTypes(reader)) all.add(t);
    await reader.close();
  }
  for (const t of [1, 2, 4, 6, 7, 8, 9]) assert.ok(all.has(t), `node type ${t}`);
});

test("thresholds 0 and 1 give every non-empty container a node; 8192 almost none", async () => {
  const t0 = await open(fixture("core-t0.mlc"));
  assert.equal((await t0.lazy("rows/3")).constructor.name === "PlainView", false);
  assert.equal((await t0.lazy("nested/a/b")).kind, "dict");
  assert.equal((await t0.lazy("matrix")).kind, "list");
  const t8192 = await open(fixture("core-t8192.mlc"));
  assert.equal((await t8192.lazy("rows/3")).constructor.name, "PlainView");
  await t0.close();
  await t8192.close();
});

test("views: kinds, lengths, keys in stored order, negative indices", async () => {
  const reader = await open(fixture("core-t64.mlc"));
  const root = await reader.lazy();
  assert.equal(root.kind, "dict");
  assert.equal(root.path, "");
  assert.deepStrictEqual((await root.keys()).slice(0, 3), ["ints", "floats", "strs"]);
  assert.deepStrictEqual(await root.keys(1, 3), ["floats", "strs"]);
  const rows = await root.get("rows");
  assert.equal(rows.kind, "list");
  assert.equal(rows.length, 40);
  assert.equal(rows.path, "rows");
  const last = await rows.get(-1);
  assert.equal(last.path, "rows/39");
  assert.deepStrictEqual(await (await last.get("name")).value(), "row-39");
  const matrix = await reader.lazy("matrix");
  assert.equal(matrix.length, 12);
  assert.deepStrictEqual(await (await matrix.get(-1)).value(), [110, 111, 112, 113, 114, 115]);
  assert.equal(await (await (await matrix.get(3)).get(-2)).value(), 34);
  const scalar = await reader.lazy("floats/1");
  assert.equal(scalar.kind, "value");
  assert.equal(scalar.length, 0);
  await assert.rejects(scalar.keys(), TypeError);
  await reader.close();
});

test("big dicts: keys(start, stop) reads only the spans that cover them", async () => {
  const reader = await open(fixture("core-big.mlc"));
  const strs = await reader.lazy("strs");
  assert.equal(strs.kind, "dict");
  assert.equal(strs.length, 1100);
  const all = await strs.keys();
  assert.equal(all.length, 1100);
  assert.deepStrictEqual(all.slice(0, 3), ["k0", "k1", "k2"]);
  const before = reader.stats.bytes;
  assert.deepStrictEqual(await strs.keys(500, 503), ["k500", "k501", "k502"]);
  assert.ok(reader.stats.bytes - before < 1000, `read ${reader.stats.bytes - before} bytes for 3 keys`);
  assert.deepStrictEqual(await strs.keys(1098), ["k1098", "k1099"]);
  const ints = await reader.lazy("ints");
  const intKeys = await ints.keys(0, 2);
  assert.deepStrictEqual(intKeys, [-3000, -2993]);
  assert.deepStrictEqual((await ints.keys()).slice(-2), [1099511627776, -1099511627776]);
  await reader.close();
});


test("a second read of a path reads no TOC node again", async () => {
  const source = new Recording(fixture("core-t0.mlc"));
  const reader = await open(source);
  const info = await reader.info();
  const inToc = ([offset]) => offset >= info.toc_offset && offset < info.toc_offset + info.toc_size;
  assert.equal(await reader.read("rows/3/name"), "row-3");
  const first = source.log.length;
  assert.equal(await reader.read("rows/3/name"), "row-3");
  assert.deepStrictEqual(source.log.slice(first).filter(inToc), []);
  await reader.close();
});

test("a big-dict lookup reads its index tables once, then a page and a block", async () => {
  const source = new Recording(fixture("core-big.mlc"));
  const reader = await open(source);
  const info = await reader.info();
  const inToc = ([offset]) => offset >= info.toc_offset && offset < info.toc_offset + info.toc_size;
  assert.equal(await reader.read("strs/k17"), 17);
  const first = source.log.length;
  assert.equal(await reader.read("strs/k18"), 18);
  const second = source.log.slice(first);
  // one page of records (unless k18 shares k17's page, then none) and one block
  assert.ok(second.filter(inToc).length <= 1, JSON.stringify(second));
  assert.equal(second.filter((r) => !inToc(r)).length, 1);
  const third = source.log.length;
  assert.equal(await reader.read("strs/k18"), 18);
  assert.deepStrictEqual(source.log.slice(third).filter(inToc), []);
  await reader.close();
});

test("info() has Python's keys and values", async () => {
  const reader = await open(new URL("../../tests/golden/hash-dict.mlc", import.meta.url).pathname);
  const info = await reader.info();
  assert.deepStrictEqual(info.version, [1, 5]);
  assert.equal(info.file_size, 21725);
  assert.equal(info.data_offset, 16);
  assert.equal(info.data_size, 15153);
  assert.equal(info.toc_offset, 15169);
  assert.equal(info.toc_size, 6492);
  assert.equal(info.free_space, 0);
  assert.equal(info.threshold, 64);
  assert.equal(info.data_crc, 3284849584);
  assert.equal(info.compression, null);
  assert.equal(info.stored_data_size, 15153);
  assert.equal(info.format, "msglc");
  assert.equal(info.slack, 0);
  assert.deepStrictEqual(info.root, {
    kind: "hash-indexed dict",
    position: 19989,
    size: 1672,
    encoded_size: 15153,
    length: 1200,
    blocks: 283,
    dims: [],
    item_size: 0,
    children: 0,
  });
  const small = await open(new URL("../../tests/golden/small-dict.mlc", import.meta.url).pathname);
  assert.equal((await small.info()).root, null);
  await small.close();
  await reader.close();
});

test("a closed reader refuses reads", async () => {
  const reader = await open(fixture("core-t64.mlc"));
  const rows = await reader.lazy("rows");
  await reader.close();
  await assert.rejects(reader.read("rows/1"));
  await assert.rejects(rows.get(1));
});

test("opening reads the header and the trailer, and the root's node and header when it has one", async () => {
  const small = new Recording(new Uint8Array((await import("node:fs")).readFileSync(new URL("../../tests/golden/small-dict.mlc", import.meta.url))));
  const reader = await open(small);
  assert.equal(small.log.length, 2);
  assert.deepStrictEqual(await reader.read("b"), [true, null, "x"]);
  await reader.close();
  const big = new Recording(fixture("core-big.mlc"));
  const r2 = await open(big);
  assert.equal(big.log.length, 4);
  await r2.close();
});

test("a decoded dict with keys dtype, shape and data is a dict", async () => {
  const { PlainView } = await import("../dist/read/views.js");
  const v = new PlainView({ dtype: "<f8", shape: [1], data: [1] }, "");
  assert.equal(v.kind, "dict");
  assert.equal(v.length, 3);
});

test("info() equals Python's info() for every fixture, an appended one included", async () => {
  const { loadJson: load } = await import("./core-helpers.mjs");
  const infos = load("core-info.json");
  assert.ok("core-appended.mlc" in infos);
  for (const [name, want] of Object.entries(infos)) {
    const reader = await open(fixture(name));
    const got = await reader.info();
    for (const [k, v] of Object.entries(want)) assert.deepStrictEqual(got[k], v, `${name}: ${k}`);
    await reader.close();
  }
});

test("a key __proto__ is read as an own property, never as the prototype", async () => {
  const reader = await open(fixture("core-t64.mlc"));
  const whole = await reader.read();
  assert.ok(Object.hasOwn(whole, "__proto__"));
  assert.equal(Object.getPrototypeOf(whole), Object.prototype);
  assert.deepStrictEqual(Object.getOwnPropertyDescriptor(whole, "__proto__").value, { polluted: true });
  assert.equal(await reader.read("__proto__/polluted"), true);
  assert.equal({}.polluted, undefined);
  await reader.close();
});
