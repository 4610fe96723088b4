// FileSource (Node paths) and BlobSource (Blob / File): reads, and a file changed after open.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, truncateSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { openSource } from "../dist/io/open.js";
import { openBody } from "../dist/io/body.js";
import { FileSource } from "../dist/io/file.js";
import { BlobSource } from "../dist/io/blob.js";
import { ArchiveChangedError, TruncatedError, NotAnArchiveError } from "../dist/errors.js";
import { File } from "node:buffer"; // (a global from Node 20 on)
import { golden, withFreeSpace } from "./support/craft.mjs";

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
