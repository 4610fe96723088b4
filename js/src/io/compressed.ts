/**
 * Compressed archives (2.0 and 2.1): a Body served from zstd frames (docs/format.md,
 * "Compressed archives (format 2.1)" and "Format 2.0, still read").
 *
 * Opening reads the section's last min(S, 8192) bytes (2.1: the footer and nearly always the
 * whole index; 2.0: the seek table and the filter table), and a second read only when they are
 * longer. A 2.1 page table is read the first time a frame of its page is needed, a dictionary
 * the first time a frame names it; both are kept. Frames are found by bisection (pages, then
 * the page's frames), decompressed once while they stay in a bounded LRU cache (shuffled
 * frames are kept unshuffled), and checked as the spec's table says. A read inside one raw
 * frame (filter code 2) is read in place, 12 bytes into the frame, without decompressing.
 */
import type { Body, RootRef } from "./body.js";
import type { Source } from "./source.js";
import { HEADER_SIZE, type Header, type Trailer } from "../format/container.js";
import { CorruptedError, TruncatedError } from "../errors.js";
import { concatBytes } from "../util/bytes.js";
import {
  FOOTER_SIZE,
  INDEX_READ,
  MAX_FRAME,
  MIN_FRAME,
  RAW,
  RAW_HEAD,
  dictionaryFrame,
  dictionaryOf,
  filterOf,
  indexSize,
  parseIndex,
  parsePage,
  parseSeekTable,
  rawFrameFits,
  seekTableSize,
  shuffleOf,
  tablesSize,
  type Page,
  type SectionIndex,
} from "../format/section.js";
import { unshuffle } from "../format/shuffle.js";
import { decompressFrame, dictionaryBlocks, type Dictionary } from "./zstd.js";

/** One zstd frame of a compressed archive (Python's `FrameInfo`, same names). */
export interface FrameInfo {
  /** Where it is stored in the file, and its stored bytes. */
  offset: number;
  size: number;
  /** The logical bytes it holds, offsets as in a plain archive (16 + data or TOC offset). */
  plain_offset: number;
  plain_size: number;
  /** 0: none; 1: byte shuffle of elements of `parameter` bytes; 2: raw. */
  filter: number;
  parameter: number;
  /** The dictionary it was compressed with (0: none). */
  dictionary: number;
}

/** Bytes of decompressed frames kept (least recently used first out). */
export const FRAME_CACHE_BYTES = 32 << 20;
/** Bytes of dictionaries kept loaded (the one in use always stays). */
export const DICT_CACHE_BYTES = 64 << 20;
/** A read of a raw frame's bytes for the first time reads its head with them when they lie
 * this close to its start (one request instead of two). */
const RAW_HEAD_JOIN = 1 << 14;
/** Stored bytes read at once for the frames of a read that spans several. */
const GROUP_BYTES = 8 << 20;

export async function openCompressedBody(source: Source, header: Header, trailer: Trailer, end: number): Promise<Body> {
  const S = trailer.dataLen;
  if (S < FOOTER_SIZE) {
    throw new CorruptedError(`compressed section of ${S} bytes cannot hold its ${header.minor >= 1 ? "index" : "seek table"}`);
  }
  if (header.minor >= 1) {
    if (trailer.tocLen || trailer.rootLen) {
      throw new CorruptedError(
        `a 2.1 archive's trailer names a TOC outside its compressed section (toc_len ${trailer.tocLen}, root_len ${trailer.rootLen})`,
      );
    }
    const sectionEnd = HEADER_SIZE + S;
    const first = Math.min(S, INDEX_READ);
    let tail = await source.read(sectionEnd - first, first);
    const size = indexSize(tail.subarray(tail.length - FOOTER_SIZE), S);
    if (size > tail.length) tail = await source.read(sectionEnd - size, size);
    const index = parseIndex(tail, S);
    return new CompressedBody(source, header, trailer, end, index, null);
  }
  // 2.0: the seek table and the filter table end the data section; the TOC follows it, plain
  const sectionEnd = HEADER_SIZE + S;
  const first = Math.min(S, INDEX_READ);
  let tail = await source.read(sectionEnd - first, first);
  const want = tablesSize(seekTableSize(tail.subarray(tail.length - FOOTER_SIZE), S), S);
  if (want > tail.length) tail = await source.read(sectionEnd - want, want);
  const page = parseSeekTable(tail, S);
  return new CompressedBody(source, header, trailer, end, null, page);
}

