/** msglc for JavaScript: read msglc archives lazily (docs/javascript.md). */
export { open, LazyReader, NODE_KINDS, type OpenOptions, type NodeCounts, type NodeKind } from "./reader.js";
export type { Source, SourceInput, SourceOptions, ReadStats } from "./io/source.js";
export { MemorySource } from "./io/source.js";
export { HttpError } from "./io/http.js";
export type { Key, Path, Kind, LazyView, NDArray, AxisSelection, ReaderStats, TypedArray } from "./read/types.js";
export {
  MsglcError,
  NotAnArchiveError,
  UnsupportedVersionError,
  TruncatedError,
  CorruptedError,
  ArchiveChangedError,
  KeyNotFoundError,
  IndexOutOfRangeError,
} from "./errors.js";
