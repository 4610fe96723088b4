// Direct-indexed dicts (docs/format.md, node type 10): lookups that find what Python's reader
// finds with the same storage reads (fixtures/make_direct.py), damaged indexes, verify(), the
// arithmetic on 64-bit hashes and records, and nodes crafted here from the spec with BigInts
// (fields out of bounds, records of 7 and 8 bytes, several groups).
import { test } from "node:test";
import assert from "node:assert/strict";
import { encode } from "@msgpack/msgpack";
import { open, CorruptedError } from "../dist/index.js";
import { INDEX_MEMORY } from "../dist/read/lookup.js";
import { crc32 } from "../dist/util/crc32.js";
import { encodeKey } from "../dist/format/msgpack.js";
import {
  estimate,
  fingerprintBits,
  fingerprintOf,
  groupOf,
  hashOrder,
  keyHash,
  putRecord,
  splitRecord,
  window,
} from "../dist/format/direct.js";
import { makeArchive } from "./support/craft.mjs";
import { fixture, loadJson, untag } from "./core-helpers.mjs";

const EXPECT = loadJson("core-direct.json.gz");
const BYTES = fixture("core-direct.mlc");
const PROBES = EXPECT.probes.map(untag);
const M64 = (1n << 64n) - 1n;

/** [outcome, storage reads, bytes read] of looking `k` up in the lazy dict `d`, as
 * make_direct.py writes them. */
async function outcome(reader, d, k) {
  const before = reader.stats.requests;
  const read = reader.stats.bytes;
  let got;
  try {
    const v = await d.get(k);
    got = v.lazyPart ? { lazy: v.kind, length: v.length } : { value: await v.value() };
  } catch (e) {
    if (e.name !== "KeyNotFoundError" && !(e instanceof CorruptedError)) throw e;
    got = { error: e.name };
  }
  return [got, reader.stats.requests - before, reader.stats.bytes - read];
}

function expected(rows) {
  return rows.map(([got, reads, bytes]) => ["value" in got ? { value: untag(got.value) } : got, reads, bytes]);
}

async function probeAll(bytes, keys) {
  const reader = await open(bytes);
  const d = await reader.lazy("d");
  const out = [];
  for (const k of keys) out.push(await outcome(reader, d, k));
  await reader.close();
  return out;
}

test("a direct-indexed dict's keys are found with Python's reads, one reader for all", async () => {
  assert.deepEqual(await probeAll(BYTES, PROBES), expected(EXPECT.kept));
});

test("a direct-indexed dict's keys are found with Python's reads, a fresh reader each", async () => {
  const out = [];
  for (const k of PROBES) out.push((await probeAll(BYTES, [k]))[0]);
  assert.deepEqual(out, expected(EXPECT.fresh));
});

test("a direct-indexed dict's lookups keeping no chunks read them again, as Python's", async () => {
  const saved = { ...INDEX_MEMORY };
  INDEX_MEMORY.records = 0;
  try {
    assert.deepEqual(await probeAll(BYTES, PROBES), expected(EXPECT.no_keep));
  } finally {
    Object.assign(INDEX_MEMORY, saved);
  }
});

test("keys whose records share a fingerprint: an entry read whose key differs", async () => {
  const [twin, partner] = EXPECT.twins;
  // the twins share their group and the fingerprint after it; the ghost shares a record's
  const { group_bits: groupBits, width, off_bits: offBits } = EXPECT.fields;
  const fpBits = fingerprintBits(width, offBits);
  const mark = (k) => {
    const h = keyHash(encodeKey(k));
    return [groupOf(h.hi, groupBits), fingerprintOf(h.hi, h.lo, groupBits, fpBits)];
  };
  assert.deepEqual(mark(twin), mark(partner));
  const reads = [];
  for (const k of [twin, partner, EXPECT.ghost]) {
    const [[got, n]] = await probeAll(BYTES, [k]);
    reads.push(n);
    if (k === EXPECT.ghost) assert.deepEqual(got, { error: "KeyNotFoundError" });
    else assert.ok("value" in got, k);
  }
  // the chunks, then one of the twins reads the other's entry first; the ghost reads one
  assert.equal(Math.max(reads[0], reads[1]), 3);
  assert.equal(reads[2], 2);
});

