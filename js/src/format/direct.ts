/**
 * The direct index of a big dict in a plain archive (docs/format.md, node type 10; Python's
 * msglc/format/direct.py): each key's record names its entry's byte offset, and the records
 * are sorted by the key's 64-bit hash `h`, so a reader finds a key's run of records from the
 * node alone (its group's first record and an estimate within the group), then reads the entry.
 *
 * `h` is held as two 32-bit halves (`hi`, `lo`): every use takes at most 32 bits of it at a
 * time, and numbers keep that exact where a BigInt per record would not be cheap. A record
 * (up to 8 bytes: a fingerprint of up to 32 bits above an offset of up to 63) is likewise
 * split in two halves. Layouts and pure functions only: the lookup is read/direct.ts's.
 */
import { baseHash, mix } from "../read/lookup.js";
import { crc32 } from "../util/crc32.js";
import { u32 } from "../util/bytes.js";

/** Writers: groups of 1024 to 2047 keys (the node holds 4 bytes a group). */
export const GROUP_KEYS = 1024;
/** Writers: a chunk of records and its CRC fit in this many bytes. */
export const CHUNK_BYTES = 1024;
/** Writers: at least this many bits of the hash in each record. */
export const FINGERPRINT_BITS = 16;
/** Readers refuse more groups than 2^26 (a node of 256 MB). */
export const MAX_GROUP_BITS = 26;

const TWO32 = 0x1_0000_0000;

/** A key's 64-bit hash: `hi * 2^32 + lo`. */
export interface Hash {
  hi: number;
  lo: number;
}

/** The hash of a key's smallest msgpack encoding: type 7's hash with seed 0 (murmur3's
 * finalizer of `crc32(kb) << 32 | crc32(kb reversed)`), on 32-bit halves: no BigInt on a
 * lookup's path. */
export function keyHash(kb: Uint8Array): Hash {
  let hi = crc32(kb);
  let lo = crc32Reversed(kb);
  // x ^= x >> 33; x *= 0xff51afd7ed558ccd; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53; x ^= x >> 33
  lo = (lo ^ (hi >>> 1)) >>> 0;
  [hi, lo] = mul64(hi, lo, 0xff51afd7, 0xed558ccd);
  lo = (lo ^ (hi >>> 1)) >>> 0;
  [hi, lo] = mul64(hi, lo, 0xc4ceb9fe, 0x1a85ec53);
  lo = (lo ^ (hi >>> 1)) >>> 0;
  return { hi, lo };
}

/** The low 64 bits of `(ahi, alo) * (bhi, blo)`, as unsigned 32-bit halves. */
function mul64(ahi: number, alo: number, bhi: number, blo: number): [number, number] {
  const a0 = alo & 0xffff;
  const a1 = alo >>> 16;
  const b0 = blo & 0xffff;
  const b1 = blo >>> 16;
  const low = a0 * b0;
  const mid = a1 * b0 + a0 * b1 + Math.floor(low / 0x10000); // below 2^34: exact
  const lo = ((mid & 0xffff) * 0x10000 + (low & 0xffff)) >>> 0;
  const carry = Math.floor(mid / 0x10000) + a1 * b1; // the product's bits 32.. of alo * blo
  const hi = (carry + Math.imul(ahi, blo) + Math.imul(alo, bhi)) >>> 0;
  return [hi, lo];
}

/** CRC-32 of `kb` read backwards. */
function crc32Reversed(kb: Uint8Array): number {
  return crc32(kb.slice().reverse());
}

/** The hash of a key of fuse hash `base` (`crc32(kb) << 32 | crc32(kb reversed)`). */
export function hashOf(base: bigint): Hash {
  const h = mix(base, 0n);
  return { hi: Number(h >> 32n), lo: Number(h & 0xffffffffn) };
}

/** Bits of the hash a record holds: the rest of it, at most 32. */
export function fingerprintBits(width: number, offBits: number): number {
  return Math.min(32, 8 * width - offBits);
}

/** The `bits` (at most 32) bits of a hash after its group's `groupBits` (at most 26):
 * `((h << groupBits) mod 2^64) >> (64 - bits)`, from the top half of the shifted hash. */
export function fingerprintOf(hi: number, lo: number, groupBits: number, bits: number): number {
  const top = groupBits === 0 ? hi : (hi % 2 ** (32 - groupBits)) * 2 ** groupBits + Math.floor(lo / 2 ** (32 - groupBits));
  return Math.floor(top / 2 ** (32 - bits));
}

/** The group of a hash: its top `groupBits` bits (at most 26, all in its high half). */
export function groupOf(hi: number, groupBits: number): number {
  return groupBits === 0 ? 0 : Math.floor(hi / 2 ** (32 - groupBits));
}

