/**
 * NumPy arrays (extension type 78; docs/format.md "NumPy arrays: extension type 78" and
 * "Type 5: array node"): the array header, dtypes, byte order, tiles, and selections that
 * read only the bytes (or tiles) they need. The module knows nothing of nodes or files: it is
 * handed a function that reads element bytes.
 *
 * How a selection is read (`ArrayReader.slice`):
 * - C order: the selection is cut into runs of contiguous bytes (the trailing axes it takes
 *   whole, plus the next one when its step is 1: a block of whole rows is one run). Runs are
 *   read in storage order, and two runs are read as one request when the gap between them is
 *   at most `gap` bytes (default `READ_GAP` = 4096: about what a local read call costs, the
 *   cost model of Python's reader; an HTTP reader may pass more) and the request stays within
 *   `MAX_SPAN` bytes (a single run may be longer). So a 64 x 64 block of a 5000 x 5000 float64
 *   matrix is 64 reads of 512 bytes; every other element of a row is one read.
 * - Tiled (2.1): each tile the selection touches is read once, from its first selected byte
 *   to its last (neighbouring tiles merged by the same gap rule), and its selected elements
 *   copied into place; a selection touching more than `TILE_READS` tiles reads whole rows of
 *   tiles instead, a few MB at a time, puts them in C order and copies the selection out.
 * - `all()`: one read of every element byte, put in C order when tiled.
 * Dtypes and how their elements come out: js/src/format/dtype.ts.
 */
import { CorruptedError, TruncatedError, UnsupportedVersionError } from "../errors.js";
import { DescrError, badText, parseDescr, typedData, type DType } from "../format/dtype.js";
import { HeaderSyntaxError, decodeHeader, isInt, show, type MpValue } from "../format/mpheader.js";
import { cStrides, copyBlock, isTrivial, tileError, tileStart, untile } from "../format/tiles.js";
import type { AxisSelection, NDArray } from "./types.js";

/** The ext type of a NumPy array value. */
export const ARRAY_EXT = 78;
/** Bytes of an array header at most (bounds what a reader reads to open an array). */
export const MAX_HEADER = 1 << 20;
/** Axes of an array at most (NumPy 2). */
export const MAX_NDIM = 64;
/** Default largest gap (bytes) between two runs of a selection read as one request. */
export const READ_GAP = 4096;
/** Largest request that merges several runs (bytes). */
export const MAX_SPAN = 1 << 24;
/** A selection touching more tiles than this reads whole rows of tiles. */
export const TILE_READS = 4096;
/** Bytes of rows of tiles read at a time by such a selection. */
export const ROWS_READ = 1 << 22;
/** Runs planned (and their reads awaited) at a time: bounds the memory of a gappy selection. */
const BATCH_RUNS = 1 << 16;
/** Reads in flight at once (a column of a tall matrix is thousands of them). */
export const READS_IN_FLIGHT = 64;

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
  /** The parsed dtype (kind, byte order, where text lies). */
  dt: DType;
  /** Elements: prod(shape). */
  size: number;
}

function label(where?: number): string {
  return where === undefined ? "NumPy array" : `NumPy array at offset ${where}`;
}

/** Parse and check the ext-78 payload's leading bytes (`4 + H`, the array header): the
 * dtype allowed, `tile` valid, and `elementBytes` exactly `prod(shape) * itemsize`.
 * `payloadHead` may go on past the header (the whole payload, say). `where` (a data offset)
 * only names the place in error messages. */
export function parseArrayHeader(payloadHead: Uint8Array, elementBytes: number, where?: number): ArrayHeader {
  return parsePayload(payloadHead, () => elementBytes, where);
}

/** `parseArrayHeader` for a whole payload of `payloadLength` bytes (of which `payloadHead`
 * holds at least the header): the elements are what follows the header, as Python's
 * `parse_payload_header`. */
export function parsePayloadHeader(payloadHead: Uint8Array, payloadLength: number, where?: number): ArrayHeader {
  return parsePayload(payloadHead, (h) => payloadLength - 4 - h, where);
}

