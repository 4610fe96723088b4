/**
 * The command line's view of msgpack bytes: a small tree that keeps what a JavaScript value
 * loses (int or float, the float's bits, str or bin), so that `msglc-js get` can print what
 * the Python command prints from the same stored bytes:
 *
 * - `encodeCanonical`: the bytes `msgspec.msgpack.encode` gives for the value Python decodes
 *   (`msglc get --format msgpack` of a value read whole): smallest headers and ints, floats
 *   as float64, timestamps as msgspec writes datetimes, NumPy arrays in C order;
 * - `jsonText`: `json.dumps(value, default=json_default)` as the Python command writes it.
 */
import { ByteCursor } from "../format/cursor.js";
import { CorruptedError, TruncatedError, UnsupportedVersionError } from "../errors.js";
import { arrayJson, arrayTypeName, canonicalArrayPayload, parseArrayExt, type ArrayValue } from "./numpy.js";

export type MP =
  | { t: "nil" }
  | { t: "bool"; v: boolean }
  | { t: "int"; v: bigint }
  | { t: "float"; bits: bigint }
  | { t: "str"; v: string }
  | { t: "bin"; v: Uint8Array }
  | { t: "arr"; items: MP[] }
  | { t: "map"; entries: Array<[MP, MP]> }
  | { t: "time"; sec: bigint; nsec: number }
  | { t: "ndarray"; a: ArrayValue };

const ARRAY_EXT = 78;
const utf8 = new TextDecoder("utf-8", { fatal: true });
const utf8enc = new TextEncoder();

/** Decode one msgpack value from `bytes` (which must hold exactly it). */
export function decode(bytes: Uint8Array): MP {
  const p = new Parser(bytes);
  const v = p.value(0);
  if (p.at !== bytes.length) {
    throw new CorruptedError(`${bytes.length - p.at} bytes after the msgpack value at offset ${p.at}`);
  }
  return v;
}

/** Decode several msgpack values from `bytes`, one after another, and where each starts. */
export function decodeMany(bytes: Uint8Array): MP[] {
  const p = new Parser(bytes);
  const out: MP[] = [];
  while (p.at < bytes.length) out.push(p.value(0));
  return out;
}

/** Nesting the command line prints (its decoder and writers recurse; Python's loop). */
const MAX_DEPTH = 2500;

/** A value nested deeper than `MAX_DEPTH`: valid msgpack that msglc-js does not print. */
export class TooDeepError extends Error {}

class Parser extends ByteCursor {
  protected cutShort(n: number): never {
    throw new TruncatedError(`msgpack value cut short: ${n} bytes wanted at offset ${this.at}, ${this.b.length - this.at} left`);
  }

