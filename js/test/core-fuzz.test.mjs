import { test } from "node:test";
import assert from "node:assert/strict";
import { open, MsglcError, KeyNotFoundError, IndexOutOfRangeError } from "../dist/index.js";
import { fixture, viaViews, GOLDEN } from "./core-helpers.mjs";
import { readFileSync } from "node:fs";

/** A fixture, or a golden archive ("golden:1.1/hash-dict.mlc": node type 3). */
function load(name) {
  return name.startsWith("golden:") ? new Uint8Array(readFileSync(new URL(name.slice(7), GOLDEN))) : fixture(name);
}
import { parseNode } from "../dist/format/nodes.js";
import { crc32 } from "../dist/util/crc32.js";

const ITERATIONS = Number(process.env.CORE_FUZZ ?? 60);

/** A small deterministic generator (xorshift32). */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

/** What damaged bytes may raise: an archive error, or a lookup error where a key or index
 * that a damaged node names is missing. */
function acceptable(e) {
  return e instanceof MsglcError || e instanceof KeyNotFoundError || e instanceof IndexOutOfRangeError;
}

async function exercise(bytes) {
  const reader = await open(bytes);
  try {
    await reader.read().catch((e) => {
      if (!acceptable(e)) throw e;
    });
    await viaViews(await reader.lazy(), 200);
    await reader.info();
  } finally {
    await reader.close();
  }
}

for (const name of ["core-t0.mlc", "core-t64.mlc", "core-big.mlc", "core-combined-789.mlc", "golden:1.1/hash-dict.mlc"]) {
  test(`${name}: damaged bytes give msglc errors, never another exception`, async () => {
    const clean = load(name);
    const random = rng(name.length * 7919);
    for (let i = 0; i < ITERATIONS; i++) {
      const bytes = clean.slice();
      const flips = 1 + Math.floor(random() * 3);
      for (let f = 0; f < flips; f++) bytes[Math.floor(random() * bytes.length)] ^= 1 << Math.floor(random() * 8);
      await exercise(bytes).catch((e) => {
        assert.ok(acceptable(e), `${name} iteration ${i}: ${e?.stack ?? e}`);
      });
    }
  });
}

/** Every node of an archive: its absolute position and framed length. */
async function nodesOf(bytes) {
  const reader = await open(bytes);
  const info = await reader.info();
  const out = [];
  const stack = [reader.body.root];
  const seen = new Set();
  while (stack.length) {
    const ref = stack.pop();
    if (!ref.len || seen.has(ref.pos)) continue;
    seen.add(ref.pos);
    out.push({ at: info.toc_offset + ref.pos, len: ref.len });
    const node = parseNode(await reader.body.readToc(ref.pos, ref.len), ref);
    for (const kid of node.kids?.values() ?? []) stack.push(kid);
  }
  await reader.close();
  return out;
}

for (const name of ["core-t0.mlc", "core-big.mlc", "core-combined-789.mlc", "core-streamed.mlc", "golden:1.1/hash-dict.mlc"]) {
  test(`${name}: nodes damaged under a valid CRC give msglc errors, never another exception`, async () => {
    const clean = load(name);
    const nodes = await nodesOf(clean);
    const random = rng(name.length * 104729);
    for (let i = 0; i < ITERATIONS; i++) {
      const bytes = clean.slice();
      const { at, len } = nodes[Math.floor(random() * nodes.length)];
      const payload = bytes.subarray(at, at + len - 4);
      const r = random();
      const j = Math.floor(random() * payload.length);
      if (r < 0.5) payload[j] ^= 1 << Math.floor(random() * 8);
      else payload[j] = [0x00, 0x7f, 0xff, 0xc0, 0xcc, 0xcd, 0xce, 0xcf, 0xd3, 0x90, 0x80, 0xdd, 0xdf][Math.floor(random() * 13)];
      const crc = crc32(payload);
      for (let k = 0; k < 4; k++) bytes[at + len - 4 + k] = (crc >>> (8 * k)) & 0xff;
      await exercise(bytes).catch((e) => {
        assert.ok(acceptable(e), `${name} iteration ${i}: ${e?.stack ?? e}`);
      });
    }
  });
}
