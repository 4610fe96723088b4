/**
 * The records of a compressed section (docs/format.md, "Compressed archives (format 2.1)":
 * "The records"; and "Format 2.0, still read": the seek table and the filter table). Pure
 * functions over bytes; each check is the spec's ("What a reader checks"), with its error.
 * Every offset here is from the section's start (file offset 16).
 */
import { CorruptedError, UnsupportedVersionError } from "../errors.js";
import { crc32 } from "../util/crc32.js";
import { u16, u32, u64 } from "../util/bytes.js";

export const FOOTER_SIZE = 9;
export const SEEKABLE_MAGIC = 0x8f92eab1;
export const INDEX_DESCRIPTOR = 0x7c;
export const INDEX_MAGIC = 0x184d2a5a;
export const PAGE_MAGIC = 0x184d2a5b;
export const DICT_MAGIC = 0x184d2a5c;
export const FILTER_MAGIC = 0x184d2a5d;
export const SEEK_MAGIC = 0x184d2a5e;
/** Bytes read from the section's end at open: the footer and, nearly always, the whole index. */
export const INDEX_READ = 8192;
export const MAX_INDEX = 1 << 20;
export const MAX_PAGE_FRAMES = 87381; // floor(1 MiB / 12): a page table of at most about 1 MiB
export const MAX_DICT = 1 << 20;
export const MAX_FRAME = 1 << 20;
export const MIN_FRAME = 9;
export const RAW_HEAD = 12;
export const RAW_TAIL = 4;
export const RAW_MAX = 1 << 17;
export const NO_FILTER = 0;
export const SHUFFLE = 1;
export const RAW = 2;
const INDEX_FIXED = 69; // an index with no pages and no dictionaries
const TAG_I = [0x4d, 0x4c, 0x43, 0x49]; // "MLCI"
const TAG_P = [0x4d, 0x4c, 0x43, 0x50]; // "MLCP"
const TAG_D = [0x4d, 0x4c, 0x43, 0x44]; // "MLCD"
const TAG_F = [0x4d, 0x4c, 0x43, 0x46]; // "MLCF"
const SAFE = Number.MAX_SAFE_INTEGER;

function hasTag(b: Uint8Array, at: number, tag: number[]): boolean {
  return b[at] === tag[0] && b[at + 1] === tag[1] && b[at + 2] === tag[2] && b[at + 3] === tag[3];
}

function hex(x: number): string {
  return "0x" + x.toString(16);
}

export interface PageEntry {
  /** Offset of the page table record. */
  at: number;
  firstLogical: number;
  firstStored: number;
  /** Size of the page table record. */
  size: number;
}

export interface DictEntry {
  at: number;
  size: number;
  plain: number;
}

export interface SectionIndex {
  /** The index record's size (it ends the section). */
  size: number;
  data: number;
  toc: number;
  rootPos: number;
  rootLen: number;
  frames: number;
  perPage: number;
  pages: PageEntry[];
  dicts: DictEntry[];
  /** The first logical offset of each page, for bisection. */
  firsts: Float64Array;
  /** Where the frames end: the lowest offset of a page table, a dictionary or the index. */
  framesEnd: number;
}

/** The frames of one page (or of a 2.0 section): frame k holds logical [logical[k],
 * logical[k+1]) and is stored at [stored[k], stored[k+1]). */
export interface Page {
  count: number;
  stored: Float64Array;
  logical: Float64Array;
  /** Filter codes; null: no frame is filtered (a 2.0 section without a filter table). */
  codes: Uint8Array | null;
  params: Uint8Array | null;
  /** Dictionary numbers (u16 little-endian pairs); null: none. */
  dicts: Uint8Array | null;
}

export function dictionaryOf(page: Page, k: number): number {
  return page.dicts === null ? 0 : u16(page.dicts, 2 * k);
}

export function filterOf(page: Page, k: number): number {
  return page.codes === null ? NO_FILTER : page.codes[k];
}

/** The element size frame k is byte-shuffled by, or 0. */
export function shuffleOf(page: Page, k: number): number {
  return page.codes !== null && page.codes[k] === SHUFFLE && page.params !== null ? page.params[k] : 0;
}

/** The index's size from the section's last 9 bytes, checked before the index is read. */
export function indexSize(footer: Uint8Array, sectionSize: number): number {
  const size = u32(footer, 0);
  const descriptor = footer[4];
  const magic = u32(footer, 5);
  if (magic !== SEEKABLE_MAGIC) {
    throw new CorruptedError(
      `compressed section: no index (expected footer magic ${hex(SEEKABLE_MAGIC)} at the section's end, found ${hex(magic)})`,
    );
  }
  if (descriptor !== INDEX_DESCRIPTOR) {
    throw new UnsupportedVersionError(
      `compressed section: index descriptor ${hex(descriptor)} is not one this reader reads (expected ${hex(INDEX_DESCRIPTOR)}` +
        (descriptor === 0 ? "; this looks like a 2.0 seek table under a 2.1 header)" : ")"),
    );
  }
  if (!(INDEX_FIXED <= size && size <= Math.min(MAX_INDEX, sectionSize))) {
    throw new CorruptedError(
      `compressed section: its footer names an index of ${size} bytes (expected ${INDEX_FIXED} to ${Math.min(MAX_INDEX, sectionSize)})`,
    );
  }
  return size;
}

