/**
 * Lazy views of an archive's containers (Python's msglc/read/views.py): what a reader and
 * its views share (`Archive`: the body, a bounded cache of parsed nodes, of dict indexes and
 * of views), and one view class per node kind. A container without a node (small) is decoded
 * whole when reached and served by a `PlainView`, so paths go on through decoded values.
 *
 * Offsets: data offsets are relative to the data section (the root container at 0), TOC
 * positions to the TOC, as `Body` takes them.
 */
import type { Body } from "../io/body.js";
import { CorruptedError, IndexOutOfRangeError, KeyNotFoundError, MsglcError } from "../errors.js";
import { crc32 } from "../util/crc32.js";
import { equalBytes } from "../util/bytes.js";
import {
  bisectRight,
  keyId,
  keyOfId,
  nodeHeader,
  nodeSpan,
  pageOf,
  parseNode,
  parsePage,
  strideHeaders,
  wholeList,
  type ArrayNode,
  type IndexedMapNode,
  type ListNode,
  type MapNode,
  type Node,
  type NodeRef,
  type PagedListNode,
  type StrideNode,
} from "../format/nodes.js";
import { containerHeader, encodeKey, itemEnd, parseExtHeader } from "../format/msgpack.js";
import { decodeValue, isArrayValue, markArray, objectKeys, storedArray } from "./decode.js";
import { DictIndex, type IndexReads } from "./lookup.js";
import { DirectIndex } from "./direct.js";
import { ArrayReader, parseArrayHeader, type ArrayHeader } from "./array.js";
import { halfToFloat32 } from "../format/dtype.js";
import type { AxisSelection, Key, Kind, LazyView, NDArray } from "./types.js";

/** The longest array or map header (array32, map32): what `checkedKey` reads after a key. */
const HEAD_MAX = 5;
/** Parsed nodes kept (by TOC position). */
export const MAX_NODES = 4096;
/** Lazy views kept for reuse (with the index tables they loaded). */
export const MAX_VIEWS = 1024;
/** Dict indexes kept (their block offsets, page tables and kept pages). */
export const MAX_INDEXES = 256;
/** Span pages of paged lists kept, checked: 1024 spans each (Python's MAX_PAGE_CACHE: all
 * the pages of a list of about 2 GB). */
export const MAX_PAGES = 256;
/** Whole span tables of paged lists kept (by the paged node's position). */
export const MAX_WHOLES = 64;

/** A small least-recently-used map. */
export class Lru<K, V> {
  /** Entries in insertion order, each with a bit set when it was used since it last came up
   * for eviction ("second chance"): a hit costs one `Map.get`, not a reordering. */
  private readonly map = new Map<K, { v: V; used: boolean }>();
  constructor(private readonly max: number) {}
  get(k: K): V | undefined {
    const e = this.map.get(k);
    if (e === undefined) return undefined;
    e.used = true;
    return e.v;
  }
  set(k: K, v: V): void {
    this.map.delete(k);
    this.map.set(k, { v, used: false });
    while (this.map.size > this.max) {
      const [oldest, e] = this.map.entries().next().value as [K, { v: V; used: boolean }];
      this.map.delete(oldest);
      if (e.used) {
        e.used = false;
        this.map.set(oldest, e);
      }
    }
  }
  get size(): number {
    return this.map.size;
  }
  clear(): void {
    this.map.clear();
  }
}

export class Archive implements IndexReads {
  readonly nodes = new Lru<number, Node>(MAX_NODES);
  readonly views = new Lru<string, LazyView>(MAX_VIEWS);
  readonly indexes = new Lru<string, DictIndex | DirectIndex>(MAX_INDEXES);
  readonly keyMaps = new Lru<number, Map<string, number>>(MAX_INDEXES);
  readonly pages = new Lru<string, ListNode>(MAX_PAGES);
  readonly wholes = new Lru<number, ListNode>(MAX_WHOLES);
  closed = false;
  /** The TOC bytes the last node read took (`nodeBytes`), from TOC offset `at`; replaced by
   * the next such read. (Python drops them where it empties its node cache, when it retries
   * an open; this reader does neither.) */
  private window: { at: number; bytes: Uint8Array } | null = null;

