#!/usr/bin/env node
// The Node side of `python -m benchmark.js_targets`: one job (JSON on stdin), its
// measurements (JSON on stdout). Jobs:
//   {"kind": "open", "path", "rounds"}               open + close, ms per open (min, median)
//   {"kind": "reads", "path", "paths", "rounds"}     reader.read(path) for each path: seconds
//                                                    per read (best round), storage requests
//                                                    of the first round, the values read
//   {"kind": "requests", "target", "paths", "next"?} a fresh reader per path: requests to open,
//                                                    then to read the path, then to read it
//                                                    again, then (next[i]) another path;
//                                                    frames decompressed likewise
import { readFileSync } from "node:fs";

let msglc;
try {
  msglc = await import(new URL("../../js/dist/index.js", import.meta.url));
} catch (e) {
  process.stderr.write(`js/dist is missing: build it with (cd js && npm ci && npm run build): ${e}\n`);
  process.exit(3);
}

const job = JSON.parse(readFileSync(0, "utf8"));
const now = () => Number(process.hrtime.bigint()) / 1e9;

function plain(v) {
  // values for the Python side's check: numbers, strings, bigints as strings
  if (typeof v === "bigint") return v.toString();
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), plain(x)]));
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === "object" && !(v instanceof Uint8Array)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

async function openJob() {
  const times = [];
  for (let i = 0; i < job.rounds; i++) {
    const t = now();
    const reader = await msglc.open(job.path);
    times.push((now() - t) * 1e3);
    await reader.close();
  }
  const reader = await msglc.open(job.path);
  const requests = reader.stats.requests;
  await reader.close();
  times.sort((a, b) => a - b);
  return { min_ms: times[0], median_ms: times[times.length >> 1], requests };
}

async function readsJob() {
  const reader = await msglc.open(job.path);
  const opened = { ...reader.stats };
  const values = [];
  let best = Infinity;
  let firstRound = null;
  for (let round = 0; round < job.rounds; round++) {
    const t = now();
    for (const p of job.paths) {
      const v = await reader.read(p);
      if (round === 0 && values.length < 100) values.push(plain(v));
    }
    best = Math.min(best, now() - t);
    if (round === 0) firstRound = { ...reader.stats };
  }
  await reader.close();
  return {
    seconds_per_read: best / job.paths.length,
    open_requests: opened.requests,
    read_requests: firstRound.requests - opened.requests,
    frames: firstRound.framesDecompressed - opened.framesDecompressed,
    values,
  };
}

async function requestsJob() {
  const out = [];
  for (const [n, p] of job.paths.entries()) {
    const reader = await msglc.open(job.target);
    const a = { ...reader.stats };
    await reader.read(p);
    const b = { ...reader.stats };
    await reader.read(p);
    const c = { ...reader.stats };
    let other = null;
    if (job.next) {
      await reader.read(job.next[n]);
      const d = { ...reader.stats };
      other = { requests: d.requests - c.requests, frames: d.framesDecompressed - c.framesDecompressed };
    }
    out.push({
      other,
      path: p,
      open: a.requests,
      first: b.requests - a.requests,
      again: c.requests - b.requests,
      open_frames: a.framesDecompressed,
      first_frames: b.framesDecompressed - a.framesDecompressed,
    });
    await reader.close();
  }
  return out;
}

const run = { open: openJob, reads: readsJob, requests: requestsJob }[job.kind];
process.stdout.write(JSON.stringify(await run()) + "\n");
