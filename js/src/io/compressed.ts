/** Compressed archives (2.0 and 2.1): a Body served from zstd frames. STUB: helper B
 * implements it (docs/format.md, "Compressed archives (format 2.1)" and "Format 2.0"). */
import type { Body } from "./body.js";
import type { Source } from "./source.js";
import type { Header, Trailer } from "../format/container.js";
import { UnsupportedVersionError } from "../errors.js";

export async function openCompressedBody(_source: Source, header: Header, _trailer: Trailer, _end: number): Promise<Body> {
  throw new UnsupportedVersionError(`compressed archives (${header.major}.${header.minor}) are not read yet`);
}