function parsePayload(payload: Uint8Array, elementsAfter: (h: number) => number, where?: number): ArrayHeader {
  const what = label(where);
  const h =
    payload.length >= 4 ? (payload[0] | (payload[1] << 8) | (payload[2] << 16) | (payload[3] << 24)) >>> 0 : -1;
  const elementBytes = elementsAfter(Math.max(h, 0));
  if (!(h >= 0 && h <= Math.min(payload.length - 4, MAX_HEADER))) {
    throw new CorruptedError(
      `${what}: its header (${h < 0 ? "no length" : h + " bytes"}) does not fit its value (${payload.length} bytes read)`,
    );
  }
  let header: MpValue;
  try {
    header = decodeHeader(payload.subarray(4, 4 + h));
  } catch (e) {
    if (!(e instanceof HeaderSyntaxError)) throw e;
    throw new CorruptedError(`${what}: header is not valid msgpack (${e.message})`);
  }
  if (!Array.isArray(header) || header.length < 2) {
    throw new CorruptedError(`${what}: header ${show(header)} is not [descr, shape]`);
  }
  if (header.length > 3) {
    throw new UnsupportedVersionError(
      `${what}: header has ${header.length} fields, unknown to this reader (a newer writer?)`,
    );
  }
  const [descr, rawShape] = header;
  if (
    !Array.isArray(rawShape) ||
    rawShape.length > MAX_NDIM ||
    !rawShape.every((d) => isInt(d) && d >= 0)
  ) {
    throw new CorruptedError(`${what}: shape ${show(rawShape)} is not a list of at most ${MAX_NDIM} sizes`);
  }
  let dt: DType;
  try {
    dt = parseDescr(descr);
  } catch (e) {
    if (!(e instanceof DescrError)) throw e;
    throw new CorruptedError(`${what}: dtype description ${show(descr)} is invalid (${e.message})`);
  }
  if (dt.itemsize === 0) throw new CorruptedError(`${what}: holds a NumPy array of dtype ${dt.name} (items of size 0)`);
  let big = BigInt(dt.itemsize);
  for (const d of rawShape as Array<number | bigint>) if (d) big *= BigInt(d);
  if (big >= 2n ** 63n) {
    throw new CorruptedError(`${what}: shape ${show(rawShape)} of ${dt.name} is not an array NumPy can make`);
  }
  if (rawShape.some((d) => typeof d === "bigint")) {
    throw new CorruptedError(`${what}: shape ${show(rawShape)} has a size past 2^53, which this reader cannot represent`);
  }
  const shape = rawShape as number[];
  let tile: number[] | null = null;
  if (header.length === 3) {
    const why = tileError(header[2], shape);
    if (why !== null) throw new CorruptedError(`${what}: ${why}`);
    tile = header[2] as number[];
  }
  let size = 1;
  for (const d of shape) size *= d;
  const need = size * dt.itemsize;
  if (need !== elementBytes) {
    throw new CorruptedError(
      `${what}: shape [${shape.join(", ")}] of ${dt.name} needs ${need} bytes, the value has ${elementBytes}`,
    );
  }
  return { descr, dtype: dt.name, itemsize: dt.itemsize, shape, tile, headerLength: 4 + h, dt, size };
}

/** The (type, header size, payload size) of the msgpack extension value starting `b`, or
 * null when `b` does not start with a whole extension header. */
export function parseExtHeader(b: Uint8Array): [number, number, number] | null {
  if (b.length < 2) return null;
  const m = b[0];
  if (m >= 0xd4 && m <= 0xd8) return [b[1], 2, 1 << (m - 0xd4)];
  const width = m === 0xc7 ? 1 : m === 0xc8 ? 2 : m === 0xc9 ? 4 : 0;
  if (!width || b.length < 2 + width) return null;
  let n = 0;
  for (let i = 1; i <= width; i++) n = n * 256 + b[i];
  return [b[1 + width], 2 + width, n];
}

