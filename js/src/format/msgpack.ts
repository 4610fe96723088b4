/**
 * The msgpack framing the reader relies on (docs/format.md, "The data section"): container
 * headers (type, count, header size), stepping over items by their headers alone (no
 * recursion: a count of the items still to step over), extension headers, and the smallest
 * encoding of a str or int key, which is what hash indexes hash and lookups compare.
 */
import { CorruptedError } from "../errors.js";
import type { Key } from "../read/types.js";

export interface ContainerHeader {
  isMap: boolean;
  count: number;
  /** Bytes of the header: 1, 3 or 5. */
  size: number;
}

/** Header size of an array or map from its first byte; 0 if it is neither. */
export function containerHeaderSize(first: number): number {
  if (first >= 0x80 && first <= 0x9f) return 1;
  if (first === 0xdc || first === 0xde) return 3;
  if (first === 0xdd || first === 0xdf) return 5;
  return 0;
}

export function isArrayMarker(first: number): boolean {
  return (first >= 0x90 && first <= 0x9f) || first === 0xdc || first === 0xdd;
}

/** The array or map header at `b[at]`, or CorruptedError naming `where` (a data offset). */
export function containerHeader(b: Uint8Array, at: number, where: number): ContainerHeader {
  const first = at < b.length ? b[at] : -1;
  const size = first < 0 ? 0 : containerHeaderSize(first);
  if (!size || at + size > b.length) {
    throw new CorruptedError(
      `expected an array or map header at data offset ${where}, found ${first < 0 ? "nothing" : "byte 0x" + first.toString(16).padStart(2, "0")}`,
    );
  }
  let count: number;
  if (size === 1) count = first & 0x0f;
  else if (size === 3) count = (b[at + 1] << 8) | b[at + 2];
  else count = ((b[at + 1] << 24) | (b[at + 2] << 16) | (b[at + 3] << 8) | b[at + 4]) >>> 0;
  return { isMap: !isArrayMarker(first), count, size };
}

