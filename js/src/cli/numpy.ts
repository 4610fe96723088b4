/**
 * NumPy arrays (extension type 78) as the Python command prints them: JSON of `tolist()`,
 * the msgpack that `msglc get --format msgpack` writes for an array read whole (C order,
 * `[descr, shape]` header), NumPy's dtype names for `ls`, and the indexing of a path that
 * goes into an array ("m/3/4" is `m[3, 4]`).
 */
import { CorruptedError, UnsupportedVersionError } from "../errors.js";
import {
  type MP,
  Out,
  arrayHeader,
  base64,
  civil,
  decodeMany,
  encodeCanonical,
  encodeInt,
  f32BitsToF64Bits,
  floatBits,
  pyFloat,
  pyJsonString,
} from "./msgpack.js";

export type DType =
  | { kind: "simple"; order: string; code: string; size: number; count: number; unit: string; descr: string }
  | { kind: "struct"; fields: Array<{ name: MP; dt: DType; shape: number[]; offset: number }>; size: number };

export interface ArrayValue {
  /** The descr as stored, and parsed. */
  descr: MP;
  dt: DType;
  shape: number[];
  tile: number[] | null;
  /** Element bytes as stored (tiled when `tile` is set). */
  elements: Uint8Array;
}

const SIMPLE = /^([<>|=])([biufcSUVMm])(\d+)(?:\[(\w+)\])?$/;

export function parseDescr(d: MP, at: number): DType {
  if (d.t === "str") {
    const m = SIMPLE.exec(d.v);
    if (!m) throw new CorruptedError(`array dtype ${JSON.stringify(d.v)} at offset ${at} is not one msglc stores`);
    const [, order, code, n, unit = ""] = m;
    const count = Number(n);
    const size = code === "U" ? count * 4 : count;
    if (size === 0) throw new CorruptedError(`array dtype ${d.v} at offset ${at} has items of size 0`);
    return { kind: "simple", order, code, size, count, unit, descr: d.v };
  }
  if (d.t === "arr") {
    const fields: Array<{ name: MP; dt: DType; shape: number[]; offset: number }> = [];
    let offset = 0;
    for (const f of d.items) {
      if (f.t !== "arr" || f.items.length < 2 || f.items.length > 3) {
        throw new CorruptedError(`a field of a structured dtype at offset ${at} is not [name, descr] or [name, descr, shape]`);
      }
      const dt = parseDescr(f.items[1], at);
      const shape = f.items.length === 3 ? intList(f.items[2], at) : [];
      fields.push({ name: f.items[0], dt, shape, offset });
      offset += dt.size * shape.reduce((a, b) => a * b, 1);
    }
    if (offset === 0) throw new CorruptedError(`a structured dtype at offset ${at} has items of size 0`);
    return { kind: "struct", fields, size: offset };
  }
  throw new CorruptedError(`array descr at offset ${at} is neither a str nor a list of fields`);
}

function intList(v: MP, at: number): number[] {
  if (v.t !== "arr") throw new CorruptedError(`array shape at offset ${at} is not a list`);
  return v.items.map((x) => {
    if (x.t !== "int" || x.v < 0n || x.v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new CorruptedError(`array shape at offset ${at} holds something other than a size`);
    }
    return Number(x.v);
  });
}

export function parseArrayExt(data: Uint8Array, at: number): ArrayValue {
  if (data.length < 4) throw new CorruptedError(`array extension at offset ${at}: ${data.length} bytes, no header`);
  const h = (data[0] | (data[1] << 8) | (data[2] << 16) | (data[3] << 24)) >>> 0;
  if (4 + h > data.length) throw new CorruptedError(`array header at offset ${at} (${h} bytes) goes past its value`);
  const parts = decodeMany(data.subarray(4, 4 + h));
  const head = parts[0];
  if (parts.length !== 1 || head.t !== "arr" || head.items.length < 2) {
    throw new CorruptedError(`array header at offset ${at} is not [descr, shape] or [descr, shape, tile]`);
  }
  if (head.items.length > 3) throw new UnsupportedVersionError(`array header at offset ${at} has ${head.items.length} fields`);
  const dt = parseDescr(head.items[0], at);
  const shape = intList(head.items[1], at);
  const tile = head.items.length === 3 ? intList(head.items[2], at) : null;
  const elements = data.subarray(4 + h);
  const n = shape.reduce((a, b) => a * b, 1);
  if (n * dt.size !== elements.length) {
    throw new CorruptedError(`array at offset ${at}: ${elements.length} bytes of elements for shape [${shape}] of ${dt.size}-byte items`);
  }
  if (tile && (tile.length !== shape.length || tile.some((t, i) => t < 1 || (t > shape[i] && !(shape[i] === 0 && t === 1))))) {
    throw new CorruptedError(`array tile [${tile}] at offset ${at} does not fit shape [${shape}]`);
  }
  return { descr: head.items[0], dt, shape, tile, elements };
}

