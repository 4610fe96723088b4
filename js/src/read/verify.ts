/**
 * `reader.verify()`: the checks Python's `LazyReader.verify()` makes (msglc/read/verify.py,
 * docs/reliability.md), so that an archive it accepts reads without error.
 *
 * The data section is read once, in order, `CHUNK` bytes at a time, its CRC-32 computed as it
 * passes; the TOC nodes are walked in the same order (a node's check yields its children in
 * data order and resumes after each), every node parsed and CRC-checked by `parseNode` (a
 * paged list's pages by `parsePage`: its spans are checked as a list's), its span and
 * container header checked against the data, every span decoded as exactly the items the
 * node says (format/msgcheck.ts: UTF-8 strs, hashable keys, timestamps, NumPy headers), dict
 * keys compared with the node's, index regions rebuilt from the keys (types 3,
 * 6, 9 and 10 byte for byte, with type 10's index fields; type 7's block offsets and
 * checksums) and compared, NumPy array values' headers checked, fixed-stride lists proven
 * item by item. A failure in damaged data is reported as the data checksum's mismatch, as
 * Python does. A compressed archive's TOC is read whole at the end (every frame decompressed
 * and checked).
 *
 * Memory: two pieces of the data section, plus what one check looks at: a span, a run of
 * spans of at most `WINDOW` bytes, a window of rows of a fixed-stride list, 16 bytes a key of
 * a big dict being checked, a paged list's whole span table (as Python's). Unlike Python's
 * walker, a span holding one long value (a long str or bin, or a whole data section whose
 * root has no node) is held whole.
 */
import type { Body } from "../io/body.js";
import { CorruptedError, MsglcError } from "../errors.js";
import { crc32 } from "../util/crc32.js";
import {
  keyId,
  parseNode as realParseNode,
  parsePage,
  wholeList,
  type Node,
  type NodeRef,
  type IndexedMapNode,
  type MapNode,
  type ListNode,
  type PagedListNode,
  type StrideNode,
  type ArrayNode,
} from "../format/nodes.js";
import { checkItems, containerHeader, decodeKey, getsNode } from "../format/msgcheck.js";
import { MAX_HEADER, parseArrayValue } from "./array.js";
import { badText } from "../format/dtype.js";
import type { Key } from "./types.js";
import { build as buildDirect, hashOf, writerShape } from "../format/direct.js";

/** Bytes of the data section read at a time. */
export const CHUNK = 1 << 22;
/** Bytes one check decodes at a time (a run of spans, rows of a fixed-stride list). */
export const WINDOW = 1 << 20;
/** Dicts of at most this many entries are listed inline (types 2 and 8). */
const MAP_INLINE_MAX = 1024;

export interface VerifyOptions {
  /** The node parser (tests may give their own); `parseNode` of format/nodes.ts by default. */
  parseNode?: (bytes: Uint8Array, ref: NodeRef) => Node;
}

/** The data section could not be read: its error is reported as it is. */
class ReadFailed extends Error {
  constructor(readonly error: unknown) {
    super("read failed");
  }
}

class DataStream {
  private pieces: Array<{ at: number; bytes: Uint8Array }> = [];
  private hi = 0;
  crc = 0;
  private last = 0;

  constructor(private readonly body: Body) {}

  get size(): number {
    return this.body.dataLength;
  }

  private async more(): Promise<void> {
    const size = Math.min(CHUNK, this.size - this.hi);
    let piece: Uint8Array;
    try {
      piece = await this.body.readData(this.hi, size);
    } catch (e) {
      throw new ReadFailed(e);
    }
    this.crc = crc32(piece, this.crc);
    this.pieces.push({ at: this.hi, bytes: piece });
    this.hi += size;
  }

  private drop(a: number): void {
    const p = this.pieces;
    let k = 0;
    while (k < p.length && p[k].at + p[k].bytes.length <= a) k++;
    if (k) p.splice(0, k);
  }

  /** Bytes [a, b) of the data section; offsets never go back. */
  async take(a: number, b: number): Promise<Uint8Array> {
    if (a < this.last) throw new CorruptedError(`verify: data offset ${a} comes after ${this.last} (nodes out of order)`);
    if (b > this.size) throw new CorruptedError(`data offset ${b} is past the data section (${this.size} bytes)`);
    this.last = a;
    if (b <= a) return new Uint8Array(0);
    this.drop(a);
    while (this.hi < b) {
      await this.more();
      this.drop(a);
    }
    const first = this.pieces[0];
    if (b <= first.at + first.bytes.length) return first.bytes.subarray(a - first.at, b - first.at);
    const out = new Uint8Array(b - a);
    for (const { at, bytes } of this.pieces) {
      if (at >= b) break;
      const from = Math.max(0, a - at);
      const to = Math.min(bytes.length, b - at);
      out.set(bytes.subarray(from, to), at + from - a);
    }
    return out;
  }

  async skip(a: number, b: number): Promise<void> {
    this.last = Math.max(this.last, a);
    while (this.hi < b) {
      this.pieces = [];
      await this.more();
    }
    this.drop(b);
  }

