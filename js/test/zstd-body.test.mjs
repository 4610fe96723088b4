import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { MemorySource } from "../dist/io/source.js";
import { openBody } from "../dist/io/body.js";
import { crc32 } from "../dist/util/crc32.js";
import { CorruptedError, MsglcError, UnsupportedVersionError } from "../dist/errors.js";

const ROOT = new URL("../../", import.meta.url);
const EXPECT = JSON.parse(readFileSync(new URL("js/test/fixtures/zstd-expect.json", ROOT), "utf8"));
const bytesOf = (e) => new Uint8Array(readFileSync(new URL(e.path, ROOT)));
const byName = (suffix) => EXPECT.find((e) => e.path.endsWith(suffix));
const open = (bytes) => openBody(new MemorySource(bytes));
const DATA_OFF = 16;

test("every compressed golden archive decodes to the plain data and TOC Python's reader sees", async () => {
  for (const e of EXPECT) {
    const body = await open(bytesOf(e));
    assert.equal(body.compression, "zstd", e.path);
    assert.deepEqual([body.major, body.minor], e.version, e.path);
    assert.equal(body.dataLength, e.data_size, e.path);
    assert.equal(body.tocLength, e.toc_size, e.path);
    assert.deepEqual([body.root.pos, body.root.len], e.root, e.path);
    assert.equal(body.dataCrc, e.data_crc, e.path);
    const data = await body.readData(0, body.dataLength);
    assert.equal(crc32(data), e.plain_data_crc, e.path);
    assert.equal(crc32(data), body.dataCrc, e.path);
    assert.equal(crc32(await body.readToc(0, body.tocLength)), e.plain_toc_crc, e.path);
  }
});

test("describe() gives Python's info() keys and the section's frames, pages and dictionaries", async () => {
  for (const e of EXPECT) {
    const d = (await open(bytesOf(e))).describe();
    assert.equal(d.compression, "zstd");
    assert.equal(d.data_size, e.data_size);
    assert.equal(d.toc_size, e.toc_size);
    assert.equal(d.stored_data_size, e.stored_data_size);
    assert.equal(d.toc_offset, DATA_OFF + e.data_size);
    assert.equal(d.free_space, 0);
    assert.equal(d.frames, e.frames.length);
    assert.equal(d.dictionaries, e.dictionaries);
    assert.ok(Math.abs(d.ratio - e.data_size / e.stored_data_size) < 1e-9);
  }
  const d = (await open(bytesOf(byName("zstd-dict.mlc")))).describe();
  assert.equal(d.pages, 4);
  assert.equal(d.frames_per_page, 4);
});

/** Every frame's range, ranges across frame edges, and small reads, from fresh bodies. */
test("reads of any range give the same bytes as the whole, across frames and pages", async () => {
  for (const e of EXPECT) {
    const bytes = bytesOf(e);
    const whole = await (await open(bytes)).readData(0, e.data_size);
    const wholeToc = await (await open(bytes)).readToc(0, e.toc_size);
    const body = await open(bytes);
    const D = e.data_size;
    const read = (x, n) => (x < D ? body.readData(x, n) : body.readToc(x - D, n));
    const ref = (x, n) => (x < D ? whole.subarray(x, x + n) : wholeToc.subarray(x - D, x - D + n));
    const cuts = [];
    for (const f of e.frames) {
      const x = f[2] - DATA_OFF;
      if (x >= D) continue; // 2.1 TOC frames are checked below through readToc
      cuts.push([x, Math.min(f[3], D - x)]);
      if (x > 0) cuts.push([x - 1, 2]);
      if (x > 3 && x + 5 <= D) cuts.push([x - 3, 8]);
    }
    cuts.push([0, D], [1, D - 1], [Math.floor(D / 3), Math.floor(D / 3)]);
    for (const [x, n] of cuts) assert.deepEqual(await read(x, n), ref(x, n), `${e.path} data ${x}+${n}`);
    for (let y = 0; y < e.toc_size; y += 97) {
      const n = Math.min(300, e.toc_size - y);
      assert.deepEqual(await body.readToc(y, n), ref(D + y, n), `${e.path} TOC ${y}+${n}`);
    }
  }
});

test("opening a 2.1 archive and reading its root node and root header takes 6 requests (7 with two pages)", async () => {
  for (const e of EXPECT.filter((x) => x.version[1] === 1)) {
    const source = new MemorySource(bytesOf(e));
    const body = await openBody(source);
    assert.ok(source.stats.requests <= 3, `${e.path}: ${source.stats.requests} requests to open`);
    if (body.root.len) await body.readToc(body.root.pos, body.root.len);
    await body.readData(0, Math.min(5, body.dataLength));
    // frame 0's page table is the root node's too, unless the archive has several pages
    const limit = body.describe().pages === 1 ? 6 : 7;
    assert.ok(source.stats.requests <= limit, `${e.path}: ${source.stats.requests} requests`);
    assert.ok(body.framesDecompressed <= 1, `${e.path}: ${body.framesDecompressed} frames decompressed`);
  }
});

