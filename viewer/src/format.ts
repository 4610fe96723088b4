/** Text for values: sizes, counts, JSON-like renderings, hex, and the Python expression that
 * reads a path. Pure functions, no DOM. */
import type { Key, NDArray } from "msglc";

export function count(n: number): string {
  return n.toLocaleString("en");
}

export function bytesText(n: number): string {
  if (n < 1024) return `${count(n)} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

export function isNDArray(v: unknown): v is NDArray {
  return (
    typeof v === "object" &&
    v !== null &&
    typeof (v as NDArray).dtype === "string" &&
    Array.isArray((v as NDArray).shape) &&
    ArrayBuffer.isView((v as NDArray).data)
  );
}

/** A key as Python writes it: `'name'` or `42`. */
export function pyLiteral(k: Key): string {
  if (typeof k === "string") return JSON.stringify(k);
  return String(k);
}

/** `reader["runs/42/energy"]`, or `reader[["a/b", 3]]` when a segment cannot be spelled in a
 * str path (a key with "/", an empty key, a dict key that is an int, a str that looks like an int
 * under a list). `listParent[i]` tells whether segment i indexes a list. */
export function pythonExpression(segments: readonly Key[], listParent: readonly boolean[]): string {
  if (segments.length === 0) return "reader.read()";
  const plain = segments.every((s, i) =>
    listParent[i] ? typeof s === "number" : typeof s === "string" && s !== "" && !s.includes("/"),
  );
  if (plain) return `reader[${JSON.stringify(segments.map(String).join("/"))}]`;
  return `reader[[${segments.map(pyLiteral).join(", ")}]]`;
}

export function hexDump(bytes: Uint8Array, limit: number): string {
  const n = Math.min(bytes.length, limit);
  const lines: string[] = [];
  for (let at = 0; at < n; at += 16) {
    const row = bytes.subarray(at, Math.min(at + 16, n));
    let hex = "";
    let text = "";
    for (let i = 0; i < row.length; i++) {
      hex += row[i].toString(16).padStart(2, "0") + (i === 7 ? "  " : " ");
      text += row[i] >= 0x20 && row[i] < 0x7f ? String.fromCharCode(row[i]) : ".";
    }
    lines.push(`${at.toString(16).padStart(8, "0")}  ${hex.padEnd(49)} ${text}`);
  }
  return lines.join("\n");
}

function numberText(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  return String(x);
}

/** For a NumPy str (`<U5`) or bytes (`|S5`) array, given as raw bytes: element i as text
 * (trailing NULs dropped, as NumPy does); null for other dtypes. */
function textElements(a: NDArray): ((i: number) => string) | null {
  const m = /^([<>=|]?)([US])(\d+)$/.exec(a.dtype);
  if (!m || !(a.data instanceof Uint8Array)) return null;
  const bytes = a.data;
  const chars = Number(m[3]);
  if (m[2] === "S") {
    return (i) => {
      let end = (i + 1) * chars;
      while (end > i * chars && bytes[end - 1] === 0) end--;
      return "b" + JSON.stringify(Array.from(bytes.subarray(i * chars, end), (b) => String.fromCharCode(b)).join(""));
    };
  }
  const little = m[1] !== ">";
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return (i) => {
    let end = chars;
    while (end > 0 && view.getUint32((i * chars + end - 1) * 4, little) === 0) end--;
    let s = "";
    for (let c = 0; c < end; c++) {
      const cp = view.getUint32((i * chars + c) * 4, little);
      s += cp <= 0x10ffff ? String.fromCodePoint(cp) : "\ufffd";
    }
    return JSON.stringify(s);
  };
}

/** Elements of an NDArray as nested lists (C order). */
export function ndText(a: NDArray, budget: number): string {
  const n = a.shape.reduce((p, d) => p * d, 1);
  const data = a.data;
  const text = textElements(a);
  const raw = text === null && data instanceof Uint8Array && !/^[|<>=]?[ub]1$/.test(a.dtype);
  if (raw) return `<${count(n)} elements of ${a.dtype}: ${count(data.length)} raw bytes>`;
  let out = "";
  const walk = (axis: number, at: number, indent: string): void => {
    if (out.length > budget) return;
    if (axis === a.shape.length) {
      if (text !== null) {
        out += text(at);
        return;
      }
      const x = data[at];
      out += typeof x === "bigint" ? x.toString() : numberText(x as number);
      return;
    }
    const len = a.shape[axis];
    const stride = a.shape.slice(axis + 1).reduce((p, d) => p * d, 1);
    out += "[";
    for (let i = 0; i < len; i++) {
      if (i) out += axis === a.shape.length - 1 ? ", " : ",\n" + indent + " ";
      walk(axis + 1, at + i * stride, indent + " ");
      if (out.length > budget) {
        out += " …";
        return;
      }
    }
    out += "]";
  };
  walk(0, 0, "");
  return out;
}

/** A JSON-like rendering (Python-flavoured where JSON has no word: bytes, NaN, arrays), at most
 * about `budget` characters; the second item says whether it was cut. */
export function formatValue(value: unknown, budget = 200_000): [string, boolean] {
  const parts: string[] = [];
  let length = 0;
  let cut = false;
  const push = (s: string): boolean => {
    if (length + s.length > budget) {
      parts.push(s.slice(0, Math.max(0, budget - length)));
      length = budget;
      cut = true;
      return false;
    }
    parts.push(s);
    length += s.length;
    return true;
  };
  const walk = (v: unknown, indent: string): boolean => {
    if (v === null || v === undefined) return push("null");
    if (typeof v === "string") return push(JSON.stringify(v));
    if (typeof v === "number") return push(numberText(v));
    if (typeof v === "bigint") return push(v.toString());
    if (typeof v === "boolean") return push(v ? "true" : "false");
    if (v instanceof Uint8Array) {
      const shown = Array.from(v.subarray(0, 32), (b) => b.toString(16).padStart(2, "0")).join("");
      return push(`<bytes, ${count(v.length)}: ${shown}${v.length > 32 ? "…" : ""}>`);
    }
    if (isNDArray(v)) return push(`array(${v.dtype}, shape (${v.shape.join(", ")}${v.shape.length === 1 ? "," : ""})) ` + ndText(v, 2000));
    if (v instanceof Date) return push(JSON.stringify(v.toISOString()));
    const entries: [string, unknown][] | null =
      v instanceof Map
        ? Array.from(v.entries(), ([k, x]) => [typeof k === "string" ? JSON.stringify(k) : String(k), x])
        : Array.isArray(v)
          ? null
          : typeof v === "object"
            ? Object.entries(v as Record<string, unknown>).map(([k, x]) => [JSON.stringify(k), x])
            : [];
    if (entries === null) {
      const list = v as unknown[];
      if (list.length === 0) return push("[]");
      const flat = list.every((x) => x === null || typeof x !== "object");
      if (flat) {
        if (!push("[")) return false;
        for (let i = 0; i < list.length; i++) {
          if (i && !push(", ")) return false;
          if (!walk(list[i], indent)) return false;
        }
        return push("]");
      }
      if (!push("[\n")) return false;
      for (let i = 0; i < list.length; i++) {
        if (!push(indent + "  ")) return false;
        if (!walk(list[i], indent + "  ")) return false;
        if (!push(i < list.length - 1 ? ",\n" : "\n")) return false;
      }
      return push(indent + "]");
    }
    if (typeof v !== "object") return push(String(v));
    if (entries.length === 0) return push("{}");
    if (!push("{\n")) return false;
    for (let i = 0; i < entries.length; i++) {
      if (!push(`${indent}  ${entries[i][0]}: `)) return false;
      if (!walk(entries[i][1], indent + "  ")) return false;
      if (!push(i < entries.length - 1 ? ",\n" : "\n")) return false;
    }
    return push(indent + "}");
  };
  walk(value, "");
  return [parts.join(""), cut];
}

/** A one-line preview for the tree. */
export function preview(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v.length > 60 ? v.slice(0, 60) + "…" : v);
  if (v instanceof Uint8Array) return `bytes, ${count(v.length)}`;
  if (isNDArray(v)) return `array ${v.dtype} (${v.shape.join(", ")})`;
  if (Array.isArray(v)) return `list of ${count(v.length)}`;
  if (v instanceof Map) return `dict of ${count(v.size)}`;
  if (v !== null && typeof v === "object" && !(v instanceof Date)) return `dict of ${count(Object.keys(v).length)}`;
  const [text] = formatValue(v, 80);
  return text;
}

/** The type of a plain value, as the tree's type column shows it. */
export function typeName(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "string") return "str";
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float";
  if (typeof v === "bigint") return "int";
  if (typeof v === "boolean") return "bool";
  if (v instanceof Uint8Array) return "bytes";
  if (isNDArray(v)) return "array";
  if (Array.isArray(v)) return "list";
  if (v instanceof Date) return "datetime";
  return "dict";
}

/** Numbers of a plain list, or null when it holds anything else. */
export function numericList(v: unknown): Float64Array | null {
  if (!Array.isArray(v) || v.length < 2) return null;
  const out = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x === "number") out[i] = x;
    else if (typeof x === "bigint") out[i] = Number(x);
    else if (typeof x === "boolean") out[i] = x ? 1 : 0;
    else return null;
  }
  return out;
}

/** A plain list of equal-length numeric lists as a row-major matrix, or null. */
export function numericMatrix(v: unknown): { rows: number; cols: number; data: Float64Array } | null {
  if (!Array.isArray(v) || v.length < 2 || !Array.isArray(v[0])) return null;
  const cols = (v[0] as unknown[]).length;
  if (cols < 2) return null;
  const data = new Float64Array(v.length * cols);
  for (let r = 0; r < v.length; r++) {
    const row = v[r];
    if (!Array.isArray(row) || row.length !== cols) return null;
    for (let c = 0; c < cols; c++) {
      const x = row[c];
      if (typeof x === "number") data[r * cols + c] = x;
      else if (typeof x === "bigint") data[r * cols + c] = Number(x);
      else return null;
    }
  }
  return { rows: v.length, cols, data };
}

/** The elements of a numeric NDArray as doubles, or null (raw bytes: float16, complex, ...). */
export function ndNumbers(a: NDArray): Float64Array | null {
  const d = a.data;
  if (d instanceof Uint8Array && !/^[|<>=]?[ub]1$/.test(a.dtype)) return null;
  if (d instanceof Float64Array) return d;
  const out = new Float64Array(d.length);
  if (d instanceof BigInt64Array || d instanceof BigUint64Array) {
    for (let i = 0; i < d.length; i++) out[i] = Number(d[i]);
  } else {
    out.set(d as ArrayLike<number>);
  }
  return out;
}

/** Is this dtype one whose elements the reader gives as numbers? */
export function numericDtype(dtype: string): boolean {
  const m = /^[|<>=]?([biuf])(\d+)$/.exec(dtype);
  if (!m) return false;
  return m[1] !== "f" || m[2] === "4" || m[2] === "8";
}

/** 2nd, 3rd, 11th, 21st. */
export function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[n % 10] ?? "th";
  return `${n}${s}`;
}
