#!/usr/bin/env node
/**
 * msglc-js: the Python `msglc` command's `info`, `ls` and `get`, for Node.
 *
 *     msglc-js info FILE
 *     msglc-js ls FILE [PATH] [--limit N]
 *     msglc-js get [--format json|msgpack] [--indent N] FILE PATH
 *
 * The output follows the Python command's conventions exactly (msglc/cli/commands.py):
 * `get --format msgpack` prints the same bytes, `get --format json` the same JSON text (bytes
 * as base64, NaN/Infinity, int keys as strings, NumPy arrays as nested lists). Errors are one
 * line on stderr with exit status 1 (2 for bad arguments).
 */
import { existsSync, openSync, readSync, closeSync, fstatSync, realpathSync } from "node:fs";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { NODE_KINDS, open, type LazyReader } from "../reader.js";
import type { AxisSelection, LazyView, NDArray } from "../read/types.js";
import { KeyNotFoundError, IndexOutOfRangeError, MsglcError, NotAnArchiveError } from "../errors.js";
import {
  type MP,
  JsonKeyError,
  Out,
  arrayHeader,
  decode,
  dedupe,
  encodeCanonical,
  floatOf,
  jsonText,
  keyIdentity,
  pyFloat,
  pyTypeName,
  typeOf,
} from "./msgpack.js";
import {
  ArrayIndexError,
  type ArrayValue,
  type AxisKey,
  scalar,
  dtypeName,
  parseDescr,
  pyRepr,
  pyTuple,
  scalarTypeName,
  selectArray,
  sliceRange,
} from "./numpy.js";
import { closeKeysHint } from "./hints.js";

const PROG = "msglc-js";

/** A problem to report in one line (exit status 1). */
class CliError extends Error {}
/** Bad arguments (exit status 2). */
class UsageError extends Error {}
/** Python's IndexError, TypeError and ValueError of a path, printed with their class name. */
class PathError extends Error {
  constructor(
    readonly pyClass: string,
    message: string,
  ) {
    super(message);
  }
}

// ---- what a path reaches ------------------------------------------------------------------

/** A path's value: a view (lazy or not), a value decoded from stored bytes, or the list a
 * slice segment gives. */
export type Found =
  | { f: "view"; view: LazyView }
  | { f: "value"; v: MP }
  | { f: "list"; items: Found[] };

const INT = /^-?[0-9]+$/;

function pyInt(text: string): number | null {
  const t = text.trim().replace(/_/g, "");
  return /^[+-]?[0-9]+$/.test(t) && !/^[+-]?_|__|_$/.test(text.trim()) ? Number(t) : null;
}

function joined(path: string[]): string {
  return path.join("/");
}

function strRepr(s: string): string {
  return pyRepr({ t: "str", v: s });
}

/** A list segment (published syntax): an index, or a slice `start:stop`, `start:step:stop`
 * (msglc/read/paths.py `_list_index`, `normalised_slice`). */
function listIndex(seg: string, n: number, where: string[]): number | { start: number; stop: number; step: number } {
  const i = pyInt(seg);
  if (i !== null) return i;
  const parts = seg.split(":");
  if (parts.length === 2 || parts.length === 3) {
    const [a, b, c] = [parts[0], parts.length === 3 ? parts[1] : "", parts[parts.length - 1]];
    let start = a ? pyInt(a) : 0;
    const step = b ? pyInt(b) : 1;
    let stop = c ? pyInt(c) : n;
    if (start !== null && step !== null && stop !== null) {
      if (n) {
        if (!(-n <= start && start < n)) start = mod(start, n) - (start < 0 ? n : 0);
        if (!(1 - n <= stop && stop <= n)) stop = mod(stop - 1, n) + (stop < 0 ? 1 - n : 1);
      }
      if (step === 0) throw new PathError("ValueError", `slice step cannot be zero (at ${joined(where)})`);
      return { start, stop, step };
    }
  }
  throw new PathError(
    "TypeError",
    `list index must be an int, 'start:stop' or 'start:step:stop', not ${strRepr(seg)} (at ${joined(where)})`,
  );
}

function mod(a: number, n: number): number {
  return ((a % n) + n) % n;
}

async function decoded(view: LazyView): Promise<MP> {
  return decode(await view.raw());
}

