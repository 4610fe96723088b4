// ArrayReader.slice: NumPy's basic indexing, reading only the runs (C order) or tiles needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseArrayValue, parseArrayHeader, ArrayReader } from "../dist/read/array.js";

const fixtures = JSON.parse(readFileSync(new URL("./fixtures/arrays.json", import.meta.url), "utf8"));
const b64 = (s) => new Uint8Array(Buffer.from(s, "base64"));
const bytesOf = (t) => new Uint8Array(t.buffer, t.byteOffset, t.byteLength);

function open(name) {
  const value = b64(fixtures.arrays[name].value);
  const { header, start } = parseArrayValue(value, value.length, 0);
  return { header, elements: value.subarray(start) };
}

/** An in-memory element reader that records its reads. */
function memory(elements) {
  const reads = [];
  const fn = async (off, len) => {
    assert.ok(off >= 0 && len > 0 && off + len <= elements.length, `read ${off}+${len} of ${elements.length}`);
    reads.push([off, len]);
    return elements.slice(off, off + len);
  };
  return { fn, reads };
}

test("selections give what NumPy gives", async () => {
  for (const s of fixtures.slices) {
    const { header, elements } = open(s.array);
    const arr = await new ArrayReader(header, memory(elements).fn).slice(...s.axes);
    assert.deepEqual(arr.shape, s.shape, `${s.array} ${JSON.stringify(s.axes)}`);
    assert.deepEqual(bytesOf(arr.data), b64(s.expect), `${s.array} ${JSON.stringify(s.axes)}`);
  }
});

// -- an independent reference: Python's slice.indices and nested loops over the whole array

function indices(k, n) {
  if (k === null || k === undefined) return { list: [...Array(n).keys()], keep: true };
  if (typeof k === "number") return { list: [k < 0 ? k + n : k], keep: false };
  const step = k[2] ?? 1;
  const out = [];
  let start = k[0];
  let stop = k[1];
  if (step > 0) {
    start = start == null ? 0 : start < 0 ? Math.max(0, start + n) : Math.min(start, n);
    stop = stop == null ? n : stop < 0 ? Math.max(0, stop + n) : Math.min(stop, n);
    for (let i = start; i < stop; i += step) out.push(i);
  } else {
    start = start == null ? n - 1 : start < 0 ? Math.max(-1, start + n) : Math.min(start, n - 1);
    stop = stop == null ? -1 : stop < 0 ? Math.max(-1, stop + n) : Math.min(stop, n - 1);
    for (let i = start; i > stop; i += step) out.push(i);
  }
  return { list: out, keep: true };
}

function reference(whole, shape, itemsize, axes) {
  const per = shape.map((n, d) => indices(axes[d], n));
  const strides = [];
  let s = itemsize;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d];
  }
  const out = [];
  const walk = (d, off) => {
    if (d === shape.length) {
      for (let b = 0; b < itemsize; b++) out.push(whole[off + b]);
      return;
    }
    for (const i of per[d].list) walk(d + 1, off + i * strides[d]);
  };
  walk(0, 0);
  return { bytes: new Uint8Array(out), shape: per.filter((p) => p.keep).map((p) => p.list.length) };
}

let seed = 33;
const rand = (n) => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % n;
};

function randomAxis(n) {
  switch (rand(4)) {
    case 0:
      return null;
    case 1:
      return n ? rand(2 * n) - n : null;
    default: {
      const pick = () => (rand(3) ? rand(2 * n + 4) - n - 2 : null);
      const step = rand(3) ? (rand(2) ? 1 : -1) * (1 + rand(4)) : null;
      return [pick(), pick(), step];
    }
  }
}

test("random selections of every layout match the reference, with any gap", async () => {
  const names = ["1d", "2d", "3d", "2d-f-order", "tiled-2d", "tiled-2d-big", "tiled-3d", "tiled-1x1", "tiled-trivial", "tiled-struct", "struct", "U>", "c16>"];
  for (const name of names) {
    const { header, elements } = open(name);
    const whole = bytesOf((await new ArrayReader(header, memory(elements).fn).all()).data);
    for (let i = 0; i < 150; i++) {
      const axes = header.shape.slice(0, rand(header.shape.length + 1)).map(randomAxis);
      const ref = reference(whole, header.shape, header.itemsize, axes);
      const gap = [0, 16, 4096][rand(3)];
      const arr = await new ArrayReader(header, memory(elements).fn, { gap }).slice(...axes);
      const what = `${name} ${JSON.stringify(axes)} gap ${gap}`;
      assert.deepEqual(arr.shape, ref.shape, what);
      assert.deepEqual(bytesOf(arr.data), ref.bytes, what);
    }
  }
});

