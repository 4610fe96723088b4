import { test } from "node:test";
import assert from "node:assert/strict";
import { xxh64, xxh64Low32 } from "../dist/util/xxh64.js";

// zstd's content checksums (the last 4 bytes of frames written by Python's zstandard with
// write_checksum=True) of the bytes (i*31 + 7) % 251, i < n.
const ZSTD_CHECKSUMS = {
  0: 1373170073, 1: 3898129335, 3: 849643513, 4: 3825176324, 5: 2250562894, 7: 1819253390,
  8: 647398368, 9: 2973513874, 15: 106586675, 16: 2003278976, 31: 1214153838, 32: 1564851144,
  33: 2501646245, 63: 4234785286, 64: 431839771, 65: 1251989056, 100: 1445032301,
  257: 3485733968, 1000: 3454256525, 4099: 788332352,
};

function pattern(n) {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + 7) % 251;
  return b;
}

// A slow, obviously-correct XXH64 on BigInt, to check the fast one on the whole 64 bits.
const M = (1n << 64n) - 1n;
const P = [0x9e3779b185ebca87n, 0xc2b2ae3d27d4eb4fn, 0x165667b19e3779f9n, 0x85ebca77c2b2ae63n, 0x27d4eb2f165667c5n];
const rotl = (x, r) => ((x << BigInt(r)) | (x >> BigInt(64 - r))) & M;
const rd = (b, i, n) => { let v = 0n; for (let k = n - 1; k >= 0; k--) v = (v << 8n) | BigInt(b[i + k]); return v; };
const rnd = (acc, x) => (rotl((acc + x * P[1]) & M, 31) * P[0]) & M;
function slow(b) {
  const n = b.length;
  let i = 0, h;
  if (n >= 32) {
    const v = [(P[0] + P[1]) & M, P[1], 0n, (-P[0]) & M];
    for (; i + 32 <= n; i += 32) for (let k = 0; k < 4; k++) v[k] = rnd(v[k], rd(b, i + 8 * k, 8));
    h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M;
    for (const x of v) h = (((h ^ rnd(0n, x)) * P[0]) + P[3]) & M;
  } else h = P[4];
  h = (h + BigInt(n)) & M;
  for (; i + 8 <= n; i += 8) h = ((rotl(h ^ rnd(0n, rd(b, i, 8)), 27) * P[0]) + P[3]) & M;
  if (i + 4 <= n) { h = ((rotl(h ^ ((rd(b, i, 4) * P[0]) & M), 23) * P[1]) + P[2]) & M; i += 4; }
  for (; i < n; i++) h = (rotl(h ^ ((BigInt(b[i]) * P[4]) & M), 11) * P[0]) & M;
  h ^= h >> 33n; h = (h * P[1]) & M; h ^= h >> 29n; h = (h * P[2]) & M; h ^= h >> 32n;
  return h;
}

test("xxh64 of nothing is the published value", () => {
  const [hi, lo] = xxh64(new Uint8Array(0));
  assert.equal(hi, 0xef46db37);
  assert.equal(lo, 0x51d8e999);
});

test("xxh64's low 32 bits are zstd's content checksums", () => {
  for (const [n, expected] of Object.entries(ZSTD_CHECKSUMS)) {
    assert.equal(xxh64Low32(pattern(Number(n))), expected, `length ${n}`);
  }
});

test("xxh64 agrees with a BigInt reference on every length to 200 and on random bytes", () => {
  let seed = 12345;
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 16) & 0xff;
  for (let n = 0; n <= 200; n++) {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) b[i] = rand() ^ 0xa5;
    const [hi, lo] = xxh64(b);
    assert.equal((BigInt(hi) << 32n) | BigInt(lo), slow(b), `length ${n}`);
  }
});

test("xxh64 of a range is xxh64 of those bytes", () => {
  const b = pattern(5000);
  assert.deepEqual(xxh64(b, 17, 4116), xxh64(b.slice(17, 4116)));
  assert.equal(xxh64Low32(b, 1000, 5000), xxh64Low32(b.slice(1000, 5000)));
});