test("frame 0 is raw: reading the root's header decompresses nothing", async () => {
  for (const e of EXPECT.filter((x) => x.version[1] === 1)) {
    assert.equal(e.frames[0][4], 2, `${e.path}: frame 0 is raw`);
    const body = await open(bytesOf(e));
    const head = await body.readData(0, e.frames[0][3]);
    assert.equal(head.length, e.frames[0][3]);
    assert.equal(body.framesDecompressed, 0);
  }
});

test("a read inside one compressed frame decompresses that frame once", async () => {
  const e = byName("zstd-dict.mlc");
  const body = await open(bytesOf(e));
  const frame = e.frames.find((f) => f[4] === 0 && f[6] === 1 && f[3] > 100);
  const x = frame[2] - DATA_OFF + 10;
  await body.readData(x, 50);
  assert.equal(body.framesDecompressed, 1);
  await body.readData(x + 20, 60);
  assert.equal(body.framesDecompressed, 1, "the second read is served from the cache");
  assert.equal(body.dictionariesLoaded, 1);
  // concurrent reads of another frame decompress it once too
  const other = e.frames.find((f) => f !== frame && f[4] === 0 && f[6] === 1 && f[3] > 100);
  const y = other[2] - DATA_OFF;
  await Promise.all([body.readData(y, 10), body.readData(y + 30, 10), body.readData(y + 60, 10)]);
  assert.equal(body.framesDecompressed, 2);
  assert.equal(body.dictionariesLoaded, 1, "the dictionary is kept");
});

test("shuffled frames come out unshuffled", async () => {
  const shuffled = EXPECT.filter((e) => e.frames.some((f) => f[4] === 1));
  assert.ok(shuffled.length >= 3);
  const sizes = new Set();
  for (const e of shuffled) {
    for (const f of e.frames.filter((g) => g[4] === 1)) sizes.add(f[5]);
  }
  for (const p of [2, 4, 8, 9]) assert.ok(sizes.has(p), `a golden archive shuffles elements of ${p} bytes`);
  // (their bytes are compared with Python's in the first test)
});

test("reading past the data or the TOC gives TruncatedError", async () => {
  const e = byName("golden/numpy-zstd.mlc");
  const body = await open(bytesOf(e));
  await assert.rejects(body.readData(e.data_size - 2, 3), (err) => err.name === "TruncatedError");
  await assert.rejects(body.readToc(0, e.toc_size + 1), (err) => err.name === "TruncatedError");
  assert.equal((await body.readData(e.data_size, 0)).length, 0);
});

test("frames() lists the frames as Python's LazyReader.frames() does", async () => {
  for (const e of EXPECT) {
    const body = await open(bytesOf(e));
    const got = [];
    for await (const f of body.frames()) {
      got.push([f.offset, f.size, f.plain_offset, f.plain_size, f.filter, f.parameter, f.dictionary]);
    }
    assert.deepEqual(got, e.frames, e.path);
  }
});

test("dictionaryBytes() gives the dictionary the frames were compressed with", async () => {
  const e = byName("zstd-dict.mlc");
  const body = await open(bytesOf(e));
  const dict = await body.dictionaryBytes(1);
  assert.ok(dict.length >= 4096);
  // the writer takes the dictionary's pieces from the data itself
  const data = await body.readData(0, body.dataLength);
  const piece = Buffer.from(dict.subarray(0, 1024));
  assert.ok(Buffer.from(data).includes(piece));
  await assert.rejects(body.dictionaryBytes(2), CorruptedError);
});

test("checked reads decompress raw frames too, so damage inside one is found", async () => {
  const e = byName("golden/hash-dict-zstd.mlc");
  const raw = e.frames.find((f) => f[4] === 2 && f[3] > 100);
  assert.ok(raw, "a raw frame of more than 100 bytes");
  const b = bytesOf(e);
  b[raw[0] + 12 + 50] ^= 0x01;
  const body = await open(b);
  const x = raw[2] - DATA_OFF;
  const read = (checked) => {
    const f = x < body.dataLength ? (checked ? body.readDataChecked : body.readData) : checked ? body.readTocChecked : body.readToc;
    const at = x < body.dataLength ? x : x - body.dataLength;
    return f.call(body, at, raw[3]);
  };
  assert.equal((await read(false)).length, raw[3]); // in place: not checked
  await assert.rejects(read(true), /checksum/);
  const good = await open(bytesOf(e));
  const whole = await good.readDataChecked(0, good.dataLength);
  assert.equal(crc32(whole), e.plain_data_crc);
  assert.equal(crc32(await good.readTocChecked(0, good.tocLength)), e.plain_toc_crc);
});
