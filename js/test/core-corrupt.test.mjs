import { test } from "node:test";
import assert from "node:assert/strict";
import { open, CorruptedError, UnsupportedVersionError } from "../dist/index.js";
import { crc32 } from "../dist/util/crc32.js";
import { parseNode } from "../dist/format/nodes.js";
import { fixture } from "./core-helpers.mjs";
import { encodeNode, framed } from "./support/craft.mjs";

const MAGIC = [0x89, 0x4d, 0x4c, 0x43, 0x0d, 0x0a, 0x1a, 0x0a];
const END_MAGIC = [0x89, 0x4d, 0x4c, 0x43, 0x2d, 0x54, 0x4f, 0x43];

function le(view, at, value, width) {
  for (let i = 0; i < width; i++) view[at + i] = Math.floor(value / 2 ** (8 * i)) & 0xff;
}

/** A 1.3 archive of `data` and `toc`, its root node at `rootPos` (`rootLen` bytes). */
function craft(data, toc, rootPos, rootLen) {
  const out = new Uint8Array(16 + data.length + toc.length + 64);
  out.set(MAGIC, 0);
  out[8] = 1;
  out[9] = 3;
  out.set(data, 16);
  out.set(toc, 16 + data.length);
  const t = 16 + data.length + toc.length;
  le(out, t, 16, 8);
  le(out, t + 8, data.length, 8);
  le(out, t + 16, 16 + data.length, 8);
  le(out, t + 24, toc.length, 8);
  le(out, t + 32, rootPos, 8);
  le(out, t + 40, rootLen, 4);
  le(out, t + 44, crc32(data), 4);
  le(out, t + 48, 0, 4);
  const covered = new Uint8Array(16 + 52);
  covered.set(out.subarray(0, 16));
  covered.set(out.subarray(t, t + 52), 16);
  le(out, t + 52, crc32(covered), 4);
  out.set(END_MAGIC, t + 56);
  return out;
}

const DATA = Uint8Array.from([0x93, 1, 2, 3]); // [1, 2, 3]

function withRoot(nodeValue, data = DATA) {
  const node = framed(encodeNode(nodeValue));
  return craft(data, node, 0, node.length);
}

test("a sound crafted archive reads", async () => {
  const reader = await open(withRoot([1, 3, [0, 2], [1, 3, 4], {}]));
  assert.deepStrictEqual(await reader.read("1"), 2);
  assert.deepStrictEqual(await reader.read(), [1, 2, 3]);
});

test("an unknown node type is UnsupportedVersionError naming it", async () => {
  await assert.rejects(open(withRoot([13, 3])), (e) => e instanceof UnsupportedVersionError && /type 13/.test(e.message));
});

test("a node failing its checksum is CorruptedError", async () => {
  const bytes = withRoot([1, 3, [0, 2], [1, 3, 4], {}]);
  bytes[16 + 4 + 2] ^= 1;
  await assert.rejects(open(bytes), (e) => e instanceof CorruptedError && /checksum/.test(e.message));
});

test("malformed nodes are CorruptedError", async () => {
  const bad = [
    [1, 3, [0, 0], [1, 3, 4], {}], // starts not increasing
    [1, 3, [0, 2], [1, 3], {}], // offs too short
    [1, 3, [1], [1, 4], {}], // starts[0] != 0
    [1, 3, [0, 2], [0, 3, 4], {}], // offs[0] not a header size
    [1, 4, [0], [1, 4], {}], // n larger than the bytes
    [1, 3, [0], [1, 4], new Map([[0, [0, 5]]])], // a kid span of 3 items; a reference that does not precede
    [1, 3, [0, 2], [1, 3, 4], new Map([[1, [-5, 5]]])], // a forward reference
    [1, "x", [0], [1, 4], {}],
    [1, Float64Array.of(3), [0], [1, 4], {}], // a float (3.0) where an int belongs
    [1, 3, [0], [1, 4], { 0: [1, 1] }], // a str key where a span index belongs
    [4, [], 0],
    [4, [[1, 3, 2]], 0], // a stride of 2 bytes: the span does not match
    [5, 1, 0],
    [2, ["a", "a"], [1, 3, 5], [2, 4], {}],
    [8, ["a"], 1, [2], [0], {}],
    [6, 3, [0], [1, 4], {}, {}, 0, 4, 0, [1, 10], 0],
  ];
  for (const node of bad) {
    await assert.rejects(open(withRoot(node)), CorruptedError, JSON.stringify(node));
  }
});

