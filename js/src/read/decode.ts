/**
 * msgpack bytes of the data section -> plain JavaScript values.
 *
 * Value mapping (docs/javascript.md copies this table):
 *
 * | msgpack                              | JavaScript                                           |
 * |--------------------------------------|------------------------------------------------------|
 * | int                                  | `number` when a safe integer (-2^53 < x < 2^53), else `bigint` |
 * | float 32 / 64                        | `number`                                             |
 * | str                                  | `string` (invalid UTF-8: `CorruptedError`)           |
 * | bin                                  | `Uint8Array` (a copy)                                |
 * | nil, bool                            | `null`, `boolean`                                    |
 * | array                                | `Array`                                              |
 * | map whose keys are all str           | a plain object (own properties: a key `"__proto__"` is an ordinary own property) |
 * | any other map (int keys, mixed, ...) | `Map`, in stored order (int keys as ints above)      |
 * | timestamp extension (-1)             | `Date` (UTC; nanoseconds below the millisecond dropped) |
 * | extension 78 (NumPy array)           | `NDArray` (`decodeArray` of read/array.ts)            |
 * | any other extension                  | `UnsupportedVersionError`                            |
 *
 * A plain object iterates integer-like keys ("10") first, as JavaScript objects do; a lazy
 * view's `keys()` gives the stored order. A key repeated in a map keeps its last value.
 *
 * The decoder is written here rather than taken from `@msgpack/msgpack`, which (3.1) decodes
 * maps to objects only (int keys become strings), refuses a key "__proto__", and has no mode
 * giving a `number` for small 64-bit ints and a `bigint` for large ones. It uses an explicit
 * stack, never recursion: nesting is bounded by `MAX_DEPTH` (deeper is `CorruptedError`) and
 * every count is checked against the bytes left before anything is allocated from it.
 */
import { ByteCursor } from "../format/cursor.js";
import { CorruptedError, MsglcError, UnsupportedVersionError } from "../errors.js";
import { decodeArray, parseArrayHeader, type ArrayHeader } from "./array.js";

/** Nesting deeper than this is refused as corrupted (msglc's writers never come near it). */
export const MAX_DEPTH = 100_000;

/** The stored key order of decoded plain objects whose own-property order differs from it
 * (integer-like keys such as "10" are listed first by every JavaScript object). */
const storedKeyOrder = new WeakMap<object, string[]>();

function uniqueKeys(kv: unknown[]): string[] {
  const seen = new Set<string>();
  for (let j = 0; j < kv.length; j += 2) seen.add(kv[j] as string);
  return [...seen];
}

/** A decoded plain object's keys in stored order (a repeated key at its first place, as a
 * Python dict keeps it). */
export function objectKeys(o: object): string[] {
  return storedKeyOrder.get(o) ?? Object.keys(o);
}

export const ARRAY_EXT = 78;
export const TIMESTAMP_EXT = -1;

export interface DecodeOptions {
  /** TOC nodes and index keys, whose fields must have exact types: every map as a `Map`
   * whatever its keys, and floats as `Float` boxes (never taken for ints). */
  strict?: boolean;
}

/** A float decoded in strict mode. */
export class Float {
  constructor(readonly value: number) {}
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

const enum K {
  Arr = 0,
  Map = 1,
}

interface Frame {
  kind: K;
  items: unknown[];
  i: number;
  len: number;
}

const PENDING: unique symbol = Symbol("pending");

class Decoder extends ByteCursor {
  private readonly stack: Frame[] = [];

  constructor(
    b: Uint8Array,
    start: number,
    end: number,
    /** The data offset of `b[0]`, for messages. */
    private readonly where: number,
    private readonly strict: boolean,
  ) {
    super(b, start, end);
  }

  fail(why: string, at = this.at): never {
    throw new CorruptedError(`data at offset ${this.where + at} is not valid msgpack: ${why}`);
  }

  protected cutShort(): never {
    this.fail(`an item runs past the end of its span (offset ${this.where + this.end})`);
  }

  /** Decode items until the frame pushed first (or the one value) is complete. */
  run(root: Frame | null): unknown {
    const stack = this.stack;
    let value: unknown;
    if (root !== null) {
      if (root.len === 0) return this.finish(root);
      stack.push(root);
    }
    for (;;) {
      value = this.item();
      if (value === PENDING) continue;
      for (;;) {
        const top = stack.length ? stack[stack.length - 1] : undefined;
        if (top === undefined) return value;
        top.items[top.i++] = value;
        if (top.i < top.len) break;
        stack.pop();
        value = this.finish(top);
      }
    }
  }

