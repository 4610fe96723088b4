#!/usr/bin/env node
// Read many paths of one archive in one process, for the cross-implementation tests
// (tests/js/). Usage:
//
//   node read-paths.mjs [--data] [--api] [--timeout-ms N] ARCHIVE_OR_URL < paths.json
//
// stdin: a JSON array of str paths. stdout: one JSON line per path, in order, with
//   "msgpack": base64, "json": text     what `msglc-js get --format msgpack|json` prints
//   or "error": ClassName, "message"    the error it raised (Python's class for a path error)
//   "value": tagged                     with --api: `reader.read(path)` as tagged JSON (below)
//   or "apiError": {error, message}
// then a last line {"stats": reader.stats at the end, "opened": reader.stats after open}.
// stdin may also be {"archives": [...], "paths": [...]} or {"jobs": [{"archive", "paths"}...]}
// (ARCHIVE not given): one line per
// archive, {"archive", "lines": [...], "stats", "opened"}, then {"stats": null}.
// --no-cli leaves the command line's forms out; --timeout-ms N fails a read that takes longer.
//
// --data: ARCHIVE is a plain msgpack file (an archive's data section), resolved without the
// reader: this checks the command line's own msgpack and JSON forms.
//
// Tagged JSON of JavaScript values: numbers as they are except NaN/Infinity
// ({"$float": "NaN"}), bigint {"$int": "digits"}, Uint8Array {"$bytes": base64}, Map
// {"$map": [[k, v], ...]}, plain object {"$obj": [[k, v], ...]} (order kept), Date
// {"$date": ms}, NDArray {"$nd": [dtype, shape, tagged data list or base64 of raw bytes]}.
import { readFileSync } from "node:fs";
import path from "node:path";

// (nothing when `node --test test/` loads this file as one of its tests)
if (process.env.NODE_TEST_CONTEXT) process.exit(0);

const here = new URL("../../dist/", import.meta.url);
let dist;
try {
  dist = {
    index: await import(new URL("index.js", here)),
    cli: await import(new URL("cli/main.js", here)),
    mp: await import(new URL("cli/msgpack.js", here)),
  };
} catch (e) {
  process.stderr.write(`js/dist is missing or broken: build it with (cd js && npm ci && npm run build): ${e}\n`);
  process.exit(3);
}

const args = process.argv.slice(2);
const flags = new Set(args.filter((a) => a.startsWith("--") && !/^\d+$/.test(a)));
const timeoutAt = args.indexOf("--timeout-ms");
const timeoutMs = timeoutAt >= 0 ? Number(args[timeoutAt + 1]) : 0;
const target = args.filter((a, i) => !a.startsWith("--") && !(timeoutAt >= 0 && i === timeoutAt + 1))[0];
process.on("unhandledRejection", (e) => {
  process.stderr.write(`unhandled rejection: ${e?.stack ?? e}\n`);
  process.exit(4);
});
const paths = JSON.parse(readFileSync(0, "utf8"));

function tag(v) {
  if (v === null || typeof v === "boolean" || typeof v === "string") return v;
  if (typeof v === "number") return Number.isFinite(v) ? (Object.is(v, -0) ? { $float: "-0.0" } : v) : { $float: String(v) };
  if (typeof v === "bigint") return { $int: v.toString() };
  if (v instanceof Uint8Array) return { $bytes: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") };
  if (v instanceof Date) return { $date: v.getTime() };
  if (Array.isArray(v)) return v.map(tag);
  if (v instanceof Map) return { $map: [...v].map(([k, x]) => [tag(k), tag(x)]) };
  if (typeof v === "object" && "dtype" in v && "shape" in v && "data" in v && ArrayBuffer.isView(v.data)) {
    const d = v.data;
    const data =
      d instanceof Uint8Array && !/^[|<>]?[bu]1$/.test(v.dtype)
        ? { $raw: Buffer.from(d.buffer, d.byteOffset, d.byteLength).toString("base64") }
        : Array.from(d, tag);
    return { $nd: [v.dtype, v.shape, data] };
  }
  if (typeof v === "object") return { $obj: Object.keys(v).map((k) => [k, tag(v[k])]) };
  return { $unknown: String(v) };
}

function errorLine(e) {
  const name = e && typeof e === "object" && "name" in e ? e.name : typeof e;
  let cls = e?.constructor?.name ?? name;
  if (cls === "PathError") cls = e.pyClass;
  if (cls === "KeyPathError") cls = "KeyNotFoundError";
  if (cls === "Error" && e?.constructor !== Error) cls = name;
  return { error: cls, message: String(e?.message ?? e) };
}

function withTimeout(promise) {
  if (!timeoutMs) return promise;
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error(`no answer in ${timeoutMs} ms`), { name: "Timeout" })), timeoutMs);
    }),
  ]);
}