  async finish(): Promise<number> {
    await this.skip(this.hi, this.size);
    return this.crc;
  }
}

interface Child {
  start: number;
  end: number;
  ref: NodeRef;
}

interface Ctx {
  body: Body;
  stream: DataStream;
  parseNode: (bytes: Uint8Array, ref: NodeRef) => Node;
}

export async function verifyArchive(body: Body, options: VerifyOptions = {}): Promise<void> {
  const stream = new DataStream(body);
  const ctx: Ctx = { body, stream, parseNode: options.parseNode ?? realParseNode };
  const mismatch = (): CorruptedError =>
    new CorruptedError(`data section checksum mismatch (${body.dataLength} bytes): CRC-32 ${stream.crc.toString(16)}, the trailer says ${body.dataCrc.toString(16)}`);
  try {
    try {
      if (!body.root.len) {
        const buf = await stream.take(0, body.dataLength);
        checkItems(buf, 0, buf.length, 1, false, 0);
      } else {
        await walk(ctx, { start: 0, end: body.dataLength, ref: { pos: body.root.pos, len: body.root.len } });
      }
    } catch (e) {
      if (e instanceof MsglcError) {
        await stream.finish(); // damaged data is reported as such, whatever check failed first
        if (stream.crc !== body.dataCrc) throw mismatch();
      }
      throw e;
    }
    if ((await stream.finish()) !== body.dataCrc) throw mismatch();
  } catch (e) {
    if (e instanceof ReadFailed) throw e.error;
    throw e;
  }
  if (body.compression !== null) {
    for (let at = 0; at < body.tocLength; at += CHUNK) await body.readToc(at, Math.min(CHUNK, body.tocLength - at));
  }
}

async function walk(ctx: Ctx, root: Child): Promise<void> {
  const stack: Array<AsyncGenerator<Child, void, void>> = [checks(ctx, root)];
  while (stack.length) {
    const r = await stack[stack.length - 1].next();
    if (r.done) stack.pop();
    else stack.push(checks(ctx, r.value));
  }
}

function nodeSpan(node: Node): number {
  switch (node.type) {
    case 4:
      return node.dims[0][0] + node.dims[0][1] * node.dims[0][2];
    case 5:
      return node.head + node.size;
    case 2:
    case 8:
      return node.koffs[node.koffs.length - 1];
    default:
      return node.offs[node.offs.length - 1];
  }
}

async function* checks(ctx: Ctx, { start, end, ref }: Child): AsyncGenerator<Child, void, void> {
  const { body, stream } = ctx;
  if (!(ref.pos >= 0 && ref.len > 0 && ref.pos + ref.len <= body.tocLength)) {
    throw new CorruptedError(`a TOC node at ${ref.pos} of ${ref.len} bytes lies outside the TOC (${body.tocLength} bytes)`);
  }
  const node = ctx.parseNode(await body.readToc(ref.pos, ref.len), ref);
  const label = `TOC node at offset ${ref.pos}`;
  const span = nodeSpan(node);
  if (span !== end - start) {
    throw new CorruptedError(`${label} describes ${span} bytes where ${end - start} are stored at data offset ${start}`);
  }
  if (node.type === 5) return await checkArray(ctx, node, start, end, label);
  if (node.type === 4) return await checkStride(ctx, node, start, end, label);
  const head = await stream.take(start, Math.min(end, start + 5));
  const h = containerHeader(head, 0, head.length);
  const want: [boolean, number, number] =
    node.type === 1 || node.type === 11
      ? [false, node.n, node.offs[0]]
      : isMapNode(node)
        ? [true, node.keys.length, node.koffs[0]]
        : [true, node.n, node.offs[0]];
  if (h === null || h[0] !== want[0] || h[1] !== want[1] || h[2] !== want[2]) {
    throw new CorruptedError(`${label} does not describe the container at data offset ${start}`);
  }
  if (node.type === 1) yield* checkList(ctx, node, start, ref, label);
  else if (node.type === 11) yield* checkList(ctx, await pagedSpans(ctx, ref, node), start, ref, label);
  else if (isMapNode(node)) yield* checkMap(ctx, node, start, ref, label);
  else yield* checkIndexed(ctx, node, start, end, ref, label);
}

/** A paged list's whole span table: every page read and checked as a reader does. */
async function pagedSpans(ctx: Ctx, ref: NodeRef, node: PagedListNode): Promise<ListNode> {
  const pages: ListNode[] = [];
  for (let p = 0; p < node.pages.length; p++) {
    const at = node.pages[p];
    pages.push(parsePage(await ctx.body.readToc(at.pos, at.len), at, node, p, ref.pos));
  }
  return wholeList(node, pages);
}

function isMapNode(node: Node): node is MapNode {
  return node.type === 2 || node.type === 8;
}

/** A child node's reference: inside the TOC, before its parent. */
function kidRef(kid: NodeRef, parent: NodeRef, label: string): NodeRef {
  if (!(kid.pos >= 0 && kid.len > 0 && kid.pos + kid.len <= parent.pos)) {
    throw new CorruptedError(`${label} refers to a node at ${kid.pos} of ${kid.len} bytes, not before it`);
  }
  return kid;
}

