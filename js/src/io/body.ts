/**
 * An opened archive's contents as a 1.3 reader sees them: the plain data section and the
 * plain TOC, addressed by offsets relative to each. A plain archive reads them from the file;
 * a compressed one (2.0, 2.1) serves them from zstd frames, so nodes and views never know
 * whether an archive is compressed (DESIGN.md: "Compression belongs in io").
 */
import type { Source } from "./source.js";
import { HEADER_SIZE, TRAILER_SIZE, parseHeader, parseTrailer, type Header, type Trailer } from "../format/container.js";
import { TruncatedError } from "../errors.js";

export interface RootRef {
  /** Position of the root node in the TOC. */
  pos: number;
  /** Its framed length; 0 when the root has no node. */
  len: number;
}

export interface Body {
  readonly source: Source;
  readonly major: number;
  readonly minor: number;
  /** "zstd" for a compressed archive, null for a plain one. */
  readonly compression: "zstd" | null;
  /** D: bytes of plain data (the msgpack of the whole object). */
  readonly dataLength: number;
  /** T: bytes of plain TOC. */
  readonly tocLength: number;
  readonly root: RootRef;
  readonly threshold: number;
  /** CRC-32 of the D bytes of plain data. */
  readonly dataCrc: number;
  /** Where the archive ends in the source (the header's `end`, or the source's size). */
  readonly end: number;
  /** Frames decompressed so far (0 for a plain archive). */
  readonly framesDecompressed: number;
  /** TOC bytes a node read takes before the node too (`Source.nodeWindow`): the source's
   * for a plain archive, 0 for a compressed one (whose TOC comes from frames, as Python's). */
  readonly nodeWindow: number;
  /** `length` plain bytes at `offset` of the data section. */
  readData(offset: number, length: number): Promise<Uint8Array>;
  /** `length` plain bytes at `offset` of the TOC section. */
  readToc(offset: number, length: number): Promise<Uint8Array>;
  /** What `reader.info()` adds for this kind of archive (frames, pages, dictionaries...). */
  describe(): Record<string, unknown>;
}

/** Read the header and trailer, and open the archive as its version says. */
export async function openBody(source: Source): Promise<Body> {
  const headBytes = await source.read(0, Math.min(HEADER_SIZE, source.size));
  const header = parseHeader(headBytes, source.size);
  const end = header.end || source.size;
  const trailer = parseTrailer(await source.read(end - TRAILER_SIZE, TRAILER_SIZE), end, header);
  if (header.major === 1) return new PlainBody(source, header, trailer, end);
  const { openCompressedBody } = await import("./compressed.js");
  return openCompressedBody(source, header, trailer, end);
}

/** A 1.x archive: data and TOC read straight from the source. */
export class PlainBody implements Body {
  readonly compression = null;
  readonly framesDecompressed = 0;
  readonly major: number;
  readonly minor: number;
  readonly dataLength: number;
  readonly tocLength: number;
  readonly root: RootRef;
  readonly threshold: number;
  readonly dataCrc: number;
  readonly nodeWindow: number;

  constructor(
    readonly source: Source,
    header: Header,
    private readonly trailer: Trailer,
    readonly end: number,
  ) {
    this.nodeWindow = source.nodeWindow ?? 0;
    this.major = header.major;
    this.minor = header.minor;
    this.dataLength = trailer.dataLen;
    this.tocLength = trailer.tocLen;
    this.root = { pos: trailer.rootPos, len: trailer.rootLen };
    this.threshold = trailer.threshold;
    this.dataCrc = trailer.dataCrc;
  }

  readData(offset: number, length: number): Promise<Uint8Array> {
    if (!(offset >= 0 && length >= 0 && offset + length <= this.dataLength)) {
      return Promise.reject(
        new TruncatedError(`a read of ${length} bytes at data offset ${offset} goes past the data (${this.dataLength} bytes)`),
      );
    }
    return this.source.read(this.trailer.dataOff + offset, length);
  }

  readToc(offset: number, length: number): Promise<Uint8Array> {
    if (!(offset >= 0 && length >= 0 && offset + length <= this.tocLength)) {
      return Promise.reject(
        new TruncatedError(`a read of ${length} bytes at TOC offset ${offset} goes past the TOC (${this.tocLength} bytes)`),
      );
    }
    return this.source.read(this.trailer.tocOff + offset, length);
  }

  describe(): Record<string, unknown> {
    return { free_space: this.trailer.tocOff - (this.trailer.dataOff + this.trailer.dataLen) };
  }
}

export { HEADER_SIZE, TRAILER_SIZE };
