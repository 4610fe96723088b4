/**
 * Key lookups in big dicts (docs/format.md, node types 3, 6, 7 and 9): from a key's smallest
 * msgpack encoding to the bytes of its value, reading what the spec describes and no more.
 *
 * - Type 3: the page's slot (12 bytes), its records (CRC-checked), the entry's offsets, the
 *   entry. A record naming an entry whose key differs must be a true collision (same CRC).
 * - Type 6: the block offsets and the page table are read once per dict (both CRC-checked)
 *   when they take at most 1 MB, else a lookup reads its page's slot and its block's offsets;
 *   a page's records are kept once read and checked while the dict's records take at most
 *   16 MB; then the block, walked for the key.
 * - Type 7: the block offsets and chunk CRCs once (checked against the node), each 1 KB
 *   chunk of slots once (checked, kept while the slots take at most 16 MB), then the block.
 * - Type 9: the block offsets and the first keys once (both checked), bisection, the block.
 *
 * Entries whose value has a node of its own (kids) are never read: their keys are in the node,
 * and a block around them is read in pieces. Type 10 (direct) is read/direct.ts's.
 */
import { CorruptedError } from "../errors.js";
import { crc32 } from "../util/crc32.js";
import { u32, u64 } from "../util/bytes.js";
import { itemEnd, scalarEnd } from "../format/msgpack.js";
import { blockCount, blockWidth, fuseLayout, FUSE_CHUNK, keyOfId, type IndexedMapNode } from "../format/nodes.js";
import { decodeValue } from "./decode.js";
import { encodeKey } from "../format/msgpack.js";

/** What an index reads through: data offsets relative to the data section, TOC offsets to the TOC. */
export interface IndexReads {
  readData(offset: number, length: number): Promise<Uint8Array>;
  readToc(offset: number, length: number): Promise<Uint8Array>;
}

/** The value found for a key: its data offset and its bytes. */
export interface Found {
  at: number;
  bytes: Uint8Array;
}

/** What a dict's index keeps in memory (bytes). Mutable so that tests can make the reads a
 * dict of millions of keys makes on a small one. */
export const INDEX_MEMORY = {
  /** Block offsets and page table read once when they take at most this. */
  tables: 1 << 20,
  /** A page's records kept once read while all the dict's records take at most this. */
  records: 16 << 20,
};

const M64 = (1n << 64n) - 1n;

/** The fuse's 64-bit hash of a key's encoding before the seed: crc32(kb) << 32 | crc32(reversed kb). */
export function baseHash(kb: Uint8Array): bigint {
  const rev = kb.slice().reverse();
  return (BigInt(crc32(kb)) << 32n) | BigInt(crc32(rev));
}

/** `base` mixed with `seed` (murmur3's 64-bit finalizer), modulo 2^64. */
export function mix(base: bigint, seed: bigint): bigint {
  let x = base ^ ((seed * 0x9e3779b97f4a7c15n) & M64);
  x ^= x >> 33n;
  x = (x * 0xff51afd7ed558ccdn) & M64;
  x ^= x >> 33n;
  x = (x * 0xc4ceb9fe1a85ec53n) & M64;
  return x ^ (x >> 33n);
}

/** The three slots of the mixed hash `h`, one in each of three consecutive segments. */
export function slotsOf(h: bigint, segBits: number, segCount: number): [number, number, number] {
  const length = 2 ** segBits;
  const mask = BigInt(length - 1);
  const hi = Number((h * BigInt(segCount * length)) >> 64n);
  const a = Number((h >> 18n) & mask);
  const b = Number(h & mask);
  return [hi, xorNum(hi + length, a), xorNum(hi + 2 * length, b)];
}

/** XOR of two non-negative integers below 2^53 (`^` works on 32 bits only). */
function xorNum(x: number, y: number): number {
  const hx = Math.floor(x / 0x1_0000_0000);
  const hy = Math.floor(y / 0x1_0000_0000);
  return (hx ^ hy) * 0x1_0000_0000 + ((x ^ y) >>> 0);
}

function fingerprint(h: number, pageBits: number): number {
  return (((h << pageBits) >>> 0) >>> 24) & 0xff;
}

function pageOf(h: number, pageBits: number): number {
  return pageBits === 0 ? 0 : h >>> (32 - pageBits);
}

function offsAt(b: Uint8Array, i: number, width: number): number {
  return width === 4 ? u32(b, 4 * i) : u64(b, 8 * i);
}

