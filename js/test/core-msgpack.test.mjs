import { test } from "node:test";
import assert from "node:assert/strict";
import { encodeKey, itemEnd, containerHeader, arrayHeader, mapHeader } from "../dist/format/msgpack.js";
import { baseHash, mix, slotsOf } from "../dist/read/lookup.js";
import { crc32 } from "../dist/util/crc32.js";
import { loadJson, untag } from "./core-helpers.mjs";

const hex = (u) => Buffer.from(u).toString("hex");
const fuse = loadJson("core-fuse.json");

test("keys encode in the smallest form, as msgspec encodes them", () => {
  for (const c of fuse) assert.equal(hex(encodeKey(untag(c.key))), c.kb, JSON.stringify(c.key));
  const cases = [
    [127, "7f"], [128, "cc80"], [255, "ccff"], [256, "cd0100"], [65536, "ce00010000"], [2 ** 32, "cf0000000100000000"],
    [-32, "e0"], [-33, "d0df"], [-128, "d080"], [-129, "d1ff7f"], [-32769, "d2ffff7fff"], [-(2 ** 31) - 1, "d3ffffffff7fffffff"],
    [2n ** 64n - 1n, "cfffffffffffffffff"], [-(2n ** 63n), "d38000000000000000"], ["", "a0"], ["a".repeat(31), "bf" + "61".repeat(31)],
    ["a".repeat(32), "d920" + "61".repeat(32)], ["a".repeat(256), "da0100" + "61".repeat(256)],
  ];
  for (const [k, want] of cases) assert.equal(hex(encodeKey(k)), want, String(k));
  assert.equal(encodeKey(2n ** 64n), null);
  assert.equal(encodeKey(-(2n ** 63n) - 1n), null);
  assert.equal(encodeKey(1.5), null);
  assert.equal(encodeKey("\ud800"), null);
});

test("the fuse hash matches msglc/format/fuse.py", () => {
  for (const c of fuse) {
    const kb = Uint8Array.from(Buffer.from(c.kb, "hex"));
    assert.equal(crc32(kb), c.crc);
    assert.equal(baseHash(kb), BigInt(c.base));
    const h = mix(BigInt(c.base), BigInt(c.seed));
    assert.equal(h, BigInt(c.h), `${c.kb} seed ${c.seed}`);
    assert.deepStrictEqual(slotsOf(h, 10, 37), c.slots);
  }
});

test("itemEnd steps over items by their headers", () => {
  const b = Uint8Array.from([0x92, 0x81, 0xa1, 0x61, 0xc4, 2, 9, 9, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 7]);
  assert.equal(itemEnd(b, 0), 17);
  assert.equal(itemEnd(b, 17), 18);
  assert.equal(itemEnd(b.subarray(0, 3), 0), -1); // a header past the buffer
  assert.equal(itemEnd(b.subarray(0, 10), 0), 17); // the last item ends past it: the caller checks
  assert.equal(itemEnd(Uint8Array.from([0xdb, 0, 0, 1, 0]), 0), 5 + 256); // past the buffer: the caller checks
  assert.throws(() => itemEnd(Uint8Array.from([0x91, 0xc1]), 0));
});

test("container headers", () => {
  assert.deepStrictEqual(containerHeader(arrayHeader(3), 0, 0), { isMap: false, count: 3, size: 1 });
  assert.deepStrictEqual(containerHeader(mapHeader(300), 0, 0), { isMap: true, count: 300, size: 3 });
  assert.deepStrictEqual(containerHeader(arrayHeader(70000), 0, 0), { isMap: false, count: 70000, size: 5 });
  assert.throws(() => containerHeader(Uint8Array.from([0xc0]), 0, 5), /data offset 5/);
});
