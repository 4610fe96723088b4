/** The public shapes of the reader's API (docs/javascript.md). */

/** A dict key as stored: msglc dicts have str or int keys (others are read, not looked up). */
export type Key = string | number | bigint;

/** `"runs/42/energy"`, or segments `["runs", 42, "energy"]`; a str segment on a list is an
 * int or a slice `start:step:stop` as in the Python package. */
export type Path = string | ReadonlyArray<Key>;

export type Kind = "dict" | "list" | "array" | "value";

import type { TypedArray } from "../format/dtype.js";

export type { TypedArray };

/** A NumPy array: elements in C order. `data` is the typed array of the dtype (in the host's
 * byte order whatever the stored one); dtypes without one (float16, complex, strings,
 * datetimes, structured) give their raw stored bytes as a `Uint8Array` (docs/javascript.md). */
export interface NDArray {
  dtype: string;
  shape: number[];
  data: TypedArray;
}

/** One axis of `slice()`: an index (drops the axis), `[start, stop]` or `[start, stop, step]`
 * (Python's meaning, negatives from the end), or `null` for the whole axis. */
export type AxisSelection = number | null | [number | null, number | null, (number | null)?];

export interface ReaderStats {
  /** Storage requests: `pread`s, HTTP range requests, Blob slices. */
  requests: number;
  /** Bytes those requests returned. */
  bytes: number;
  /** zstd frames decompressed (compressed archives). */
  framesDecompressed: number;
}

export interface LazyView {
  readonly kind: Kind;
  /** Items of a list, entries of a dict, first-axis length of an array; 0 for a value. */
  readonly length: number;
  /** The path from the root, as `"a/b/3"`. */
  readonly path: string;
  /** Dict keys in stored order, `start` to `stop` (a page at a time for big dicts). */
  keys(start?: number, stop?: number): Promise<Key[]>;
  /** The child at a key (dict) or index (list, negative from the end), lazily. */
  get(keyOrIndex: Key): Promise<LazyView>;
  /** The plain value (Python's `to_obj`). */
  value(): Promise<unknown>;
  /** Arrays: the dtype descr (`"<f8"`) and shape. */
  readonly dtype?: string;
  readonly shape?: number[];
  /** Arrays: a basic-indexing selection, reading only the bytes (or tiles) it needs. */
  slice(...axes: AxisSelection[]): Promise<NDArray>;
  /** The value's msgpack bytes exactly as stored: one contiguous run of the plain data
   * section (Python's `protocol_raw_data()` of a lazy part). Used by `msglc-js get --format
   * msgpack` and the cross-implementation tests. */
  raw(): Promise<Uint8Array>;
  /** How many bytes `raw()` gives (Python's `location().size`); for a part with a TOC node it
   * is known from the node, without reading the data. */
  storedSize(): Promise<number>;
  /** True where Python's reader gives a lazy part (`LazyDict`, `LazyList`, `LazyArray`): the
   * value has a TOC node of its own, or is a row of a fixed-stride list whose rows are not
   * read whole (`stride >= lazy_min`); false for a value read whole (a small dict or list, a
   * scalar, a small array). The Python command prints a lazy part's stored bytes and
   * re-encodes any other value, so `msglc-js` needs to know which it is. */
  readonly lazyPart: boolean;
}
