#!/usr/bin/env node
/**
 * A small HTTP server for tests: serves named files with `Range` requests (suffix and normal
 * ranges), `ETag` / `Last-Modified` validators and the conditions that pin them (`If-Match`,
 * `If-Unmodified-Since`: 412), 416 for an unsatisfiable range, and logs every request.
 *
 *   const server = await startRangeServer(new Map([["a.mlc", bytesOrPath]]), options);
 *   server.url("a.mlc"); server.requests; server.replace("a.mlc", newBytes); await server.close();
 *
 * Options: `range: false` (ignore Range: 200 and the whole body), `etag: false`,
 * `lastModified: false`, `weakEtag: true` (W/"..." validators), `ignoreConditions: true`
 * (a server that ignores If-Match and If-Unmodified-Since).
 *
 * Command line (the Python cross tests use it):
 *
 *   node js/test/support/range-server.mjs [--no-range] [--no-etag] [--no-last-modified] FILE...
 *
 * prints its base URL (`http://127.0.0.1:PORT/`) on a line of stdout, serves each FILE under
 * its base name, read from disk at every request, until killed. `GET /__log` answers the
 * JSON list of the requests so far (`/__log?clear=1` also empties it); it is not logged.
 */
import { createServer } from "node:http";
import { createHash } from "node:crypto";
import { open as fsOpen, stat } from "node:fs/promises";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";

/** What the server holds for a name: bytes in memory, or a path read at each request. */
class Entry {
  constructor(content) {
    this.set(content);
  }

  set(content, previous) {
    if (typeof content === "string") {
      this.path = content;
      this.bytes = null;
      return;
    }
    this.path = null;
    this.bytes = content instanceof Uint8Array ? content : new Uint8Array(content);
    this.etag = createHash("sha256").update(this.bytes).digest("hex").slice(0, 32);
    // Last-Modified has one-second resolution: a replacement must move it by at least that.
    const now = Math.floor(Date.now() / 1000) * 1000;
    this.mtime = previous === undefined ? now : Math.max(now, previous + 1000);
  }

  /** { size, etag, mtime (ms), read(start, end) } of the current version. */
  async current() {
    if (this.bytes) {
      const bytes = this.bytes;
      return { size: bytes.length, etag: this.etag, mtime: this.mtime, read: async (a, b) => bytes.subarray(a, b) };
    }
    const path = this.path;
    const st = await stat(path, { bigint: true });
    const mtime = Number(st.mtimeMs);
    return {
      size: Number(st.size),
      etag: `${st.ino.toString(16)}-${st.size.toString(16)}-${st.mtimeNs.toString(16)}`,
      mtime: Math.floor(mtime / 1000) * 1000,
      read: async (a, b) => {
        const handle = await fsOpen(path, "r");
        try {
          const out = new Uint8Array(b - a);
          let got = 0;
          while (got < out.length) {
            const { bytesRead } = await handle.read(out, got, out.length - got, a + got);
            if (bytesRead === 0) break;
            got += bytesRead;
          }
          return out.subarray(0, got);
        } finally {
          await handle.close();
        }
      },
    };
  }
}

/** The one range of a `Range: bytes=...` header as [start, end) for `size`, "unsatisfiable",
 * or null (absent, malformed or several ranges: served whole, as RFC 9110 allows). */
export function parseRange(header, size) {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null;
  if (m[1] === "") {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return "unsatisfiable";
    return [Math.max(0, size - n), size];
  }
  const start = Number(m[1]);
  const last = m[2] === "" ? size - 1 : Number(m[2]);
  if (last < start) return null;
  if (start >= size) return "unsatisfiable";
  return [start, Math.min(last + 1, size)];
}

function etagMatches(ifMatch, etag, weak) {
  if (ifMatch.trim() === "*") return true;
  if (weak) return false; // If-Match uses the strong comparison: a weak tag never matches
  return ifMatch.split(",").some((t) => t.trim() === `"${etag}"`);
}

/**
 * Serve `files` (a Map, or an object, of name -> Uint8Array | path) on 127.0.0.1, on a free
 * port. Resolves to `{ base, url(name), requests, close(), replace(name, bytes) }`.
 */
