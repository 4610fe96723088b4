// Helpers of the core tests: fixtures, Python's tagged JSON (make_core.py) as JS values.
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { MemorySource } from "../dist/index.js";

export const FIXTURES = new URL("./fixtures/", import.meta.url);
export const GOLDEN = new URL("../../tests/golden/", import.meta.url);

export function fixture(name) {
  return new Uint8Array(readFileSync(new URL(name, FIXTURES)));
}

export function loadJson(name) {
  const raw = readFileSync(new URL(name, FIXTURES));
  return JSON.parse((name.endsWith(".gz") ? gunzipSync(raw) : raw).toString("utf8"));
}

/** A value of make_core.py's tagged JSON as the reader's value mapping makes it. */
export function untag(x) {
  if (Array.isArray(x)) return x.map(untag);
  if (x === null || typeof x !== "object") return x;
  if ("$int" in x) return BigInt(x.$int);
  if ("$bytes" in x) return Uint8Array.from(Buffer.from(x.$bytes, "hex"));
  if ("$date" in x) return new Date(x.$date);
  if ("$obj" in x) {
    const o = {};
    for (const [k, v] of x.$obj) Object.defineProperty(o, k, { value: untag(v), enumerable: true, writable: true, configurable: true });
    return o;
  }
  if ("$map" in x) return new Map(x.$map.map(([k, v]) => [untag(k), untag(v)]));
  throw new Error(`unknown tag in ${JSON.stringify(x)}`);
}

/** The value rebuilt through lazy views: every dict key and list item looked up one by one. */
export async function viaViews(view, limit = 5000) {
  if (view.kind === "dict") {
    const keys = await view.keys();
    const pairs = [];
    for (const k of keys.slice(0, limit)) pairs.push([k, await viaViews(await view.get(k), limit)]);
    if (keys.length > limit) return null;
    if (pairs.every(([k]) => typeof k === "string")) {
      const o = {};
      for (const [k, v] of pairs) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
      return o;
    }
    return new Map(pairs);
  }
  if (view.kind === "list") {
    const out = [];
    for (let i = 0; i < Math.min(view.length, limit); i++) out.push(await viaViews(await view.get(i), limit));
    return out;
  }
  return view.value();
}

export const PY_ERRORS = { KeyError: "KeyNotFoundError", IndexError: "IndexOutOfRangeError", TypeError: "TypeError", ValueError: "RangeError" };

/** A source that records the ranges read (`log`: [offset, length] each). */
export class Recording extends MemorySource {
  constructor(bytes) {
    super(bytes);
    this.log = [];
  }
  async read(offset, length) {
    this.log.push([offset, length]);
    return super.read(offset, length);
  }
}