/** Follow `segs` from `at`, as msglc/read/paths.py `resolve` does. */
export async function resolve(at: Found, segs: string[], done: string[]): Promise<Found> {
  for (let depth = 0; depth < segs.length; depth++) {
    const seg = segs[depth];
    const where = [...done, ...segs.slice(0, depth + 1)];
    if (at.f === "list") throw new PathError("TypeError", `cannot look up ${strRepr(seg)} in a list`);
    if (at.f === "view" && at.view.lazyPart && at.view.kind === "array") {
      // an array with a node of its own: only the elements the path selects are read
      const view = at.view;
      const shape = view.shape ?? [];
      const nd = shape.length;
      const take = segs.slice(depth, depth + Math.max(nd, 1));
      const upto = [...done, ...segs.slice(0, depth + take.length)];
      const keys: AxisKey[] = take.map((s, k) => listIndex(s, k < nd ? shape[k] : 0, [...done, ...segs.slice(0, depth + k + 1)]));
      checkArrayKeys(keys, shape, upto);
      const dtype = view.dtype ?? "";
      const descr = dtype.startsWith("[") ? descrMP(JSON.parse(dtype)) : ({ t: "str", v: dtype } as MP);
      const axes: AxisSelection[] = keys.map((k) => (typeof k === "number" ? k : [k.start, k.stop, k.step]));
      const got = fromNDArray(descr, await view.slice(...axes), keys.length === nd && keys.every((k) => typeof k === "number"));
      const rest = segs.slice(depth + take.length);
      if (got.t !== "ndarray" && rest.length) {
        const a = { descr, dt: parseDescr(descr, 0), shape: [], tile: null, elements: new Uint8Array(0) };
        const kind = a.dt.kind === "struct" ? "void" : scalarTypeName(a);
        throw new PathError("TypeError", `cannot look up ${strRepr(rest[0])} in a ${kind} (at ${joined(upto)})`);
      }
      return resolve({ f: "value", v: got }, rest, upto);
    }
    if (at.f === "view" && (!at.view.lazyPart || at.view.kind === "value" || at.view.kind === "array")) {
      at = { f: "value", v: await decoded(at.view) };
    }
    if (at.f === "view") {
      const view = at.view;
      if (view.kind === "dict") {
        at = { f: "view", view: await dictGet(view, seg, where) };
        continue;
      }
      // a list
      const index = listIndex(seg, view.length, where);
      if (typeof index !== "number") {
        const rest = segs.slice(depth + 1);
        const before = [...done, ...segs.slice(0, depth)];
        const items: Found[] = [];
        for (const i of sliceRange(index.start, index.stop, index.step, view.length)) {
          items.push(await resolve({ f: "view", view: await view.get(i) }, rest, [...before, String(i)]));
        }
        return { f: "list", items };
      }
      if (index < -view.length || index >= view.length) {
        throw new PathError("IndexError", `index ${index} out of range for a list of ${view.length} (at ${joined(where)})`);
      }
      at = { f: "view", view: await view.get(index) };
      continue;
    }
    const v = at.v;
    if (v.t === "ndarray") {
      const nd = v.a.shape.length;
      const take = segs.slice(depth, depth + Math.max(nd, 1));
      const keys: AxisKey[] = take.map((s, k) => listIndex(s, k < nd ? v.a.shape[k] : 0, [...done, ...segs.slice(0, depth + k + 1)]));
      const upto = [...done, ...segs.slice(0, depth + take.length)];
      let got: MP;
      try {
        got = selectArray(v.a, keys);
      } catch (e) {
        if (e instanceof ArrayIndexError) throw new PathError("IndexError", `${e.message} (at ${joined(upto)})`);
        throw e;
      }
      const rest = segs.slice(depth + take.length);
      if (got.t !== "ndarray" && rest.length) {
        const kind = v.a.dt.kind === "struct" ? "void" : scalarTypeName(v.a);
        throw new PathError("TypeError", `cannot look up ${strRepr(rest[0])} in a ${kind} (at ${joined(upto)})`);
      }
      return resolve({ f: "value", v: got }, rest, upto);
    }
    if (v.t === "arr") {
      const index = listIndex(seg, v.items.length, where);
      if (typeof index !== "number") {
        const rest = segs.slice(depth + 1);
        const before = [...done, ...segs.slice(0, depth)];
        const items: Found[] = [];
        for (const i of sliceRange(index.start, index.stop, index.step, v.items.length)) {
          items.push(await resolve({ f: "value", v: v.items[i] }, rest, [...before, String(i)]));
        }
        return { f: "list", items };
      }
      const n = v.items.length;
      if (index < -n || index >= n) {
        throw new PathError("IndexError", `index ${index} out of range for a list of ${n} (at ${joined(where)})`);
      }
      at = { f: "value", v: v.items[index < 0 ? index + n : index] };
      continue;
    }
    if (v.t === "map") {
      const entries = dedupe(v.entries);
      let hit = entries.find(([k]) => keyIdentity(k) === "s" + seg);
      if (!hit && INT.test(seg)) hit = entries.find(([k]) => keyIdentity(k) === "n" + BigInt(seg).toString());
      if (!hit) throw new KeyPathError(seg, where, v);
      at = { f: "value", v: hit[1] };
      continue;
    }
    const kind = v.t === "nil" ? "None" : pyTypeName(v);
    throw new PathError("TypeError", `cannot look up ${strRepr(seg)} in a ${kind} (at ${joined(where.slice(0, -1)) || "the root"})`);
  }
  return at;
}

