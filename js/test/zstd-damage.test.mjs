import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { MemorySource } from "../dist/io/source.js";
import { openBody } from "../dist/io/body.js";
import { crc32 } from "../dist/util/crc32.js";
import { CorruptedError, MsglcError, UnsupportedVersionError } from "../dist/errors.js";

const ROOT = new URL("../../", import.meta.url);
const EXPECT = JSON.parse(readFileSync(new URL("js/test/fixtures/zstd-expect.json", ROOT), "utf8"));
const byName = (suffix) => EXPECT.find((e) => e.path.endsWith(suffix));
const bytesOf = (e) => new Uint8Array(readFileSync(new URL(e.path, ROOT)));
const DATA_OFF = 16;

const u32 = (b, at) => (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;
const put32 = (b, at, v) => { for (let i = 0; i < 4; i++) b[at + i] = (v >>> (8 * i)) & 0xff; };
const sectionSize = (b) => u32(b, b.length - 64 + 8);

/** Open and read everything: the plain data, the TOC, and the data again in small pieces. */
async function readAll(bytes) {
  const body = await openBody(new MemorySource(bytes));
  await body.readData(0, body.dataLength);
  await body.readToc(0, body.tocLength);
  for (let x = 0; x < body.dataLength; x += 4093) await body.readData(x, Math.min(64, body.dataLength - x));
  return body;
}

/** The 2.1 index's place and its page entries (absolute offsets). */
function indexOf(b) {
  const end = DATA_OFF + sectionSize(b);
  const size = u32(b, end - 9);
  const at = end - size;
  const P = u32(b, at + 48);
  const K = u32(b, at + 52);
  const pages = [];
  for (let p = 0; p < P; p++) pages.push({ at: DATA_OFF + u32(b, at + 56 + 28 * p), size: u32(b, at + 56 + 28 * p + 24) });
  const dicts = [];
  for (let d = 0; d < K; d++) dicts.push({ at: DATA_OFF + u32(b, at + 56 + 28 * P + 16 * d), size: u32(b, at + 56 + 28 * P + 16 * d + 8) });
  return { at, size, pages, dicts };
}

/** The trailer's CRC made right again after the header changed. */
function resealTrailer(b) {
  const t = b.length - 64;
  const head = b.slice(0, 16);
  head.fill(0, 10, 16);
  put32(b, t + 52, crc32(b.subarray(t, t + 52), crc32(head)));
}

/** A page table's CRC made right again after its body changed. */
function resealPage(b, page) {
  put32(b, page.at + page.size - 4, crc32(b.subarray(page.at + 12, page.at + page.size - 4)));
}

test("a flipped byte anywhere in a compressed section gives an msglc error or bytes, never another exception", async () => {
  const names = ["golden/block-list-zstd.mlc", "golden/numpy-zstd.mlc", "golden/hash-dict-zstd.mlc", "zstd-dict.mlc", "2.0/numpy-zstd.mlc", "2.0/combined-zstd.mlc"];
  for (const name of names) {
    const e = byName(name);
    const good = bytesOf(e);
    const S = sectionSize(good);
    let refused = 0;
    const step = S > 3000 ? 3 : 1;
    for (let at = DATA_OFF; at < DATA_OFF + S; at += step) {
      for (const mask of [(at & 1) ? 0x01 : 0x80]) {
        const b = good.slice();
        b[at] ^= mask;
        try {
          await readAll(b);
        } catch (err) {
          if (!(err instanceof MsglcError)) assert.fail(`${name}: byte ${at} ^ ${mask}: ${err && err.stack}`);
          refused++;
        }
      }
    }
    assert.ok(refused > S / step / 2, `${name}: most flips are refused (${refused} of ${Math.ceil(S / step)})`);
  }
});

test("a flipped byte inside a compressed frame gives CorruptedError when the frame is read", async () => {
  for (const e of EXPECT) {
    const frame = e.frames.find((f) => f[4] !== 2 && f[1] > 24);
    if (!frame) continue;
    const b = bytesOf(e);
    b[frame[0] + Math.floor(frame[1] / 2)] ^= 0x10;
    const body = await openBody(new MemorySource(b));
    const x = frame[2] - DATA_OFF;
    const read = x < body.dataLength ? body.readData(x, 1) : body.readToc(x - body.dataLength, 1);
    await assert.rejects(read, CorruptedError, e.path);
  }
});

test("a flipped byte in a frame's checksum gives CorruptedError", async () => {
  const e = byName("zstd-dict.mlc");
  const frame = e.frames.find((f) => f[4] === 0 && f[6] === 1);
  const b = bytesOf(e);
  b[frame[0] + frame[1] - 2] ^= 0x01;
  const body = await openBody(new MemorySource(b));
  await assert.rejects(body.readData(frame[2] - DATA_OFF, 1), /checksum/);
});

test("a flipped byte inside a page table gives CorruptedError on the page's first use", async () => {
  const e = byName("zstd-dict.mlc");
  const good = bytesOf(e);
  const { pages } = indexOf(good);
  assert.equal(pages.length, 4);
  for (const [p, page] of pages.entries()) {
    for (const off of [0, 9, 13, 20, page.size - 1]) {
      const b = good.slice();
      b[page.at + off] ^= 0x04;
      const body = await openBody(new MemorySource(b)); // opening reads no page table
      await assert.rejects(body.readData(0, body.dataLength), CorruptedError, `page ${p} byte ${off}`);
    }
  }
});

test("a page table's unknown filter code gives UnsupportedVersionError; a bad parameter or dictionary CorruptedError", async () => {
  const e = byName("zstd-dict.mlc");
  const good = bytesOf(e);
  const page = indexOf(good).pages[0];
  const n = u32(good, page.at + 12);
  const cases = [
    [16 + 8 * n + 1, 7, UnsupportedVersionError], // a filter code 7
    [16 + 9 * n + 1, 3, CorruptedError], // a parameter on an unshuffled frame
    [16 + 10 * n + 2, 9, CorruptedError], // dictionary 9 of 1
  ];
  for (const [off, value, error] of cases) {
    const b = good.slice();
    b[page.at + off] = value;
    resealPage(b, page);
    const body = await openBody(new MemorySource(b));
    await assert.rejects(body.readData(0, 5), error);
  }
});

test("a flipped byte inside the index gives CorruptedError at open", async () => {
  for (const e of EXPECT.filter((x) => x.version[1] === 1)) {
    const good = bytesOf(e);
    const { at, size } = indexOf(good);
    for (const off of [0, 5, 9, 13, 29, 41, 45, 57, size - 13, size - 10]) {
      const b = good.slice();
      b[at + off] ^= 0x02;
      await assert.rejects(openBody(new MemorySource(b)), CorruptedError, `${e.path} index byte ${off}`);
    }
  }
});

test("a flipped byte inside the dictionary's record gives CorruptedError when a frame needs it", async () => {
  const e = byName("zstd-dict.mlc");
  const good = bytesOf(e);
  const [dict] = indexOf(good).dicts;
  for (const off of [0, 5, 9, 14, Math.floor(dict.size / 2), dict.size - 1]) {
    const b = good.slice();
    b[dict.at + off] ^= 0x20;
    const body = await openBody(new MemorySource(b));
    await assert.rejects(body.readData(0, body.dataLength), CorruptedError, `dictionary byte ${off}`);
  }
});

test("the footer: a wrong magic or an impossible index size is CorruptedError, a 2.0 descriptor UnsupportedVersionError", async () => {
  const good = bytesOf(byName("golden/numpy-zstd.mlc"));
  const end = DATA_OFF + sectionSize(good);
  const cases = [
    [(b) => (b[end - 1] ^= 1), CorruptedError],
    [(b) => put32(b, end - 9, 0x7fffffff), CorruptedError],
    [(b) => put32(b, end - 9, 68), CorruptedError],
    [(b) => (b[end - 5] = 0), UnsupportedVersionError],
  ];
  for (const [damage, error] of cases) {
    const b = good.slice();
    damage(b);
    await assert.rejects(openBody(new MemorySource(b)), error);
  }
});

test("a 2.1 section under a 2.0 header, and a 2.0 section under a 2.1 header, are UnsupportedVersionError", async () => {
  const a = bytesOf(byName("golden/numpy-zstd.mlc"));
  a[9] = 0;
  resealTrailer(a);
  await assert.rejects(openBody(new MemorySource(a)), UnsupportedVersionError);
  const b = bytesOf(byName("2.0/streamed-zstd.mlc"));
  // a 2.0 archive has a TOC outside its section: give the trailer none, so that the section is reached
  const t = b.length - 64;
  const S = sectionSize(b);
  const cut = b.slice(0, DATA_OFF + S + 64);
  cut.set(b.subarray(t, t + 64), DATA_OFF + S);
  const tt = DATA_OFF + S;
  for (const at of [24, 32, 40]) for (let i = 0; i < 8; i++) cut[tt + at + i] = 0;
  put32(cut, tt + 16, DATA_OFF + S);
  cut[9] = 1;
  resealTrailer(cut);
  await assert.rejects(openBody(new MemorySource(cut)), UnsupportedVersionError);
});

test("a 2.1 trailer that names a TOC is CorruptedError", async () => {
  const b = bytesOf(byName("golden/numpy-zstd.mlc"));
  const t = b.length - 64;
  put32(b, t + 40, 5); // root_len
  resealTrailer(b);
  await assert.rejects(openBody(new MemorySource(b)), CorruptedError);
});

test("2.0: a filter code 2 is UnsupportedVersionError there; a seek table that does not tile the section CorruptedError", async () => {
  const good = bytesOf(byName("2.0/combined-zstd.mlc"));
  const end = DATA_OFF + sectionSize(good);
  const n = u32(good, end - 9);
  const filter = end - (8 + 8 * n + 9) - (20 + 2 * n);
  assert.equal(u32(good, filter), 0x184d2a5d);
  const b = good.slice();
  b[filter + 16] = 2;
  put32(b, filter + 16 + 2 * n, crc32(b.subarray(filter + 16, filter + 16 + 2 * n)));
  await assert.rejects(openBody(new MemorySource(b)), UnsupportedVersionError);
  const c = good.slice();
  c[end - 9 - 8 * n + 1] ^= 1; // frame 0's stored size in the seek table
  await assert.rejects(openBody(new MemorySource(c)), CorruptedError);
  const d = good.slice();
  d[end - 5] = 0x80; // per-frame checksums
  await assert.rejects(openBody(new MemorySource(d)), UnsupportedVersionError);
});

test("index fields changed under a correct CRC give CorruptedError, at open or at first use", async () => {
  const e = byName("zstd-dict.mlc");
  const good = bytesOf(e);
  const { at, size, pages } = indexOf(good);
  const crcAt = at + size - 13;
  const fields = [12, 16, 20, 24, 28, 32, 36, 40, 44]; // D, T, root position, root length, N, F (u32 pieces)
  for (let p = 0; p < pages.length; p++) for (const f of [0, 4, 8, 12, 16, 20, 24]) fields.push(56 + 28 * p + f);
  for (const f of [0, 4, 8, 12]) fields.push(56 + 28 * pages.length + f); // the dictionary's entry
  const values = [0, 1, 2, 0xffffffff, 0x7fffffff, 0x200000];
  let refused = 0;
  for (const field of fields) {
    for (const value of values) {
      for (const delta of [0, 1, -1]) {
        const b = good.slice();
        put32(b, at + field, delta ? (u32(good, at + field) + delta) >>> 0 : value);
        if (delta && value) continue;
        put32(b, crcAt, crc32(b.subarray(at + 8, crcAt)));
        if (b.every((x, i) => x === good[i])) continue;
        try {
          await readAll(b);
        } catch (err) {
          if (!(err instanceof MsglcError)) assert.fail(`index byte ${field} = ${value}/${delta}: ${err && err.stack}`);
          assert.ok(err instanceof CorruptedError, `index byte ${field}: ${err}`);
          refused++;
        }
      }
    }
  }
  assert.ok(refused > fields.length * 3, `${refused} refused`);
});

test("page table sizes changed under a correct CRC give CorruptedError", async () => {
  for (const name of ["zstd-dict.mlc", "golden/numpy-zstd.mlc", "golden/hash-dict-zstd.mlc"]) {
    const good = bytesOf(byName(name));
    for (const page of indexOf(good).pages) {
      const n = u32(good, page.at + 12);
      for (let f = 0; f < 2 * n; f++) {
        for (const value of [0, 1, 8, 9, 1 << 20, (1 << 20) + 1, 0xffffffff]) {
          const b = good.slice();
          put32(b, page.at + 16 + 4 * f, value);
          resealPage(b, page);
          if (b.every((x, i) => x === good[i])) continue;
          await assert.rejects(readAll(b), CorruptedError, `${name} page at ${page.at} size ${f} = ${value}`);
        }
        // two frames trading a byte keep the page's ends: the frames' own checks must catch it
        if (f + 2 < 2 * n) {
          const b = good.slice();
          put32(b, page.at + 16 + 4 * f, u32(good, page.at + 16 + 4 * f) + 1);
          put32(b, page.at + 16 + 4 * (f + 2), u32(good, page.at + 16 + 4 * (f + 2)) - 1);
          resealPage(b, page);
          await assert.rejects(readAll(b), CorruptedError, `${name} trade at ${f}`);
        }
      }
    }
  }
});
