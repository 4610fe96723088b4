/**
 * TOC nodes (docs/format.md, "The TOC section"): their shapes after parsing and checking.
 * A node is located by its position in the TOC and its framed length (payload + CRC-32); a
 * reference to a child is `(back, length)`, the child starting `back` bytes before the
 * referring node. Data offsets inside a node are relative to the container it describes.
 * A span page (type 12) is no container's node: it is parsed only as a page of the paged
 * list (type 11) that names it (`parsePage`), and refused anywhere else.
 */
import type { Key } from "../read/types.js";
import { CorruptedError, UnsupportedVersionError } from "../errors.js";
import { crc32 } from "../util/crc32.js";
import { u32 } from "../util/bytes.js";
import { decodeValue } from "../read/decode.js";
import { MAX_GROUP_BITS, regionSize } from "./direct.js";

export interface NodeRef {
  /** Where the node starts in the TOC. */
  pos: number;
  /** Its framed length (payload and CRC). */
  len: number;
}

/** Type 1: a list cut into spans; `kids` maps a span to the node of its one item. */
export interface ListNode {
  type: 1;
  n: number;
  starts: number[];
  offs: number[];
  kids: Map<number, NodeRef>;
}

/** Type 11: a list whose span table is kept in pages (type-12 nodes): page `p`, at
 * `pages[p]`, holds the spans of items `firsts[p]..` at bytes `offs[p]..offs[p + 1]`. It
 * describes the list of the type-1 node its pages make (`wholeList`). */
export interface PagedListNode {
  type: 11;
  n: number;
  firsts: number[];
  offs: number[];
  pages: NodeRef[];
}

/** Types 2 and 8 (8 expanded into 2's offsets): a dict with its keys inline. */
export interface MapNode {
  type: 2 | 8;
  keys: Key[];
  koffs: number[];
  voffs: number[];
  kids: Map<number, NodeRef>;
}

/** Types 3, 6, 7, 9, 10: a big dict, its entries in spans as a list's, with an index region.
 * Type 10 keeps type 3's fields in their places with other meanings (as Python's
 * `DirectMapNode`, a `HashMapNode`, does): `pageBits` is its `group_bits`, `offsWidth` its
 * record `width`, `offsCrc` its `groups_crc`. */
export interface IndexedMapNode {
  type: 3 | 6 | 7 | 9 | 10;
  n: number;
  starts: number[];
  offs: number[];
  kids: Map<number, NodeRef>;
  /** Key of each kid entry (normalised with `keyId`) to its span. */
  kidKeys: Map<string, number>;
  pageBits: number;
  offsWidth: number;
  offsCrc: number;
  /** The index region, absolute in the TOC. */
  region: NodeRef;
  /** Types 6, 7, 9. */
  blockBits: number;
  /** Type 7. */
  slotBits: number;
  seed: bigint;
  segBits: number;
  segCount: number;
  crcsCrc: number;
  /** Type 9. */
  keysLen: number;
  keysCrc: number;
  /** Type 10: a record's low bits that hold its entry's offset, records per chunk, how far
   * before and after its estimate a key's record may lie, how much a lookup reads for an
   * entry, and the first record of each group then n (u32 LE). */
  offBits: number;
  chunk: number;
  lo: number;
  hi: number;
  entryRead: number;
  groups: Uint8Array;
}

/** Type 4: a fixed-stride list; `dims[d] = [h, n, s]`. */
export interface StrideNode {
  type: 4;
  dims: Array<[number, number, number]>;
  lazyMin: number;
}

/** Type 5: a NumPy array value whose elements start `head` bytes in and take `size`. */
export interface ArrayNode {
  type: 5;
  head: number;
  size: number;
}

export type Node = ListNode | PagedListNode | MapNode | IndexedMapNode | StrideNode | ArrayNode;

/** A key's identity for maps keyed by keys: ints and strs never collide. */
export function keyId(key: Key): string {
  if (typeof key === "string") return "s" + key;
  // an integral number beyond 2^53 prints rounded ("1152921504606847000") or in exponent
  // form: spell it as the bigint it equals, as a key decoded from the node is spelled
  if (typeof key === "number" && Number.isInteger(key) && !Number.isSafeInteger(key)) return "i" + BigInt(key).toString();
  return "i" + key.toString();
}

/** The key a `keyId` stands for. */
export function keyOfId(id: string): Key {
  if (id[0] === "s") return id.slice(1);
  const n = Number(id.slice(1));
  return Number.isSafeInteger(n) ? n : BigInt(id.slice(1));
}