/** Parse the first bytes `head` (at least up to the elements) of an array value of `total`
 * bytes at data offset `where` (Python's `parse_head`): its header, and where its elements
 * start from the value's first byte (an array node's `head` must equal it). */
export function parseArrayValue(head: Uint8Array, total: number, where?: number): { header: ArrayHeader; start: number } {
  const ext = parseExtHeader(head);
  if (ext === null || ext[0] !== ARRAY_EXT || ext[1] + ext[2] !== total) {
    throw new CorruptedError(`expected a NumPy array value of ${total} bytes at offset ${where ?? "?"}`);
  }
  const header = parsePayloadHeader(head.subarray(ext[1]), ext[2], where);
  return { header, start: ext[1] + header.headerLength };
}

/** A whole ext-78 payload decoded (what a msgpack extension decoder calls). */
export function decodeArrayPayload(payload: Uint8Array, where?: number): NDArray {
  const header = parsePayloadHeader(payload, payload.length, where);
  return decodeArray(header, payload.subarray(header.headerLength));
}

/** The whole array from its element bytes as stored (tiled or C order). */
export function decodeArray(header: ArrayHeader, elements: Uint8Array): NDArray {
  const nbytes = header.size * header.itemsize;
  if (elements.length !== nbytes) {
    throw new CorruptedError(`${label()}: ${header.dtype} of shape [${header.shape}] needs ${nbytes} bytes, given ${elements.length}`);
  }
  const out = new Uint8Array(nbytes);
  if (header.tile === null || isTrivial(header.shape, header.tile)) out.set(elements);
  else untile(elements, header.shape, header.tile, header.itemsize, out);
  return finish(header, header.shape.slice(), out, header.size);
}

function finish(header: ArrayHeader, shape: number[], bytes: Uint8Array, count: number, where?: number): NDArray {
  const bad = badText(header.dt, bytes, count);
  if (bad >= 0) throw new CorruptedError(`${label(where)}: holds str elements with code points past U+10FFFF`);
  return { dtype: header.dtype, shape, data: typedData(header.dt, bytes) };
}

/** Reads `length` element bytes at `offset` from the array's first element byte. */
export type ElementReader = (offset: number, length: number) => Promise<Uint8Array>;

export interface ArrayReaderOptions {
  /** Largest gap in bytes between two runs read as one request (default `READ_GAP`). */
  gap?: number;
}

/** One axis of a selection: indices `low + j * step` (j < count, step >= 1), reversed in the
 * result when `flip`; `keep` false for an axis dropped by an int index. */
interface Axis {
  low: number;
  count: number;
  step: number;
  flip: boolean;
  keep: boolean;
}

/** A lazily read array: selections read only the runs (C order) or tiles they touch. */
export class ArrayReader {
  private readonly gap: number;

  constructor(
    readonly header: ArrayHeader,
    private readonly readElements: ElementReader,
    options: ArrayReaderOptions = {},
  ) {
    this.gap = options.gap ?? READ_GAP;
  }

  get dtype(): string {
    return this.header.dtype;
  }

  get shape(): number[] {
    return this.header.shape.slice();
  }

  /** NumPy basic indexing: per axis an int (drops the axis), `[start, stop, step?]` (Python's
   * slice, negatives from the end) or null (whole); missing axes are whole. */
  async slice(...axes: AxisSelection[]): Promise<NDArray> {
    const { shape, itemsize } = this.header;
    const sel = selection(axes, shape);
    const outShape = sel.filter((a) => a.keep).map((a) => a.count);
    let count = 1;
    for (const a of sel) count *= a.count;
    const out = new Uint8Array(count * itemsize);
    if (count) {
      const tile = this.header.tile;
      if (tile === null || isTrivial(shape, tile)) await this.readC(sel, out);
      else await this.readTiled(sel, tile, out);
    }
    return finish(this.header, outShape, out, count);
  }