  constructor(readonly body: Body) {}

  checkOpen(): void {
    if (this.closed) throw new Error("I/O operation on a closed LazyReader");
  }

  readData(offset: number, length: number): Promise<Uint8Array> {
    this.checkOpen();
    if (!(offset >= 0 && length >= 0 && offset + length <= this.body.dataLength)) {
      return Promise.reject(
        new CorruptedError(`data span ${offset}+${length} lies outside the data section (${this.body.dataLength} bytes)`),
      );
    }
    return this.body.readData(offset, length);
  }

  readToc(offset: number, length: number): Promise<Uint8Array> {
    this.checkOpen();
    if (!(offset >= 0 && length >= 0 && offset + length <= this.body.tocLength)) {
      return Promise.reject(
        new CorruptedError(`TOC span ${offset}+${length} lies outside the TOC (${this.body.tocLength} bytes)`),
      );
    }
    return this.body.readToc(offset, length);
  }

  /** The node at `ref`, parsed and checked once while the cache keeps it. */
  async node(ref: NodeRef): Promise<Node> {
    const cached = this.nodes.get(ref.pos);
    if (cached !== undefined) return cached;
    if (ref.len < 5) throw new CorruptedError(`TOC node at offset ${ref.pos} is ${ref.len} bytes, too short`);
    const node = parseNode(await this.nodeBytes(ref.pos, ref.len), ref);
    this.nodes.set(ref.pos, node);
    return node;
  }

  /** Page `p` of the paged list whose node is at `ref`: its spans as a type-1 node's whose
   * `n` is the item after the page (`parsePage`), read (as a node is, `nodeBytes`) and checked
   * once while the cache keeps it (Python's `Archive.span_page`). The one place pages are read. */
  spanPage(ref: NodeRef, node: PagedListNode, p: number): ListNode | Promise<ListNode> {
    const at = node.pages[p];
    // kept by the paged node and the page's place in it: a page is checked against both
    // (a crafted node may name one page at two places)
    const key = `${ref.pos}/${p}`;
    const cached = this.pages.get(key);
    if (cached !== undefined) return cached;
    const parse = (bytes: Uint8Array): ListNode => {
      const page = parsePage(bytes, at, node, p, ref.pos);
      this.pages.set(key, page);
      return page;
    };
    const bytes = this.nodeBytes(at.pos, at.len);
    return bytes instanceof Uint8Array ? parse(bytes) : bytes.then(parse);
  }

  /** The span table of the list whose node is at `ref`: its own, or a paged list's from all
   * its pages, read in order (kept while the cache keeps it: Python's `Archive.spans`). */
  async spans(ref: NodeRef, node: ListNode | PagedListNode): Promise<ListNode> {
    if (node.type === 1) return node;
    let whole = this.wholes.get(ref.pos);
    if (whole === undefined) {
      const pages: ListNode[] = [];
      for (let p = 0; p < node.pages.length; p++) pages.push(await this.spanPage(ref, node, p));
      whole = wholeList(node, pages);
      this.wholes.set(ref.pos, whole);
    }
    return whole;
  }

  /** The `len` TOC bytes of a node at `pos` (Python's `Archive.toc_read`). Where the body
   * says so (`nodeWindow`: a local file) the read takes the bytes before the node too, kept
   * until the next one: kids precede their parent, so a walk down reads most nodes from
   * them. A node outside the TOC is read as any TOC span, to fail as one. */
  private nodeBytes(pos: number, len: number): Promise<Uint8Array> | Uint8Array {
    const w = this.window;
    if (w !== null && w.at <= pos && pos + len <= w.at + w.bytes.length) {
      this.checkOpen();
      return w.bytes.subarray(pos - w.at, pos - w.at + len);
    }
    const ahead = this.body.nodeWindow;
    if (!ahead || !(pos >= 0 && pos + len <= this.body.tocLength)) return this.readToc(pos, len);
    const at = Math.max(0, pos - ahead);
    return this.readToc(at, pos + len - at).then((bytes) => {
      this.window = { at, bytes };
      return bytes.subarray(pos - at);
    });
  }

