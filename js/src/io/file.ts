/** A local file (Node), read at offsets: never the whole file. Small reads are synchronous
 * `pread`s on the handle's descriptor (a promise round trip costs more than the read itself);
 * large ones go through the handle's async `read`. */
import { open as fsOpen, type FileHandle } from "node:fs/promises";
import { readSync } from "node:fs";
import { checkRange, type ReadStats, type Source } from "./source.js";
import { TruncatedError } from "../errors.js";

const SYNC_LIMIT = 1 << 20;

export class FileSource implements Source {
  readonly stats: ReadStats = { requests: 0, bytes: 0 };
  private constructor(
    private readonly handle: FileHandle,
    readonly size: number,
    readonly name: string,
  ) {}

  static async open(path: string | URL): Promise<FileSource> {
    const handle = await fsOpen(path, "r");
    try {
      const { size } = await handle.stat();
      return new FileSource(handle, size, String(path));
    } catch (e) {
      await handle.close();
      throw e;
    }
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(this, offset, length);
    const out = new Uint8Array(length);
    let got = 0;
    while (got < length) {
      const n =
        length <= SYNC_LIMIT
          ? readSync(this.handle.fd, out, got, length - got, offset + got)
          : (await this.handle.read(out, got, length - got, offset + got)).bytesRead;
      this.stats.requests++;
      if (n === 0) throw new TruncatedError(`${this.name}: the file ends before offset ${offset + length}`);
      got += n;
    }
    this.stats.bytes += length;
    return out;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}
