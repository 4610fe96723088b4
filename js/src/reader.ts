/** `open()` and `LazyReader`: the package's front door. STUB: helper C implements it. */
import { openSource } from "./io/open.js";
import { openBody, type Body } from "./io/body.js";
import type { SourceInput, SourceOptions } from "./io/source.js";
import type { LazyView, Path, ReaderStats } from "./read/types.js";

export type OpenOptions = SourceOptions;

export async function open(input: SourceInput, options: OpenOptions = {}): Promise<LazyReader> {
  const source = await openSource(input, options);
  try {
    return new LazyReader(await openBody(source));
  } catch (e) {
    await source.close();
    throw e;
  }
}

export class LazyReader {
  constructor(readonly body: Body) {}

  /** The plain value at `path` (Python's `to_obj(reader[path])`). */
  async read(_path: Path = ""): Promise<unknown> {
    throw new Error("not implemented");
  }

  /** A lazy view of the part at `path`. */
  async lazy(_path: Path = ""): Promise<LazyView> {
    throw new Error("not implemented");
  }

  /** Format version, compression, sizes, threshold (Python's `LazyReader.info()`). */
  async info(): Promise<Record<string, unknown>> {
    throw new Error("not implemented");
  }

  /** Every check Python's `verify()` makes; resolves when the archive is sound. */
  async verify(): Promise<void> {
    throw new Error("not implemented");
  }

  get stats(): ReaderStats {
    const s = this.body.source.stats;
    return { requests: s.requests, bytes: s.bytes, framesDecompressed: this.body.framesDecompressed };
  }

  async close(): Promise<void> {
    await this.body.source.close();
  }
}