  /** Decode `bytes` read at data offset `where`. */
  decode(bytes: Uint8Array, where: number): unknown {
    return decodeValue(bytes, where);
  }

  /** The whole data section decoded, its checksum checked (Python's `decode_all`). */
  async decodeAll(): Promise<unknown> {
    return this.decodeChecked(await this.readData(0, this.body.dataLength));
  }

  /** `data`, the whole data section, decoded once its checksum holds. */
  decodeChecked(data: Uint8Array): unknown {
    if (crc32(data) !== this.body.dataCrc) {
      throw new CorruptedError(`data section checksum mismatch (${this.body.dataLength} bytes)`);
    }
    return decodeValue(data, 0);
  }

  index(node: IndexedMapNode, base: number): DictIndex | DirectIndex {
    const key = `${node.region.pos}:${base}`; // (a node may describe containers at several bases)
    let index = this.indexes.get(key);
    if (index === undefined) {
      index = node.type === 10 ? new DirectIndex(this, node, base) : new DictIndex(this, node, base);
      this.indexes.set(key, index);
    }
    return index;
  }

  keyMap(pos: number, node: MapNode): Map<string, number> {
    let m = this.keyMaps.get(pos);
    if (m === undefined) {
      m = new Map(node.keys.map((k, j) => [keyId(k), j]));
      this.keyMaps.set(pos, m);
    }
    return m;
  }

  /** The view of the container at data offset `base` (`span` bytes) that the node at `ref`
   * describes, its header checked against the node once. `head`: the container's first
   * bytes when the caller read them (`checkedKey`), else they are read here. */
  async view(base: number, span: number, ref: NodeRef, path: string, head?: Uint8Array): Promise<LazyView> {
    const where = `${base}:${span}:${ref.pos}:${ref.len}`;
    const made = this.views.get(where);
    if (made !== undefined && made.path === path) return made;
    const node = await this.node(ref);
    if (nodeSpan(node) !== span || base + span > this.body.dataLength) {
      throw new CorruptedError(
        `TOC node at offset ${ref.pos} describes ${nodeSpan(node)} bytes where ${span} are stored at data offset ${base}`,
      );
    }
    let view: LazyView;
    if (node.type === 5) view = await this.arrayView(base, span, ref, node, path);
    else {
      if (node.type === 4) {
        const heads = strideHeaders(node);
        const fits = heads !== null && equalBytes(await this.headOf(base, heads.length, head), heads);
        if (!fits) throw new CorruptedError(`container at data offset ${base} does not match its TOC node at offset ${ref.pos}`);
      } else {
        const got = containerHeader(await this.headOf(base, Math.min(HEAD_MAX, span), head), 0, base);
        const want = nodeHeader(node);
        if (got.isMap !== want.isMap || got.count !== want.count || got.size !== want.size) {
          throw new CorruptedError(`container at data offset ${base} does not match its TOC node at offset ${ref.pos}`);
        }
      }
      view = makeView(this, base, ref, node, path);
    }
    this.views.set(where, view);
    return view;
  }

  /** The first `n` bytes of the container at `base`: of `head` (what a caller read) when it
   * holds them, else read. */
  private headOf(base: number, n: number, head: Uint8Array | undefined): Uint8Array | Promise<Uint8Array> {
    return head !== undefined && head.length >= n ? head.subarray(0, n) : this.readData(base, n);
  }

  private async arrayView(base: number, span: number, ref: NodeRef, node: ArrayNode, path: string): Promise<LazyView> {
    const head = await this.readData(base, node.head);
    const ext = parseExtHeader(head);
    if (ext === null || ext.code !== 78 || ext.size + ext.length !== span) {
      throw new CorruptedError(`expected a NumPy array value of ${span} bytes at data offset ${base}`);
    }
    const header = parseArrayHeaderAt(head.subarray(ext.size), node.size, base);
    if (ext.size + header.headerLength !== node.head) {
      throw new CorruptedError(`NumPy array at data offset ${base} does not match its TOC node at offset ${ref.pos}`);
    }
    return new ArrayView(this, base, node, header, path);
  }

