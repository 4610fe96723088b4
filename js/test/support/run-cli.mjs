#!/usr/bin/env node
// Run msglc-js's main() for many command lines in one process, for the cross-implementation
// tests (tests/js/): a node start per command would cost more than the commands themselves.
//
//   node run-cli.mjs < commands.json
//
// stdin: a JSON array of argument lists. stdout: one JSON line per list, in order:
// {"status": exit status, "stdout": base64 of what it wrote, "stderr": text}. main() writes
// only through process.stdout.write and process.stderr.write, which are captured per command.

import { readFileSync } from "node:fs";

// (nothing when `node --test test/` loads this file as one of its tests)
if (process.env.NODE_TEST_CONTEXT) process.exit(0);

const { main } = await import(new URL("../../dist/cli/main.js", import.meta.url));

function capture(stream, chunks) {
  const write = stream.write;
  stream.write = (data, encoding, done) => {
    const callback = typeof encoding === "function" ? encoding : done;
    chunks.push(typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data));
    if (callback) queueMicrotask(() => callback(null));
    return true;
  };
  return () => {
    stream.write = write;
  };
}

const commands = JSON.parse(readFileSync(0, "utf8"));
const lines = [];
for (const argv of commands) {
  const out = [];
  const err = [];
  const restore = [capture(process.stdout, out), capture(process.stderr, err)];
  let status;
  try {
    status = await main(argv);
  } finally {
    for (const r of restore) r();
  }
  lines.push(
    JSON.stringify({ status, stdout: Buffer.concat(out).toString("base64"), stderr: Buffer.concat(err).toString("utf8") }),
  );
}
process.stdout.write(lines.join("\n") + "\n");
