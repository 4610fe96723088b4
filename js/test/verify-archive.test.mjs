// verifyArchive: the checks of Python's LazyReader.verify() on golden and fixture archives,
// intact, damaged and crafted. Each archive is verified twice: with the package's parseNode
// (format/nodes.ts) and with a small node parser of this test's own (so that verify's own
// checks are tested whatever state parseNode is in).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { decodeHeader, MpMap } from "../dist/format/mpheader.js";
import { openSource } from "../dist/io/open.js";
import { openBody } from "../dist/io/body.js";
import { verifyArchive } from "../dist/read/verify.js";
import { keyId } from "../dist/format/nodes.js";
import { crc32 } from "../dist/util/crc32.js";
import { CorruptedError, UnsupportedVersionError } from "../dist/errors.js";

const golden = (name) => new Uint8Array(readFileSync(new URL(`../../tests/golden/${name}`, import.meta.url)));
const fixture = (name) => new Uint8Array(readFileSync(new URL(`./fixtures/${name}`, import.meta.url)));

// -- a node parser of the test's own (docs/format.md, "The TOC section")

const num = (v) => (typeof v === "bigint" && v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v);
const nums = (xs) => xs.map(num);
const key = (k) => (typeof k === "string" ? k : num(k));
const seen = new Set();

function kidsOf(obj, pos) {
  const out = new Map();
  assert.ok(obj instanceof MpMap);
  for (const [k, ref] of obj.entries) {
    out.set(Number(k), { pos: pos - num(ref[0]), len: num(ref[1]) });
  }
  return out;
}

function stubParseNode(bytes, ref) {
  const payload = bytes.subarray(0, bytes.length - 4);
  const crc = new DataView(bytes.buffer, bytes.byteOffset + bytes.length - 4, 4).getUint32(0, true);
  if (crc32(payload) !== crc) throw new CorruptedError(`node at ${ref.pos}: CRC`);
  const f = decodeHeader(payload); // an exact msgpack decoder: ints stay ints, map keys keep their type
  const type = num(f[0]);
  seen.add(type);
  switch (type) {
    case 1:
      return { type, n: num(f[1]), starts: nums(f[2]), offs: nums(f[3]), kids: kidsOf(f[4], ref.pos) };
    case 2:
      return { type, keys: f[1].map(key), koffs: nums(f[2]), voffs: nums(f[3]), kids: kidsOf(f[4], ref.pos) };
    case 8: {
      const keys = f[1].map(key);
      const koffs = [num(f[2])];
      const voffs = [];
      const kl = nums(f[3]);
      const vl = nums(f[4]);
      for (let j = 0; j < keys.length; j++) {
        voffs.push(koffs[j] + kl[j]);
        koffs.push(voffs[j] + vl[j]);
      }
      return { type, keys, koffs, voffs, kids: kidsOf(f[5], ref.pos) };
    }
    case 4:
      return { type, dims: f[1].map(nums), lazyMin: num(f[2]) };
    case 5:
      return { type, head: num(f[1]), size: num(f[2]) };
    default: {
      const kidKeys = new Map();
      for (const [k, span] of f[5].entries) kidKeys.set(keyId(key(k)), num(span));
      const node = {
        type, n: num(f[1]), starts: nums(f[2]), offs: nums(f[3]), kids: kidsOf(f[4], ref.pos), kidKeys,
        pageBits: num(f[6]), offsWidth: num(f[7]), offsCrc: num(f[8]),
        region: { pos: ref.pos - num(f[9][0]), len: num(f[9][1]) },
        blockBits: 0, slotBits: 0, seed: 0n, segBits: 0, segCount: 0, crcsCrc: 0, keysLen: 0, keysCrc: 0,
      };
      if (type === 10) {
        // (the direct index: docs/format.md, "Type 10")
        const [offBits, chunk, lo, hi, entryRead] = nums(f.slice(10, 15));
        return Object.assign(node, { offBits, chunk, lo, hi, entryRead, groups: f[15] });
      }
      if (type !== 3) node.blockBits = num(f[10]);
      if (type === 7) Object.assign(node, { slotBits: num(f[11]), seed: BigInt(f[12]), segBits: num(f[13]), segCount: num(f[14]), crcsCrc: num(f[15]) });
      if (type === 9) Object.assign(node, { keysLen: num(f[11]), keysCrc: num(f[12]) });
      return node;
    }
  }
}

async function verifyBytes(bytes, parseNode) {
  const body = await openBody(await openSource(bytes));
  return verifyArchive(body, parseNode ? { parseNode } : {});
}

const PLAIN = ["scalar.mlc", "small-dict.mlc", "inline-dict.mlc", "int-keys.mlc", "hash-dict.mlc", "block-list.mlc", "matrix.mlc", "numpy.mlc", "combined.mlc", "appended.mlc", "streamed.mlc"];
const OLD = ["1.1/block-list.mlc", "1.1/combined.mlc", "1.1/hash-dict.mlc", "1.1/inline-dict.mlc", "1.1/int-keys.mlc", "1.1/matrix.mlc", "1.1/numpy.mlc", "1.1/scalar.mlc", "1.1/small-dict.mlc"];

test("verify passes on the plain golden archives and on every node type (own node parser)", async () => {
  for (const name of [...PLAIN, ...OLD]) await verifyBytes(golden(name), stubParseNode);
  await verifyBytes(fixture("verify-types.mlc"), stubParseNode);
  // (type 6, a block hash index: 1.3 writers' big dicts, now only in older fixtures)
  await verifyBytes(fixture("core-big.mlc"), stubParseNode);
  for (const t of [1, 3, 4, 5, 6, 7, 8, 9, 10]) assert.ok(seen.has(t), `node type ${t} verified`);
});

