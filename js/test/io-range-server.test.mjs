// The test HTTP server other tests (and the Python cross tests) rely on: ranges, validators,
// conditions, the request log, and its command line.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { startRangeServer, parseRange } from "./support/range-server.mjs";
import { golden } from "./support/craft.mjs";

const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 0xff);

async function get(url, headers = {}, method = "GET") {
  const res = await fetch(url, { method, headers });
  return { status: res.status, headers: res.headers, body: new Uint8Array(await res.arrayBuffer()) };
}

test("ranges: suffix, closed, open-ended, clipped; 416 past the end; 200 without one", async () => {
  const server = await startRangeServer(new Map([["a", bytes]]));
  try {
    const url = server.url("a");
    let r = await get(url, { Range: "bytes=-100" });
    assert.equal(r.status, 206);
    assert.equal(r.headers.get("content-range"), "bytes 900-999/1000");
    assert.deepEqual(r.body, bytes.subarray(900));
    r = await get(url, { Range: "bytes=-5000" });
    assert.equal(r.headers.get("content-range"), "bytes 0-999/1000");
    assert.equal(r.body.length, 1000);
    r = await get(url, { Range: "bytes=10-19" });
    assert.equal(r.status, 206);
    assert.deepEqual(r.body, bytes.subarray(10, 20));
    r = await get(url, { Range: "bytes=990-" });
    assert.deepEqual(r.body, bytes.subarray(990));
    r = await get(url, { Range: "bytes=990-5000" });
    assert.equal(r.headers.get("content-range"), "bytes 990-999/1000");
    r = await get(url, { Range: "bytes=1000-1001" });
    assert.equal(r.status, 416);
    assert.equal(r.headers.get("content-range"), "bytes */1000");
    r = await get(url);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, bytes);
    assert.equal(r.headers.get("accept-ranges"), "bytes");
    r = await get(url, { Range: "bytes=0-1,5-6" }); // several ranges: the whole object
    assert.equal(r.status, 200);
    r = await get(url, { Range: "bytes=0-9" }, "HEAD");
    assert.equal(r.status, 206);
    assert.equal(r.headers.get("content-length"), "10");
    r = await get(server.url("nope"));
    assert.equal(r.status, 404);
    assert.deepEqual(
      server.requests.slice(0, 3).map((q) => [q.method, q.name, q.range]),
      [["GET", "a", "bytes=-100"], ["GET", "a", "bytes=-5000"], ["GET", "a", "bytes=10-19"]],
    );
    assert.equal(server.requests.length, 10);
  } finally {
    await server.close();
  }
  assert.deepEqual(parseRange("bytes=-0", 10), "unsatisfiable");
  assert.deepEqual(parseRange("bytes=-1", 0), "unsatisfiable");
  assert.equal(parseRange("bytes=5-2", 10), null);
  assert.equal(parseRange("items=0-1", 10), null);
});

test("validators and conditions: If-Match and If-Unmodified-Since give 412 once replaced", async () => {
  const server = await startRangeServer(new Map([["a", bytes]]));
  try {
    const url = server.url("a");
    const first = await get(url, { Range: "bytes=0-0" });
    const etag = first.headers.get("etag");
    const modified = first.headers.get("last-modified");
    assert.match(etag, /^"[0-9a-f]+"$/);
    assert.ok(modified);
    assert.equal((await get(url, { Range: "bytes=0-0", "If-Match": etag })).status, 206);
    assert.equal((await get(url, { Range: "bytes=0-0", "If-Unmodified-Since": modified })).status, 206);
    assert.equal((await get(url, { "If-Match": '"other"' })).status, 412);
    server.replace("a", bytes.subarray(1));
    const after = await get(url, { Range: "bytes=0-0" });
    assert.notEqual(after.headers.get("etag"), etag);
    assert.ok(Date.parse(after.headers.get("last-modified")) > Date.parse(modified));
    assert.equal((await get(url, { Range: "bytes=0-0", "If-Match": etag })).status, 412);
    assert.equal((await get(url, { Range: "bytes=0-0", "If-Unmodified-Since": modified })).status, 412);
    assert.equal((await get(url, { "If-Match": "*" })).status, 200);
  } finally {
    await server.close();
  }
});

test("options: no Range, no ETag, weak ETags, conditions ignored", async () => {
  const server = await startRangeServer({ a: bytes }, { range: false, etag: false });
  try {
    const r = await get(server.url("a"), { Range: "bytes=-10" });
    assert.equal(r.status, 200);
    assert.equal(r.body.length, 1000);
    assert.equal(r.headers.get("etag"), null);
    assert.equal(r.headers.get("accept-ranges"), null);
  } finally {
    await server.close();
  }
  const weak = await startRangeServer({ a: bytes }, { weakEtag: true, lastModified: false });
  try {
    const r = await get(weak.url("a"), { Range: "bytes=-10" });
    assert.match(r.headers.get("etag"), /^W\//);
    assert.equal(r.headers.get("last-modified"), null);
    assert.equal((await get(weak.url("a"), { "If-Match": r.headers.get("etag") })).status, 412); // strong comparison
  } finally {
    await weak.close();
  }
  const lax = await startRangeServer({ a: bytes }, { ignoreConditions: true });
  try {
    assert.equal((await get(lax.url("a"), { "If-Match": '"other"', Range: "bytes=0-1" })).status, 206);
  } finally {
    await lax.close();
  }
});

test("files served from a path are read at each request", async () => {
  const path = fileURLToPath(new URL("../../tests/golden/small-dict.mlc", import.meta.url));
  const server = await startRangeServer(new Map([["s.mlc", path]]));
  try {
    const r = await get(server.url("s.mlc"), { Range: "bytes=-16" });
    assert.equal(r.status, 206);
    const whole = golden("small-dict.mlc");
    assert.deepEqual(r.body, whole.subarray(whole.length - 16));
    assert.equal(r.headers.get("content-range"), `bytes ${whole.length - 16}-${whole.length - 1}/${whole.length}`);
    assert.ok(r.headers.get("etag"));
  } finally {
    await server.close();
  }
});

test("the command line prints its base URL, serves the files, and logs requests at /__log", async () => {
  const script = fileURLToPath(new URL("./support/range-server.mjs", import.meta.url));
  const file = fileURLToPath(new URL("../../tests/golden/scalar.mlc", import.meta.url));
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, [script, file], { stdio: ["ignore", "pipe", "inherit"], env });
  try {
    const base = await new Promise((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (d) => {
        out += d;
        if (out.includes("\n")) resolve(out.trim());
      });
      child.once("exit", (code) => reject(new Error(`exited with ${code} before printing its URL`)));
    });
    assert.match(base, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const r = await get(`${base}scalar.mlc`, { Range: "bytes=0-7" });
    assert.equal(r.status, 206);
    assert.deepEqual(r.body, golden("scalar.mlc").subarray(0, 8));
    const log = await (await fetch(`${base}__log?clear=1`)).json();
    assert.deepEqual(log.map((q) => [q.method, q.name, q.range]), [["GET", "scalar.mlc", "bytes=0-7"]]);
    assert.deepEqual(await (await fetch(`${base}__log`)).json(), []);
  } finally {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    assert.equal(await exited, 0);
  }
});