  value(depth: number): MP {
    if (depth > MAX_DEPTH) {
      throw new TooDeepError(`a value nested deeper than ${MAX_DEPTH} levels (at offset ${this.at}): msglc-js does not print values this deep`);
    }
    const start = this.at;
    const c = this.u8();
    if (c <= 0x7f) return { t: "int", v: BigInt(c) };
    if (c >= 0xe0) return { t: "int", v: BigInt(c - 256) };
    if (c >= 0x80 && c <= 0x8f) return this.map(c & 0x0f, depth);
    if (c >= 0x90 && c <= 0x9f) return this.arr(c & 0x0f, depth);
    if (c >= 0xa0 && c <= 0xbf) return this.str(c & 0x1f);
    switch (c) {
      case 0xc0:
        return { t: "nil" };
      case 0xc2:
        return { t: "bool", v: false };
      case 0xc3:
        return { t: "bool", v: true };
      case 0xc4:
        return { t: "bin", v: this.take(this.u8()) };
      case 0xc5:
        return { t: "bin", v: this.take(this.u16()) };
      case 0xc6:
        return { t: "bin", v: this.take(this.u32()) };
      case 0xc7:
        return this.ext(this.u8(), start);
      case 0xc8:
        return this.ext(this.u16(), start);
      case 0xc9:
        return this.ext(this.u32(), start);
      case 0xca: {
        this.need(4);
        const bits = this.view.getUint32(this.at);
        this.at += 4;
        return { t: "float", bits: f32BitsToF64Bits(bits) };
      }
      case 0xcb: {
        this.need(8);
        const bits = this.view.getBigUint64(this.at);
        this.at += 8;
        return { t: "float", bits };
      }
      case 0xcc:
        return { t: "int", v: BigInt(this.u8()) };
      case 0xcd:
        return { t: "int", v: BigInt(this.u16()) };
      case 0xce:
        return { t: "int", v: BigInt(this.u32()) };
      case 0xcf: {
        this.need(8);
        const v = this.view.getBigUint64(this.at);
        this.at += 8;
        return { t: "int", v };
      }
      case 0xd0: {
        this.need(1);
        return { t: "int", v: BigInt(this.view.getInt8(this.at++)) };
      }
      case 0xd1: {
        this.need(2);
        const v = this.view.getInt16(this.at);
        this.at += 2;
        return { t: "int", v: BigInt(v) };
      }
      case 0xd2: {
        this.need(4);
        const v = this.view.getInt32(this.at);
        this.at += 4;
        return { t: "int", v: BigInt(v) };
      }
      case 0xd3: {
        this.need(8);
        const v = this.view.getBigInt64(this.at);
        this.at += 8;
        return { t: "int", v };
      }
      case 0xd4:
        return this.ext(1, start);
      case 0xd5:
        return this.ext(2, start);
      case 0xd6:
        return this.ext(4, start);
      case 0xd7:
        return this.ext(8, start);
      case 0xd8:
        return this.ext(16, start);
      case 0xd9:
        return this.str(this.u8());
      case 0xda:
        return this.str(this.u16());
      case 0xdb:
        return this.str(this.u32());
      case 0xdc:
        return this.arr(this.u16(), depth);
      case 0xdd:
        return this.arr(this.u32(), depth);
      case 0xde:
        return this.map(this.u16(), depth);
      case 0xdf:
        return this.map(this.u32(), depth);
      default:
        throw new CorruptedError(`byte 0x${c.toString(16)} at offset ${start} does not start a msgpack value`);
    }
  }

  private str(n: number): MP {
    const raw = this.take(n);
    try {
      return { t: "str", v: utf8.decode(raw) };
    } catch {
      throw new CorruptedError(`the str at offset ${this.at - n} is not valid UTF-8`);
    }
  }

  private arr(n: number, depth: number): MP {
    if (n > this.b.length - this.at) {
      throw new TruncatedError(`an array of ${n} items at offset ${this.at} does not fit in ${this.b.length - this.at} bytes`);
    }
    const items: MP[] = new Array(n);
    for (let i = 0; i < n; i++) items[i] = this.value(depth + 1);
    return { t: "arr", items };
  }

  private map(n: number, depth: number): MP {
    if (2 * n > this.b.length - this.at) {
      throw new TruncatedError(`a map of ${n} entries at offset ${this.at} does not fit in ${this.b.length - this.at} bytes`);
    }
    const entries: Array<[MP, MP]> = new Array(n);
    for (let i = 0; i < n; i++) {
      const k = this.value(depth + 1);
      entries[i] = [k, this.value(depth + 1)];
    }
    return { t: "map", entries };
  }

  private ext(n: number, start: number): MP {
    this.need(1);
    const type = this.view.getInt8(this.at++);
    const data = this.take(n);
    if (type === -1) return timestamp(data, start);
    if (type === ARRAY_EXT) return { t: "ndarray", a: parseArrayExt(data, start) };
    throw new UnsupportedVersionError(`extension type ${type} at offset ${start}: msglc stores only types 78 and -1`);
  }
}