export async function startRangeServer(files, options = {}) {
  const opts = { range: true, etag: true, lastModified: true, weakEtag: false, ignoreConditions: false, ...options };
  const entries = new Map();
  for (const [name, content] of files instanceof Map ? files : Object.entries(files)) entries.set(name, new Entry(content));
  const requests = [];

  const server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" });
      res.end(String(e));
    });
  });

  async function handle(req, res) {
    const url = new URL(req.url, "http://localhost");
    const cors = {
      "Access-Control-Allow-Origin": "*",
      "Access-Control-Expose-Headers": "Content-Range, Content-Length, ETag, Last-Modified, Accept-Ranges",
    };
    if (url.pathname === "/__log") {
      const body = JSON.stringify(requests);
      if (url.searchParams.has("clear")) requests.length = 0;
      res.writeHead(200, { "Content-Type": "application/json", ...cors });
      res.end(body);
      return;
    }
    const name = decodeURIComponent(url.pathname.slice(1));
    requests.push({ method: req.method, name, range: req.headers.range ?? null, headers: { ...req.headers } });
    if (req.method === "OPTIONS") {
      res.writeHead(204, {
        ...cors,
        "Access-Control-Allow-Methods": "GET, HEAD",
        "Access-Control-Allow-Headers": "Range, If-Match, If-Unmodified-Since, Authorization",
      });
      res.end();
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD", ...cors });
      res.end();
      return;
    }
    const entry = entries.get(name);
    if (!entry) {
      res.writeHead(404, { "Content-Type": "text/plain", ...cors });
      res.end(`no such file: ${name}\n`);
      return;
    }
    let cur;
    try {
      cur = await entry.current();
    } catch {
      res.writeHead(404, { "Content-Type": "text/plain", ...cors });
      res.end(`no such file: ${name}\n`);
      return;
    }
    const headers = { ...cors, "Cache-Control": "no-store" };
    if (opts.range) headers["Accept-Ranges"] = "bytes";
    if (opts.etag) headers.ETag = `${opts.weakEtag ? "W/" : ""}"${cur.etag}"`;
    if (opts.lastModified) headers["Last-Modified"] = new Date(cur.mtime).toUTCString();

    if (!opts.ignoreConditions) {
      const ifMatch = req.headers["if-match"];
      const ius = req.headers["if-unmodified-since"];
      let failed = false;
      if (ifMatch !== undefined) failed = !opts.etag || !etagMatches(ifMatch, cur.etag, opts.weakEtag);
      else if (ius !== undefined && opts.lastModified) {
        const since = Date.parse(ius);
        failed = !Number.isNaN(since) && cur.mtime > since;
      }
      if (failed) {
        res.writeHead(412, headers);
        res.end();
        return;
      }
    }

    const range = opts.range ? parseRange(req.headers.range, cur.size) : null;
    if (range === "unsatisfiable") {
      res.writeHead(416, { ...headers, "Content-Range": `bytes */${cur.size}` });
      res.end();
      return;
    }
    const [start, end] = range ?? [0, cur.size];
    if (range) headers["Content-Range"] = `bytes ${start}-${end - 1}/${cur.size}`;
    headers["Content-Type"] = "application/octet-stream";
    headers["Content-Length"] = String(end - start);
    res.writeHead(range ? 206 : 200, headers);
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    // Large bodies go out in pieces, so that a client that stops reading is not sent it all.
    const PIECE = 1 << 20;
    for (let at = start; at < end; at += PIECE) {
      const piece = await cur.read(at, Math.min(end, at + PIECE));
      if (res.destroyed) return;
      if (!res.write(piece)) await new Promise((resolve) => res.once("drain", resolve).once("close", resolve));
      if (res.destroyed) return;
    }
    res.end();
  }

  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", resolve);
  });
  const { port } = server.address();
  const base = `http://127.0.0.1:${port}/`;
  return {
    base,
    requests,
    url: (name) => base + encodeURIComponent(name),
    replace(name, bytes) {
      const entry = entries.get(name);
      if (entry) entry.set(bytes, entry.mtime ?? Date.now());
      else entries.set(name, new Entry(bytes));
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function main(argv) {
  const options = {};
  const files = new Map();
  for (const arg of argv) {
    if (arg === "--no-range") options.range = false;
    else if (arg === "--no-etag") options.etag = false;
    else if (arg === "--no-last-modified") options.lastModified = false;
    else if (arg.startsWith("--")) {
      process.stderr.write(`range-server: unknown option ${arg}\n`);
      process.exit(2);
    } else {
      const name = basename(arg);
      if (files.has(name)) {
        process.stderr.write(`range-server: two files named ${name}\n`);
        process.exit(2);
      }
      files.set(name, arg);
    }
  }
  if (files.size === 0) {
    process.stderr.write("usage: node range-server.mjs [--no-range] [--no-etag] [--no-last-modified] FILE...\n");
    process.exit(2);
  }
  const server = await startRangeServer(files, options);
  process.stdout.write(`${server.base}\n`);
  const stop = () => server.close().then(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

// (not when a test runner loads this file as one of its tests)
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1] && !process.env.NODE_TEST_CONTEXT) {
  main(process.argv.slice(2)).catch((e) => {
    process.stderr.write(`range-server: ${e?.stack ?? e}\n`);
    process.exit(1);
  });
}