test("verify passes on the golden archives (the package's parseNode; compressed ones need the 2.1 body)", async () => {
  for (const name of [...PLAIN, ...OLD]) await verifyBytes(golden(name));
  await verifyBytes(fixture("verify-types.mlc"));
  for (const name of ["matrix-zstd.mlc", "hash-dict-zstd.mlc", "sorted-dict-zstd.mlc", "tiled-zstd.mlc", "combined-zstd.mlc", "numpy-zstd.mlc", "streamed-zstd.mlc", "block-list-zstd.mlc"]) {
    await verifyBytes(golden(name));
  }
});

// -- damage: a flipped data byte is the data checksum's mismatch; a crafted one (checksums
// made again) is caught by the check it breaks

function dataRange(bytes) {
  const t = new DataView(bytes.buffer, bytes.byteOffset + bytes.length - 64, 64);
  return [Number(t.getBigUint64(0, true)), Number(t.getBigUint64(8, true))];
}

/** `bytes` with data byte `i` (from the data's start) set to `v` and every checksum made again. */
function crafted(bytes, edit) {
  const out = bytes.slice();
  const [off, len] = dataRange(out);
  edit(out.subarray(off, off + len));
  const t = new DataView(out.buffer, out.length - 64, 64);
  t.setUint32(44, crc32(out.subarray(off, off + len)), true);
  const head = out.slice(0, 16);
  head.fill(0, 10, 16);
  const both = new Uint8Array(16 + 52);
  both.set(head);
  both.set(out.subarray(out.length - 64, out.length - 12), 16);
  t.setUint32(52, crc32(both), true);
  return out;
}

function find(hay, needle, from = 0) {
  outer: for (let i = from; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

test("a flipped data byte is a data checksum mismatch", async () => {
  for (const name of ["hash-dict.mlc", "matrix.mlc", "numpy.mlc", "block-list.mlc"]) {
    const bytes = golden(name);
    const [off, len] = dataRange(bytes);
    for (const at of [off + 1, off + Math.floor(len / 2), off + len - 1]) {
      const bad = bytes.slice();
      bad[at] ^= 0x10;
      await assert.rejects(verifyBytes(bad, stubParseNode), /checksum mismatch/, `${name} at ${at}`);
    }
  }
});

test("crafted data: invalid UTF-8, a wrong key, a broken stride, an unknown extension", async () => {
  const src = fixture("verify-types.mlc");
  // the str "üüü" (c3 bc x3) made invalid UTF-8
  const utf = crafted(src, (d) => {
    const at = find(d, Uint8Array.of(0xa6, 0xc3, 0xbc, 0xc3, 0xbc, 0xc3, 0xbc));
    assert.ok(at >= 0);
    d[at + 2] = 0xff;
  });
  await assert.rejects(verifyBytes(utf, stubParseNode), (e) => e instanceof CorruptedError && /UTF-8/.test(e.message));
  // a key of an inline dict (type 8) changed: "b" -> "B"
  const k = crafted(src, (d) => {
    const at = find(d, Uint8Array.of(0xa1, 0x62, 0xd9, 0x32)); // "b": a str of 50
    assert.ok(at >= 0);
    d[at + 1] = 0x42;
  });
  await assert.rejects(verifyBytes(k, stubParseNode), CorruptedError);
  // a float of the matrix (a fixed-stride list) made a fixint: its rows' boundaries move
  const stride = crafted(src, (d) => {
    const at = find(d, Uint8Array.of(0xcb, 0x40, 0x14, 0, 0, 0, 0, 0, 0)); // 5.0
    assert.ok(at >= 0);
    d[at] = 0x05;
  });
  await assert.rejects(verifyBytes(stride, stubParseNode), CorruptedError);
  // ... or a uint64 of the same size: the boundaries hold, but every leaf must share a marker
  const marker = crafted(src, (d) => {
    const at = find(d, Uint8Array.of(0xcb, 0x40, 0x14, 0, 0, 0, 0, 0, 0));
    d[at] = 0xcf;
  });
  await assert.rejects(verifyBytes(marker, stubParseNode), /fixed-stride/);
  // the NumPy array's ext type 78 made 77: unknown to readers
  const ext = crafted(src, (d) => {
    const at = find(d, Uint8Array.of(0xc7, 0x83, 0x4e, 0x07, 0, 0, 0)); // ext 8 of 131 bytes, type 78, H = 7
    assert.ok(at >= 0);
    d[at + 2] = 77;
  });
  await assert.rejects(verifyBytes(ext, stubParseNode), (e) => e instanceof UnsupportedVersionError || e instanceof CorruptedError);
});

test("a damaged TOC node or index region is refused", async () => {
  const src = golden("hash-dict.mlc");
  const t = new DataView(src.buffer, src.byteOffset + src.length - 64, 64);
  const tocOff = Number(t.getBigUint64(16, true));
  const rootPos = Number(t.getBigUint64(32, true));
  // a byte of the index region (it lies before the root node): its page CRCs no longer hold
  const bad = src.slice();
  bad[tocOff + Math.floor(rootPos / 2)] ^= 1;
  await assert.rejects(verifyBytes(bad, stubParseNode), CorruptedError);
});
