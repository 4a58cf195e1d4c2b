// Measures a call on an OAuth connection through `capabilities hub serve --stdio`, against the
// real OAuth fixture (node/oauth: oidc-provider in front of a TypeScript SDK server):
//
//   node local/benches/oauth.mjs <capabilities binary> [rounds]
//
// Each round waits until the access token (2 s lifetime) has expired, then times one `execute`
// of `fx.whoami` (the first call after expiry: a refresh under the lock, the new token stored,
// a new MCP session) and right after it one more (warm: the stored token). The fixture's counters
// say how many token requests and MCP requests each kind of call made. Prints medians (and p90)
// as JSON on stdout. Needs `cd node && npm ci`.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, chmodSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const binary = process.argv[2];
const rounds = Number(process.argv[3] ?? 30);
if (!binary) {
  console.error("usage: node local/benches/oauth.mjs <capabilities binary> [rounds]");
  process.exit(2);
}
const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TTL_S = 2;

const fixture = spawn(process.execPath, [join(repo, "node/oauth/server.mjs"), "--access-ttl", String(TTL_S)], {
  stdio: ["pipe", "pipe", "ignore"],
});
const urls = await new Promise((resolve) => createInterface({ input: fixture.stdout }).once("line", (l) => resolve(JSON.parse(l))));
const statsUrl = urls.control.replace(/__control$/, "__stats");
const counters = async () => (await fetch(statsUrl)).json();

const home = mkdtempSync(join(tmpdir(), "capabilities-bench-oauth-"));
chmodSync(home, 0o700);
// The hub's home goes with the script, however it ends.
process.on("exit", () => rmSync(home, { recursive: true, force: true }));
const env = {
  ...process.env,
  CAPABILITIES_HOME: home,
  CAPABILITIES_KEYCHAIN: "file",
  BROWSER: join(repo, "node/oauth/browser"),
};
execFileSync(binary, ["hub", "add", urls.mcp, "--namespace", "fx", "--yes"], { env, stdio: ["ignore", "ignore", "ignore"] });

const hub = spawn(binary, ["hub", "serve", "--stdio"], { env: { ...env, BROWSER: "false" }, stdio: ["pipe", "pipe", "ignore"] });
const waiting = new Map();
createInterface({ input: hub.stdout }).on("line", (line) => {
  if (!line.trim()) return;
  const message = JSON.parse(line);
  waiting.get(message.id)?.(message);
  waiting.delete(message.id);
});
let next = 1;
const request = (method, params) => {
  const id = next++;
  const answer = new Promise((resolve) => waiting.set(id, resolve));
  hub.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  return answer;
};
await request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "0" } });
hub.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");

const ms = (start) => Number(process.hrtime.bigint() - start) / 1e6;
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { median: +at(0.5).toFixed(2), p90: +at(0.9).toFixed(2), n: s.length };
};
const execute = { name: "execute", arguments: { code: "return await fx.whoami({})" } };
const timed = async () => {
  const before = await counters();
  const start = process.hrtime.bigint();
  const answer = await request("tools/call", execute);
  const took = ms(start);
  const after = await counters();
  if (answer.result?.structuredContent?.status !== "completed") {
    throw new Error("execute did not complete: " + JSON.stringify(answer));
  }
  return {
    took,
    tokenRequests: after.token_requests.refresh_token - before.token_requests.refresh_token,
    mcpRequests: after.mcp_requests - before.mcp_requests,
  };
};

await timed(); // the first call opens the MCP session
const expired = [];
const warm = [];
const per = { expired: { token: 0, mcp: 0 }, warm: { token: 0, mcp: 0 } };
for (let i = 0; i < rounds; i++) {
  await new Promise((resolve) => setTimeout(resolve, TTL_S * 1000 + 100));
  const first = await timed();
  const second = await timed();
  expired.push(first.took);
  warm.push(second.took);
  per.expired.token += first.tokenRequests;
  per.expired.mcp += first.mcpRequests;
  per.warm.token += second.tokenRequests;
  per.warm.mcp += second.mcpRequests;
}
hub.stdin.end();
fixture.stdin.end();

const e = stats(expired);
const w = stats(warm);
console.log(
  JSON.stringify(
    {
      access_token_lifetime_s: TTL_S,
      first_call_after_expiry_ms: e,
      warm_call_ms: w,
      ratio_of_medians: +(e.median / w.median).toFixed(2),
      refresh_requests_per_call: { after_expiry: per.expired.token / rounds, warm: per.warm.token / rounds },
      mcp_requests_per_call: { after_expiry: per.expired.mcp / rounds, warm: per.warm.mcp / rounds },
    },
    null,
    2,
  ),
);
process.exit(0);
