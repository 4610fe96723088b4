// NumPy array values written by Python (js/test/fixtures/make_arrays.py) decoded whole and
// their headers checked as Python checks them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  parseArrayValue,
  parsePayloadHeader,
  parseArrayHeader,
  decodeArray,
  decodeArrayPayload,
  ArrayReader,
  parseExtHeader,
} from "../dist/read/array.js";
import { halfToFloat32 } from "../dist/format/dtype.js";
import { CorruptedError, UnsupportedVersionError } from "../dist/errors.js";

const fixtures = JSON.parse(readFileSync(new URL("./fixtures/arrays.json", import.meta.url), "utf8"));
const headers = JSON.parse(readFileSync(new URL("./fixtures/array-headers.json", import.meta.url), "utf8"));
const b64 = (s) => new Uint8Array(Buffer.from(s, "base64"));
const bytesOf = (t) => new Uint8Array(t.buffer, t.byteOffset, t.byteLength);

function open(name) {
  const value = b64(fixtures.arrays[name].value);
  const { header, start } = parseArrayValue(value, value.length, 0);
  return { header, elements: value.subarray(start), value };
}

const TYPED = {
  b: Uint8Array, i1: Int8Array, i2: Int16Array, i4: Int32Array, i8: BigInt64Array,
  u1: Uint8Array, u2: Uint16Array, u4: Uint32Array, u8: BigUint64Array,
  f2: Uint16Array, f4: Float32Array, f8: Float64Array, c8: Float32Array, c16: Float64Array,
  M8: BigInt64Array, m8: BigInt64Array,
};

function expectedClass(dtype) {
  if (dtype === null) return Uint8Array;
  const code = dtype.slice(1).replace(/\[.*\]$/, "");
  if (code === "b1") return Uint8Array;
  return TYPED[code] ?? Uint8Array;
}

test("every fixture array decodes to NumPy's elements, in host byte order", () => {
  for (const [name, fx] of Object.entries(fixtures.arrays)) {
    const { header, elements } = open(name);
    const arr = decodeArray(header, elements);
    if (fx.dtype !== null) assert.equal(arr.dtype, fx.dtype, name);
    assert.deepEqual(arr.shape, fx.shape, name);
    assert.ok(arr.data instanceof expectedClass(fx.dtype), `${name}: ${arr.data.constructor.name}`);
    assert.deepEqual(bytesOf(arr.data), b64(fx.expect), name);
  }
});

test("values read as numbers: floats, ints, complex, datetimes, float16s, bools", () => {
  const f8 = decodeArray(open("2d").header, open("2d").elements);
  assert.deepEqual(Array.from(f8.data.slice(0, 5)), [0, 0.25, 0.5, 0.75, 1]);
  assert.equal(f8.data.length, 35);
  const big = decodeArray(open("tiled-2d-big").header, open("tiled-2d-big").elements);
  assert.ok(big.data instanceof Int32Array);
  assert.deepEqual(Array.from(big.data), Array.from({ length: 110 }, (_, i) => i));
  const c = decodeArray(open("c16>").header, open("c16>").elements);
  assert.equal(c.data.length, 10); // interleaved (re, im)
  const m = decodeArray(open("M8>").header, open("M8>").elements);
  assert.equal(m.data[0], 1704164645123456789n);
  assert.equal(m.data[1], -(2n ** 63n)); // NaT
  const h = decodeArray(open("f2>").header, open("f2>").elements);
  const f4 = halfToFloat32(h.data);
  assert.deepEqual(Array.from(f4), fixtures.arrays["f2>"].floats);
  assert.deepEqual(Array.from(halfToFloat32(new Uint16Array([0x0001, 0x8400, 0x7c00, 0xfc00, 0x3c00, 0x7bff]))), [
    2 ** -24, -(2 ** -14), Infinity, -Infinity, 1, 65504,
  ]);
  const b = decodeArray(open("b1").header, open("b1").elements);
  assert.deepEqual(Array.from(b.data), [1, 0, 1, 0, 0, 1]);
  assert.equal(decodeArray(open("0d").header, open("0d").elements).data[0], 3.25);
  assert.deepEqual(decodeArray(open("0d").header, open("0d").elements).shape, []);
  assert.equal(open("struct").header.dtype, '[["a","<f8"],["b",">i4"],["c","|S2"]]');
});