/** Readers accept blocks of up to 2^16 entries (types 6, 7, 9). */
export const READ_MAX_BLOCK_BITS = 16;
export const MAX_SEG_BITS = 18;
/** Bytes of fuse slots per chunk CRC (type 7). */
export const FUSE_CHUNK = 1024;

class Bad extends Error {}

function fail(why: string): never {
  throw new Bad(why);
}

function int(x: unknown, what: string): number {
  if (typeof x === "number" && Number.isInteger(x)) return x;
  return fail(`${what} is not an int`);
}

function ints(x: unknown, what: string): number[] {
  if (!Array.isArray(x)) fail(`${what} is not a list`);
  for (const v of x) if (!(typeof v === "number" && Number.isInteger(v))) fail(`${what} holds a non-int`);
  return x as number[];
}

function key(x: unknown): Key {
  if (typeof x === "string" || typeof x === "bigint" || (typeof x === "number" && Number.isInteger(x))) return x;
  return fail("a key is neither str nor int");
}

function increasing(xs: number[]): boolean {
  for (let i = 1; i < xs.length; i++) if (!(xs[i - 1] < xs[i])) return false;
  return true;
}

/** `(back, length)` of a reference made by the node at `where`, checked to precede it. */
function ref(x: unknown, where: number, what: string): NodeRef {
  if (!Array.isArray(x) || x.length !== 2) fail(`${what} is not [back, length]`);
  const back = int(x[0], what);
  const len = int(x[1], what);
  const pos = where - back;
  if (!(back > 0 && pos >= 0 && len >= 0 && pos + len <= where)) {
    fail(`${what} references ${len} bytes at TOC offset ${pos}, which do not precede the node`);
  }
  return { pos, len };
}

function kidsOf(x: unknown, where: number): Map<number, NodeRef> {
  if (!(x instanceof Map)) return fail("kids is not a map");
  const out = new Map<number, NodeRef>();
  for (const [k, v] of x) out.set(int(k, "a kid's index"), ref(v, where, "a kid"));
  return out;
}

export function blockCount(n: number, blockBits: number): number {
  return Math.floor((n + 2 ** blockBits - 1) / 2 ** blockBits);
}

/** Bytes of a type-6 record's block number: the fewest that hold `blocks - 1`, at least 1. */
export function blockWidth(blocks: number): number {
  let bits = 0;
  for (let v = blocks - 1; v > 0; v = Math.floor(v / 2)) bits++;
  return Math.max(1, Math.ceil(bits / 8));
}

export function slotCount(segBits: number, segCount: number): number {
  return (segCount + 2) * 2 ** segBits;
}

/** Where the chunk CRCs and the slots start in a type-7 region, and its size. */
export function fuseLayout(node: IndexedMapNode): { crcs: number; slots: number; size: number } {
  const crcs = (blockCount(node.n, node.blockBits) + 1) * node.offsWidth;
  const z = Math.ceil((slotCount(node.segBits, node.segCount) * node.slotBits) / 8);
  const slots = crcs + 4 * Math.ceil(z / FUSE_CHUNK);
  return { crcs, slots, size: slots + z };
}

/** The index region's size the node implies, -1 for fields out of bounds. */
export function indexSize(node: IndexedMapNode): number {
  const { n, pageBits, offsWidth: w, blockBits } = node;
  if (node.type === 3) return (n + 1) * w + (2 ** pageBits + 1) * 8 + n * 8;
  if (!(blockBits >= 0 && blockBits <= READ_MAX_BLOCK_BITS)) return -1;
  const nb = blockCount(n, blockBits);
  if (node.type === 6) return (nb + 1) * w + (2 ** pageBits + 1) * 8 + n * (1 + blockWidth(nb));
  if (!nb || pageBits !== 0) return -1;
  if (node.type === 9) return node.keysLen >= 1 ? (nb + 1) * w + node.keysLen : -1;
  const ok =
    node.slotBits >= 1 &&
    node.slotBits <= 32 &&
    nb <= 2 ** node.slotBits &&
    node.segBits >= 0 &&
    node.segBits <= MAX_SEG_BITS &&
    node.segCount >= 1 &&
    node.segCount <= 2 ** 32 &&
    slotCount(node.segBits, node.segCount) >= n &&
    node.seed >= 0n &&
    node.seed < 1n << 64n;
  return ok ? fuseLayout(node).size : -1;
}

