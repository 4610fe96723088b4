/** `openSource`: the one place that turns what a user passed into a `Source`. */
import { MemorySource, isSource, type Source, type SourceInput, type SourceOptions } from "./source.js";

export async function openSource(input: SourceInput, options: SourceOptions = {}): Promise<Source> {
  if (isSource(input)) return input;
  if (input instanceof Uint8Array || input instanceof ArrayBuffer) return new MemorySource(input);
  if (typeof Blob !== "undefined" && input instanceof Blob) {
    const { BlobSource } = await import("./blob.js");
    return new BlobSource(input);
  }
  const text = input instanceof URL ? input.href : input;
  if (typeof text === "string" && /^https?:\/\//i.test(text)) {
    const { HttpSource } = await import("./http.js");
    return HttpSource.open(text, options);
  }
  if (typeof text === "string") {
    const { FileSource } = await import("./file.js");
    return FileSource.open(text.startsWith("file:") ? new URL(text) : text);
  }
  throw new TypeError(`cannot open ${String(input)}: expected a path, an http(s) URL, a Blob, or bytes`);
}