/** The elements in C order (a tiled array's tiles put in place). */
export function cOrder(a: ArrayValue): Uint8Array {
  const { tile, shape } = a;
  if (!tile || tile.every((t, i) => i === 0 || t === shape[i])) return a.elements;
  const size = a.dt.size;
  const out = new Uint8Array(a.elements.length);
  const nd = shape.length;
  const grid = shape.map((s, i) => Math.ceil(s / tile[i]));
  const strides = new Array<number>(nd); // C-order strides of the array, in elements
  let acc = 1;
  for (let i = nd - 1; i >= 0; i--) {
    strides[i] = acc;
    acc *= shape[i];
  }
  const g = new Array<number>(nd).fill(0);
  let src = 0;
  const tiles = grid.reduce((x, y) => x * y, 1);
  for (let t = 0; t < tiles; t++) {
    const origin = g.map((x, i) => x * tile[i]);
    const ext = origin.map((o, i) => Math.min(tile[i], shape[i] - o));
    const inner = ext[nd - 1] * size;
    const rows = ext.slice(0, nd - 1).reduce((x, y) => x * y, 1);
    const j = new Array<number>(Math.max(nd - 1, 0)).fill(0);
    for (let r = 0; r < rows; r++) {
      let dst = origin[nd - 1];
      for (let i = 0; i < nd - 1; i++) dst += (origin[i] + j[i]) * strides[i];
      out.set(a.elements.subarray(src, src + inner), dst * size);
      src += inner;
      for (let i = nd - 2; i >= 0; i--) {
        if (++j[i] < ext[i]) break;
        j[i] = 0;
      }
    }
    for (let i = nd - 1; i >= 0; i--) {
      if (++g[i] < grid[i]) break;
      g[i] = 0;
    }
  }
  return out;
}

/** The ext-78 payload Python writes for this array decoded and encoded again: C order,
 * `[descr, shape]`. */
export function canonicalArrayPayload(a: ArrayValue): Uint8Array {
  const head = new Out();
  arrayHeader(head, 2);
  head.bytes(encodeCanonical(a.descr));
  arrayHeader(head, a.shape.length);
  for (const s of a.shape) encodeInt(head, BigInt(s));
  const h = head.result();
  const el = cOrder(a);
  const out = new Uint8Array(4 + h.length + el.length);
  new DataView(out.buffer).setUint32(0, h.length, true);
  out.set(h, 4);
  out.set(el, 4 + h.length);
  return out;
}

// ---- names --------------------------------------------------------------------------------

const NAMES: Record<string, string> = {
  b1: "bool",
  i1: "int8",
  i2: "int16",
  i4: "int32",
  i8: "int64",
  u1: "uint8",
  u2: "uint16",
  u4: "uint32",
  u8: "uint64",
  f2: "float16",
  f4: "float32",
  f8: "float64",
  f16: "float128",
  c8: "complex64",
  c16: "complex128",
  c32: "complex256",
};

const LITTLE_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function nativeOrder(order: string): boolean {
  return order === "|" || order === "=" || (order === "<") === LITTLE_HOST;
}

/** `str(numpy.dtype(descr))`. */
export function dtypeName(dt: DType): string {
  if (dt.kind === "struct") {
    return "[" + dt.fields.map((f) => `(${pyRepr(f.name)}, ${pyReprDescr(f.dt)}${f.shape.length ? ", " + pyTuple(f.shape) : ""})`).join(", ") + "]";
  }
  const key = dt.code + dt.count;
  const native = nativeOrder(dt.order);
  if (native && NAMES[key]) return NAMES[key];
  if (native && (dt.code === "M" || dt.code === "m")) return `${dt.code === "M" ? "datetime64" : "timedelta64"}${dt.unit ? `[${dt.unit}]` : ""}`;
  if (dt.code === "b" || (dt.size === 1 && (dt.code === "i" || dt.code === "u"))) return NAMES[key] ?? dt.descr;
  return dt.descr;
}

