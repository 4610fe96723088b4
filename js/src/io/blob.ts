/** A `Blob` or `File` (browser file picker, drag and drop): `slice().arrayBuffer()`, never
 * the whole blob. A `File` whose file changed on disk since it was picked fails to read
 * (`NotReadableError`): that is `ArchiveChangedError`, the cause chained. */
import { checkRange, type ReadStats, type Source } from "./source.js";
import { ArchiveChangedError } from "../errors.js";

export class BlobSource implements Source {
  readonly stats: ReadStats = { requests: 0, bytes: 0 };
  readonly size: number;
  readonly name: string;
  constructor(private readonly blob: Blob) {
    this.size = blob.size;
    this.name = (blob as Partial<File>).name || "blob";
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    this.stats.requests++;
    let buffer: ArrayBuffer;
    try {
      buffer = await this.blob.slice(offset, offset + length).arrayBuffer();
    } catch (e) {
      const why = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      throw new ArchiveChangedError(
        `${this.name}: reading ${length} bytes at offset ${offset} failed (${why}): the file changed since it was opened: reopen it`,
        { cause: e },
      );
    }
    this.stats.bytes += buffer.byteLength;
    if (buffer.byteLength !== length) {
      throw new ArchiveChangedError(
        `${this.name}: reading ${length} bytes at offset ${offset} gave ${buffer.byteLength}: the file changed since it was opened: reopen it`,
      );
    }
    return new Uint8Array(buffer);
  }

  async close(): Promise<void> {}
}
