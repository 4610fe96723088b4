/**
 * The archive's header (16 bytes) and trailer (64 bytes): docs/format.md, "Header" and
 * "Trailer". Pure functions over bytes; the checks are the spec's, in the spec's order.
 */
import { CorruptedError, NotAnArchiveError, TruncatedError, UnsupportedVersionError } from "../errors.js";
import { crc32 } from "../util/crc32.js";
import { u32, u48, u64 } from "../util/bytes.js";

export const MAGIC = Uint8Array.of(0x89, 0x4d, 0x4c, 0x43, 0x0d, 0x0a, 0x1a, 0x0a);
export const END_MAGIC = Uint8Array.of(0x89, 0x4d, 0x4c, 0x43, 0x2d, 0x54, 0x4f, 0x43);
export const HEADER_SIZE = 16;
export const TRAILER_SIZE = 64;

export interface Header {
  major: number;
  minor: number;
  /** The committed end (0: the end of the file). */
  end: number;
  bytes: Uint8Array;
}

export interface Trailer {
  dataOff: number;
  dataLen: number;
  tocOff: number;
  tocLen: number;
  rootPos: number;
  rootLen: number;
  dataCrc: number;
  threshold: number;
}

export function parseHeader(b: Uint8Array, fileSize: number): Header {
  if (fileSize < HEADER_SIZE + TRAILER_SIZE || b.length < HEADER_SIZE) {
    // Too short for any archive: cut short if what there is starts as the magic does (an
    // empty file does not), else not an archive at all (as Python's reader decides).
    if (b.length === 0 || !startsWithMagic(b)) throw notAnArchive(b, fileSize);
    throw new TruncatedError(
      `the file has ${fileSize} bytes; an msglc archive has at least ${HEADER_SIZE + TRAILER_SIZE}`,
    );
  }
  if (!startsWithMagic(b)) throw notAnArchive(b, fileSize);
  const major = b[8];
  const minor = b[9];
  if (major !== 1 && major !== 2) {
    throw new UnsupportedVersionError(
      `archive format ${major}.${minor} is not readable by this reader (it reads 1.x and 2.x)`,
    );
  }
  const end = u48(b, 10);
  if (end !== 0) {
    if (end > fileSize) {
      throw new TruncatedError(`the header names an archive end at ${end}, past the file's ${fileSize} bytes`);
    }
    if (end < HEADER_SIZE + TRAILER_SIZE) {
      throw new CorruptedError(`the header names an archive end at ${end}, before any trailer could end`);
    }
  }
  return { major, minor, end, bytes: b.subarray(0, HEADER_SIZE) };
}

/** Does `b` start with the magic (or, shorter than it, with the magic's first bytes)? */
function startsWithMagic(b: Uint8Array): boolean {
  const n = Math.min(b.length, MAGIC.length);
  for (let i = 0; i < n; i++) if (b[i] !== MAGIC[i]) return false;
  return true;
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join(" ");
}

function notAnArchive(b: Uint8Array, fileSize: number): NotAnArchiveError {
  const found = b.length === 0 ? `an empty file` : hex(b.subarray(0, 8));
  return new NotAnArchiveError(
    `not an msglc archive (${fileSize} bytes): expected the magic 89 4d 4c 43 0d 0a 1a 0a at offset 0, found ${found}`,
  );
}

/** The header as the trailer's CRC covers it: `end` read as zero. */
function checkedHeader(header: Uint8Array): Uint8Array {
  const h = header.slice(0, HEADER_SIZE);
  h.fill(0, 10, 16);
  return h;
}

/** Parse and check the trailer: the 64 bytes before `archiveEnd`. */
export function parseTrailer(b: Uint8Array, archiveEnd: number, header: Header): Trailer {
  const at = archiveEnd - TRAILER_SIZE;
  if (b.length < TRAILER_SIZE) {
    throw new TruncatedError(`the trailer at offset ${at} has ${b.length} of its ${TRAILER_SIZE} bytes`);
  }
  for (let i = 0; i < END_MAGIC.length; i++) {
    if (b[56 + i] !== END_MAGIC[i]) {
      throw new TruncatedError(
        `no msglc trailer at the end of the archive (${archiveEnd} bytes): expected the end magic ` +
          `89 4d 4c 43 2d 54 4f 43 at offset ${archiveEnd - END_MAGIC.length}, found ${hex(b.subarray(56, 64))}: ` +
          "truncated or not an archive",
      );
    }
  }
  const crc = crc32(b.subarray(0, 52), crc32(checkedHeader(header.bytes)));
  if (crc !== u32(b, 52)) {
    throw new CorruptedError(
      `header or trailer checksum mismatch (trailer at offset ${at}: stored ${u32(b, 52).toString(16).padStart(8, "0")}, computed ${crc.toString(16).padStart(8, "0")})`,
    );
  }
  const t: Trailer = {
    dataOff: u64(b, 0),
    dataLen: u64(b, 8),
    tocOff: u64(b, 16),
    tocLen: u64(b, 24),
    rootPos: u64(b, 32),
    rootLen: u32(b, 40),
    dataCrc: u32(b, 44),
    threshold: u32(b, 48),
  };
  const dataEnd = t.dataOff + t.dataLen;
  const freeOk = header.major === 1 && header.minor >= 2;
  if (
    !(
      t.dataOff === HEADER_SIZE &&
      (dataEnd === t.tocOff || (freeOk && dataEnd < t.tocOff)) &&
      t.tocOff + t.tocLen === archiveEnd - TRAILER_SIZE
    )
  ) {
    throw new CorruptedError(
      `trailer sections (data ${t.dataOff}+${t.dataLen}, TOC ${t.tocOff}+${t.tocLen}) do not tile an archive of ${archiveEnd} bytes`,
    );
  }
  if (t.rootLen && !(t.rootPos + t.rootLen <= t.tocLen)) {
    // (root_pos is unsigned: a u64 past 2^53 reads as Infinity and fails here too)
    throw new CorruptedError(`root node ${t.rootPos}+${t.rootLen} lies outside the TOC (${t.tocLen} bytes)`);
  }
  return t;
}
