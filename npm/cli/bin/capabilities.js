#!/usr/bin/env node
// The `capabilities` command of the npm package: finds the binary in the platform package npm
// installed beside this one (an optional dependency per platform; nothing is downloaded at
// install time), runs it with the same arguments, and exits as it exits. It names itself in
// CAPABILITIES_LAUNCHER, so `hub connect` writes harness entries that run this path, which the
// next `npm i -g @capabilities-hub/cli` keeps in place.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const PACKAGES = {
  "linux x64": "@capabilities-hub/cli-linux-x64",
  "linux arm64": "@capabilities-hub/cli-linux-arm64",
  "darwin x64": "@capabilities-hub/cli-darwin-x64",
  "darwin arm64": "@capabilities-hub/cli-darwin-arm64",
};
const REINSTALL = "npm install -g @capabilities-hub/cli";
const FROM_SOURCE = "cargo install --locked --git https://github.com/DeepAura/capabilities capabilities";

function fail(message) {
  process.stderr.write(`capabilities: error: ${message}\n`);
  process.exit(1);
}

function binary() {
  const platform = `${process.platform} ${process.arch}`;
  const pkg = PACKAGES[platform];
  if (!pkg) {
    fail(`no build for ${platform} is published; build it from source: ${FROM_SOURCE}`);
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    fail(
      `${pkg}, the package holding the binary for ${platform}, is not installed (was the install ` +
        `run with --omit=optional or --no-optional?); install again with: ${REINSTALL}`,
    );
  }
  const bin = path.join(dir, "bin", "capabilities");
  if (!fs.existsSync(bin)) {
    fail(`${bin} is missing; install again with: ${REINSTALL}`);
  }
  return bin;
}

const bin = binary();
// argv[1] is this script as it was started: the bin link npm made, not the file behind it.
const env = { ...process.env, CAPABILITIES_LAUNCHER: path.resolve(process.argv[1]) };
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit", env });
const forward = (signal) => () => child.kill(signal);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, forward(signal));
}
child.on("error", (err) => fail(`starting ${bin}: ${err.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees what the binary saw.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
