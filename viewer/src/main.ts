/** The msglc viewer: open an archive (file, drop, or URL), browse it as a lazily expanded tree,
 * look at one value at a time. Every read goes through the reader's lazy views, so what is
 * read is what is shown. */
import {
  ArchiveChangedError,
  CorruptedError,
  HttpError,
  IndexOutOfRangeError,
  KeyNotFoundError,
  NotAnArchiveError,
  TruncatedError,
  UnsupportedVersionError,
  MsglcError,
  NODE_KINDS,
  open,
  type AxisSelection,
  type Key,
  type LazyReader,
  type LazyView,
  type NDArray,
} from "msglc";
import "uplot/dist/uPlot.min.css";
import "./style.css";
import {
  bytesText,
  count,
  formatValue,
  hexDump,
  isNDArray,
  ndNumbers,
  ndText,
  numericDtype,
  numericList,
  numericMatrix,
  ordinal,
  preview,
  pythonExpression,
  typeName,
} from "./format";
import { heatmap, linePlot } from "./plot";

const PAGE = 100; // children shown at a time
const CHILD_BYTES = 8 << 20; // bytes a page's children may cost before the rest wait for a click
const CHILDREN_IN_FLIGHT = 6; // lookups of a page's children at once (a browser's connections per host)
const STRING_SHOWN = 2000; // characters of a string before "show all"
const BYTES_SHOWN = 512; // bytes in the hex dump before "show all"
const LINE_POINTS = 4000; // samples of a 1-D array plotted
const HEAT_COLS = 640; // samples of a heatmap, at most, across
const HEAT_ROWS = 560; // and down
const COARSE_ROWS = 160; // a heatmap of more sample rows is drawn coarse first
const LIST_PLOT = 200_000; // a list this long or shorter may be read whole to plot it
const TEXT_ELEMENTS = 1000; // an array this small is also shown as text
const TEXT_BYTES = 64 << 10; // a dict or list stored in this many bytes or fewer is shown as text
const SMALL_CONTAINER = 20; // a dict or list this short, of small values only, is shown as text

