/**
 * The byte shuffle of filter code 1 (docs/format.md, "Frames"): a frame of `m` elements of
 * `p` bytes is stored as byte 0 of every element, then byte 1, and so on, so plain byte
 * `j*p + k` is stored byte `k*m + j`. The caller checks that `p` divides the length.
 */

/** The plain bytes of the byte-shuffled `src` (elements of `p` bytes), in a new array. */
export function unshuffle(src: Uint8Array, p: number): Uint8Array {
  const n = src.length;
  const out = new Uint8Array(n);
  const m = (n / p) | 0;
  if (p === 8) {
    for (let j = 0, o = 0; j < m; j++, o += 8) {
      out[o] = src[j];
      out[o + 1] = src[m + j];
      out[o + 2] = src[2 * m + j];
      out[o + 3] = src[3 * m + j];
      out[o + 4] = src[4 * m + j];
      out[o + 5] = src[5 * m + j];
      out[o + 6] = src[6 * m + j];
      out[o + 7] = src[7 * m + j];
    }
  } else if (p === 4) {
    for (let j = 0, o = 0; j < m; j++, o += 4) {
      out[o] = src[j];
      out[o + 1] = src[m + j];
      out[o + 2] = src[2 * m + j];
      out[o + 3] = src[3 * m + j];
    }
  } else if (p === 2) {
    for (let j = 0, o = 0; j < m; j++, o += 2) {
      out[o] = src[j];
      out[o + 1] = src[m + j];
    }
  } else {
    // one byte plane at a time: sequential reads, strided writes
    for (let k = 0; k < p; k++) {
      const base = k * m;
      for (let j = 0, o = k; j < m; j++, o += p) out[o] = src[base + j];
    }
  }
  return out;
}

/** The byte shuffle itself (the writer's direction), for tests. */
export function shuffle(plain: Uint8Array, p: number): Uint8Array {
  const n = plain.length;
  const out = new Uint8Array(n);
  const m = (n / p) | 0;
  for (let k = 0; k < p; k++) {
    const base = k * m;
    for (let j = 0, o = k; j < m; j++, o += p) out[base + j] = plain[o];
  }
  return out;
}