/** NumPy's IndexError for an int index out of its axis, or too many indices. */
function checkArrayKeys(keys: AxisKey[], shape: number[], upto: string[]): void {
  if (keys.length > shape.length) {
    throw new PathError(
      "IndexError",
      `too many indices for array: array is ${shape.length}-dimensional, but ${keys.length} were indexed (at ${joined(upto)})`,
    );
  }
  keys.forEach((k, i) => {
    if (typeof k === "number" && (k < -shape[i] || k >= shape[i])) {
      throw new PathError("IndexError", `index ${k} is out of bounds for axis ${i} with size ${shape[i]} (at ${joined(upto)})`);
    }
  });
}

/** A selection `slice()` gave, as the stored form: elements in C order and the dtype's byte
 * order (typed arrays hold host order; a `Uint8Array` of a wider dtype holds stored bytes). */
function fromNDArray(descr: MP, nd: NDArray, scalarWanted: boolean): MP {
  const dt = parseDescr(descr, 0);
  const d = nd.data;
  let bytes = new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice();
  const lane = d.BYTES_PER_ELEMENT;
  const big = dt.kind === "simple" && dt.order === ">";
  const littleHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
  if (lane > 1 && big === littleHost) {
    for (let at = 0; at + lane <= bytes.length; at += lane) bytes.subarray(at, at + lane).reverse();
  }
  if (bytes.length !== nd.shape.reduce((a, b) => a * b, 1) * dt.size) {
    bytes = bytes.slice(0, nd.shape.reduce((a, b) => a * b, 1) * dt.size);
  }
  const a: ArrayValue = { descr, dt, shape: nd.shape.slice(), tile: null, elements: bytes };
  return scalarWanted && a.shape.length === 0 ? scalar(a) : { t: "ndarray", a };
}

/** Python's KeyError of a path: `'x' not found (at a/x)`. */
class KeyPathError extends Error {
  constructor(
    readonly seg: string,
    where: string[],
    /** The dict that does not hold the key (for the hint). */
    readonly dict: LazyView | MP,
  ) {
    super(`${strRepr(seg)} not found (at ${joined(where)})`);
  }
}

async function dictGet(view: LazyView, seg: string, where: string[]): Promise<LazyView> {
  try {
    return await view.get(seg);
  } catch (e) {
    if (!(e instanceof KeyNotFoundError)) throw e;
  }
  if (INT.test(seg)) {
    const n = BigInt(seg);
    try {
      return await view.get(n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n);
    } catch (e) {
      if (!(e instanceof KeyNotFoundError)) throw e;
    }
  }
  throw new KeyPathError(seg, where, view);
}

// ---- output -------------------------------------------------------------------------------

/** What the Python command writes for `get --format msgpack`: a lazy part's stored bytes,
 * any other value encoded again by msgspec. */
export async function msgpackOf(found: Found): Promise<Uint8Array> {
  if (found.f === "view") {
    const raw = await found.view.raw();
    return found.view.lazyPart ? raw : encodeCanonical(decode(raw));
  }
  if (found.f === "value") return encodeCanonical(found.v);
  const out = new Out();
  arrayHeader(out, found.items.length);
  for (const item of found.items) out.bytes(await plainMsgpack(item));
  return out.result();
}