function $(id: string): HTMLElement {
  const e = document.getElementById(id);
  if (e === null) throw new Error(`the page has no #${id}`);
  return e;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function button(text: string, cls: string, onClick: () => void, title?: string): HTMLButtonElement {
  const b = el("button", cls, text);
  b.type = "button";
  if (title) b.title = title;
  b.addEventListener("click", onClick);
  return b;
}

/** One node of the tree: a lazy view (or a plain value inside one) at a path. */
interface Node {
  segments: Key[];
  /** For each segment: does it index a list (else a dict key)? */
  listParent: boolean[];
  view: LazyView;
  elem: HTMLElement;
  row: HTMLElement;
  children: HTMLElement | null;
  start: number;
}

let reader: LazyReader | null = null;
let generation = 0; // bumped by each open: late answers for an old archive are dropped
let selected: HTMLElement | null = null;

// for tests and the benchmark: the open reader (its stats count the bytes read)
(window as unknown as { msglcViewer: { reader: () => LazyReader | null; busy: () => number } }).msglcViewer = {
  reader: () => reader,
  busy: () => pending,
};
let pending = 0;

async function track<T>(p: Promise<T>): Promise<T> {
  pending++;
  document.body.classList.add("busy");
  try {
    return await p;
  } finally {
    pending--;
    if (pending === 0) document.body.classList.remove("busy");
    showStats();
  }
}

function showStats(): void {
  if (reader === null) return;
  const s = reader.stats;
  $("stats").textContent = `${count(s.requests)} reads, ${bytesText(s.bytes)}`;
}

// -- messages --

function errorText(e: unknown): [string, string] {
  const m = e instanceof Error ? e.message : String(e);
  if (e instanceof NotAnArchiveError) return ["This is not an msglc archive", m];
  if (e instanceof UnsupportedVersionError) return ["This archive's version is not supported by this viewer", m];
  if (e instanceof TruncatedError) return ["The archive is damaged: it is cut short", m];
  if (e instanceof CorruptedError) return ["The archive is damaged", m];
  if (e instanceof ArchiveChangedError) return ["The archive changed since it was opened: open it again", m];
  if (e instanceof MsglcError) return ["The archive cannot be read", m];
  if (e instanceof KeyNotFoundError) return ["No such key", m];
  if (e instanceof IndexOutOfRangeError) return ["No such index", m];
  if (e instanceof HttpError) {
    const what = e.status === undefined ? "no answer from the server" : `the server answered ${e.status}`;
    return [`The archive could not be fetched (${what})`, m];
  }
  if (e instanceof TypeError && /fetch/i.test(m)) return ["The archive could not be fetched", m];
  return ["Something went wrong", m];
}

function showMessage(e: unknown): void {
  const [title, detail] = errorText(e);
  const box = $("message");
  box.replaceChildren(el("strong", "", title), el("div", "detail", detail), button("×", "close", () => (box.hidden = true), "dismiss"));
  box.hidden = false;
  box.dataset.kind = e instanceof Error ? e.name : "Error";
  console.error(e);
}

function clearMessage(): void {
  $("message").hidden = true;
}

// -- opening --

async function openArchive(input: Blob | URL, name: string): Promise<void> {
  const gen = ++generation;
  clearMessage();
  const old = reader;
  reader = null;
  if (old) old.close().catch(() => {});
  $("archive-name").textContent = name;
  $("stats").textContent = "";
  $("tree").replaceChildren();
  $("info").replaceChildren();
  $("detail").replaceChildren();
  $("welcome").hidden = true;
  document.title = `${name} · msglc viewer`;
  try {
    const r = await track(open(input));
    if (gen !== generation) {
      r.close().catch(() => {});
      return;
    }
    reader = r;
    const root = await track(r.lazy(""));
    if (gen !== generation) return;
    $("tree").hidden = false;
    $("panel").hidden = false;
    const node = addNode($("tree"), [], [], root, "(root)");
    await expand(node);
    select(node);
    showInfo(r).catch(showMessage);
  } catch (e) {
    if (gen !== generation) return;
    $("tree").hidden = true;
    $("panel").hidden = true;
    $("welcome").hidden = false;
    showMessage(e);
  } finally {
    showStats();
  }
}

function infoRow(table: HTMLElement, label: string, value: string): void {
  const tr = el("tr");
  tr.append(el("th", "", label), el("td", "", value));
  table.append(tr);
}

async function showInfo(r: LazyReader): Promise<void> {
  const info = await track(r.info());
  const details = el("details", "info");
  details.id = "info-panel";
  const summary = el("summary", "", "Archive");
  details.append(summary);
  const table = el("table");
  const num = (k: string): number | null => (typeof info[k] === "number" ? (info[k] as number) : null);
  const version = Array.isArray(info.version) ? (info.version as number[]).join(".") : String(info.version);
  infoRow(table, "format", `${String(info.format ?? "msglc")} ${version}`);
  const compression = info.compression ? String(info.compression) : "none";
  const data = num("data_size");
  const stored = num("stored_data_size");
  const ratio = num("ratio") ?? (data !== null && stored ? data / stored : null);
  infoRow(table, "compression", info.compression && ratio !== null ? `${compression}, ratio ${ratio.toFixed(2)}x` : compression);
  if (num("file_size") !== null) infoRow(table, "file", bytesText(num("file_size")!) + ` (${count(num("file_size")!)} bytes)`);
  if (data !== null) infoRow(table, "data", bytesText(data) + (info.compression && stored !== null ? `, ${bytesText(stored)} stored` : ""));
  if (num("toc_size") !== null) infoRow(table, "TOC", bytesText(num("toc_size")!));
  if (num("free_space")) infoRow(table, "free space", bytesText(num("free_space")!));
  if (num("threshold") !== null) infoRow(table, "threshold", `${count(num("threshold")!)} bytes`);
  const root = info.root as Record<string, unknown> | null;
  if (root && typeof root === "object") {
    const bits = [String(root.kind)];
    if (typeof root.length === "number") bits.push(`${count(root.length)} entries`);
    if (typeof root.children === "number") bits.push(`${count(root.children)} lazy children`);
    if (typeof root.blocks === "number" && root.blocks) bits.push(`${count(root.blocks)} blocks`);
    infoRow(table, "root node", bits.join(", "));
  } else {
    infoRow(table, "root node", "none (a small root, read whole)");
  }
  nodeCountsRow(r, table, num("toc_size") ?? 0);
  const shown = new Set(["version", "format", "compression", "ratio", "file_size", "data_size", "stored_data_size", "toc_size", "free_space", "threshold", "root"]);
  for (const [k, v] of Object.entries(info)) {
    if (shown.has(k) || v === null || typeof v === "object") continue;
    infoRow(table, k.replace(/_/g, " "), typeof v === "number" ? count(v) : String(v));
  }
  details.append(table);
  const brief = [`${String(info.format ?? "msglc")} ${version}`];
  if (num("file_size") !== null) brief.push(bytesText(num("file_size")!));
  brief.push(info.compression && ratio !== null ? `${compression} ${ratio.toFixed(2)}x` : "not compressed");
  if (num("threshold") !== null) brief.push(`threshold ${count(num("threshold")!)} B`);
  summary.append(el("span", "brief", " · " + brief.join(" · ")));
  $("info").replaceChildren(details);
}

/** TOC nodes read at once when the TOC is at most this long; a longer one on a click, since
 * counting reads every node (opening a 10 GB archive must stay a few small reads). */
const COUNT_NODES_AT_ONCE = 512 * 1024;

function nodeCountsRow(r: LazyReader, table: HTMLElement, tocSize: number): void {
  const tr = el("tr");
  const cell = el("td", "");
  cell.id = "node-counts";
  tr.append(el("th", "", "TOC nodes"), cell);
  table.append(tr);
  const fill = async (): Promise<void> => {
    cell.textContent = "counting...";
    try {
      const c = await track(r.nodeCounts());
      const parts = NODE_KINDS.filter((k) => c[k]).map((k) => `${count(c[k])} ${k}`);
      cell.textContent = (parts.length ? parts.join(", ") : "none") + `; ${count(c.blocks)} blocks read whole`;
    } catch (e) {
      cell.textContent = `cannot count: ${(e as Error).message}`;
    }
  };
  if (tocSize <= COUNT_NODES_AT_ONCE) void fill();
  else {
    const button = el("button", "", `count (reads the TOC: ${bytesText(tocSize)})`);
    button.addEventListener("click", () => void fill());
    cell.append(button);
  }
}

// -- the tree --

function pathText(segments: readonly Key[]): string {
  return segments.map(String).join("/");
}

function kindText(view: LazyView): string {
  if (view.kind === "dict") return `dict · ${count(view.length)}`;
  if (view.kind === "list") return `list · ${count(view.length)}`;
  if (view.kind === "array") return `array ${view.dtype ?? ""} (${(view.shape ?? []).join(", ")})`;
  return "";
}

function addNode(host: HTMLElement, segments: Key[], listParent: boolean[], view: LazyView, label: string): Node {
  const elem = el("div", "node");
  elem.dataset.path = pathText(segments);
  elem.dataset.kind = view.kind;
  const row = el("div", "row");
  row.tabIndex = 0;
  const container = view.kind === "dict" || view.kind === "list";
  const toggle = el("span", "toggle", container ? "▸" : "");
  const key = el("span", "key", label);
  const type = el("span", "type", kindText(view));
  const pv = el("span", "preview");
  row.append(toggle, key, type, pv);
  elem.append(row);
  host.append(elem);
  const node: Node = { segments, listParent, view, elem, row, children: null, start: 0 };
  toggle.addEventListener("click", (ev) => {
    ev.stopPropagation();
    if (container) void (node.children && !node.children.hidden ? collapse(node) : expand(node));
  });
  row.addEventListener("click", () => select(node));
  row.addEventListener("dblclick", () => {
    if (container) void (node.children && !node.children.hidden ? collapse(node) : expand(node));
  });
  row.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") select(node);
    if (container && ev.key === "ArrowRight") void expand(node);
    if (container && ev.key === "ArrowLeft") collapse(node);
  });
  if (view.kind === "value") {
    // a small value: its bytes are the parent's, close by; show what it is
    const gen = generation;
    track(view.value())
      .then((v) => {
        if (gen !== generation) return;
        type.textContent = typeName(v);
        pv.textContent = preview(v);
      })
      .catch((e: unknown) => {
        pv.textContent = "⚠ " + errorText(e)[0];
        pv.classList.add("bad");
      });
  }
  return node;
}