async function kid(ctx: Ctx, a: number, b: number, ref: NodeRef, parent: NodeRef, label: string): Promise<Child> {
  const head = await ctx.stream.take(a, Math.min(b, a + 6));
  if (!head.length || !getsNode(head, 0, head.length)) {
    throw new CorruptedError(`${label} gives a node to the value at data offset ${a}, which cannot have one`);
  }
  return { start: a, end: b, ref: kidRef(ref, parent, label) };
}

async function items(ctx: Ctx, a: number, b: number, count: number, isMap: boolean, label: string, ends?: number[]): Promise<Uint8Array> {
  const buf = await ctx.stream.take(a, b);
  try {
    checkItems(buf, 0, buf.length, count, isMap, a, ends);
  } catch (e) {
    if (e instanceof CorruptedError) throw new CorruptedError(`${label}: a span does not hold what the node says (${e.message})`);
    throw e;
  }
  return buf;
}

async function* checkList(ctx: Ctx, node: ListNode, start: number, ref: NodeRef, label: string): AsyncGenerator<Child, void, void> {
  const { starts, offs, kids } = node;
  const spans = starts.length;
  let k = 0;
  while (k < spans) {
    const count = (k + 1 < spans ? starts[k + 1] : node.n) - starts[k];
    const r = kids.get(k);
    if (r !== undefined) {
      if (count !== 1) throw new CorruptedError(`${label}: span ${k} has a node of its own but ${count} items`);
      yield await kid(ctx, start + offs[k], start + offs[k + 1], r, ref, label);
      k++;
      continue;
    }
    let stop = k + 1; // a run of spans without kids, in one window
    while (stop < spans && !kids.has(stop) && offs[stop + 1] - offs[k] <= WINDOW) stop++;
    const n = (stop < spans ? starts[stop] : node.n) - starts[k];
    const ends: number[] = [];
    await items(ctx, start + offs[k], start + offs[stop], n, false, label, ends);
    for (let s = k + 1; s < stop; s++) {
      if (ends[starts[s] - starts[k] - 1] !== offs[s] - offs[k]) {
        throw new CorruptedError(`${label}: span ${s} does not start at an item boundary of the list at data offset ${start}`);
      }
    }
    k = stop;
  }
}

function sameKey(a: Key | undefined, b: Key): boolean {
  return a !== undefined && keyId(a) === keyId(b);
}

async function* checkMap(ctx: Ctx, node: MapNode, start: number, ref: NodeRef, label: string): AsyncGenerator<Child, void, void> {
  const { keys, koffs, voffs, kids } = node;
  const n = keys.length;
  if (n > MAP_INLINE_MAX) throw new CorruptedError(`${label} lists ${n} keys, more than an inline dict holds`);
  const bad = (): CorruptedError => new CorruptedError(`${label} does not describe the dict at data offset ${start}`);
  let j = 0;
  while (j < n) {
    const r = kids.get(j);
    if (r !== undefined) {
      const kb = await ctx.stream.take(start + koffs[j], start + voffs[j]);
      if (!sameKey(decodeKey(kb, 0, kb.length), keys[j])) throw bad();
      yield await kid(ctx, start + voffs[j], start + koffs[j + 1], r, ref, label);
      j++;
      continue;
    }
    let stop = j + 1;
    while (stop < n && !kids.has(stop) && koffs[stop + 1] - koffs[j] <= WINDOW) stop++;
    const ends: number[] = [];
    const lo = koffs[j];
    const buf = await items(ctx, start + lo, start + koffs[stop], stop - j, true, label, ends);
    let at = 0;
    for (let e = j; e < stop; e++) {
      const kEnd = ends[2 * (e - j)];
      const vEnd = ends[2 * (e - j) + 1];
      if (koffs[e] - lo !== at || voffs[e] - lo !== kEnd || koffs[e + 1] - lo !== vEnd) throw bad();
      if (!sameKey(decodeKey(buf, at, kEnd), keys[e])) throw bad();
      at = vEnd;
    }
    j = stop;
  }
}

async function checkArray(ctx: Ctx, node: ArrayNode, start: number, end: number, label: string): Promise<void> {
  const { stream } = ctx;
  if (node.head > MAX_HEADER + 10) {
    throw new CorruptedError(`${label} puts the elements of a NumPy array ${node.head} bytes in (its header takes at most ${MAX_HEADER + 10})`);
  }
  const head = await stream.take(start, start + node.head);
  const { header, start: at } = parseArrayValue(head, end - start, start);
  if (at !== node.head || node.size !== end - start - at) {
    throw new CorruptedError(`${label} does not describe the NumPy array at data offset ${start}`);
  }
  if (!header.dt.text.length) return stream.skip(start + at, end);
  const per = Math.max(1, Math.floor(WINDOW / header.itemsize));
  for (let i = 0; i < header.size; i += per) {
    const count = Math.min(per, header.size - i);
    const a = start + at + i * header.itemsize;
    const buf = await stream.take(a, a + count * header.itemsize);
    if (badText(header.dt, buf, count) >= 0) {
      throw new CorruptedError(`NumPy array at offset ${start}: holds str elements with code points past U+10FFFF`);
    }
  }
}

