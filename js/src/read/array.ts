/**
 * NumPy arrays (extension type 78; docs/format.md "NumPy arrays: extension type 78" and
 * "Type 5: array node"): the array header, dtypes, byte order, tiles, and selections that
 * read only the bytes (or tiles) they need. The module knows nothing of nodes or files: it is
 * handed a function that reads element bytes.
 *
 * STUB: helper D implements it; the signatures are the contract.
 */
import type { AxisSelection, NDArray } from "./types.js";

export interface ArrayHeader {
  /** The descr as stored (a string such as "<f8", or a structured list). */
  descr: unknown;
  /** A readable dtype name for `NDArray.dtype` (the descr string, or JSON of a structured one). */
  dtype: string;
  itemsize: number;
  shape: number[];
  /** Tile shape for a tiled array (2.1), else null (C order). */
  tile: number[] | null;
  /** Bytes before the elements in the ext payload: 4 + H. */
  headerLength: number;
}

/** Parse and check the ext-78 payload's leading bytes (`4 + H`, the array header): the
 * dtype allowed, `tile` valid, and `elementBytes` exactly `prod(shape) * itemsize`. */
export function parseArrayHeader(_payloadHead: Uint8Array, _elementBytes: number): ArrayHeader {
  throw new Error("not implemented");
}

/** The whole array from its element bytes as stored (tiled or C order). */
export function decodeArray(_header: ArrayHeader, _elements: Uint8Array): NDArray {
  throw new Error("not implemented");
}

/** Reads `length` element bytes at `offset` from the array's first element byte. */
export type ElementReader = (offset: number, length: number) => Promise<Uint8Array>;

/** A lazily read array: selections read only the runs (C order) or tiles they touch. */
export class ArrayReader {
  constructor(
    readonly header: ArrayHeader,
    private readonly readElements: ElementReader,
  ) {}

  async slice(..._axes: AxisSelection[]): Promise<NDArray> {
    void this.readElements;
    throw new Error("not implemented");
  }

  async all(): Promise<NDArray> {
    throw new Error("not implemented");
  }
}
