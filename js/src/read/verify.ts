/** `reader.verify()`: the checks Python's `LazyReader.verify()` makes (docs/reliability.md).
 * STUB: helper D implements it. */
import type { Body } from "../io/body.js";

export async function verifyArchive(_body: Body): Promise<void> {
  throw new Error("not implemented");
}
