// Shared by the browser tests: headless Chromium (the distribution's package, driven by
// playwright-core), `msglc view` servers, and the Python package's own answers to compare with.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(here, "..", "..");
export const GOLDEN = join(ROOT, "tests", "golden");
export const ARTIFACTS = join(here, "..", "test-artifacts");
mkdirSync(ARTIFACTS, { recursive: true });

/** The Python that has msglc: $PYTHON, else the checkout's .venv, else python3 on PATH. */
export const PYTHON =
  process.env.PYTHON ?? [join(ROOT, ".venv", "bin", "python"), "/usr/bin/python3"].find((p) => existsSync(p)) ?? "python3";

function chromiumPath() {
  if (process.env.CHROMIUM) return process.env.CHROMIUM;
  for (const p of ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]) if (existsSync(p)) return p;
  throw new Error("no Chromium: install the distribution's chromium package (apt-get install chromium) or set CHROMIUM");
}

export async function launch() {
  return chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] });
}

/** A page of its own, with console errors and page errors collected. */
export async function newPage(browser) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(e.message));
  return page;
}

/** `python -m msglc view ARCHIVE --no-browser --port 0`; resolves with its URL once it serves. */
export function view(archive) {
  return new Promise((ok, fail) => {
    const proc = spawn(PYTHON, ["-m", "msglc", "view", archive, "--no-browser", "--port", "0"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    proc.stdout.on("data", (d) => {
      out += d;
      const m = /at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m) ok({ url: m[1], stop: () => stop(proc) });
    });
    proc.stderr.on("data", (d) => (err += d));
    proc.on("exit", (code) => fail(new Error(`msglc view exited (${code}) before serving: ${err}`)));
  });
}

function stop(proc) {
  return new Promise((ok) => {
    if (proc.exitCode !== null) return ok();
    proc.removeAllListeners("exit");
    const late = setTimeout(() => proc.kill("SIGKILL"), 10_000);
    proc.on("exit", () => {
      clearTimeout(late);
      ok();
    });
    proc.kill("SIGTERM"); // msglc view stops cleanly on it, as on Ctrl-C
  });
}

/** The value at `path` as Python's `msglc get` gives it (JSON). */
export function pythonGet(archive, path) {
  return JSON.parse(execFileSync(PYTHON, ["-m", "msglc", "get", archive, path], { cwd: ROOT, encoding: "utf8" }));
}

export async function shot(page, name) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: false });
}

/** Distinct colours in a canvas and the share of its pixels that are not white or clear. */
export async function canvasInk(locator) {
  return locator.evaluate((c) => {
    const ctx = c.getContext("2d");
    const { data } = ctx.getImageData(0, 0, c.width, c.height);
    const colours = new Set();
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) {
      const a = data[i + 3];
      const white = data[i] > 245 && data[i + 1] > 245 && data[i + 2] > 245;
      if (a > 0 && !white) ink++;
      if (colours.size < 1000) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
    }
    return { colours: colours.size, ink: ink / (data.length / 4) };
  });
}
