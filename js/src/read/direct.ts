/**
 * Key lookups in a direct-indexed dict (docs/format.md, node type 10; Python's `DirectIndex`
 * in msglc/read/dict_index.py), making the same storage reads as Python's, in the same order:
 *
 * 1. one read of the chunks of records that hold the key's window (each chunk's CRC checked),
 *    none when every one of them is kept: chunks are kept once checked while the dict's
 *    records take at most `INDEX_MEMORY.records`;
 * 2. for each record of the window with the key's fingerprint, one read of the entry it
 *    names (`entry_read` bytes, at least the key's and one more, at most 64 KB, clipped to
 *    the dict's end),
 *    and more only where the entry does not fit (`EntryWindow`, Python's `_Window`).
 *
 * Entries whose value has a node of its own are answered from the node (views.ts) and never
 * asked for here.
 */
import { CorruptedError } from "../errors.js";
import { crc32 } from "../util/crc32.js";
import { u32, equalBytes } from "../util/bytes.js";
import { itemEnd } from "../format/msgpack.js";
import {
  chunkAt,
  fingerprintBits,
  fingerprintOf,
  firstsOf,
  keyHash,
  splitRecord,
  recordFp,
  window,
  type Hash,
} from "../format/direct.js";
import type { IndexedMapNode } from "../format/nodes.js";
import { INDEX_MEMORY, type Found, type IndexReads } from "./lookup.js";

/** How much an entry's next read asks for (Python's `WALK_OVER`), clipped to the dict's end:
 * an item across the end of what was read is read again from its start, this much or twice
 * that; a long string or bytes value is stepped over by its header and then read alone. */
/** The first read of an entry asks for at most this much (Python: format/direct.py FIRST_READ_MAX). */
const FIRST_READ_MAX = 65536;

export const WALK_OVER = 1 << 20;

/** The direct index of one dict: `find` gives the value of an encoded key, or null. */
export class DirectIndex {
  private readonly firsts: Uint32Array;
  private readonly kept: Map<number, Uint8Array> | null;
  private readonly fpBits: number;

  constructor(
    private readonly a: IndexReads,
    private readonly node: IndexedMapNode,
    /** The dict's data offset. */
    private readonly base: number,
  ) {
    this.firsts = firstsOf(node.groups);
    this.kept = node.offsWidth * node.n <= INDEX_MEMORY.records ? new Map() : null;
    this.fpBits = fingerprintBits(node.offsWidth, node.offBits);
  }

  private damaged(why: string): CorruptedError {
    return new CorruptedError(`dict at data offset ${this.base} (direct index at TOC offset ${this.node.region.pos}): ${why}`);
  }

  /** The value of the key encoded as `kb`, or null when the dict does not hold it. */
  async find(kb: Uint8Array): Promise<Found | null> {
    const node = this.node;
    const h = keyHash(kb);
    const fp = fingerprintOf(h.hi, h.lo, this.node.pageBits, this.fpBits);
    const first = node.offs[0];
    const end = node.offs[node.offs.length - 1];
    let offs = this.candidates(h, fp);
    if (offs instanceof Promise) offs = await offs; // (no promise round trip when the chunks are kept)
    for (const off of offs) {
      if (!(off >= first && off < end)) throw this.damaged(`a record names its offset ${off}, outside its entries (${first}..${end - 1})`);
      // (at least the key and one byte more in the first read, as Python's reader)
      const size = Math.min(Math.max(node.entryRead, kb.length + 1), FIRST_READ_MAX, end - off);
      const head = await this.a.readData(this.base + off, size);
      const whole = this.inRead(head, kb, fp, this.base + off);
      if (whole !== undefined) {
        if (whole === null) continue; // another key, its fingerprint checked
        return { at: this.base + off + whole[0], bytes: head.subarray(whole[0], whole[1]) };
      }
      const entry = new EntryWindow(this.a, this.base, off, end, size, head);
      const keyEnd = await entry.itemEnd(off);
      const stored = await entry.bytes(off, keyEnd);
      if (equalBytes(stored, kb)) {
        const valueEnd = await entry.itemEnd(keyEnd);
        return { at: this.base + keyEnd, bytes: await entry.bytes(keyEnd, valueEnd) };
      }
      const other = keyHash(stored);
      if (fingerprintOf(other.hi, other.lo, this.node.pageBits, this.fpBits) !== fp) {
        throw this.damaged(`the entry at data offset ${this.base + off} does not match its record`);
      }
    }
    return null;
  }

  /** The usual entry, whole in its first read `head`: where its value starts and ends when its
   * key is `kb`, null for another key (whose hash must have the record's fingerprint `fp`), and
   * undefined when the entry runs past the read (``EntryWindow`` reads on, as Python does). */
  private inRead(head: Uint8Array, kb: Uint8Array, fp: number, where: number): [number, number] | null | undefined {
    const keyEnd = itemEnd(head, 0, where);
    if (keyEnd < 0 || keyEnd > head.length) return undefined;
    const stored = head.subarray(0, keyEnd);
    if (!equalBytes(stored, kb)) {
      const other = keyHash(stored);
      // (a key without the record's fingerprint: the window's checks say what is wrong)
      return fingerprintOf(other.hi, other.lo, this.node.pageBits, this.fpBits) === fp ? null : undefined;
    }
    const valueEnd = itemEnd(head, keyEnd, where);
    return valueEnd < 0 || valueEnd > head.length ? undefined : [keyEnd, valueEnd];
  }