/** The encoded size of the scalar at `b[at]` from its marker, or -1 (a container, or cut). */
function scalarSize(b: Uint8Array, at: number, end: number): number {
  if (at >= end) return -1;
  const m = b[at];
  if (m <= 0x7f || m >= 0xe0 || m === 0xc0 || m === 0xc2 || m === 0xc3) return 1;
  if (m >= 0xa0 && m <= 0xbf) return 1 + (m & 0x1f);
  const fixed: Record<number, number> = { 0xca: 5, 0xcb: 9, 0xcc: 2, 0xcd: 3, 0xce: 5, 0xcf: 9, 0xd0: 2, 0xd1: 3, 0xd2: 5, 0xd3: 9, 0xd4: 3, 0xd5: 4, 0xd6: 6, 0xd7: 10, 0xd8: 18 };
  if (fixed[m] !== undefined) return fixed[m];
  const width = m === 0xd9 || m === 0xc4 ? 1 : m === 0xda || m === 0xc5 ? 2 : m === 0xdb || m === 0xc6 ? 4 : m === 0xc7 ? 1 : m === 0xc8 ? 2 : m === 0xc9 ? 4 : 0;
  if (!width || at + 1 + width > end) return -1;
  let n = 0;
  for (let i = 1; i <= width; i++) n = n * 256 + b[at + i];
  return 1 + width + n + (m >= 0xc7 && m <= 0xc9 ? 1 : 0);
}

async function checkStride(ctx: Ctx, node: StrideNode, start: number, end: number, label: string): Promise<void> {
  const bad = (): CorruptedError => new CorruptedError(`${label} does not describe the fixed-stride list at data offset ${start}`);
  const { dims } = node;
  const [h0, n0, s0] = dims[0];
  const head = await ctx.stream.take(start, Math.min(end, start + 5));
  const h = containerHeader(head, 0, head.length);
  if (h === null || h[0] || h[1] !== n0 || h[2] !== h0 || n0 === 0) throw bad();
  for (let d = 0; d + 1 < dims.length; d++) if (dims[d][2] !== dims[d + 1][0] + dims[d + 1][1] * dims[d + 1][2]) throw bad();
  const rows = Math.max(1, Math.floor(WINDOW / s0));
  const last = dims[dims.length - 1][2];
  let template: Uint8Array | null = null;
  for (let r = 0; r < n0; r += rows) {
    const count = Math.min(rows, n0 - r);
    const a = start + h0 + r * s0;
    const ends: number[] = [];
    const buf = await items(ctx, a, a + count * s0, count, false, label, ends);
    for (let i = 0; i < count; i++) if (ends[i] !== (i + 1) * s0) throw bad();
    // every level's headers where the dims put them, every leaf `last` bytes
    let level: number[] = [];
    for (let i = 0; i < count; i++) level.push(i * s0);
    for (let d = 1; d < dims.length; d++) {
      const [hd, nd, sd] = dims[d];
      const next: number[] = [];
      for (const p of level) {
        const ch = containerHeader(buf, p, buf.length);
        if (ch === null || ch[0] || ch[1] !== nd || ch[2] !== hd) throw bad();
        for (let i = 0; i < nd; i++) next.push(p + hd + i * sd);
      }
      level = next;
    }
    if (template === null) template = leafTemplate(buf, level[0], last);
    if (template === null) throw bad();
    const t = template;
    if (t.length === 0) {
      for (const p of level) if (!oneByte(buf[p])) throw bad();
    } else {
      for (const p of level) for (let q = 0; q < t.length; q++) if (buf[p + q] !== t[q]) throw bad();
    }
  }
}

function oneByte(m: number): boolean {
  return m < 0x80 || m >= 0xe0 || m === 0xc0 || m === 0xc2 || m === 0xc3;
}

/** What every leaf of a fixed-stride list must start with, from its first leaf (Python's
 * `stride_template`): nothing for one-byte items (each must be one), the marker of a
 * fixed-width number, the header of a str or bin (its length included), or an empty array's
 * header; null when the first leaf is none of these `size`-byte items. */
function leafTemplate(b: Uint8Array, p: number, size: number): Uint8Array | null {
  const m = b[p];
  if (size === 1) return oneByte(m) ? new Uint8Array(0) : null;
  const fixed: Record<number, number> = { 0xca: 5, 0xcb: 9, 0xcc: 2, 0xcd: 3, 0xce: 5, 0xcf: 9, 0xd0: 2, 0xd1: 3, 0xd2: 5, 0xd3: 9 };
  if (fixed[m] === size) return b.slice(p, p + 1);
  const hl = m >= 0xa0 && m <= 0xbf ? 1 : m === 0xd9 || m === 0xc4 ? 2 : m === 0xda || m === 0xc5 ? 3 : m === 0xdb || m === 0xc6 ? 5 : 0;
  if (hl) return scalarSize(b, p, b.length) === size ? b.slice(p, p + hl) : null;
  const h = containerHeader(b, p, b.length);
  if (h !== null && !h[0] && h[1] === 0 && h[2] === size) return b.slice(p, p + size);
  return null;
}

