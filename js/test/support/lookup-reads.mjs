#!/usr/bin/env node
// Key lookups in one dict, or paths from the root, with the storage reads each makes, for the
// cross-implementation tests of reads (tests/js/test_js_direct.py, test_js_path_reads.py).
// Usage:
//
//   node lookup-reads.mjs < job.json
//
// job: {"archive", "dict": path of the dict, "keys": [...], "fresh": bool, "keep": bool}, a
// key an int, a str or {"$int": "digits"}. "fresh": a reader opened for each key, else one
// for all; "keep": false makes the dict's index keep nothing it reads (INDEX_MEMORY 0).
// Or {"archive", "paths": [...], "fresh"}: each path (a str "a/b/3" or a list of keys and
// indices) resolved from the root (`reader.lazy(path)`) instead of a key of "dict".
// stdout: one JSON line, a list of [outcome, requests, bytes] per key or path, the outcome
// {"value": tagged} (a value decoded whole: numbers, strs, lists, {"$obj": [[k, v]...]},
// {"$int": digits}), {"lazy": kind, "length": n} (a value with a node of its own) or
// {"error": name}.
import { readFileSync } from "node:fs";

// (nothing when `node --test test/` loads this file as one of its tests)
if (process.env.NODE_TEST_CONTEXT) process.exit(0);

const dist = new URL("../../dist/", import.meta.url);
const { open } = await import(new URL("index.js", dist));
const { INDEX_MEMORY } = await import(new URL("read/lookup.js", dist));

const job = JSON.parse(readFileSync(0, "utf8"));
if (job.keep === false) {
  INDEX_MEMORY.tables = 0;
  INDEX_MEMORY.records = 0;
}

const keyOf = (k) => (typeof k === "object" && k !== null ? BigInt(k.$int) : k);

function tag(v) {
  if (typeof v === "bigint") return { $int: v.toString() };
  if (Array.isArray(v)) return v.map(tag);
  if (v instanceof Map) return { $obj: [...v].map(([k, x]) => [tag(k), tag(x)]) };
  if (v !== null && typeof v === "object") return { $obj: Object.keys(v).map((k) => [k, tag(v[k])]) };
  return v;
}

const pathOf = (p) => (Array.isArray(p) ? p.map(keyOf) : p);

async function lookup(reader, d, k) {
  const { requests, bytes } = reader.stats;
  let got;
  try {
    const v = await (d === null ? reader.lazy(pathOf(k)) : d.get(keyOf(k)));
    got = v.lazyPart ? { lazy: v.kind, length: v.length } : { value: tag(await v.value()) };
  } catch (e) {
    got = { error: e?.name ?? String(e) };
  }
  return [got, reader.stats.requests - requests, reader.stats.bytes - bytes];
}

const out = [];
let reader = null;
let d = null;
for (const k of job.paths ?? job.keys) {
  if (reader === null || job.fresh) {
    await reader?.close();
    reader = await open(job.archive);
    d = job.paths ? null : await reader.lazy(job.dict);
  }
  out.push(await lookup(reader, d, k));
}
await reader?.close();
process.stdout.write(JSON.stringify(out) + "\n");
