/**
 * XXH64 (seed 0 by default), for zstd's content checksum: the low 32 bits of XXH64 of a
 * frame's content. 64-bit words are kept as two u32 halves in plain numbers (BigInt per step
 * is far too slow); products are formed from 16-bit limbs so that every intermediate stays an
 * exact double.
 */

// The five primes, as [high, low] halves.
const P1H = 0x9e3779b1, P1L = 0x85ebca87;
const P2H = 0xc2b2ae3d, P2L = 0x27d4eb4f;
const P3H = 0x165667b1, P3L = 0x9e3779f9;
const P4H = 0x85ebca77, P4L = 0xc2b2ae63;
const P5H = 0x27d4eb2f, P5L = 0x165667c5;

const TWO32 = 4294967296;

// The result of the last mul/add: a function returns its 64-bit value here.
let rh = 0;
let rl = 0;

/** The high 32 bits of the 64-bit product of two u32 (Hacker's Delight, 16-bit limbs). */
function mulhi(a: number, b: number): number {
  const a0 = a & 0xffff, a1 = a >>> 16, b0 = b & 0xffff, b1 = b >>> 16;
  let t = a0 * b0;
  t = a1 * b0 + (t >>> 16);
  const w1 = t & 0xffff, w2 = t >>> 16;
  t = a0 * b1 + w1;
  return a1 * b1 + w2 + (t >>> 16);
}