// -- big dicts (types 3, 6, 7, 9, 10)

/** Is `raw` (one str or int, decoding to `key`) msgpack's smallest form of it, as a lookup
 * encodes it? (The same answer as comparing with `encodeKey(key)`, without encoding.) */
function isSmallest(raw: Uint8Array, key: Key): boolean {
  const m = raw[0];
  if (typeof key === "string") {
    const n = raw.length; // header + UTF-8 bytes
    return m <= 0xbf || (m === 0xd9 ? n - 2 >= 32 : m === 0xda ? n - 3 >= 256 : n - 5 >= 65536);
  }
  if (m <= 0x7f || m >= 0xe0) return true;
  const v = typeof key === "bigint" ? key : BigInt(key);
  switch (m) {
    case 0xcc:
      return v >= 128n;
    case 0xcd:
      return v >= 256n;
    case 0xce:
      return v >= 65536n;
    case 0xcf:
      return v >= 2n ** 32n;
    case 0xd0:
      return v < -32n;
    case 0xd1:
      return v < -128n;
    case 0xd2:
      return v < -32768n;
    default:
      return v < -(2n ** 31n);
  }
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const utf8 = new TextEncoder();

/** A str or int key as msgpack encodes it in its smallest form (what lookups hash). */
export function encodeKey(key: Key): Uint8Array {
  if (typeof key === "string") {
    const s = utf8.encode(key);
    const n = s.length;
    const head = n < 32 ? [0xa0 | n] : n < 256 ? [0xd9, n] : n < 65536 ? [0xda, n >> 8, n & 0xff] : [0xdb, n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
    const out = new Uint8Array(head.length + n);
    out.set(head);
    out.set(s, head.length);
    return out;
  }
  const v = BigInt(key);
  if (v >= 0n && v < 128n) return Uint8Array.of(Number(v));
  if (v < 0n && v >= -32n) return Uint8Array.of(Number(v) & 0xff);
  const put = (marker: number, width: number, signed: boolean): Uint8Array => {
    const out = new Uint8Array(1 + width);
    out[0] = marker;
    let x = signed && v < 0n ? v + (1n << BigInt(8 * width)) : v;
    for (let i = width; i >= 1; i--) {
      out[i] = Number(x & 0xffn);
      x >>= 8n;
    }
    return out;
  };
  if (v >= 0n) return v < 256n ? put(0xcc, 1, false) : v < 65536n ? put(0xcd, 2, false) : v < 2n ** 32n ? put(0xce, 4, false) : put(0xcf, 8, false);
  return v >= -128n ? put(0xd0, 1, true) : v >= -32768n ? put(0xd1, 2, true) : v >= -(2n ** 31n) ? put(0xd2, 4, true) : put(0xd3, 8, true);
}

/** `a < b` for two keys of one type: ints by value, strs by code point (UTF-16 order differs
 * past U+FFFF). */
function keyLess(a: Key, b: Key): boolean {
  if (typeof a !== "string" || typeof b !== "string") return a < b;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i) as number;
    const y = b.codePointAt(i) as number;
    if (x !== y) return x < y;
    if (x > 0xffff) i++;
  }
  return a.length < b.length;
}

class Entries {
  offs: number[] = [];
  crcs: number[] = [];
  /** CRC-32 of each key's bytes reversed (fuse- and direct-indexed dicts). */
  rcrcs: number[] = [];
  /** Sorted dicts: the first key of each block, and the first disorder found. */
  firsts: Key[] = [];
  disorder: string | null = null;
  private last: Key | undefined;

  constructor(
    private readonly blockBits: number | null,
    private readonly fuse = false,
  ) {}

  add(key: Key, raw: Uint8Array, off: number, label: string, where: number): void {
    if (!isSmallest(raw, key)) {
      throw new CorruptedError(`${label}: a key of the dict at data offset ${where} is not encoded as msgpack encodes it`);
    }
    const e = this.offs.length;
    this.offs.push(off);
    this.crcs.push(crc32(raw));
    if (this.fuse) this.rcrcs.push(crc32(raw.slice().reverse()));
    if (this.blockBits === null) return;
    const last = this.last;
    if (last !== undefined && this.disorder === null) {
      const sameType = typeof last === "string" ? typeof key === "string" : typeof key !== "string";
      if (!sameType || !keyLess(last, key)) this.disorder = `do not ascend at entry ${e}`;
    }
    if (e % 2 ** this.blockBits === 0) this.firsts.push(key);
    this.last = key;
  }
}

