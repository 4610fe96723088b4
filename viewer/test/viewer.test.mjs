// The viewer in headless Chromium: golden archives opened by file input and by URL (served by
// `msglc view`), the tree, paging, key search, values against Python's, plots, and messages.
import assert from "node:assert/strict";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { mkdtempSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { GOLDEN, PYTHON, ROOT, canvasInk, launch, newPage, pythonGet, shot, view } from "./helpers.mjs";

const PAGE = "file://" + join(ROOT, "viewer", "dist", "index.html");
const tmp = mkdtempSync(join(tmpdir(), "msglc-viewer-"));
let browser;

before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const row = (page, path) => page.locator(`.node[data-path="${path}"] > .row`).first();
const idle = (page) => page.waitForFunction(() => window.msglcViewer && window.msglcViewer.busy() === 0);

async function openFile(page, file) {
  await page.goto(PAGE);
  await page.locator("#file-input").setInputFiles(file);
}

/** The text of the value panel, parsed as the JSON-like text it is. */
async function shownValue(page) {
  const text = await page.locator("#value .value-text").first().textContent();
  return JSON.parse(text);
}

describe("a file opened with the file picker", () => {
  test("numpy.mlc: the tree, a heatmap, a line plot, a scalar and the info panel", async () => {
    const file = join(GOLDEN, "numpy.mlc");
    const page = await newPage(browser);
    await openFile(page, file);
    for (const key of ["f8", "i2", "u", "rec", "scalar"]) await row(page, key).waitFor();
    await idle(page);
    await row(page, "scalar").click();
    assert.equal(await row(page, "scalar").locator(".preview").textContent(), String(pythonGet(file, "scalar")));
    assert.equal(await page.locator("#py-expr").textContent(), 'reader["scalar"]');

    // a 2-D float array: a heatmap whose colour bar spans the data
    await row(page, "f8").click();
    const heat = page.locator("canvas.heatmap");
    await heat.waitFor();
    const f8 = pythonGet(file, "f8").flat();
    const bar = page.locator(".colorbar");
    assert.equal(Number(await bar.getAttribute("data-min")), Math.min(...f8));
    assert.equal(Number(await bar.getAttribute("data-max")), Math.max(...f8));
    const ink = await canvasInk(heat);
    assert.ok(ink.colours > 10, `the heatmap has ${ink.colours} colours`);
    assert.equal(await heat.evaluate((c) => [c.width, c.height].join("x")), "30x20");
    // hovering reads a value out
    const box = await heat.boundingBox();
    await page.mouse.move(box.x + box.width * (7.5 / 30), box.y + box.height * (3.5 / 20));
    assert.equal(await page.locator(".readout").textContent(), `[3, 7] = ${pythonGet(file, "f8")[3][7]}`);
    assert.equal(await page.locator("#py-expr").textContent(), 'reader["f8"]');
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
    await page.locator(".python .copy").click();
    await page.waitForFunction(() => document.querySelector(".python .copy")?.textContent === "copied");
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'reader["f8"]');
    await shot(page, "numpy-f8-heatmap");

    // a 1-D int array: a line plot
    await row(page, "i2").click();
    const plot = page.locator(".lineplot canvas").first();
    await plot.waitFor();
    const line = await canvasInk(plot);
    assert.ok(line.ink > 0.001, `the line plot inks ${line.ink} of its pixels`);
    assert.deepEqual(JSON.parse(await page.locator("#value .value-text").textContent()), pythonGet(file, "i2"));
    await shot(page, "numpy-i2-lineplot");

    // a str array: its elements as text
    await row(page, "u").click();
    await page.locator("#value .value-text").waitFor();
    assert.deepEqual(JSON.parse(await page.locator("#value .value-text").textContent()), pythonGet(file, "u"));

    // the info panel
    await page.locator("#info-panel summary").click();
    const info = await page.locator("#info-panel").textContent();
    assert.match(info, /msglc 1\.5/);
    assert.match(info, /threshold\s*64 bytes/);
    // the TOC's node counts, as msglc info counts them
    const lazy = execFileSync(PYTHON, ["-m", "msglc", "info", file], { cwd: ROOT, encoding: "utf8" })
      .split("\n")
      .find((l) => l.startsWith("lazy nodes"));
    const wanted = [...lazy.matchAll(/(\d+) ([a-z -]+?)(?=,|;|$)/g)].filter((m) => m[1] !== "0" && m[2] !== "blocks");
    await page.waitForFunction(() => /blocks/.test(document.querySelector("#node-counts")?.textContent ?? ""));
    const counts = await page.locator("#node-counts").textContent();
    for (const [, n, kind] of wanted) assert.match(counts, new RegExp(`\\b${n} ${kind}\\b`), `${counts} vs ${lazy}`);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test("matrix.mlc: a list of numeric rows is a heatmap", async () => {
    const file = join(GOLDEN, "matrix.mlc");
    const page = await newPage(browser);
    await openFile(page, file);
    const bar = page.locator(".colorbar");
    await bar.waitFor();
    const all = pythonGet(file, "").flat();
    assert.equal(Number(await bar.getAttribute("data-min")), Math.min(...all));
    assert.equal(Number(await bar.getAttribute("data-max")), Math.max(...all));
    assert.ok((await canvasInk(page.locator("canvas.heatmap"))).colours > 10);
    await shot(page, "matrix-heatmap");
    await page.close();
  });

  test("a 3-D array: two axes chosen, a slice index for the third", async () => {
    const file = join(tmp, "cube.mlc");
    execFileSync(PYTHON, [
      "-c",
      "import sys, numpy as np, msglc; msglc.dump(sys.argv[1], {'cube': np.arange(4*5*6, dtype='<f4').reshape(4, 5, 6)})",
      file,
    ]);
    const page = await newPage(browser);
    await openFile(page, file);
    await row(page, "cube").click();
    const bar = page.locator(".colorbar");
    await bar.waitFor();
    // rows axis 1, columns axis 2, axis 0 at 0: cube[0]
    assert.equal(Number(await bar.getAttribute("data-max")), 29);
    await page.locator("input.index-0").fill("3");
    await page.locator("input.index-0").dispatchEvent("change");
    await page.waitForFunction(() => document.querySelector(".colorbar")?.getAttribute("data-max") === "119");
    assert.equal(Number(await page.locator(".colorbar").getAttribute("data-min")), 90);
    // rows axis 2, columns axis 0 (transposed): the index now picks axis 1
    await page.locator("select.axis-rows").selectOption("2");
    await page.locator("select.axis-columns").selectOption("0");
    await page.locator("input.index-1").fill("4");
    await page.locator("input.index-1").dispatchEvent("change");
    await page.waitForFunction(() => document.querySelector(".colorbar")?.getAttribute("data-min") === "24");
    assert.equal(await page.locator("canvas.heatmap").evaluate((c) => `${c.width}x${c.height}`), "4x6");
    await shot(page, "cube-slice");
    await page.close();
  });
});

describe("small roots", () => {
  test("a scalar root and a small dict root (no TOC node) show their values", async () => {
    const page = await newPage(browser);
    for (const name of ["scalar.mlc", "small-dict.mlc", "inline-dict.mlc"]) {
      const file = join(GOLDEN, name);
      await openFile(page, file);
      await row(page, "").waitFor();
      await idle(page);
      const text = await page.locator("#value .value-text").first().textContent();
      const py = pythonGet(file, "");
      if (name === "small-dict.mlc") {
        // bytes have no JSON form: msglc get gives base64, the viewer its size and hex
        assert.equal(py.c, Buffer.from([0x00, 0xff]).toString("base64"));
        assert.deepEqual(JSON.parse(text.replace("<bytes, 2: 00ff>", '"AP8="')), py);
      } else {
        assert.deepEqual(JSON.parse(text), py, name);
      }
      assert.equal(await page.locator("#py-expr").textContent(), "reader.read()");
      await shot(page, `root-${name}`);
    }
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});

describe("values and drag and drop", () => {
  test("a dropped file opens; a long string is cut with show all; bytes as size and hex", async () => {
    const file = join(tmp, "values.mlc");
    execFileSync(PYTHON, [
      "-c",
      "import sys, msglc; msglc.dump(sys.argv[1], {'text': 'abc' * 2000 + 'END', 'blob': bytes(range(256)) * 4, 'n': None, 'flag': True})",
      file,
    ]);
    const page = await newPage(browser);
    await page.goto(PAGE);
    // a drop of the file on the page, as a browser dispatches it
    const bytes = Array.from(readFileSync(file));
    await page.evaluate((data) => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(data)], "values.mlc"));
      window.dispatchEvent(new DragEvent("dragenter", { dataTransfer: dt }));
      window.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, cancelable: true }));
    }, bytes);
    await row(page, "text").click();
    const text = page.locator("#value .value-text");
    await text.waitFor();
    assert.equal((await text.textContent()).length, 2001); // 2,000 characters and an ellipsis
    assert.match(await page.locator("#value .what").textContent(), /6,003 characters/);
    await page.locator("#value .show-all").click();
    assert.equal(await text.textContent(), pythonGet(file, "text"));
    await row(page, "blob").click();
    await page.locator("#value .hex").waitFor();
    assert.match(await page.locator("#value .what").textContent(), /bytes, 1,024/);
    const hex = await page.locator("#value .hex").textContent();
    assert.match(hex.split("\n")[1], /^00000010  10 11 12 13 14 15 16 17  18 19 1a 1b 1c 1d 1e 1f/);
    assert.equal(await row(page, "n").locator(".preview").textContent(), "null");
    assert.equal(await row(page, "flag").locator(".preview").textContent(), "true");
    assert.equal(await page.locator("#archive-name").textContent(), "values.mlc");
    await shot(page, "values-bytes");
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});