/** The msgpack of a value read whole (`to_plain`): always encoded again. */
async function plainMsgpack(found: Found): Promise<Uint8Array> {
  if (found.f === "view") return encodeCanonical(await decoded(found.view));
  return msgpackOf(found);
}

/** The value as one decoded tree (for JSON). */
export async function plain(found: Found): Promise<MP> {
  if (found.f === "view") return decoded(found.view);
  if (found.f === "value") return found.v;
  const items: MP[] = [];
  for (const item of found.items) items.push(await plain(item));
  return { t: "arr", items };
}

// ---- the commands -------------------------------------------------------------------------

function commas(n: number | bigint): string {
  return n.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

async function openReader(path: string): Promise<LazyReader> {
  if (!existsSync(path)) throw new CliError(`no such file: ${path}`);
  try {
    return await open(path);
  } catch (e) {
    if (e instanceof NotAnArchiveError) throw new CliError(convertHint(path) ?? `${path}: ${e.message}`);
    throw e;
  }
}

async function withReader<T>(path: string, run: (r: LazyReader) => Promise<T>): Promise<T> {
  const reader = await openReader(path);
  try {
    return await run(reader);
  } finally {
    await reader.close();
  }
}

function splitPath(path: string): string[] {
  return path.split("/").filter((s) => s !== "");
}

async function readPath(reader: LazyReader, path: string): Promise<Found> {
  try {
    return await resolve({ f: "view", view: await reader.lazy("") }, splitPath(path), []);
  } catch (e) {
    if (e instanceof KeyPathError) throw new CliError(e.message + (await closeKeysHint(e.dict, e.seg)));
    throw e;
  }
}

async function cmdGet(file: string, path: string, format: string, indent: number | null): Promise<void> {
  await withReader(file, async (reader) => {
    const found = await readPath(reader, path);
    if (format === "msgpack") {
      await writeOut(await msgpackOf(found));
    } else {
      let text: string;
      try {
        text = jsonText(await plain(found), indent) + "\n";
      } catch (e) {
        if (e instanceof JsonKeyError) throw new PathError("TypeError", e.message);
        throw e;
      }
      await writeOut(text);
    }
  });
}

function writeOut(data: Uint8Array | string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(data, (err) => (err ? reject(err) : resolve()));
  });
}

/** Python's `str()` of a dict key or a list index, for the NAME column. */
function pyStr(k: MP): string {
  switch (k.t) {
    case "str":
      return k.v;
    case "int":
      return k.v.toString();
    case "float": {
      const t = pyFloat(floatOf(k.bits));
      return t === "NaN" ? "nan" : t === "Infinity" ? "inf" : t === "-Infinity" ? "-inf" : t;
    }
    case "bool":
      return k.v ? "True" : "False";
    case "nil":
      return "None";
    case "bin":
      return bytesRepr(k.v);
    case "arr":
      return "(" + k.items.map(pyStrInner).join(", ") + (k.items.length === 1 ? ",)" : ")");
    default:
      return pyTypeName(k);
  }
}

function pyStrInner(k: MP): string {
  return k.t === "str" ? strRepr(k.v) : pyStr(k);
}

function bytesRepr(b: Uint8Array): string {
  let s = "";
  let hasQ = false;
  let hasDq = false;
  for (const c of b) {
    if (c === 0x27) hasQ = true;
    if (c === 0x22) hasDq = true;
  }
  const q = hasQ && !hasDq ? '"' : "'";
  for (const c of b) {
    if (c === 0x5c) s += "\\\\";
    else if (String.fromCharCode(c) === q) s += "\\" + q;
    else if (c === 0x0a) s += "\\n";
    else if (c === 0x0d) s += "\\r";
    else if (c === 0x09) s += "\\t";
    else if (c < 0x20 || c >= 0x7f) s += "\\x" + c.toString(16).padStart(2, "0");
    else s += String.fromCharCode(c);
  }
  return `b${q}${s}${q}`;
}

function viewKey(k: unknown): MP {
  if (typeof k === "string") return { t: "str", v: k };
  if (typeof k === "number") return Number.isInteger(k) ? { t: "int", v: BigInt(k) } : { t: "str", v: String(k) };
  if (typeof k === "bigint") return { t: "int", v: k };
  return { t: "str", v: String(k) };
}