function timestamp(d: Uint8Array, at: number): MP {
  const v = new DataView(d.buffer, d.byteOffset, d.byteLength);
  if (d.length === 4) return { t: "time", sec: BigInt(v.getUint32(0)), nsec: 0 };
  if (d.length === 8) {
    const x = v.getBigUint64(0);
    return checkNsec({ t: "time", sec: x & 0x3_ffff_ffffn, nsec: Number(x >> 34n) }, at);
  }
  if (d.length === 12) return checkNsec({ t: "time", sec: v.getBigInt64(4), nsec: v.getUint32(0) }, at);
  throw new CorruptedError(`a timestamp of ${d.length} bytes at offset ${at} (expected 4, 8 or 12)`);
}

function checkNsec(m: { t: "time"; sec: bigint; nsec: number }, at: number): MP {
  if (m.nsec > 999_999_999) throw new CorruptedError(`a timestamp at offset ${at} has ${m.nsec} nanoseconds`);
  // Python's datetime keeps microseconds: msgspec rounds the nanoseconds to them
  let us = Math.round(m.nsec / 1000);
  let sec = m.sec;
  if (us === 1_000_000) {
    us = 0;
    sec += 1n;
  }
  return { t: "time", sec, nsec: us * 1000 };
}

/** float32 bits as the float64 bits of the same value (a C cast: NaNs keep their payload,
 * quietened). */
export function f32BitsToF64Bits(b: number): bigint {
  const sign = BigInt(b >>> 31);
  const exp = (b >>> 23) & 0xff;
  let man = b & 0x7fffff;
  let e64: number;
  if (exp === 0xff) {
    e64 = 0x7ff;
    if (man !== 0) man |= 0x400000;
  } else if (exp === 0) {
    if (man === 0) return sign << 63n;
    // subnormal float32: normalise
    let e = -126;
    while ((man & 0x800000) === 0) {
      man <<= 1;
      e--;
    }
    man &= 0x7fffff;
    e64 = e + 1023;
  } else {
    e64 = exp - 127 + 1023;
  }
  return (sign << 63n) | (BigInt(e64) << 52n) | (BigInt(man) << 29n);
}

export function floatOf(bits: bigint): number {
  const dv = new DataView(new ArrayBuffer(8));
  dv.setBigUint64(0, bits);
  return dv.getFloat64(0);
}

export function floatBits(x: number): bigint {
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, x);
  return dv.getBigUint64(0);
}

// ---- encoding as msgspec does -------------------------------------------------------------

