/**
 * msgpack items checked without decoding them into objects (what `verify()` does to every
 * value): exactly `count` items (map entries: key and value) fill a buffer, and each decodes
 * as Python's reader decodes it: str as UTF-8, map keys hashable (scalars, arrays of them:
 * Python's tuples; never a map or a NumPy array), timestamps (extension -1) within Python's
 * datetime range, NumPy arrays (extension 78) with a valid header (and str elements within
 * U+10FFFF), no other extension type (UnsupportedVersionError). Iterative: any nesting depth.
 */
import { CorruptedError, UnsupportedVersionError, MsglcError } from "../errors.js";
import { parsePayloadHeader, ARRAY_EXT } from "../read/array.js";
import { badText } from "./dtype.js";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Arrays a map key may nest (as Python's walker refuses deeper ones). */
const MAX_KEY_DEPTH = 1000;

/** Python's datetime range (years 1 to 9999) in seconds since the epoch. */
const MIN_SECONDS = -62135596800;
const MAX_SECONDS = 253402300799;

/** The container header at `b[at]`: [is map, items, header bytes], or null for a scalar. */
export function containerHeader(b: Uint8Array, at: number, end: number): [boolean, number, number] | null {
  if (at >= end) return null;
  const m = b[at];
  if (m >= 0x80 && m <= 0x8f) return [true, m & 0x0f, 1];
  if (m >= 0x90 && m <= 0x9f) return [false, m & 0x0f, 1];
  if (m === 0xdc || m === 0xde) {
    if (at + 3 > end) return null;
    return [m === 0xde, (b[at + 1] << 8) | b[at + 2], 3];
  }
  if (m === 0xdd || m === 0xdf) {
    if (at + 5 > end) return null;
    return [m === 0xdf, ((b[at + 1] << 24) | (b[at + 2] << 16) | (b[at + 3] << 8) | b[at + 4]) >>> 0, 5];
  }
  return null;
}

/** Can the value starting at `b[at]` have a node of its own: an array, a map, or a NumPy
 * array value in an ext 8/16/32? */
export function getsNode(b: Uint8Array, at: number, end: number): boolean {
  const m = b[at];
  if ((m >= 0x80 && m <= 0x9f) || (m >= 0xdc && m <= 0xdf)) return true;
  const width = m === 0xc7 ? 1 : m === 0xc8 ? 2 : m === 0xc9 ? 4 : 0;
  return width > 0 && at + 1 + width < end && b[at + 1 + width] === ARRAY_EXT;
}

interface Frame {
  left: number;
  isMap: boolean;
  /** Inside a map key (arrays only), and how deep. */
  keyDepth: number;
}

/**
 * Check that `b[start..end)` holds exactly `count` items (`isMap`: `count` entries, 2 items
 * each), each decoding as the reader decodes it. `where` is the data offset of `b[0]` (for
 * messages). With `ends`, the end (index in `b`) of every top-level item is pushed to it.
 */
export function checkItems(
  b: Uint8Array,
  start: number,
  end: number,
  count: number,
  isMap: boolean,
  where: number,
  ends?: number[],
): void {
  const bad = (why: string, at: number): CorruptedError =>
    new CorruptedError(`${why} at data offset ${where + at}`);
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const stack: Frame[] = [{ left: isMap ? 2 * count : count, isMap, keyDepth: 0 }];
  let p = start;
  const need = (n: number, at: number): number => {
    if (n > end - p) throw bad(`msgpack item cut short (${n} bytes needed, ${end - p} left in its span)`, at);
    const q = p;
    p += n;
    return q;
  };
  for (;;) {
    let top = stack[stack.length - 1];
    while (top.left === 0) {
      stack.pop();
      if (stack.length === 1 && ends) ends.push(p);
      if (stack.length === 0) break;
      top = stack[stack.length - 1];
    }
    if (stack.length === 0) break;
    const asKey = top.isMap && top.left % 2 === 0;
    const keyDepth = asKey ? 1 : top.keyDepth;
    top.left--;
    const at = p;
    if (at >= end) throw bad("msgpack items end before their span does", at);
    const m = b[need(1, at)];
    let len = -1; // bytes of a str/bin/ext payload
    let kind = 0; // 1 str, 2 bin, 3 ext
    let extType = 0;
    if (m <= 0x7f || m >= 0xe0 || m === 0xc0 || m === 0xc2 || m === 0xc3) {
      // fixint, nil, bool
    } else if (m <= 0x8f || (m >= 0x90 && m <= 0x9f) || (m >= 0xdc && m <= 0xdf)) {
      const h = containerHeader(b, at, end);
      if (h === null) throw bad("msgpack container header cut short", at);
      p = at + h[2];
      const [mapped, n] = h;
      if (mapped && keyDepth) throw bad("a map key that is a map (unhashable)", at);
      if (!mapped && keyDepth > MAX_KEY_DEPTH) throw bad(`a map key nested deeper than ${MAX_KEY_DEPTH} levels`, at);
      const items = mapped ? 2 * n : n;
      if (items > end - p) throw bad(`a container of ${n} items does not fit its span`, at);
      stack.push({ left: items, isMap: mapped, keyDepth: keyDepth ? keyDepth + 1 : 0 });
      continue;
    } else if (m >= 0xa0 && m <= 0xbf) {
      len = m & 0x1f;
      kind = 1;
    } else {
      switch (m) {
        case 0xc4:
        case 0xc5:
        case 0xc6: {
          const w = 1 << (m - 0xc4);
          const q = need(w, at);
          len = w === 1 ? b[q] : w === 2 ? view.getUint16(q) : view.getUint32(q);
          kind = 2;
          break;
        }
        case 0xc7:
        case 0xc8:
        case 0xc9: {
          const w = 1 << (m - 0xc7);
          const q = need(w + 1, at);
          len = w === 1 ? b[q] : w === 2 ? view.getUint16(q) : view.getUint32(q);
          extType = view.getInt8(q + w);
          kind = 3;
          break;
        }
        case 0xca:
          need(4, at);
          break;
        case 0xcb:
          need(8, at);
          break;
        case 0xcc:
        case 0xd0:
          need(1, at);
          break;
        case 0xcd:
        case 0xd1:
          need(2, at);
          break;
        case 0xce:
        case 0xd2:
          need(4, at);
          break;
        case 0xcf:
        case 0xd3:
          need(8, at);
          break;
        case 0xd4:
        case 0xd5:
        case 0xd6:
        case 0xd7:
        case 0xd8:
          extType = view.getInt8(need(1, at));
          len = 1 << (m - 0xd4);
          kind = 3;
          break;
        case 0xd9:
        case 0xda:
        case 0xdb: {
          const w = 1 << (m - 0xd9);
          const q = need(w, at);
          len = w === 1 ? b[q] : w === 2 ? view.getUint16(q) : view.getUint32(q);
          kind = 1;
          break;
        }
        default:
          throw bad(`byte 0x${m.toString(16)} is not msgpack`, at);
      }
    }
    if (kind) {
      const q = need(len, at);
      const payload = b.subarray(q, q + len);
      if (kind === 1) {
        try {
          utf8.decode(payload);
        } catch {
          throw bad("a str that is not UTF-8", at);
        }
      } else if (kind === 3) {
        checkExt(extType, payload, keyDepth > 0, where + at);
      }
    }
    if (stack.length === 1 && ends) ends.push(p);
  }
  if (p !== end) throw bad(`${end - p} bytes follow the items of a span`, p);
}

function checkExt(type: number, payload: Uint8Array, asKey: boolean, at: number): void {
  if (type === ARRAY_EXT) {
    if (asKey) throw new CorruptedError(`a map key that is a NumPy array (unhashable) at data offset ${at}`);
    try {
      const h = parsePayloadHeader(payload, payload.length, at);
      if (h.dt.text.length && badText(h.dt, payload.subarray(h.headerLength), h.size) >= 0) {
        throw new CorruptedError(`NumPy array at offset ${at}: holds str elements with code points past U+10FFFF`);
      }
    } catch (e) {
      if (e instanceof MsglcError) throw e;
      throw new CorruptedError(`NumPy array at offset ${at}: ${(e as Error).message}`);
    }
    return;
  }
  if (type === -1) {
    const v = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
    let sec: number;
    let nsec = 0;
    if (payload.length === 4) sec = v.getUint32(0);
    else if (payload.length === 8) {
      const hi = v.getUint32(0);
      nsec = hi >>> 2;
      sec = (hi & 3) * 2 ** 32 + v.getUint32(4);
    } else if (payload.length === 12) {
      nsec = v.getUint32(0);
      sec = Number(v.getBigInt64(4));
    } else {
      throw new CorruptedError(`a timestamp of ${payload.length} bytes at data offset ${at}`);
    }
    if (nsec > 999_999_999 || sec < MIN_SECONDS || sec > MAX_SECONDS) {
      throw new CorruptedError(`a timestamp out of range at data offset ${at}`);
    }
    return;
  }
  throw new UnsupportedVersionError(`data holds an msgpack extension value of type ${type}, unknown to this reader, at data offset ${at}`);
}

/** A dict key as nodes list them: exactly one str or int filling `b[start..end)`. */
export function decodeKey(b: Uint8Array, start: number, end: number): string | number | bigint | undefined {
  if (start >= end) return undefined;
  const m = b[start];
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const n = end - start;
  let len = -1;
  let q = start + 1;
  if (m <= 0x7f) return n === 1 ? m : undefined;
  if (m >= 0xe0) return n === 1 ? m - 0x100 : undefined;
  if (m >= 0xa0 && m <= 0xbf) len = m & 0x1f;
  else if (m === 0xd9 && n >= 2) {
    len = b[start + 1];
    q = start + 2;
  } else if (m === 0xda && n >= 3) {
    len = view.getUint16(start + 1);
    q = start + 3;
  } else if (m === 0xdb && n >= 5) {
    len = view.getUint32(start + 1);
    q = start + 5;
  } else {
    const sizes: Record<number, number> = { 0xcc: 2, 0xcd: 3, 0xce: 5, 0xcf: 9, 0xd0: 2, 0xd1: 3, 0xd2: 5, 0xd3: 9 };
    if (sizes[m] !== n) return undefined;
    switch (m) {
      case 0xcc:
        return b[q];
      case 0xcd:
        return view.getUint16(q);
      case 0xce:
        return view.getUint32(q);
      case 0xcf: {
        const v = view.getBigUint64(q);
        return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
      }
      case 0xd0:
        return view.getInt8(q);
      case 0xd1:
        return view.getInt16(q);
      case 0xd2:
        return view.getInt32(q);
      default: {
        const v = view.getBigInt64(q);
        return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
      }
    }
  }
  if (q + len !== end) return undefined;
  try {
    return utf8.decode(b.subarray(q, end));
  } catch {
    return undefined;
  }
}