describe("reading little", () => {
  test("big values in a dict: a page reads about 8 MB of them, the rest on a click", async () => {
    const file = join(tmp, "blobs.mlc");
    execFileSync(PYTHON, [
      "-c",
      "import sys, msglc; msglc.dump(sys.argv[1], {'blobs': {f'b{i}': bytes([i]) * (1 << 20) for i in range(40)}})",
      file,
    ]);
    const page = await newPage(browser);
    await openFile(page, file);
    await row(page, "blobs").locator(".toggle").click();
    await page.locator(".node.unread").first().waitFor();
    await idle(page);
    const read = await page.evaluate(() => window.msglcViewer.reader().stats.bytes);
    assert.ok(read < 16 << 20, `expanding read ${read} bytes`);
    const unread = await page.locator(".node.unread").count();
    assert.ok(unread >= 20, `${unread} children wait for a click`);
    const last = page.locator('.node.unread[data-path="blobs/b39"]');
    await last.click();
    await row(page, "blobs/b39").waitFor();
    assert.match(await page.locator("#value .what").textContent(), /bytes, 1,048,576/);
    assert.match(await page.locator("#value .hex").textContent(), /^00000000  27 27 27/);
    await shot(page, "blobs-unread");
    await page.close();
  });
});

describe("down-sampled plots", () => {
  test("a big 2-D array reads every k-th row, coarse first; a long 1-D one every k-th element", async () => {
    const file = join(tmp, "big-arrays.mlc");
    execFileSync(PYTHON, [
      "-c",
      `import sys, numpy as np, msglc
y, x = np.mgrid[0:1200, 0:1300]
img = np.sin(x / 97.0) + np.cos(y / 61.0) + (x * y) / 1.0e6
msglc.dump(sys.argv[1], {"img": img, "line": np.cos(np.arange(100_000) / 900.0).astype("<f4")})
np.save(sys.argv[1] + ".sampled.npy", img[::3, ::3])`,
      file,
    ]);
    const sampled = execFileSync(PYTHON, ["-c", "import sys, numpy as np; a = np.load(sys.argv[1]); print(repr(float(a.min())), repr(float(a.max())), *a.shape)", file + ".sampled.npy"], { encoding: "utf8" }).trim().split(" ");
    const server = await view(file);
    const page = await newPage(browser);
    try {
      await page.goto(server.url);
      await row(page, "img").waitFor();
      await idle(page);
      const before = await page.evaluate(() => window.msglcViewer.reader().stats.bytes);
      await row(page, "img").click();
      await page.locator("canvas.heatmap[data-complete]").waitFor();
      await idle(page);
      const read = (await page.evaluate(() => window.msglcViewer.reader().stats.bytes)) - before;
      const heat = page.locator("canvas.heatmap");
      assert.equal(await heat.evaluate((c) => `${c.height} ${c.width}`), `${sampled[2]} ${sampled[3]}`);
      assert.equal(Number(await page.locator(".colorbar").getAttribute("data-min")), Number(sampled[0]));
      assert.equal(Number(await page.locator(".colorbar").getAttribute("data-max")), Number(sampled[1]));
      // every 3rd row, each read whole: a third of the array, not all of it
      const whole = 1200 * 1300 * 8;
      assert.ok(read <= whole * 0.36, `the heatmap read ${read} of ${whole} bytes`);
      assert.match(await page.locator(".heatmap-axes").textContent(), /every 3rd row and every 3rd column: 400 × 434 samples/);
      // the readout names the element of the whole array
      const box = await heat.boundingBox();
      await page.mouse.move(box.x + 1, box.y + box.height * (10.5 / 400));
      assert.match(await page.locator(".readout").textContent(), /^\[30, 0\] = /);
      await shot(page, "downsampled-heatmap");

      await row(page, "line").click();
      await page.locator(".lineplot canvas").first().waitFor();
      assert.match(await page.locator("#value .note").textContent(), /every 25th element: 4,000 of 100,000 shown/);
      assert.ok((await canvasInk(page.locator(".lineplot canvas").first())).ink > 0.001);
      await shot(page, "downsampled-line");
      assert.deepEqual(page.errors, []);
    } finally {
      await page.close();
      await server.stop();
    }
  });
});