export class Out {
  private buf = new Uint8Array(256);
  length = 0;
  private grow(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const b = new Uint8Array(size);
    b.set(this.buf.subarray(0, this.length));
    this.buf = b;
  }
  byte(x: number): void {
    this.grow(1);
    this.buf[this.length++] = x;
  }
  uint(x: number, width: number): void {
    this.grow(width);
    for (let i = width - 1; i >= 0; i--) {
      this.buf[this.length + i] = x & 0xff;
      x = Math.floor(x / 256);
    }
    this.length += width;
  }
  big(x: bigint, width: number): void {
    this.grow(width);
    let v = BigInt.asUintN(width * 8, x);
    for (let i = width - 1; i >= 0; i--) {
      this.buf[this.length + i] = Number(v & 0xffn);
      v >>= 8n;
    }
    this.length += width;
  }
  bytes(b: Uint8Array): void {
    this.grow(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  result(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

/** msgpack bytes of `v` as msgspec writes the Python value it decodes to. */
export function encodeCanonical(v: MP): Uint8Array {
  const out = new Out();
  encodeInto(out, v);
  return out.result();
}

export function arrayHeader(out: Out, n: number): void {
  if (n < 16) out.byte(0x90 | n);
  else if (n < 0x10000) (out.byte(0xdc), out.uint(n, 2));
  else (out.byte(0xdd), out.uint(n, 4));
}

export function mapHeader(out: Out, n: number): void {
  if (n < 16) out.byte(0x80 | n);
  else if (n < 0x10000) (out.byte(0xde), out.uint(n, 2));
  else (out.byte(0xdf), out.uint(n, 4));
}

export function encodeInt(out: Out, v: bigint): void {
  if (v >= 0n) {
    if (v < 128n) out.byte(Number(v));
    else if (v < 0x100n) (out.byte(0xcc), out.uint(Number(v), 1));
    else if (v < 0x10000n) (out.byte(0xcd), out.uint(Number(v), 2));
    else if (v < 0x1_0000_0000n) (out.byte(0xce), out.uint(Number(v), 4));
    else (out.byte(0xcf), out.big(v, 8));
  } else {
    if (v >= -32n) out.byte(Number(v) & 0xff);
    else if (v >= -128n) (out.byte(0xd0), out.big(v, 1));
    else if (v >= -32768n) (out.byte(0xd1), out.big(v, 2));
    else if (v >= -2147483648n) (out.byte(0xd2), out.big(v, 4));
    else (out.byte(0xd3), out.big(v, 8));
  }
}

export function encodeStr(out: Out, s: string): void {
  const b = utf8enc.encode(s);
  const n = b.length;
  if (n < 32) out.byte(0xa0 | n);
  else if (n < 0x100) (out.byte(0xd9), out.uint(n, 1));
  else if (n < 0x10000) (out.byte(0xda), out.uint(n, 2));
  else (out.byte(0xdb), out.uint(n, 4));
  out.bytes(b);
}

export function encodeBin(out: Out, b: Uint8Array): void {
  const n = b.length;
  if (n < 0x100) (out.byte(0xc4), out.uint(n, 1));
  else if (n < 0x10000) (out.byte(0xc5), out.uint(n, 2));
  else (out.byte(0xc6), out.uint(n, 4));
  out.bytes(b);
}

export function extHeader(out: Out, n: number, type: number): void {
  const fix: Record<number, number> = { 1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8 };
  if (fix[n] !== undefined) out.byte(fix[n]);
  else if (n < 0x100) (out.byte(0xc7), out.uint(n, 1));
  else if (n < 0x10000) (out.byte(0xc8), out.uint(n, 2));
  else (out.byte(0xc9), out.uint(n, 4));
  out.byte(type & 0xff);
}

function encodeInto(out: Out, v: MP): void {
  switch (v.t) {
    case "nil":
      return out.byte(0xc0);
    case "bool":
      return out.byte(v.v ? 0xc3 : 0xc2);
    case "int":
      return encodeInt(out, v.v);
    case "float":
      out.byte(0xcb);
      return out.big(v.bits, 8);
    case "str":
      return encodeStr(out, v.v);
    case "bin":
      return encodeBin(out, v.v);
    case "arr":
      arrayHeader(out, v.items.length);
      for (const x of v.items) encodeInto(out, x);
      return;
    case "map":
      mapHeader(out, v.entries.length);
      for (const [k, x] of v.entries) {
        encodeInto(out, k);
        encodeInto(out, x);
      }
      return;
    case "time": {
      const { sec, nsec } = v;
      if (nsec === 0 && sec >= 0n && sec < 0x1_0000_0000n) {
        extHeader(out, 4, -1);
        return out.big(sec, 4);
      }
      if (sec >= 0n && sec < 1n << 34n) {
        extHeader(out, 8, -1);
        return out.big((BigInt(nsec) << 34n) | sec, 8);
      }
      extHeader(out, 12, -1);
      out.uint(nsec, 4);
      return out.big(sec, 8);
    }
    case "ndarray": {
      const payload = canonicalArrayPayload(v.a);
      extHeader(out, payload.length, ARRAY_EXT);
      return out.bytes(payload);
    }
  }
}

// ---- JSON as Python's json.dumps writes it --------------------------------------------------

/** Python's `repr(float)`. */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (x === Infinity) return "Infinity";
  if (x === -Infinity) return "-Infinity";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const e = x.toExponential(); // shortest digits that round-trip: "d.ddde+N"
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(e);
  if (!m) return String(x);
  const [, sign, d0, rest = "", expText] = m;
  const exp = Number(expText);
  const digits = d0 + rest;
  if (exp >= -5 && exp < 16) {
    // Python: fixed notation when -4 <= exp10 < 16 (repr uses 'r': exponent of the shortest form)
    if (exp < -4) return sci(sign, digits, exp);
    if (exp >= 0) {
      const intPart = digits.length > exp + 1 ? digits.slice(0, exp + 1) : digits + "0".repeat(exp + 1 - digits.length);
      const frac = digits.length > exp + 1 ? digits.slice(exp + 1) : "0";
      return `${sign}${intPart}.${frac}`;
    }
    return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
  }
  return sci(sign, digits, exp);
}

function sci(sign: string, digits: string, exp: number): string {
  const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  const e = Math.abs(exp);
  return `${sign}${mant}e${exp < 0 ? "-" : "+"}${e < 10 ? "0" + e : e}`;
}

/** A JSON string as Python's json module writes it (ensure_ascii). */
export function pyJsonString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += "\\\\";
    else if (c >= 0x20 && c <= 0x7e) out += s[i];
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c === 0x09) out += "\\t";
    else if (c === 0x08) out += "\\b";
    else if (c === 0x0c) out += "\\f";
    else out += "\\u" + c.toString(16).padStart(4, "0");
  }
  return out + '"';
}