async function* checkIndexed(ctx: Ctx, node: IndexedMapNode, start: number, end: number, ref: NodeRef, label: string): AsyncGenerator<Child, void, void> {
  const { n, starts, offs, kids } = node;
  if (n <= MAP_INLINE_MAX) throw new CorruptedError(`${label} indexes a dict of ${n} entries, which writers list inline`);
  const bad = (): CorruptedError => new CorruptedError(`${label} does not describe the dict at data offset ${start}`);
  const notKey = (at: number): CorruptedError => new CorruptedError(`${label}: the key at data offset ${at} is not one str or int`);
  const entries = new Entries(node.type === 9 ? node.blockBits : null, node.type === 7 || node.type === 10);
  const kidKeys = new Map<string, number>();
  const spans = starts.length;
  let k = 0;
  while (k < spans) {
    const a = start + offs[k];
    const r = kids.get(k);
    if (r !== undefined) {
      const count = (k + 1 < spans ? starts[k + 1] : n) - starts[k];
      if (count !== 1) throw new CorruptedError(`${label}: span ${k} has a node of its own but ${count} entries`);
      const head = await ctx.stream.take(a, Math.min(start + offs[k + 1], a + 9));
      const size = scalarSize(head, 0, head.length);
      if (size < 1 || a + size > start + offs[k + 1]) throw notKey(a);
      const raw = (await ctx.stream.take(a, a + size)).slice();
      const key = decodeKey(raw, 0, raw.length);
      if (key === undefined) throw notKey(a);
      entries.add(key, raw, offs[k], label, start);
      kidKeys.set(keyId(key), k);
      yield await kid(ctx, a + size, start + offs[k + 1], r, ref, label);
      k++;
      continue;
    }
    let stop = k + 1;
    while (stop < spans && !kids.has(stop) && offs[stop + 1] - offs[k] <= WINDOW) stop++;
    const count = (stop < spans ? starts[stop] : n) - starts[k];
    const ends: number[] = [];
    const buf = await items(ctx, a, start + offs[stop], count, true, label, ends);
    const entryStart = (i: number): number => (i === 0 ? 0 : ends[2 * i - 1]);
    for (let s = k + 1; s < stop; s++) if (entryStart(starts[s] - starts[k]) !== offs[s] - offs[k]) throw bad();
    for (let i = 0; i < count; i++) {
      const ka = entryStart(i);
      const kb = ends[2 * i];
      const key = decodeKey(buf, ka, kb);
      if (key === undefined) throw notKey(a + ka);
      entries.add(key, buf.subarray(ka, kb), offs[k] + ka, label, start);
    }
    k = stop;
  }
  if (entries.offs.length !== n) throw bad();
  if (kidKeys.size !== node.kidKeys.size) throw bad();
  for (const [id, span] of kidKeys) if (node.kidKeys.get(id) !== span) throw bad();
  entries.offs.push(end - start);
  await checkRegion(ctx, node, start, ref, entries, label);
}

function bitLength(x: number): number {
  return x <= 0 ? 0 : x.toString(2).length;
}

function pageBitsFor(n: number): number {
  return Math.max(0, bitLength(Math.floor(n / 32)) - 1);
}

/** (seg_bits, seg_count) of a fuse over n keys, in float64 as msglc computes them. */
function fuseLayout(keys: number): [number, number] {
  const n = Math.max(keys, 2);
  const segBits = Math.min(18, Math.floor(Math.log(n) / Math.log(3.33) + 2.25));
  const length = 2 ** segBits;
  const factor = Math.max(1.125, 0.875 + (0.25 * Math.log(1e6)) / Math.log(n));
  const x = n * factor;
  let capacity = Math.round(x);
  if (capacity - x === 0.5 && capacity % 2 === 1) capacity -= 1; // Python rounds halves to even
  let count = Math.ceil(capacity / length) - 2;
  const slots = (count + 2) * length;
  count = Math.ceil(slots / length);
  count = count <= 2 ? 1 : count - 2;
  return [segBits, count];
}

function uints(values: number[], width: number): Uint8Array {
  const out = new Uint8Array(values.length * width);
  const v = new DataView(out.buffer);
  values.forEach((x, i) => {
    if (width === 4) v.setUint32(i * 4, x, true);
    else v.setBigUint64(i * 8, BigInt(x), true);
  });
  return out;
}