test("bad selections are the caller's errors, not the archive's", async () => {
  const { header, elements } = open("2d");
  const r = new ArrayReader(header, memory(elements).fn);
  await assert.rejects(r.slice(5), RangeError);
  await assert.rejects(r.slice(0, -8), RangeError);
  await assert.rejects(r.slice(0, 0, 0), /too many indices/);
  await assert.rejects(r.slice([0, 3, 0]), /step cannot be zero/);
  await assert.rejects(r.slice(1.5), TypeError);
  await assert.rejects(r.slice("a"), TypeError);
  const empty = await r.slice([3, 1]);
  assert.deepEqual(empty.shape, [0, 7]);
  assert.equal(empty.data.length, 0);
});

// -- reads: a virtual 5000 x 5000 float64 matrix whose element e holds e

function matrixReader() {
  const reads = [];
  const most = { n: 0 };
  let inFlight = 0;
  const fn = async (off, len) => {
    reads.push([off, len]);
    inFlight++;
    most.n = Math.max(most.n, inFlight);
    await new Promise((resolve) => setImmediate(resolve));
    inFlight--;
    const out = new Float64Array(len / 8);
    for (let i = 0; i < out.length; i++) out[i] = off / 8 + i;
    return new Uint8Array(out.buffer);
  };
  return { fn, reads, most };
}

function headerBytes(descr, shape, tile) {
  // msgpack [descr, shape(, tile)] with small ints (< 2^16) only
  const parts = [];
  const arr = (n) => parts.push(0x90 + n);
  const int = (v) => (v < 128 ? parts.push(v) : parts.push(0xcd, v >> 8, v & 0xff));
  arr(tile ? 3 : 2);
  parts.push(0xa0 + descr.length, ...new TextEncoder().encode(descr));
  arr(shape.length);
  shape.forEach(int);
  if (tile) {
    arr(tile.length);
    tile.forEach(int);
  }
  const h = new Uint8Array(4 + parts.length);
  new DataView(h.buffer).setUint32(0, parts.length, true);
  h.set(parts, 4);
  return h;
}

test("a 64 x 64 block of a 5000 x 5000 matrix is 64 reads of 512 bytes", async () => {
  const header = parseArrayHeader(headerBytes("<f8", [5000, 5000]), 5000 * 5000 * 8);
  const { fn, reads } = matrixReader();
  const block = await new ArrayReader(header, fn).slice([1000, 1064], [2000, 2064]);
  assert.equal(reads.length, 64);
  assert.ok(reads.every(([, len]) => len === 512));
  assert.deepEqual(block.shape, [64, 64]);
  assert.equal(block.data[0], 1000 * 5000 + 2000);
  assert.equal(block.data[64 * 64 - 1], 1063 * 5000 + 2063);
});

test("whole rows are one read; a single element one read of its bytes", async () => {
  const header = parseArrayHeader(headerBytes("<f8", [5000, 5000]), 5000 * 5000 * 8);
  const m = matrixReader();
  const rows = await new ArrayReader(header, m.fn).slice([10, 20]);
  assert.deepEqual(m.reads, [[10 * 5000 * 8, 10 * 5000 * 8]]);
  assert.equal(rows.data[5000 * 10 - 1], 20 * 5000 - 1);
  const e = matrixReader();
  const one = await new ArrayReader(header, e.fn).slice(-1, -1);
  assert.deepEqual(e.reads, [[(5000 * 5000 - 1) * 8, 8]]);
  assert.deepEqual(one.shape, []);
  assert.equal(one.data[0], 5000 * 5000 - 1);
});