  /** The offsets that the records of `h`'s window name with fingerprint `fp`: the window
   * ascends by fingerprint, so bisection finds the first and the run ends at the first other
   * (as Python's `direct.candidates`, whatever a damaged window's order). */
  private candidates(h: Hash, fp: number): number[] | Promise<number[]> {
    const node = this.node;
    const [start, stop] = window(h, this.firsts, node.pageBits, node.lo, node.hi);
    if (start >= stop) return [];
    const chunk = node.chunk;
    const c0 = Math.floor(start / chunk);
    const c1 = Math.floor((stop - 1) / chunk);
    const kept = this.kept;
    let all = kept !== null;
    for (let c = c0; all && c <= c1; c++) all = kept!.has(c);
    if (all) return this.matching(kept!, start, stop, fp);
    return this.chunks(c0, c1).then((chunks) => this.matching(chunks, start, stop, fp));
  }

  /** The offsets of the records `[start, stop)` (in `chunks`) with fingerprint `fp`. */
  private matching(chunks: Map<number, Uint8Array>, start: number, stop: number, fp: number): number[] {
    const node = this.node;
    const chunk = node.chunk;
    const width = node.offsWidth;
    const offBits = node.offBits;
    const c0 = Math.floor(start / chunk);
    const first = chunks.get(c0)!; // (a window lies in one or two chunks: no map lookup for most probes)
    const fpAt = (i: number) => {
      const c = Math.floor(i / chunk);
      return recordFp(c === c0 ? first : chunks.get(c)!, (i - c * chunk) * width, width, offBits);
    };
    let lo = start;
    let hi = stop;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (fpAt(mid) < fp) lo = mid + 1;
      else hi = mid;
    }
    const out: number[] = [];
    for (let i = lo; i < stop && fpAt(i) === fp; i++) {
      const c = Math.floor(i / chunk);
      out.push(splitRecord(chunks.get(c)!, (i - c * chunk) * width, width, offBits).off);
    }
    return out;
  }

  /** The records of chunks `c0..c1`, each checked: from those kept, or all read in one read
   * when any is not (as Python does). */
  private async chunks(c0: number, c1: number): Promise<Map<number, Uint8Array>> {
    const node = this.node;
    const kept = this.kept;
    if (kept !== null) {
      let all = true;
      for (let c = c0; all && c <= c1; c++) all = kept.has(c);
      if (all) return kept;
    }
    const width = node.offsWidth;
    const step = node.chunk * width + 4;
    const last = Math.min(node.n, (c1 + 1) * node.chunk) - c1 * node.chunk; // records in chunk c1
    const at = node.region.pos + chunkAt(c0, width, node.chunk);
    const data = await this.a.readToc(at, (c1 - c0) * step + last * width + 4);
    const out = kept ?? new Map<number, Uint8Array>();
    for (let c = c0; c <= c1; c++) {
      const from = (c - c0) * step;
      const size = c < c1 ? step - 4 : last * width;
      const records = data.subarray(from, from + size);
      if (crc32(records) !== u32(data, from + size)) throw this.damaged(`records chunk ${c} at TOC offset ${at + from} fails its checksum`);
      out.set(c, records);
    }
    return out;
  }
}

/**
 * Reads of one entry's items, starting with `first` bytes (Python's `_Window`): an item's
 * end is found from its headers, so a long string or bytes value is stepped over and read
 * alone; a small container that crosses the piece's end is read again from its start.
 */
class EntryWindow {
  private at: number;
  private buf: Uint8Array | null;
  /** Whether `itemEnd` has run: its first call grows the first read as Python's does. */
  private begun = false;

  constructor(
    private readonly a: IndexReads,
    private readonly base: number,
    /** Where the entry starts (relative to `base`). */
    private readonly start: number,
    /** The dict's end (relative to `base`): no item runs past it. */
    private readonly stop: number,
    private readonly first: number,
    /** The entry's first read (`first` bytes at `start`), when already made. */
    head: Uint8Array | null = null,
  ) {
    this.at = start;
    this.buf = head;
  }

  private damaged(why: string): CorruptedError {
    return new CorruptedError(`dict entry at data offset ${this.base + this.start}: ${why}`);
  }

  /** Where the item at `pos` (relative to the dict) ends. */
  async itemEnd(pos: number): Promise<number> {
    if (pos >= this.stop) throw this.damaged("an entry runs past the dict's end");
    let size = this.begun ? WALK_OVER : this.first;
    this.begun = true;
    for (;;) {
      const buf = this.buf;
      if (buf !== null && pos - this.at >= 0 && pos - this.at < buf.length) {
        const end = itemEnd(buf, pos - this.at, this.base + this.at);
        if (end >= 0) {
          if (this.at + end > this.stop) throw this.damaged("an item runs past the dict's end");
          return this.at + end;
        }
        if (this.at + buf.length >= this.stop) throw this.damaged("an item runs past the dict's end");
        size = Math.max(size, 2 * buf.length);
      }
      this.buf = await this.a.readData(this.base + pos, Math.min(size, this.stop - pos));
      this.at = pos;
    }
  }

  /** The dict's bytes `[pos, end)`, an item `itemEnd` found. */
  async bytes(pos: number, end: number): Promise<Uint8Array> {
    const buf = this.buf;
    if (buf !== null && this.at <= pos && end <= this.at + buf.length) return buf.subarray(pos - this.at, end - this.at);
    return this.a.readData(this.base + pos, end - pos);
  }
}