function collapse(node: Node): void {
  if (node.children) node.children.hidden = true;
  node.row.querySelector(".toggle")!.textContent = "▸";
  node.elem.classList.remove("open");
}

async function expand(node: Node): Promise<void> {
  node.row.querySelector(".toggle")!.textContent = "▾";
  node.elem.classList.add("open");
  if (node.children) {
    node.children.hidden = false;
    return;
  }
  node.children = el("div", "children");
  node.elem.append(node.children);
  await showPage(node, 0);
}

/** Children `start` .. `start + PAGE` of a dict or list, with the pager (and a dict's key search). */
async function showPage(node: Node, start: number): Promise<void> {
  const host = node.children!;
  const view = node.view;
  const n = view.length;
  start = Math.max(0, Math.min(start, Math.max(0, n - 1)));
  start -= start % PAGE;
  node.start = start;
  const stop = Math.min(n, start + PAGE);
  const gen = generation;
  const isList = view.kind === "list";
  let labels: Key[];
  try {
    labels = isList ? Array.from({ length: stop - start }, (_, i) => start + i) : await track(view.keys(start, stop));
  } catch (e) {
    showMessage(e);
    return;
  }
  if (gen !== generation) return;
  const tools = n > PAGE || (!isList && n > SMALL_CONTAINER) ? pager(node, start, stop) : null;
  const list = el("div", "entries");
  host.replaceChildren(...(tools ? [tools] : []), list);
  // the labels at once; each child's view (its kind, a small value's preview) as it comes
  const slots = labels.map((k) => {
    const slot = el("div", "slot");
    slot.append(el("div", "node pending", `${String(k)} …`));
    list.append(slot);
    return slot;
  });
  const done = new Uint8Array(labels.length);
  const resolve = async (i: number): Promise<Node | null> => {
    if (done[i]) return null;
    done[i] = 1;
    const k = labels[i];
    try {
      const child = await view.get(k);
      if (gen !== generation) return null;
      slots[i].replaceChildren();
      return addNode(slots[i], [...node.segments, k], [...node.listParent, isList], child, String(k));
    } catch (e) {
      slots[i].replaceChildren(el("div", "node bad", `${String(k)}: ${errorText(e)[0]}: ${errorText(e)[1]}`));
      return null;
    }
  };
  // A few lookups at a time, in order: the rows on screen first, and the connection free for
  // what the user does next. A child that is a value is read whole by its lookup (a string or
  // bytes has no node to read first), so past CHILD_BYTES the rest wait for a click.
  const before = reader?.stats.bytes ?? 0;
  let next = 0;
  let stopped = false;
  const worker = async (): Promise<void> => {
    while (next < labels.length && gen === generation && node.start === start) {
      if (reader !== null && reader.stats.bytes - before > CHILD_BYTES) {
        stopped = true;
        return;
      }
      await resolve(next++);
    }
  };
  await track(Promise.all(Array.from({ length: CHILDREN_IN_FLIGHT }, worker)));
  if (!stopped || gen !== generation) return;
  labels.forEach((k, i) => {
    if (done[i]) return;
    const unread = el("div", "node unread", "");
    unread.title = `not read yet: this page's children read ${bytesText(CHILD_BYTES)} already; click to read this one`;
    unread.append(el("span", "key", String(k)), el("span", "type", " not read yet (click)"));
    unread.dataset.path = pathText([...node.segments, k]);
    unread.addEventListener("click", () => {
      void track(resolve(i)).then((n) => n && select(n));
    });
    slots[i].replaceChildren(unread);
  });
}