  /** The view of a child at `base` (`span` bytes) whose node the parent refers to (`head`:
   * as `view`'s). */
  child(base: number, span: number, ref: NodeRef, path: string, head?: Uint8Array): Promise<LazyView> {
    return this.view(base, span, ref, path, head);
  }

  /** The first bytes of the value of the dict entry at data offset `entryAt` (up to
   * `HEAD_MAX`: a container's header, for `view`), read with its key in one request (Python's
   * `_checked_key`): the entry (ending at `end`) must hold the key encoded as `kb` up to
   * `valueAt`, where its node says its value starts. */
  async checkedKey(entryAt: number, valueAt: number, end: number, kb: Uint8Array): Promise<Uint8Array> {
    const data = await this.readData(entryAt, Math.min(kb.length + HEAD_MAX, end - entryAt));
    checkKey(data.subarray(0, valueAt - entryAt), kb, entryAt);
    return data.subarray(kb.length);
  }
}

function parseArrayHeaderAt(payloadHead: Uint8Array, elementBytes: number, base: number): ArrayHeader {
  try {
    return parseArrayHeader(payloadHead, elementBytes);
  } catch (e) {
    if (e instanceof MsglcError) {
      const Cls = e.constructor as new (m: string) => MsglcError;
      throw new Cls(`NumPy array at data offset ${base}: ${e.message}`);
    }
    throw e;
  }
}

function makeView(a: Archive, base: number, ref: NodeRef, node: Exclude<Node, ArrayNode>, path: string): LazyView {
  switch (node.type) {
    case 1:
      return new ListView(a, base, node, path);
    case 11:
      return new PagedListView(a, base, ref, node, path);
    case 4:
      return StrideView.of(a, base, node, path);
    case 2:
    case 8:
      return new InlineDictView(a, base, ref, node, path);
    default:
      return new HashDictView(a, base, ref, node, path);
  }
}

export function joinPath(path: string, seg: Key | string): string {
  return path ? `${path}/${String(seg)}` : String(seg);
}

function notADict(kind: Kind, path: string): TypeError {
  return new TypeError(`a ${kind} has no keys (at ${path || "the root"})`);
}

/** A list index (negative from the end) checked against `n`. */
export function listIndex(i: Key, n: number, path: string): number {
  if (typeof i === "string") throw new TypeError(`list indices must be integers, not ${JSON.stringify(i)} (at ${path || "the root"})`);
  const j = Number(i);
  if (!Number.isInteger(j)) throw new TypeError(`list indices must be integers, not ${String(i)} (at ${path || "the root"})`);
  const k = j < 0 ? j + n : j;
  if (!(k >= 0 && k < n)) throw new IndexOutOfRangeError(j, n, joinPath(path, j));
  return k;
}

abstract class NodeView implements LazyView {
  abstract readonly kind: Kind;
  abstract readonly length: number;
  constructor(
    protected readonly a: Archive,
    protected readonly base: number,
    readonly path: string,
  ) {}
  abstract span(): number;
  abstract get(keyOrIndex: Key): Promise<LazyView>;
  async keys(_start?: number, _stop?: number): Promise<Key[]> {
    throw notADict(this.kind, this.path);
  }
  async value(): Promise<unknown> {
    const span = this.span();
    return this.a.decode(await this.a.readData(this.base, span), this.base);
  }
  async slice(..._axes: AxisSelection[]): Promise<NDArray> {
    throw new TypeError(`slice() is for arrays, not a ${this.kind} (at ${this.path || "the root"})`);
  }
  readonly lazyPart = true;
  raw(): Promise<Uint8Array> {
    return this.a.readData(this.base, this.span());
  }
  async storedSize(): Promise<number> {
    return this.span();
  }
}