test("a whole payload decodes with decodeArrayPayload", () => {
  const { value, header } = open("3d");
  const payload = value.subarray(value.length - (header.headerLength + header.size * header.itemsize));
  const arr = decodeArrayPayload(payload);
  assert.deepEqual(bytesOf(arr.data), b64(fixtures.arrays["3d"].expect));
});

test("the decoded data is a copy of its own", () => {
  const { header, elements } = open("1d");
  const arr = decodeArray(header, elements);
  const before = arr.data[0];
  elements.fill(0);
  assert.equal(arr.data[0], before);
});

test("headers: the same verdict as Python's parse_payload_header", () => {
  for (const h of headers) {
    const payload = b64(h.payload);
    if (h.name === "shape 2^53+1") {
      // NumPy makes this empty array; a JavaScript number cannot hold the size: refused
      assert.throws(() => parsePayloadHeader(payload, payload.length), /past 2\^53/);
      continue;
    }
    if (h.ok) {
      const got = parsePayloadHeader(payload, payload.length);
      if (h.dtype !== null) assert.equal(got.dtype, h.dtype, h.name);
      assert.equal(got.itemsize, h.itemsize, h.name);
      assert.deepEqual(got.shape, h.shape, h.name);
      assert.deepEqual(got.tile, h.tile, h.name);
      assert.equal(got.headerLength, h.start, h.name);
    } else {
      const cls = h.error === "CorruptedError" ? CorruptedError : UnsupportedVersionError;
      assert.throws(() => parsePayloadHeader(payload, payload.length), cls, h.name);
    }
  }
});

test("element bytes not matching the shape are refused", () => {
  const { header, elements } = open("2d");
  const value = b64(fixtures.arrays["2d"].value);
  const payloadHead = value.subarray(parseExtHeader(value)[1]);
  assert.throws(() => parseArrayHeader(payloadHead, header.size * header.itemsize - 8, 3), /needs 280 bytes, the value has 272/);
  assert.equal(parseArrayHeader(payloadHead, 280).size, 35);
  assert.throws(() => decodeArray(header, elements.subarray(1)), CorruptedError);
});

test("an array value's ext header must be type 78 and span the value", () => {
  const { value } = open("1d");
  assert.throws(() => parseArrayValue(value, value.length + 1, 5), /expected a NumPy array value of \d+ bytes at offset 5/);
  const other = value.slice();
  other[value[0] === 0xc7 ? 2 : value[0] === 0xc8 ? 3 : 5] = 77;
  assert.throws(() => parseArrayValue(other, other.length), CorruptedError);
  assert.throws(() => parseArrayValue(value.subarray(0, 8), value.length), CorruptedError); // header cut off
});

test("text past U+10FFFF is refused as Python refuses it", () => {
  for (const name of ["U<", "U>", "struct-nested"]) {
    const { header, elements } = open(name);
    decodeArray(header, elements);
    if (name === "struct-nested") continue;
    const bad = elements.slice();
    const big = name === "U>";
    bad.set(big ? [0, 0x11, 0, 0] : [0, 0, 0x11, 0], 0);
    assert.throws(() => decodeArray(header, bad), /past U\+10FFFF/);
  }
});

test("all() reads every element byte once, untiled", async () => {
  for (const name of ["tiled-2d", "tiled-3d", "tiled-1x1", "tiled-struct", "3d", "0d", "empty", "tiled-empty"]) {
    const { header, elements } = open(name);
    let reads = 0;
    const reader = new ArrayReader(header, async (off, len) => {
      reads++;
      return elements.slice(off, off + len);
    });
    const arr = await reader.all();
    assert.deepEqual(bytesOf(arr.data), b64(fixtures.arrays[name].expect), name);
    assert.equal(reads, header.size ? 1 : 0, name);
  }
});