function pager(node: Node, start: number, stop: number): HTMLElement {
  const n = node.view.length;
  const bar = el("div", "pager");
  if (n > PAGE) {
    const last = Math.max(0, n - 1 - ((n - 1) % PAGE));
    bar.append(
      button("« first", "first", () => void showPage(node, 0), "first page"),
      button("‹ prev", "prev", () => void showPage(node, start - PAGE), "previous page"),
      el("span", "range", `${count(start)}–${count(stop - 1)} of ${count(n)}`),
      button("next ›", "next", () => void showPage(node, start + PAGE), "next page"),
      button("last »", "last", () => void showPage(node, last), "last page"),
    );
    (bar.querySelector(".prev") as HTMLButtonElement).disabled = start === 0;
    (bar.querySelector(".first") as HTMLButtonElement).disabled = start === 0;
    (bar.querySelector(".next") as HTMLButtonElement).disabled = stop >= n;
    (bar.querySelector(".last") as HTMLButtonElement).disabled = stop >= n;
    const jump = el("form", "jump");
    const input = el("input");
    input.type = "number";
    input.min = "0";
    input.max = String(n - 1);
    input.placeholder = "index";
    input.className = "jump-input";
    jump.append(input, el("button", "", "go"));
    jump.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const i = Number(input.value);
      if (Number.isInteger(i)) void showPage(node, i < 0 ? n + i : i);
    });
    bar.append(jump);
  }
  if (node.view.kind === "dict" && n > SMALL_CONTAINER) {
    const search = el("form", "search");
    const input = el("input");
    input.type = "search";
    input.placeholder = "find a key";
    input.className = "search-input";
    input.spellcheck = false;
    const found = el("div", "found");
    search.append(input, el("button", "", "find"));
    search.addEventListener("submit", (ev) => {
      ev.preventDefault();
      void findKey(node, input.value, found);
    });
    bar.append(search, found);
  }
  return bar;
}

