// FileSource (Node paths) and BlobSource (Blob / File): reads, and a file changed after open.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, truncateSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { open } from "../dist/index.js";
import { openSource } from "../dist/io/open.js";
import { MemorySource } from "../dist/io/source.js";
import { openBody } from "../dist/io/body.js";
import { FileSource } from "../dist/io/file.js";
import { BlobSource } from "../dist/io/blob.js";
import { ArchiveChangedError, TruncatedError, NotAnArchiveError } from "../dist/errors.js";
import { File } from "node:buffer"; // (a global from Node 20 on)
import { golden, withFreeSpace } from "./support/craft.mjs";
import { fixture } from "./core-helpers.mjs";

const dir = mkdtempSync(join(tmpdir(), "msglc-io-"));
test.after(() => rmSync(dir, { recursive: true, force: true }));

function copy(name, bytes) {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

test("a file opens by path and by file: URL, and reads exactly the bytes asked for", async () => {
  const bytes = golden("hash-dict.mlc");
  const path = copy("a.mlc", bytes);
  for (const input of [path, pathToFileURL(path), pathToFileURL(path).href]) {
    const source = await openSource(input);
    assert.ok(source instanceof FileSource);
    assert.equal(source.size, bytes.length);
    assert.equal(source.name, path);
    const body = await openBody(source);
    assert.equal(body.major, 1);
    assert.deepEqual(await source.read(100, 50), bytes.subarray(100, 150));
    assert.deepEqual(await source.read(0, bytes.length), bytes);
    assert.deepEqual(await source.read(7, 0), new Uint8Array(0));
    await source.close();
  }
});

test("a large read goes through the async path and reads the same", async () => {
  const bytes = withFreeSpace(golden("matrix.mlc"), 3 << 20);
  for (let i = 16 + 14_600; i < bytes.length - 100; i += 4099) bytes[i] = i & 0xff; // free space: unread
  const path = copy("large.mlc", bytes);
  const source = await openSource(path);
  assert.deepEqual(await source.read(1, bytes.length - 1), bytes.subarray(1));
  await openBody(source);
  await source.close();
});

test("a read past the end of a file is TruncatedError", async () => {
  const bytes = golden("small-dict.mlc");
  const source = await openSource(copy("b.mlc", bytes));
  await assert.rejects(source.read(bytes.length - 1, 2), TruncatedError);
  await assert.rejects(source.read(-1, 2), TruncatedError);
  await source.close();
});

test("a file truncated after open: ArchiveChangedError, not TruncatedError", async () => {
  const bytes = withFreeSpace(golden("hash-dict.mlc"), 10_000);
  const path = copy("c.mlc", bytes);
  const source = await openSource(path);
  const body = await openBody(source);
  truncateSync(path, 5000);
  assert.deepEqual(await source.read(100, 10), bytes.subarray(100, 110)); // still there
  await assert.rejects(source.read(6000, 10), (e) => {
    assert.ok(e instanceof ArchiveChangedError, `${e?.name}: ${e?.message}`);
    assert.match(e.message, /changed since it was opened/);
    assert.match(e.message, /5000 now/);
    return true;
  });
  await assert.rejects(body.readToc(0, 10), ArchiveChangedError);
  // a read that starts before the new end and runs past it
  await assert.rejects(source.read(4990, 20), ArchiveChangedError);
  await source.close();
});

test("a file shorter than an archive, or a directory, fails clearly", async () => {
  const short = await openSource(copy("d.mlc", golden("small-dict.mlc").subarray(0, 50)));
  await assert.rejects(openBody(short), TruncatedError);
  const text = await openSource(copy("e.txt", "just some text, not an archive at all\n".repeat(4)));
  await assert.rejects(openBody(text), NotAnArchiveError);
  await assert.rejects(openSource(dir), (e) => e.code === "EISDIR");
  await assert.rejects(openSource(join(dir, "missing.mlc")), (e) => e.code === "ENOENT");
});

test("a Blob or File: slices read, counted, names kept", async () => {
  const bytes = golden("combined.mlc");
  const blob = new Blob([bytes]);
  const source = await openSource(blob);
  assert.ok(source instanceof BlobSource);
  assert.equal(source.name, "blob");
  assert.equal(source.size, bytes.length);
  const body = await openBody(source);
  assert.equal(body.dataLength, (await openBody(await openSource(bytes))).dataLength);
  assert.deepEqual(source.stats, { requests: 2, bytes: 16 + 64 });
  assert.deepEqual(await source.read(1000, 123), bytes.subarray(1000, 1123));
  await assert.rejects(source.read(bytes.length - 5, 6), TruncatedError);
  const file = new File([bytes], "combined.mlc");
  const named = await openSource(file);
  assert.equal(named.name, "combined.mlc");
  assert.equal((await openBody(named)).major, 1);
});

/** A File whose bytes changed on disk since it was picked: its reads fail as a browser's do. */
class ChangedFile extends File {
  slice() {
    return {
      arrayBuffer: () => Promise.reject(new DOMException("The requested file could not be read", "NotReadableError")),
    };
  }
}

test("a File that can no longer be read: ArchiveChangedError with the cause", async () => {
  const source = await openSource(new ChangedFile([golden("scalar.mlc")], "scalar.mlc"));
  await assert.rejects(openBody(source), (e) => {
    assert.ok(e instanceof ArchiveChangedError, `${e?.name}: ${e?.message}`);
    assert.equal(e.cause.name, "NotReadableError");
    assert.match(e.message, /scalar\.mlc/);
    assert.match(e.message, /NotReadableError/);
    assert.match(e.message, /reopen it/);
    return true;
  });
});

test("a Blob slice that comes back short: ArchiveChangedError", async () => {
  class ShortBlob extends Blob {
    slice(start, end) {
      return super.slice(start, end - 1);
    }
  }
  const source = new BlobSource(new ShortBlob([golden("scalar.mlc")]));
  await assert.rejects(source.read(0, 16), ArchiveChangedError);
});

/** A source over `bytes` that lists its reads, with `nodeWindow` if given. */
function recording(bytes, nodeWindow) {
  const inner = new MemorySource(bytes, "recorded");
  const reads = [];
  const source = {
    size: inner.size,
    name: inner.name,
    stats: inner.stats,
    read(offset, length) {
      reads.push([offset, length]);
      return inner.read(offset, length);
    },
    close: () => inner.close(),
  };
  if (nodeWindow !== undefined) source.nodeWindow = nodeWindow;
  return { source, reads };
}

test("a local file's node reads take the TOC bytes before the node, its kids then from memory", async () => {
  // core-t64.mlc: its TOC at 3390 (708 bytes), the root's node last in it (at 3806, 292
  // bytes), the node of the root's list "ints" first (3390, 15 bytes); the data at 16, the
  // root's map header 3 bytes, then the key "ints" (5 bytes) and its list
  const bytes = fixture("core-t64.mlc");
  const walk = async (input) => {
    const reader = await open(input);
    const opened = { ...reader.stats };
    const ints = await reader.read("ints");
    const got = [reader.stats.requests - opened.requests, reader.stats.bytes - opened.bytes];
    await reader.close();
    return { opened, ints, got };
  };
  const windowed = recording(bytes, 4096);
  const plain = recording(bytes);
  const fromWindow = await walk(windowed.source);
  const fromMemory = await walk(plain.source);
  // the header, the trailer, the root's node (with the TOC before it: all of it), its header;
  // then the key "ints" with the first 5 bytes of its list, its node (from memory, or read),
  // and the list, read whole
  assert.deepEqual(windowed.reads.slice(0, 5), [[0, 16], [4098, 64], [3390, 708], [16, 5], [19, 10]]);
  assert.deepEqual(plain.reads.slice(0, 6), [[0, 16], [4098, 64], [3806, 292], [16, 5], [19, 10], [3390, 15]]);
  assert.deepEqual(windowed.reads.slice(5), plain.reads.slice(6));
  assert.deepEqual(fromWindow.ints, fromMemory.ints);
  // a path: the same reads as the source that says it reads 4 KB before a node
  const fromFile = await walk(copy("t64.mlc", bytes));
  assert.deepEqual(fromFile, fromWindow);
});

test("a compressed archive's nodes are read alone, from a file too", async () => {
  const reader = await open(copy("zstd.mlc", golden("hash-dict-zstd.mlc")));
  assert.equal(reader.body.source.nodeWindow, 4096);
  assert.equal(reader.body.nodeWindow, 0);
  await reader.close();
  const memory = await open(golden("hash-dict.mlc"));
  assert.equal(memory.body.nodeWindow, 0);
  await memory.close();
});