function pyReprDescr(dt: DType): string {
  return dt.kind === "struct" ? dtypeName(dt) : pyRepr({ t: "str", v: dt.descr });
}

export function pyTuple(shape: number[]): string {
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
}

/** Python's repr of a str (or a list of them, for titled field names). */
export function pyRepr(v: MP): string {
  if (v.t === "str") {
    const s = v.v;
    const q = s.includes("'") && !s.includes('"') ? '"' : "'";
    let out = q;
    for (const ch of s) {
      const c = ch.codePointAt(0) ?? 0;
      if (ch === "\\") out += "\\\\";
      else if (ch === q) out += "\\" + q;
      else if (ch === "\n") out += "\\n";
      else if (ch === "\r") out += "\\r";
      else if (ch === "\t") out += "\\t";
      else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
      else out += ch;
    }
    return out + q;
  }
  if (v.t === "arr") return "(" + v.items.map(pyRepr).join(", ") + (v.items.length === 1 ? ",)" : ")");
  if (v.t === "int") return v.v.toString();
  return String(v.t);
}

export function arrayTypeName(a: ArrayValue): [string, number] {
  return [`array ${dtypeName(a.dt)} ${pyTuple(a.shape)}`, a.shape.reduce((x, y) => x * y, 1)];
}

// ---- JSON ---------------------------------------------------------------------------------

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