/** A compressed archive's plain data and TOC. */
export class CompressedBody implements Body {
  readonly compression = "zstd" as const;
  readonly nodeWindow = 0;
  readonly major: number;
  readonly minor: number;
  readonly dataLength: number;
  readonly tocLength: number;
  readonly root: RootRef;
  readonly threshold: number;
  readonly dataCrc: number;
  /** Bytes of the compressed section (S). */
  readonly storedSize: number;
  /** Frames decompressed so far (a cached frame is not counted again). */
  framesDecompressed = 0;
  /** Dictionaries read and decompressed so far. */
  dictionariesLoaded = 0;

  /** Total frames, frames per page, and each page's first logical offset. */
  private readonly frameCount: number;
  private readonly perPage: number;
  private readonly firsts: Float64Array;
  /** Logical bytes in frames: D + T (2.1) or D (2.0). */
  private readonly plain: number;
  private readonly pages = new Map<number, Page>();
  private readonly pageLoads = new Map<number, Promise<Page>>();
  private readonly cache = new Map<number, Uint8Array>();
  private cacheBytes = 0;
  private readonly inflight = new Map<number, Promise<Uint8Array>>();
  private readonly dicts = new Map<number, Dictionary>();
  private readonly dictLoads = new Map<number, Promise<Dictionary>>();
  private dictBytes = 0;
  /** Raw frames whose head was checked (their bytes may be read in place). */
  private readonly rawChecked = new Set<number>();

  constructor(
    readonly source: Source,
    header: Header,
    trailer: Trailer,
    readonly end: number,
    private readonly index: SectionIndex | null,
    page: Page | null,
  ) {
    this.major = header.major;
    this.minor = header.minor;
    this.threshold = trailer.threshold;
    this.dataCrc = trailer.dataCrc;
    this.storedSize = trailer.dataLen;
    if (index !== null) {
      this.dataLength = index.data;
      this.tocLength = index.toc;
      this.root = { pos: index.rootPos, len: index.rootLen };
      this.frameCount = index.frames;
      this.perPage = index.perPage || 1;
      this.firsts = index.firsts.length ? index.firsts : Float64Array.of(0);
      this.plain = index.data + index.toc;
    } else {
      const p = page as Page;
      this.dataLength = p.logical[p.count];
      this.tocLength = trailer.tocLen;
      this.root = { pos: trailer.rootPos, len: trailer.rootLen };
      this.frameCount = p.count;
      this.perPage = Math.max(p.count, 1);
      this.firsts = Float64Array.of(0);
      this.plain = this.dataLength;
      this.pages.set(0, p);
    }
  }

  readData(offset: number, length: number): Promise<Uint8Array> {
    if (!(offset >= 0 && length >= 0 && offset + length <= this.dataLength)) {
      return Promise.reject(
        new TruncatedError(`a read of ${length} bytes at data offset ${offset} goes past the data (${this.dataLength} bytes)`),
      );
    }
    return this.readLogical(offset, length);
  }

  readToc(offset: number, length: number): Promise<Uint8Array> {
    if (!(offset >= 0 && length >= 0 && offset + length <= this.tocLength)) {
      return Promise.reject(
        new TruncatedError(`a read of ${length} bytes at TOC offset ${offset} goes past the TOC (${this.tocLength} bytes)`),
      );
    }
    if (this.index === null) return this.source.read(HEADER_SIZE + this.storedSize + offset, length); // 2.0: plain
    return this.readLogical(this.dataLength + offset, length);
  }

  /** `readData`, but every frame the bytes lie in is decompressed and checked, its content
   * checksum included, raw frames too (Python's `read_checked`, for `verify()`). */
  readDataChecked(offset: number, length: number): Promise<Uint8Array> {
    if (!(offset >= 0 && length >= 0 && offset + length <= this.dataLength)) return this.readData(offset, length);
    return this.readLogical(offset, length, false);
  }

