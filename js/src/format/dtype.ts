/**
 * NumPy dtypes from their `descr` (docs/format.md "NumPy arrays: extension type 78"), parsed
 * as `numpy.lib.format.descr_to_dtype` does for what msglc writes, and checked as Python's
 * `check_dtype` does. Nothing is evaluated.
 *
 * A descr is a str (`"<f8"`, `"|b1"`, `"<U7"`, `"|S5"`, `"|V4"`, `"<M8[ns]"`) or a list of
 * fields `[name, descr]` / `[name, descr, shape]` (a titled name is `[title, name]`; a field
 * named `""` of a void type without fields is padding). The str forms accepted are the ones
 * NumPy's `dtype.str` gives (any byte-order character `<`, `>`, `|`, `=` or none): NumPy also
 * accepts aliases such as `"float64"`, `"d"` or `"f8,i4"`, which no msglc writer produces;
 * this reader refuses them as unknown (CorruptedError).
 *
 * How elements come out (`NDArray.data`, docs/javascript.md), always in the host's byte order:
 *
 * | dtype | data |
 * |---|---|
 * | b1 | Uint8Array of the stored bytes (msglc writes 0 and 1; NumPy reads any nonzero as true) |
 * | i1 i2 i4 i8 | Int8Array Int16Array Int32Array BigInt64Array |
 * | u1 u2 u4 u8 | Uint8Array Uint16Array Uint32Array BigUint64Array |
 * | f4 f8 | Float32Array Float64Array |
 * | f2 | Uint16Array of the IEEE half-precision bits (lossless; `halfToFloat32` converts) |
 * | c8 c16 | Float32Array / Float64Array of interleaved (re, im): twice as many numbers as elements |
 * | M8 m8 (any unit) | BigInt64Array of the raw counts of the unit (NaT is -2^63) |
 * | f16 c32 (long double), S, U, V, structured | Uint8Array of the raw stored bytes, itemsize each (U: UCS-4 code units in the stored byte order) |
 */
import { MpFloat, type MpValue, isInt, show } from "./mpheader.js";

export type LeafKind = "b" | "i" | "u" | "f" | "c" | "S" | "U" | "V" | "M" | "m";

/** UCS-4 text inside an item: `units` code units at `offset` (or repeated: a sub-array of
 * structs holding text), checked against U+10FFFF as Python does. */
export type TextSpan =
  | { offset: number; units: number; big: boolean }
  | { offset: number; count: number; pitch: number; inner: TextSpan[] };

export interface DType {
  /** NumPy's `dtype.str` for a plain dtype (`"<f8"`); JSON of the descr for a structured one. */
  name: string;
  kind: LeafKind;
  itemsize: number;
  /** `true` when the stored elements are big-endian (multi-byte numbers and U only). */
  big: boolean;
  /** Has named fields (or padding only): a structured dtype. */
  structured: boolean;
  /** Where UCS-4 text lies in an item (empty when none). */
  text: TextSpan[];
}

/** The typed arrays an array's elements come out as (`NDArray.data`). */
export type TypedArray =
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array
  | Float32Array
  | Float64Array;

/** A descr that is not a dtype this reader knows (the caller makes a CorruptedError of it). */
export class DescrError extends Error {}

/** Largest itemsize NumPy makes (a C int). */
const MAX_ITEMSIZE = 2 ** 31 - 1;
/** NumPy 2's limit on dimensions (of a field's sub-array shape, too). */
const MAX_DIMS = 64;
const MAX_NESTING = 32;

const HOST_BIG = new Uint8Array(new Uint16Array([1]).buffer)[0] === 0;

const LEAF = /^([<>|=]?)(b1|[iu](?:1|2|4|8)|f(?:2|4|8|16)|c(?:8|16|32)|[SUV]\d+|[Mm]8(?:\[(\d*)(generic|Y|M|W|D|h|m|s|ms|us|μs|ns|ps|fs|as)\])?)$/;

/** Parse and check a descr (as the header decoder returns it). */
export function parseDescr(descr: MpValue): DType {
  if (typeof descr === "string") return leaf(descr);
  if (!Array.isArray(descr)) throw new DescrError(`descr is a ${typeName(descr)}`);
  const dt = structured(descr, 0);
  return { ...dt, name: show(descr, Infinity) };
}