describe("an archive served by msglc view", () => {
  test("block-list.mlc: pages through a long list, jumps, reads an item", async () => {
    const file = join(GOLDEN, "block-list.mlc");
    const server = await view(file);
    const page = await newPage(browser);
    try {
      await page.goto(server.url);
      const range = page.locator(".node[data-path=''] > .children > .pager .range");
      await range.waitFor();
      assert.equal(await range.textContent(), "0–99 of 400");
      await row(page, "99").waitFor();
      await page.locator(".node[data-path=''] > .children > .pager .next").click();
      await page.waitForFunction(() => document.querySelector(".pager .range")?.textContent === "100–199 of 400");
      await row(page, "150").waitFor();
      await page.locator(".pager .jump-input").fill("357");
      await page.locator(".pager .jump button").click();
      await page.waitForFunction(() => document.querySelector(".pager .range")?.textContent === "300–399 of 400");
      await row(page, "357").click();
      await idle(page);
      assert.deepEqual(await shownValue(page), pythonGet(file, "357"));
      assert.equal(await page.locator("#py-expr").textContent(), 'reader["357"]');
      await page.locator(".pager .first").click();
      await page.waitForFunction(() => document.querySelector(".pager .range")?.textContent === "0–99 of 400");
      await page.locator(".pager .last").click();
      await page.waitForFunction(() => document.querySelector(".pager .range")?.textContent === "300–399 of 400");
      await shot(page, "block-list-paged");
      assert.deepEqual(page.errors, []);
    } finally {
      await page.close();
      await server.stop();
    }
  });

  test("hash-dict.mlc: a key search is one lookup; a missing key says so", async () => {
    const file = join(GOLDEN, "hash-dict.mlc");
    const server = await view(file);
    const page = await newPage(browser);
    try {
      await page.goto(server.url);
      await row(page, "key-0").waitFor();
      await idle(page);
      const before = await page.evaluate(() => window.msglcViewer.reader().stats.requests);
      await page.locator(".search-input").fill("key-777");
      await page.locator(".search button").click();
      await page.locator(".search-hit").waitFor();
      await idle(page);
      const after = await page.evaluate(() => window.msglcViewer.reader().stats.requests);
      assert.ok(after - before <= 4, `the search made ${after - before} requests`);
      assert.equal(await page.locator(".search-hit .preview").textContent(), String(pythonGet(file, "key-777")));
      assert.equal(await page.locator("#py-expr").textContent(), 'reader["key-777"]');
      await shot(page, "hash-dict-search");
      await page.locator(".search-input").fill("no-such-key");
      await page.locator(".search button").click();
      await page.locator(".found .miss").waitFor();
      assert.match(await page.locator(".found .miss").textContent(), /no key "no-such-key"/);
      // and the pages of keys are the archive's order
      assert.equal(await page.locator(".pager .range").textContent(), "0–99 of 1,200");
      await page.locator(".pager .next").click();
      await row(page, "key-100").waitFor();
    } finally {
      await page.close();
      await server.stop();
    }
  });

  test("int-keys.mlc: int keys are found as ints and spelled so in Python", async () => {
    const file = join(GOLDEN, "int-keys.mlc");
    const server = await view(file);
    const page = await newPage(browser);
    try {
      await page.goto(server.url + "?url=/archive"); // the URL named explicitly, as a static host would
      await row(page, "3").waitFor();
      await page.locator(".search-input").fill("250");
      await page.locator(".search button").click();
      await page.locator(".search-hit").waitFor();
      assert.equal(await page.locator("#py-expr").textContent(), "reader[[250]]");
      await idle(page);
      assert.equal(await page.locator(".search-hit .preview").textContent(), JSON.stringify(pythonGet(file, "250")));
    } finally {
      await page.close();
      await server.stop();
    }
  });

  test("compressed archives (2.1 and 2.0) open by URL too", async () => {
    for (const name of ["tiled-zstd.mlc", "2.0/numpy-zstd.mlc"]) {
      const file = join(GOLDEN, name);
      const server = await view(file);
      const page = await newPage(browser);
      try {
        await page.goto(server.url);
        await row(page, "f8").click();
        await page.locator("canvas.heatmap").waitFor();
        const f8 = pythonGet(file, "f8").flat();
        assert.equal(Number(await page.locator(".colorbar").getAttribute("data-max")), Math.max(...f8));
        await page.locator("#info-panel summary").click();
        assert.match(await page.locator("#info-panel").textContent(), /zstd/);
        await shot(page, `compressed-${name.replace("/", "-")}`);
      } finally {
        await page.close();
        await server.stop();
      }
    }
  });
});