/** The 16 bits of a hash after its group's, `(h >> (48 - groupBits)) AND 0xFFFF`. */
function fraction(hi: number, lo: number, groupBits: number): number {
  const shift = 48 - groupBits; // 22 .. 48
  if (shift >= 32) return (hi >>> (shift - 32)) & 0xffff;
  return ((hi << (32 - shift)) | (lo >>> shift)) & 0xffff;
}

/** The position a hash interpolates to in its group `[first, end)`: `f * count` is below
 * 2^48, exact in a double. */
export function estimate(hi: number, lo: number, first: number, end: number, groupBits: number): number {
  return first + Math.floor((fraction(hi, lo, groupBits) * (end - first)) / 65536);
}

/** The records `[start, stop)` that hold `h`'s, if the dict has its key. */
export function window(h: Hash, firsts: ArrayLike<number>, groupBits: number, lo: number, hi: number): [number, number] {
  const g = groupOf(h.hi, groupBits);
  const first = firsts[g];
  const end = firsts[g + 1];
  const est = estimate(h.hi, h.lo, first, end, groupBits);
  return [Math.max(first, est - lo), Math.min(end, est + hi + 1)];
}

/** Bytes of the region of `n` records: each chunk's records, then its CRC-32. */
export function regionSize(n: number, width: number, chunk: number): number {
  return n * width + 4 * Math.ceil(n / chunk);
}

/** Where chunk `c` starts in the region. */
export function chunkAt(c: number, width: number, chunk: number): number {
  return c * (chunk * width + 4);
}

/** A record split at `offBits`: the entry's offset below, everything above (the fingerprint
 * in a sound record; a value past 2^53 may round, but then it is no fingerprint anyway). */
export function splitRecord(b: Uint8Array, at: number, width: number, offBits: number): { off: number; fp: number } {
  let lo = 0;
  let hi = 0;
  for (let i = Math.min(width, 4) - 1; i >= 0; i--) lo = lo * 256 + b[at + i];
  for (let i = width - 1; i >= 4; i--) hi = hi * 256 + b[at + i];
  if (offBits >= 32) {
    const up = 2 ** (offBits - 32);
    return { off: (hi % up) * TWO32 + lo, fp: Math.floor(hi / up) };
  }
  const low = 2 ** offBits;
  return { off: lo % low, fp: hi * 2 ** (32 - offBits) + Math.floor(lo / low) };
}

/** The fingerprint of the record at `b[at]` (`splitRecord(...).fp` without an object: a
 * bisection reads eight of them a lookup). */
export function recordFp(b: Uint8Array, at: number, width: number, offBits: number): number {
  if (width <= 6) {
    // (48 bits at most: exact in a double)
    let v = 0;
    for (let i = width - 1; i >= 0; i--) v = v * 256 + b[at + i];
    return Math.floor(v / 2 ** offBits);
  }
  let lo = 0;
  let hi = 0;
  for (let i = 3; i >= 0; i--) lo = lo * 256 + b[at + i];
  for (let i = width - 1; i >= 4; i--) hi = hi * 256 + b[at + i];
  if (offBits >= 32) return Math.floor(hi / 2 ** (offBits - 32));
  return hi * 2 ** (32 - offBits) + Math.floor(lo / 2 ** offBits);
}

/** `fp << offBits | off` as `width` little-endian bytes at `b[at]` (`fp` below 2^32, of at
 * most `8 * width - offBits` bits; `off` below `2^offBits`). */
export function putRecord(b: Uint8Array, at: number, width: number, offBits: number, fp: number, off: number): void {
  let lo: number;
  let hi: number;
  if (offBits >= 32) {
    lo = off % TWO32;
    hi = Math.floor(off / TWO32) + fp * 2 ** (offBits - 32);
  } else {
    const room = 2 ** (32 - offBits); // fingerprint values that fit beside the offset in `lo`
    lo = off + (fp % room) * 2 ** offBits;
    hi = Math.floor(fp / room);
  }
  for (let i = 0; i < width; i++) {
    b[at + i] = i < 4 ? lo % 256 : hi % 256;
    if (i < 4) lo = Math.floor(lo / 256);
    else hi = Math.floor(hi / 256);
  }
}

/** The first record of each group, then n: the node's `groups` as numbers. */
export function firstsOf(groups: Uint8Array): Uint32Array {
  const out = new Uint32Array(groups.length / 4);
  for (let g = 0; g < out.length; g++) out[g] = u32(groups, 4 * g);
  return out;
}

function bitLength(x: number): number {
  let bits = 0;
  for (let v = x; v >= 1; v = Math.floor(v / 2)) bits++;
  return bits;
}

/** What writers give the index of `n` keys over a dict encoded in `length` bytes. */
export interface Shape {
  groupBits: number;
  width: number;
  offBits: number;
  chunk: number;
}

