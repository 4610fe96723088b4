/**
 * An http(s) URL read with `Range` requests on `fetch` (Node 18+, browsers).
 *
 * Opening is one request, `Range: bytes=-65536`: the object's last 64 KB (all of it when it
 * is smaller), its size (`Content-Range: bytes a-b/size`) and its validator (ETag, else
 * Last-Modified). Those tail bytes are kept, since the trailer, a 2.1 index and a plain
 * archive's root node usually live there; so are the first `HEAD_SIZE` bytes, fetched by the
 * first read near the start (the header, then the root container's header). Every other read
 * is one `Range: bytes=a-b` GET pinned to the version opened: `If-Match` with a strong ETag,
 * else `If-Unmodified-Since` with the Last-Modified date; an answer from another version
 * (412, a 200 for a range, another size, another validator) is `ArchiveChangedError`.
 */
import { checkRange, type ReadStats, type Source, type SourceOptions } from "./source.js";
import { ArchiveChangedError } from "../errors.js";

/** Bytes asked for by the opening suffix request. */
export const TAIL_SIZE = 65536;
/** Bytes fetched by the first read that lies within them (the header's read). */
export const HEAD_SIZE = 4096;

/** A request failed: no answer (network), or an answer with an error status. `status` is
 * undefined when there was no answer; `cause` holds the underlying error when there was one. */
export class HttpError extends Error {
  readonly url: string;
  readonly status: number | undefined;
  readonly range: string;
  constructor(message: string, url: string, status: number | undefined, range: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "HttpError";
    this.url = url;
    this.status = status;
    this.range = range;
  }
}

type Fetch = typeof fetch;

interface Pin {
  /** The ETag of the version opened (as sent, `W/` included), or null. */
  etag: string | null;
  /** Its Last-Modified, or null. */
  lastModified: string | null;
  /** The condition header every later request carries, or null (no validator). */
  condition: [string, string] | null;
}

interface ContentRange {
  start: number;
  /** Inclusive, as in the header. */
  last: number;
  /** The object's size; null for `*`. */
  size: number | null;
}

/** `bytes a-b/size`, or "unsatisfied" for the star form of a 416; null when absent or malformed. */
function parseContentRange(value: string | null): ContentRange | "unsatisfied" | null {
  if (value === null) return null;
  const unsatisfied = /^\s*bytes\s+\*\/(\d+)\s*$/i.exec(value);
  if (unsatisfied) return "unsatisfied";
  const m = /^\s*bytes\s+(\d+)-(\d+)\/(\d+|\*)\s*$/i.exec(value);
  if (!m) return null;
  const start = Number(m[1]);
  const last = Number(m[2]);
  const size = m[3] === "*" ? null : Number(m[3]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(last) || last < start) return null;
  if (size !== null && (!Number.isSafeInteger(size) || last >= size)) return null;
  return { start, last, size };
}

function opaque(etag: string): string {
  return etag.startsWith("W/") ? etag.slice(2) : etag;
}

/** Drop an answer's body without reading it (frees the connection; never awaited: a body
 * that will not cancel must not hang the caller). */
function discard(res: Response): void {
  if (res.body && !res.bodyUsed) res.body.cancel().catch(() => {});
}

/** The answer's body, or null as soon as it proves longer than `limit` bytes (the rest is
 * cancelled, never read: a server that ignores `Range` may be sending gigabytes). */