/** One lookup through the dict's index: the key as typed, then as an int if it reads as one. */
async function findKey(node: Node, text: string, out: HTMLElement): Promise<void> {
  const candidates: Key[] = [text];
  if (/^-?\d+$/.test(text.trim())) {
    const big = BigInt(text.trim());
    candidates.push(big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big);
  }
  out.replaceChildren();
  for (const k of candidates) {
    try {
      const child = await track(node.view.get(k));
      const n = addNode(out, [...node.segments, k], [...node.listParent, false], child, String(k));
      n.elem.classList.add("search-hit");
      select(n);
      return;
    } catch (e) {
      if (!(e instanceof KeyNotFoundError)) {
        out.append(el("div", "bad", `${errorText(e)[0]}: ${errorText(e)[1]}`));
        return;
      }
    }
  }
  out.append(el("div", "miss", `no key ${JSON.stringify(text)} in ${pathText(node.segments) || "the root"}`));
}

// -- the value panel --

function select(node: Node): void {
  if (selected) selected.classList.remove("selected");
  selected = node.row;
  node.row.classList.add("selected");
  void showDetail(node);
}

async function showDetail(node: Node): Promise<void> {
  const gen = generation;
  const view = node.view;
  const detail = $("detail");
  const head = el("div", "detail-head");
  head.append(el("h2", "path", "/" + pathText(node.segments)));
  const expr = pythonExpression(node.segments, node.listParent);
  const code = el("code", "", expr);
  code.id = "py-expr";
  const copy = button(
    "copy",
    "copy",
    () => {
      navigator.clipboard?.writeText(expr).then(
        () => (copy.textContent = "copied"),
        () => selectText(code),
      );
    },
    "copy the Python expression that reads this value",
  );
  const py = el("div", "python");
  py.append(el("span", "label", "Python:"), code, copy);
  head.append(py);
  const body = el("div", "detail-body");
  body.id = "value";
  detail.replaceChildren(head, body);
  try {
    if (view.kind === "value") await showValue(body, await track(view.value()), gen);
    else if (view.kind === "array") await showArray(body, view, gen);
    else await showContainer(body, view, gen);
  } catch (e) {
    if (gen !== generation) return;
    const [title, text] = errorText(e);
    body.append(el("div", "bad", `${title}: ${text}`));
  }
}

function selectText(e: HTMLElement): void {
  const range = document.createRange();
  range.selectNodeContents(e);
  const s = window.getSelection();
  s?.removeAllRanges();
  s?.addRange(range);
}

function textBlock(host: HTMLElement, text: string, cut: boolean, more?: () => string): void {
  const pre = el("pre", "value-text", text + (cut ? " …" : ""));
  host.append(pre);
  if (cut && more) {
    const b = button("show all", "show-all", () => {
      pre.textContent = more();
      b.remove();
    });
    host.append(b);
  }
}

async function showValue(host: HTMLElement, v: unknown, gen: number): Promise<void> {
  if (gen !== generation) return;
  const kind = typeName(v);
  if (typeof v === "string") {
    host.append(el("div", "what", `str, ${count(v.length)} characters`));
    const shown = v.length > STRING_SHOWN ? v.slice(0, STRING_SHOWN) : v;
    const pre = el("pre", "value-text string", shown + (v.length > STRING_SHOWN ? "…" : ""));
    host.append(pre);
    if (v.length > STRING_SHOWN) {
      const b = button(`show all ${count(v.length)} characters`, "show-all", () => {
        pre.textContent = v;
        b.remove();
      });
      host.append(b);
    }
    return;
  }
  if (v instanceof Uint8Array) {
    host.append(el("div", "what", `bytes, ${count(v.length)} (${bytesText(v.length)})`));
    const pre = el("pre", "value-text hex", hexDump(v, BYTES_SHOWN));
    host.append(pre);
    if (v.length > BYTES_SHOWN) {
      const b = button("show all", "show-all", () => {
        pre.textContent = hexDump(v, 1 << 20) + (v.length > 1 << 20 ? "\n… (first 1 MB shown)" : "");
        b.remove();
      });
      host.append(b);
    }
    return;
  }
  if (isNDArray(v)) {
    host.append(el("div", "what", `NumPy array ${v.dtype}, shape (${v.shape.join(", ")})`));
    plotInMemory(host, v);
    textBlock(host, ndText(v, 20_000), false);
    return;
  }
  host.append(el("div", "what", kind + (Array.isArray(v) ? ` of ${count(v.length)}` : "")));
  const ys = numericList(v);
  if (ys) linePlot(host, ys, 0, 1, "value");
  const m = numericMatrix(v);
  if (m) heatmapOf(host, m.data, m.rows, m.cols, 1, 1, "axis 0", "axis 1", (r, c) => `[${r}][${c}]`);
  const [text, cut] = formatValue(v, 20_000);
  textBlock(host, text, cut, () => formatValue(v, 5_000_000)[0]);
}