function bad(why: string): CorruptedError {
  return new CorruptedError(`compressed section: the index is inconsistent: ${why}`);
}

/** The index from `buf`, the section's last bytes (at least the index), checked. */
export function parseIndex(buf: Uint8Array, sectionSize: number): SectionIndex {
  const size = indexSize(buf.subarray(buf.length - FOOTER_SIZE), sectionSize);
  const v = buf.subarray(buf.length - size);
  const magic = u32(v, 0);
  const content = u32(v, 4);
  const P = u32(v, 48);
  const K = u32(v, 52);
  const bodyEnd = size - 4 - FOOTER_SIZE;
  if (magic !== INDEX_MAGIC || content !== size - 8 || !hasTag(v, 8, TAG_I) || bodyEnd !== 56 + 28 * P + 16 * K) {
    throw new CorruptedError(
      `compressed section: the index at section offset ${sectionSize - size} is not well formed ` +
        `(magic ${hex(magic)}, content size ${content} of ${size - 8}, ${P} pages and ${K} dictionaries in ${size} bytes)`,
    );
  }
  const crc = crc32(v.subarray(8, bodyEnd));
  if (crc !== u32(v, bodyEnd)) {
    throw new CorruptedError(`compressed section: the index at section offset ${sectionSize - size} fails its checksum`);
  }
  const data = u64(v, 12);
  const toc = u64(v, 20);
  const rootPos = u64(v, 28);
  const rootLen = u32(v, 36);
  const frames = u32(v, 40);
  const perPage = u32(v, 44);
  const pages: PageEntry[] = [];
  const firsts = new Float64Array(P);
  for (let p = 0; p < P; p++) {
    const at = 56 + 28 * p;
    const entry = { at: u64(v, at), firstLogical: u64(v, at + 8), firstStored: u64(v, at + 16), size: u32(v, at + 24) };
    pages.push(entry);
    firsts[p] = entry.firstLogical;
  }
  const dicts: DictEntry[] = [];
  for (let d = 0; d < K; d++) {
    const at = 56 + 28 * P + 16 * d;
    dicts.push({ at: u64(v, at), size: u32(v, at + 8), plain: u32(v, at + 12) });
  }
  const end = sectionSize - size;
  // the checks of "What a reader checks", in the order Python makes them
  const plain = data + toc;
  if (!(plain <= SAFE && rootPos <= SAFE)) throw bad(`its lengths (data ${data}, TOC ${toc}, root at ${rootPos}) pass 2^53`);
  if ((frames && !perPage) || (perPage && P !== Math.ceil(frames / perPage)) || (frames === 0) !== (P === 0)) {
    throw bad(`${frames} frames do not make ${P} pages of ${perPage}`);
  }
  if ((rootLen && !(rootPos + rootLen <= toc)) || (plain === 0) !== (frames === 0)) {
    throw bad(`its root node ${rootPos}+${rootLen} lies outside its TOC (${toc} bytes), or ${frames} frames hold ${plain} bytes`);
  }
  if (P && (pages[0].firstLogical !== 0 || pages[0].firstStored !== 0)) throw bad("its first page does not start the section");
  for (let p = 1; p < P; p++) {
    if (!(pages[p - 1].firstLogical < pages[p].firstLogical && pages[p - 1].firstStored < pages[p].firstStored)) {
      throw bad(`its pages' offsets do not rise (page ${p})`);
    }
  }
  if (P && !(pages[P - 1].firstLogical < plain)) throw bad(`its last page starts at logical ${pages[P - 1].firstLogical}, not below ${plain}`);
  for (const pg of pages) {
    if (!(pg.at + pg.size <= end)) throw bad(`a page table at ${pg.at}+${pg.size} lies outside the section before the index (${end})`);
  }
  for (const d of dicts) {
    if (!(d.at + d.size <= end)) throw bad(`a dictionary at ${d.at}+${d.size} lies outside the section before the index (${end})`);
  }
  for (const d of dicts) {
    if (!(d.plain > 0 && d.plain <= MAX_DICT)) throw bad(`a dictionary of ${d.plain} bytes is not 1 to ${MAX_DICT} bytes`);
  }
  if (perPage > MAX_PAGE_FRAMES) throw bad(`${perPage} frames per page is more than ${MAX_PAGE_FRAMES}`);
  for (let p = 0; p < P; p++) {
    const n = Math.min(perPage, frames - p * perPage);
    if (pages[p].size !== pageSize(n)) throw bad(`page table ${p} of ${n} frames is ${pages[p].size} bytes, not ${pageSize(n)}`);
  }
  let framesEnd = end;
  for (const pg of pages) framesEnd = Math.min(framesEnd, pg.at);
  for (const d of dicts) framesEnd = Math.min(framesEnd, d.at);
  return { size, data, toc, rootPos, rootLen, frames, perPage, pages, dicts, firsts, framesEnd };
}