  private finish(f: Frame): unknown {
    if (f.kind === K.Arr) return f.items;
    const kv = f.items;
    const n = kv.length;
    let allStr = !this.strict;
    for (let j = 0; allStr && j < n; j += 2) if (typeof kv[j] !== "string") allStr = false;
    if (allStr) {
      const o: Record<string, unknown> = {};
      let digit = false;
      for (let j = 0; j < n; j += 2) {
        const k = kv[j] as string;
        const c = k.charCodeAt(0);
        if (c >= 48 && c <= 57) digit = true;
        if (k === "__proto__") Object.defineProperty(o, k, { value: kv[j + 1], enumerable: true, writable: true, configurable: true });
        else o[k] = kv[j + 1];
      }
      // an object lists integer-like keys ("10") first: keep the stored order aside
      if (digit) storedKeyOrder.set(o, uniqueKeys(kv));
      return o;
    }
    const m = new Map<unknown, unknown>();
    for (let j = 0; j < n; j += 2) m.set(kv[j], kv[j + 1]);
    return m;
  }

  private open(kind: K, count: number): unknown {
    const len = kind === K.Map ? 2 * count : count;
    if (len > this.end - this.at) this.fail(`a container of ${count} items in ${this.end - this.at} bytes`);
    if (len === 0) return kind === K.Arr ? [] : this.finish({ kind, items: [], i: 0, len: 0 });
    if (this.stack.length >= MAX_DEPTH) this.fail(`nested deeper than ${MAX_DEPTH} levels`);
    this.stack.push({ kind, items: new Array(len), i: 0, len });
    return PENDING;
  }

  private str(n: number): string {
    this.need(n);
    const b = this.b;
    const start = this.at;
    this.at += n;
    if (n < 24) {
      let ascii = true;
      for (let i = start; i < start + n; i++) if (b[i] & 0x80) ascii = false;
      if (ascii) {
        let s = "";
        for (let i = start; i < start + n; i++) s += String.fromCharCode(b[i]);
        return s;
      }
    }
    try {
      return utf8.decode(b.subarray(start, start + n));
    } catch {
      return this.fail("a str that is not UTF-8", start);
    }
  }

  private int64(signed: boolean): number | bigint {
    this.need(8);
    const hi = signed ? this.view.getInt32(this.at) : this.view.getUint32(this.at);
    const lo = this.view.getUint32(this.at + 4);
    const at = this.at;
    this.at += 8;
    if (hi > -0x200000 && hi < 0x200000) return hi * 0x1_0000_0000 + lo;
    return signed ? this.view.getBigInt64(at) : this.view.getBigUint64(at);
  }

  private item(): unknown {
    if (this.at >= this.end) this.fail(`an item runs past the end of its span (offset ${this.where + this.end})`);
    const m = this.b[this.at++];
    if (m < 0x80) return m;
    if (m >= 0xe0) return m - 0x100;
    if (m < 0x90) return this.open(K.Map, m & 0x0f);
    if (m < 0xa0) return this.open(K.Arr, m & 0x0f);
    if (m < 0xc0) return this.str(m & 0x1f);
    switch (m) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return this.bin(this.u8());
      case 0xc5:
        return this.bin(this.u16());
      case 0xc6:
        return this.bin(this.u32());
      case 0xc7:
        return this.ext(this.u8());
      case 0xc8:
        return this.ext(this.u16());
      case 0xc9:
        return this.ext(this.u32());
      case 0xca: {
        this.need(4);
        const v = this.view.getFloat32(this.at);
        this.at += 4;
        return this.strict ? new Float(v) : v;
      }
      case 0xcb: {
        this.need(8);
        const v = this.view.getFloat64(this.at);
        this.at += 8;
        return this.strict ? new Float(v) : v;
      }
      case 0xcc:
        return this.u8();
      case 0xcd:
        return this.u16();
      case 0xce:
        return this.u32();
      case 0xcf:
        return this.int64(false);
      case 0xd0:
        return (this.u8() << 24) >> 24;
      case 0xd1:
        return (this.u16() << 16) >> 16;
      case 0xd2:
        return this.u32() | 0;
      case 0xd3:
        return this.int64(true);
      case 0xd4:
        return this.ext(1);
      case 0xd5:
        return this.ext(2);
      case 0xd6:
        return this.ext(4);
      case 0xd7:
        return this.ext(8);
      case 0xd8:
        return this.ext(16);
      case 0xd9:
        return this.str(this.u8());
      case 0xda:
        return this.str(this.u16());
      case 0xdb:
        return this.str(this.u32());
      case 0xdc:
        return this.open(K.Arr, this.u16());
      case 0xdd:
        return this.open(K.Arr, this.u32());
      case 0xde:
        return this.open(K.Map, this.u16());
      case 0xdf:
        return this.open(K.Map, this.u32());
      default:
        return this.fail("byte 0xc1 starts no msgpack item", this.at - 1);
    }
  }

  private bin(n: number): Uint8Array {
    this.need(n);
    const out = this.b.slice(this.at, this.at + n);
    this.at += n;
    return out;
  }

  private ext(n: number): unknown {
    const at = this.at - 1;
    this.need(1 + n);
    const code = (this.b[this.at] << 24) >> 24;
    const start = this.at + 1;
    this.at = start + n;
    const payload = this.b.subarray(start, start + n);
    if (code === TIMESTAMP_EXT) return this.timestamp(payload, at);
    if (code === ARRAY_EXT) return decodeArrayExt(payload, this.where + at);
    throw new UnsupportedVersionError(
      `data at offset ${this.where + at} holds an msgpack extension value of type ${code}, unknown to this reader`,
    );
  }

