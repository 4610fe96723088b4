// Paged lists (node types 11 and 12, docs/format.md): a list of more than 1024 spans, its span
// table in pages. The fixture is Python's (fixtures/make_paged.py); damaged archives are made
// from it here by writing its pages and its root node anew (`relay`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { open, CorruptedError, IndexOutOfRangeError } from "../dist/index.js";
import { parseNode, parsePage, pageOf, wholeList } from "../dist/format/nodes.js";
import { decodeValue } from "../dist/read/decode.js";
import { Recording, fixture, loadJson, untag, viaViews } from "./core-helpers.mjs";
import { makeArchive, golden, encodeNode, framed } from "./support/craft.mjs";

const FIXTURE = "paged-t8.mlc";
const expect = loadJson("paged-expect.json");
const items = untag(expect.items);
const { root } = expect;

// ---- crafting: pages laid anew (nodes encoded as msgspec writes them: support/craft.mjs) ----

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The fixture's sections, its root node and its pages as fields (kids at TOC positions). */
function laidOut(bytes = fixture(FIXTURE)) {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const t = bytes.length - 64;
  const num = (at) => Number(v.getBigUint64(at, true));
  const dataLen = num(t + 8);
  const tocOff = num(t + 16);
  const tocLen = num(t + 24);
  const rootPos = num(t + 32);
  const rootLen = v.getUint32(t + 40, true);
  const threshold = v.getUint32(t + 48, true);
  const toc = bytes.subarray(tocOff, tocOff + tocLen);
  const fields = (pos, len) => decodeValue(toc.subarray(pos, pos + len - 4), 0, { strict: true });
  const [type, n, firsts, offs, refs] = fields(rootPos, rootLen);
  assert.equal(type, 11);
  const pages = refs.map(([back, len]) => {
    const pos = rootPos - back;
    const [t12, starts, pageOffs, kids] = fields(pos, len);
    assert.equal(t12, 12);
    const at = new Map([...kids].map(([k, [b, l]]) => [k, { pos: pos - b, len: l }]));
    return { pos, len, fields: [12, starts, pageOffs], kids: at };
  });
  return {
    data: bytes.subarray(16, 16 + dataLen),
    toc,
    threshold,
    node: [11, n, firsts, offs],
    pages,
    prefix: toc.subarray(0, pages[0].pos),
    refs: null, // page references to give instead ({pos, len} each, or null: the page's)
    rootRef: null, // the trailer's root instead of the relaid node
  };
}

/** An archive of `laid` (as `laidOut` gives it, edited): its pages written anew after the
 * nodes that precede them, in order, then its root node. */
function relay(laid) {
  const parts = [laid.prefix];
  let at = laid.prefix.length;
  const placed = laid.pages.map((page) => {
    const kids = new Map([...page.kids].map(([k, r]) => [k, [at - r.pos, r.len]]));
    const bytes = page.raw ?? framed(encodeNode([...page.fields, kids]));
    parts.push(bytes);
    const ref = { pos: at, len: bytes.length };
    at += bytes.length;
    return ref;
  });
  const refs = placed.map((ref, p) => laid.refs?.[p] ?? ref);
  const node = framed(encodeNode([...laid.node, refs.map((r) => [at - r.pos, r.len])]));
  parts.push(node);
  const rootRef = laid.rootRef ?? { pos: at, len: node.length };
  return makeArchive({ minor: 5, data: laid.data, toc: concat(parts), rootPos: rootRef.pos, rootLen: rootRef.len, threshold: laid.threshold });
}

// ---- parsing ------------------------------------------------------------------------------

test("relaying the fixture's pages unchanged gives its bytes (the crafting is sound)", () => {
  assert.deepStrictEqual(relay(laidOut()), fixture(FIXTURE));
});