export function base64(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64");
}

/** The error Python's json module raises for a dict key it cannot write. */
export class JsonKeyError extends TypeError {}

/** Python's type name of a decoded value (for messages and `ls`). */
export function pyTypeName(v: MP): string {
  switch (v.t) {
    case "nil":
      return "NoneType";
    case "bool":
      return "bool";
    case "int":
      return "int";
    case "float":
      return "float";
    case "str":
      return "str";
    case "bin":
      return "bytes";
    case "arr":
      return "list";
    case "map":
      return "dict";
    case "time":
      return "datetime";
    case "ndarray":
      return "ndarray";
  }
}

function jsonKey(k: MP): string {
  switch (k.t) {
    case "str":
      return pyJsonString(k.v);
    case "int":
      return '"' + k.v.toString() + '"';
    case "float":
      return '"' + pyFloat(floatOf(k.bits)) + '"';
    case "bool":
      return k.v ? '"true"' : '"false"';
    case "nil":
      return '"null"';
    default:
      throw new JsonKeyError(`keys must be str, int, float, bool or None, not ${k.t === "arr" ? "tuple" : pyTypeName(k)}`);
  }
}

/** `json.dumps(value, default=json_default, indent=indent)` of the Python command
 * (msglc/cli/commands.py): one line, or `indent` spaces a level. */
export function jsonText(v: MP, indent: number | null = null): string {
  const parts: string[] = [];
  writeJson(v, parts, indent === null ? null : " ".repeat(indent), "");
  return parts.join("");
}

export function writeJson(v: MP, parts: string[], step: string | null = null, at = ""): void {
  if (step !== null && (v.t === "arr" || v.t === "map")) {
    const entries = v.t === "map" ? dedupe(v.entries) : null;
    const n = entries ? entries.length : (v as { items: MP[] }).items.length;
    if (!n) {
      parts.push(entries ? "{}" : "[]");
      return;
    }
    const inner = at + step;
    parts.push(entries ? "{" : "[");
    for (let i = 0; i < n; i++) {
      parts.push(i ? ",\n" + inner : "\n" + inner);
      if (entries) {
        parts.push(jsonKey(entries[i][0]), ": ");
        writeJson(entries[i][1], parts, step, inner);
      } else writeJson((v as { items: MP[] }).items[i], parts, step, inner);
    }
    parts.push("\n" + at + (entries ? "}" : "]"));
    return;
  }
  switch (v.t) {
    case "nil":
      parts.push("null");
      return;
    case "bool":
      parts.push(v.v ? "true" : "false");
      return;
    case "int":
      parts.push(v.v.toString());
      return;
    case "float":
      parts.push(pyFloat(floatOf(v.bits)));
      return;
    case "str":
      parts.push(pyJsonString(v.v));
      return;
    case "bin":
      parts.push('"' + base64(v.v) + '"');
      return;
    case "arr":
      parts.push("[");
      for (let i = 0; i < v.items.length; i++) {
        if (i) parts.push(", ");
        writeJson(v.items[i], parts);
      }
      parts.push("]");
      return;
    case "map": {
      // Python's dict: a repeated key keeps its first place and its last value
      const entries = dedupe(v.entries);
      parts.push("{");
      for (let i = 0; i < entries.length; i++) {
        if (i) parts.push(", ");
        parts.push(jsonKey(entries[i][0]), ": ");
        writeJson(entries[i][1], parts);
      }
      parts.push("}");
      return;
    }
    case "time":
      parts.push(pyJsonString(isoformat(v.sec, v.nsec)));
      return;
    case "ndarray":
      parts.push(arrayJson(v.a, step, at));
      return;
  }
}

