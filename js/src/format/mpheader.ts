/**
 * A small msgpack decoder for the header of a NumPy array value (`[descr, shape]` or
 * `[descr, shape, tile]`, docs/format.md "NumPy arrays: extension type 78"). The header must
 * be checked exactly as Python checks it, and a general decoder loses what matters here: an
 * int and a float of the same value (`2` and `2.0`: a shape of floats is refused) and ints
 * past 2^53. So ints come back as `number` (safe) or `bigint`, floats as `MpFloat`, str as
 * `string`, bin as `Uint8Array`, arrays as arrays, maps as `MpMap`, extension values as
 * `MpExt`. Nesting is bounded; anything malformed throws `HeaderSyntaxError`.
 */

export class MpFloat {
  constructor(readonly value: number) {}
}

export class MpMap {
  constructor(readonly entries: Array<[MpValue, MpValue]>) {}
}

export class MpExt {
  constructor(
    readonly type: number,
    readonly data: Uint8Array,
  ) {}
}

export type MpValue = null | boolean | number | bigint | string | Uint8Array | MpFloat | MpMap | MpExt | MpValue[];

export class HeaderSyntaxError extends Error {}

/** Deeper nesting than this is refused (Python's msgspec and NumPy stop at their recursion
 * limits; no real descr nests more than a few levels). */
export const MAX_DEPTH = 64;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Decode `bytes` as exactly one msgpack value. */
export function decodeHeader(bytes: Uint8Array): MpValue {
  const r = new MpReader(bytes);
  const v = r.value(0);
  if (r.at !== bytes.length) throw new HeaderSyntaxError(`${bytes.length - r.at} bytes follow the msgpack value`);
  return v;
}

class MpReader {
  at = 0;
  private readonly view: DataView;
  constructor(private readonly b: Uint8Array) {
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  private need(n: number): number {
    const at = this.at;
    if (n > this.b.length - at) throw new HeaderSyntaxError(`the msgpack value is cut short at byte ${at}`);
    this.at = at + n;
    return at;
  }

  private uint(width: number): number {
    const at = this.need(width);
    const v = this.view;
    return width === 1 ? v.getUint8(at) : width === 2 ? v.getUint16(at) : v.getUint32(at);
  }

  value(depth: number): MpValue {
    if (depth > MAX_DEPTH) throw new HeaderSyntaxError(`msgpack nested deeper than ${MAX_DEPTH} levels`);
    const m = this.b[this.need(1)];
    const v = this.view;
    if (m <= 0x7f) return m;
    if (m >= 0xe0) return m - 0x100;
    if (m >= 0x80 && m <= 0x8f) return this.map(m & 0x0f, depth);
    if (m >= 0x90 && m <= 0x9f) return this.array(m & 0x0f, depth);
    if (m >= 0xa0 && m <= 0xbf) return this.str(m & 0x1f);
    switch (m) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
      case 0xc5:
      case 0xc6: {
        const n = this.uint(1 << (m - 0xc4));
        const at = this.need(n);
        return this.b.slice(at, at + n);
      }
      case 0xc7:
      case 0xc8:
      case 0xc9: {
        const n = this.uint(1 << (m - 0xc7));
        const type = v.getInt8(this.need(1));
        const at = this.need(n);
        return new MpExt(type, this.b.slice(at, at + n));
      }
      case 0xca:
        return new MpFloat(v.getFloat32(this.need(4)));
      case 0xcb:
        return new MpFloat(v.getFloat64(this.need(8)));
      case 0xcc:
        return v.getUint8(this.need(1));
      case 0xcd:
        return v.getUint16(this.need(2));
      case 0xce:
        return v.getUint32(this.need(4));
      case 0xcf:
        return safe(v.getBigUint64(this.need(8)));
      case 0xd0:
        return v.getInt8(this.need(1));
      case 0xd1:
        return v.getInt16(this.need(2));
      case 0xd2:
        return v.getInt32(this.need(4));
      case 0xd3:
        return safe(v.getBigInt64(this.need(8)));
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8: {
        const n = 1 << (m - 0xd4);
        const type = v.getInt8(this.need(1));
        const at = this.need(n);
        return new MpExt(type, this.b.slice(at, at + n));
      }
      case 0xd9:
      case 0xda:
      case 0xdb:
        return this.str(this.uint(1 << (m - 0xd9)));
      case 0xdc:
      case 0xdd:
        return this.array(this.uint(m === 0xdc ? 2 : 4), depth);
      case 0xde:
      case 0xdf:
        return this.map(this.uint(m === 0xde ? 2 : 4), depth);
      default:
        throw new HeaderSyntaxError(`byte 0x${m.toString(16)} at ${this.at - 1} is not msgpack`);
    }
  }

  private str(n: number): string {
    const at = this.need(n);
    try {
      return utf8.decode(this.b.subarray(at, at + n));
    } catch {
      throw new HeaderSyntaxError(`a str at byte ${at} is not valid UTF-8`);
    }
  }

  private array(n: number, depth: number): MpValue[] {
    // every item takes at least a byte: a count past the bytes left is refused before allocating
    if (n > this.b.length - this.at) throw new HeaderSyntaxError(`an array of ${n} items does not fit`);
    const out: MpValue[] = [];
    for (let i = 0; i < n; i++) out.push(this.value(depth + 1));
    return out;
  }

  private map(n: number, depth: number): MpMap {
    if (n * 2 > this.b.length - this.at) throw new HeaderSyntaxError(`a map of ${n} entries does not fit`);
    const out: Array<[MpValue, MpValue]> = [];
    for (let i = 0; i < n; i++) out.push([this.value(depth + 1), this.value(depth + 1)]);
    return new MpMap(out);
  }
}

function safe(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

/** Is `v` an int (not a float or a bool)? */
export function isInt(v: MpValue): v is number | bigint {
  return typeof v === "number" || typeof v === "bigint";
}

/** A short, readable rendering of a header value for error messages (as Python's repr, cut). */
export function show(v: MpValue, limit = 80): string {
  const s = JSON.stringify(v, (_k, x: unknown) =>
    typeof x === "bigint"
      ? x.toString()
      : x instanceof MpFloat
        ? x.value
        : x instanceof Uint8Array
          ? `<${x.length} bytes>`
          : x instanceof MpMap
            ? Object.fromEntries(x.entries.map(([k, e]) => [String(k), e]))
            : x instanceof MpExt
              ? `<ext ${x.type}>`
              : x,
  );
  return s === undefined ? String(v) : s.length > limit ? s.slice(0, limit) + "..." : s;
}