function descrMP(x: unknown): MP {
  if (typeof x === "string") return { t: "str", v: x };
  if (typeof x === "number") return { t: "int", v: BigInt(x) };
  if (Array.isArray(x)) return { t: "arr", items: x.map(descrMP) };
  return { t: "nil" };
}

/** (TYPE, LENGTH, BYTES) of an `ls` row. */
async function row(found: Found): Promise<[string, number | null, number]> {
  if (found.f === "view" && found.view.lazyPart) {
    const view = found.view;
    const size = await view.storedSize();
    if (view.kind === "dict") return ["dict", view.length, size];
    if (view.kind === "list") return ["list", view.length, size];
    if (view.kind === "array") {
      const dtype = view.dtype ?? "";
      const dt = parseDescr(dtype.startsWith("[") ? descrMP(JSON.parse(dtype)) : { t: "str", v: dtype }, 0);
      const shape = view.shape ?? [];
      return [`array ${dtypeName(dt)} ${pyTuple(shape)}`, shape.reduce((a, b) => a * b, 1), size];
    }
  }
  const v = await plain(found);
  const [kind, length] = typeOf(v);
  return [kind, length, encodeCanonical(v).length];
}

async function cmdLs(file: string, path: string, limit: number): Promise<void> {
  await withReader(file, async (reader) => {
    const found = await readPath(reader, path);
    const entries: Array<[string, Found]> = [];
    let total: number;
    if (found.f === "view" && found.view.lazyPart && (found.view.kind === "dict" || found.view.kind === "list")) {
      const view = found.view;
      total = view.length;
      const n = Math.min(total, limit);
      if (view.kind === "dict") {
        for (const k of await view.keys(0, n)) entries.push([pyStr(viewKey(k)), { f: "view", view: await view.get(k) }]);
      } else {
        for (let i = 0; i < n; i++) entries.push([String(i), { f: "view", view: await view.get(i) }]);
      }
    } else {
      const v = found.f === "list" ? null : await plain(found);
      if (found.f === "list") {
        total = found.items.length;
        found.items.slice(0, limit).forEach((item, i) => entries.push([String(i), item]));
      } else if (v && v.t === "map") {
        const all = dedupe(v.entries);
        total = all.length;
        for (const [k, x] of all.slice(0, limit)) entries.push([pyStr(k), { f: "value", v: x }]);
      } else if (v && v.t === "arr") {
        total = v.items.length;
        v.items.slice(0, limit).forEach((x, i) => entries.push([String(i), { f: "value", v: x }]));
      } else {
        const [kind] = typeOf(v as MP);
        throw new CliError(`${path || "/"} is a ${kind}, not a dict or a list`);
      }
    }
    const lines = [`${"TYPE".padEnd(24)}${"LENGTH".padStart(12)}${"BYTES".padStart(14)}  NAME`];
    for (const [name, child] of entries) {
      const [kind, length, size] = await row(child);
      lines.push(`${kind.padEnd(24)}${(length === null ? "" : commas(length)).padStart(12)}${commas(size).padStart(14)}  ${name}`);
    }
    if (total > limit) lines.push(`... ${commas(total - limit)} more (--limit)`);
    await writeOut(lines.join("\n") + "\n");
  });
}

async function cmdInfo(file: string): Promise<void> {
  await withReader(file, async (reader) => {
    const info = await reader.info();
    const body = reader.body;
    const num = (k: string, fallback: number): number => {
      const v = info[k];
      return typeof v === "number" ? v : typeof v === "bigint" ? Number(v) : fallback;
    };
    const counts = await reader.nodeCounts();
    const root = await reader.lazy("");
    const [kind, length] = root.lazyPart && root.kind !== "array" ? [root.kind, root.length] : await row({ f: "view", view: root });
    const dataSize = num("data_size", body.dataLength);
    const free = num("free_space", 0);
    let data = `${commas(dataSize)} bytes (plain msgpack)`;
    if (body.compression) {
      const stored = num("stored_data_size", dataSize);
      data = `${commas(dataSize)} bytes of msgpack in ${commas(stored)} bytes of ${body.compression} frames (${(dataSize / stored).toFixed(2)}x)`;
    }
    const toc = `${commas(num("toc_size", body.tocLength))} bytes` + (free ? ` after ${commas(free)} bytes of free space (left by append)` : "");
    let rootText = `${kind}` + (length !== null ? ` of ${commas(length)}` : "");
    if (!body.root.len && !root.lazyPart) rootText += " (small: read whole)";
    const slack = num("slack", 0);
    const lines: Array<[string, string]> = [
      ["format", `${body.major}.${body.minor}`],
      ["file", `${commas(num("file_size", body.end))} bytes` + (slack ? ` (then ${commas(slack)} bytes of slack left by append)` : "")],
      ["data", data],
      ["TOC", toc],
      ["threshold", `${commas(num("threshold", body.threshold))} bytes`],
      ["root", rootText],
      ["lazy nodes", NODE_KINDS.map((k) => `${counts[k]} ${k}`).join(", ") + `; ${counts.blocks} blocks`],
    ];
    await writeOut(lines.map(([l, v]) => l.padEnd(12) + v).join("\n") + "\n");
  });
}

