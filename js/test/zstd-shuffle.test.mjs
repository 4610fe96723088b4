import { test } from "node:test";
import assert from "node:assert/strict";
import { shuffle, unshuffle } from "../dist/format/shuffle.js";

test("unshuffle puts stored byte k*m + j at plain byte j*p + k", () => {
  for (const p of [2, 3, 4, 5, 8, 9, 16, 255]) {
    const m = 37;
    const stored = new Uint8Array(p * m);
    for (let i = 0; i < stored.length; i++) stored[i] = (i * 131 + 17) & 0xff;
    const plain = unshuffle(stored, p);
    for (let j = 0; j < m; j++) {
      for (let k = 0; k < p; k++) assert.equal(plain[j * p + k], stored[k * m + j], `p ${p}, element ${j}, byte ${k}`);
    }
    assert.deepEqual(shuffle(plain, p), stored);
  }
});

test("unshuffle of float64 elements gives the numbers back", () => {
  const values = Float64Array.from({ length: 1000 }, (_, i) => Math.sin(i) * 1e6);
  const plain = new Uint8Array(values.buffer);
  const back = new Float64Array(unshuffle(shuffle(plain, 8), 8).buffer);
  assert.deepEqual(back, values);
});