function plotInMemory(host: HTMLElement, a: NDArray): void {
  const ys = ndNumbers(a);
  if (!ys) return;
  if (a.shape.length === 1 && ys.length >= 2) linePlot(host, ys, 0, 1, a.dtype);
  if (a.shape.length === 2 && a.shape[0] > 1 && a.shape[1] > 1)
    heatmapOf(host, ys, a.shape[0], a.shape[1], 1, 1, "axis 0", "axis 1", (r, c) => `[${r}, ${c}]`);
}

function heatmapOf(
  host: HTMLElement,
  data: Float64Array,
  rows: number,
  cols: number,
  rowStep: number,
  colStep: number,
  rowName: string,
  colName: string,
  where: (r: number, c: number) => string,
): void {
  heatmap(host, data, rows, cols, { rowStep, colStep, rowName, colName, where });
}

async function showContainer(host: HTMLElement, view: LazyView, gen: number): Promise<void> {
  const what = view.kind === "dict" ? `dict of ${count(view.length)} entries` : `list of ${count(view.length)} items`;
  const size = await track(storedSize(view));
  if (gen !== generation) return;
  const stored = size === null ? "" : `, ${bytesText(size)} stored`;
  host.append(el("div", "what", what + stored + " (expand it in the tree; pages of " + PAGE + ")"));
  if (view.kind === "list" && view.length >= 2 && view.length <= LIST_PLOT) {
    // a list of numbers, or of equal rows of numbers, is worth a plot: look at its first item
    const shape = await track(numericShape(view));
    if (gen !== generation) return;
    if (shape !== null && shape.reduce((p, d) => p * d, 1) <= LIST_PLOT) {
      const all = await track(view.value());
      if (gen !== generation) return;
      const ys = numericList(all);
      if (ys) linePlot(host, ys, 0, 1, "value");
      const m = numericMatrix(all);
      if (m) heatmapOf(host, m.data, m.rows, m.cols, 1, 1, "items", "their items", (r, c) => `[${r}][${c}]`);
    }
  }
  const small = size !== null ? size <= TEXT_BYTES : view.length <= SMALL_CONTAINER && (await track(allValues(view)));
  if (small) {
    // small: as text (what it costs to read is known, or its children are all read already)
    const v = await track(view.value());
    if (gen !== generation) return;
    const [text, cut] = formatValue(v, 200_000);
    textBlock(host, text, cut, () => formatValue(v, 5_000_000)[0]);
  }
  // a container with lazy parts is not read whole here: that could be gigabytes
}

/** The bytes a part takes in the archive, where the reader can tell without reading it (a
 * reader without `storedSize` gives null). */
async function storedSize(view: LazyView): Promise<number | null> {
  if (typeof (view as Partial<LazyView>).storedSize !== "function") return null;
  try {
    return await view.storedSize();
  } catch {
    return null;
  }
}

/** Are all the children of a dict or list small values (no lazy part below)? */
async function allValues(view: LazyView): Promise<boolean> {
  const keys: Key[] = view.kind === "dict" ? await view.keys(0, view.length) : Array.from({ length: view.length }, (_, i) => i);
  const kids = await Promise.all(keys.map((k) => view.get(k)));
  return kids.every((k) => k.kind === "value");
}

/** `[n]` for a list whose first item is a number, `[n, m]` for one whose first item is a list
 * of m numbers (lazy or small); null otherwise. Reads the first item (and its first item) only. */
async function numericShape(view: LazyView): Promise<number[] | null> {
  const first = await view.get(0);
  const isNumber = (x: unknown): boolean => typeof x === "number" || typeof x === "bigint";
  if (first.kind === "value") {
    const v0 = await first.value();
    if (isNumber(v0)) return [view.length];
    if (Array.isArray(v0) && v0.length >= 2 && v0.every(isNumber)) return [view.length, v0.length];
    return null;
  }
  if (first.kind === "list" && first.length >= 2) {
    const e = await first.get(0);
    if (e.kind === "value" && isNumber(await e.value())) return [view.length, first.length];
  }
  return null;
}