const KNOWN = new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
/** A span page's type: a node only a paged list's `pages` name (`parsePage`). */
const PAGE = 12;

/**
 * Parse and check the framed node `bytes` found at TOC offset `ref.pos` (its CRC, its type,
 * its fields: every check of docs/format.md "The TOC section" that needs the node alone).
 * Child references come out resolved to TOC positions, checked to precede the node. A span
 * page (type 12) is corrupted here: a container's node is expected.
 */
export function parseNode(bytes: Uint8Array, at: NodeRef): Node {
  const where = at.pos;
  const head = `TOC node at offset ${where}`;
  const raw = unframe(bytes, head);
  const type = raw[0] as number;
  if (type === PAGE) {
    throw new CorruptedError(`${head} is a span page (type 12), which only a paged list (type 11) names, where a container's node is expected`);
  }
  if (!KNOWN.has(type)) {
    throw new UnsupportedVersionError(`${head} has type ${type}, unknown to this reader (written by a newer version?)`);
  }
  try {
    return build(type, raw, where);
  } catch (e) {
    if (e instanceof Bad) throw new CorruptedError(`${head} is malformed: ${e.message}`);
    throw e;
  }
}

/** A framed node's payload (its CRC checked) decoded: an array starting with its type. */
function unframe(bytes: Uint8Array, head: string): unknown[] {
  if (bytes.length < 5) throw new CorruptedError(`${head} is ${bytes.length} bytes, too short`);
  const payload = bytes.subarray(0, bytes.length - 4);
  if (crc32(payload) !== u32(bytes, bytes.length - 4)) throw new CorruptedError(`${head}: checksum mismatch`);
  let raw: unknown;
  try {
    raw = decodeValue(payload, 0, { strict: true });
  } catch (e) {
    throw new CorruptedError(`${head} is malformed: not msgpack (${(e as Error).message})`);
  }
  if (!Array.isArray(raw) || raw.length === 0 || typeof raw[0] !== "number") {
    throw new CorruptedError(`${head} is malformed: not an array starting with its type`);
  }
  return raw;
}

/** The item after page `p` of a paged list: the next page's first, or `n`. */
export function pageEnd(node: PagedListNode, p: number): number {
  return p + 1 < node.firsts.length ? node.firsts[p + 1] : node.n;
}

/** The page of a paged list that holds item `i` (0 <= i < n): bisection over `firsts`. */
export function pageOf(node: PagedListNode, i: number): number {
  return bisectRight(node.firsts, i);
}