test("a direct-indexed dict iterates, slices its keys and decodes whole as its data says", async () => {
  const reader = await open(BYTES);
  const d = await reader.lazy("d");
  const whole = await reader.read("d");
  const keys = await d.keys();
  assert.equal(keys.length, EXPECT.fields.n);
  assert.equal(d.length, EXPECT.fields.n);
  assert.deepEqual(keys, [...whole.keys()]);
  assert.deepEqual(await d.keys(100, 104), keys.slice(100, 104));
  assert.deepEqual(await d.keys(-3), keys.slice(-3));
  for (const k of ["k7", "box", "long", 2n ** 63n + 1n]) assert.deepEqual(await (await d.get(k)).value(), whole.get(k));
  const counts = await reader.nodeCounts();
  assert.equal(counts["hash-indexed dict"], 1);
  await reader.verify();
  await reader.close();
});

function patched(name) {
  const bytes = BYTES.slice();
  for (const { at, hex } of EXPECT.damaged[name].patches) bytes.set(Buffer.from(hex, "hex"), at);
  return bytes;
}

test("damaged direct indexes: each lookup fails or succeeds as Python's, with its reads", async () => {
  // (records-swapped: records 0 and 1 out of order; a lookup bisects its window, as Python's,
  // and so misses both their keys)
  for (const name of Object.keys(EXPECT.damaged)) {
    const out = await probeAll(patched(name), [...PROBES, "k5"]);
    assert.deepEqual(out, expected(EXPECT.damaged[name].outcomes), name);
  }
  // a flipped chunk, a record outside the dict, a record naming another key's entry
  for (const name of ["chunk-flip", "record-outside", "record-elsewhere"]) {
    assert.ok(EXPECT.damaged[name].outcomes.some(([got]) => got.error === "CorruptedError"), name);
  }
});

test("verify() refuses a direct index or node fields other than the writer's", async () => {
  for (const name of Object.keys(EXPECT.damaged)) {
    const reader = await open(patched(name));
    await assert.rejects(reader.verify(), CorruptedError, name);
    await reader.close();
  }
});

test("hashes, groups, estimates, windows and fingerprints are Python's, up to 26 group bits", () => {
  for (const [k, h, groupBits, g, first, count, est, win, fps] of EXPECT.arithmetic) {
    const hash = keyHash(encodeKey(untag(k)));
    assert.equal((BigInt(hash.hi) << 32n) | BigInt(hash.lo), BigInt(h), String(k));
    assert.equal(groupOf(hash.hi, groupBits), g);
    assert.equal(estimate(hash.hi, hash.lo, first, first + count, groupBits), est);
    assert.deepEqual(window(hash, { [g]: first, [g + 1]: first + count }, groupBits, 5, 9), win);
    assert.deepEqual(
      [1, 16, 23, 32].map((bits) => fingerprintOf(hash.hi, hash.lo, groupBits, bits)),
      fps,
      `${String(k)} ${groupBits}`,
    );
  }
});

test("fingerprints are the bits of the hash after the group's, as BigInts give them", () => {
  let seed = 11;
  const rand32 = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) * 2 + (seed & 1);
  const halves = [0, 1, 0x7fffffff, 0x80000000, 0xffffffff];
  for (let i = 0; i < 300; i++) {
    const hi = i < 25 ? halves[i % 5] : rand32() >>> 0;
    const lo = i < 25 ? halves[Math.floor(i / 5)] : rand32() >>> 0;
    const h = (BigInt(hi) << 32n) | BigInt(lo);
    for (let groupBits = 0; groupBits <= 26; groupBits++) {
      for (let bits = 1; bits <= 32; bits++) {
        const want = ((h << BigInt(groupBits)) & M64) >> BigInt(64 - bits);
        assert.equal(fingerprintOf(hi, lo, groupBits, bits), Number(want), `${h} ${groupBits} ${bits}`);
      }
    }
  }
});

test("entries are ordered by their hashes, ties in entry order", () => {
  let seed = 3;
  const rand = (m) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % m;
  const n = 5000;
  // few distinct halves, so that hashes tie in either half or in both
  const pool = [0, 1, 0xffff, 0x10000, 0xffffffff, 0x80000000, 0x7fffffff, 12345678];
  const hi = Uint32Array.from({ length: n }, () => pool[rand(pool.length)]);
  const lo = Uint32Array.from({ length: n }, () => pool[rand(pool.length)]);
  const want = [...hi.keys()].sort((a, b) => hi[a] - hi[b] || lo[a] - lo[b] || a - b);
  assert.deepEqual([...hashOrder({ hi, lo })], want);
});

