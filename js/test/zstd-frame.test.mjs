import { test } from "node:test";
import assert from "node:assert/strict";
import { decompressFrame, dictionaryBlocks, frameLayout } from "../dist/io/zstd.js";
import { xxh64Low32 } from "../dist/util/xxh64.js";
import { CorruptedError } from "../dist/errors.js";

/** A zstd frame of `content` in one raw block: header descriptor `fhd`, then `extra`
 * header bytes (window descriptor, dictionary ID, content size as `fhd` says). */
function frame(content, fhd, extra, { checksum = true, trailing = [] } = {}) {
  const bh = 1 | (content.length << 3);
  const parts = [0x28, 0xb5, 0x2f, 0xfd, fhd, ...extra, bh & 0xff, (bh >> 8) & 0xff, (bh >> 16) & 0xff, ...content];
  if (checksum) {
    const c = xxh64Low32(Uint8Array.from(content));
    parts.push(c & 0xff, (c >>> 8) & 0xff, (c >>> 16) & 0xff, c >>> 24);
  }
  return Uint8Array.from([...parts, ...trailing]);
}
const le32 = (v) => [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, v >>> 24];
const content = Array.from({ length: 300 }, (_, i) => (i * 7) & 0xff);

test("a raw frame as msglc writes it decodes, its checksum checked", () => {
  const f = frame(content, 0xa4, le32(content.length));
  assert.deepEqual(decompressFrame(f, 300, "frame"), Uint8Array.from(content));
  const bad = f.slice();
  bad[20] ^= 1;
  assert.throws(() => decompressFrame(bad, 300, "frame 7 at offset 99"), (e) => e instanceof CorruptedError && /frame 7 at offset 99 fails its content checksum/.test(e.message));
});

test("frames the spec refuses give CorruptedError", () => {
  const cases = [
    ["no checksum", frame(content, 0xa0, le32(300), { checksum: false }), /no checksum/],
    ["another size", frame(content, 0xa4, le32(300)), /declares 300 bytes/, 299],
    ["no content size", frame(content, 0x04, [4 << 3]), /no content size/],
    ["a dictionary ID", frame(content, 0xa5, [7, ...le32(300)]), /dictionary ID 7/],
    ["a huge window", frame(content, 0x84, [18 << 3, ...le32(300)]), /window/],
    ["bytes after it", frame(content, 0xa4, le32(300), { trailing: [0] }), /follow it/],
    ["not a frame", Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), /not a zstd frame/],
    ["cut short", frame(content, 0xa4, le32(300)).subarray(0, 100), /not a zstd frame/],
  ];
  for (const [what, f, message, expected = 300] of cases) {
    assert.throws(() => decompressFrame(f, expected, "frame"), (e) => e instanceof CorruptedError && message.test(e.message), what);
  }
});

test("a frame whose blocks fzstd cannot decode gives CorruptedError, not fzstd's error", () => {
  // a compressed block (type 2) of garbage, with a correct-looking header
  const body = [0xff, 0xfe, 0x00, 0x13, 0x99, 0x42, 0x17];
  const bh = 1 | (2 << 1) | (body.length << 3);
  const f = Uint8Array.from([0x28, 0xb5, 0x2f, 0xfd, 0xa4, ...le32(100), bh & 0xff, (bh >> 8) & 0xff, bh >> 16, ...body, 0, 0, 0, 0]);
  assert.throws(() => decompressFrame(f, 100, "frame 3"), CorruptedError);
});

test("frameLayout walks the header and the blocks", () => {
  const f = frame(content, 0xa4, le32(300));
  const layout = frameLayout(f);
  assert.equal(layout.headerSize, 9);
  assert.equal(layout.contentSize, 300);
  assert.equal(layout.checksum, true);
  assert.equal(layout.dictId, 0);
  assert.equal(layout.blocksEnd, f.length - 4);
});

test("a dictionary becomes raw blocks of at most 128 KB", () => {
  const dict = new Uint8Array(300000).map((_, i) => i & 0xff);
  const blocks = dictionaryBlocks(dict);
  assert.equal(blocks.length, dict.length + 3 * 3);
  let at = 0, total = 0;
  while (at < blocks.length) {
    const bh = blocks[at] | (blocks[at + 1] << 8) | (blocks[at + 2] << 16);
    assert.equal(bh & 7, 0, "raw, not last");
    assert.ok(bh >>> 3 <= 131072);
    total += bh >>> 3;
    at += 3 + (bh >>> 3);
  }
  assert.equal(total, dict.length);
});