/** Type 1: a list cut into spans. */
class ListView extends NodeView {
  readonly kind = "list" as const;
  constructor(
    a: Archive,
    base: number,
    protected readonly node: ListNode | PagedListNode,
    path: string,
  ) {
    super(a, base, path);
  }
  get length(): number {
    return this.node.n;
  }
  span(): number {
    return this.node.offs[this.node.offs.length - 1];
  }
  /** The spans that hold item `j` (in range): the whole table here, its page for a paged
   * list (a type-1 node whose `n` is the item after the page's last). */
  protected locate(_j: number): ListNode | Promise<ListNode> {
    return this.node as ListNode;
  }
  async get(i: Key): Promise<LazyView> {
    const j = listIndex(i, this.node.n, this.path);
    const path = joinPath(this.path, j);
    const spans = await this.locate(j);
    const k = bisectRight(spans.starts, j);
    const kid = spans.kids.get(k);
    const start = this.base + spans.offs[k];
    const size = spans.offs[k + 1] - spans.offs[k];
    if (kid !== undefined) return this.a.child(start, size, kid, path);
    const count = (k + 1 < spans.starts.length ? spans.starts[k + 1] : spans.n) - spans.starts[k];
    const data = await this.a.readData(start, size);
    const [value, bytes] = decodeNth(data, count, j - spans.starts[k], start);
    return new PlainView(value, path, bytes);
  }
}

/** Type 11: a list whose span table is in pages; an item reads its page once (then kept). */
class PagedListView extends ListView {
  constructor(
    a: Archive,
    base: number,
    private readonly ref: NodeRef,
    node: PagedListNode,
    path: string,
  ) {
    super(a, base, node, path);
  }
  protected override locate(j: number): ListNode | Promise<ListNode> {
    const node = this.node as PagedListNode;
    return this.a.spanPage(this.ref, node, pageOf(node, j));
  }
}

/** Item `j` of the `count` items that make `data` (read at data offset `where`): the items
 * before it stepped over by their headers, it alone decoded; the rest checked to end the span. */
function decodeNth(data: Uint8Array, count: number, j: number, where: number): [unknown, Uint8Array] {
  let p = 0;
  let value: unknown;
  let bytes = data;
  for (let i = 0; i < count; i++) {
    const end = itemEnd(data, p, where);
    if (end < 0 || end > data.length) throw new CorruptedError(`data at offset ${where} (${data.length} bytes) is not ${count} msgpack items`);
    if (i === j) {
      bytes = data.subarray(p, end);
      value = decodeValue(bytes, where + p);
    }
    p = end;
  }
  if (p !== data.length) throw new CorruptedError(`data at offset ${where} (${data.length} bytes) is not ${count} msgpack items`);
  return [value, bytes];
}

interface Level {
  h: number;
  n: number;
  s: number;
  whole: boolean;
  next: Level | null;
}

/** Type 4: a fixed-stride list; item i at base + h + i * s. Rows are views made without I/O. */
class StrideView extends NodeView {
  readonly kind = "list" as const;
  constructor(
    a: Archive,
    base: number,
    private readonly level: Level,
    path: string,
  ) {
    super(a, base, path);
  }
  static of(a: Archive, base: number, node: StrideNode, path: string): StrideView {
    let level: Level | null = null;
    for (let d = node.dims.length - 1; d >= 0; d--) {
      const [h, n, s] = node.dims[d];
      level = { h, n, s, whole: level === null || s < node.lazyMin, next: level };
    }
    return new StrideView(a, base, level!, path);
  }
  get length(): number {
    return this.level.n;
  }
  get shape(): number[] {
    const out: number[] = [];
    for (let l: Level | null = this.level; l; l = l.next) out.push(l.n);
    return out;
  }
  span(): number {
    return this.level.h + this.level.n * this.level.s;
  }
  async get(i: Key): Promise<LazyView> {
    const { h, n, s, whole, next } = this.level;
    const j = listIndex(i, n, this.path);
    const path = joinPath(this.path, j);
    const off = this.base + h + j * s;
    if (!whole && next) return new StrideView(this.a, off, next, path);
    const bytes = await this.a.readData(off, s);
    return new PlainView(this.a.decode(bytes, off), path, bytes);
  }
}