describe("messages", () => {
  async function messageFor(file) {
    const page = await newPage(browser);
    await openFile(page, file);
    const box = page.locator("#message");
    await box.waitFor();
    const text = await box.textContent();
    const kind = await box.getAttribute("data-kind");
    await shot(page, `message-${kind}`);
    await page.close();
    return [kind, text];
  }

  test("not an archive", async () => {
    const file = join(tmp, "notes.txt");
    writeFileSync(file, "these are notes, not an archive\n".repeat(10));
    const [kind, text] = await messageFor(file);
    assert.equal(kind, "NotAnArchiveError");
    assert.match(text, /not an msglc archive/i);
  });

  test("a damaged archive", async () => {
    const file = join(tmp, "damaged.mlc");
    const bytes = new Uint8Array(readFileSync(join(GOLDEN, "hash-dict.mlc")));
    bytes[bytes.length - 70] ^= 0xff; // in the TOC, under the trailer's checksum
    writeFileSync(file, bytes);
    const [kind, text] = await messageFor(file);
    assert.equal(kind, "CorruptedError");
    assert.match(text, /damaged/);
  });

  test("a cut-short archive", async () => {
    const file = join(tmp, "short.mlc");
    writeFileSync(file, readFileSync(join(GOLDEN, "hash-dict.mlc")).subarray(0, 5000));
    const [kind, text] = await messageFor(file);
    assert.ok(["TruncatedError", "CorruptedError"].includes(kind), kind);
    assert.match(text, /damaged/);
  });

  test("an unsupported version", async () => {
    const file = join(tmp, "v9.mlc");
    const bytes = new Uint8Array(readFileSync(join(GOLDEN, "numpy.mlc")));
    bytes[8] = 9;
    writeFileSync(file, bytes);
    const [kind, text] = await messageFor(file);
    assert.equal(kind, "UnsupportedVersionError");
    assert.match(text, /not supported/);
  });

  test("a wrong URL", async () => {
    const server = await view(join(GOLDEN, "numpy.mlc"));
    const page = await newPage(browser);
    try {
      await page.goto(server.url + "?url=/no-such.mlc");
      await page.locator("#message").waitFor();
      assert.equal(await page.locator("#message").getAttribute("data-kind"), "HttpError");
      assert.match(await page.locator("#message").textContent(), /404/);
      await shot(page, "message-wrong-url");
    } finally {
      await page.close();
      await server.stop();
    }
  });

  test("a damaged archive served by URL", async () => {
    const file = join(tmp, "damaged-served.mlc");
    copyFileSync(join(GOLDEN, "numpy.mlc"), file);
    const bytes = new Uint8Array(readFileSync(file));
    bytes[2] = 0; // the magic
    writeFileSync(file, bytes);
    const server = await view(file);
    const page = await newPage(browser);
    try {
      await page.goto(server.url);
      await page.locator("#message").waitFor();
      assert.equal(await page.locator("#message").getAttribute("data-kind"), "NotAnArchiveError");
    } finally {
      await page.close();
      await server.stop();
    }
  });
});