  /** `readToc`, checked as `readDataChecked` (a 2.0 TOC is plain: read as it is). */
  readTocChecked(offset: number, length: number): Promise<Uint8Array> {
    if (this.index === null || !(offset >= 0 && length >= 0 && offset + length <= this.tocLength)) {
      return this.readToc(offset, length);
    }
    return this.readLogical(this.dataLength + offset, length, false);
  }

  /** The frames, in order, as Python's `LazyReader.frames()` lists them (offsets in the file;
   * plain offsets as in a plain archive: the data, then in 2.1 the TOC); page tables are read
   * as they are reached. */
  async *frames(): AsyncGenerator<FrameInfo> {
    for (let i = 0; i < this.frameCount; i++) {
      const [page, k] = await this.at(i);
      yield {
        offset: HEADER_SIZE + page.stored[k],
        size: page.stored[k + 1] - page.stored[k],
        plain_offset: HEADER_SIZE + page.logical[k],
        plain_size: page.logical[k + 1] - page.logical[k],
        filter: filterOf(page, k),
        parameter: page.params === null ? 0 : page.params[k],
        dictionary: dictionaryOf(page, k),
      };
    }
  }

  /** The plain bytes of dictionary `d` (from 1): a raw-content zstd dictionary. */
  async dictionaryBytes(d: number): Promise<Uint8Array> {
    return (await this.dictionary(d)).bytes;
  }

  describe(): Record<string, unknown> {
    const index = this.index;
    return {
      compression: "zstd",
      data_size: this.dataLength,
      stored_data_size: this.storedSize,
      toc_offset: HEADER_SIZE + this.dataLength,
      toc_size: this.tocLength,
      free_space: 0,
      ratio: this.storedSize ? this.dataLength / this.storedSize : 0,
      frames: this.frameCount,
      frames_per_page: index === null ? this.frameCount : index.perPage,
      pages: index === null ? (this.frameCount ? 1 : 0) : index.pages.length,
      dictionaries: index === null ? 0 : index.dicts.length,
    };
  }

  // ---- locating frames ----

  private async page(p: number): Promise<Page> {
    const have = this.pages.get(p);
    if (have !== undefined) return have;
    let load = this.pageLoads.get(p);
    if (load === undefined) {
      load = this.loadPage(p);
      this.pageLoads.set(p, load);
      load.then(
        (page) => {
          this.pages.set(p, page);
          this.pageLoads.delete(p);
        },
        () => this.pageLoads.delete(p),
      );
    }
    return load;
  }

  private async loadPage(p: number): Promise<Page> {
    const index = this.index as SectionIndex; // (2.0 has its one page from the start)
    const entry = index.pages[p];
    const n = Math.min(index.perPage, index.frames - p * index.perPage);
    const next = index.pages[p + 1];
    const buf = await this.source.read(HEADER_SIZE + entry.at, entry.size);
    return parsePage(
      buf,
      p,
      n,
      entry,
      index.dicts.length,
      next ? next.firstLogical : this.plain,
      next ? next.firstStored : index.framesEnd,
    );
  }

  /** The page and the frame (index in the page) holding logical `x` (0 <= x < plain). */
  private async locate(x: number): Promise<[number, Page, number]> {
    const p = lastAtMost(this.firsts, 0, this.firsts.length, x);
    const page = await this.page(p);
    const k = lastAtMost(page.logical, 0, page.count, x);
    return [p, page, k];
  }

  /** Frame number `i`'s page and index in it. */
  private async at(i: number): Promise<[Page, number]> {
    const p = Math.floor(i / this.perPage);
    return [await this.page(p), i - p * this.perPage];
  }

  private where(i: number, page: Page, k: number): string {
    return `compressed frame ${i} at offset ${HEADER_SIZE + page.stored[k]}`;
  }

  // ---- reading ----

  /** Logical bytes [x, x+n); `inPlace`: raw frames' bytes are read in place (else
   * decompressed and checked as any frame). */
  private async readLogical(x: number, n: number, inPlace = true): Promise<Uint8Array> {
    if (n === 0) return new Uint8Array(0);
    const [p, page, k] = await this.locate(x);
    const i = p * this.perPage + k;
    const start = page.logical[k];
    if (x + n <= page.logical[k + 1]) {
      if (inPlace && filterOf(page, k) === RAW) return this.readInPlace(i, page, k, x - start, n);
      const plain = await this.frame(i, page, k);
      return plain.subarray(x - start, x - start + n);
    }
    return this.readSpan(i, x, n, inPlace);
  }