test("a paged list node and its pages parse, and make the whole span table", async () => {
  const bytes = fixture(FIXTURE);
  const reader = await open(bytes);
  const { body } = reader;
  const node = parseNode(await body.readToc(body.root.pos, body.root.len), body.root);
  assert.equal(node.type, 11);
  assert.equal(node.n, root.n);
  assert.deepStrictEqual(node.firsts, root.firsts);
  assert.deepStrictEqual(node.offs, root.offs);
  assert.deepStrictEqual(node.pages.map((r) => [r.pos, r.len]), root.pages);
  assert.equal(root.pages.length, 3);
  const pages = [];
  for (let p = 0; p < node.pages.length; p++) {
    const at = node.pages[p];
    const page = parsePage(await body.readToc(at.pos, at.len), at, node, p, body.root.pos);
    assert.equal(page.starts[0], root.firsts[p]);
    assert.equal(page.offs[0], root.offs[p]);
    assert.equal(page.offs[page.offs.length - 1], root.offs[p + 1]);
    assert.equal(page.n, p + 1 < root.firsts.length ? root.firsts[p + 1] : root.n);
    for (const kid of page.kids.values()) assert.ok(kid.pos + kid.len <= at.pos);
    pages.push(page);
  }
  assert.deepStrictEqual(pages.map((p) => p.starts.length), [1024, 1024, expect.spans - 2048]);
  const whole = wholeList(node, pages);
  assert.equal(whole.type, 1);
  assert.equal(whole.n, root.n);
  assert.equal(whole.starts.length, expect.spans);
  assert.equal(whole.offs.length, expect.spans + 1);
  assert.deepStrictEqual([...whole.kids.keys()].map((k) => whole.starts[k]), expect.kids);
  // a kid of the whole table is the node its page names
  for (const [k, ref] of whole.kids) {
    const p = pageOf(node, whole.starts[k]);
    const page = pages[p];
    const own = page.kids.get(k - pages.slice(0, p).reduce((s, q) => s + q.starts.length, 0));
    assert.deepStrictEqual(own, ref);
  }
  for (const [i, p] of [[0, 0], [root.firsts[1] - 1, 0], [root.firsts[1], 1], [root.firsts[2], 2], [root.n - 1, 2]]) {
    assert.equal(pageOf(node, i), p);
  }
  await reader.close();
});

test("archives of format 1.5 and 2.2 open (any minor of a major read)", async () => {
  for (const name of ["paged-list.mlc", "paged-list-zstd.mlc"]) {
    const reader = await open(golden(name));
    assert.deepStrictEqual([reader.body.major, reader.body.minor], name.includes("zstd") ? [2, 2] : [1, 5]);
    assert.equal((await reader.lazy()).length, 2600);
    await reader.close();
  }
});

// ---- reading ------------------------------------------------------------------------------

test("every item reads as Python decodes it: whole, item by item, from the end", async () => {
  const reader = await open(fixture(FIXTURE));
  assert.deepStrictEqual(await reader.read(), items);
  const view = await reader.lazy();
  assert.equal(view.kind, "list");
  assert.equal(view.length, items.length);
  assert.deepStrictEqual(await view.value(), items);
  assert.deepStrictEqual(await viaViews(view, items.length), items);
  for (const i of [-1, -2, -1024, -items.length]) assert.deepStrictEqual(await reader.read(String(i)), items[items.length + i]);
  for (const i of expect.kids) {
    const kid = await reader.lazy(String(i));
    assert.equal(kid.lazyPart, true, `item ${i}`);
    assert.deepStrictEqual(await kid.value(), items[i]);
  }
  assert.equal(await reader.read("3/id"), 3);
  assert.equal(await reader.read("2100/2"), "xyz");
  assert.deepStrictEqual(await reader.read("3/tags"), ["a", "b"]);
  assert.equal(await reader.read("4900/0"), 4900);
  for (const i of [items.length, -items.length - 1, 10 ** 6]) {
    await assert.rejects(reader.read(String(i)), IndexOutOfRangeError);
  }
  await reader.close();
});

test("a compressed paged list reads as the plain one", async () => {
  const plain = await open(golden("paged-list.mlc"));
  const zstd = await open(golden("paged-list-zstd.mlc"));
  assert.deepStrictEqual(await zstd.read(), await plain.read());
  const a = await plain.lazy();
  const b = await zstd.lazy();
  assert.deepStrictEqual(await viaViews(b, 3000), await viaViews(a, 3000));
  await zstd.verify();
  await plain.close();
  await zstd.close();
});

