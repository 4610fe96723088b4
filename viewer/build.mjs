// Builds dist/index.html: the viewer in ONE self-contained page (script and styles inlined,
// nothing fetched from anywhere), so it works offline, from a static host, or from `msglc view`.
// The reader comes from ../js (built here first); Node's built-ins, which only the reader's
// Node file source imports, are stubbed out of the browser bundle.
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const js = join(here, "..", "js");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
if (!existsSync(join(js, "node_modules"))) execFileSync(npm, ["ci", "--no-audit", "--no-fund"], { cwd: js, stdio: "inherit" });
execFileSync(npm, ["run", "--silent", "build"], { cwd: js, stdio: "inherit" });
// esbuild strips types without checking them: check first (strict, against the reader's .d.ts)
execFileSync(process.execPath, [join(here, "node_modules", "typescript", "bin", "tsc"), "-p", join(here, "tsconfig.json")], { stdio: "inherit" });

const stubNode = {
  name: "stub-node-builtins",
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) => ({ path: args.path, namespace: "node-stub" }));
    b.onLoad({ filter: /.*/, namespace: "node-stub" }, (args) => ({
      contents: `module.exports = new Proxy({}, { get(_, name) { if (name === "__esModule") return false; throw new Error(${JSON.stringify(args.path)} + " is not available in a browser"); } });`,
      loader: "js",
    }));
  },
};

const result = await build({
  entryPoints: [join(here, "src", "main.ts")],
  bundle: true,
  write: false,
  minify: true,
  format: "iife",
  platform: "browser",
  target: ["es2020"],
  outdir: join(here, "dist", "tmp"),
  loader: { ".css": "css" },
  plugins: [stubNode],
  legalComments: "none",
  keepNames: true,
  logLevel: "warning",
});
let script = "";
let style = "";
for (const f of result.outputFiles) {
  if (f.path.endsWith(".js")) script += f.text;
  else if (f.path.endsWith(".css")) style += f.text;
}
// inline text must not close its own element early
script = script.replace(/<\/(script)/gi, "<\\/$1");
style = style.replace(/<\/(style)/gi, "<\\/$1");
const template = readFileSync(join(here, "src", "index.html"), "utf8");
const html = template.replace("/*STYLE*/", () => style).replace("/*SCRIPT*/", () => script);
mkdirSync(join(here, "dist"), { recursive: true });
writeFileSync(join(here, "dist", "index.html"), html);
console.log(`dist/index.html: ${html.length.toLocaleString("en")} bytes`);