/** The last index `k` with `xs[k] <= x` (-1 when none). */
export function bisectRight(xs: number[], x: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/**
 * Parse and check the framed span page `bytes` found at `at`, page `p` of the paged list
 * `node` (at TOC offset `from`): read only as a page (a node of any other type there is
 * corrupted), its spans as a type-1 node's whose `n` is the item after the page (not the
 * list's), its kids resolved to TOC positions (relative to the page, checked to precede it).
 */
export function parsePage(bytes: Uint8Array, at: NodeRef, node: PagedListNode, p: number, from: number): ListNode {
  const head = `TOC node at offset ${at.pos}`;
  const named = `page ${p} of the paged list at TOC offset ${from}`;
  const raw = unframe(bytes, head);
  if (raw[0] !== PAGE) {
    throw new CorruptedError(`${head} has type ${String(raw[0])} where ${named} expects a span page (type 12)`);
  }
  try {
    if (raw.length !== 4) fail(`${raw.length - 1} fields where a span page has 3`);
    const starts = ints(raw[1], "starts");
    const offs = ints(raw[2], "offs");
    const kids = kidsOf(raw[3], at.pos);
    const why = pageFault(starts, offs, kids, node, p);
    if (why) fail(`it does not fit its paged list: ${why}`);
    return { type: 1, n: pageEnd(node, p), starts, offs, kids };
  } catch (e) {
    if (e instanceof Bad) throw new CorruptedError(`${head}, ${named}, is malformed: ${e.message}`);
    throw e;
  }
}

/** What makes a page's fields not fit page `p` of `node` (docs/format.md, type 12), or "". */
function pageFault(starts: number[], offs: number[], kids: Map<number, NodeRef>, node: PagedListNode, p: number): string {
  const spans = starts.length;
  const end = pageEnd(node, p);
  if (spans === 0) return "no span";
  if (offs.length !== spans + 1) return `${spans} starts and ${offs.length} offsets, where one more offset than starts is expected`;
  if (starts[0] !== node.firsts[p]) return `its first item is ${starts[0]}, where the list's page begins at item ${node.firsts[p]}`;
  if (starts[spans - 1] >= end) return `its last span starts at item ${starts[spans - 1]}, where the page ends before item ${end}`;
  if (offs[0] !== node.offs[p] || offs[spans] !== node.offs[p + 1]) {
    return `its spans take bytes ${offs[0]}..${offs[spans]}, where the list's page takes ${node.offs[p]}..${node.offs[p + 1]}`;
  }
  if (!increasing(starts)) return "its starts do not rise";
  if (!increasing(offs)) return "its offsets do not rise";
  for (const k of kids.keys()) {
    if (!(k >= 0 && k < spans)) return `a kid names span ${k} of ${spans}`;
    const count = (k + 1 < spans ? starts[k + 1] : end) - starts[k];
    if (count !== 1) return `span ${k} has a node of its own but ${count} items`;
  }
  return "";
}

/** The type-1 node a paged list describes: its pages' spans (each checked by `parsePage`) in
 * order. Kid references are TOC positions, so they are taken as they are. */
export function wholeList(node: PagedListNode, pages: ListNode[]): ListNode {
  const starts: number[] = [];
  const offs: number[] = [];
  const kids = new Map<number, NodeRef>();
  for (const page of pages) {
    const first = starts.length;
    for (const [k, r] of page.kids) kids.set(first + k, r);
    for (const s of page.starts) starts.push(s);
    for (let k = 0; k < page.starts.length; k++) offs.push(page.offs[k]);
  }
  offs.push(node.offs[node.offs.length - 1]);
  return { type: 1, n: node.n, starts, offs, kids };
}

const FIELDS: Record<number, number> = { 1: 5, 2: 5, 3: 10, 4: 3, 5: 3, 6: 11, 7: 16, 8: 6, 9: 13, 10: 16, 11: 5 };

function build(type: number, f: unknown[], where: number): Node {
  if (f.length !== FIELDS[type]) fail(`${f.length - 1} fields where type ${type} has ${FIELDS[type] - 1}`);
  if (type === 5) {
    const head = int(f[1], "head");
    const size = int(f[2], "size");
    if (!(head >= 3 && head <= 6 + 4 + (1 << 20) && size >= 0)) fail(`array head ${head}, size ${size}`);
    return { type: 5, head, size };
  }
  if (type === 4) {
    if (!Array.isArray(f[1]) || f[1].length === 0) fail("empty dims");
    const dims = (f[1] as unknown[]).map((d) => {
      const t = ints(d, "dims");
      if (t.length !== 3) fail("a dim is not [h, n, s]");
      return [t[0], t[1], t[2]] as [number, number, number];
    });
    const lazyMin = int(f[2], "lazy_min");
    if (lazyMin < 0) fail("lazy_min below 0");
    for (let d = 0; d < dims.length; d++) {
      const [h, n, s] = dims[d];
      const inner = dims[d + 1];
      if (!(h >= 1 && h <= 5 && n > 0 && n < 2 ** 32 && s >= 1) || (inner && s !== inner[0] + inner[1] * inner[2])) {
        fail(`inconsistent dims ${JSON.stringify(dims)}`);
      }
    }
    return { type: 4, dims, lazyMin };
  }
  if (type === 11) {
    const n = int(f[1], "n");
    const firsts = ints(f[2], "firsts");
    const offs = ints(f[3], "offs");
    if (!Array.isArray(f[4])) fail("pages is not a list");
    const pages = (f[4] as unknown[]).map((r) => ref(r, where, "a page"));
    const P = firsts.length;
    if (P === 0) fail("no page");
    if (offs.length !== P + 1 || pages.length !== P) {
      fail(`${P} pages, ${offs.length} offsets and ${pages.length} page references, where P, P + 1 and P are expected`);
    }
    if (firsts[0] !== 0) fail(`the first page begins at item ${firsts[0]}, not 0`);
    if (!(firsts[P - 1] < n && n < 2 ** 32 && n <= offs[P] - offs[0])) {
      fail(`inconsistent pages: ${n} items, the last page beginning at item ${firsts[P - 1]}, in ${offs[P] - offs[0]} bytes`);
    }
    if (!(offs[0] >= 1 && offs[0] <= 5)) fail(`the first page starts at byte ${offs[0]}, outside 1..5 (a header's length)`);
    if (!increasing(firsts) || !increasing(offs)) fail("inconsistent pages: firsts or offsets do not rise");
    return { type: 11, n, firsts, offs, pages };
  }
  if (type === 2 || type === 8) {
    if (!Array.isArray(f[1])) fail("keys is not a list");
    const keys = (f[1] as unknown[]).map(key);
    const n = keys.length;
    let koffs: number[];
    let voffs: number[];
    let kidsRaw: unknown;
    if (type === 2) {
      koffs = ints(f[2], "koffs");
      voffs = ints(f[3], "voffs");
      kidsRaw = f[4];
    } else {
      const first = int(f[2], "first");
      const klens = ints(f[3], "klens");
      const vlens = ints(f[4], "vlens");
      kidsRaw = f[5];
      if (klens.length !== n || vlens.length !== n || klens.some((x) => x < 1) || vlens.some((x) => x < 1)) {
        fail("inconsistent key and value lengths");
      }
      koffs = [first];
      voffs = [];
      for (let j = 0; j < n; j++) {
        voffs.push(koffs[j] + klens[j]);
        koffs.push(voffs[j] + vlens[j]);
      }
    }
    const kids = kidsOf(kidsRaw, where);
    let ok = koffs.length === n + 1 && voffs.length === n && n > 0 && koffs[0] >= 1 && koffs[0] <= 5;
    for (let j = 0; ok && j < n; j++) ok = koffs[j] < voffs[j] && voffs[j] < koffs[j + 1];
    for (const k of kids.keys()) if (!(k >= 0 && k < n)) ok = false;
    if (!ok) fail("inconsistent key offsets");
    if (new Set(keys.map(keyId)).size !== n) fail("a key listed twice");
    return { type, keys, koffs, voffs, kids };
  }
  // types 1, 3, 6, 7, 9, 10: spans
  const n = int(f[1], "n");
  const starts = ints(f[2], "starts");
  const offs = ints(f[3], "offs");
  const kids = kidsOf(f[4], where);
  const spans = starts.length;
  let ok = offs.length === spans + 1 && spans > 0 && starts[0] === 0 && offs[0] >= 1 && offs[0] <= 5;
  ok = ok && starts[spans - 1] < n && n < 2 ** 32 && n <= offs[spans] - offs[0] && increasing(starts) && increasing(offs);
  for (const k of kids.keys()) if (!(ok && k >= 0 && k < spans && starts[k] + 1 === (k + 1 < spans ? starts[k + 1] : n))) ok = false;
  if (type === 1) {
    if (!ok) fail("inconsistent spans");
    return { type: 1, n, starts, offs, kids };
  }
  if (!(f[5] instanceof Map)) fail("kid_keys is not a map");
  const kidKeys = new Map<string, number>();
  for (const [k, v] of f[5] as Map<unknown, unknown>) kidKeys.set(keyId(key(k)), int(v, "a kid key's span"));
  const pageBits = int(f[6], "page_bits");
  const offsWidth = int(f[7], "offs_width");
  const offsCrc = int(f[8], "offs_crc");
  const region = ref(f[9], where, "the index region");
  const node: IndexedMapNode = {
    type: type as 3 | 6 | 7 | 9 | 10,
    n,
    starts,
    offs,
    kids,
    kidKeys,
    pageBits,
    offsWidth,
    offsCrc,
    region,
    blockBits: 0,
    slotBits: 0,
    seed: 0n,
    segBits: 0,
    segCount: 0,
    crcsCrc: 0,
    keysLen: 0,
    keysCrc: 0,
    offBits: 0,
    chunk: 0,
    lo: 0,
    hi: 0,
    entryRead: 0,
    groups: new Uint8Array(0),
  };
  if (type === 10) return direct(node, f, ok);
  if (type !== 3) node.blockBits = int(f[10], "block_bits");
  if (type === 7) {
    node.slotBits = int(f[11], "slot_bits");
    const seed = f[12];
    if (typeof seed === "bigint") node.seed = seed;
    else node.seed = BigInt(int(seed, "seed"));
    node.segBits = int(f[13], "seg_bits");
    node.segCount = int(f[14], "seg_count");
    node.crcsCrc = int(f[15], "crcs_crc");
  }
  if (type === 9) {
    node.keysLen = int(f[11], "keys_len");
    node.keysCrc = int(f[12], "keys_crc");
  }
  const size = pageBits >= 0 && pageBits <= 31 ? indexSize(node) : -1;
  ok = ok && (offsWidth === 4 || offsWidth === 8) && size === region.len;
  if (!(ok && kidKeysFit(node))) fail("inconsistent spans");
  return node;
}

/** `kid_keys` names each kid span once, and nothing else. */
function kidKeysFit({ kids, kidKeys }: IndexedMapNode): boolean {
  const spansOfKeys = new Set(kidKeys.values());
  return kidKeys.size === kids.size && spansOfKeys.size === kids.size && [...kids.keys()].every((k) => spansOfKeys.has(k));
}

/** A type-10 field that only sizes or bounds reads (`chunk`, `lo`, `hi`, `entry_read`): any
 * int of 0 or more, a huge one as a (rounded) number, which the bounds it meets then clip. */
function atLeast0(x: unknown, what: string): number {
  const v = typeof x === "bigint" ? Number(x) : int(x, what);
  if (!(v >= 0)) fail(`${what} below 0`);
  return v;
}

/** The rest of a type-10 node, checked as docs/format.md says ("Readers refuse as corrupted");
 * `spansOk`: the span checks' verdict. */
function direct(node: IndexedMapNode, f: unknown[], spansOk: boolean): IndexedMapNode {
  node.offBits = int(f[10], "off_bits");
  node.chunk = atLeast0(f[11], "chunk");
  node.lo = atLeast0(f[12], "lo");
  node.hi = atLeast0(f[13], "hi");
  node.entryRead = atLeast0(f[14], "entry_read");
  if (!(f[15] instanceof Uint8Array)) fail("groups is not bin");
  node.groups = f[15];
  if (!(spansOk && kidKeysFit(node))) fail("inconsistent spans");
  const why = directFault(node);
  if (why) fail(why);
  return node;
}

/** What is wrong with a type-10 node's index fields, or "" (Python's `direct_size`). */
function directFault(node: IndexedMapNode): string {
  const { n, pageBits: groupBits, offsWidth: width, offBits, chunk, groups } = node;
  if (!(groupBits >= 0 && groupBits <= MAX_GROUP_BITS)) return `group_bits ${groupBits} outside 0..${MAX_GROUP_BITS}`;
  if (groups.length !== 4 * (2 ** groupBits + 1)) return `groups of ${groups.length} bytes for ${2 ** groupBits} groups`;
  if (crc32(groups) !== node.offsCrc) return "groups fail their checksum";
  let last = 0;
  for (let at = 0; at < groups.length; at += 4) {
    const first = u32(groups, at);
    if (first < last || (at === 0 && first !== 0)) return "groups do not rise from 0";
    last = first;
  }
  if (last !== n) return `groups end at ${last}, not at n = ${n}`;
  if (!(width >= 1 && width <= 8)) return `width ${width} outside 1..8`;
  if (!(offBits >= 1 && offBits < 8 * width)) return `off_bits ${offBits} leaves no fingerprint in ${width}-byte records`;
  if (!(chunk >= 1)) return `chunk ${chunk} below 1`;
  const size = regionSize(n, width, chunk);
  if (size !== node.region.len) return `a region of ${node.region.len} bytes where its fields give ${size}`;
  return "";
}

/** The encoded length of the container a node describes. */
export function nodeSpan(node: Node): number {
  switch (node.type) {
    case 4:
      return node.dims[0][0] + node.dims[0][1] * node.dims[0][2];
    case 2:
    case 8:
      return node.koffs[node.koffs.length - 1];
    case 5:
      return node.head + node.size;
    default:
      return node.offs[node.offs.length - 1];
  }
}

/** The bytes a fixed-stride list starts with (its header, its first row's, ...), or null. */
export function strideHeaders(node: StrideNode): Uint8Array | null {
  const out: number[] = [];
  for (const [h, n] of node.dims) {
    if (h === 1 && n < 16) out.push(0x90 | n);
    else if (h === 3 && n < 0x10000) out.push(0xdc, n >>> 8, n & 0xff);
    else if (h === 5) out.push(0xdd, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
    else return null;
  }
  return Uint8Array.from(out);
}

/** (isMap, count, header size) the container of a node must start with. */
export function nodeHeader(node: ListNode | PagedListNode | MapNode | IndexedMapNode | StrideNode): { isMap: boolean; count: number; size: number } {
  if (node.type === 4) return { isMap: false, count: node.dims[0][1], size: node.dims[0][0] };
  if ("keys" in node) return { isMap: true, count: node.keys.length, size: node.koffs[0] };
  return { isMap: node.type !== 1 && node.type !== 11, count: node.n, size: node.offs[0] };
}
