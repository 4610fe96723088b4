/**
 * The tiled layout of a NumPy array's elements (format 2.1; docs/format.md "NumPy arrays:
 * extension type 78"): tiles in C order over the grid of `ceil(shape[i] / tile[i])` tiles per
 * axis, each tile's elements in C order of its own (clipped) shape. Pure arithmetic on bytes,
 * no I/O.
 *
 * Along each axis a tile is full (`tile[i]` long) or the one edge tile, and the tiles that are
 * full or edge on the same axes (a "part" of the grid) lie at element offsets linear in their
 * grid position; so converting a tiled array to C order takes one strided copy per part (at
 * most 2^ndim), however many tiles there are.
 */
import { type MpValue, isInt, show } from "./mpheader.js";

/** A tiled array has at most this many axes. */
export const MAX_TILED_NDIM = 16;

/** Why `tile` is not a valid tile shape for `shape`, or null. */
export function tileError(tile: MpValue, shape: number[]): string | null {
  if (!Array.isArray(tile) || tile.length !== shape.length) {
    return `tile ${show(tile)} is not a list of ${shape.length} sizes (one per axis of shape [${shape.join(", ")}])`;
  }
  if (shape.length < 1 || shape.length > MAX_TILED_NDIM) {
    return `a tiled array has 1 to ${MAX_TILED_NDIM} axes, not ${shape.length}`;
  }
  for (let i = 0; i < shape.length; i++) {
    const t = tile[i];
    if (!isInt(t) || t < 1 || t > Math.max(shape[i], 1)) {
      return `tile ${show(tile)} does not fit shape [${shape.join(", ")}] (each size in 1..the axis's length)`;
    }
  }
  return null;
}

/** Does the tile order equal C order (every axis after the first whole)? */
export function isTrivial(shape: number[], tile: number[]): boolean {
  for (let i = 1; i < shape.length; i++) if (tile[i] < shape[i]) return false;
  return true;
}

/** Tile `g`'s first element in the tile order and its extents (docs/format.md's formula). */
export function tileStart(shape: number[], tile: number[], g: number[]): { at: number; ext: number[] } {
  const n = shape.length;
  const ext = new Array<number>(n);
  let after = 1;
  for (let k = 0; k < n; k++) {
    ext[k] = Math.min(tile[k], shape[k] - g[k] * tile[k]);
    after *= shape[k];
  }
  let at = 0;
  let before = 1;
  for (let k = 0; k < n; k++) {
    after /= shape[k];
    at += g[k] * tile[k] * before * after;
    before *= ext[k];
  }
  return { at, ext };
}

/**
 * Copy a block of elements: element `(j_0, ..., j_{n-1})` (each `j_d < counts[d]`) goes from
 * `src[srcBase + sum j_d * srcSteps[d]]` to `out[outBase + sum j_d * outSteps[d]]`
 * (`itemsize` bytes; steps in bytes, those of `out` may be negative). Trailing axes
 * contiguous in both are copied as one run.
 */
export function copyBlock(
  src: Uint8Array,
  srcBase: number,
  srcSteps: number[],
  counts: number[],
  out: Uint8Array,
  outBase: number,
  outSteps: number[],
  itemsize: number,
): void {
  const n = counts.length;
  for (let d = 0; d < n; d++) if (counts[d] === 0) return;
  let run = itemsize;
  let k = n;
  for (let d = n - 1; d >= 0; d--) {
    if (counts[d] === 1) {
      k = d;
      continue;
    }
    if (srcSteps[d] !== run || outSteps[d] !== run) break;
    run *= counts[d];
    k = d;
  }
  const idx = new Array<number>(k).fill(0);
  let s = srcBase;
  let o = outBase;
  for (;;) {
    if (run <= 16) {
      for (let b = 0; b < run; b++) out[o + b] = src[s + b];
    } else {
      out.set(src.subarray(s, s + run), o);
    }
    let d = k - 1;
    for (; d >= 0; d--) {
      s += srcSteps[d];
      o += outSteps[d];
      if (++idx[d] < counts[d]) break;
      s -= srcSteps[d] * counts[d];
      o -= outSteps[d] * counts[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/** C-order strides in bytes of an array of `shape`. */
export function cStrides(shape: number[], itemsize: number): number[] {
  const out = new Array<number>(shape.length);
  let s = itemsize;
  for (let d = shape.length - 1; d >= 0; d--) {
    out[d] = s;
    s *= shape[d];
  }
  return out;
}

/** Copy the tile-ordered elements `src` (an array of `shape` in tiles of `tile`) into `out` in
 * C order: one strided copy per part of the grid. */
export function untile(src: Uint8Array, shape: number[], tile: number[], itemsize: number, out: Uint8Array): void {
  const n = shape.length;
  if (shape.some((x) => x === 0)) return;
  const outStrides = cStrides(shape, itemsize);
  let total = 1;
  for (const x of shape) total *= x;
  // per axis the choices: [first index, tiles, extent]
  const choices: Array<Array<[number, number, number]>> = [];
  for (let d = 0; d < n; d++) {
    const full = Math.floor(shape[d] / tile[d]);
    const edge = shape[d] - full * tile[d];
    const here: Array<[number, number, number]> = [];
    if (full) here.push([0, full, tile[d]]);
    if (edge) here.push([full * tile[d], 1, edge]);
    choices.push(here);
  }
  const pick = new Array<number>(n).fill(0);
  for (;;) {
    let at = 0;
    let before = 1;
    let after = total;
    const counts: number[] = [];
    const srcSteps: number[] = [];
    const outSteps: number[] = [];
    const exts: number[] = [];
    let outBase = 0;
    for (let d = 0; d < n; d++) {
      const [first, count, ext] = choices[d][pick[d]];
      after /= shape[d];
      const step = tile[d] * before * after;
      at += (first / tile[d]) * step;
      counts.push(count);
      srcSteps.push(step * itemsize);
      outSteps.push(tile[d] * outStrides[d]);
      exts.push(ext);
      outBase += first * outStrides[d];
      before *= ext;
    }
    const inner = cStrides(exts, itemsize);
    copyBlock(src, at * itemsize, [...srcSteps, ...inner], [...counts, ...exts], out, outBase, [...outSteps, ...outStrides], itemsize);
    let d = n - 1;
    for (; d >= 0; d--) {
      if (++pick[d] < choices[d].length) break;
      pick[d] = 0;
    }
    if (d < 0) return;
  }
}