export function writerShape(n: number, length: number): Shape {
  const groupBits = Math.max(0, bitLength(Math.floor(n / GROUP_KEYS)) - 1);
  const offBits = Math.max(1, bitLength(length));
  const width = Math.floor((offBits + FINGERPRINT_BITS + 7) / 8);
  return { groupBits, width, offBits, chunk: Math.floor((CHUNK_BYTES - 4) / width) };
}

/** How much a lookup reads for an entry, from the lengths of the entries whose value has no
 * node of its own: the longest of those in the fewest bit lengths that hold at least 999 in
 * 1000 of them (so that a few long strings do not make every lookup read as much). */
export function entryRead(lengths: number[]): number {
  const count = new Map<number, number>();
  const longest = new Map<number, number>();
  for (const length of lengths) {
    const bits = bitLength(length);
    count.set(bits, (count.get(bits) ?? 0) + 1);
    longest.set(bits, Math.max(longest.get(bits) ?? 0, length));
  }
  let total = 0;
  let most = 0;
  for (const bits of [...count.keys()].sort((a, b) => a - b)) {
    total += count.get(bits)!;
    most = Math.max(most, longest.get(bits)!);
    if (total * 1000 >= lengths.length * 999) break;
  }
  return most;
}

/** The hashes of a dict's keys, in entry order, in two halves. */
export interface Hashes {
  hi: Uint32Array;
  lo: Uint32Array;
}

/** Entries 0..n-1 in the order of their hashes, ties in entry order: a stable radix sort on
 * 16 bits at a time, from the lowest (a comparison sort of millions of keys takes seconds). */
export function hashOrder({ hi, lo }: Hashes): Uint32Array {
  const n = hi.length;
  let order = Uint32Array.from({ length: n }, (_, e) => e);
  let next = new Uint32Array(n);
  const counts = new Uint32Array(65537);
  for (const [half, shift] of [[lo, 0], [lo, 16], [hi, 0], [hi, 16]] as const) {
    counts.fill(0);
    for (let i = 0; i < n; i++) counts[((half[i] >>> shift) & 0xffff) + 1]++;
    for (let d = 0; d < 65536; d++) counts[d + 1] += counts[d];
    for (let i = 0; i < n; i++) next[counts[(half[order[i]] >>> shift) & 0xffff]++] = order[i];
    [order, next] = [next, order];
  }
  return order;
}

/** A direct index region and the node fields that go with it. */
export interface Built {
  region: Uint8Array;
  /** (2^groupBits + 1) u32 LE: the first record of each group, then n. */
  groups: Uint8Array;
  lo: number;
  hi: number;
  entryRead: number;
}

/**
 * The region writers build over keys of hashes `hashes` whose entries start at `offs` (in
 * entry order, then the dict's end), the entries in `kids` having a value with a node of its
 * own: records sorted by `(h, entry)`, grouped by the top bits of `h`, `lo` and `hi` the
 * farthest a record lies before and after its estimate.
 */
export function build(hashes: Hashes, offs: number[], kids: Set<number>, shape: Shape): Built {
  const n = hashes.hi.length;
  const { groupBits, width, offBits, chunk } = shape;
  const order = hashOrder(hashes);
  const groups = 2 ** groupBits;
  const firsts = new Uint32Array(groups + 1);
  for (let e = 0; e < n; e++) firsts[groupOf(hashes.hi[e], groupBits) + 1]++;
  for (let g = 0; g < groups; g++) firsts[g + 1] += firsts[g];
  const fpBits = fingerprintBits(width, offBits);
  const region = new Uint8Array(regionSize(n, width, chunk));
  const step = chunk * width + 4;
  let lo = 0;
  let hi = 0;
  for (let pos = 0; pos < n; pos++) {
    const e = order[pos];
    const [h1, h0] = [hashes.hi[e], hashes.lo[e]];
    const g = groupOf(h1, groupBits);
    const est = estimate(h1, h0, firsts[g], firsts[g + 1], groupBits);
    lo = Math.max(lo, est - pos);
    hi = Math.max(hi, pos - est);
    const c = Math.floor(pos / chunk);
    putRecord(region, c * step + (pos - c * chunk) * width, width, offBits, fingerprintOf(h1, h0, groupBits, fpBits), offs[e]);
  }
  const view = new DataView(region.buffer);
  for (let c = 0; c * chunk < n; c++) {
    const records = Math.min(chunk, n - c * chunk) * width;
    view.setUint32(c * step + records, crc32(region.subarray(c * step, c * step + records)), true);
  }
  const lengths: number[] = [];
  for (let e = 0; e < n; e++) if (!kids.has(e)) lengths.push(offs[e + 1] - offs[e]);
  const groupBytes = new Uint8Array(4 * (groups + 1));
  const gv = new DataView(groupBytes.buffer);
  for (let g = 0; g <= groups; g++) gv.setUint32(4 * g, firsts[g], true);
  return { region, groups: groupBytes, lo, hi, entryRead: entryRead(lengths) };
}