/** Types 2 and 8: a dict whose keys are in its node. */
class InlineDictView extends NodeView {
  readonly kind = "dict" as const;
  constructor(
    a: Archive,
    base: number,
    private readonly ref: NodeRef,
    private readonly node: MapNode,
    path: string,
  ) {
    super(a, base, path);
  }
  get length(): number {
    return this.node.keys.length;
  }
  span(): number {
    return this.node.koffs[this.node.koffs.length - 1];
  }
  override async keys(start = 0, stop = this.node.keys.length): Promise<Key[]> {
    return this.node.keys.slice(start, stop);
  }
  async get(key: Key): Promise<LazyView> {
    const path = joinPath(this.path, key);
    const j = this.a.keyMap(this.ref.pos, this.node).get(keyId(key));
    if (j === undefined) throw new KeyNotFoundError(key, path);
    const cacheKey = `k${this.base}:${this.ref.pos}:${keyId(key)}`;
    const made = this.a.views.get(cacheKey);
    if (made !== undefined && made.path === path) return made;
    const node = this.node;
    const kb = encodeKey(key)!;
    const entryAt = this.base + node.koffs[j];
    const valueAt = this.base + node.voffs[j];
    const end = this.base + node.koffs[j + 1];
    const kid = node.kids.get(j);
    if (kid !== undefined) {
      const head = await this.a.checkedKey(entryAt, valueAt, end, kb);
      const view = await this.a.child(valueAt, end - valueAt, kid, path, head);
      this.a.views.set(cacheKey, view);
      return view;
    }
    const entry = await this.a.readData(entryAt, end - entryAt);
    checkKey(entry.subarray(0, valueAt - entryAt), kb, entryAt);
    const bytes = entry.subarray(valueAt - entryAt);
    return new PlainView(this.a.decode(bytes, valueAt), path, bytes);
  }
}

function checkKey(stored: Uint8Array, expected: Uint8Array, where: number): void {
  if (!equalBytes(stored, expected)) {
    throw new CorruptedError(`dict entry at data offset ${where} does not hold the key its TOC node names`);
  }
}

/** Types 3, 6, 7, 9, 10: a big dict with an index region. */
class HashDictView extends NodeView {
  readonly kind = "dict" as const;
  private kidKey: Map<number, Key> | null = null;
  private idx: DictIndex | DirectIndex | undefined;
  constructor(
    a: Archive,
    base: number,
    private readonly ref: NodeRef,
    private readonly node: IndexedMapNode,
    path: string,
  ) {
    super(a, base, path);
  }
  get length(): number {
    return this.node.n;
  }
  span(): number {
    return this.node.offs[this.node.offs.length - 1];
  }
  private kidKeyOf(k: number): Key {
    if (this.kidKey === null) {
      this.kidKey = new Map();
      for (const [id, span] of this.node.kidKeys) this.kidKey.set(span, keyOfId(id));
    }
    return this.kidKey.get(k)!;
  }

  /** Keys `start` to `stop` in stored order, reading only the spans that hold them and
   * decoding keys only (values are stepped over). */
  override async keys(start = 0, stop = this.node.n): Promise<Key[]> {
    const node = this.node;
    const n = node.n;
    start = Math.max(0, Math.min(n, start < 0 ? start + n : start));
    stop = Math.max(start, Math.min(n, stop < 0 ? stop + n : stop));
    const out: Key[] = [];
    if (start >= stop) return out;
    for (let k = bisectRight(node.starts, start); k < node.starts.length && node.starts[k] < stop; k++) {
      const first = node.starts[k];
      const count = (k + 1 < node.starts.length ? node.starts[k + 1] : n) - first;
      if (node.kids.has(k)) {
        if (first >= start) out.push(this.kidKeyOf(k));
        continue;
      }
      const at = this.base + node.offs[k];
      const data = await this.a.readData(at, node.offs[k + 1] - node.offs[k]);
      let p = 0;
      for (let i = 0; i < count; i++) {
        const keyEnd = itemEnd(data, p, at);
        const valueEnd = keyEnd < 0 || keyEnd >= data.length ? -1 : itemEnd(data, keyEnd, at);
        if (valueEnd < 0 || valueEnd > data.length) throw new CorruptedError(`data at offset ${at} is not ${count} dict entries`);
        const e = first + i;
        if (e >= start && e < stop) {
          const key = decodeValue(data.subarray(p, keyEnd), at + p);
          out.push(key as Key);
        }
        p = valueEnd;
      }
      if (p !== data.length) throw new CorruptedError(`data at offset ${at} is not ${count} dict entries`);
    }
    return out;
  }

