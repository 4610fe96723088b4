/**
 * Paths into an archive (Python's msglc/read/paths.py): `"a/b/3"` or `["a", "b", 3]`,
 * resolved against lazy views.
 *
 * - A str path is split on "/", empty segments dropped; `""` is the root.
 * - On a dict, a segment is a key; a str segment the dict does not hold that reads as an int
 *   (`-?[0-9]+`) is tried as that int key; else `KeyNotFoundError` naming the path.
 * - On a list, a str segment is an int as Python's `int()` reads it (sign, spaces,
 *   underscores between digits), or a slice `start:stop` / `start:step:stop` (the middle
 *   part is the step; empty parts mean 0, 1 and the length), whose out-of-range bounds wrap
 *   by the length as the published msglc computes them (`normalisedSlice`); a slice gives a
 *   list of the rest of the path below each item. An int segment keeps Python's meaning
 *   (negative from the end; out of range: `IndexOutOfRangeError`).
 * - On an array (kind "array"), the next `ndim` segments index it at once: "m/3/4" is m[3, 4].
 * - On a scalar: `TypeError`.
 */
import { IndexOutOfRangeError, KeyNotFoundError } from "../errors.js";
import { PlainView, joinPath, plainOfArray } from "./views.js";
import type { AxisSelection, Key, LazyView, Path } from "./types.js";

export type Segment = Key;

export function splitPath(path: Path | null | undefined): Segment[] {
  if (path === null || path === undefined) return [];
  if (typeof path === "string") return path.split("/").filter((s) => s !== "");
  if (Array.isArray(path)) return [...path];
  throw new TypeError(`a path is a str like 'a/b/3' or a list of keys and indices, not ${typeof path}`);
}

const PY_INT = /^\s*[+-]?[0-9]+(?:_[0-9]+)*\s*$/;
const DICT_INT = /^-?[0-9]+$/;

/** Python's `int(text)` for ASCII digits, or null. */
export function pyInt(text: string): number | bigint | null {
  if (!PY_INT.test(text)) return null;
  const clean = text.trim().replace(/_/g, "");
  const n = Number(clean);
  return Number.isSafeInteger(n) ? n : BigInt(clean);
}

/** A Python slice: start, stop, step (`step` nonzero). */
export interface PySlice {
  start: number;
  stop: number;
  step: number;
}

/** The slice a segment `start:step:stop` means on a list of `n` (the published msglc's wrap). */
export function normalisedSlice(start: number, step: number, stop: number, n: number): PySlice {
  if (n) {
    if (!(-n <= start && start < n)) start = mod(start, n) - (start < 0 ? n : 0);
    if (!(1 - n <= stop && stop <= n)) stop = mod(stop - 1, n) + (stop < 0 ? 1 - n : 1);
  }
  return { start, stop, step };
}

function mod(a: number, n: number): number {
  return ((a % n) + n) % n;
}

/** Python's `range(*slice(start, stop, step).indices(n))` as an array of indices. */
export function sliceIndices(s: PySlice, n: number): number[] {
  const { step } = s;
  let { start, stop } = s;
  if (step === 0) throw new RangeError("slice step cannot be zero");
  if (step > 0) {
    start = start < 0 ? Math.max(0, start + n) : Math.min(start, n);
    stop = stop < 0 ? Math.max(0, stop + n) : Math.min(stop, n);
  } else {
    start = start < 0 ? Math.max(-1, start + n) : Math.min(start, n - 1);
    stop = stop < 0 ? Math.max(-1, stop + n) : Math.min(stop, n - 1);
  }
  const out: number[] = [];
  if (step > 0) for (let i = start; i < stop; i += step) out.push(i);
  else for (let i = start; i > stop; i += step) out.push(i);
  return out;
}

function joined(segs: Segment[]): string {
  return segs.map(String).join("/");
}

/** A list segment as an index (a number, maybe out of range) or a slice. */
export function listSegment(seg: Segment, n: number, where: () => Segment[]): number | PySlice {
  if (typeof seg !== "string") return Number(seg);
  const index = pyInt(seg);
  if (index !== null) return Number(index);
  const parts = seg.split(":");
  if (parts.length >= 2 && parts.length <= 3) {
    const [start, step, stop] = [parts[0], parts.length === 3 ? parts[1] : "", parts[parts.length - 1]];
    const b = [start ? pyInt(start) : 0, step ? pyInt(step) : 1, stop ? pyInt(stop) : n];
    if (!b.includes(null)) return normalisedSlice(Number(b[0]), Number(b[1]), Number(b[2]), n);
  }
  throw new TypeError(`list index must be an int, 'start:stop' or 'start:step:stop', not ${JSON.stringify(seg)} (at ${joined(where())})`);
}

/** The view at `segments` below `view` (`done`: the segments that led to it). A loop, not
 * recursion, over the segments (a path may be thousands of segments deep); the path an error
 * names is built only when there is one. */
export async function resolve(view: LazyView, segments: Segment[], done: Segment[] = []): Promise<LazyView> {
  let obj = view;
  for (let depth = 0; depth < segments.length; depth++) {
    const seg = segments[depth];
    const where = (): Segment[] => [...done, ...segments.slice(0, depth + 1)];
    if (obj.kind === "array") {
      const shape = obj.shape ?? [];
      const take = segments.slice(depth, depth + Math.max(shape.length, 1));
      const axes: AxisSelection[] = take.map((s, k) => {
        const at = (): Segment[] => [...done, ...segments.slice(0, depth + k + 1)];
        const n = k < shape.length ? shape[k] : 0;
        const ix = listSegment(s, n, at);
        if (typeof ix === "number") {
          if (!(Number.isInteger(ix) && ix >= -n && ix < n)) throw new IndexOutOfRangeError(ix, n, joined(at()));
          return ix;
        }
        return [ix.start, ix.stop, ix.step];
      });
      const value = plainOfArray(await obj.slice(...axes));
      const below = [...done, ...segments.slice(0, depth + take.length)];
      return resolve(new PlainView(value, joined(below)), segments.slice(depth + take.length), below);
    }
    if (obj.kind === "list") {
      const ix = listSegment(seg, obj.length, where);
      if (typeof ix !== "number") {
        const before = [...done, ...segments.slice(0, depth)];
        const items: unknown[] = [];
        for (const i of sliceIndices(ix, obj.length)) {
          const item = await resolve(await obj.get(i), segments.slice(depth + 1), [...before, i]);
          items.push(await item.value());
        }
        return new PlainView(items, joined(where()));
      }
      obj = await obj.get(ix);
    } else if (obj.kind === "dict") {
      obj = await dictValue(obj, seg, where);
    } else {
      const v = await obj.value();
      const kind = v === null ? "None" : v instanceof Uint8Array ? "bytes" : v instanceof Date ? "datetime" : typeof v;
      throw new TypeError(`cannot look up ${JSON.stringify(String(seg))} in a ${kind} (at ${joined(where().slice(0, -1)) || "the root"})`);
    }
  }
  return obj;
}

async function dictValue(d: LazyView, seg: Segment, where: () => Segment[]): Promise<LazyView> {
  try {
    return await d.get(seg);
  } catch (e) {
    if (!(e instanceof KeyNotFoundError)) throw e;
  }
  if (typeof seg === "string" && DICT_INT.test(seg)) {
    const n = Number(seg);
    const key = Number.isSafeInteger(n) ? n : BigInt(seg);
    try {
      return await d.get(key);
    } catch (e) {
      if (!(e instanceof KeyNotFoundError)) throw e;
    }
  }
  throw new KeyNotFoundError(seg, joined(where()));
}

export { joinPath };
