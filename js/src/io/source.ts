/**
 * Where an archive's bytes come from. Everything above this layer asks a `Source` for
 * `(offset, length)` and never sees a file, a URL or a Blob; the sources count their requests
 * and bytes (`reader.stats`) so that tests and the benchmark can hold reads to the spec's
 * numbers.
 */
import { TruncatedError } from "../errors.js";

export interface ReadStats {
  /** Storage requests made (a `pread`, an HTTP range request, a `Blob.slice` read). */
  requests: number;
  /** Bytes those requests returned. */
  bytes: number;
}

export interface Source {
  /** Size in bytes, fixed at open (a changed file or object is detected, not followed). */
  readonly size: number;
  /** A name for messages: the path, URL or "bytes". */
  readonly name: string;
  readonly stats: ReadStats;
  /** TOC bytes a read of a node takes before the node too (Python's `Source.node_window`):
   * where a read is a system call, a local file's, the nodes a walk reads next (its kids,
   * which precede it) then come from memory. 0 or absent: the node alone (bytes in memory,
   * HTTP, a Blob). */
  readonly nodeWindow?: number;
  /** Exactly `length` bytes at `offset`, else `TruncatedError` (or `ArchiveChangedError`
   * when the source can tell that the file changed since it was opened). */
  read(offset: number, length: number): Promise<Uint8Array>;
  close(): Promise<void>;
}

/** What `open()` accepts: a path (Node), an http(s) URL (string or `URL`), a `Blob`/`File`,
 * or bytes already in memory. */
export type SourceInput = string | URL | Blob | ArrayBuffer | Uint8Array | Source;

export interface SourceOptions {
  /** HTTP: extra request headers (authorisation). */
  headers?: Record<string, string>;
  /** HTTP: the `fetch` to use (defaults to the global one). */
  fetch?: typeof fetch;
}

export function checkRange(source: Source, offset: number, length: number): void {
  if (!(offset >= 0 && length >= 0 && offset + length <= source.size)) {
    throw new TruncatedError(
      `${source.name}: a read of ${length} bytes at offset ${offset} goes past the end (${source.size} bytes)`,
    );
  }
}

/** Bytes in memory: nothing to open, and reads are views, not copies. */
export class MemorySource implements Source {
  readonly size: number;
  readonly name: string;
  readonly stats: ReadStats = { requests: 0, bytes: 0 };
  private readonly bytes: Uint8Array;

  constructor(bytes: Uint8Array | ArrayBuffer, name = "bytes") {
    this.bytes = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
    this.size = this.bytes.length;
    this.name = name;
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    this.stats.requests++;
    this.stats.bytes += length;
    return this.bytes.subarray(offset, offset + length);
  }

  async close(): Promise<void> {}
}

export function isSource(x: unknown): x is Source {
  return typeof x === "object" && x !== null && typeof (x as Source).read === "function" && "size" in x;
}