  async get(key: Key): Promise<LazyView> {
    const path = joinPath(this.path, key);
    const node = this.node;
    const id = keyId(key);
    const k = node.kidKeys.get(id);
    const kb = encodeKey(key);
    if (kb === null) throw new KeyNotFoundError(key, path);
    if (k !== undefined) {
      const cacheKey = `k${this.base}:${this.ref.pos}:${id}`;
      const made = this.a.views.get(cacheKey);
      if (made !== undefined && made.path === path) return made;
      const entryAt = this.base + node.offs[k];
      const valueAt = entryAt + kb.length;
      const end = this.base + node.offs[k + 1];
      if (valueAt >= end) throw new CorruptedError(`dict entry at data offset ${entryAt} does not hold the key its TOC node names`);
      const head = await this.a.checkedKey(entryAt, valueAt, end, kb);
      const view = await this.a.child(valueAt, end - valueAt, node.kids.get(k)!, path, head);
      this.a.views.set(cacheKey, view);
      return view;
    }
    this.idx ??= this.a.index(node, this.base);
    const found = await this.idx.find(kb);
    if (found === null) throw new KeyNotFoundError(key, path);
    return new PlainView(this.a.decode(found.bytes, found.at), path, found.bytes);
  }
}

/** Type 5: a NumPy array read lazily through `ArrayReader`. */
class ArrayView extends NodeView {
  readonly kind = "array" as const;
  private readonly reader: ArrayReader;
  constructor(
    a: Archive,
    base: number,
    private readonly node: ArrayNode,
    private readonly header: ArrayHeader,
    path: string,
  ) {
    super(a, base, path);
    const first = base + node.head;
    const size = node.size;
    this.reader = new ArrayReader(header, (offset, length) => {
      if (!(offset >= 0 && length >= 0 && offset + length <= size)) {
        return Promise.reject(new CorruptedError(`a read of ${length} bytes at element offset ${offset} of a ${size}-byte array at data offset ${base}`));
      }
      return a.readData(first + offset, length);
    });
  }
  get length(): number {
    return this.header.shape.length ? this.header.shape[0] : 0;
  }
  get dtype(): string {
    return this.header.dtype;
  }
  get shape(): number[] {
    return this.header.shape.slice();
  }
  span(): number {
    return this.node.head + this.node.size;
  }
  override async value(): Promise<unknown> {
    return markArray(await this.reader.all());
  }
  override async slice(...axes: AxisSelection[]): Promise<NDArray> {
    return markArray(await this.reader.slice(...axes));
  }
  async get(i: Key): Promise<LazyView> {
    const j = listIndex(i, this.length, this.path);
    return new PlainView(plainOfArray(await this.reader.slice(j)), joinPath(this.path, j));
  }
}

/** A 0-d array of a number type as its one number (NumPy's scalar: a half-precision float
 * converted, a bool as a boolean); any other array as it is (complex, datetime, text and
 * structured elements stay arrays: they are not one JavaScript number). */
export function plainOfArray(x: NDArray): unknown {
  markArray(x);
  if (x.shape.length !== 0 || x.data.length !== 1) return x;
  const kind = x.dtype.slice(1, 2);
  if (kind === "f" && x.data instanceof Uint16Array) return halfToFloat32(x.data)[0];
  if (kind === "b") return x.data[0] !== 0;
  if (kind === "i" || kind === "u" || kind === "f") return x.data[0];
  return x;
}

function isNDArray(x: unknown): x is NDArray {
  return isArrayValue(x);
}