const out = [];
const write = (obj) => out.push(JSON.stringify(obj));

async function cliForm(found) {
  const msgpack = await dist.cli.msgpackOf(found);
  let json;
  try {
    json = dist.mp.jsonText(await dist.cli.plain(found));
  } catch (e) {
    json = null;
  }
  return { msgpack: Buffer.from(msgpack).toString("base64"), json };
}

const segments = (p) => p.split("/").filter((s) => s);

/** One path's answers: the command line's forms and, with --api, `reader.read(path)`. */
async function answer(reader, p) {
  const line = {};
  if (!flags.has("--no-cli")) {
    try {
      const found = await withTimeout((async () => dist.cli.resolve({ f: "view", view: await reader.lazy("") }, segments(p), []))());
      Object.assign(line, await withTimeout(cliForm(found)));
    } catch (e) {
      Object.assign(line, errorLine(e));
    }
  }
  if (flags.has("--api")) {
    try {
      line.value = tag(await withTimeout(reader.read(p)));
    } catch (e) {
      line.apiError = errorLine(e);
    }
  }
  return line;
}

async function readArchive(target, paths) {
  const lines = [];
  let reader;
  try {
    reader = await withTimeout(dist.index.open(/^https?:/.test(target) ? target : path.resolve(target)));
  } catch (e) {
    const line = errorLine(e);
    for (const _ of paths) lines.push({ ...line, apiError: line });
    return { lines, stats: null, opened: null, open: line };
  }
  const opened = { ...reader.stats };
  for (const p of paths) lines.push(await answer(reader, p));
  const stats = { ...reader.stats };
  try {
    await reader.close();
  } catch {
    // a damaged archive may fail to close cleanly: the answers are what is checked
  }
  return { lines, stats, opened };
}

async function readData(target, paths) {
  const root = dist.mp.decode(new Uint8Array(readFileSync(target)));
  const lines = [];
  for (const p of paths) {
    try {
      lines.push(await cliForm(await dist.cli.resolve({ f: "value", v: root }, segments(p), [])));
    } catch (e) {
      lines.push(errorLine(e));
    }
  }
  return { lines, stats: null, opened: null };
}

if (flags.has("--data") && Array.isArray(paths)) {
  const root = dist.mp.decode(new Uint8Array(readFileSync(target)));
  for (const p of paths) {
    try {
      write(await cliForm(await dist.cli.resolve({ f: "value", v: root }, segments(p), [])));
    } catch (e) {
      write(errorLine(e));
    }
  }
  write({ stats: null });
} else if (!Array.isArray(paths)) {
  // {"archives": [...], "paths": [...]}: one line per archive, {"archive", "lines", "stats"}
  const jobs = paths.jobs ?? paths.archives.map((archive) => ({ archive, paths: paths.paths }));
  const read = flags.has("--data") ? readData : readArchive;
  for (const job of jobs) write({ archive: job.archive, ...(await read(job.archive, job.paths)) });
  write({ stats: null });
} else {
  const { lines, stats, opened } = await readArchive(target, paths);
  for (const line of lines) write(line);
  write({ stats, opened });
}
process.stdout.write(out.join("\n") + "\n");