/** An array: its dtype and shape, a plot (1-D line, 2-D or more a heatmap of two chosen axes),
 * read down-sampled: only every k-th row and column the pixels need. */
async function showArray(host: HTMLElement, view: LazyView, gen: number): Promise<void> {
  const shape = view.shape ?? [];
  const dtype = view.dtype ?? "?";
  const size = shape.reduce((p, d) => p * d, 1);
  host.append(el("div", "what", `NumPy array ${dtype}, shape (${shape.join(", ")}${shape.length === 1 ? "," : ""}), ${count(size)} elements`));
  if (shape.length === 0) {
    const a = await track(view.slice());
    textBlock(host, ndText(a, 20_000), false);
    return;
  }
  const numeric = numericDtype(dtype);
  if (numeric && size > 0) {
    if (shape.length === 1) {
      const n = shape[0];
      const step = Math.max(1, Math.ceil(n / LINE_POINTS));
      const a = await track(view.slice([0, n, step]));
      if (gen !== generation) return;
      const ys = ndNumbers(a);
      if (ys && ys.length >= 2) {
        if (step > 1) host.append(el("div", "note", `every ${ordinal(step)} element: ${count(ys.length)} of ${count(n)} shown`));
        linePlot(host, ys, 0, step, dtype);
      }
    } else {
      const plot = el("div", "plot");
      host.append(arrayControls(view, shape, plot, gen), plot);
      await drawSlice(view, shape, plot, shape.length - 2, shape.length - 1, shape.map(() => 0), gen);
    }
  } else if (!numeric) {
    host.append(el("div", "note", `no plot for ${dtype} elements`));
  }
  if (size <= TEXT_ELEMENTS) {
    const a = await track(view.slice());
    if (gen !== generation) return;
    textBlock(host, ndText(a, 50_000), false);
  }
}

function arrayControls(view: LazyView, shape: number[], plot: HTMLElement, gen: number): HTMLElement {
  const form = el("form", "axes");
  let rowAxis = shape.length - 2;
  let colAxis = shape.length - 1;
  const index = shape.map(() => 0);
  const redraw = (): void => void drawSlice(view, shape, plot, rowAxis, colAxis, index, gen);
  if (shape.length > 2) {
    const axisSelect = (label: string, value: number, set: (a: number) => void): HTMLElement => {
      const s = el("select");
      s.className = `axis-${label}`;
      shape.forEach((d, a) => {
        const o = el("option", "", `axis ${a} (${count(d)})`);
        o.value = String(a);
        s.append(o);
      });
      s.value = String(value);
      s.addEventListener("change", () => {
        set(Number(s.value));
        renderIndices();
        redraw();
      });
      const l = el("label", "", `${label}: `);
      l.append(s);
      return l;
    };
    const indices = el("span", "indices");
    const renderIndices = (): void => {
      indices.replaceChildren();
      shape.forEach((d, a) => {
        if (a === rowAxis || a === colAxis) return;
        const input = el("input");
        input.type = "number";
        input.min = "0";
        input.max = String(d - 1);
        input.value = String(index[a]);
        input.className = `index-${a}`;
        input.addEventListener("change", () => {
          const i = Math.max(0, Math.min(d - 1, Math.trunc(Number(input.value)) || 0));
          index[a] = i;
          input.value = String(i);
          redraw();
        });
        const l = el("label", "", ` axis ${a} at `);
        l.append(input);
        indices.append(l);
      });
    };
    form.append(
      axisSelect("rows", rowAxis, (a) => (rowAxis = a)),
      " ",
      axisSelect("columns", colAxis, (a) => (colAxis = a)),
      indices,
    );
    renderIndices();
  }
  form.addEventListener("submit", (ev) => ev.preventDefault());
  return form;
}

