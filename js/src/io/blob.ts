/** A `Blob` or `File` (browser file picker, drag and drop): `slice().arrayBuffer()`, never
 * the whole blob. (Helper A: pinning, errors.) */
import { checkRange, type ReadStats, type Source } from "./source.js";

export class BlobSource implements Source {
  readonly stats: ReadStats = { requests: 0, bytes: 0 };
  readonly size: number;
  readonly name: string;
  constructor(private readonly blob: Blob) {
    this.size = blob.size;
    this.name = (blob as File).name ?? "blob";
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    const bytes = new Uint8Array(await this.blob.slice(offset, offset + length).arrayBuffer());
    this.stats.requests++;
    this.stats.bytes += bytes.length;
    return bytes;
  }

  async close(): Promise<void> {}
}