function header(n: number, fix: number, m16: number, m32: number): Uint8Array {
  if (n < 16) return Uint8Array.of(fix | n);
  if (n < 0x10000) return Uint8Array.of(m16, n >>> 8, n & 0xff);
  return Uint8Array.of(m32, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

/** The smallest msgpack header of an array of `n` items. */
export function arrayHeader(n: number): Uint8Array {
  return header(n, 0x90, 0xdc, 0xdd);
}

/** The smallest msgpack header of a map of `n` entries. */
export function mapHeader(n: number): Uint8Array {
  return header(n, 0x80, 0xde, 0xdf);
}

/** Encoded size of fixed-width numbers by their marker (0 for others). */
const FIXED = new Uint8Array(256);
for (const [m, s] of [
  [0xca, 5],
  [0xcb, 9],
  [0xcc, 2],
  [0xcd, 3],
  [0xce, 5],
  [0xcf, 9],
  [0xd0, 2],
  [0xd1, 3],
  [0xd2, 5],
  [0xd3, 9],
  [0xd4, 3],
  [0xd5, 4],
  [0xd6, 6],
  [0xd7, 10],
  [0xd8, 18],
] as const)
  FIXED[m] = s;

/** Bytes of the length field of str/bin/ext 8, 16, 32 (0 for others). */
const LENGTH_WIDTH = new Uint8Array(256);
for (const [m, w] of [
  [0xd9, 1],
  [0xda, 2],
  [0xdb, 4],
  [0xc4, 1],
  [0xc5, 2],
  [0xc6, 4],
  [0xc7, 1],
  [0xc8, 2],
  [0xc9, 4],
] as const)
  LENGTH_WIDTH[m] = w;

function beUint(b: Uint8Array, at: number, width: number): number {
  if (width === 1) return b[at];
  if (width === 2) return (b[at] << 8) | b[at + 1];
  return ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;
}

/**
 * Where the msgpack item starting at `b[p]` ends, from its headers alone (a str, bin or ext
 * is stepped over by its length, so the end may lie past `b`); -1 when a header (or, in a
 * container, an item) lies past `b`. Throws CorruptedError on byte 0xc1. No recursion.
 */
export function itemEnd(b: Uint8Array, p: number, where = 0): number {
  let pending = 1;
  const size = b.length;
  while (pending) {
    if (p >= size) return -1;
    const m = b[p];
    pending--;
    if (m < 0x80 || m >= 0xe0 || m === 0xc0 || m === 0xc2 || m === 0xc3) p += 1;
    else if (m < 0x90) {
      pending += 2 * (m & 0x0f);
      p += 1;
    } else if (m < 0xa0) {
      pending += m & 0x0f;
      p += 1;
    } else if (m < 0xc0) p += 1 + (m & 0x1f);
    else if (FIXED[m]) p += FIXED[m];
    else if (m === 0xc1) throw new CorruptedError(`byte 0xc1 at data offset ${where + p} starts no msgpack item`);
    else {
      const lw = LENGTH_WIDTH[m];
      const width = lw || (m === 0xdc || m === 0xde ? 2 : 4);
      if (p + 1 + width > size) return -1;
      const n = beUint(b, p + 1, width);
      if (m === 0xdc || m === 0xdd) {
        pending += n;
        p += 1 + width;
      } else if (m === 0xde || m === 0xdf) {
        pending += 2 * n;
        p += 1 + width;
      } else p += 1 + width + n + (m >= 0xc7 && m <= 0xc9 ? 1 : 0);
    }
    if (pending && p > size) return -1;
  }
  return p;
}

/** `itemEnd` with the common scalars (fixint, fixstr, str8, nil, bools, fixed-width
 * numbers) stepped over inline: walking a dict's block for a key is one call per key and
 * value, so this is the lookup's inner loop. */
export function scalarEnd(b: Uint8Array, p: number, where = 0): number {
  const m = b[p];
  if (m < 0x80 || m >= 0xe0) return p + 1;
  if (m >= 0xa0 && m <= 0xbf) return p + 1 + (m & 0x1f);
  if (m === 0xd9) return p + 1 < b.length ? p + 2 + b[p + 1] : -1;
  const fixed = FIXED[m];
  if (fixed) return p + fixed;
  if (m === 0xc0 || m === 0xc2 || m === 0xc3) return p + 1;
  return itemEnd(b, p, where);
}

/** (type code, header size, payload size) of the extension value at `b[at]`, or null. */
export function parseExtHeader(b: Uint8Array, at = 0): { code: number; size: number; length: number } | null {
  if (at >= b.length) return null;
  const m = b[at];
  if (m >= 0xd4 && m <= 0xd8) {
    if (at + 2 > b.length) return null;
    return { code: (b[at + 1] << 24) >> 24, size: 2, length: 1 << (m - 0xd4) };
  }
  if (m < 0xc7 || m > 0xc9) return null;
  const width = LENGTH_WIDTH[m];
  if (at + 2 + width > b.length) return null;
  return { code: (b[at + 1 + width] << 24) >> 24, size: 2 + width, length: beUint(b, at + 1, width) };
}

const textEncoder = new TextEncoder();
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);

/**
 * A key's msgpack encoding in its smallest form (as msgspec writes it: non-negative ints as
 * uint, negative ones as int; strs as fixstr/str8/16/32). Null when no stored key can have
 * it: an int outside -2^63 .. 2^64-1, a number that is not an integer, or a str with a lone
 * surrogate (not UTF-8).
 */
export function encodeKey(key: Key): Uint8Array | null {
  if (typeof key === "string") {
    if (LONE_SURROGATE.test(key)) return null;
    const s = textEncoder.encode(key);
    const n = s.length;
    let head: number[];
    if (n < 32) head = [0xa0 | n];
    else if (n < 0x100) head = [0xd9, n];
    else if (n < 0x10000) head = [0xda, n >>> 8, n & 0xff];
    else head = [0xdb, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
    const out = new Uint8Array(head.length + n);
    out.set(head);
    out.set(s, head.length);
    return out;
  }
  let v: bigint;
  if (typeof key === "number") {
    if (!Number.isInteger(key)) return null;
    if (key >= 0 && key < 0x80) return Uint8Array.of(key);
    if (key < 0 && key >= -32) return Uint8Array.of(key & 0xff);
    v = BigInt(key);
  } else if (typeof key === "bigint") v = key;
  else return null;
  if (v > U64_MAX || v < I64_MIN) return null;
  if (v >= 0n) {
    if (v < 0x80n) return Uint8Array.of(Number(v));
    if (v < 0x100n) return Uint8Array.of(0xcc, Number(v));
    if (v < 0x10000n) return beBytes(0xcd, v, 2);
    if (v < 0x1_0000_0000n) return beBytes(0xce, v, 4);
    return beBytes(0xcf, v, 8);
  }
  if (v >= -32n) return Uint8Array.of(Number(v) & 0xff);
  if (v >= -0x80n) return beBytes(0xd0, v, 1);
  if (v >= -0x8000n) return beBytes(0xd1, v, 2);
  if (v >= -0x8000_0000n) return beBytes(0xd2, v, 4);
  return beBytes(0xd3, v, 8);
}

function beBytes(marker: number, v: bigint, width: number): Uint8Array {
  const out = new Uint8Array(1 + width);
  out[0] = marker;
  let x = BigInt.asUintN(width * 8, v);
  for (let i = width; i >= 1; i--) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}