function half(bits: number): number {
  const s = bits & 0x8000 ? -1 : 1;
  const e = (bits >> 10) & 0x1f;
  const m = bits & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** A JSON list as Python's json module writes it: one line, or (`step` not null) one item a
 * line, indented by `step` a level; `items` write themselves at the indentation given. */
function jsonList(items: Array<(at: string) => string>, step: string | null, at: string): string {
  if (step === null) return "[" + items.map((f) => f(at)).join(", ") + "]";
  if (!items.length) return "[]";
  const inner = at + step;
  return "[\n" + inner + items.map((f) => f(inner)).join(",\n" + inner) + "\n" + at + "]";
}

/** The JSON of one item of dtype `dt` at `p` in `b` (what `tolist()` then json write). */
function itemJson(dt: DType, b: Uint8Array, p: number, step: string | null, at: string): string {
  if (dt.kind === "struct") {
    return jsonList(
      dt.fields.map((f) => (here: string) =>
        f.shape.length ? subJson(f.dt, f.shape, b, p + f.offset, step, here) : itemJson(f.dt, b, p + f.offset, step, here),
      ),
      step,
      at,
    );
  }
  const le = dt.order === "<" || (dt.order !== ">" && LITTLE_HOST);
  const v = view(b);
  switch (dt.code) {
    case "b":
      return b[p] ? "true" : "false";
    case "i":
    case "u":
      return intAt(v, p, dt.size, dt.code === "i", le).toString();
    case "f":
      return pyFloat(floatAt(v, p, dt.size, le, dt.descr));
    case "c": {
      const h = dt.size / 2;
      const re = pyFloat(floatAt(v, p, h, le, dt.descr));
      const im = pyFloat(floatAt(v, p + h, h, le, dt.descr));
      return jsonList([() => re, () => im], step, at);
    }
    case "S":
      return '"' + base64(stripNul(b.subarray(p, p + dt.size))) + '"';
    case "V":
      return '"' + base64(b.subarray(p, p + dt.size)) + '"';
    case "U":
      return pyJsonString(ucs4(v, p, dt.count, le));
    case "M":
      return pyJsonString(datetimeText(intAt(v, p, 8, true, le), dt.unit));
    case "m":
      return intAt(v, p, 8, true, le).toString();
  }
  throw new UnsupportedVersionError(`dtype ${dt.descr} has no JSON form here`);
}

export function intAt(v: DataView, at: number, size: number, signed: boolean, le: boolean): bigint {
  switch (size) {
    case 1:
      return BigInt(signed ? v.getInt8(at) : v.getUint8(at));
    case 2:
      return BigInt(signed ? v.getInt16(at, le) : v.getUint16(at, le));
    case 4:
      return BigInt(signed ? v.getInt32(at, le) : v.getUint32(at, le));
    case 8:
      return signed ? v.getBigInt64(at, le) : v.getBigUint64(at, le);
  }
  throw new UnsupportedVersionError(`integers of ${size} bytes`);
}

function floatAt(v: DataView, at: number, size: number, le: boolean, descr: string): number {
  if (size === 8) return v.getFloat64(at, le);
  if (size === 4) return v.getFloat32(at, le);
  if (size === 2) return half(v.getUint16(at, le));
  throw new UnsupportedVersionError(`dtype ${descr}: floats of ${size} bytes are not read by msglc-js`);
}

/** float64 bits of the float item (what `item()` gives Python), NaN payloads kept. */
function floatBitsAt(v: DataView, at: number, size: number, le: boolean, descr: string): bigint {
  if (size === 8) return v.getBigUint64(at, le);
  if (size === 4) return f32BitsToF64Bits(v.getUint32(at, le));
  return floatBits(floatAt(v, at, size, le, descr));
}

function stripNul(b: Uint8Array): Uint8Array {
  let n = b.length;
  while (n > 0 && b[n - 1] === 0) n--;
  return b.subarray(0, n);
}

function ucs4(v: DataView, at: number, count: number, le: boolean): string {
  const cps: number[] = [];
  for (let i = 0; i < count; i++) cps.push(v.getUint32(at + 4 * i, le));
  while (cps.length && cps[cps.length - 1] === 0) cps.pop();
  try {
    return String.fromCodePoint(...cps);
  } catch {
    throw new CorruptedError(`a unicode array item at offset ${at} holds a value that is no character`);
  }
}

const NAT = -(2n ** 63n);
const UNIT_SECONDS: Record<string, [bigint, number]> = {
  // unit -> (units per second, or seconds per unit as a negative power), digits of fraction
  s: [1n, 0],
  ms: [1000n, 3],
  us: [1_000_000n, 6],
  ns: [1_000_000_000n, 9],
  ps: [1_000_000_000_000n, 12],
  fs: [1_000_000_000_000_000n, 15],
  as: [1_000_000_000_000_000_000n, 18],
};

/** `numpy.datetime_as_string` of one datetime64 value. */
function datetimeText(x: bigint, unit: string): string {
  if (x === NAT) return "NaT";
  // as C's printf("%0*d"): the width counts the sign (NumPy prints year -947 as "-947")
  const p = (n: number | bigint, w = 2): string => {
    const neg = n < 0;
    const s = (neg ? -n : n).toString().padStart(neg ? w - 1 : w, "0");
    return neg ? "-" + s : s;
  };
  const floorDiv = (a: bigint, b: bigint): bigint => (a >= 0n ? a / b : -((-a + b - 1n) / b));
  if (unit === "Y") return p(1970n + x, 4);
  if (unit === "M") {
    const y = 1970n + floorDiv(x, 12n);
    return `${p(y, 4)}-${p(x - floorDiv(x, 12n) * 12n + 1n)}`;
  }
  if (unit === "W" || unit === "D") {
    const [y, m, d] = civil(Number(unit === "W" ? x * 7n : x));
    return `${p(y, 4)}-${p(m)}-${p(d)}`;
  }
  let perSec = 1n;
  let digits = 0;
  let secs: bigint;
  if (unit === "h") secs = x * 3600n;
  else if (unit === "m") secs = x * 60n;
  else if (UNIT_SECONDS[unit]) {
    [perSec, digits] = UNIT_SECONDS[unit];
    secs = floorDiv(x, perSec);
  } else throw new UnsupportedVersionError(`datetime64 unit ${unit || "(generic)"} is not read by msglc-js`);
  const frac = x - secs * perSec;
  const days = floorDiv(secs, 86400n);
  const rem = Number(secs - days * 86400n);
  const [y, mo, d] = civil(Number(days));
  let text = `${p(y, 4)}-${p(mo)}-${p(d)}T${p(Math.floor(rem / 3600))}`;
  if (unit === "h") return text;
  text += `:${p(Math.floor(rem / 60) % 60)}`;
  if (unit === "m") return text;
  text += `:${p(rem % 60)}`;
  return digits ? `${text}.${frac.toString().padStart(digits, "0")}` : text;
}

function subJson(dt: DType, shape: number[], b: Uint8Array, p: number, step: string | null, at: string): string {
  if (shape.length === 0) return itemJson(dt, b, p, step, at);
  const [n, ...rest] = shape;
  const size = rest.reduce((x, y) => x * y, 1) * dt.size;
  const items: Array<(here: string) => string> = [];
  for (let i = 0; i < n; i++) items.push((here) => subJson(dt, rest, b, p + i * size, step, here));
  return jsonList(items, step, at);
}

/** JSON of `array.tolist()` as the Python command writes it (`step`: the indentation a
 * level, or null for one line; `at`: the indentation where the array starts). */
export function arrayJson(a: ArrayValue, step: string | null = null, at = ""): string {
  return subJson(a.dt, a.shape, cOrder(a), 0, step, at);
}

// ---- indexing -----------------------------------------------------------------------------

export type AxisKey = number | { start: number; stop: number; step: number };

/** CPython's `slice.indices(n)`: the range a slice takes. */
export function sliceRange(start: number, stop: number, step: number, n: number): number[] {
  const lower = step < 0 ? -1 : 0;
  const upper = step < 0 ? n - 1 : n;
  const clamp = (x: number): number => (x < 0 ? Math.max(x + n, lower) : Math.min(x, upper));
  const s = clamp(start);
  const e = clamp(stop);
  const out: number[] = [];
  if (step > 0) for (let i = s; i < e; i += step) out.push(i);
  else for (let i = s; i > e; i += step) out.push(i);
  return out;
}

export class ArrayIndexError extends RangeError {}

/** `a[keys]` as NumPy gives it: a smaller array, or (every axis an int) a NumPy scalar as the
 * Python command writes it (plain values for bool, ints, floats of up to 8 bytes, str and
 * bytes; a 0-d array for the rest). */
export function selectArray(a: ArrayValue, keys: AxisKey[]): MP {
  const nd = a.shape.length;
  if (keys.length > nd) {
    throw new ArrayIndexError(`too many indices for array: array is ${nd}-dimensional, but ${keys.length} were indexed`);
  }
  const axes: number[][] = [];
  const shape: number[] = [];
  for (let i = 0; i < nd; i++) {
    const k = i < keys.length ? keys[i] : { start: 0, stop: a.shape[i], step: 1 };
    if (typeof k === "number") {
      const n = a.shape[i];
      if (k < -n || k >= n) throw new ArrayIndexError(`index ${k} is out of bounds for axis ${i} with size ${n}`);
      axes.push([k < 0 ? k + n : k]);
    } else {
      const r = sliceRange(k.start, k.stop, k.step, a.shape[i]);
      axes.push(r);
      shape.push(r.length);
    }
  }
  const src = cOrder(a);
  const size = a.dt.size;
  const strides = new Array<number>(nd);
  let acc = size;
  for (let i = nd - 1; i >= 0; i--) {
    strides[i] = acc;
    acc *= a.shape[i];
  }
  const count = axes.reduce((x, r) => x * r.length, 1);
  const out = new Uint8Array(count * size);
  if (count) {
    const j = new Array<number>(nd).fill(0);
    for (let e = 0; e < count; e++) {
      let at = 0;
      for (let i = 0; i < nd; i++) at += axes[i][j[i]] * strides[i];
      out.set(src.subarray(at, at + size), e * size);
      for (let i = nd - 1; i >= 0; i--) {
        if (++j[i] < axes[i].length) break;
        j[i] = 0;
      }
    }
  }
  const sub: ArrayValue = { descr: a.descr, dt: a.dt, shape, tile: null, elements: out };
  return keys.length === nd && shape.length === 0 ? scalar(sub) : { t: "ndarray", a: sub };
}

/** A NumPy scalar as the Python command writes it (`ArrayEncoder._scalar`). */
export function scalar(a: ArrayValue): MP {
  const dt = a.dt;
  const b = a.elements;
  if (dt.kind === "simple") {
    const le = dt.order === "<" || (dt.order !== ">" && LITTLE_HOST);
    const v = view(b);
    switch (dt.code) {
      case "b":
        return { t: "bool", v: b[0] !== 0 };
      case "i":
      case "u":
        return { t: "int", v: intAt(v, 0, dt.size, dt.code === "i", le) };
      case "f":
        if (dt.size <= 8) return { t: "float", bits: floatBitsAt(v, 0, dt.size, le, dt.descr) };
        break;
      case "U":
        return { t: "str", v: ucs4(v, 0, dt.count, le) };
      case "S":
        return { t: "bin", v: stripNul(b) };
    }
  }
  return { t: "ndarray", a };
}

/** Python's type name of a NumPy scalar (for "cannot look up" messages). */
export function scalarTypeName(a: ArrayValue): string {
  const name = dtypeName(a.dt);
  return a.dt.kind === "struct" ? "void" : name.startsWith("[") ? "void" : name.replace(/^[<>|]/, "");
}