  /** Bytes [a, a+n) of raw frame `i`, read in place (its head checked the first time). */
  private async readInPlace(i: number, page: Page, k: number, a: number, n: number): Promise<Uint8Array> {
    const at = HEADER_SIZE + page.stored[k];
    if (this.rawChecked.has(i)) return this.source.read(at + RAW_HEAD + a, n);
    const stored = page.stored[k + 1] - page.stored[k];
    const plain = page.logical[k + 1] - page.logical[k];
    if (a <= RAW_HEAD_JOIN) {
      const buf = await this.source.read(at, RAW_HEAD + a + n);
      this.checkRaw(i, page, k, buf, stored, plain);
      return buf.subarray(RAW_HEAD + a);
    }
    this.checkRaw(i, page, k, await this.source.read(at, RAW_HEAD), stored, plain);
    return this.source.read(at + RAW_HEAD + a, n);
  }

  private checkRaw(i: number, page: Page, k: number, head: Uint8Array, stored: number, plain: number): void {
    if (!rawFrameFits(head, stored, plain)) {
      throw new CorruptedError(
        `${this.where(i, page, k)}: its page table says it is a raw frame of ${plain} bytes (${plain + 16} stored), ` +
          `but it is ${stored} bytes or its header says otherwise`,
      );
    }
    this.rawChecked.add(i);
  }

  /** A read across frames: the frames in order, the stored bytes of those not cached read
   * together (up to `GROUP_BYTES` at once). */
  private async readSpan(first: number, x: number, n: number, inPlace: boolean): Promise<Uint8Array> {
    const endX = x + n;
    const parts: Uint8Array[] = [];
    let i = first;
    while (i < this.frameCount) {
      const [page, k] = await this.at(i);
      const start = page.logical[k];
      if (start >= endX) break;
      // gather a run of uncached frames of this page whose stored bytes fit in one read
      let last = k;
      if (!this.cache.has(i) && !(inPlace && filterOf(page, k) === RAW)) {
        while (
          last + 1 < page.count &&
          page.logical[last + 1] < endX &&
          !this.cache.has(i + last + 1 - k) &&
          page.stored[last + 2] - page.stored[k] <= GROUP_BYTES
        ) {
          last++;
        }
      }
      let stored: Uint8Array | null = null;
      if (last > k) stored = await this.source.read(HEADER_SIZE + page.stored[k], page.stored[last + 1] - page.stored[k]);
      for (let kk = k; kk <= last; kk++, i++) {
        const s = page.logical[kk];
        const a = Math.max(x, s) - s;
        const b = Math.min(endX, page.logical[kk + 1]) - s;
        if (stored !== null) {
          const off = page.stored[kk] - page.stored[k];
          const data = stored.subarray(off, off + page.stored[kk + 1] - page.stored[kk]);
          if (inPlace && filterOf(page, kk) === RAW) {
            this.checkRaw(i, page, kk, data, data.length, page.logical[kk + 1] - s);
            parts.push(data.subarray(RAW_HEAD + a, RAW_HEAD + b));
          } else {
            parts.push((await this.decode(i, page, kk, data)).subarray(a, b));
          }
        } else if (inPlace && filterOf(page, kk) === RAW) {
          parts.push(await this.readInPlace(i, page, kk, a, b - a));
        } else {
          parts.push((await this.frame(i, page, kk)).subarray(a, b));
        }
      }
    }
    const out = concatBytes(parts);
    if (out.length !== n) throw new CorruptedError(`the frames hold ${out.length} of the ${n} bytes at logical offset ${x}`);
    return out;
  }

  /** Frame `i` (`k`-th of `page`) decompressed and unshuffled: cached, or read and decoded. */
  private frame(i: number, page: Page, k: number): Promise<Uint8Array> {
    const hit = this.cache.get(i);
    if (hit !== undefined) {
      this.cache.delete(i);
      this.cache.set(i, hit);
      return Promise.resolve(hit);
    }
    let job = this.inflight.get(i);
    if (job === undefined) {
      job = (async () => {
        const data = await this.source.read(HEADER_SIZE + page.stored[k], page.stored[k + 1] - page.stored[k]);
        return this.decode(i, page, k, data);
      })();
      this.inflight.set(i, job);
      const done = () => this.inflight.delete(i);
      job.then(done, done);
    }
    return job;
  }