  async all(): Promise<NDArray> {
    const nbytes = this.header.size * this.header.itemsize;
    const bytes = nbytes ? await this.read(0, nbytes) : new Uint8Array(0);
    return decodeArray(this.header, bytes);
  }

  private async read(offset: number, length: number): Promise<Uint8Array> {
    const b = await this.readElements(offset, length);
    if (b.length !== length) {
      throw new TruncatedError(`${label()}: a read of ${length} element bytes at ${offset} gave ${b.length}`);
    }
    return b;
  }

  /** Bytes [starts[r], ends[r]) for every r, at most `READS_IN_FLIGHT` reads at a time. */
  private async readMany(starts: number[], ends: number[]): Promise<Uint8Array[]> {
    if (starts.length <= READS_IN_FLIGHT) return Promise.all(starts.map((a, r) => this.read(a, ends[r] - a)));
    const out = new Array<Uint8Array>(starts.length);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < starts.length) {
        const r = next++;
        out[r] = await this.read(starts[r], ends[r] - starts[r]);
      }
    };
    await Promise.all(Array.from({ length: READS_IN_FLIGHT }, worker));
    return out;
  }

  /** Output strides (bytes) of the selection's C-order result, per axis of the array, and
   * where each axis's first selected index lands (reversed axes start at their end). */
  private outLayout(sel: Axis[]): { steps: number[]; base: number } {
    const strides = cStrides(
      sel.map((a) => a.count),
      this.header.itemsize,
    );
    let base = 0;
    const steps = sel.map((a, d) => {
      if (!a.flip) return strides[d];
      base += (a.count - 1) * strides[d];
      return -strides[d];
    });
    return { steps, base };
  }

  private async readC(sel: Axis[], out: Uint8Array): Promise<void> {
    const { shape, itemsize } = this.header;
    const n = shape.length;
    const strides = cStrides(shape, itemsize);
    const { steps: outSteps, base: outBase } = this.outLayout(sel);
    const srcSteps = sel.map((a, d) => a.step * strides[d]);
    let srcBase = 0;
    for (let d = 0; d < n; d++) srcBase += sel[d].low * strides[d];
    // the run: trailing axes contiguous in the array and in the result
    let run = itemsize;
    let k = n;
    for (let d = n - 1; d >= 0; d--) {
      if (sel[d].count === 1) {
        k = d;
        continue;
      }
      if (srcSteps[d] !== run || outSteps[d] !== run) break;
      run *= sel[d].count;
      k = d;
    }
    let runs = 1;
    for (let d = 0; d < k; d++) runs *= sel[d].count;
    const batch = Math.min(runs, BATCH_RUNS);
    const srcs = new Float64Array(batch);
    const outs = new Float64Array(batch);
    const idx = new Array<number>(k).fill(0);
    let s = srcBase;
    let o = outBase;
    let m = 0;
    for (;;) {
      srcs[m] = s;
      outs[m] = o;
      m++;
      let d = k - 1;
      for (; d >= 0; d--) {
        s += srcSteps[d];
        o += outSteps[d];
        if (++idx[d] < sel[d].count) break;
        s -= srcSteps[d] * sel[d].count;
        o -= outSteps[d] * sel[d].count;
        idx[d] = 0;
      }
      if (m === batch || d < 0) {
        await this.readRuns(srcs, outs, m, run, out);
        m = 0;
      }
      if (d < 0) return;
    }
  }

  /** Read runs `srcs[i]` (ascending, `run` bytes each) and copy each to `out[outs[i]]`. */
  private async readRuns(srcs: Float64Array, outs: Float64Array, m: number, run: number, out: Uint8Array): Promise<void> {
    const starts: number[] = [];
    const ends: number[] = [];
    const firsts: number[] = []; // first run of each request
    for (let i = 0; i < m; i++) {
      const a = srcs[i];
      const r = starts.length - 1;
      if (r >= 0 && a - ends[r] <= this.gap && a + run - starts[r] <= MAX_SPAN) {
        ends[r] = a + run;
      } else {
        starts.push(a);
        ends.push(a + run);
        firsts.push(i);
      }
    }
    const bufs = await this.readMany(starts, ends);
    firsts.push(m);
    for (let r = 0; r < bufs.length; r++) {
      const buf = bufs[r];
      const base = starts[r];
      for (let i = firsts[r]; i < firsts[r + 1]; i++) {
        const from = srcs[i] - base;
        const to = outs[i];
        if (run <= 16) for (let b = 0; b < run; b++) out[to + b] = buf[from + b];
        else out.set(buf.subarray(from, from + run), to);
      }
    }
  }

  private async readTiled(sel: Axis[], tile: number[], out: Uint8Array): Promise<void> {
    const touched = sel.map((a, d) => touchedTiles(a.low, a.count, a.step, tile[d]));
    let tiles = 1;
    for (const t of touched) tiles *= t.length;
    if (tiles > TILE_READS) return this.readRows(sel, tile, touched[0], out);
    const { shape, itemsize } = this.header;
    const n = shape.length;
    const { steps: outStrides } = this.outLayout(sel);
    const absOut = outStrides.map(Math.abs);
    interface Job {
      first: number;
      end: number;
      srcSteps: number[];
      counts: number[];
      outBase: number;
      outSteps: number[];
    }
    const jobs: Job[] = [];
    const pick = new Array<number>(n).fill(0);
    for (;;) {
      const g = pick.map((p, d) => touched[d][p][0]);
      const { at, ext } = tileStart(shape, tile, g);
      const local = cStrides(ext, itemsize);
      let first = at * itemsize;
      let last = first;
      let outBase = 0;
      const counts: number[] = [];
      const srcSteps: number[] = [];
      for (let d = 0; d < n; d++) {
        const a = sel[d];
        const [gd, j0, j1] = touched[d][pick[d]];
        const lo = a.low + j0 * a.step - gd * tile[d];
        first += lo * local[d];
        last += (lo + (j1 - j0 - 1) * a.step) * local[d];
        counts.push(j1 - j0);
        srcSteps.push(a.step * local[d]);
        outBase += (a.flip ? a.count - 1 - j0 : j0) * absOut[d];
      }
      jobs.push({ first, end: last + itemsize, srcSteps, counts, outBase, outSteps: outStrides });
      let d = n - 1;
      for (; d >= 0; d--) {
        if (++pick[d] < touched[d].length) break;
        pick[d] = 0;
      }
      if (d < 0) break;
    }
    // requests: tiles in storage order (C order over the grid), merged by the gap rule
    const starts: number[] = [];
    const ends: number[] = [];
    const which: number[] = [];
    for (const job of jobs) {
      const r = starts.length - 1;
      if (r >= 0 && job.first - ends[r] <= this.gap && job.end - starts[r] <= MAX_SPAN) {
        ends[r] = Math.max(ends[r], job.end);
      } else {
        starts.push(job.first);
        ends.push(job.end);
      }
      which.push(starts.length - 1);
    }
    const bufs = await this.readMany(starts, ends);
    jobs.forEach((job, i) => {
      const r = which[i];
      copyBlock(bufs[r], job.first - starts[r], job.srcSteps, job.counts, out, job.outBase, job.outSteps, itemsize);
    });
  }

  /** A selection touching many tiles: whole rows of tiles (along the first axis) a few MB at a
   * time, each batch read once, put in C order, and the selection copied out of it. */
  private async readRows(sel: Axis[], tile: number[], rows: Array<[number, number, number]>, out: Uint8Array): Promise<void> {
    const { shape, itemsize } = this.header;
    const n0 = shape[0];
    const t0 = tile[0];
    const rowElems = this.header.size / n0; // elements of one index of the first axis
    const per = Math.max(1, Math.floor(ROWS_READ / (rowElems * itemsize * t0)));
    const { steps: outSteps, base: outBase0 } = this.outLayout(sel);
    const strides = cStrides(shape, itemsize);
    const counts = sel.map((a) => a.count);
    const srcSteps = sel.map((a, d) => a.step * strides[d]);
    let inner = 0;
    for (let d = 1; d < shape.length; d++) inner += sel[d].low * strides[d];
    const a0 = sel[0];
    let i = 0;
    while (i < rows.length) {
      let j = i + 1;
      while (j < rows.length && j - i < per && rows[j][0] === rows[j - 1][0] + 1) j++;
      const top = rows[i][0] * t0;
      const bottom = Math.min(n0, (rows[j - 1][0] + 1) * t0);
      const flat = await this.read(top * rowElems * itemsize, (bottom - top) * rowElems * itemsize);
      const slabShape = [bottom - top, ...shape.slice(1)];
      const slab = new Uint8Array(flat.length);
      untile(flat, slabShape, [Math.min(t0, bottom - top), ...tile.slice(1)], itemsize, slab);
      const j0 = rows[i][1];
      const j1 = rows[j - 1][2];
      const firstRow = a0.low + j0 * a0.step - top;
      const outBase = outBase0 + j0 * outSteps[0];
      copyBlock(slab, firstRow * strides[0] + inner, srcSteps, [j1 - j0, ...counts.slice(1)], out, outBase, outSteps, itemsize);
      i = j;
    }
  }
}