async function drawSlice(
  view: LazyView,
  shape: number[],
  plot: HTMLElement,
  rowAxis: number,
  colAxis: number,
  index: number[],
  gen: number,
): Promise<void> {
  if (rowAxis === colAxis) {
    plot.replaceChildren(el("div", "note", "choose two different axes"));
    return;
  }
  const rows = shape[rowAxis];
  const cols = shape[colAxis];
  const rowStep = Math.max(1, Math.ceil(rows / HEAT_ROWS));
  const colStep = Math.max(1, Math.ceil(cols / HEAT_COLS));
  const r = Math.ceil(rows / rowStep);
  const c = Math.ceil(cols / colStep);
  // A tall image whose rows are skipped anyway (each sample row is a read of its own) is read in
  // interleaved passes: every 4th sample row first (drawn at once, each row standing in for the
  // three below it), then the rest; no row is read twice. Contiguous rows are one read.
  const passes = r > COARSE_ROWS && rowStep > 1 ? 4 : 1;
  const full = new Float64Array(r * c);
  const token = String(Number(plot.dataset.token ?? "0") + 1);
  plot.dataset.token = token; // a newer choice of axes or index wins over this one's late reads
  const readPass = async (k: number): Promise<boolean> => {
    const sel: AxisSelection[] = shape.map((_, a) =>
      a === rowAxis ? [k * rowStep, rows, rowStep * passes] : a === colAxis ? [0, cols, colStep] : index[a],
    );
    const a = await track(view.slice(...sel));
    const data = ndNumbers(a);
    if (!data) return false;
    const n = rowAxis < colAxis ? a.shape[0] : a.shape[1];
    for (let j = 0; j < n; j++) {
      const row = k + j * passes;
      if (rowAxis < colAxis) full.set(data.subarray(j * c, (j + 1) * c), row * c);
      else for (let i = 0; i < c; i++) full[row * c + i] = data[i * n + j];
    }
    return true;
  };
  const fixed = shape.map((_, k) => (k === rowAxis || k === colAxis ? null : index[k]));
  const draw = (data: Float64Array, complete: boolean): void => {
    if (plot.dataset.token !== token) return;
    plot.replaceChildren();
    const canvas = heatmap(plot, data, r, c, {
      rowStep,
      colStep,
      rowName: `axis ${rowAxis}`,
      colName: `axis ${colAxis}`,
      where: (i, j) => `[${fixed.map((x, k) => (k === rowAxis ? i * rowStep : k === colAxis ? j * colStep : x)).join(", ")}]`,
    });
    if (complete) canvas.dataset.complete = "true";
    else plot.append(el("div", "note", "reading the rows between…"));
  };
  if (!(await readPass(0)) || gen !== generation) return;
  if (passes > 1) {
    const coarse = new Float64Array(r * c);
    for (let row = 0; row < r; row++) {
      const from = row - (row % passes);
      coarse.set(full.subarray(from * c, (from + 1) * c), row * c);
    }
    draw(coarse, false);
    await Promise.all(Array.from({ length: passes - 1 }, (_, k) => readPass(k + 1)));
    if (gen !== generation || !plot.isConnected) return;
  }
  draw(full, true);
}

// -- wiring --

function openFromFile(f: File): void {
  const url = new URL(location.href);
  if (url.searchParams.has("url")) {
    url.searchParams.delete("url");
    history.replaceState(null, "", url);
  }
  void openArchive(f, f.name);
}

function openFromUrl(text: string): void {
  let url: URL;
  try {
    url = new URL(text, location.href);
  } catch {
    showMessage(new TypeError(`not a URL: ${JSON.stringify(text)}`));
    return;
  }
  const name = decodeURIComponent(url.pathname.split("/").pop() || url.host);
  void openArchive(url, name);
}

function start(): void {
  const fileInput = $("file-input") as HTMLInputElement;
  fileInput.addEventListener("change", () => {
    const f = fileInput.files?.[0];
    if (f) openFromFile(f);
    fileInput.value = "";
  });
  const urlInput = $("url-input") as HTMLInputElement;
  $("url-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = urlInput.value.trim();
    if (!text) return;
    const here = new URL(location.href);
    here.searchParams.set("url", text);
    history.replaceState(null, "", here);
    openFromUrl(text);
  });
  const drop = $("drop");
  let depth = 0;
  window.addEventListener("dragenter", (ev) => {
    if (!ev.dataTransfer?.types.includes("Files")) return;
    depth++;
    drop.hidden = false;
  });
  window.addEventListener("dragleave", () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) drop.hidden = true;
  });
  window.addEventListener("dragover", (ev) => ev.preventDefault());
  window.addEventListener("drop", (ev) => {
    ev.preventDefault();
    depth = 0;
    drop.hidden = true;
    const f = ev.dataTransfer?.files[0];
    if (f) openFromFile(f);
  });
  const param = new URL(location.href).searchParams.get("url");
  const meta = document.querySelector('meta[name="msglc-default-url"]');
  const fallback = meta?.getAttribute("content") ?? "";
  const given = param ?? (fallback || null);
  if (given) {
    urlInput.value = given;
    if (!param && meta?.getAttribute("data-name")) {
      const name = meta.getAttribute("data-name")!;
      void openArchive(new URL(given, location.href), name);
    } else {
      openFromUrl(given);
    }
  }
}

start();