test("an item reads its page once, then its span; a page read is kept", async () => {
  const source = new Recording(fixture(FIXTURE));
  const reader = await open(source);
  const tocOff = 16 + reader.body.dataLength;
  const page = (p) => [tocOff + root.pages[p][0], root.pages[p][1]];
  const inToc = ([offset]) => offset >= tocOff;
  const reads = async (path) => {
    const from = source.log.length;
    await reader.lazy(path);
    return source.log.slice(from);
  };
  assert.equal(source.log.length, 4); // header, trailer, the root's node and its header: no page
  let r = await reads("1");
  assert.deepStrictEqual(r.filter(inToc), [page(0)]);
  assert.equal(r.length, 2); // the page, the item's span
  r = await reads("5");
  assert.deepStrictEqual(r.filter(inToc), []);
  assert.equal(r.length, 1);
  r = await reads(String(root.firsts[2] + 7));
  assert.deepStrictEqual(r.filter(inToc), [page(2)]);
  assert.equal(r.length, 2);
  r = await reads("-1");
  assert.deepStrictEqual(r.filter(inToc), []);
  // an item with a node of its own, in page 1: the page, the item's node, its header
  r = await reads("2100");
  assert.deepStrictEqual(r.filter(inToc)[0], page(1));
  assert.equal(r.filter(inToc).length, 2);
  assert.equal(r.length, 3);
  // info() and nodeCounts() read every page: the pages not read yet, once
  r = source.log.length;
  const info = await reader.info();
  assert.deepStrictEqual(source.log.slice(r).filter(inToc), []);
  assert.deepStrictEqual(info.root, expect.info);
  await reader.close();
});

test("info(), nodeCounts() and verify() see the whole span table", async () => {
  const reader = await open(fixture(FIXTURE));
  assert.deepStrictEqual((await reader.info()).root, expect.info);
  assert.deepStrictEqual(await reader.nodeCounts(), expect.counts);
  await reader.verify();
  await reader.close();
  const other = await open(golden("paged-list.mlc"));
  await other.verify();
  await other.close();
});

// ---- damage -------------------------------------------------------------------------------

/** Each read of `paths` on a fresh reader of `bytes`: "ok" or the error's class and message. */
async function outcomes(bytes, paths) {
  const out = [];
  for (const path of paths) {
    let reader;
    try {
      reader = await open(bytes);
      if (path === "verify") await reader.verify();
      else if (path === "info") await reader.info();
      else await reader.read(path);
      out.push("ok");
    } catch (e) {
      out.push(e);
    } finally {
      await reader?.close();
    }
  }
  return out;
}

/** `bytes` fails to read at `bad` (CorruptedError matching `why`) and reads at `good`;
 * `verify()` fails too, and `info()` (which reads every page, not the items' nodes) unless
 * `pagesSound`. The root's value (`read("")`) is decoded whole, without its node. */
async function damaged(bytes, bad, good, why, pagesSound = false) {
  const failing = [...bad, "verify", ...(pagesSound ? [] : ["info"])];
  const got = await outcomes(bytes, [...failing, ...good, "", ...(pagesSound ? ["info"] : [])]);
  failing.forEach((path, i) => {
    assert.ok(got[i] instanceof CorruptedError, `${path}: ${got[i]}`);
    assert.match(got[i].message, why, path);
  });
  got.slice(failing.length).forEach((r, i) => assert.equal(r, "ok", `${[...good, "", "info"][i]}: ${r}`));
}