function eq(a: Uint8Array, aStart: number, aEnd: number, kb: Uint8Array): boolean {
  if (aEnd - aStart !== kb.length) return false;
  for (let i = 0; i < kb.length; i++) if (a[aStart + i] !== kb[i]) return false;
  return true;
}

/** Compare byte strings (UTF-8 order is code point order). */
function cmpBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

const textEncoder = new TextEncoder();

interface Kid {
  start: number;
  end: number;
  kb: Uint8Array;
}

/** A big dict's index: `find` gives the value of an encoded key, or null. */
export class DictIndex {
  private offs: Uint8Array | null = null;
  private pages: Uint8Array | null = null;
  private kept: Map<number, Uint8Array> | null = null;
  private crcs: Uint8Array | null = null;
  private firsts: Array<string | number | bigint> | null = null;
  private firstBytes: Uint8Array[] | null = null;
  private readonly blocks: number;
  private readonly kids: Kid[];
  private ready: Promise<void> | null = null;
  private loaded = false;

  constructor(
    private readonly a: IndexReads,
    private readonly node: IndexedMapNode,
    /** The dict's data offset. */
    private readonly base: number,
  ) {
    this.blocks = node.type === 3 ? node.n : blockCount(node.n, node.blockBits);
    const kids: Kid[] = [];
    for (const [id, k] of node.kidKeys) {
      const kb = encodeKey(keyOfId(id));
      if (kb) kids.push({ start: node.offs[k], end: node.offs[k + 1], kb });
    }
    kids.sort((x, y) => x.start - y.start);
    this.kids = kids;
  }

  private damaged(why: string): CorruptedError {
    return new CorruptedError(`dict at data offset ${this.base} (index region at TOC offset ${this.node.region.pos}): ${why}`);
  }

  private prepare(): Promise<void> {
    if (this.ready === null) {
      this.ready = this.load().then(() => {
        this.loaded = true;
      });
      this.ready.catch(() => {
        this.ready = null;
      });
    }
    return this.ready;
  }

  private async load(): Promise<void> {
    const node = this.node;
    const region = node.region.pos;
    const w = node.offsWidth;
    const offsLen = (this.blocks + 1) * w;
    if (node.type === 6) {
      const recordsAt = offsLen + (2 ** node.pageBits + 1) * 8;
      if ((1 + blockWidth(this.blocks)) * node.n <= INDEX_MEMORY.records) this.kept = new Map();
      if (recordsAt > INDEX_MEMORY.tables) return;
      const head = await this.a.readToc(region, recordsAt);
      const offs = head.subarray(0, offsLen);
      if (crc32(offs) !== node.offsCrc) throw this.damaged("block offsets fail their checksum");
      const pages = head.subarray(offsLen);
      if (crc32(pages.subarray(0, pages.length - 4)) !== u32(pages, pages.length - 4)) {
        throw this.damaged("page table fails its checksum");
      }
      this.offs = offs;
      this.pages = pages;
    } else if (node.type === 7) {
      const { crcs, slots, size } = fuseLayout(node);
      const head = await this.a.readToc(region, slots);
      const offs = head.subarray(0, crcs);
      if (crc32(offs) !== node.offsCrc) throw this.damaged("fuse block offsets fail their checksum");
      const chunkCrcs = head.subarray(crcs);
      if (crc32(chunkCrcs) !== node.crcsCrc) throw this.damaged("fuse chunk CRCs fail their checksum");
      this.offs = offs;
      this.crcs = chunkCrcs;
      if (size - slots <= INDEX_MEMORY.records) this.kept = new Map();
    } else if (node.type === 9) {
      const head = await this.a.readToc(region, offsLen + node.keysLen);
      const offs = head.subarray(0, offsLen);
      if (crc32(offs) !== node.offsCrc) throw this.damaged("sorted dict block offsets fail their checksum");
      const keysBytes = head.subarray(offsLen);
      if (crc32(keysBytes) !== node.keysCrc) throw this.damaged("sorted dict first keys fail their checksum");
      let keys: unknown;
      try {
        keys = decodeValue(keysBytes, 0, { strict: true });
      } catch (e) {
        throw this.damaged(`first keys are not msgpack (${(e as Error).message})`);
      }
      if (!Array.isArray(keys) || keys.length !== this.blocks) throw this.damaged(`first keys are not one a block`);
      const allStr = keys.every((k) => typeof k === "string");
      const allInt = keys.every((k) => typeof k === "bigint" || (typeof k === "number" && Number.isInteger(k)));
      if (!allStr && !allInt) throw this.damaged("first keys are not all str or all int");
      const bytes = allStr ? keys.map((k) => textEncoder.encode(k as string)) : null;
      for (let i = 1; i < keys.length; i++) {
        const up = bytes ? cmpBytes(bytes[i - 1], bytes[i]) < 0 : (keys[i - 1] as number) < (keys[i] as number);
        if (!up) throw this.damaged("first keys do not ascend");
      }
      this.offs = offs;
      this.firsts = keys as Array<string | number | bigint>;
      this.firstBytes = bytes;
    }
  }

