/**
 * TOC nodes (docs/format.md, "The TOC section"): their shapes after parsing and checking.
 * A node is located by its position in the TOC and its framed length (payload + CRC-32); a
 * reference to a child is `(back, length)`, the child starting `back` bytes before the
 * referring node. Data offsets inside a node are relative to the container it describes.
 *
 * STUB: `parseNode` is implemented by helper C; the types are the contract.
 */
import type { Key } from "../read/types.js";

export interface NodeRef {
  /** Where the node starts in the TOC. */
  pos: number;
  /** Its framed length (payload and CRC). */
  len: number;
}

/** Type 1: a list cut into spans; `kids` maps a span to the node of its one item. */
export interface ListNode {
  type: 1;
  n: number;
  starts: number[];
  offs: number[];
  kids: Map<number, NodeRef>;
}

/** Types 2 and 8 (8 expanded into 2's offsets): a dict with its keys inline. */
export interface MapNode {
  type: 2 | 8;
  keys: Key[];
  koffs: number[];
  voffs: number[];
  kids: Map<number, NodeRef>;
}

/** Types 3, 6, 7, 9: a big dict, its entries in spans as a list's, with an index region. */
export interface IndexedMapNode {
  type: 3 | 6 | 7 | 9;
  n: number;
  starts: number[];
  offs: number[];
  kids: Map<number, NodeRef>;
  /** Key of each kid entry (normalised with `keyId`) to its span. */
  kidKeys: Map<string, number>;
  pageBits: number;
  offsWidth: number;
  offsCrc: number;
  /** The index region, absolute in the TOC. */
  region: NodeRef;
  /** Types 6, 7, 9. */
  blockBits: number;
  /** Type 7. */
  slotBits: number;
  seed: bigint;
  segBits: number;
  segCount: number;
  crcsCrc: number;
  /** Type 9. */
  keysLen: number;
  keysCrc: number;
}

/** Type 4: a fixed-stride list; `dims[d] = [h, n, s]`. */
export interface StrideNode {
  type: 4;
  dims: Array<[number, number, number]>;
  lazyMin: number;
}

/** Type 5: a NumPy array value whose elements start `head` bytes in and take `size`. */
export interface ArrayNode {
  type: 5;
  head: number;
  size: number;
}

export type Node = ListNode | MapNode | IndexedMapNode | StrideNode | ArrayNode;

/** A key's identity for maps keyed by keys: ints and strs never collide. */
export function keyId(key: Key): string {
  return typeof key === "string" ? "s" + key : "i" + key.toString();
}

/** Parse and check the framed node `bytes` found at `ref` (its CRC, its type, its fields). */
export function parseNode(_bytes: Uint8Array, _ref: NodeRef): Node {
  throw new Error("not implemented");
}
