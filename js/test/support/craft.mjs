/** Archives made byte by byte for the io tests (docs/format.md, "Header" and "Trailer"). */
import { readFileSync } from "node:fs";
import { crc32 } from "../../dist/util/crc32.js";

export const MAGIC = Uint8Array.of(0x89, 0x4d, 0x4c, 0x43, 0x0d, 0x0a, 0x1a, 0x0a);
export const END_MAGIC = Uint8Array.of(0x89, 0x4d, 0x4c, 0x43, 0x2d, 0x54, 0x4f, 0x43);

export const golden = (name) => new Uint8Array(readFileSync(new URL(`../../../tests/golden/${name}`, import.meta.url)));

function putU64(view, at, value) {
  view.setBigUint64(at, BigInt(value), true);
}

/** The trailer CRC over `header` (its `end` read as zero) and trailer bytes 0..51. */
export function trailerCrc(header, trailer) {
  const h = header.slice(0, 16);
  h.fill(0, 10, 16);
  return crc32(trailer.subarray(0, 52), crc32(h));
}

/**
 * An archive laid out as `fields` say; every field defaults to a valid 1.3 archive of
 * `data` (msgpack) and `toc`. `crc: false` keeps the CRC field as given in `storedCrc`.
 */
export function makeArchive(fields = {}) {
  const f = {
    major: 1,
    minor: 3,
    end: 0,
    data: Uint8Array.of(0x80), // {}
    toc: new Uint8Array(0),
    free: 0,
    slack: 0,
    ...fields,
  };
  const dataOff = f.dataOff ?? 16;
  const dataLen = f.dataLen ?? f.data.length;
  const tocOff = f.tocOff ?? 16 + f.data.length + f.free;
  const tocLen = f.tocLen ?? f.toc.length;
  const size = 16 + f.data.length + f.free + f.toc.length + 64;
  const out = new Uint8Array(size + f.slack);
  const view = new DataView(out.buffer);
  out.set(f.magic ?? MAGIC, 0);
  out[8] = f.major;
  out[9] = f.minor;
  view.setUint32(10, f.end % 2 ** 32, true);
  view.setUint16(14, Math.floor(f.end / 2 ** 32), true);
  out.set(f.data, 16);
  out.set(f.toc, 16 + f.data.length + f.free);
  const t = size - 64;
  putU64(view, t, dataOff);
  putU64(view, t + 8, dataLen);
  putU64(view, t + 16, tocOff);
  putU64(view, t + 24, tocLen);
  putU64(view, t + 32, f.rootPos ?? 0);
  view.setUint32(t + 40, f.rootLen ?? 0, true);
  view.setUint32(t + 44, f.dataCrc ?? crc32(f.data), true);
  view.setUint32(t + 48, f.threshold ?? 0, true);
  out.set(f.endMagic ?? END_MAGIC, t + 56);
  view.setUint32(t + 52, f.storedCrc ?? trailerCrc(out.subarray(0, 16), out.subarray(t, t + 64)), true);
  return out;
}

/** The parts of a plain archive (its `end` honoured): header, data, TOC, trailer fields. */
export function split(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = view.getUint32(10, true) + view.getUint16(14, true) * 2 ** 32 || bytes.length;
  const t = end - 64;
  const num = (at) => Number(view.getBigUint64(t + at, true));
  const dataLen = num(8);
  const tocOff = num(16);
  const tocLen = num(24);
  return {
    header: bytes.slice(0, 16),
    data: bytes.slice(16, 16 + dataLen),
    toc: bytes.slice(tocOff, tocOff + tocLen),
    trailer: bytes.slice(t, end),
    tocOff,
    end,
  };
}

/**
 * The same 1.2+ archive with `free` more bytes of free space between its data and its TOC
 * (as `append` leaves): every node reference is relative, so it reads the same, and it is as
 * large as a test needs. The header's `end` is cleared (slack dropped).
 */
export function withFreeSpace(bytes, free) {
  const { header, data, toc, trailer, tocOff } = split(bytes);
  if (header[8] !== 1 || header[9] < 2) throw new Error("free space needs format 1.2 or later");
  const h = header.slice();
  h.fill(0, 10, 16);
  const gap = tocOff - 16 - data.length + free;
  const out = new Uint8Array(16 + data.length + gap + toc.length + 64);
  out.set(h, 0);
  out.set(data, 16);
  const at = 16 + data.length + gap;
  out.set(toc, at);
  const t = trailer.slice();
  const view = new DataView(t.buffer);
  view.setBigUint64(16, BigInt(at), true);
  view.setUint32(52, trailerCrc(h, t), true);
  out.set(t, out.length - 64);
  return out;
}

/** msgpack of TOC node fields in their smallest forms, as msgspec writes nodes: ints, short
 * strs, arrays, Maps (int keys), plain objects, and a `Float64Array` of one element as a
 * float64. */
export function encodeNode(x) {
  const out = [];
  const push = (code, v, n) => {
    out.push(code);
    for (let i = n - 1; i >= 0; i--) out.push(Math.floor(v / 2 ** (8 * i)) & 0xff);
  };
  const head = (n, fix, m16, m32) => {
    if (n < 16) out.push(fix | n);
    else if (n < 65536) push(m16, n, 2);
    else push(m32, n, 4);
  };
  const walk = (v) => {
    if (typeof v === "number") {
      if (v >= 0 && v < 128) out.push(v);
      else if (v >= 0 && v < 256) push(0xcc, v, 1);
      else if (v >= 0 && v < 65536) push(0xcd, v, 2);
      else if (v >= 0) push(0xce, v, 4);
      else if (v >= -32) out.push(v & 0xff);
      else push(0xd2, v >>> 0, 4);
    } else if (v instanceof Float64Array) {
      const f = new DataView(new ArrayBuffer(8));
      f.setFloat64(0, v[0]);
      out.push(0xcb, ...new Uint8Array(f.buffer));
    } else if (typeof v === "string") {
      const e = new TextEncoder().encode(v);
      out.push(0xa0 | e.length, ...e); // (short strs only)
    } else if (Array.isArray(v)) {
      head(v.length, 0x90, 0xdc, 0xdd);
      v.forEach(walk);
    } else {
      const entries = v instanceof Map ? [...v] : Object.entries(v);
      head(entries.length, 0x80, 0xde, 0xdf);
      for (const [k, val] of entries) {
        walk(k);
        walk(val);
      }
    }
  };
  walk(x);
  return Uint8Array.from(out);
}

/** `payload` followed by its CRC-32, little-endian: a TOC node or page as stored. */
export function framed(payload) {
  const out = new Uint8Array(payload.length + 4);
  out.set(payload);
  new DataView(out.buffer).setUint32(payload.length, crc32(payload), true);
  return out;
}

