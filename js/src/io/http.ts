/** An http(s) URL read with `Range` requests. STUB: helper A implements it (suffix range to
 * open, ETag / Last-Modified pinning, request counting). */
import type { ReadStats, Source, SourceOptions } from "./source.js";

export class HttpSource implements Source {
  readonly stats: ReadStats = { requests: 0, bytes: 0 };
  private constructor(
    readonly size: number,
    readonly name: string,
  ) {}

  static async open(url: string, _options: SourceOptions): Promise<HttpSource> {
    throw new Error(`not implemented: HttpSource.open(${url})`);
  }

  async read(_offset: number, _length: number): Promise<Uint8Array> {
    throw new Error("not implemented");
  }

  async close(): Promise<void> {}
}
