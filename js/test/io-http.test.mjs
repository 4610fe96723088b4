// HttpSource against the test range server: requests counted, versions pinned.
import { test } from "node:test";
import assert from "node:assert/strict";
import { openSource } from "../dist/io/open.js";
import { openBody } from "../dist/io/body.js";
import { MemorySource } from "../dist/io/source.js";
import { HttpSource, HttpError, TAIL_SIZE, HEAD_SIZE } from "../dist/io/http.js";
import { ArchiveChangedError, NotAnArchiveError, TruncatedError } from "../dist/errors.js";
import { startRangeServer } from "./support/range-server.mjs";
import { golden, withFreeSpace } from "./support/craft.mjs";

const PLAIN = ["appended.mlc", "block-list.mlc", "combined.mlc", "hash-dict.mlc", "inline-dict.mlc", "int-keys.mlc", "matrix.mlc", "numpy.mlc", "scalar.mlc", "small-dict.mlc", "streamed.mlc"];

/** A golden archive grown past the opening request's tail by free space (it reads the same:
 * every reference in a plain archive is relative). */
const large = (name) => withFreeSpace(golden(name), 100_000);

async function serve(files, options, fn) {
  const server = await startRangeServer(files instanceof Map ? files : new Map(Object.entries(files)), options);
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

function sameBody(got, want, what) {
  for (const k of ["major", "minor", "compression", "dataLength", "tocLength", "threshold", "dataCrc", "end"]) {
    assert.equal(got[k], want[k], `${what}: ${k}`);
  }
  assert.deepEqual(got.root, want.root, what);
}

test("a golden plain archive larger than the tail opens in exactly 2 requests", async () => {
  const files = new Map(PLAIN.map((n) => [n, large(n)]));
  await serve(files, {}, async (server) => {
    for (const [name, bytes] of files) {
      assert.ok(bytes.length > TAIL_SIZE);
      const source = await openSource(server.url(name));
      const body = await openBody(source);
      assert.equal(source.stats.requests, 2, name);
      sameBody(body, await openBody(new MemorySource(bytes)), name);
      const log = server.requests.filter((r) => r.name === name);
      assert.equal(log.length, 2, name);
      assert.equal(log[0].range, `bytes=-${TAIL_SIZE}`);
      assert.equal(log[1].range, `bytes=0-${HEAD_SIZE - 1}`);
      assert.match(log[1].headers["if-match"], /^"[0-9a-f]+"$/);
      // the root node lies in the tail, the root container's header in the head: no request
      if (body.root.len) await body.readToc(body.root.pos, body.root.len);
      await body.readData(0, Math.min(5, body.dataLength));
      assert.equal(source.stats.requests, 2, name);
      // the rest of the data is one request, pinned, and the bytes are the archive's
      const want = await openBody(new MemorySource(bytes));
      assert.deepEqual(await body.readData(0, body.dataLength), await want.readData(0, want.dataLength), name);
      assert.deepEqual(await body.readToc(0, body.tocLength), await want.readToc(0, want.tocLength), name);
      assert.equal(source.stats.requests, body.dataLength > HEAD_SIZE - 16 ? 3 : 2, name);
      await source.close();
    }
  });
});

test("an archive that fits in the tail opens in 1 request and reads without another", async () => {
  const files = new Map(PLAIN.map((n) => [n, golden(n)]));
  await serve(files, {}, async (server) => {
    for (const [name, bytes] of files) {
      assert.ok(bytes.length <= TAIL_SIZE);
      const source = await openSource(server.url(name));
      const body = await openBody(source);
      sameBody(body, await openBody(new MemorySource(bytes)), name);
      assert.deepEqual(await source.read(0, bytes.length), bytes);
      assert.deepEqual(source.stats, { requests: 1, bytes: bytes.length }, name);
      assert.equal(server.requests.filter((r) => r.name === name).length, 1);
    }
  });
});

test("a URL object, stats in bytes, and a read that ends in the tail fetches only what precedes it", async () => {
  const bytes = large("matrix.mlc");
  await serve({ "m.mlc": bytes }, {}, async (server) => {
    const source = await openSource(new URL(server.url("m.mlc")));
    assert.ok(source instanceof HttpSource);
    assert.equal(source.size, bytes.length);
    assert.equal(source.name, server.url("m.mlc"));
    assert.deepEqual(source.stats, { requests: 1, bytes: TAIL_SIZE });
    const start = bytes.length - TAIL_SIZE - 100;
    assert.deepEqual(await source.read(start, 300), bytes.subarray(start, start + 300));
    assert.equal(server.requests.at(-1).range, `bytes=${start}-${start + 99}`);
    assert.deepEqual(source.stats, { requests: 2, bytes: TAIL_SIZE + 100 });
    // reads in the middle: one request each, nothing kept
    assert.deepEqual(await source.read(10_000, 7), bytes.subarray(10_000, 10_007));
    assert.deepEqual(await source.read(10_000, 7), bytes.subarray(10_000, 10_007));
    assert.equal(source.stats.requests, 4);
    assert.deepEqual(await source.read(5, 0), new Uint8Array(0));
    assert.equal(source.stats.requests, 4);
  });
});

test("reads of the first bytes at once share one request", async () => {
  const bytes = large("hash-dict.mlc");
  await serve({ "h.mlc": bytes }, {}, async (server) => {
    const source = await openSource(server.url("h.mlc"));
    const parts = await Promise.all([source.read(0, 16), source.read(16, 5), source.read(100, 200), source.read(HEAD_SIZE - 1, 1)]);
    assert.deepEqual(parts[0], bytes.subarray(0, 16));
    assert.deepEqual(parts[1], bytes.subarray(16, 21));
    assert.deepEqual(parts[2], bytes.subarray(100, 300));
    assert.deepEqual(parts[3], bytes.subarray(HEAD_SIZE - 1, HEAD_SIZE));
    assert.equal(source.stats.requests, 2);
  });
});

test("a read past the end is TruncatedError, without a request", async () => {
  const bytes = large("numpy.mlc");
  await serve({ "n.mlc": bytes }, {}, async (server) => {
    const source = await openSource(server.url("n.mlc"));
    await assert.rejects(source.read(bytes.length - 10, 11), TruncatedError);
    await assert.rejects(source.read(bytes.length, 1), TruncatedError);
    await assert.rejects(source.read(-1, 1), TruncatedError);
    await assert.rejects(source.read(0, bytes.length + 1), TruncatedError);
    assert.equal(source.stats.requests, 1);
    assert.deepEqual(await source.read(bytes.length - 10, 10), bytes.subarray(bytes.length - 10));
  });
});

for (const [flavour, options, header] of [
  ["ETag (If-Match)", {}, "if-match"],
  ["Last-Modified (If-Unmodified-Since)", { etag: false }, "if-unmodified-since"],
  ["a weak ETag and Last-Modified (If-Unmodified-Since)", { weakEtag: true }, "if-unmodified-since"],
]) {
  test(`an object replaced after open: ArchiveChangedError, pinned by ${flavour}`, async () => {
    const one = large("hash-dict.mlc");
    const two = large("matrix.mlc");
    await serve({ "a.mlc": one }, options, async (server) => {
      const source = await openSource(server.url("a.mlc"));
      await openBody(source);
      assert.deepEqual(await source.read(20_000, 10), one.subarray(20_000, 20_010));
      const pinned = server.requests.at(-1).headers[header];
      assert.ok(pinned, `the read carries ${header}`);
      server.replace("a.mlc", two);
      await assert.rejects(source.read(30_000, 10), (e) => {
        assert.ok(e instanceof ArchiveChangedError, `${e?.name}: ${e?.message}`);
        assert.match(e.message, /changed since it was opened: reopen it/);
        assert.match(e.message, /412/);
        return true;
      });
      assert.equal(server.requests.at(-1).headers[header], pinned);
      // what was kept at open is still the old version's, and served
      assert.deepEqual(await source.read(0, 16), one.subarray(0, 16));
      // a new source sees the new object
      const again = await openSource(server.url("a.mlc"));
      assert.equal(again.size, two.length);
      assert.deepEqual(await again.read(30_000, 10), two.subarray(30_000, 30_010));
    });
  });
}

test("a server that ignores the conditions: a new ETag or size on a 206 is ArchiveChangedError", async () => {
  const one = large("hash-dict.mlc");
  const sameSize = one.slice();
  sameSize[50_000] ^= 0xff; // in the free space: same size, another version
  await serve({ "a.mlc": one }, { ignoreConditions: true }, async (server) => {
    const source = await openSource(server.url("a.mlc"));
    server.replace("a.mlc", sameSize);
    await assert.rejects(source.read(20_000, 10), (e) => e instanceof ArchiveChangedError && /ETag/.test(e.message));
    server.replace("a.mlc", large("matrix.mlc"));
    await assert.rejects(source.read(20_000, 10), (e) => e instanceof ArchiveChangedError && /bytes now/.test(e.message));
  });
  await serve({ "a.mlc": one }, { ignoreConditions: true, etag: false }, async (server) => {
    const source = await openSource(server.url("a.mlc"));
    server.replace("a.mlc", sameSize);
    await assert.rejects(source.read(20_000, 10), (e) => e instanceof ArchiveChangedError && /last modified/.test(e.message));
  });
  // no validator at all: only the size is compared
  await serve({ "a.mlc": one }, { ignoreConditions: true, etag: false, lastModified: false }, async (server) => {
    const source = await openSource(server.url("a.mlc"));
    server.replace("a.mlc", one.subarray(0, one.length - 1));
    await assert.rejects(source.read(20_000, 10), ArchiveChangedError);
    assert.equal(server.requests.at(-1).headers["if-match"], undefined);
    assert.equal(server.requests.at(-1).headers["if-unmodified-since"], undefined);
  });
});

test("an object cut shorter than a read: 416 is ArchiveChangedError", async () => {
  const one = large("hash-dict.mlc");
  await serve({ "a.mlc": one }, { ignoreConditions: true }, async (server) => {
    const source = await openSource(server.url("a.mlc"));
    server.replace("a.mlc", one.subarray(0, 1000));
    await assert.rejects(source.read(20_000, 10), (e) => e instanceof ArchiveChangedError && /416/.test(e.message));
  });
});

test("a range answered with the whole object (200) after open: ArchiveChangedError", async () => {
  const one = large("hash-dict.mlc");
  let ranges = true;
  const fetchSome = (url, init) => {
    const headers = new Headers(init.headers);
    if (!ranges) headers.delete("Range");
    return fetch(url, { ...init, headers });
  };
  await serve({ "a.mlc": one }, {}, async (server) => {
    const source = await openSource(server.url("a.mlc"), { fetch: fetchSome });
    ranges = false;
    await assert.rejects(source.read(20_000, 10), (e) => e instanceof ArchiveChangedError && /200/.test(e.message));
  });
});

test("a server without Range support: a small object is read whole, a large one refused", async () => {
  const small = golden("combined.mlc");
  const big = large("combined.mlc");
  await serve({ "s.mlc": small, "b.mlc": big }, { range: false }, async (server) => {
    const source = await openSource(server.url("s.mlc"));
    const body = await openBody(source);
    sameBody(body, await openBody(new MemorySource(small)), "s.mlc");
    assert.deepEqual(await source.read(0, small.length), small);
    assert.equal(source.stats.requests, 1);
    await assert.rejects(openSource(server.url("b.mlc")), (e) => {
      assert.ok(e instanceof TypeError, `${e?.name}: ${e?.message}`);
      assert.match(e.message, /support Range requests/);
      assert.match(e.message, /b\.mlc/);
      return true;
    });
  });
});

test("the body of a refused whole-object answer is not read to its end", async () => {
  // A body that would never end: opening must give up after the tail's worth of bytes.
  let pulled = 0;
  const endless = async () =>
    new Response(
      new ReadableStream({
        pull(controller) {
          pulled += 8192;
          controller.enqueue(new Uint8Array(8192));
        },
      }),
      { status: 200 },
    );
  await assert.rejects(HttpSource.open("http://example.invalid/a.mlc", { fetch: endless }), /support Range requests/);
  assert.ok(pulled <= TAIL_SIZE + 3 * 8192, `pulled ${pulled} bytes`);
});

test("an empty object opens as an empty source (416 to the suffix range)", async () => {
  await serve({ "e.mlc": new Uint8Array(0) }, {}, async (server) => {
    const source = await openSource(server.url("e.mlc"));
    assert.equal(source.size, 0);
    await assert.rejects(openBody(source), NotAnArchiveError);
  });
});

test("HTTP errors and network errors name the URL, status and range", async () => {
  await serve({ "a.mlc": golden("scalar.mlc") }, {}, async (server) => {
    await assert.rejects(openSource(server.url("missing.mlc")), (e) => {
      assert.ok(e instanceof HttpError);
      assert.ok(e instanceof Error);
      assert.equal(e.status, 404);
      assert.match(e.message, /missing\.mlc/);
      assert.match(e.message, /404/);
      assert.match(e.message, /bytes=-65536/);
      return true;
    });
  });
  const server = await startRangeServer(new Map([["a.mlc", large("scalar.mlc")]]));
  const url = server.url("a.mlc");
  const source = await openSource(url);
  await server.close();
  await assert.rejects(source.read(20_000, 10), (e) => {
    assert.ok(e instanceof HttpError, `${e?.name}: ${e?.message}`);
    assert.equal(e.status, undefined);
    assert.ok(e.cause !== undefined);
    assert.ok(e.message.includes(url));
    assert.match(e.message, /bytes=20000-20009/);
    return true;
  });
  // a 5xx on a later read
  const failing = async (u, init) => (new Headers(init.headers).has("If-Match") ? new Response("oops", { status: 503, statusText: "Service Unavailable" }) : fetch(u, init));
  await serve({ "a.mlc": large("scalar.mlc") }, {}, async (s) => {
    const src = await openSource(s.url("a.mlc"), { fetch: failing });
    await assert.rejects(src.read(20_000, 10), (e) => e instanceof HttpError && e.status === 503 && /503 Service Unavailable/.test(e.message));
  });
});

test("options: extra headers go with every request, through the fetch given", async () => {
  let calls = 0;
  const counting = (url, init) => {
    calls++;
    return fetch(url, init);
  };
  await serve({ "a.mlc": large("inline-dict.mlc") }, {}, async (server) => {
    const source = await openSource(server.url("a.mlc"), { headers: { Authorization: "Bearer xyz" }, fetch: counting });
    await openBody(source);
    await source.read(30_000, 10);
    assert.equal(calls, 3);
    assert.equal(source.stats.requests, 3);
    assert.deepEqual(server.requests.map((r) => r.headers.authorization), ["Bearer xyz", "Bearer xyz", "Bearer xyz"]);
  });
});

test("a 206 whose Content-Range is not the range asked for is refused", async () => {
  const bytes = large("scalar.mlc");
  const lying = async (url, init) => {
    const res = await fetch(url, init);
    const range = new Headers(init.headers).get("Range");
    if (range.startsWith("bytes=-")) return res;
    await res.arrayBuffer();
    return new Response(new Uint8Array(10), { status: 206, headers: { "Content-Range": `bytes 0-9/${bytes.length}` } });
  };
  await serve({ "a.mlc": bytes }, {}, async (server) => {
    const source = await openSource(server.url("a.mlc"), { fetch: lying });
    await assert.rejects(source.read(20_000, 10), (e) => e instanceof HttpError && /expected bytes 20000-20009/.test(e.message));
  });
});