test("runs with small gaps are merged; a larger gap option merges a column's reads", async () => {
  const header = parseArrayHeader(headerBytes("<f8", [5000, 5000]), 5000 * 5000 * 8);
  const a = matrixReader();
  const every = await new ArrayReader(header, a.fn).slice(7, [null, null, 3]);
  assert.equal(a.reads.length, 1); // 8-byte runs 16 bytes apart
  assert.equal(every.data[1], 7 * 5000 + 3);
  const b = matrixReader();
  const col = await new ArrayReader(header, b.fn).slice([0, 1000], 3);
  assert.equal(b.reads.length, 1000); // 40 KB apart: a read each (gap 4096)
  assert.ok(b.most.n <= 64 && b.most.n > 1, `${b.most.n} reads in flight`);
  assert.equal(col.data[999], 999 * 5000 + 3);
  const c = matrixReader();
  const col2 = await new ArrayReader(header, c.fn, { gap: 1 << 16 }).slice(null, 3);
  assert.ok(c.reads.length <= 13, `${c.reads.length} reads`); // merged up to 16 MB each
  assert.deepEqual(Array.from(col2.data.slice(0, 3)), [3, 5003, 10003]);
});

// -- tiled: a real tiled layout built here (C index of each element, stored tile by tile)

function tiledMatrix(rows, cols, tr, tc) {
  const out = new Float64Array(rows * cols);
  let p = 0;
  for (let g0 = 0; g0 < rows; g0 += tr)
    for (let g1 = 0; g1 < cols; g1 += tc)
      for (let i = g0; i < Math.min(rows, g0 + tr); i++)
        for (let j = g1; j < Math.min(cols, g1 + tc); j++) out[p++] = i * cols + j;
  return new Uint8Array(out.buffer);
}

test("a tiled selection reads each tile it touches once", async () => {
  const elements = tiledMatrix(1000, 1000, 100, 100);
  const header = parseArrayHeader(headerBytes("<f8", [1000, 1000], [100, 100]), elements.length);
  const { fn, reads } = memory(elements);
  const block = await new ArrayReader(header, fn).slice([150, 250], [150, 250]);
  assert.ok(reads.length <= 4, `${reads.length} reads`);
  const tileBytes = 100 * 100 * 8;
  const touched = new Set(reads.map(([off]) => Math.floor(off / tileBytes)));
  assert.equal(touched.size, reads.length);
  for (let i = 0; i < 100; i++) for (let j = 0; j < 100; j++) assert.equal(block.data[i * 100 + j], (150 + i) * 1000 + 150 + j);
  const one = memory(elements);
  const e = await new ArrayReader(header, one.fn).slice(999, 998);
  assert.equal(one.reads.length, 1);
  assert.equal(one.reads[0][1], 8);
  assert.equal(e.data[0], 999 * 1000 + 998);
});

test("a selection touching very many tiles reads rows of tiles", async () => {
  const elements = tiledMatrix(300, 200, 2, 3);
  const header = parseArrayHeader(headerBytes("<f8", [300, 200], [2, 3]), elements.length);
  const { fn, reads } = memory(elements);
  const arr = await new ArrayReader(header, fn).slice([null, null, -1], [1, 199, 2]);
  assert.equal(reads.length, 1); // 480 KB: one batch of rows of tiles
  assert.deepEqual(arr.shape, [300, 99]);
  for (let i = 0; i < 300; i++) for (let j = 0; j < 99; j++) assert.equal(arr.data[i * 99 + j], (299 - i) * 200 + 1 + 2 * j);
  const all = await new ArrayReader(header, memory(elements).fn).all();
  for (let e = 0; e < 300 * 200; e++) assert.equal(all.data[e], e);
});

test("a reader giving the wrong number of bytes is refused", async () => {
  const { header, elements } = open("2d");
  const r = new ArrayReader(header, async (off, len) => elements.slice(off, off + len - 1));
  await assert.rejects(r.slice(1), /gave/);
  await assert.rejects(r.all(), /gave/);
});

test("a 0-d array's only selection is the whole; empty arrays read nothing", async () => {
  const zero = open("0d");
  const m = memory(zero.elements);
  const v = await new ArrayReader(zero.header, m.fn).slice();
  assert.deepEqual(v.shape, []);
  assert.equal(v.data[0], 3.25);
  await assert.rejects(new ArrayReader(zero.header, m.fn).slice(0), /too many indices/);
  for (const name of ["empty", "empty-2d", "tiled-empty"]) {
    const e = open(name);
    const r = memory(e.elements);
    const got = await new ArrayReader(e.header, r.fn).slice();
    assert.deepEqual(got.shape, fixtures.arrays[name].shape);
    assert.equal(got.data.length, 0);
    assert.equal(r.reads.length, 0);
  }
});