describe("the screenshot in the docs", () => {
  test("a demo archive: runs expanded, an image as a heatmap", async () => {
    const file = join(tmp, "experiment.mlc");
    execFileSync(PYTHON, [
      "-c",
      `import sys, numpy as np, msglc
y, x = np.mgrid[0:300, 0:400]
runs = [{"energy": round(1.5 - 0.1 * i, 3), "trace": np.sin(np.linspace(0, 6 + i, 2000)) * np.exp(-np.linspace(0, 3, 2000))} for i in range(12)]
msglc.dump(sys.argv[1], {"config": {"name": "demo", "steps": 2000, "seed": 7}, "runs": runs,
    "image": np.sin(x / 31.0) * np.cos(y / 23.0) + x / 400.0}, small_obj_optimization_threshold=64)`,
      file,
    ]);
    const server = await view(file);
    const page = await newPage(browser);
    try {
      await page.goto(server.url);
      await row(page, "runs").waitFor();
      await row(page, "runs").locator(".toggle").click();
      await row(page, "runs/2").waitFor();
      await row(page, "runs/2").locator(".toggle").click();
      await row(page, "runs/2/trace").waitFor();
      await row(page, "image").click();
      await page.locator("canvas.heatmap").waitFor();
      await page.locator("#info-panel summary").click();
      await idle(page);
      const canvas = page.locator("canvas.heatmap");
      const box = await canvas.boundingBox();
      await page.mouse.move(box.x + box.width * 0.6, box.y + box.height * 0.4);
      await shot(page, "experiment");
      if (process.env.MSGLC_DOCS_SCREENSHOT) await page.screenshot({ path: join(ROOT, "docs", "viewer.png") });
      assert.match(await page.locator(".readout").textContent(), /^\[\d+, \d+\] = /);
      await row(page, "runs/2/trace").click();
      await page.locator(".lineplot canvas").first().waitFor();
      assert.ok((await canvasInk(page.locator(".lineplot canvas").first())).ink > 0.001);
      await shot(page, "experiment-trace");
      assert.deepEqual(page.errors, []);
    } finally {
      await page.close();
      await server.stop();
    }
  });
});