// ---- files that are not archives (msglc/cli/hints.py convert_hint) -------------------------

const TEXT_EXTENSIONS: Record<string, string> = { ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".msgpack": "msgpack", ".mpk": "msgpack" };
const FORMAT_NAMES: Record<string, string> = { json: "JSON", jsonl: "JSON Lines", msgpack: "msgpack" };

function convertHint(path: string): string | null {
  const ext = /\.[^./]*$/.exec(path)?.[0].toLowerCase() ?? "";
  const named = TEXT_EXTENSIONS[ext];
  let fmt = sniff(path);
  if (fmt === null) {
    if (!named) return null;
    return `${path} is not an msglc archive: if it holds ${FORMAT_NAMES[named]}, ${convertCommand(path, named)}`;
  }
  if (fmt === "json" && named === "jsonl") fmt = "jsonl";
  return `${path} looks like ${FORMAT_NAMES[fmt]}, not an msglc archive: ${convertCommand(path, fmt)}`;
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'"'"'`)}'`;
}

function convertCommand(path: string, fmt: string): string {
  const ext = /\.[^./]*$/.exec(path)?.[0] ?? "";
  const base = path.slice(0, path.length - ext.length);
  let out = base + ".mlc";
  if (out === path) out = base + "-converted.mlc";
  const from = TEXT_EXTENSIONS[ext.toLowerCase()] === fmt ? "" : ` --from ${fmt}`;
  return `msglc convert ${shellQuote(path)} ${shellQuote(out)}${from}`;
}