export function pageSize(frames: number): number {
  return 20 + 12 * frames;
}

/** Page table `p` of `n` frames from its record `buf` (its index entry's size), checked: its
 * structure and CRC, its filters and dictionaries, its raw frames' sizes, and that its frames
 * end at `endLogical` and `endStored` (where the next page, or the records, start). */
export function parsePage(
  buf: Uint8Array,
  p: number,
  n: number,
  entry: PageEntry,
  dictCount: number,
  endLogical: number,
  endStored: number,
): Page {
  const where = `compressed section: page table ${p} at section offset ${entry.at}`;
  if (buf.length !== pageSize(n)) throw new CorruptedError(`${where}: ${buf.length} bytes for ${n} frames`);
  const magic = u32(buf, 0);
  const content = u32(buf, 4);
  const count = u32(buf, 12);
  if (magic !== PAGE_MAGIC || content !== buf.length - 8 || !hasTag(buf, 8, TAG_P) || count !== n) {
    throw new CorruptedError(
      `${where} is not well formed (magic ${hex(magic)}, content size ${content} of ${buf.length - 8}, ${count} frames where the index implies ${n})`,
    );
  }
  const crcAt = buf.length - 4;
  if (crc32(buf.subarray(12, crcAt)) !== u32(buf, crcAt)) throw new CorruptedError(`${where} fails its checksum`);
  const at = 16 + 8 * n;
  const codes = buf.slice(at, at + n);
  const params = buf.slice(at + n, at + 2 * n);
  const dicts = buf.slice(at + 2 * n, at + 4 * n);
  checkFilters(codes, params, 2, where);
  for (let k = 0; k < n; k++) {
    const d = u16(dicts, 2 * k);
    if (d > dictCount) {
      throw new CorruptedError(`${where}: frame ${k} names dictionary ${d}; the section has ${dictCount}`);
    }
  }
  const stored = new Float64Array(n + 1);
  const logical = new Float64Array(n + 1);
  stored[0] = entry.firstStored;
  logical[0] = entry.firstLogical;
  for (let k = 0; k < n; k++) {
    const s = u32(buf, 16 + 8 * k);
    const m = u32(buf, 20 + 8 * k);
    stored[k + 1] = stored[k] + s;
    logical[k + 1] = logical[k] + m;
    if (codes[k] === RAW && !(s === m + RAW_HEAD + RAW_TAIL && m > 0 && m <= RAW_MAX)) {
      throw new CorruptedError(
        `${where}: raw frame ${k} (at section offset ${stored[k]}) stores ${s} bytes for ${m} plain bytes ` +
          `(a raw frame stores its 1 to ${RAW_MAX} plain bytes and ${RAW_HEAD + RAW_TAIL} more)`,
      );
    }
  }
  if (logical[n] !== endLogical || stored[n] !== endStored) {
    throw new CorruptedError(
      `${where}: its frames end at logical ${logical[n]} and stored ${stored[n]}, where the next part starts at ${endLogical} and ${endStored}`,
    );
  }
  return { count: n, stored, logical, codes, params, dicts };
}

/** Filter codes (0, 1 and, from 2.1, 2) and their parameters: a parameter exactly on
 * shuffled frames, 2 to 255. */
function checkFilters(codes: Uint8Array, params: Uint8Array, maxCode: number, where: string): void {
  for (let k = 0; k < codes.length; k++) {
    if (codes[k] > maxCode) {
      throw new UnsupportedVersionError(`${where}: frame ${k} has filter ${codes[k]}, unknown to this reader (a newer writer?)`);
    }
  }
  for (let k = 0; k < codes.length; k++) {
    const shuffled = codes[k] === SHUFFLE;
    if (shuffled ? params[k] < 2 : params[k] !== 0) {
      throw new CorruptedError(`${where}: frame ${k} has filter ${codes[k]} with parameter ${params[k]}, which it cannot have`);
    }
  }
}

