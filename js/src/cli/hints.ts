/**
 * The hint of a missing key: `; did you mean 'grid'?` (msglc/cli/hints.py). The keys nearest
 * to the one asked are chosen as Python's `difflib.get_close_matches` chooses them.
 */
import type { LazyView } from "../read/types.js";
import { type MP, dedupe } from "./msgpack.js";
import { pyRepr } from "./numpy.js";

const SCAN_KEYS = 10_000; // up to this many keys, every key is compared
const SCAN_BYTES = 16 << 20; // and a hash-indexed dict's entries take at most this many bytes

/** Longest-match blocks as difflib.SequenceMatcher finds them (no junk): the matched count. */
function matched(a: string[], b: string[]): number {
  const b2j = new Map<string, number[]>();
  b.forEach((c, j) => {
    const list = b2j.get(c);
    if (list) list.push(j);
    else b2j.set(c, [j]);
  });
  let total = 0;
  const queue: Array<[number, number, number, number]> = [[0, a.length, 0, b.length]];
  while (queue.length) {
    const [alo, ahi, blo, bhi] = queue.pop() as [number, number, number, number];
    let besti = alo;
    let bestj = blo;
    let best = 0;
    let j2len = new Map<number, number>();
    for (let i = alo; i < ahi; i++) {
      const next = new Map<number, number>();
      for (const j of b2j.get(a[i]) ?? []) {
        if (j < blo) continue;
        if (j >= bhi) break;
        const k = (j2len.get(j - 1) ?? 0) + 1;
        next.set(j, k);
        if (k > best) [besti, bestj, best] = [i - k + 1, j - k + 1, k];
      }
      j2len = next;
    }
    if (best) {
      total += best;
      if (alo < besti && blo < bestj) queue.push([alo, besti, blo, bestj]);
      if (besti + best < ahi && bestj + best < bhi) queue.push([besti + best, ahi, bestj + best, bhi]);
    }
  }
  return total;
}

/** `difflib.get_close_matches(word, possibilities, n, cutoff)`. */
export function closeMatches(word: string, possibilities: string[], n = 3, cutoff = 0.6): string[] {
  const b = Array.from(word);
  const scored: Array<[number, string]> = [];
  for (const x of possibilities) {
    const a = Array.from(x);
    const total = a.length + b.length;
    const ratio = total ? (2 * matched(a, b)) / total : 1;
    if (ratio >= cutoff) scored.push([ratio, x]);
  }
  scored.sort((p, q) => q[0] - p[0] || (q[1] > p[1] ? 1 : q[1] < p[1] ? -1 : 0));
  return scored.slice(0, n).map(([, x]) => x);
}

function keyText(k: unknown): [string, string] {
  // (str(key), repr(key))
  if (typeof k === "string") return [k, pyRepr({ t: "str", v: k })];
  return [String(k), String(k)];
}

function mpKey(k: MP): unknown {
  return k.t === "str" ? k.v : k.t === "int" ? k.v : null;
}

/** `"; did you mean 'x'?"` for a key `missing` that the dict `d` does not hold, or "". */
export async function closeKeysHint(d: LazyView | MP, missing: string): Promise<string> {
  try {
    let keys: unknown[];
    if ("t" in d) {
      if (d.t !== "map") return "";
      keys = dedupe(d.entries).map(([k]) => mpKey(k)).filter((k) => k !== null);
    } else {
      if (d.length > SCAN_KEYS || (await d.storedSize()) > SCAN_BYTES) return "";
      keys = await d.keys(0, d.length);
    }
    const byText = new Map<string, string>();
    for (const k of keys) {
      const [text, repr] = keyText(k);
      if (!byText.has(text)) byText.set(text, repr);
    }
    const names = closeMatches(missing, [...byText.keys()]).map((t) => byText.get(t) as string);
    if (!names.length) return "";
    const listed = names.length === 1 ? names[0] : names.slice(0, -1).join(", ") + " or " + names[names.length - 1];
    return `; did you mean ${listed}?`;
  } catch {
    return "";
  }
}
