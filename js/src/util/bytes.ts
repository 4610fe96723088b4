/** Little-endian fixed-width integers outside msgpack (docs/format.md: "All fixed-width
 * integers outside msgpack are little-endian"). Offsets stay below 2^53 in any real file, so
 * u48 and u64 fields are read as numbers; a u64 that does not fit is refused by the caller's
 * range checks (it is then larger than any file). */

export function u16(b: Uint8Array, at: number): number {
  return b[at] | (b[at + 1] << 8);
}

export function u24(b: Uint8Array, at: number): number {
  return b[at] | (b[at + 1] << 8) | (b[at + 2] << 16);
}

export function u32(b: Uint8Array, at: number): number {
  return (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;
}

export function u48(b: Uint8Array, at: number): number {
  return u32(b, at) + u16(b, at + 4) * 0x1_0000_0000;
}

/** A u64 as a number; values past 2^53 come out as Infinity so that every bound check fails. */
export function u64(b: Uint8Array, at: number): number {
  const hi = u32(b, at + 4);
  if (hi >= 0x20_0000) return Infinity;
  return u32(b, at) + hi * 0x1_0000_0000;
}

export function u64n(b: Uint8Array, at: number): bigint {
  return BigInt(u32(b, at)) | (BigInt(u32(b, at + 4)) << 32n);
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function concatBytes(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