  /** The value of the key encoded as `kb`, or null when the dict does not hold it. */
  async find(kb: Uint8Array): Promise<Found | null> {
    if (!this.loaded) await this.prepare();
    const node = this.node;
    if (node.type === 3) return this.findEntry(kb);
    const h = crc32(kb);
    // a lookup whose page is kept needs no read to name its blocks: no await for it
    const kept = node.type === 6 && this.pages !== null ? this.kept?.get(pageOf(h, node.pageBits)) : undefined;
    const candidates = kept !== undefined ? this.blocksOf(kept, h) : await this.candidates(kb, h);
    for (const [block, sharing] of candidates) {
      const found = await this.inBlock(kb, h, block, sharing);
      if (found) return found;
    }
    return null;
  }

  private async candidates(kb: Uint8Array, h: number): Promise<Array<[number, number]>> {
    const node = this.node;
    if (node.type === 7) {
      const [s0, s1, s2] = slotsOf(mix(baseHash(kb), node.seed), node.segBits, node.segCount);
      const b = (await this.slot(s0)) ^ (await this.slot(s1)) ^ (await this.slot(s2));
      return b >>> 0 < this.blocks ? [[b >>> 0, 1]] : [];
    }
    if (node.type === 9) return this.sortedBlock(kb);
    const bits = node.pageBits;
    const page = pageOf(h, bits);
    const size = 1 + blockWidth(this.blocks);
    const table = (this.blocks + 1) * node.offsWidth;
    let first: number;
    let pageCrc: number;
    let end: number;
    if (this.pages) {
      first = u32(this.pages, 8 * page);
      pageCrc = u32(this.pages, 8 * page + 4);
      end = u32(this.pages, 8 * page + 8);
    } else {
      const slot = await this.a.readToc(node.region.pos + table + 8 * page, 12);
      first = u32(slot, 0);
      pageCrc = u32(slot, 4);
      end = u32(slot, 8);
    }
    if (!(first <= end && end <= node.n)) throw this.damaged(`hash index page ${page} has bounds ${first}..${end} outside 0..${node.n}`);
    const recordsAt = node.region.pos + table + (2 ** bits + 1) * 8;
    let recs = this.kept?.get(page);
    if (recs === undefined) {
      recs = await this.a.readToc(recordsAt + size * first, size * (end - first));
      if (crc32(recs) !== pageCrc) throw this.damaged(`hash index page ${page} fails its checksum`);
      this.kept?.set(page, recs);
    }
    return this.blocksOf(recs, h);
  }

  /** The blocks a type-6 page's records name for hash `h`, each with how many of its keys
   * share the key's page and fingerprint. */
  private blocksOf(recs: Uint8Array, h: number): Array<[number, number]> {
    const bits = this.node.pageBits;
    const size = 1 + blockWidth(this.blocks);
    const fp = fingerprint(h, bits);
    const out: Array<[number, number]> = [];
    for (let i = 0; i < recs.length; i += size) {
      if (recs[i] !== fp) continue;
      let block = 0;
      for (let j = size - 1; j >= 1; j--) block = block * 256 + recs[i + j];
      if (block >= this.blocks) {
        throw this.damaged(`hash index page ${pageOf(h, bits)}: record ${i / size} names block ${block} of ${this.blocks}`);
      }
      const seen = out.find((c) => c[0] === block);
      if (seen) seen[1]++;
      else out.push([block, 1]);
    }
    return out;
  }