  /** Frame `i`'s plain bytes from its stored bytes, checked, and kept in the cache. */
  private async decode(i: number, page: Page, k: number, data: Uint8Array): Promise<Uint8Array> {
    const where = this.where(i, page, k);
    const stored = page.stored[k + 1] - page.stored[k];
    const plain = page.logical[k + 1] - page.logical[k];
    const element = shuffleOf(page, k);
    if (stored < MIN_FRAME || !(plain > 0 && plain <= MAX_FRAME)) {
      throw new CorruptedError(
        `${where}: its entry in the frame table is out of bounds (${stored} stored bytes, at least ${MIN_FRAME}; ${plain} plain bytes, 1 to ${MAX_FRAME})`,
      );
    }
    if (element && plain % element) {
      throw new CorruptedError(`${where}: its filter shuffles elements of ${element} bytes, which do not divide its ${plain} bytes`);
    }
    if (filterOf(page, k) === RAW) this.checkRaw(i, page, k, data, stored, plain);
    const d = dictionaryOf(page, k);
    const dict = d ? await this.dictionary(d) : undefined;
    let out = decompressFrame(data, plain, where, dict);
    this.framesDecompressed++;
    if (element) out = unshuffle(out, element);
    this.keep(i, out);
    return out;
  }

  private keep(i: number, bytes: Uint8Array): void {
    const old = this.cache.get(i);
    if (old !== undefined) {
      this.cache.delete(i);
      this.cacheBytes -= old.length;
    }
    this.cache.set(i, bytes);
    this.cacheBytes += bytes.length;
    for (const [j, b] of this.cache) {
      if (this.cacheBytes <= FRAME_CACHE_BYTES || j === i) break;
      this.cache.delete(j);
      this.cacheBytes -= b.length;
    }
  }

  /** Dictionary `d` (from 1): read, checked and decompressed the first time, then kept. */
  private dictionary(d: number): Promise<Dictionary> {
    const have = this.dicts.get(d);
    if (have !== undefined) {
      this.dicts.delete(d);
      this.dicts.set(d, have);
      return Promise.resolve(have);
    }
    let load = this.dictLoads.get(d);
    if (load === undefined) {
      load = this.loadDictionary(d);
      this.dictLoads.set(d, load);
      const done = () => this.dictLoads.delete(d);
      load.then(done, done);
    }
    return load;
  }

  private async loadDictionary(d: number): Promise<Dictionary> {
    const entries = (this.index as SectionIndex).dicts;
    if (!(d >= 1 && d <= entries.length)) {
      throw new CorruptedError(`compressed section: a frame names dictionary ${d}; the section has ${entries.length}`);
    }
    const { at, size, plain } = entries[d - 1];
    const record = await this.source.read(HEADER_SIZE + at, size);
    const frame = dictionaryFrame(record, d);
    const bytes = decompressFrame(frame, plain, `compressed section: dictionary ${d} at offset ${HEADER_SIZE + at}`);
    this.dictionariesLoaded++;
    const dict: Dictionary = { bytes, blocks: dictionaryBlocks(bytes) };
    this.dicts.set(d, dict);
    this.dictBytes += bytes.length;
    for (const [e, kept] of this.dicts) {
      if (this.dictBytes <= DICT_CACHE_BYTES || e === d) break;
      this.dicts.delete(e);
      this.dictBytes -= kept.bytes.length;
    }
    return dict;
  }
}

/** The last index j in [lo, hi) with a[j] <= x (lo when none is: callers pass x >= a[lo]). */
function lastAtMost(a: Float64Array, lo: number, hi: number, x: number): number {
  let l = lo, h = hi; // invariant: a[l] <= x (or l = lo), answer in [l, h)
  while (h - l > 1) {
    const mid = (l + h) >>> 1;
    if (a[mid] <= x) l = mid;
    else h = mid;
  }
  return l;
}
