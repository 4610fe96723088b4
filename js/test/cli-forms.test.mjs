// msglc-js's own output forms: the msgpack msgspec writes for a decoded value, and the JSON
// Python's json module writes, from stored bytes (the cross-implementation tests in tests/js/
// compare them with the Python command on every golden value).
import { test } from "node:test";
import assert from "node:assert/strict";
import { decode, encodeCanonical, jsonText, pyFloat, isoformat } from "../dist/cli/msgpack.js";
import { parseArrayExt, cOrder, selectArray } from "../dist/cli/numpy.js";
import { main } from "../dist/cli/main.js";

const hex = (s) => new Uint8Array(Buffer.from(s.replace(/ /g, ""), "hex"));
const toHex = (b) => Buffer.from(b).toString("hex");

test("floats print as Python's repr", () => {
  const cases = [
    [1, "1.0"],
    [-0, "-0.0"],
    [0.1, "0.1"],
    [1e16, "1e+16"],
    [1234567890123456.0, "1234567890123456.0"],
    [1.5e-5, "1.5e-05"],
    [0.0001, "0.0001"],
    [1e-300, "1e-300"],
    [NaN, "NaN"],
    [-Infinity, "-Infinity"],
    [123.456, "123.456"],
  ];
  for (const [x, want] of cases) assert.equal(pyFloat(x), want, String(x));
});

test("values re-encode as msgspec writes them: smallest headers, float64", () => {
  // an array32 header (as append and LazyWriter write) of uint16 1, float32 1.5, str8 "a"
  const stored = hex("dd 00000003 cd 0001 ca 3fc00000 d9 01 61");
  assert.equal(toHex(encodeCanonical(decode(stored))), "9301cb3ff8000000000000a161");
});

test("ints and floats stay apart in JSON, keys as Python writes them", () => {
  // {1: 1.0, "é": b"\x00", None: [2, NaN]}
  const bytes = hex("83 01 cb3ff0000000000000 a2c3a9 c40100 c0 92 02 cb7ff8000000000000");
  assert.equal(jsonText(decode(bytes)), '{"1": 1.0, "\\u00e9": "AA==", "null": [2, NaN]}');
});

test("--indent writes JSON as json.dumps(indent=N) does", () => {
  // {"a": [1, []], "b": {}}
  const bytes = hex("82 a161 92 01 90 a162 80");
  assert.equal(jsonText(decode(bytes), 2), '{\n  "a": [\n    1,\n    []\n  ],\n  "b": {}\n}');
  assert.equal(jsonText(decode(bytes), 0), '{\n"a": [\n1,\n[]\n],\n"b": {}\n}');
});

test("timestamps print as UTC isoformat and re-encode in their smallest form", () => {
  assert.equal(isoformat(86400n, 5000), "1970-01-02T00:00:00.000005+00:00");
  // a timestamp 96 of a small second count becomes a timestamp 32
  const ts96 = hex("c7 0c ff 00000000 0000000000000005");
  assert.equal(toHex(encodeCanonical(decode(ts96))), "d6ff00000005");
});

test("tiled arrays are put in C order, and indexed as NumPy does", () => {
  // a 3x2 <u1 array stored in tiles of 2x1: tile (0,0) = [0, 2], (0,1) = [1, 3], (1,0) = [4], (1,1) = [5]
  const header = hex("93 a3 7c7531 92 03 02 92 02 01");
  const payload = new Uint8Array([header.length, 0, 0, 0, ...header, 0, 2, 1, 3, 4, 5]);
  const a = parseArrayExt(payload, 0);
  assert.deepEqual([...cOrder(a)], [0, 1, 2, 3, 4, 5]);
  const row = selectArray(a, [2]);
  assert.equal(row.t, "ndarray");
  assert.deepEqual([...row.a.elements], [4, 5]);
  assert.deepEqual(selectArray(a, [-1, 0]), { t: "int", v: 4n });
});

test("bad arguments exit with status 2", async () => {
  const write = process.stderr.write;
  process.stderr.write = () => true;
  try {
    assert.equal(await main(["get", "only-a-file.mlc"]), 2);
    assert.equal(await main(["frobnicate"]), 2);
    assert.equal(await main(["get", "--format", "xml", "a.mlc", "p"]), 2);
    assert.equal(await main(["get", "no-such-file.mlc", "p"]), 1);
  } finally {
    process.stderr.write = write;
  }
});