function sniff(path: string): string | null {
  let head: Uint8Array;
  let size: number;
  try {
    const fd = openSync(path, "r");
    try {
      size = fstatSync(fd).size;
      const buf = Buffer.alloc(Math.min(size, 1 << 16));
      const n = readSync(fd, buf, 0, buf.length, 0);
      head = buf.subarray(0, n);
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  let text = head;
  if (text[0] === 0xef && text[1] === 0xbb && text[2] === 0xbf) text = text.subarray(3);
  let i = 0;
  while (i < text.length && (text[i] === 0x20 || text[i] === 0x09 || text[i] === 0x0d || text[i] === 0x0a)) i++;
  text = text.subarray(i);
  if (text[0] === 0x7b || text[0] === 0x5b) {
    const nl = text.indexOf(0x0a);
    if (nl >= 0) {
      const rest = Buffer.from(text.subarray(nl + 1)).toString("utf8").trim();
      if ((rest[0] === "{" || rest[0] === "[") && isJson(text.subarray(0, nl))) return "jsonl";
    }
    return "json";
  }
  return msgpackHead(head, size) ? "msgpack" : null;
}

function isJson(b: Uint8Array): boolean {
  try {
    JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(b));
    return true;
  } catch {
    return false;
  }
}

function msgpackHead(head: Uint8Array, size: number): boolean {
  if (!head.length) return false;
  const b = head[0];
  let count: number;
  let width: number;
  let pairs: boolean;
  if (b >= 0x80 && b <= 0x9f) [count, width, pairs] = [b & 0x0f, 1, b < 0x90];
  else if (b === 0xdc || b === 0xdd || b === 0xde || b === 0xdf) {
    width = b === 0xdc || b === 0xde ? 3 : 5;
    if (head.length < width) return false;
    count = 0;
    for (let i = 1; i < width; i++) count = count * 256 + head[i];
    pairs = b >= 0xde;
  } else return false;
  if (count === 0) return size === width;
  return count * (pairs ? 2 : 1) <= size - width && head.length > width && head[width] !== 0xc1;
}

// ---- arguments ----------------------------------------------------------------------------

const USAGE = `usage: ${PROG} COMMAND ...

Look inside msglc archives from Node (the Python msglc command's info, ls and get).

  ${PROG} info FILE                         format, sizes, threshold, TOC node counts, the root
  ${PROG} ls FILE [PATH] [--limit N]         the children at PATH: type, length, encoded size
  ${PROG} get [--format json|msgpack] [--indent N] FILE PATH
                                            the value at PATH as JSON (default) or msgpack

Errors are one line on stderr with exit status 1 (2 for bad arguments).
`;

function count(text: string, least: number, option: string): number {
  if (!/^\s*[+-]?\d+\s*$/.test(text)) throw new UsageError(`argument ${option}: expected a whole number, got ${strRepr(text)}`);
  const v = Number(text);
  if (v < least) throw new UsageError(`argument ${option}: expected a number of at least ${least}, got ${v}`);
  return v;
}

function required(positionals: string[], names: string[], optional = 0): void {
  const missing = names.slice(positionals.length, names.length - optional);
  if (missing.length) throw new UsageError(`the following arguments are required: ${missing.join(", ")}`);
  if (positionals.length > names.length) throw new UsageError(`unrecognized arguments: ${positionals.slice(names.length).join(" ")}`);
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--help" || command === "-h") {
    await writeOut(USAGE);
    return 0;
  }
  if (command === "--version") {
    await writeOut(`${PROG} 2.1.0\n`);
    return 0;
  }
  const prog = command === "info" || command === "ls" || command === "get" ? `${PROG} ${command}` : PROG;
  try {
    if (!command) throw new UsageError("the following arguments are required: COMMAND");
    if (command === "info") {
      const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} });
      required(positionals, ["file"]);
      await cmdInfo(positionals[0]);
    } else if (command === "ls") {
      const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { limit: { type: "string" } } });
      required(positionals, ["file", "path"], 1);
      const limit = values.limit === undefined ? 1000 : count(values.limit, 1, "--limit");
      await cmdLs(positionals[0], positionals[1] ?? "", limit);
    } else if (command === "get") {
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: { format: { type: "string" }, indent: { type: "string" } },
      });
      required(positionals, ["file", "path"]);
      const format = values.format ?? "json";
      if (format !== "json" && format !== "msgpack") {
        throw new UsageError(`argument --format: invalid choice: ${strRepr(format)} (choose from 'json', 'msgpack')`);
      }
      const indent = values.indent === undefined ? null : count(values.indent, 0, "--indent");
      if (indent !== null && format !== "json") throw new UsageError(`--indent is for JSON output, not --format ${format}`);
      await cmdGet(positionals[0], positionals[1], format, indent);
    } else {
      throw new UsageError(`argument COMMAND: invalid choice: ${strRepr(command)} (choose from 'info', 'ls', 'get')`);
    }
    return 0;
  } catch (e) {
    if (e instanceof UsageError || (e instanceof TypeError && (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS"))) {
      process.stderr.write(`${prog}: ${e.message} (see ${prog} --help)\n`);
      return 2;
    }
    if ((e as { code?: string }).code === "EPIPE") return 0;
    process.stderr.write(`${prog}: ${message(e)}\n`);
    return 1;
  }
}

/** One line for an error, as the Python command's `_message`. */
function message(e: unknown): string {
  if (e instanceof CliError || e instanceof MsglcError || e instanceof KeyPathError) return e.message;
  if (e instanceof PathError) return `${e.pyClass}: ${e.message}`;
  if (e instanceof KeyNotFoundError) return e.message;
  if (e instanceof IndexOutOfRangeError) return `IndexError: ${e.message}`;
  const err = e as { code?: string; message?: string; path?: string; name?: string };
  if (err && typeof err.code === "string" && err.path) return `${err.message ?? err.code}: ${err.path}`;
  return `${err?.name ?? "Error"}: ${err?.message ?? String(e)}`;
}

function isMain(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (isMain()) {
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE") process.exit(0);
  });
  main(process.argv.slice(2)).then((status) => {
    process.exitCode = status;
  });
}
