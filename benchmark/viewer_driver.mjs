// Drives the viewer in headless Chromium for benchmark/viewer_targets.py (run with viewer/'s
// node_modules on NODE_PATH, or from there). Arguments: a JSON object {chromium, steps: [...]}; each
// step opens a URL or acts on the page and waits for what it shows; prints one JSON line per step
// with its wall time (from the action to the thing shown) and the reader's request and byte counts.
import { createRequire } from "node:module";
import { join } from "node:path";

const plan = JSON.parse(process.argv[2]);
const require = createRequire(join(plan.viewerDir, "package.json"));
const { chromium } = require("playwright-core");

const browser = await chromium.launch({ executablePath: plan.chromium, args: ["--no-sandbox"] });
const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
const errors = [];
page.on("pageerror", (e) => errors.push(e.message));

const stats = () => page.evaluate(() => {
  const r = window.msglcViewer && window.msglcViewer.reader();
  return r ? { requests: r.stats.requests, bytes: r.stats.bytes } : { requests: 0, bytes: 0 };
});
const idle = () => page.waitForFunction(() => window.msglcViewer && window.msglcViewer.reader() && window.msglcViewer.busy() === 0, null, { timeout: 120_000 });
const row = (path) => page.locator(`.node[data-path="${path}"] > .row`).first();

// Time from an action to the moment what it shows is in the page and painted, measured inside
// the page (a MutationObserver, then one animation frame), so the driver's own round trips
// do not count.
async function timed(action, selector, index = 0, also = null) {
  return page.evaluate(
    async ({ action, selector, index, also }) => {
      const t0 = performance.now();
      const when = (find) =>
        new Promise((resolve) => {
          const check = () => {
            if (find()) {
              observer.disconnect();
              requestAnimationFrame(() => resolve(performance.now() - t0));
            }
          };
          const observer = new MutationObserver(check);
          observer.observe(document.body, { childList: true, subtree: true, attributes: true });
          check();
        });
      const shown = when(() => document.querySelectorAll(selector)[index]);
      const complete = also ? when(() => document.querySelector(also)) : null;
      const target = document.querySelector(action);
      if (target.tagName === "FORM") target.requestSubmit();
      else target.click();
      return also ? [await shown, await complete] : await shown;
    },
    { action, selector, index, also },
  );
}

for (const step of plan.steps) {
  const before = await stats();
  const t0 = performance.now();
  let shownMs;
  let completeMs = null;
  if (step.do === "open") {
    await page.goto(step.url);
    await row("").waitFor({ timeout: 120_000 });
    for (const k of step.children ?? []) await row(k).waitFor({ timeout: 120_000 });
    shownMs = performance.now() - t0; // from navigation: includes loading the page itself
    await idle();
  } else if (step.do === "expand") {
    const node = `.node[data-path="${step.path}"]`;
    shownMs = await timed(`${node} > .row .toggle`, `${node} > .children .slot`, step.page - 1);
    await idle();
  } else if (step.do === "search") {
    const bar = `.node[data-path="${step.path}"] > .children > .pager`;
    await page.locator(`${bar} .search-input`).fill(step.key);
    shownMs = await timed(`${bar} form.search`, `${bar} .search-hit`);
    await idle();
  } else if (step.do === "select") {
    const t = await timed(`.node[data-path="${step.path}"] > .row`, step.wait, 0, step.complete ?? null);
    [shownMs, completeMs] = Array.isArray(t) ? t : [t, t];
    await idle();
  }
  const after = await stats();
  const settled = performance.now();
  if (step.screenshot) await page.screenshot({ path: step.screenshot });
  console.log(
    JSON.stringify({
      step: step.name,
      shown_ms: shownMs,
      complete_ms: completeMs,
      settled_ms: settled - t0,
      requests: after.requests - before.requests,
      bytes: after.bytes - before.bytes,
      total_bytes: after.bytes,
    }),
  );
}
if (errors.length) console.log(JSON.stringify({ errors }));
await browser.close();
