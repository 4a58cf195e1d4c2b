// Measures `capabilities hub connect` placing the hub's skills into seven harnesses:
//
//   node local/benches/connect.mjs <capabilities binary> [rounds] [skills]
//
// Each round starts from a fresh HOME holding the seven harnesses' files (Claude Code, Codex,
// Cursor, Gemini CLI, Copilot CLI, OpenCode, Antigravity) and a copy of a hub with `skills`
// skills (default 100) added once, then times the whole `hub connect` process: the MCP entries
// written with their backups, and every skill placed (links for Claude Code, copies elsewhere).
// Prints the median (and p90) as JSON on stdout. The target is at most 1 s.

import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const binary = process.argv[2];
const rounds = Number(process.argv[3] ?? 10);
const count = Number(process.argv[4] ?? 100);
if (!binary) {
  console.error("usage: node local/benches/connect.mjs <capabilities binary> [rounds] [skills]");
  process.exit(2);
}

const root = mkdtempSync(join(tmpdir(), "capabilities-connect-bench-"));
chmodSync(root, 0o700);
const template = join(root, "hub-template");
const base = { ...process.env, CAPABILITIES_KEYCHAIN: "file", NO_COLOR: "1" };

// The hub: `count` skills of two files each, added through the CLI once.
const work = join(root, "skills");
for (let i = 0; i < count; i++) {
  const dir = join(work, `skill-${i}`);
  mkdirSync(join(dir, "scripts"), { recursive: true });
  writeFileSync(
    join(dir, "SKILL.md"),
    `---\nname: skill-${i}\ndescription: Step-by-step notes for task ${i}, with a script to run.\n---\nRun scripts/run.sh, then check the output.\n`,
  );
  writeFileSync(join(dir, "scripts", "run.sh"), `#!/bin/sh\necho task ${i}\n`);
}
execFileSync(binary, ["hub", "skills", "add", work], { env: { ...base, CAPABILITIES_HOME: template }, stdio: "ignore" });

const harnessFiles = {
  ".claude.json": "{}\n",
  ".codex/config.toml": "",
  ".cursor/mcp.json": "{}\n",
  ".gemini/settings.json": "{}\n",
  ".copilot/mcp-config.json": "{}\n",
  ".config/opencode/opencode.json": "{}\n",
  ".gemini/antigravity/mcp_config.json": "{}\n",
};

const took = [];
for (let round = 0; round < rounds; round++) {
  const dir = join(root, `round-${round}`);
  const home = join(dir, "home");
  const hub = join(dir, "hub");
  for (const [path, text] of Object.entries(harnessFiles)) {
    mkdirSync(join(home, path, ".."), { recursive: true });
    writeFileSync(join(home, path), text);
  }
  cpSync(template, hub, { recursive: true });
  const env = { ...base, HOME: home, CAPABILITIES_HOME: hub };
  const start = process.hrtime.bigint();
  execFileSync(binary, ["hub", "connect"], { env, stdio: "ignore" });
  took.push(Number(process.hrtime.bigint() - start) / 1e6);
  // Every harness got every skill, or the figure means nothing.
  for (const folder of [".claude/skills", ".agents/skills", ".cursor/skills", ".gemini/skills", ".copilot/skills", ".config/opencode/skills", ".gemini/antigravity/skills"]) {
    const placed = readdirSync(join(home, folder)).length;
    if (placed !== count) throw new Error(`${folder} holds ${placed} skills, not ${count}`);
  }
  rmSync(dir, { recursive: true, force: true });
}
rmSync(root, { recursive: true, force: true });

const sorted = [...took].sort((a, b) => a - b);
const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
console.log(
  JSON.stringify(
    { harnesses: Object.keys(harnessFiles).length, skills: count, connect_ms: { median: +at(0.5).toFixed(1), p90: +at(0.9).toFixed(1), n: took.length } },
    null,
    2,
  ),
);