/** The tiles (of `t` along an axis) that indices `first + j * step` (j < count) touch:
 * [tile, first j in it, last j in it + 1], in order. */
function touchedTiles(first: number, count: number, step: number, t: number): Array<[number, number, number]> {
  const out: Array<[number, number, number]> = [];
  let j = 0;
  while (j < count) {
    const g = Math.floor((first + j * step) / t);
    const end = Math.ceil(((g + 1) * t - first) / step);
    const stop = Math.min(end, count);
    out.push([g, j, stop]);
    j = stop;
  }
  return out;
}

/** NumPy basic indexing of an array of `shape` (see `ArrayReader.slice`). */
function selection(axes: AxisSelection[], shape: number[]): Axis[] {
  if (axes.length > shape.length) {
    throw new RangeError(`too many indices for array: array is ${shape.length}-dimensional, but ${axes.length} were indexed`);
  }
  return shape.map((n, d): Axis => {
    const k = d < axes.length ? axes[d] : null;
    if (k === null || k === undefined) return { low: 0, count: n, step: 1, flip: false, keep: true };
    if (typeof k === "number") {
      if (!Number.isInteger(k)) throw new TypeError(`index ${k} on axis ${d} is not an integer`);
      if (k < -n || k >= n) throw new RangeError(`index ${k} is out of bounds for axis ${d} with size ${n}`);
      return { low: k < 0 ? k + n : k, count: 1, step: 1, flip: false, keep: false };
    }
    if (!Array.isArray(k) || k.length < 2 || k.length > 3) {
      throw new TypeError(`axis ${d}: expected an integer, null or [start, stop, step?], got ${String(k)}`);
    }
    for (const x of k) {
      if (x !== null && x !== undefined && !Number.isInteger(x)) {
        throw new TypeError(`axis ${d}: slice bounds must be integers or null, got ${String(x)}`);
      }
    }
    const step = k[2] ?? 1;
    if (step === 0) throw new RangeError(`axis ${d}: slice step cannot be zero`);
    const lower = step > 0 ? 0 : -1;
    const upper = step > 0 ? n : n - 1;
    const clamp = (v: number | null | undefined, dflt: number): number =>
      v === null || v === undefined ? dflt : v < 0 ? Math.max(v + n, lower) : Math.min(v, upper);
    const start = clamp(k[0], step > 0 ? lower : upper);
    const stop = clamp(k[1], step > 0 ? upper : lower);
    const count = step > 0 ? Math.max(0, Math.ceil((stop - start) / step)) : Math.max(0, Math.ceil((start - stop) / -step));
    const low = step > 0 || count === 0 ? start : start + (count - 1) * step;
    return { low, count, step: Math.abs(step), flip: step < 0 && count > 1, keep: true };
  });
}
