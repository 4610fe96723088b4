/**
 * The hint of a missing key: `; did you mean 'grid'?` (msglc/cli/hints.py). The keys nearest
 * to the one asked are chosen as Python's `difflib.get_close_matches` chooses them.
 */
import type { LazyView } from "../read/types.js";
import { KeyNotFoundError } from "../errors.js";
import { type MP, dedupe } from "./msgpack.js";
import { pyRepr } from "./numpy.js";

const SCAN_KEYS = 10_000; // up to this many keys, every key is compared
const SCAN_BYTES = 16 << 20; // and a hash-indexed dict's entries take at most this many bytes
const PROBES = 20_000; // at most this many lookups of keys one edit away, for larger dicts
const SAMPLE_KEYS = 256; // keys read from the start of a large dict to learn the characters its keys use

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
    } else if (d.length > SCAN_KEYS || (await d.storedSize()) > SCAN_BYTES) {
      return listed(await probedKeys(d, missing));
    } else {
      keys = await d.keys(0, d.length);
    }
    const byText = new Map<string, string>();
    for (const k of keys) {
      const [text, repr] = keyText(k);
      if (!byText.has(text)) byText.set(text, repr);
    }
    return listed(closeMatches(missing, [...byText.keys()]).map((t) => byText.get(t) as string));
  } catch {
    return "";
  }
}

function listed(names: string[]): string {
  if (!names.length) return "";
  const text = names.length === 1 ? names[0] : names.slice(0, -1).join(", ") + " or " + names[names.length - 1];
  return `; did you mean ${text}?`;
}

/** The keys of a large dict one edit away from `missing` (msglc/cli/hints.py `close_keys`:
 * its keys are never listed; at most PROBES lookups), nearest first, as reprs. */
async function probedKeys(d: LazyView, missing: string): Promise<string[]> {
  const alphabet = new Set(Array.from(missing));
  for (const k of await d.keys(0, Math.min(SAMPLE_KEYS, d.length))) for (const c of Array.from(String(k))) alphabet.add(c);
  const found = new Map<string, string>();
  for (const text of oneEditAway(missing, [...alphabet].sort(byCodePoint), PROBES)) {
    for (const key of [text, intKey(text)]) {
      if (key === null || found.has(text)) continue;
      try {
        await d.get(key);
        found.set(text, keyText(key)[1]);
      } catch (e) {
        if (!(e instanceof KeyNotFoundError)) throw e;
      }
    }
  }
  return closeMatches(missing, [...found.keys()], 3, 0).map((t) => found.get(t) as string);
}

function byCodePoint(a: string, b: string): number {
  return (a.codePointAt(0) ?? 0) - (b.codePointAt(0) ?? 0);
}

/** The int key a path segment also names (`-?[0-9]+`), else null. */
function intKey(text: string): number | bigint | null {
  if (!/^-?[0-9]+$/.test(text)) return null;
  const n = BigInt(text);
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
}

function title(word: string): string {
  let out = "";
  let prevCased = false;
  for (const c of word) {
    const cased = c.toLowerCase() !== c.toUpperCase();
    out += cased ? (prevCased ? c.toLowerCase() : c.toUpperCase()) : c;
    prevCased = cased;
  }
  return out;
}

function swapcase(word: string): string {
  let out = "";
  for (const c of word) out += c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase();
  return out;
}

/** Python's `one_edit_away`: distinct strings one edit from `word`, case variants first. */
export function oneEditAway(word: string, alphabet: string[], limit: number): string[] {
  const w = Array.from(word);
  const m = w.length;
  const room = Math.max(0, Math.floor((limit - 2 * m - 3) / (2 * m + 1)));
  const letters = alphabet.slice(0, room);
  const out = new Set<string>([word.toLowerCase(), word.toUpperCase(), title(word), swapcase(word)]);
  const cut = (a: number, b: number): string => w.slice(a, b).join("");
  for (let i = 0; i < m; i++) out.add(cut(0, i) + cut(i + 1, m));
  for (let i = 0; i < m - 1; i++) out.add(cut(0, i) + w[i + 1] + w[i] + cut(i + 2, m));
  for (let i = 0; i < m; i++) for (const c of letters) out.add(cut(0, i) + c + cut(i + 1, m));
  for (let i = 0; i <= m; i++) for (const c of letters) out.add(cut(0, i) + c + cut(i, m));
  out.delete(word);
  return [...out].slice(0, limit);
}
