// The header and trailer checks of docs/format.md ("A reader must check, in this order..."),
// each with crafted bytes, through openBody as open() uses it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { openBody } from "../dist/io/body.js";
import { MemorySource } from "../dist/io/source.js";
import {
  NotAnArchiveError,
  UnsupportedVersionError,
  TruncatedError,
  CorruptedError,
  MsglcError,
} from "../dist/errors.js";
import { makeArchive, golden, withFreeSpace, split, MAGIC } from "./support/craft.mjs";

const body = (bytes) => openBody(new MemorySource(bytes));

async function rejectsWith(bytes, cls, pattern) {
  await assert.rejects(body(bytes), (e) => {
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${e?.name}: ${e?.message}`);
    assert.ok(e instanceof MsglcError);
    if (pattern) assert.match(e.message, pattern);
    return true;
  });
}

test("a crafted minimal archive opens with the trailer's fields", async () => {
  const b = await body(makeArchive({ data: Uint8Array.of(0x81, 0xa1, 0x61, 0x01), threshold: 64 }));
  assert.equal(b.major, 1);
  assert.equal(b.minor, 3);
  assert.equal(b.dataLength, 4);
  assert.equal(b.tocLength, 0);
  assert.deepEqual(b.root, { pos: 0, len: 0 });
  assert.equal(b.threshold, 64);
  assert.deepEqual(await b.readData(0, 4), Uint8Array.of(0x81, 0xa1, 0x61, 0x01));
});

test("a file shorter than 80 bytes: TruncatedError if it starts as the magic, else NotAnArchiveError", async () => {
  const full = golden("small-dict.mlc");
  await rejectsWith(full.subarray(0, 79), TruncatedError, /79 bytes/);
  await rejectsWith(full.subarray(0, 16), TruncatedError);
  await rejectsWith(full.subarray(0, 3), TruncatedError); // the magic's first bytes
  await rejectsWith(new Uint8Array(0), NotAnArchiveError, /empty/);
  await rejectsWith(new TextEncoder().encode("hello"), NotAnArchiveError);
  await rejectsWith(new TextEncoder().encode('{"a": 1, "b": [1, 2, 3]}'), NotAnArchiveError, /magic/);
  // a short file with the magic but another major version is cut short first
  const short = full.slice(0, 40);
  short[8] = 3;
  await rejectsWith(short, TruncatedError);
});

test("bad magic: NotAnArchiveError naming what was found", async () => {
  const bytes = makeArchive();
  bytes[0] = 0x50;
  await rejectsWith(bytes, NotAnArchiveError, /found 50 4d 4c 43/);
  await rejectsWith(new Uint8Array(100), NotAnArchiveError);
  // the magic is checked before anything else
  await rejectsWith(makeArchive({ magic: new TextEncoder().encode("PK\x03\x04abcd"), major: 3 }), NotAnArchiveError);
});

test("a major version other than 1 or 2: UnsupportedVersionError", async () => {
  await rejectsWith(makeArchive({ major: 3, minor: 0 }), UnsupportedVersionError, /3\.0/);
  await rejectsWith(makeArchive({ major: 0, minor: 9 }), UnsupportedVersionError, /0\.9/);
  // before the end and the trailer are looked at
  await rejectsWith(makeArchive({ major: 3, end: 1 << 20, endMagic: new Uint8Array(8) }), UnsupportedVersionError);
});

test("any minor of a known major is read", async () => {
  const b = await body(makeArchive({ minor: 200 }));
  assert.equal(b.minor, 200);
});

test("a nonzero end past the file: TruncatedError; below 80: CorruptedError", async () => {
  const ok = makeArchive();
  await rejectsWith(makeArchive({ end: ok.length + 1 }), TruncatedError, /past the file/);
  await rejectsWith(makeArchive({ end: 79 }), CorruptedError);
  await rejectsWith(makeArchive({ end: 1 }), CorruptedError);
  // the end is checked before the end magic
  await rejectsWith(makeArchive({ end: 79, endMagic: new Uint8Array(8) }), CorruptedError);
  // the largest u48
  await rejectsWith(makeArchive({ end: 2 ** 48 - 1 }), TruncatedError);
});

test("a nonzero end: the trailer is before it, and bytes past it are slack", async () => {
  const slack = makeArchive({ slack: 1000 });
  const archiveEnd = slack.length - 1000;
  slack.set(Uint8Array.of(archiveEnd & 0xff, archiveEnd >> 8), 10); // not covered by the CRC
  const b = await body(slack);
  assert.equal(b.end, archiveEnd);
  // the end naming the file's size is the same archive
  const exact = makeArchive();
  exact[10] = exact.length;
  assert.equal((await body(exact)).end, exact.length);
  // the golden appended archive ends before its file does
  const appended = golden("appended.mlc");
  const a = await body(appended);
  assert.ok(a.end < appended.length);
  assert.equal(a.end, split(appended).end);
  // slack without an end naming it: no trailer at the end of the file
  await rejectsWith(makeArchive({ slack: 64 }), TruncatedError, /end magic/);
});

test("no end magic: TruncatedError (a file cut short)", async () => {
  const full = golden("hash-dict.mlc");
  await rejectsWith(full.subarray(0, full.length - 1), TruncatedError, /truncated/);
  await rejectsWith(full.subarray(0, Math.floor(full.length / 2)), TruncatedError);
  await rejectsWith(full.subarray(0, 80), TruncatedError);
  await rejectsWith(makeArchive({ endMagic: Uint8Array.of(0x89, 0x4d, 0x4c, 0x43, 0x2d, 0x54, 0x4f, 0x58) }), TruncatedError, /found 89 4d 4c 43 2d 54 4f 58/);
  // checked before the CRC
  await rejectsWith(makeArchive({ endMagic: new Uint8Array(8), storedCrc: 1 }), TruncatedError);
});

test("a header or trailer byte changed: CorruptedError (checksum)", async () => {
  const good = makeArchive({ data: Uint8Array.of(0x93, 1, 2, 3) });
  await body(good);
  for (const at of [8 + 1, 0x10 + 4 + 8, good.length - 64 + 8, good.length - 64 + 44, good.length - 64 + 48, good.length - 64 + 52]) {
    const bad = good.slice();
    bad[at] ^= 0x01;
    await rejectsWith(bad, CorruptedError, /checksum/);
  }
  // checked before the sections tile: a wrong data_off with a wrong CRC is a checksum error
  await rejectsWith(makeArchive({ dataOff: 17, storedCrc: 0 }), CorruptedError, /checksum/);
});

test("sections that do not tile the archive: CorruptedError", async () => {
  const data = Uint8Array.of(0x92, 1, 2);
  const toc = new Uint8Array(10);
  await body(makeArchive({ data, toc }));
  await rejectsWith(makeArchive({ data, toc, dataOff: 17 }), CorruptedError, /tile/);
  await rejectsWith(makeArchive({ data, toc, dataLen: 4 }), CorruptedError, /tile/);
  await rejectsWith(makeArchive({ data, toc, tocLen: 9 }), CorruptedError, /tile/);
  await rejectsWith(makeArchive({ data, toc, tocLen: 11 }), CorruptedError, /tile/);
  await rejectsWith(makeArchive({ data, toc, tocOff: 18 }), CorruptedError, /tile/);
  await rejectsWith(makeArchive({ data, toc, dataLen: 2n ** 63n }), CorruptedError, /tile/);
  await rejectsWith(makeArchive({ data, toc, tocOff: 2n ** 64n - 1n }), CorruptedError, /tile/);
});

test("free space between data and TOC: read from 1.2 on, refused before and in 2.x", async () => {
  const data = Uint8Array.of(0x92, 1, 2);
  const toc = new Uint8Array(10);
  const b = await body(makeArchive({ data, toc, free: 100, minor: 2 }));
  assert.equal(b.tocLength, 10);
  assert.equal(b.describe().free_space, 100);
  await rejectsWith(makeArchive({ data, toc, free: 100, minor: 1 }), CorruptedError, /tile/);
  await rejectsWith(makeArchive({ data, toc, free: 100, major: 2, minor: 1 }), CorruptedError, /tile/);
  // the data may not overlap the TOC either
  await rejectsWith(makeArchive({ data, toc, tocOff: 17 + 1, tocLen: 10 + 1, minor: 3 }), CorruptedError, /tile/);
});

test("a root node outside the TOC: CorruptedError", async () => {
  const data = Uint8Array.of(0x92, 1, 2);
  const toc = new Uint8Array(10);
  await body(makeArchive({ data, toc, rootPos: 2, rootLen: 8 }));
  await rejectsWith(makeArchive({ data, toc, rootPos: 2, rootLen: 9 }), CorruptedError, /root node 2\+9/);
  await rejectsWith(makeArchive({ data, toc, rootPos: 11, rootLen: 1 }), CorruptedError, /outside the TOC/);
  await rejectsWith(makeArchive({ data, toc, rootPos: 2n ** 64n - 1n, rootLen: 1 }), CorruptedError, /outside the TOC/);
  // a root without a node (length 0) may say any position
  await body(makeArchive({ data, toc, rootPos: 99, rootLen: 0 }));
});

test("every plain golden archive opens, and with free space added reads the same", async () => {
  for (const name of ["block-list.mlc", "combined.mlc", "hash-dict.mlc", "inline-dict.mlc", "int-keys.mlc", "matrix.mlc", "numpy.mlc", "scalar.mlc", "small-dict.mlc", "streamed.mlc"]) {
    const bytes = golden(name);
    assert.deepEqual(Array.from(bytes.subarray(0, 8)), Array.from(MAGIC));
    const a = await body(bytes);
    const padded = withFreeSpace(bytes, 5000);
    const b = await body(padded);
    for (const k of ["major", "minor", "dataLength", "tocLength", "threshold", "dataCrc"]) assert.equal(b[k], a[k], `${name}: ${k}`);
    assert.deepEqual(b.root, a.root);
    assert.deepEqual(await b.readToc(0, b.tocLength), await a.readToc(0, a.tocLength), name);
    assert.deepEqual(await b.readData(0, b.dataLength), await a.readData(0, a.dataLength), name);
    await assert.rejects(b.readData(b.dataLength - 1, 2), TruncatedError);
    await assert.rejects(b.readToc(-1, 1), TruncatedError);
  }
});