  private sortedBlock(kb: Uint8Array): Array<[number, number]> {
    const firsts = this.firsts!;
    if (firsts.length === 0) return [];
    const wantStr = kb[0] >= 0xa0 && kb[0] <= 0xbf ? true : kb[0] >= 0xd9 && kb[0] <= 0xdb;
    const isStr = this.firstBytes !== null;
    if (wantStr !== isStr) return [];
    let lo = 0;
    let hi = firsts.length;
    if (isStr) {
      const want = textEncoder.encode(decodeValue(kb, 0) as string);
      const fb = this.firstBytes!;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (cmpBytes(fb[mid], want) <= 0) lo = mid + 1;
        else hi = mid;
      }
    } else {
      const want = decodeValue(kb, 0) as number | bigint;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((firsts[mid] as number | bigint) <= want) lo = mid + 1;
        else hi = mid;
      }
    }
    const block = lo - 1;
    return block >= 0 ? [[block, 1]] : [];
  }

  private async slot(slot: number): Promise<number> {
    const node = this.node;
    const bits = node.slotBits;
    const bit = slot * bits;
    const first = Math.floor(bit / 8 / FUSE_CHUNK);
    const last = Math.floor((bit + bits - 1) / 8 / FUSE_CHUNK);
    let data = await this.chunk(first);
    if (last !== first) {
      const next = await this.chunk(last);
      const joined = new Uint8Array(data.length + next.length);
      joined.set(data);
      joined.set(next, data.length);
      data = joined;
    }
    const rel = bit - first * FUSE_CHUNK * 8;
    const lo = Math.floor(rel / 8);
    const shift = rel % 8;
    let word = 0;
    const nbytes = Math.ceil((shift + bits) / 8);
    for (let i = nbytes - 1; i >= 0; i--) word = word * 256 + (data[lo + i] ?? 0);
    return Math.floor(word / 2 ** shift) % 2 ** bits;
  }

  private async chunk(c: number): Promise<Uint8Array> {
    const kept = this.kept?.get(c);
    if (kept) return kept;
    const { slots, size } = fuseLayout(this.node);
    const chunks = Math.ceil((size - slots) / FUSE_CHUNK);
    if (!(c >= 0 && c < chunks)) throw this.damaged(`slot chunk ${c} of ${chunks}`);
    const at = slots + c * FUSE_CHUNK;
    const data = await this.a.readToc(this.node.region.pos + at, Math.min(FUSE_CHUNK, size - at));
    if (crc32(data) !== u32(this.crcs!, 4 * c)) throw this.damaged(`fuse chunk ${c} fails its checksum`);
    this.kept?.set(c, data);
    return data;
  }

  private async blockSpan(block: number): Promise<[number, number]> {
    const w = this.node.offsWidth;
    return this.spanIn(await this.a.readToc(this.node.region.pos + block * w, 2 * w), block, block);
  }

  /** Block `block`'s start and end, from block offsets `offs` whose first is block `first`'s. */
  private spanIn(offs: Uint8Array, block: number, first = 0): [number, number] {
    const node = this.node;
    const w = node.offsWidth;
    const start = offsAt(offs, block - first, w);
    const stop = offsAt(offs, block - first + 1, w);
    if (!(node.offs[0] <= start && start < stop && stop <= node.offs[node.offs.length - 1])) {
      throw this.damaged(`block ${block} points outside its dict (${start}..${stop})`);
    }
    return [start, stop];
  }

  private async inBlock(kb: Uint8Array, h: number, block: number, sharing: number): Promise<Found | null> {
    const node = this.node;
    const [start, stop] = this.offs ? this.spanIn(this.offs, block) : await this.blockSpan(block);
    let entries = Math.min(2 ** node.blockBits, node.n - block * 2 ** node.blockBits);
    // pieces of the block around the entries of values with nodes of their own
    const pieces: Array<{ at: number; bytes: Uint8Array }> = [];
    const skipped: number[] = [];
    let pos = start;
    let k = lowerBound(this.kids, start);
    if (k < this.kids.length && this.kids[k].start < stop) {
      while (k < this.kids.length && this.kids[k].start < stop) {
        const kid = this.kids[k];
        if (kid.end > stop || kid.start < pos) throw this.damaged(`block at data offset ${this.base + start} cuts through a large value's entry`);
        if (kid.start > pos) pieces.push({ at: pos, bytes: await this.a.readData(this.base + pos, kid.start - pos) });
        skipped.push(crc32(kid.kb));
        pos = kid.end;
        k++;
      }
      if (pos < stop) pieces.push({ at: pos, bytes: await this.a.readData(this.base + pos, stop - pos) });
      entries -= skipped.length;
    } else pieces.push({ at: start, bytes: await this.a.readData(this.base + start, stop - start) });
    // the keys walked past, hashed only when the key is absent (to check the index's count)
    const walkedKeys: number[] = []; // (piece, start, end) of each key walked past
    let found: Found | null = null;
    let walked = 0;
    for (let q = 0; q < pieces.length; q++) {
      const piece = pieces[q];
      const b = piece.bytes;
      let p = 0;
      while (p < b.length) {
        if (walked >= entries) throw this.damaged(`block at data offset ${this.base + start} holds more than ${entries} entries`);
        const keyEnd = scalarEnd(b, p, this.base + piece.at);
        const valueEnd = keyEnd < 0 || keyEnd >= b.length ? -1 : scalarEnd(b, keyEnd, this.base + piece.at);
        if (keyEnd < 0 || valueEnd < 0 || valueEnd > b.length) {
          throw this.damaged(`block at data offset ${this.base + start} is not ${entries} entries`);
        }
        if (found === null && eq(b, p, keyEnd, kb)) {
          found = { at: this.base + piece.at + keyEnd, bytes: b.subarray(keyEnd, valueEnd) };
        } else if (node.type === 6 && found === null) walkedKeys.push(q, p, keyEnd);
        p = valueEnd;
        walked++;
      }
    }
    if (walked !== entries) throw this.damaged(`block at data offset ${this.base + start} is not ${entries} entries`);
    if (found || node.type !== 6) return found;
    const bits = node.pageBits;
    const fp = fingerprint(h, bits);
    const page = pageOf(h, bits);
    let same = 0;
    const crcs = skipped.slice();
    for (let i = 0; i < walkedKeys.length; i += 3) {
      crcs.push(crc32(pieces[walkedKeys[i]].bytes.subarray(walkedKeys[i + 1], walkedKeys[i + 2])));
    }
    for (const c of crcs) if (fingerprint(c, bits) === fp && pageOf(c, bits) === page) same++;
    if (same !== sharing) throw this.damaged(`block at data offset ${this.base + start} does not match its hash index`);
    return null;
  }

  /** Type 3: the records of the key's hash, each naming an entry. */
  private async findEntry(kb: Uint8Array): Promise<Found | null> {
    const node = this.node;
    const n = node.n;
    const w = node.offsWidth;
    const h = crc32(kb);
    const table = (n + 1) * w;
    const records = table + (2 ** node.pageBits + 1) * 8;
    const page = pageOf(h, node.pageBits);
    const region = node.region.pos;
    const slot = await this.a.readToc(region + table + 8 * page, 12);
    const first = u32(slot, 0);
    const end = u32(slot, 8);
    if (!(first <= end && end <= n)) throw this.damaged(`hash index page ${page} has bounds ${first}..${end} outside 0..${n}`);
    const recs = await this.a.readToc(region + records + 8 * first, 8 * (end - first));
    if (crc32(recs) !== u32(slot, 4)) throw this.damaged(`hash index page ${page} fails its checksum`);
    for (let r = 0; r < recs.length; r += 8) {
      if (u32(recs, r + 4) !== h) continue;
      const entry = u32(recs, r);
      const b = entry < n ? await this.a.readToc(region + entry * w, 2 * w) : null;
      const start = b ? offsAt(b, 0, w) : 0;
      const stop = b ? offsAt(b, 1, w) : 0;
      if (!(node.offs[0] <= start && start < stop && stop <= node.offs[node.offs.length - 1])) {
        throw this.damaged(`hash index entry ${entry} points outside its dict`);
      }
      const data = await this.a.readData(this.base + start, stop - start);
      if (data.length >= kb.length && eq(data, 0, kb.length, kb)) {
        return { at: this.base + start + kb.length, bytes: data.subarray(kb.length) };
      }
      const keyEnd = itemEnd(data, 0, this.base + start);
      const stored = keyEnd < 0 || keyEnd > data.length ? new Uint8Array(0) : data.subarray(0, keyEnd);
      if (crc32(stored) !== h) throw this.damaged(`entry at data offset ${this.base + start} does not match its hash index record`);
    }
    return null;
  }
}

function lowerBound(kids: Kid[], start: number): number {
  let lo = 0;
  let hi = kids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (kids[mid].start < start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