/** The frame of a dictionary from its record, checked (at least 12 bytes, magic, size, tag). */
export function dictionaryFrame(record: Uint8Array, d: number): Uint8Array {
  if (record.length < 12) {
    throw new CorruptedError(`compressed section: dictionary ${d}'s record of ${record.length} bytes is too short (12 at least)`);
  }
  const magic = u32(record, 0);
  const content = u32(record, 4);
  if (magic !== DICT_MAGIC || content !== record.length - 8 || !hasTag(record, 8, TAG_D)) {
    throw new CorruptedError(
      `compressed section: dictionary ${d}'s record is not well formed (magic ${hex(magic)}, content size ${content} of ${record.length - 8})`,
    );
  }
  return record.subarray(12);
}

// ---- 2.0: the seek table and the filter table ----

/** The seek table's size from the section's last 9 bytes (2.0), checked. */
export function seekTableSize(footer: Uint8Array, sectionSize: number): number {
  const count = u32(footer, 0);
  const descriptor = footer[4];
  const magic = u32(footer, 5);
  if (magic !== SEEKABLE_MAGIC) {
    throw new CorruptedError(
      `compressed data section: no seek table (expected magic ${hex(SEEKABLE_MAGIC)} at its end, found ${hex(magic)})`,
    );
  }
  if (descriptor & 0xfc) {
    throw new UnsupportedVersionError(`compressed data section: seek table descriptor ${hex(descriptor)} is not one this reader reads`);
  }
  const size = 8 + 8 * count + FOOTER_SIZE;
  if (size > sectionSize) {
    throw new CorruptedError(`compressed data section: a seek table of ${size} bytes does not fit (${sectionSize} in all)`);
  }
  return size;
}

/** Bytes to read from a 2.0 section's end to have its seek table and its filter table. */
export function tablesSize(seekSize: number, sectionSize: number): number {
  const count = (seekSize - 8 - FOOTER_SIZE) / 8;
  return Math.min(sectionSize, seekSize + 20 + 2 * count);
}

/** The frame table of a 2.0 section from its last bytes `tables` (the seek table and the
 * filter table, if any): one page; the frames and tables must tile the section. */
export function parseSeekTable(tables: Uint8Array, sectionSize: number): Page {
  const size = seekTableSize(tables.subarray(tables.length - FOOTER_SIZE), sectionSize);
  if (tables.length < size) {
    throw new CorruptedError(`compressed data section: a seek table of ${size} bytes does not fit (${sectionSize} in all)`);
  }
  const t = tables.subarray(tables.length - size);
  if (u32(t, 0) !== SEEK_MAGIC || u32(t, 4) !== size - 8) {
    throw new CorruptedError("compressed data section: the seek table is not a well-formed skippable frame");
  }
  const n = (size - 8 - FOOTER_SIZE) / 8;
  const stored = new Float64Array(n + 1);
  const logical = new Float64Array(n + 1);
  for (let k = 0; k < n; k++) {
    stored[k + 1] = stored[k] + u32(t, 8 + 8 * k);
    logical[k + 1] = logical[k] + u32(t, 12 + 8 * k);
  }
  const extra = sectionSize - size - stored[n];
  if (extra === 0) return { count: n, stored, logical, codes: null, params: null, dicts: null };
  if (extra !== 20 + 2 * n || tables.length < size + extra) {
    throw new CorruptedError(
      `compressed data section: ${n} frames of ${stored[n]} bytes and a seek table of ${size} do not make the section's ${sectionSize} bytes`,
    );
  }
  const f = tables.subarray(tables.length - size - extra, tables.length - size);
  const where = "compressed data section: the frame filter table";
  if (u32(f, 0) !== FILTER_MAGIC || u32(f, 4) !== 12 + 2 * n || !hasTag(f, 8, TAG_F) || u32(f, 12) !== n) {
    throw new CorruptedError(`${where} is not well formed`);
  }
  if (crc32(f.subarray(16, 16 + 2 * n)) !== u32(f, 16 + 2 * n)) throw new CorruptedError(`${where} fails its checksum`);
  const codes = f.slice(16, 16 + n);
  const params = f.slice(16 + n, 16 + 2 * n);
  checkFilters(codes, params, 1, where);
  return { count: n, stored, logical, codes, params, dicts: null };
}

/** Is a frame of `stored` bytes whose first 12 bytes are `head` a raw frame of `plain` bytes
 * as the spec lays it out? (Only then are its bytes read in place.) */
export function rawFrameFits(head: Uint8Array, stored: number, plain: number): boolean {
  if (!(plain > 0 && plain <= RAW_MAX && stored === plain + RAW_HEAD + RAW_TAIL && head.length >= RAW_HEAD)) return false;
  const block = 1 + plain * 8;
  return (
    head[0] === 0x28 && head[1] === 0xb5 && head[2] === 0x2f && head[3] === 0xfd && head[4] === 0xa4 &&
    u32(head, 5) === plain &&
    head[9] === (block & 0xff) && head[10] === ((block >>> 8) & 0xff) && head[11] === ((block >>> 16) & 0xff)
  );
}
