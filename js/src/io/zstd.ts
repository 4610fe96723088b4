/**
 * One zstd frame (RFC 8878) decompressed and checked, on `fzstd` (pure JS). fzstd neither
 * checks content checksums nor takes dictionaries, so this module:
 *
 * - walks the frame's header and block headers itself (the frame must declare its content
 *   size and a checksum, name no dictionary, and end exactly at the end of the bytes given),
 *   then checks the content checksum (the low 32 bits of XXH64) of what fzstd decodes;
 * - decodes a frame compressed with a raw-content dictionary (docs/format.md: "Dictionary
 *   number") by handing fzstd a rewritten frame whose content is the dictionary followed by
 *   the frame's: a new header (a 4-byte content size, no single-segment flag, a window that
 *   holds both, no checksum), the dictionary as raw blocks, then the frame's own blocks
 *   unchanged. Raw blocks set no entropy tables and leave the repeat offsets at their initial
 *   values, as a raw-content dictionary does, so the frame's matches that reach back into the
 *   dictionary decode exactly as zstd decodes them.
 *
 * Every failure is a `CorruptedError` whose message starts with `where` (the frame and its
 * offset); fzstd's own errors are caught and named so.
 */
import { decompress } from "fzstd";
import { CorruptedError } from "../errors.js";
import { u32 } from "../util/bytes.js";
import { xxh64Low32 } from "../util/xxh64.js";

const MAX_BLOCK = 1 << 17;
/** The largest window accepted, as libzstd's decoder by default (2^27): Python refuses more. */
const MAX_WINDOW = 1 << 27;

export interface FrameLayout {
  /** Bytes of the frame header (magic included). */
  headerSize: number;
  /** Declared content size (-1: none). */
  contentSize: number;
  checksum: boolean;
  dictId: number;
  windowSize: number;
  /** Where the blocks end (the checksum follows). */
  blocksEnd: number;
}

/** The frame's header and where its blocks end, or why it is not a zstd frame. */
export function frameLayout(data: Uint8Array): FrameLayout | string {
  if (data.length < 6) return `${data.length} bytes cannot hold a zstd frame`;
  if (u32(data, 0) !== 0xfd2fb528) return `no zstd frame magic (found 0x${u32(data, 0).toString(16)})`;
  const fhd = data[4];
  if (fhd & 0x08) return "its frame header sets the reserved bit";
  const fcsFlag = fhd >>> 6;
  const single = (fhd >>> 5) & 1;
  const checksum = ((fhd >>> 2) & 1) === 1;
  const didFlag = fhd & 3;
  const didSize = didFlag === 3 ? 4 : didFlag;
  const fcsSize = fcsFlag === 0 ? single : 1 << fcsFlag;
  let at = 5;
  let windowSize = 0;
  if (!single) {
    const wd = data[at++];
    const base = 2 ** (10 + (wd >>> 3));
    windowSize = base + (base / 8) * (wd & 7);
  }
  if (data.length < at + didSize + fcsSize) return "its frame header is cut short";
  let dictId = 0;
  for (let i = didSize - 1; i >= 0; i--) dictId = dictId * 256 + data[at + i];
  at += didSize;
  let contentSize = -1;
  if (fcsSize) {
    contentSize = 0;
    for (let i = fcsSize - 1; i >= 0; i--) contentSize = contentSize * 256 + data[at + i];
    if (fcsSize === 2) contentSize += 256;
  }
  at += fcsSize;
  if (single) windowSize = contentSize;
  const headerSize = at;
  // the blocks: each a 3-byte header and its bytes (an RLE block: one byte)
  for (;;) {
    if (at + 3 > data.length) return "its blocks run past its end";
    const bh = data[at] | (data[at + 1] << 8) | (data[at + 2] << 16);
    const last = bh & 1;
    const type = (bh >>> 1) & 3;
    const size = bh >>> 3;
    at += 3;
    if (type === 3) return `a block at byte ${at - 3} of the frame has the reserved type`;
    if (size > MAX_BLOCK) return `a block at byte ${at - 3} of the frame claims ${size} bytes (at most ${MAX_BLOCK})`;
    if (type === 2 && size > 0 && weightsNeverEnd(data, at)) {
      return `a block at byte ${at - 3} of the frame describes its Huffman weights with a table that gives one weight every state`;
    }
    at += type === 1 ? 1 : size;
    if (at > data.length) return "its blocks run past its end";
    if (last) break;
  }
  return { headerSize, contentSize, checksum, dictId, windowSize, blocksEnd: at };
}

/** A dictionary's bytes laid out as raw blocks (not last), ready to precede a frame's blocks. */
export function dictionaryBlocks(dict: Uint8Array): Uint8Array {
  const blocks = Math.ceil(dict.length / MAX_BLOCK);
  const out = new Uint8Array(dict.length + 3 * blocks);
  let o = 0;
  for (let i = 0; i < dict.length; i += MAX_BLOCK) {
    const n = Math.min(MAX_BLOCK, dict.length - i);
    const bh = n * 8; // raw, not last
    out[o] = bh & 0xff;
    out[o + 1] = (bh >>> 8) & 0xff;
    out[o + 2] = (bh >>> 16) & 0xff;
    out.set(dict.subarray(i, i + n), o + 3);
    o += 3 + n;
  }
  return out;
}

export interface Dictionary {
  /** The dictionary's plain bytes. */
  bytes: Uint8Array;
  /** The same as raw blocks (`dictionaryBlocks`). */
  blocks: Uint8Array;
}