async function checkRegion(ctx: Ctx, node: IndexedMapNode, start: number, ref: NodeRef, entries: Entries, label: string): Promise<void> {
  const region = kidRef(node.region, ref, label);
  const stored = await ctx.body.readToc(region.pos, region.len);
  if (node.type === 10) return checkDirect(ctx, node, start, ref, entries, stored, label);
  const n = node.n;
  const offs = entries.offs;
  const width = offs[n] < 2 ** 32 ? 4 : 8;
  const bad = (what: string): CorruptedError => new CorruptedError(`${what} of the TOC node at offset ${ref.pos} does not match its dict (data offset ${start})`);
  if (node.offsWidth !== width) throw new CorruptedError(`${label}: its offsets are not ${width} bytes each as the dict's size calls for`);
  const bb = node.type === 3 ? 0 : node.blockBits;
  const blockOffs: number[] = [];
  for (let e = 0; e < n; e += 2 ** bb) blockOffs.push(offs[e]);
  blockOffs.push(offs[n]);
  const offsBytes = uints(blockOffs, width);
  if (crc32(offsBytes) !== node.offsCrc || !equal(stored.subarray(0, offsBytes.length), offsBytes)) throw bad("the offsets");
  if (node.type === 9) {
    if (entries.disorder !== null) throw new CorruptedError(`${label}: the keys of the sorted dict at data offset ${start} ${entries.disorder}`);
    const keys = entries.firsts.map(encodeKey);
    const m = keys.length;
    const head = m < 16 ? [0x90 | m] : m < 65536 ? [0xdc, m >> 8, m & 0xff] : [0xdd, m >>> 24, (m >> 16) & 0xff, (m >> 8) & 0xff, m & 0xff];
    let len = head.length;
    for (const kb of keys) len += kb.length;
    const want = new Uint8Array(len);
    want.set(head);
    let at = head.length;
    for (const kb of keys) {
      want.set(kb, at);
      at += kb.length;
    }
    if (node.keysLen !== len || region.len !== offsBytes.length + len) throw new CorruptedError(`${label} does not describe the dict at data offset ${start}`);
    if (!equal(stored.subarray(offsBytes.length), want) || crc32(want) !== node.keysCrc) throw bad("sorted index");
    return;
  }
  if (node.type === 7) {
    // its shape, the block offsets and every checksum; the slots are not rebuilt
    const blocks = Math.ceil(n / 2 ** bb);
    const [segBits, segCount] = fuseLayout(n);
    if (node.slotBits !== Math.max(1, bitLength(blocks - 1)) || node.segBits !== segBits || node.segCount !== segCount) {
      throw new CorruptedError(`${label}: its fuse is not shaped as the dict's keys call for`);
    }
    await noKeyTwice(ctx, start, offs, sortedRecords(entries.crcs));
    const L = 2 ** node.segBits;
    const ns = (node.segCount + 2) * L;
    const Z = Math.ceil((ns * node.slotBits) / 8);
    const C = Math.ceil(Z / 1024);
    if (region.len !== offsBytes.length + 4 * C + Z) throw new CorruptedError(`${label}: its index region is not the size its fields give`);
    const crcs = stored.subarray(offsBytes.length, offsBytes.length + 4 * C);
    if (crc32(crcs) !== node.crcsCrc) throw bad("fuse index checksums");
    const slots = stored.subarray(offsBytes.length + 4 * C);
    const cv = new DataView(crcs.buffer, crcs.byteOffset, crcs.byteLength);
    for (let c = 0; c < C; c++) {
      if (crc32(slots.subarray(c * 1024, Math.min(Z, (c + 1) * 1024))) !== cv.getUint32(4 * c, true)) throw bad("fuse index chunk");
    }
    // every key's three slots give its block (Python's check without its C accelerator)
    const mask = 2n ** 64n - 1n;
    const seedMix = (node.seed * 0x9e3779b97f4a7c15n) & mask;
    const Lb = BigInt(L);
    const span = BigInt(node.segCount) * Lb;
    const slot = (i: bigint): number => {
      const bit = Number(i) * node.slotBits;
      const at = Math.floor(bit / 8);
      let v = 0;
      for (let j = 4; j >= 0; j--) v = v * 256 + (at + j < slots.length ? slots[at + j] : 0);
      return Math.floor(v / 2 ** (bit % 8)) % 2 ** node.slotBits;
    };
    for (let e = 0; e < n; e++) {
      let x = ((BigInt(entries.crcs[e]) << 32n) | BigInt(entries.rcrcs[e])) ^ seedMix;
      x ^= x >> 33n;
      x = (x * 0xff51afd7ed558ccdn) & mask;
      x ^= x >> 33n;
      x = (x * 0xc4ceb9fe1a85ec53n) & mask;
      x ^= x >> 33n;
      const hi = (x * span) >> 64n;
      const s1 = (hi + Lb) ^ ((x >> 18n) & (Lb - 1n));
      const s2 = (hi + 2n * Lb) ^ (x & (Lb - 1n));
      if ((slot(hi) ^ slot(s1) ^ slot(s2)) !== Math.floor(e / 2 ** bb)) throw bad("fuse index");
    }
    return;
  }
  // types 3 and 6: the records and page table rebuilt from the keys' CRCs
  const pageBits = pageBitsFor(n);
  if (node.pageBits !== pageBits) throw new CorruptedError(`${label} does not describe the dict at data offset ${start}`);
  const recs = sortedRecords(entries.crcs);
  const pages = 2 ** pageBits;
  const firsts: number[] = [];
  let r = 0;
  for (let p = 0; p < pages; p++) {
    const lowest = BigInt(p) << BigInt(64 - pageBits);
    while (r < n && recs[r] < lowest) r++;
    firsts.push(pageBits === 0 ? 0 : r);
  }
  firsts.push(n);
  let recBytes: Uint8Array;
  let size: number;
  if (node.type === 3) {
    size = 8;
    recBytes = new Uint8Array(recs.buffer.slice(0));
    if (new Uint8Array(new Uint16Array([1]).buffer)[0] === 0) {
      const dv = new DataView(recBytes.buffer);
      for (let i = 0; i < n; i++) dv.setBigUint64(i * 8, recs[i], true);
    }
  } else {
    const blocks = Math.ceil(n / 2 ** bb);
    size = 1 + Math.max(1, Math.ceil(bitLength(blocks - 1) / 8));
    recBytes = new Uint8Array(size * n);
    for (let i = 0; i < n; i++) {
      const h = Number(recs[i] >> 32n);
      const e = Number(recs[i] & 0xffffffffn);
      recBytes[i * size] = (((h * 2 ** pageBits) % 2 ** 32) / 2 ** 24) >>> 0;
      let b = Math.floor(e / 2 ** bb);
      for (let k = 1; k < size; k++) {
        recBytes[i * size + k] = b & 0xff;
        b = Math.floor(b / 256);
      }
    }
  }
  const table = new Uint8Array(8 * (pages + 1));
  const tv = new DataView(table.buffer);
  for (let p = 0; p <= pages; p++) tv.setUint32(8 * p, firsts[p], true);
  for (let p = 0; p < pages; p++) tv.setUint32(8 * p + 4, crc32(recBytes.subarray(size * firsts[p], size * firsts[p + 1])), true);
  tv.setUint32(8 * pages + 4, crc32(table.subarray(0, 8 * pages + 4)), true);
  if (region.len !== offsBytes.length + table.length + recBytes.length) throw new CorruptedError(`${label} does not describe the dict at data offset ${start}`);
  if (!equal(stored.subarray(offsBytes.length, offsBytes.length + table.length), table) || !equal(stored.subarray(offsBytes.length + table.length), recBytes)) {
    throw bad("hash index");
  }
  await noKeyTwice(ctx, start, offs, recs);
}