function leaf(s: string): DType {
  const m = LEAF.exec(s);
  if (m === null) throw new DescrError(`data type ${JSON.stringify(s.slice(0, 80))} not understood`);
  const order = m[1];
  const code = m[2];
  const kind = code[0] as LeafKind;
  let itemsize: number;
  if (kind === "S" || kind === "V" || kind === "U") {
    const n = Number(code.slice(1));
    itemsize = kind === "U" ? n * 4 : n;
    if (!(itemsize <= MAX_ITEMSIZE)) throw new DescrError(`data type ${JSON.stringify(s)} not understood`);
  } else {
    itemsize = kind === "M" || kind === "m" ? 8 : Number(code.slice(1));
  }
  const multi = kind === "U" || (itemsize > 1 && kind !== "S" && kind !== "V");
  const big = multi && (order === ">" || ((order === "=" || order === "|" || order === "") && HOST_BIG));
  let body = code;
  if (kind === "M" || kind === "m") {
    const mult = m[3] ?? "";
    const unit = m[4] === "μs" ? "us" : m[4];
    if (unit === undefined || unit === "generic") body = kind + "8";
    else body = `${kind}8[${mult === "" || Number(mult) === 1 ? "" : String(Number(mult))}${unit}]`;
  } else if (kind === "S" || kind === "V" || kind === "U") {
    body = kind + String(Number(code.slice(1)));
  }
  const name = (multi ? (big ? ">" : "<") : "|") + body;
  const text: TextSpan[] = kind === "U" && itemsize > 0 ? [{ offset: 0, units: itemsize / 4, big }] : [];
  return { name, kind, itemsize, big, structured: false, text };
}

interface Parsed {
  kind: LeafKind;
  itemsize: number;
  big: boolean;
  structured: boolean;
  text: TextSpan[];
}

function structured(fields: MpValue[], depth: number): Parsed {
  if (depth > MAX_NESTING) throw new DescrError(`structured dtype nested deeper than ${MAX_NESTING} levels`);
  const used = new Set<string>();
  const text: TextSpan[] = [];
  let offset = 0;
  for (const field of fields) {
    if (!Array.isArray(field) || (field.length !== 2 && field.length !== 3)) {
      throw new DescrError("a field is not [name, descr] or [name, descr, shape]");
    }
    const [rawName, sub] = field;
    let name: string;
    let title: MpValue = null;
    if (Array.isArray(rawName)) {
      if (rawName.length !== 2) throw new DescrError(`a titled name is not [title, name]: ${show(rawName)}`);
      title = rawName[0];
      const n = rawName[1];
      if (typeof n !== "string") throw new DescrError("field names must be strings");
      name = n;
    } else if (typeof rawName === "string") {
      name = rawName;
    } else {
      throw new DescrError("field names must be strings");
    }
    let dt: Parsed;
    if (typeof sub === "string") dt = leaf(sub);
    else if (Array.isArray(sub)) dt = structured(sub, depth + 1);
    else throw new DescrError(`descr is a ${typeName(sub)}`);
    let count = 1;
    if (field.length === 3) count = subShape(field[2], dt.itemsize);
    const size = dt.itemsize * count;
    const isPad = !Array.isArray(rawName) && name === "" && dt.kind === "V" && !dt.structured;
    if (!isPad) {
      const keys = [key(name)];
      if (title !== null) keys.push(key(title));
      if (keys[0] === keys[1]) throw new DescrError("title already used as a name or title.");
      for (const [i, k] of keys.entries()) {
        if (k === undefined) continue;
        if (used.has(k)) throw new DescrError(i ? "title already used as a name or title." : "name already used as a name or title");
        used.add(k);
      }
      if (dt.text.length) {
        text.push(...(count === 1 ? shift(dt.text, offset) : [{ offset, count, pitch: dt.itemsize, inner: dt.text }]));
      }
    }
    offset += size;
    if (offset > MAX_ITEMSIZE) throw new DescrError("integer won't fit into a C int");
  }
  return { kind: "V", itemsize: offset, big: false, structured: true, text };
}

function shift(spans: TextSpan[], by: number): TextSpan[] {
  return spans.map((s) => ({ ...s, offset: s.offset + by }));
}

/** Elements of a field's sub-array shape (a list of ints, a bare int, or nil for none). */
function subShape(shape: MpValue, itemsize: number): number {
  if (shape === null) return 1;
  const dims: MpValue[] = Array.isArray(shape) ? shape : [shape];
  if (!Array.isArray(shape) && !isInt(shape)) throw new DescrError("invalid shape in fixed-type tuple.");
  if (dims.length > MAX_DIMS) throw new DescrError(`invalid shape in fixed-type tuple: more than ${MAX_DIMS} dimensions.`);
  let n = 1;
  for (const d of dims) {
    if (!isInt(d)) throw new DescrError("invalid shape in fixed-type tuple.");
    if (d < 0) throw new DescrError("invalid shape in fixed-type tuple: dimension smaller then zero.");
    if (d > MAX_ITEMSIZE) throw new DescrError("invalid shape in fixed-type tuple: dimension does not fit into a C int.");
    n *= Number(d);
  }
  if (n * itemsize > MAX_ITEMSIZE) {
    throw new DescrError("invalid shape in fixed-type tuple: dtype size in bytes must fit into a C int.");
  }
  return n;
}