  private timestamp(p: Uint8Array, at: number): Date {
    const v = new DataView(p.buffer, p.byteOffset, p.byteLength);
    let sec: number;
    let nsec: number;
    if (p.length === 4) {
      sec = v.getUint32(0);
      nsec = 0;
    } else if (p.length === 8) {
      const hi = v.getUint32(0);
      nsec = hi >>> 2;
      sec = (hi & 3) * 0x1_0000_0000 + v.getUint32(4);
    } else if (p.length === 12) {
      nsec = v.getUint32(0);
      const s = v.getBigInt64(4);
      if (s > 10n ** 14n || s < -(10n ** 14n)) this.fail(`a timestamp of ${s} seconds, out of range`, at);
      sec = Number(s);
    } else return this.fail(`a timestamp of ${p.length} bytes`, at);
    if (nsec >= 1e9) this.fail(`a timestamp with ${nsec} nanoseconds`, at);
    const date = new Date(sec * 1000 + Math.floor(nsec / 1e6));
    if (Number.isNaN(date.getTime())) this.fail(`a timestamp of ${sec} seconds, out of range`, at);
    return date;
  }

  get offset(): number {
    return this.at;
  }
}

const ARRAYS = new WeakSet<object>();

/** The header and stored element bytes of each array decoded from an ext-78 value, so that a
 * path or `slice()` can select from it as from a lazily read one. */
const STORED = new WeakMap<object, { header: ArrayHeader; elements: Uint8Array }>();

export function storedArray(x: object): { header: ArrayHeader; elements: Uint8Array } | undefined {
  return STORED.get(x);
}

/** Note `x` as an NDArray the reader made (a decoded dict with keys "dtype", "shape" and
 * "data" is not one). */
export function markArray<T extends object>(x: T): T {
  ARRAYS.add(x);
  return x;
}

/** Is `x` an NDArray the reader made? */
export function isArrayValue(x: unknown): boolean {
  return typeof x === "object" && x !== null && ARRAYS.has(x);
}

/** An ext-78 payload as an `NDArray` (its header checked by `parseArrayHeader`). */
export function decodeArrayExt(payload: Uint8Array, where: number): unknown {
  const h = payload.length >= 4 ? (payload[0] | (payload[1] << 8) | (payload[2] << 16) | (payload[3] << 24)) >>> 0 : -1;
  if (h < 0 || h > payload.length - 4) {
    throw new CorruptedError(`NumPy array at offset ${where}: its header does not fit its ${payload.length}-byte value`);
  }
  try {
    const header = parseArrayHeader(payload.subarray(0, 4 + h), payload.length - 4 - h);
    const elements = payload.subarray(4 + h);
    const array = markArray(decodeArray(header, elements));
    STORED.set(array, { header, elements });
    return array;
  } catch (e) {
    if (e instanceof MsglcError) {
      const Cls = e.constructor as new (m: string) => MsglcError;
      throw new Cls(`NumPy array at offset ${where}: ${e.message}`);
    }
    throw e;
  }
}

/** The one msgpack value that makes `b` exactly (`where`: its data offset, for messages). */
export function decodeValue(b: Uint8Array, where: number, options: DecodeOptions = {}): unknown {
  const d = new Decoder(b, 0, b.length, where, options.strict === true);
  const value = d.run(null);
  if (d.offset !== b.length) d.fail(`${b.length - d.offset} bytes follow the value`, d.offset);
  return value;
}

/** The `count` items that make `b` exactly, as an array (a list's span). */
export function decodeItems(b: Uint8Array, count: number, where: number): unknown[] {
  if (count > b.length) throw new CorruptedError(`data at offset ${where}: ${count} items cannot fit ${b.length} bytes`);
  const d = new Decoder(b, 0, b.length, where, false);
  const value = d.run({ kind: K.Arr, items: new Array(count), i: 0, len: count }) as unknown[];
  if (d.offset !== b.length) d.fail(`${b.length - d.offset} bytes follow ${count} items`, d.offset);
  return value;
}

/** The `count` entries that make `b` exactly, as a map (a dict's span): an object or a `Map`. */
export function decodeEntries(b: Uint8Array, count: number, where: number): Record<string, unknown> | Map<unknown, unknown> {
  if (2 * count > b.length) throw new CorruptedError(`data at offset ${where}: ${count} entries cannot fit ${b.length} bytes`);
  const d = new Decoder(b, 0, b.length, where, false);
  const value = d.run({ kind: K.Map, items: new Array(2 * count), i: 0, len: 2 * count });
  if (d.offset !== b.length) d.fail(`${b.length - d.offset} bytes follow ${count} entries`, d.offset);
  return value as Record<string, unknown> | Map<unknown, unknown>;
}