/** Key identity as Python's dict sees it for the kinds msgpack keys decode to. */
export function keyIdentity(k: MP): string | null {
  switch (k.t) {
    case "str":
      return "s" + k.v;
    case "int":
      return "n" + k.v.toString();
    case "bool":
      return "n" + (k.v ? "1" : "0");
    case "float": {
      const x = floatOf(k.bits);
      if (Number.isInteger(x)) return "n" + BigInt(x).toString();
      return Number.isNaN(x) ? null : "f" + x.toString();
    }
    case "nil":
      return "z";
    case "bin":
      return "b" + base64(k.v);
    default:
      return null;
  }
}

export function dedupe(entries: Array<[MP, MP]>): Array<[MP, MP]> {
  if (entries.length < 2) return entries;
  const at = new Map<string, number>();
  let out: Array<[MP, MP]> | null = null;
  for (let i = 0; i < entries.length; i++) {
    const id = keyIdentity(entries[i][0]);
    if (id === null) {
      out?.push(entries[i]);
      continue;
    }
    const first = at.get(id);
    if (first === undefined) {
      at.set(id, out ? out.length : i);
      out?.push(entries[i]);
    } else {
      if (!out) out = entries.slice(0, i);
      out[first] = [out[first][0], entries[i][1]];
    }
  }
  return out ?? entries;
}

/** Python's `datetime.isoformat()` of a UTC datetime from seconds and nanoseconds. */
export function isoformat(sec: bigint, nsec: number): string {
  const days = sec >= 0n ? sec / 86400n : -((-sec + 86399n) / 86400n);
  let rem = Number(sec - days * 86400n);
  const [y, mo, d] = civil(Number(days));
  const hh = Math.floor(rem / 3600);
  rem -= hh * 3600;
  const mm = Math.floor(rem / 60);
  const ss = rem - mm * 60;
  const us = Math.floor(nsec / 1000);
  const p = (x: number, n = 2): string => String(x).padStart(n, "0");
  return `${p(y, 4)}-${p(mo)}-${p(d)}T${p(hh)}:${p(mm)}:${p(ss)}${us ? "." + p(us, 6) : ""}+00:00`;
}

/** Days since 1970-01-01 to (year, month, day), proleptic Gregorian. */
export function civil(z: number): [number, number, number] {
  z += 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const y = yoe + era * 400;
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [m <= 2 ? y + 1 : y, m, d];
}

/** The `type_of` of the Python command: type name and length (null for none). */
export function typeOf(v: MP): [string, number | null] {
  switch (v.t) {
    case "map":
      return ["dict", dedupe(v.entries).length];
    case "arr":
      return ["list", v.items.length];
    case "str":
      return ["str", [...v.v].length];
    case "bin":
      return ["bytes", v.v.length];
    case "nil":
      return ["null", null];
    case "ndarray": {
      const [name, size] = arrayTypeName(v.a);
      return [name, size];
    }
    default:
      return [pyTypeName(v), null];
  }
}