/** A value decoded whole (a scalar, or a container without a node): views over plain values. */
export class PlainView implements LazyView {
  readonly kind: Kind;
  readonly lazyPart = false;
  /** `stored`: the bytes the value was decoded from, when it was decoded from one run of
   * them (not a selection of an array's elements). */
  constructor(
    private readonly v: unknown,
    readonly path: string,
    private readonly stored?: Uint8Array,
  ) {
    this.kind = Array.isArray(v)
      ? "list"
      : v instanceof Map || (typeof v === "object" && v !== null && !(v instanceof Uint8Array) && !(v instanceof Date) && !isNDArray(v))
        ? "dict"
        : isNDArray(v)
          ? "array"
          : "value";
  }
  get length(): number {
    const v = this.v;
    if (Array.isArray(v)) return v.length;
    if (v instanceof Map) return v.size;
    if (this.kind === "dict") return Object.keys(v as object).length;
    if (this.kind === "array") return (v as NDArray).shape[0] ?? 0;
    return 0;
  }
  get dtype(): string | undefined {
    return this.kind === "array" ? (this.v as NDArray).dtype : undefined;
  }
  get shape(): number[] | undefined {
    return this.kind === "array" ? (this.v as NDArray).shape.slice() : undefined;
  }
  async keys(start?: number, stop?: number): Promise<Key[]> {
    const v = this.v;
    if (v instanceof Map) return [...v.keys()].slice(start, stop) as Key[];
    if (this.kind === "dict") return objectKeys(v as object).slice(start, stop);
    throw notADict(this.kind, this.path);
  }
  async get(key: Key): Promise<LazyView> {
    const v = this.v;
    const path = joinPath(this.path, key);
    if (Array.isArray(v)) {
      const j = listIndex(key, v.length, this.path);
      return new PlainView(v[j], joinPath(this.path, j));
    }
    if (this.kind === "array") {
      const j = listIndex(key, this.length, this.path);
      return new PlainView(plainOfArray(await this.slice(j)), joinPath(this.path, j));
    }
    if (v instanceof Map) {
      let got: unknown = v.get(key);
      if (got === undefined && !v.has(key)) {
        // an int key may have been decoded as a number or a bigint
        const alt = typeof key === "bigint" ? Number(key) : typeof key === "number" && Number.isInteger(key) ? BigInt(key) : undefined;
        if (alt !== undefined && v.has(alt)) got = v.get(alt);
        else throw new KeyNotFoundError(key, path);
      }
      return new PlainView(got, path);
    }
    if (this.kind === "dict") {
      if (typeof key !== "string" || !Object.prototype.hasOwnProperty.call(v, key)) throw new KeyNotFoundError(key, path);
      return new PlainView((v as Record<string, unknown>)[key], path);
    }
    throw new TypeError(`cannot look up ${JSON.stringify(typeof key === "bigint" ? key.toString() : key)} in a ${describe(v)} (at ${this.path || "the root"})`);
  }
  async value(): Promise<unknown> {
    return this.v;
  }
  async slice(...axes: AxisSelection[]): Promise<NDArray> {
    const reader = this.kind === "array" ? arrayReaderOf(this.v as NDArray) : undefined;
    if (reader === undefined) {
      throw new TypeError(`slice() is for arrays, not a decoded ${describe(this.v)} (at ${this.path || "the root"})`);
    }
    return markArray(await reader.slice(...axes));
  }
  async raw(): Promise<Uint8Array> {
    if (this.stored === undefined) {
      throw new TypeError(`a value selected from an array has no stored bytes of its own (at ${this.path || "the root"})`);
    }
    return this.stored;
  }
  async storedSize(): Promise<number> {
    return (await this.raw()).length;
  }
}

/** An in-memory `ArrayReader` over a decoded array's stored element bytes, so a small array
 * read whole is sliced (and indexed by a path) as a lazy one is. */
function arrayReaderOf(x: NDArray): ArrayReader | undefined {
  const stored = storedArray(x);
  if (stored === undefined) return undefined;
  const { header, elements } = stored;
  return new ArrayReader(header, async (offset, length) => elements.subarray(offset, offset + length));
}

function describe(v: unknown): string {
  if (v === null) return "None";
  if (isNDArray(v)) return "array";
  if (v instanceof Uint8Array) return "bytes";
  if (v instanceof Date) return "datetime";
  return typeof v;
}

/** The root's view: of its node, or of the whole data decoded (and checked) when it has none. */
export async function rootView(a: Archive): Promise<LazyView> {
  const root = a.body.root;
  if (root.len) return a.view(0, a.body.dataLength, root, "");
  const data = await a.readData(0, a.body.dataLength);
  return new PlainView(a.decodeChecked(data), "", data);
}

