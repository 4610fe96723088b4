// A damaged zstd frame whose Huffman weights are FSE-coded with a table that gives one symbol
// every state: fzstd (0.1.1) loops forever decoding it, so the reader must refuse the frame
// first. Decoded in a worker, so that a regression fails this test instead of hanging the run.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Worker } from "node:worker_threads";

/** A frame of 10 content bytes (single segment, checksum flag) with one compressed block:
 * compressed literals (3-byte header), then a Huffman tree description of 5 bytes: an FSE
 * table of accuracy log 5 whose first symbol takes the whole table (6 bits 111111), then 3
 * bytes of weights stream (the first two states take 5 bits each; every later one 0). */
export function stallingFrame() {
  const block = [0xa2, 0x00, 0x00, 0x05, 0xf0, 0x03, 0x00, 0x00, 0x01];
  const bh = 1 | (2 << 1) | (block.length << 3);
  return Uint8Array.from([0x28, 0xb5, 0x2f, 0xfd, 0x24, 10, bh & 0xff, (bh >> 8) & 0xff, bh >> 16, ...block, 0, 0, 0, 0]);
}

const WORKER = `
import { parentPort, workerData } from "node:worker_threads";
const { decompressFrame } = await import(workerData.zstd);
const { CorruptedError } = await import(workerData.errors);
try {
  decompressFrame(workerData.frame, 10, "frame 0");
  parentPort.postMessage({ value: true });
} catch (e) {
  parentPort.postMessage({ name: e.constructor.name, corrupted: e instanceof CorruptedError, message: e.message });
}
`;

test("a frame whose Huffman weights would never end decoding gives CorruptedError", async () => {
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: {
      frame: stallingFrame(),
      zstd: new URL("../dist/io/zstd.js", import.meta.url).href,
      errors: new URL("../dist/errors.js", import.meta.url).href,
    },
  });
  let timer;
  try {
    const answer = await Promise.race([
      new Promise((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
      }),
      // (not a timing assertion: a bound on a loop that never ends, generous on any machine)
      new Promise((resolve) => {
        timer = setTimeout(() => resolve({ hung: true }), 60_000);
      }),
    ]);
    assert.ok(!answer.hung, "decoding the frame never ended");
    assert.ok(answer.corrupted, `expected CorruptedError, got ${JSON.stringify(answer)}`);
    assert.match(answer.message, /frame 0/);
    assert.match(answer.message, /Huffman weights/);
  } finally {
    clearTimeout(timer);
    await worker.terminate();
  }
});