/** Type 10: the node's index fields and its region as writers make them from the dict's
 * keys and entries (docs/format.md, "How writers build it"), byte for byte. */
async function checkDirect(ctx: Ctx, node: IndexedMapNode, start: number, ref: NodeRef, entries: Entries, stored: Uint8Array, label: string): Promise<void> {
  const offs = entries.offs;
  const n = node.n;
  const shape = writerShape(n, offs[n]);
  const { groupBits, width, offBits, chunk } = shape;
  if (node.pageBits !== groupBits || node.offsWidth !== width || node.offBits !== offBits || node.chunk !== chunk) {
    throw new CorruptedError(
      `${label}: its direct index is shaped (group_bits ${node.pageBits}, width ${node.offsWidth}, off_bits ${node.offBits}, chunk ${node.chunk}) ` +
        `where the dict's keys call for (${groupBits}, ${width}, ${offBits}, ${chunk})`,
    );
  }
  const hashes = { hi: new Uint32Array(n), lo: new Uint32Array(n) };
  for (let e = 0; e < n; e++) {
    const h = hashOf((BigInt(entries.crcs[e]) << 32n) | BigInt(entries.rcrcs[e]));
    hashes.hi[e] = h.hi;
    hashes.lo[e] = h.lo;
  }
  const kids = new Set<number>();
  for (const k of node.kids.keys()) kids.add(node.starts[k]);
  const built = buildDirect(hashes, offs, kids, shape);
  const bad = (what: string): CorruptedError => new CorruptedError(`${what} of the TOC node at offset ${ref.pos} does not match its dict (data offset ${start})`);
  if (!equal(node.groups, built.groups)) throw bad("the direct index's groups");
  if (node.lo !== built.lo || node.hi !== built.hi) throw bad(`the direct index's lo and hi (${node.lo}, ${node.hi}, not ${built.lo}, ${built.hi})`);
  if (node.entryRead !== built.entryRead) throw bad(`the direct index's entry_read (${node.entryRead}, not ${built.entryRead})`);
  if (!equal(stored, built.region)) throw bad("the direct index");
  await noKeyTwice(ctx, start, offs, sortedRecords(entries.crcs));
}

/** `crc << 32 | entry` of every key, sorted. */
function sortedRecords(crcs: number[]): BigUint64Array {
  const recs = new BigUint64Array(crcs.length);
  for (let e = 0; e < crcs.length; e++) recs[e] = (BigInt(crcs[e]) << 32n) | BigInt(e);
  return recs.sort();
}

/** No key twice: equal keys have equal CRCs; the keys of records with one CRC are compared. */
async function noKeyTwice(ctx: Ctx, start: number, offs: number[], recs: BigUint64Array): Promise<void> {
  for (let i = 1; i < recs.length; i++) {
    if (recs[i] >> 32n !== recs[i - 1] >> 32n) continue;
    const a = await storedKey(ctx, start, offs, Number(recs[i - 1] & 0xffffffffn));
    const b = await storedKey(ctx, start, offs, Number(recs[i] & 0xffffffffn));
    if (equal(a, b)) throw new CorruptedError(`the dict at data offset ${start} holds a key twice`);
  }
}

async function storedKey(ctx: Ctx, start: number, offs: number[], e: number): Promise<Uint8Array> {
  const at = start + offs[e];
  const head = await ctx.body.readData(at, Math.min(9, offs[e + 1] - offs[e]));
  const size = scalarSize(head, 0, head.length);
  return ctx.body.readData(at, size);
}