/**
 * The content of the zstd frame `data` (exactly one frame, nothing after it), which must
 * declare `expected` bytes and a checksum and decode to them, its checksum holding;
 * `dict`: the raw-content dictionary it was compressed with.
 */
export function decompressFrame(data: Uint8Array, expected: number, where: string, dict?: Dictionary): Uint8Array {
  const layout = frameLayout(data);
  if (typeof layout === "string") throw new CorruptedError(`${where} is not a zstd frame: ${layout}`);
  if (layout.contentSize !== expected) {
    throw new CorruptedError(
      `${where} declares ${layout.contentSize < 0 ? "no content size" : `${layout.contentSize} bytes`} where its table says ${expected}`,
    );
  }
  if (!layout.checksum) throw new CorruptedError(`${where} carries no checksum`);
  if (layout.dictId !== 0) throw new CorruptedError(`${where} names dictionary ID ${layout.dictId}; msglc's frames name none`);
  if (layout.windowSize > MAX_WINDOW) {
    throw new CorruptedError(`${where} asks for a window of ${layout.windowSize} bytes (at most ${MAX_WINDOW})`);
  }
  if (layout.blocksEnd + 4 !== data.length) {
    throw new CorruptedError(
      `${where} ends after ${layout.blocksEnd + 4} of its ${data.length} stored bytes: ${data.length - layout.blocksEnd - 4} bytes follow it`,
    );
  }
  let plain: Uint8Array;
  try {
    if (dict === undefined) {
      plain = decompress(data);
    } else {
      // (a copy: the frame is cached without the dictionary's bytes ahead of it)
      plain = decompress(withDictionary(data, layout, dict)).slice(dict.bytes.length);
    }
  } catch (e) {
    throw new CorruptedError(`${where} does not decompress: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  if (plain.length !== expected) throw new CorruptedError(`${where} holds ${plain.length} bytes, not ${expected}`);
  const checksum = u32(data, data.length - 4);
  if (xxh64Low32(plain) !== checksum) throw new CorruptedError(`${where} fails its content checksum`);
  return plain;
}

/** The frame rewritten so that its content is the dictionary, then its own (no checksum). */
function withDictionary(data: Uint8Array, layout: FrameLayout, dict: Dictionary): Uint8Array {
  const total = dict.bytes.length + layout.contentSize;
  let exp = 0;
  while (2 ** (10 + exp) < total) exp++;
  const blocks = data.subarray(layout.headerSize, layout.blocksEnd);
  const out = new Uint8Array(10 + dict.blocks.length + blocks.length);
  out[0] = 0x28;
  out[1] = 0xb5;
  out[2] = 0x2f;
  out[3] = 0xfd;
  out[4] = 0x80; // a 4-byte content size; not single segment; no checksum; no dictionary ID
  out[5] = exp << 3; // window 2^(10 + exp) >= dictionary + content
  out[6] = total & 0xff;
  out[7] = (total >>> 8) & 0xff;
  out[8] = (total >>> 16) & 0xff;
  out[9] = (total >>> 24) & 0xff;
  out.set(dict.blocks, 10);
  out.set(blocks, 10 + dict.blocks.length);
  return out;
}

/** The bit position `pos` of `data` as fzstd reads it (bytes past the end read as 0). */
function bitsAt(data: Uint8Array, pos: number, width: number): number {
  const b = pos >> 3;
  const word = (data[b] ?? 0) | ((data[b + 1] ?? 0) << 8) | ((data[b + 2] ?? 0) << 16);
  return (word >> (pos & 7)) & ((1 << width) - 1);
}

function msb(v: number): number {
  return 31 - Math.clz32(v);
}

/**
 * True when the compressed block whose content starts at `at` has compressed literals whose
 * Huffman weights are FSE-coded with a table that gives all its probability to one symbol.
 * Every state of such a table reads 0 bits, so fzstd's loop over the weights (bounded in
 * zstd by the 255 weights it may produce) never ends: a damaged frame would hang the reader.
 * The table's description is read as fzstd reads it (RFC 8878, 4.1.1); zstd never writes one.
 */
function weightsNeverEnd(data: Uint8Array, at: number): boolean {
  const b0 = data[at] ?? 0;
  if ((b0 & 3) !== 2) return false; // raw, RLE or treeless literals: no weights here
  const sizeFormat = (b0 >> 2) & 3;
  const tree = at + (sizeFormat < 2 ? 3 : sizeFormat === 2 ? 4 : 5);
  if ((data[tree] ?? 0xff) >= 128) return false; // weights stored directly
  const log = ((data[tree + 1] ?? 0) & 15) + 5;
  if (log > 6) return false; // refused by the decoder
  const size = 1 << log;
  let pos = (tree + 1) * 8 + 4;
  let left = size;
  for (let sym = -1; sym < 255 && left > 0; ) {
    const bits = msb(left + 1);
    const mask = (1 << (bits + 1)) - 1;
    const small = mask - left - 1;
    let v = bitsAt(data, pos, bits + 1);
    if ((v & ((1 << bits) - 1)) < small) {
      pos += bits;
      v &= (1 << bits) - 1;
    } else {
      pos += bits + 1;
      if (v > (1 << bits) - 1) v -= small;
    }
    const count = v - 1;
    sym++;
    if (count === size) return true;
    left -= count === -1 ? 1 : count;
    if (count === 0) {
      let repeat: number;
      do {
        repeat = bitsAt(data, pos, 2);
        pos += 2;
        sym += repeat;
      } while (repeat === 3);
    }
  }
  return false;
}