test("records of 1 to 8 bytes split and join as BigInts do", () => {
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let width = 1; width <= 8; width++) {
    for (let offBits = 1; offBits < 8 * width; offBits++) {
      const fpBits = Math.min(32, 8 * width - offBits);
      for (let i = 0; i < 20; i++) {
        const fp = Math.floor(rand() * 2 ** fpBits);
        const off = Math.floor(rand() * 2 ** Math.min(offBits, 53));
        const b = new Uint8Array(width + 2);
        putRecord(b, 1, width, offBits, fp, off);
        let want = (BigInt(fp) << BigInt(offBits)) | BigInt(off);
        for (let j = 0; j < width; j++, want >>= 8n) assert.equal(b[1 + j], Number(want & 0xffn), `${width} ${offBits}`);
        assert.equal(b[0] | b[width + 1], 0);
        assert.deepEqual(splitRecord(b, 1, width, offBits), { off, fp });
      }
    }
  }
});

// -- type-10 nodes made here, from the spec, with BigInts

function specHash(kb) {
  let x = (BigInt(crc32(kb)) << 32n) | BigInt(crc32(kb.slice().reverse()));
  x ^= x >> 33n;
  x = (x * 0xff51afd7ed558ccdn) & M64;
  x ^= x >> 33n;
  x = (x * 0xc4ceb9fe1a85ec53n) & M64;
  return x ^ (x >> 33n);
}

function u32s(values) {
  const out = new Uint8Array(4 * values.length);
  const v = new DataView(out.buffer);
  values.forEach((x, i) => v.setUint32(4 * i, x, true));
  return out;
}

/** The index of a dict of `entries` (encoded [key, value] pairs) as writers lay it out for
 * the given shape, each step as docs/format.md words it. */
function specIndex(entries, { groupBits, width, offBits, chunk }) {
  const n = entries.length;
  const offs = [1];
  for (const [k, v] of entries) offs.push(offs[offs.length - 1] + k.length + v.length);
  const hs = entries.map(([k]) => specHash(k));
  const order = [...hs.keys()].sort((a, b) => (hs[a] < hs[b] ? -1 : hs[a] > hs[b] ? 1 : a - b));
  const G = 2 ** groupBits;
  const group = (h) => (groupBits ? Number(h >> BigInt(64 - groupBits)) : 0);
  const first = new Array(G + 1).fill(0);
  for (const h of hs) first[group(h) + 1]++;
  for (let g = 0; g < G; g++) first[g + 1] += first[g];
  let lo = 0;
  let hi = 0;
  const fpBits = BigInt(Math.min(32, 8 * width - offBits));
  const records = [];
  order.forEach((e, pos) => {
    const h = hs[e];
    const g = group(h);
    const f = (h >> BigInt(48 - groupBits)) & 0xffffn;
    const est = first[g] + Number((f * BigInt(first[g + 1] - first[g])) >> 16n);
    lo = Math.max(lo, est - pos);
    hi = Math.max(hi, pos - est);
    // the fingerprint: the fpBits bits of h after the group's
    const fp = ((h << BigInt(groupBits)) & M64) >> (64n - fpBits);
    let r = (fp << BigInt(offBits)) | BigInt(offs[e]);
    for (let j = 0; j < width; j++, r >>= 8n) records.push(Number(r & 0xffn));
  });
  const region = [];
  for (let at = 0; at < records.length; at += chunk * width) {
    const part = Uint8Array.from(records.slice(at, at + chunk * width));
    region.push(...part, ...u32s([crc32(part)]));
  }
  return { offs, region: Uint8Array.from(region), groups: u32s(first), lo, hi };
}

const str = (s) => encodeKey(s);
const ENTRIES = ["a", "bb", "key-3", "ü", "long"].map((k, i) => [str(k), Uint8Array.of(i)]);
ENTRIES[4][1] = str("x".repeat(40)); // longer than the node's entry_read
ENTRIES.push([encodeKey(-7), str("neg")], [encodeKey(2n ** 63n + 1n), str("big")]);

/** A plain archive whose root is a type-10 dict of ENTRIES (region first in the TOC, then the
 * node), its fields as `shape` and `fields` say. */