test("a page whose first item is not where its paged list says is corrupted", async () => {
  const laid = laidOut();
  laid.pages[1].fields[1][0] += 1;
  await damaged(relay(laid), [String(root.firsts[1] + 5)], ["0", "-1"], /page 1 of the paged list at TOC offset \d+.*first item is \d+, where the list's page begins at item \d+/);
});

test("a page whose offsets do not meet its paged list's is corrupted", async () => {
  const first = laidOut();
  first.pages[2].fields[2][0] += 1;
  await damaged(relay(first), ["-1"], ["0", String(root.firsts[1])], /page 2 .*bytes \d+\.\.\d+, where the list's page takes \d+\.\.\d+/);
  const last = laidOut();
  const offs = last.pages[0].fields[2];
  offs[offs.length - 1] -= 1;
  await damaged(relay(last), ["0"], ["-1", String(root.firsts[1])], /page 0 .*where the list's page takes/);
});

test("a page whose spans do not rise, or whose kid holds several items, is corrupted", async () => {
  const laid = laidOut();
  const starts = laid.pages[1].fields[1];
  [starts[3], starts[4]] = [starts[4], starts[3]];
  await damaged(relay(laid), [String(root.firsts[1])], ["0"], /page 1 .*starts do not rise/);
  const kid = laidOut();
  const spans = kid.pages[0].fields[1];
  const several = spans.findIndex((s, k) => spans[k + 1] - s > 1);
  kid.pages[0].kids.set(several, kid.pages[0].kids.values().next().value);
  await damaged(relay(kid), ["0"], ["-1"], /page 0 .*span \d+ has a node of its own but \d+ items/);
  const wide = laidOut();
  wide.pages[2].kids.set(5000, wide.pages[0].kids.values().next().value);
  await damaged(relay(wide), ["-1"], ["0"], /page 2 .*a kid names span 5000 of \d+/);
});

test("a page reference to a node that is not a span page is corrupted", async () => {
  const laid = laidOut();
  laid.refs = [null, laid.pages[0].kids.values().next().value, null]; // item 3's node (a dict)
  await damaged(relay(laid), [String(root.firsts[1])], ["0", "-1"], /TOC node at offset \d+ has type 2 where page 1 of the paged list at TOC offset \d+ expects a span page \(type 12\)/);
});

test("a page named at two places is checked at each (not served from the first)", async () => {
  const laid = laidOut();
  laid.refs = [null, { pos: laid.prefix.length, len: laid.pages[0].len }, null]; // page 1 names page 0
  const reader = await open(relay(laid));
  try {
    assert.deepEqual(await reader.read([0]), items[0]); // page 0 read and kept
    await assert.rejects(reader.read([root.firsts[1] + 5]), CorruptedError);
  } finally {
    await reader.close();
  }
});

test("a span page used as a container's node, or as the root, is corrupted", async () => {
  const laid = laidOut();
  const page0 = { pos: laid.pages[0].pos, len: laid.pages[0].len };
  const [k] = [...laid.pages[1].kids.keys()]; // item 2100's span
  laid.pages[1].kids.set(k, page0);
  await damaged(relay(laid), ["2100"], ["2101", "0", "-1"], /TOC node at offset \d+ is a span page \(type 12\), which only a paged list \(type 11\) names/, true);
  const asRoot = laidOut();
  asRoot.rootRef = page0;
  await assert.rejects(open(relay(asRoot)), (e) => e instanceof CorruptedError && /is a span page \(type 12\)/.test(e.message));
});

test("a page failing its checksum, or not a page's fields, is corrupted", async () => {
  const flipped = laidOut();
  const raw = framed(encodeNode([...flipped.pages[1].fields, new Map()]));
  raw[raw.length - 1] ^= 1;
  flipped.pages[1].raw = raw;
  await damaged(relay(flipped), [String(root.firsts[1])], ["0", "-1"], /checksum mismatch/);
  for (const [fields, why] of [
    [[12, [0, 1], [3, 5]], /fields where a span page has 3/],
    [[12, "x", [3, 5], new Map()], /starts is not a list/],
    [[12, [], [3], new Map()], /no span/],
    [[12, [root.firsts[1]], [root.offs[1], 9, root.offs[2]], new Map()], /1 starts and 3 offsets/],
  ]) {
    const laid = laidOut();
    laid.pages[1].raw = framed(encodeNode(fields));
    await damaged(relay(laid), [String(root.firsts[1])], ["0", "-1"], why);
  }
});

test("a malformed paged list node is corrupted when the archive opens", async () => {
  const cases = [
    [(n) => (n[2][0] = 1), /first page begins at item 1/],
    [(n) => n[2].push(root.n - 1), /pages, \d+ offsets and \d+ page references/],
    [(n) => n[3].pop(), /pages, \d+ offsets and \d+ page references/],
    [(n) => ([n[2][1], n[2][2]] = [n[2][2], n[2][1]]), /do not rise/],
    [(n) => (n[2][2] = root.n), /inconsistent pages/],
    [(n) => (n[3][0] = 0), /outside 1\.\.5/],
    [(n) => (n[1] = n[3][3]), /inconsistent pages/],
  ];
  for (const [edit, why] of cases) {
    const laid = laidOut();
    edit(laid.node);
    await assert.rejects(open(relay(laid)), (e) => e instanceof CorruptedError && why.test(e.message), String(edit));
  }
  const forward = laidOut();
  forward.refs = [null, null, { pos: 40000, len: 10 }];
  await assert.rejects(open(relay(forward)), (e) => e instanceof CorruptedError && /a page references .* which do not precede the node/.test(e.message));
  const none = laidOut();
  none.node[2] = [];
  none.node[3] = [root.offs[0]];
  none.pages = [];
  none.prefix = none.toc.subarray(0, root.pages[0][0]);
  await assert.rejects(open(relay(none)), (e) => e instanceof CorruptedError && /no page/.test(e.message));
});