async function readBody(res: Response, limit: number): Promise<Uint8Array | null> {
  const declared = res.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > limit && !res.headers.has("content-encoding")) {
    discard(res);
    return null;
  }
  if (!res.body) return new Uint8Array(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limit) {
      reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

export class HttpSource implements Source {
  private head: Uint8Array | null = null;
  private headLoad: Promise<Uint8Array> | null = null;
  private closed = false;

  private constructor(
    readonly name: string,
    readonly size: number,
    /** The object's last bytes, from `tailStart` to its end. */
    private readonly tail: Uint8Array,
    private readonly tailStart: number,
    private readonly pin: Pin,
    private readonly fetchFn: Fetch,
    private readonly headers: Headers,
    readonly stats: ReadStats,
  ) {}

  static async open(input: string | URL, options: SourceOptions = {}): Promise<HttpSource> {
    const url = input instanceof URL ? input.href : input;
    const fetchFn: Fetch | undefined = options.fetch ?? globalThis.fetch;
    if (typeof fetchFn !== "function") {
      throw new TypeError(`cannot open ${url}: no fetch() here (Node 18 or newer, a browser, or options.fetch)`);
    }
    const headers = new Headers(options.headers);
    const stats: ReadStats = { requests: 0, bytes: 0 };
    const range = `bytes=-${TAIL_SIZE}`;
    const res = await send(fetchFn, url, headers, range, null, stats);
    let tail: Uint8Array;
    let size: number;
    if (res.status === 206) {
      const cr = parseContentRange(res.headers.get("content-range"));
      if (cr === null || cr === "unsatisfied" || cr.size === null) {
        discard(res);
        throw new HttpError(
          `${url}: the answer to GET Range: ${range} (206) has no usable Content-Range ` +
            `(${JSON.stringify(res.headers.get("content-range"))}); a cross-origin server must expose it ` +
            "(Access-Control-Expose-Headers: Content-Range, ETag, Last-Modified)",
          url,
          206,
          range,
        );
      }
      size = cr.size;
      const start = Math.max(0, size - TAIL_SIZE);
      if (cr.start !== start || cr.last !== size - 1) {
        discard(res);
        throw new HttpError(
          `${url}: GET Range: ${range} answered bytes ${cr.start}-${cr.last} of ${size}, expected ${start}-${size - 1}`,
          url,
          206,
          range,
        );
      }
      tail = await body(res, cr.last + 1 - cr.start, url, range);
      stats.bytes += tail.length;
      if (tail.length !== cr.last + 1 - cr.start) {
        throw new HttpError(
          `${url}: GET Range: ${range} answered ${tail.length} bytes for the ${cr.last + 1 - cr.start} of bytes ${cr.start}-${cr.last}`,
          url,
          206,
          range,
        );
      }
    } else if (res.status === 200) {
      const whole = await readBody(res, TAIL_SIZE).catch((e: unknown) => {
        throw bodyError(e, url, 200, range);
      });
      if (whole === null) {
        throw new TypeError(
          `${url}: the server ignored the Range request (it answered 200 with the whole object, more than ` +
            `${TAIL_SIZE} bytes): the server must support Range requests for msglc to read an archive over HTTP`,
        );
      }
      tail = whole;
      size = whole.length;
      stats.bytes += whole.length;
    } else if (res.status === 416 && parseContentRange(res.headers.get("content-range")) === "unsatisfied") {
      discard(res);
      const total = /\/(\d+)/.exec(res.headers.get("content-range") ?? "");
      if (!total || Number(total[1]) !== 0) throw statusError(res, url, range);
      tail = new Uint8Array(0); // an empty object: no suffix of it can be satisfied
      size = 0;
    } else {
      discard(res);
      throw statusError(res, url, range);
    }
    const etag = res.headers.get("etag");
    const lastModified = res.headers.get("last-modified");
    const condition: [string, string] | null =
      etag !== null && !etag.startsWith("W/")
        ? ["If-Match", etag]
        : lastModified !== null
          ? ["If-Unmodified-Since", lastModified]
          : null;
    return new HttpSource(url, size, tail, size - tail.length, { etag, lastModified, condition }, fetchFn, headers, stats);
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    if (this.closed) throw new Error(`${this.name}: read after close()`);
    checkRange(this, offset, length);
    const stop = offset + length;
    if (length === 0) return new Uint8Array(0);
    if (offset >= this.tailStart) return this.tail.subarray(offset - this.tailStart, stop - this.tailStart);
    if (stop <= HEAD_SIZE) {
      let head = this.head;
      if (head === null) {
        // One request for the first bytes, however many reads want them at once.
        this.headLoad ??= this.fetchRange(0, Math.min(HEAD_SIZE, this.tailStart));
        try {
          head = this.head = await this.headLoad;
        } catch (e) {
          this.headLoad = null;
          throw e;
        }
      }
      if (stop <= head.length) return head.subarray(offset, stop);
    }
    if (stop <= this.tailStart) return this.fetchRange(offset, stop);
    // The read ends in the tail: fetch only what lies before it (unless the head holds it).
    const head = this.head;
    const before =
      head !== null && head.length >= this.tailStart
        ? head.subarray(offset, this.tailStart)
        : await this.fetchRange(offset, this.tailStart);
    const out = new Uint8Array(length);
    out.set(before, 0);
    out.set(this.tail.subarray(0, stop - this.tailStart), before.length);
    return out;
  }

  /** Bytes [start, stop) of the object as opened: one pinned range request. */
  private async fetchRange(start: number, stop: number): Promise<Uint8Array> {
    const url = this.name;
    const range = `bytes=${start}-${stop - 1}`;
    const res = await send(this.fetchFn, url, this.headers, range, this.pin.condition, this.stats);
    const what = `GET Range: ${range}`;
    if (res.status === 412) {
      discard(res);
      throw this.changed(`the server answered 412 Precondition Failed to ${what} (${this.pin.condition?.join(": ")})`);
    }
    if (res.status === 416) {
      discard(res);
      throw this.changed(`the server answered 416 Range Not Satisfiable to ${what}: the object is shorter than its ${this.size} bytes at open`);
    }
    if (res.status === 200) {
      discard(res);
      throw this.changed(`the server answered 200 with the whole object to ${what}, after answering ranges at open`);
    }
    if (res.status !== 206) {
      discard(res);
      throw statusError(res, url, range);
    }
    const cr = parseContentRange(res.headers.get("content-range"));
    if (cr !== null && cr !== "unsatisfied" && cr.size !== null && cr.size !== this.size) {
      discard(res);
      throw this.changed(`the object has ${cr.size} bytes now, ${this.size} when opened (${what})`);
    }
    const etag = res.headers.get("etag");
    if (etag !== null && this.pin.etag !== null && opaque(etag) !== opaque(this.pin.etag)) {
      discard(res);
      throw this.changed(`its ETag was ${this.pin.etag} when opened, ${etag} now (${what})`);
    }
    const modified = res.headers.get("last-modified");
    if (this.pin.etag === null && modified !== null && this.pin.lastModified !== null && modified !== this.pin.lastModified) {
      discard(res);
      throw this.changed(`it was last modified ${this.pin.lastModified} when opened, ${modified} now (${what})`);
    }
    if (cr === null || cr === "unsatisfied" || cr.start !== start || cr.last !== stop - 1) {
      discard(res);
      throw new HttpError(
        `${url}: ${what} answered 206 with Content-Range ${JSON.stringify(res.headers.get("content-range"))}, ` +
          `expected bytes ${start}-${stop - 1}/${this.size}`,
        url,
        206,
        range,
      );
    }
    const bytes = await body(res, stop - start, url, range);
    this.stats.bytes += bytes.length;
    if (bytes.length !== stop - start) {
      throw new HttpError(`${url}: ${what} answered ${bytes.length} bytes, expected ${stop - start}`, url, 206, range);
    }
    return bytes;
  }

  private changed(detail: string): ArchiveChangedError {
    return new ArchiveChangedError(`${this.name}: the object changed since it was opened: reopen it (${detail})`);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** One GET, counted; a failure to get an answer is an `HttpError` naming the URL and range. */
async function send(
  fetchFn: Fetch,
  url: string,
  base: Headers,
  range: string,
  condition: [string, string] | null,
  stats: ReadStats,
): Promise<Response> {
  const headers = new Headers(base);
  headers.set("Range", range);
  // (A browser drops Accept-Encoding as a forbidden header; Node sends it: ranges are of the
  // bytes as stored, so no content coding may come in between.)
  headers.set("Accept-Encoding", "identity");
  if (condition) headers.set(condition[0], condition[1]);
  stats.requests++;
  try {
    return await fetchFn(url, { method: "GET", headers, cache: "no-store", redirect: "follow" });
  } catch (e) {
    throw new HttpError(
      `${url}: GET Range: ${range} failed: ${why(e)}`,
      url,
      undefined,
      range,
      { cause: e },
    );
  }
}

/** A range's body, at most `length` bytes long (a longer one is cut off and refused). */
async function body(res: Response, length: number, url: string, range: string): Promise<Uint8Array> {
  let bytes: Uint8Array | null;
  try {
    bytes = await readBody(res, length);
  } catch (e) {
    throw bodyError(e, url, res.status, range);
  }
  if (bytes === null) {
    throw new HttpError(`${url}: GET Range: ${range} answered more than the ${length} bytes asked for`, url, res.status, range);
  }
  return bytes;
}

function bodyError(e: unknown, url: string, status: number, range: string): HttpError {
  return new HttpError(
    `${url}: reading the answer (${status}) to GET Range: ${range} failed: ${why(e)}`,
    url,
    status,
    range,
    { cause: e },
  );
}

/** An error's message, with its cause's (Node's fetch says "fetch failed", its cause why). */
function why(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const cause = e.cause instanceof Error ? e.cause.message : undefined;
  return cause && !e.message.includes(cause) ? `${e.message} (${cause})` : e.message;
}

function statusError(res: Response, url: string, range: string): HttpError {
  return new HttpError(
    `${url}: HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""} for GET Range: ${range}`,
    url,
    res.status,
    range,
  );
}