/** A name's or title's identity (titles may be of any type; only str and number ones can clash). */
function key(v: MpValue): string | undefined {
  if (typeof v === "string") return "s" + v;
  if (isInt(v)) return "n" + v.toString();
  if (v instanceof MpFloat) return "n" + String(v.value);
  if (typeof v === "boolean") return "n" + (v ? "1" : "0");
  return undefined;
}

function typeName(v: MpValue): string {
  if (v === null) return "NoneType";
  if (Array.isArray(v)) return "list";
  if (typeof v === "number" || typeof v === "bigint") return "int";
  if (typeof v === "boolean") return "bool";
  if (v instanceof MpFloat) return "float";
  if (v instanceof Uint8Array) return "bytes";
  return typeof v === "string" ? "str" : "dict";
}

/** Raise on UCS-4 code units past U+10FFFF in `count` items of `bytes` (NumPy would make
 * invalid str of them; Python refuses them: CorruptedError). Returns the first bad item's
 * index, or -1. */
export function badText(dt: DType, bytes: Uint8Array, count: number): number {
  if (!dt.text.length) return -1;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < count; i++) {
    if (!textOk(dt.text, view, i * dt.itemsize)) return i;
  }
  return -1;
}

function textOk(spans: TextSpan[], view: DataView, base: number): boolean {
  for (const s of spans) {
    if ("units" in s) {
      const little = !s.big;
      for (let u = 0, at = base + s.offset; u < s.units; u++, at += 4) {
        if (view.getUint32(at, little) > 0x10ffff) return false;
      }
    } else {
      for (let k = 0; k < s.count; k++) if (!textOk(s.inner, view, base + s.offset + k * s.pitch)) return false;
    }
  }
  return true;
}

/** The `NDArray.data` of `count` elements whose bytes (in the stored byte order) are `bytes`,
 * a fresh buffer of its own starting at offset 0: swapped in place where the stored order is
 * not the host's, then viewed as the dtype's typed array (table above). */
export function typedData(
  dt: DType,
  bytes: Uint8Array,
): TypedArray {
  if (dt.structured) return bytes;
  const { kind, itemsize } = dt;
  let width = itemsize; // bytes of one number of the typed array
  switch (kind) {
    case "b":
    case "S":
    case "U":
    case "V":
      return bytes;
    case "c":
      if (itemsize === 32) return bytes;
      width = itemsize / 2;
      break;
    case "f":
      if (itemsize === 16) return bytes;
      break;
  }
  if (width > 1 && dt.big !== HOST_BIG) swap(bytes, width);
  const buf = bytes.buffer;
  const off = bytes.byteOffset;
  const n = bytes.byteLength / width;
  switch (kind) {
    case "i":
      return width === 1 ? new Int8Array(buf, off, n) : width === 2 ? new Int16Array(buf, off, n) : width === 4 ? new Int32Array(buf, off, n) : new BigInt64Array(buf, off, n);
    case "u":
      return width === 1 ? bytes : width === 2 ? new Uint16Array(buf, off, n) : width === 4 ? new Uint32Array(buf, off, n) : new BigUint64Array(buf, off, n);
    case "f":
    case "c":
      return width === 2 ? new Uint16Array(buf, off, n) : width === 4 ? new Float32Array(buf, off, n) : new Float64Array(buf, off, n);
    default: // M, m
      return new BigInt64Array(buf, off, n);
  }
}

/** Reverse the bytes of each `width`-byte number of `b` in place. */
export function swap(b: Uint8Array, width: number): void {
  const n = b.length;
  if (width === 2) {
    for (let i = 0; i < n; i += 2) {
      const t = b[i];
      b[i] = b[i + 1];
      b[i + 1] = t;
    }
  } else if (width === 4) {
    for (let i = 0; i < n; i += 4) {
      let t = b[i];
      b[i] = b[i + 3];
      b[i + 3] = t;
      t = b[i + 1];
      b[i + 1] = b[i + 2];
      b[i + 2] = t;
    }
  } else if (width === 8) {
    for (let i = 0; i < n; i += 8) {
      for (let k = 0; k < 4; k++) {
        const t = b[i + k];
        b[i + k] = b[i + 7 - k];
        b[i + 7 - k] = t;
      }
    }
  }
}

/** IEEE half-precision bits (an f2 array's `data`) as float32 values (exact: every half is a
 * float32). */
export function halfToFloat32(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  const raw = new Uint32Array(out.buffer);
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i];
    const sign = (h & 0x8000) << 16;
    const exp = (h >> 10) & 0x1f;
    let mant = h & 0x3ff;
    if (exp === 0x1f) {
      raw[i] = sign | 0x7f800000 | (mant << 13);
    } else if (exp !== 0) {
      raw[i] = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant === 0) {
      raw[i] = sign;
    } else {
      let e = 113;
      while ((mant & 0x400) === 0) {
        mant <<= 1;
        e--;
      }
      raw[i] = sign | (e << 23) | ((mant & 0x3ff) << 13);
    }
  }
  return out;
}
