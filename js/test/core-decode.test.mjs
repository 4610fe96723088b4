import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeValue, decodeItems, decodeEntries, MAX_DEPTH } from "../dist/read/decode.js";
import { CorruptedError, UnsupportedVersionError } from "../dist/index.js";

const b = (...xs) => Uint8Array.from(xs);
const str = (s) => {
  const e = new TextEncoder().encode(s);
  return [0xa0 | e.length, ...e];
};

test("ints: numbers when safe, bigints beyond", () => {
  assert.equal(decodeValue(b(0x7f), 0), 127);
  assert.equal(decodeValue(b(0xe0), 0), -32);
  assert.equal(decodeValue(b(0xd0, 0x80), 0), -128);
  assert.equal(decodeValue(b(0xcd, 0xff, 0xff), 0), 65535);
  assert.equal(decodeValue(b(0xce, 0xff, 0xff, 0xff, 0xff), 0), 4294967295);
  assert.equal(decodeValue(b(0xd2, 0x80, 0, 0, 0), 0), -2147483648);
  assert.equal(decodeValue(b(0xcf, 0, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 0), 2 ** 53 - 1);
  assert.equal(decodeValue(b(0xcf, 0, 0x20, 0, 0, 0, 0, 0, 0), 0), 2n ** 53n);
  assert.equal(decodeValue(b(0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 0), 2n ** 64n - 1n);
  assert.equal(decodeValue(b(0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0), 0), -(2n ** 63n));
  assert.equal(decodeValue(b(0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 0), -1);
});

test("floats, nil, bools, strs, bins", () => {
  assert.equal(decodeValue(b(0xca, 0x3f, 0xc0, 0, 0), 0), 1.5);
  assert.equal(decodeValue(b(0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0), 0), 1.5);
  assert.equal(decodeValue(b(0xc0), 0), null);
  assert.equal(decodeValue(b(0xc2), 0), false);
  assert.equal(decodeValue(b(0xc3), 0), true);
  assert.equal(decodeValue(b(...str("héllo")), 0), "héllo");
  assert.equal(decodeValue(b(0xd9, 3, 0x61, 0x62, 0x63), 0), "abc");
  const bin = decodeValue(b(0xc4, 2, 1, 2), 0);
  assert.ok(bin instanceof Uint8Array);
  assert.deepStrictEqual([...bin], [1, 2]);
  assert.throws(() => decodeValue(b(0xa2, 0xc3, 0x28), 0), CorruptedError); // not UTF-8
});

test("maps: str keys give an object with own properties, a key __proto__ included", () => {
  const o = decodeValue(b(0x82, ...str("__proto__"), 0x81, ...str("x"), 1, ...str("a"), 2), 0);
  assert.equal(Object.getPrototypeOf(o), Object.prototype);
  assert.ok(Object.prototype.hasOwnProperty.call(o, "__proto__"));
  assert.deepStrictEqual(Object.keys(o), ["__proto__", "a"]);
  assert.deepStrictEqual(Object.getOwnPropertyDescriptor(o, "__proto__").value, { x: 1 });
  assert.equal(({}).x, undefined, "no pollution");
  assert.equal(o.a, 2);
});

test("maps: any other keys give a Map in stored order", () => {
  const m = decodeValue(b(0x83, 3, ...str("three"), ...str("a"), 1, 0xff, 0xc0), 0);
  assert.ok(m instanceof Map);
  assert.deepStrictEqual([...m], [[3, "three"], ["a", 1], [-1, null]]);
  assert.deepStrictEqual(decodeValue(b(0x80), 0), {});
});

test("timestamps: Date (UTC), sub-millisecond nanoseconds dropped", () => {
  // timestamp 32: 1 second
  assert.deepStrictEqual(decodeValue(b(0xd6, 0xff, 0, 0, 0, 1), 0), new Date(1000));
  // timestamp 64: 1.5 s + 999 ns
  const nsec = 500_000_999;
  const hi = nsec * 4;
  const t64 = b(0xd7, 0xff, (hi >>> 24) & 0xff, (hi >>> 16) & 0xff, (hi >>> 8) & 0xff, hi & 0xff, 0, 0, 0, 1);
  assert.deepStrictEqual(decodeValue(t64, 0), new Date(1500));
  // timestamp 96: before the epoch
  const t96 = b(0xc7, 12, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
  assert.deepStrictEqual(decodeValue(t96, 0), new Date(-1000));
  assert.throws(() => decodeValue(b(0xd4, 0xff, 0), 0), CorruptedError);
});

test("extensions other than -1 and 78 are UnsupportedVersionError", () => {
  assert.throws(() => decodeValue(b(0xd4, 5, 0), 0), UnsupportedVersionError);
  assert.throws(() => decodeValue(b(0xc7, 1, 0x7f, 0), 0), UnsupportedVersionError);
});

test("bad bytes are CorruptedError naming the offset, never another exception", () => {
  assert.throws(() => decodeValue(b(0xc1), 10), /offset 10/);
  assert.throws(() => decodeValue(b(0x92, 1), 0), CorruptedError); // truncated
  assert.throws(() => decodeValue(b(1, 2), 0), CorruptedError); // trailing bytes
  assert.throws(() => decodeValue(b(0xdb, 0xff, 0xff, 0xff, 0xff), 0), CorruptedError);
  // a count of 2^32 - 1 items in 5 bytes: refused before anything is allocated
  assert.throws(() => decodeValue(b(0xdd, 0xff, 0xff, 0xff, 0xff), 0), CorruptedError);
  assert.throws(() => decodeValue(b(0xdf, 0xff, 0xff, 0xff, 0xff), 0), CorruptedError);
  assert.throws(() => decodeValue(new Uint8Array(0), 0), CorruptedError);
});

test("nesting: deep values decode without recursion; past MAX_DEPTH is CorruptedError", () => {
  const deep = new Uint8Array(50_000 + 1).fill(0x91);
  deep[deep.length - 1] = 7;
  let v = decodeValue(deep, 0);
  for (let i = 0; i < 50_000; i++) v = v[0];
  assert.equal(v, 7);
  const bomb = new Uint8Array(MAX_DEPTH + 2).fill(0x91);
  bomb[bomb.length - 1] = 0;
  assert.throws(() => decodeValue(bomb, 0), CorruptedError);
});

test("spans: items and entries without a container header", () => {
  assert.deepStrictEqual(decodeItems(b(1, 2, ...str("x")), 3, 0), [1, 2, "x"]);
  assert.throws(() => decodeItems(b(1, 2), 3, 0), CorruptedError);
  assert.throws(() => decodeItems(b(1, 2, 3), 2, 0), CorruptedError);
  assert.deepStrictEqual(decodeEntries(b(...str("a"), 1), 1, 0), { a: 1 });
  assert.deepStrictEqual(decodeEntries(b(1, 1), 1, 0), new Map([[1, 1]]));
});