test("a node that does not match its container is CorruptedError", async () => {
  await assert.rejects(open(withRoot([1, 3, [0, 2], [1, 3, 4], {}], Uint8Array.from([0x83, 1, 2, 3]))), CorruptedError);
  // a key that is not the one the node names: found when the entry is read
  const reader = await open(withRoot([2, ["a"], [1, 4], [3], {}], Uint8Array.from([0x81, 0xa1, 0x62, 1])));
  await assert.rejects(reader.read("a"), (e) => e instanceof CorruptedError && /key/.test(e.message));
});

test("a damaged page table or block of a big dict is CorruptedError at lookup", async () => {
  const bytes = fixture("core-big.mlc");
  const probe = await open(bytes);
  const info = await probe.info();
  const root = parseNode(await probe.body.readToc(probe.body.root.pos, probe.body.root.len), probe.body.root);
  const kid = root.kids.get(root.keys.indexOf("strs"));
  const strs = parseNode(await probe.body.readToc(kid.pos, kid.len), kid);
  await probe.close();
  const region = info.toc_offset + strs.region.pos;
  const offsLen = (Math.ceil(strs.n / 2 ** strs.blockBits) + 1) * strs.offsWidth;
  // block offsets, page table, records (one page of them)
  for (const at of [region + 3, region + offsLen + 8, region + strs.region.len - 5]) {
    const damaged = bytes.slice();
    damaged[at] ^= 0x40;
    const reader = await open(damaged);
    const results = [];
    for (let i = 1; i < 1100; i++) {
      const k = `k${i}`;
      results.push(await reader.read(["strs", k]).then(() => "ok", (e) => e));
    }
    assert.ok(results.some((r) => r instanceof CorruptedError), `damage at ${at}: ${results}`);
    assert.ok(results.every((r) => r === "ok" || r instanceof CorruptedError));
    await reader.close();
  }
});

test("truncated data inside a span is CorruptedError naming the offset", async () => {
  const reader = await open(withRoot([1, 3, [0, 2], [1, 3, 4], {}], Uint8Array.from([0x93, 1, 0xcd, 3])));
  await assert.rejects(reader.read("0"), (e) => e instanceof CorruptedError && /offset/.test(e.message));
});

test("a kid's key or container header that does not match its node is CorruptedError, after one read", async () => {
  // core-t64.mlc: the root's key "ints" at data offset 3 (5 bytes), its list (a node of its
  // own, at TOC offset 0) at 8, starting with an array16 header of 25 items
  const bytes = fixture("core-t64.mlc");
  assert.deepEqual([...bytes.subarray(16 + 3, 16 + 11)], [0xa4, 0x69, 0x6e, 0x74, 0x73, 0xdc, 0, 25]);
  const cases = [
    [19 + 3, 0x54, "dict entry at data offset 3 does not hold the key its TOC node names"], // "inTs"
    [19 + 7, 24, "container at data offset 8 does not match its TOC node at offset 0"], // 24 items
  ];
  for (const [at, byte, message] of cases) {
    const bad = bytes.slice();
    bad[at] = byte;
    const reader = await open(bad);
    const before = reader.stats.requests;
    await assert.rejects(reader.lazy("ints"), (e) => e instanceof CorruptedError && e.message === message);
    // the key and the header in one read (the node too, from bytes in memory)
    assert.equal(reader.stats.requests - before, message.startsWith("dict") ? 1 : 2);
    await reader.close();
  }
});
