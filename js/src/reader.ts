/** `open()` and `LazyReader`: the package's front door. */
import { openSource } from "./io/open.js";
import { openBody, type Body } from "./io/body.js";
import type { SourceInput, SourceOptions } from "./io/source.js";
import type { LazyView, Path, ReaderStats } from "./read/types.js";
import { Archive, rootView } from "./read/views.js";
import { resolve, splitPath } from "./read/paths.js";
import { nodeSpan, type Node, type NodeRef, type PagedListNode } from "./format/nodes.js";
import { verifyArchive } from "./read/verify.js";
import { HEADER_SIZE } from "./format/container.js";

export type OpenOptions = SourceOptions;

export async function open(input: SourceInput, options: OpenOptions = {}): Promise<LazyReader> {
  const source = await openSource(input, options);
  try {
    const reader = new LazyReader(await openBody(source));
    // the root's node checked against the root container, as Python's open does (a root
    // without a node is decoded when it is first read, not here)
    if (reader.body.root.len) await reader.lazy();
    return reader;
  } catch (e) {
    await source.close();
    throw e;
  }
}

export class LazyReader {
  private readonly archive: Archive;
  private root: Promise<LazyView> | null = null;

  constructor(readonly body: Body) {
    this.archive = new Archive(body);
  }

  private rootView(): Promise<LazyView> {
    this.archive.checkOpen();
    if (this.root === null) {
      this.root = rootView(this.archive);
      this.root.catch(() => {
        this.root = null;
      });
    }
    return this.root;
  }

  /** The plain value at `path` (Python's `to_obj(reader[path])`); `""` is the whole object,
   * decoded in one read with the data section's checksum checked. */
  async read(path: Path = ""): Promise<unknown> {
    const segments = splitPath(path);
    if (segments.length === 0) {
      this.archive.checkOpen();
      return this.archive.decodeAll();
    }
    return (await resolve(await this.rootView(), segments)).value();
  }

  /** A lazy view of the part at `path`. */
  async lazy(path: Path = ""): Promise<LazyView> {
    return resolve(await this.rootView(), splitPath(path));
  }

  /** Format version, sections, threshold and root node (Python's `LazyReader.info()`, with
   * the same keys), merged with what the body adds (`Body.describe()`). */
  async info(): Promise<Record<string, unknown>> {
    this.archive.checkOpen();
    const b = this.body;
    const described = b.describe();
    const free = typeof described.free_space === "number" ? described.free_space : 0;
    const dataOffset = HEADER_SIZE;
    const tocOffset = dataOffset + b.dataLength + free;
    let root: Record<string, unknown> | null = null;
    if (b.root.len) {
      root = nodeInfo(await this.shown(b.root), tocOffset + b.root.pos, b.root.len);
    }
    return {
      version: [b.major, b.minor],
      file_size: b.end,
      data_offset: dataOffset,
      data_size: b.dataLength,
      toc_offset: tocOffset,
      toc_size: b.tocLength,
      free_space: free,
      threshold: b.threshold,
      data_crc: b.dataCrc,
      root,
      compression: b.compression,
      stored_data_size: b.dataLength,
      format: "msglc",
      slack: Math.max(0, b.source.size - b.end),
      ...described,
    };
  }

  /** How many TOC nodes of each kind the archive has, and its blocks (spans read whole):
   * what `msglc info` prints as "lazy nodes". It reads every node reachable from the root,
   * so the whole live TOC: `info()` does not, to keep opening cheap. */
  async nodeCounts(): Promise<NodeCounts> {
    this.archive.checkOpen();
    const counts: NodeCounts = { list: 0, "fixed-stride list": 0, dict: 0, "hash-indexed dict": 0, array: 0, blocks: 0 };
    const b = this.body;
    const seen = new Set<number>();
    const stack: NodeRef[] = b.root.len ? [{ pos: b.root.pos, len: b.root.len }] : [];
    while (stack.length) {
      const ref = stack.pop() as NodeRef;
      if (seen.has(ref.pos)) continue;
      seen.add(ref.pos);
      const node = await this.shown(ref);
      counts[nodeKind(node)]++;
      if (node.type === 1 || node.type === 3 || node.type === 6 || node.type === 7 || node.type === 9 || node.type === 10) {
        counts.blocks += node.starts.length - node.kids.size;
      }
      if ("kids" in node) for (const kid of node.kids.values()) stack.push(kid);
    }
    return counts;
  }

  /** The node at `ref` as `info()` and `nodeCounts()` show it: a paged list's as the type-1
   * node of all its pages' spans (Python's `inspect._node`), which reads them all. */
  private async shown(ref: NodeRef): Promise<Exclude<Node, PagedListNode>> {
    const node = await this.archive.node(ref);
    return node.type === 11 ? this.archive.spans(ref, node) : node;
  }

  /** Every check Python's `verify()` makes; resolves when the archive is sound. */
  async verify(): Promise<void> {
    this.archive.checkOpen();
    return verifyArchive(this.body);
  }

  get stats(): ReaderStats {
    const s = this.body.source.stats;
    return { requests: s.requests, bytes: s.bytes, framesDecompressed: this.body.framesDecompressed };
  }

  async close(): Promise<void> {
    if (this.archive.closed) return;
    this.archive.closed = true;
    this.archive.views.clear();
    await this.body.source.close();
  }
}

export const NODE_KINDS = ["list", "fixed-stride list", "dict", "hash-indexed dict", "array"] as const;

export type NodeKind = (typeof NODE_KINDS)[number];

export type NodeCounts = Record<NodeKind | "blocks", number>;

/** The kind a node is counted as (`msglc info`'s words). */
export function nodeKind(node: Node): NodeKind {
  switch (node.type) {
    case 1:
    case 11:
      return "list";
    case 4:
      return "fixed-stride list";
    case 2:
    case 8:
      return "dict";
    case 5:
      return "array";
    default:
      return "hash-indexed dict";
  }
}

/** Python's `NodeInfo` of a node at absolute file offset `position` (a paged list's: of the
 * type-1 node of its pages' spans, `Archive.spans`). */
export function nodeInfo(node: Exclude<Node, PagedListNode>, position: number, size: number): Record<string, unknown> {
  const span = nodeSpan(node);
  const base = { position, size, encoded_size: span };
  switch (node.type) {
    case 4: {
      const dims = node.dims.map((d) => d[1]);
      return { kind: "fixed-stride list", ...base, length: dims[0], blocks: 0, dims, item_size: node.dims[node.dims.length - 1][2], children: 0 };
    }
    case 5:
      return { kind: "array", ...base, length: node.size, blocks: 0, dims: [], item_size: 0, children: 0 };
    case 2:
    case 8:
      return { kind: "dict", ...base, length: node.keys.length, blocks: 0, dims: [], item_size: 0, children: node.kids.size };
    default:
      return {
        kind: node.type === 1 ? "list" : "hash-indexed dict",
        ...base,
        length: node.n,
        blocks: node.starts.length - node.kids.size,
        dims: [],
        item_size: 0,
        children: node.kids.size,
      };
  }
}