function craftDirect(shape, fields = {}) {
  const parts = [Uint8Array.of(0x80 | ENTRIES.length)];
  for (const [k, v] of ENTRIES) parts.push(k, v);
  const data = Uint8Array.from(parts.flatMap((p) => [...p]));
  const { offs, region, groups, lo, hi } = specIndex(ENTRIES, shape);
  const f = {
    n: ENTRIES.length,
    starts: [0],
    offs: [1, offs[offs.length - 1]],
    groupBits: shape.groupBits,
    width: shape.width,
    groupsCrc: crc32(groups),
    regionRef: [region.length, region.length],
    offBits: shape.offBits,
    chunk: shape.chunk,
    lo,
    hi,
    entryRead: 4,
    groups,
    ...fields,
  };
  const node = [10, f.n, f.starts, f.offs, new Map(), new Map(), f.groupBits, f.width, f.groupsCrc, f.regionRef, f.offBits, f.chunk, f.lo, f.hi, f.entryRead, f.groups];
  const payload = encode(f.fields ?? node, { useBigInt64: true });
  const framed = new Uint8Array(payload.length + 4);
  framed.set(payload);
  new DataView(framed.buffer).setUint32(payload.length, crc32(payload), true);
  const toc = new Uint8Array(region.length + framed.length);
  toc.set(region);
  toc.set(framed, region.length);
  return makeArchive({ minor: 4, data, toc, rootPos: region.length, rootLen: framed.length });
}

const SHAPE = { groupBits: 0, width: 2, offBits: 7, chunk: 3 };

test("type-10 nodes made from the spec read, with records of 1 to 8 bytes and several groups", async () => {
  const shapes = [
    SHAPE,
    { groupBits: 0, width: 1, offBits: 7, chunk: 1 },
    { groupBits: 2, width: 4, offBits: 12, chunk: 2 },
    { groupBits: 3, width: 7, offBits: 33, chunk: 4 },
    { groupBits: 1, width: 8, offBits: 40, chunk: 100 },
    { groupBits: 1, width: 8, offBits: 63, chunk: 5 },
  ];
  for (const shape of shapes) {
    const reader = await open(craftDirect(shape));
    const d = await reader.lazy("");
    for (const [i, [k, v]] of ENTRIES.entries()) {
      const key = (await d.keys(i, i + 1))[0];
      assert.deepEqual(await (await d.get(key)).raw(), v, `${JSON.stringify(shape)} ${String(key)}`);
    }
    for (const absent of ["c", "", 3, 2n ** 64n - 1n]) await assert.rejects(d.get(absent), { name: "KeyNotFoundError" });
    await reader.close();
  }
});

test("type-10 nodes with fields out of bounds are CorruptedError naming the node", async () => {
  const groups = (xs) => ({ groups: u32s(xs), groupsCrc: crc32(u32s(xs)) });
  const n = ENTRIES.length;
  const bad = {
    "group_bits 27": { groupBits: 27 },
    "group_bits -1": { groupBits: -1 },
    "groups of another length": { groupBits: 1 },
    "groups' CRC": { groupsCrc: 1 },
    "groups not from 0": groups([1, n]),
    "groups not to n": groups([0, n - 1]),
    "groups falling": { groupBits: 2, ...groups([0, 4, 3, n, n]) },
    "groups as a list": { groups: [0, n] },
    "width 0": { width: 0 },
    "width 9": { width: 9 },
    "off_bits 0": { offBits: 0 },
    "off_bits leaving no fingerprint": { offBits: 16 },
    "chunk 0": { chunk: 0 },
    "lo -1": { lo: -1 },
    "hi -1": { hi: -1 },
    "entry_read -1": { entryRead: -1 },
    "a region shorter than its fields give": { regionRef: [20, 19] },
    "a field missing": { fields: [10, n, [0], [1, 20], new Map(), new Map(), 0, 2, 0, [20, 20], 7, 3, 0, 0, 4] },
  };
  const good = craftDirect(SHAPE);
  const reader = await open(good);
  assert.equal(await reader.read("a"), 0);
  await reader.close();
  for (const [why, fields] of Object.entries(bad)) {
    const bytes = craftDirect(SHAPE, fields);
    await assert.rejects(open(bytes), (e) => e instanceof CorruptedError && /TOC node at offset \d+/.test(e.message), why);
  }
});

test("a type-10 record naming an offset outside the dict's entries is CorruptedError", async () => {
  // every record made to name the map's header (offset 0, before offs[0]), CRCs made right
  const bytes = craftDirect({ groupBits: 0, width: 2, offBits: 7, chunk: 100 });
  const reader = await open(bytes);
  const region = (await reader.info()).toc_offset;
  await reader.close();
  const n = ENTRIES.length;
  for (let i = 0; i < n; i++) bytes[region + 2 * i] &= 0x80;
  bytes.set(u32s([crc32(bytes.subarray(region, region + 2 * n))]), region + 2 * n);
  const damaged = await open(bytes);
  await assert.rejects(damaged.read("a"), (e) => e instanceof CorruptedError && /outside/.test(e.message));
});