/** (ah:al) * (bh:bl) mod 2^64 into (rh, rl). */
function mul(ah: number, al: number, bh: number, bl: number): void {
  rl = Math.imul(al, bl) >>> 0;
  rh = (mulhi(al, bl) + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
}

/** (ah:al) + (bh:bl) mod 2^64 into (rh, rl). */
function add(ah: number, al: number, bh: number, bl: number): void {
  const low = al + bl;
  rl = low >>> 0;
  rh = (ah + bh + (low >= TWO32 ? 1 : 0)) >>> 0;
}

/** rotl(x, r) for 0 < r < 32 into (rh, rl). */
function rotl(h: number, l: number, r: number): void {
  rh = ((h << r) | (l >>> (32 - r))) >>> 0;
  rl = ((l << r) | (h >>> (32 - r))) >>> 0;
}

/** round(acc, input) = rotl(acc + input * P2, 31) * P1, into (rh, rl). */
function round(acch: number, accl: number, ih: number, il: number): void {
  mul(ih, il, P2H, P2L);
  add(acch, accl, rh, rl);
  rotl(rh, rl, 31);
  mul(rh, rl, P1H, P1L);
}

function u32le(b: Uint8Array, i: number): number {
  return (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;
}

/** XXH64 of `b[start, end)` with seed 0, as [high, low] u32 halves. */
export function xxh64(b: Uint8Array, start = 0, end = b.length): [number, number] {
  const len = end - start;
  let i = start;
  let hh: number, hl: number;
  if (len >= 32) {
    // v1 = P1 + P2, v2 = P2, v3 = 0, v4 = -P1 (seed 0)
    add(P1H, P1L, P2H, P2L);
    let v1h = rh, v1l = rl;
    let v2h = P2H, v2l = P2L;
    let v3h = 0, v3l = 0;
    add(~P1H >>> 0, ~P1L >>> 0, 0, 1);
    let v4h = rh, v4l = rl;
    const limit = end - 32;
    let il: number, ih: number, lo: number, hi: number, s: number, xl: number, xh: number, yl: number, yh: number;
    for (; i <= limit; i += 32) {
      // v = rotl(v + input * P2, 31) * P1, for each of the four lanes
      il = u32le(b, i + 0); ih = u32le(b, i + 4);
      lo = Math.imul(il, P2L) >>> 0;
      hi = mulhi(il, P2L) + Math.imul(ih, P2L) + Math.imul(il, P2H);
      s = v1l + lo;
      xl = s >>> 0;
      xh = (v1h + hi + (s >= TWO32 ? 1 : 0)) >>> 0;
      yh = ((xh << 31) | (xl >>> 1)) >>> 0;
      yl = ((xl << 31) | (xh >>> 1)) >>> 0;
      v1l = Math.imul(yl, P1L) >>> 0;
      v1h = (mulhi(yl, P1L) + Math.imul(yh, P1L) + Math.imul(yl, P1H)) >>> 0;
      il = u32le(b, i + 8); ih = u32le(b, i + 12);
      lo = Math.imul(il, P2L) >>> 0;
      hi = mulhi(il, P2L) + Math.imul(ih, P2L) + Math.imul(il, P2H);
      s = v2l + lo;
      xl = s >>> 0;
      xh = (v2h + hi + (s >= TWO32 ? 1 : 0)) >>> 0;
      yh = ((xh << 31) | (xl >>> 1)) >>> 0;
      yl = ((xl << 31) | (xh >>> 1)) >>> 0;
      v2l = Math.imul(yl, P1L) >>> 0;
      v2h = (mulhi(yl, P1L) + Math.imul(yh, P1L) + Math.imul(yl, P1H)) >>> 0;
      il = u32le(b, i + 16); ih = u32le(b, i + 20);
      lo = Math.imul(il, P2L) >>> 0;
      hi = mulhi(il, P2L) + Math.imul(ih, P2L) + Math.imul(il, P2H);
      s = v3l + lo;
      xl = s >>> 0;
      xh = (v3h + hi + (s >= TWO32 ? 1 : 0)) >>> 0;
      yh = ((xh << 31) | (xl >>> 1)) >>> 0;
      yl = ((xl << 31) | (xh >>> 1)) >>> 0;
      v3l = Math.imul(yl, P1L) >>> 0;
      v3h = (mulhi(yl, P1L) + Math.imul(yh, P1L) + Math.imul(yl, P1H)) >>> 0;
      il = u32le(b, i + 24); ih = u32le(b, i + 28);
      lo = Math.imul(il, P2L) >>> 0;
      hi = mulhi(il, P2L) + Math.imul(ih, P2L) + Math.imul(il, P2H);
      s = v4l + lo;
      xl = s >>> 0;
      xh = (v4h + hi + (s >= TWO32 ? 1 : 0)) >>> 0;
      yh = ((xh << 31) | (xl >>> 1)) >>> 0;
      yl = ((xl << 31) | (xh >>> 1)) >>> 0;
      v4l = Math.imul(yl, P1L) >>> 0;
      v4h = (mulhi(yl, P1L) + Math.imul(yh, P1L) + Math.imul(yl, P1H)) >>> 0;
    }
    rotl(v1h, v1l, 1);
    hh = rh; hl = rl;
    rotl(v2h, v2l, 7);
    add(hh, hl, rh, rl);
    hh = rh; hl = rl;
    rotl(v3h, v3l, 12);
    add(hh, hl, rh, rl);
    hh = rh; hl = rl;
    rotl(v4h, v4l, 18);
    add(hh, hl, rh, rl);
    hh = rh; hl = rl;
    const vs = [v1h, v1l, v2h, v2l, v3h, v3l, v4h, v4l];
    for (let k = 0; k < 8; k += 2) {
      // mergeRound: h = (h ^ round(0, v)) * P1 + P4
      round(0, 0, vs[k], vs[k + 1]);
      mul((hh ^ rh) >>> 0, (hl ^ rl) >>> 0, P1H, P1L);
      add(rh, rl, P4H, P4L);
      hh = rh; hl = rl;
    }
  } else {
    hh = P5H; hl = P5L;
  }
  add(hh, hl, Math.floor(len / TWO32), len >>> 0);
  hh = rh; hl = rl;
  for (; i + 8 <= end; i += 8) {
    round(0, 0, u32le(b, i + 4), u32le(b, i));
    rotl((hh ^ rh) >>> 0, (hl ^ rl) >>> 0, 27);
    mul(rh, rl, P1H, P1L);
    add(rh, rl, P4H, P4L);
    hh = rh; hl = rl;
  }
  if (i + 4 <= end) {
    mul(0, u32le(b, i), P1H, P1L);
    rotl((hh ^ rh) >>> 0, (hl ^ rl) >>> 0, 23);
    mul(rh, rl, P2H, P2L);
    add(rh, rl, P3H, P3L);
    hh = rh; hl = rl;
    i += 4;
  }
  for (; i < end; i++) {
    mul(0, b[i], P5H, P5L);
    rotl((hh ^ rh) >>> 0, (hl ^ rl) >>> 0, 11);
    mul(rh, rl, P1H, P1L);
    hh = rh; hl = rl;
  }
  // avalanche: h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32
  hl = (hl ^ (hh >>> 1)) >>> 0;
  mul(hh, hl, P2H, P2L);
  hh = rh; hl = rl;
  hl = (hl ^ ((hl >>> 29) | (hh << 3))) >>> 0;
  hh = (hh ^ (hh >>> 29)) >>> 0;
  mul(hh, hl, P3H, P3L);
  hh = rh; hl = rl;
  hl = (hl ^ hh) >>> 0;
  return [hh, hl];
}

/** The low 32 bits of XXH64 (seed 0) of `b[start, end)`: zstd's content checksum. */
export function xxh64Low32(b: Uint8Array, start = 0, end = b.length): number {
  return xxh64(b, start, end)[1];
}
