// Times `execute` of `return 1` over HTTP against the local hub (`hub serve --http`) and the
// hosted Worker under workerd, alternating one call each so both see the same machine load,
// the same through the single `/mcp` address with an OAuth access token (minted here the way
// hosted/src/access/token.rs signs one, under the bench's own key), and the cold start of a
// new tenant's Durable Object. Run through `cargo xtask hosted bench`,
// which builds both and passes:
//
//   node execute.mjs <capabilities binary> <bundle dir> <workerd binary> [rounds]
//
// Prints one JSON object: medians (p50) and p90 in milliseconds, and hosted/local.

import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [binary, bundle, workerd, roundsArg] = process.argv.slice(2);
if (!binary || !bundle || !workerd) {
  console.error("usage: node execute.mjs <capabilities binary> <bundle dir> <workerd binary> [rounds]");
  process.exit(2);
}
const rounds = Number(roundsArg ?? 200);
const ADMIN = "bench-admin-token";
const SECRETS_KEY = "bench-secrets-key";
// The operator's /t/<tenant>/mcp needs its token while sign-in is on.
const OPERATOR = "bench-operator-token";

/// An access token for `tenant` at `origin`/mcp, as the Worker signs one (see token.rs).
function accessToken(origin, tenant) {
  const key = createHmac("sha256", SECRETS_KEY).update("capabilities-hosted access tokens v1").digest();
  const now = Math.floor(Date.now() / 1000);
  const claims = { tenant, account: "bench|bench", client: "bench", scope: "mcp", resource: `${origin}/mcp`, family: "f-bench", iat: now, exp: now + 3600 };
  const body = Buffer.from(JSON.stringify(claims)).toString("base64url");
  return `hub_at.${body}.${createHmac("sha256", key).update(body).digest("base64url")}`;
}
const dir = mkdtempSync(join(tmpdir(), "capabilities-bench-"));
const children = [];
const cleanup = () => {
  for (const child of children) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
};
process.on("exit", cleanup);

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

async function waitFor(url) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await fetch(url);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${url} did not answer within 30 s: ${err}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

/// The local hub on a fresh store: its address and an initialized MCP session.
async function local() {
  const home = join(dir, "hub");
  const env = {
    ...process.env,
    CAPABILITIES_HOME: home,
    HOME: join(dir, "home"),
    XDG_RUNTIME_DIR: join(dir, "home"),
    CAPABILITIES_KEYCHAIN: "file",
    NO_COLOR: "1",
    DO_NOT_TRACK: "1",
  };
  const child = spawn(binary, ["hub", "serve", "--http", "--port", "0"], { env, stdio: ["ignore", "ignore", "pipe"] });
  children.push(child);
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    child.stderr.on("data", (chunk) => {
      seen += chunk;
      const match = /serving on (\S+)\r?\n/.exec(seen);
      if (match) resolve(match[1]);
    });
    child.on("exit", (code) => reject(new Error(`serve --http exited ${code}: ${seen}`)));
  });
  const token = readFileSync(join(home, "http-token"), "utf8").trim();
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    authorization: `Bearer ${token}`,
  };
  const init = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bench", version: "0" } } }),
  });
  await init.text();
  const session = init.headers.get("mcp-session-id");
  if (session) headers["mcp-session-id"] = session;
  await (await fetch(url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).text();
  return { url, headers };
}

async function hosted() {
  const port = await freePort();
  const storage = join(dir, "workerd");
  mkdirSync(storage);
  const child = spawn(
    workerd,
    ["serve", join(bundle, "workerd.capnp"), "--socket-addr", `http=127.0.0.1:${port}`, "--directory-path", `storage=${storage}`],
    {
      env: { ...process.env, HUB_ADMIN_TOKEN: ADMIN, HUB_SECRETS_KEY: SECRETS_KEY, HUB_PUBLIC_URL: `http://127.0.0.1:${port}`, HUB_ACCESS_TOKEN: OPERATOR },
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  children.push(child);
  child.on("exit", (code) => {
    if (code !== null && code !== 0) console.error(`workerd exited ${code}`);
  });
  const started = performance.now();
  await waitFor(`http://127.0.0.1:${port}/`);
  const listening = performance.now() - started;
  return { origin: `http://127.0.0.1:${port}`, listening };
}

let nextId = 1;
/// One `execute` of `return 1`; its time in ms (checked to have completed).
async function execute(url, headers) {
  const body = JSON.stringify({ jsonrpc: "2.0", id: nextId++, method: "tools/call", params: { name: "execute", arguments: { code: "return 1" } } });
  const start = performance.now();
  const response = await fetch(url, { method: "POST", headers, body });
  const text = await response.text();
  const took = performance.now() - start;
  if (!text.includes("completed")) throw new Error(`${url}: HTTP ${response.status}: ${text.slice(0, 500)}`);
  return took;
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const round = (ms) => Math.round(ms * 100) / 100;

const hub = await local();
const worker = await hosted();
const mcpHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const hostedHeaders = { ...mcpHeaders, authorization: `Bearer ${OPERATOR}` };
const hostedUrl = (tenant) => `${worker.origin}/t/${tenant}/mcp`;

// The first call after workerd started (isolate and wasm compiled, first object).
const first = await execute(hostedUrl("bench"), hostedHeaders);
// Warm both up, then alternate.
for (let i = 0; i < 20; i++) {
  await execute(hub.url, hub.headers);
  await execute(hostedUrl("bench"), hostedHeaders);
}
const authorizedHeaders = { ...mcpHeaders, authorization: `Bearer ${accessToken(worker.origin, "bench")}` };
const authorized = () => execute(`${worker.origin}/mcp`, authorizedHeaders);
for (let i = 0; i < 20; i++) await authorized();
const times = { local: [], hosted: [], authorized: [] };
for (let i = 0; i < rounds; i++) {
  if (i % 2 === 0) {
    times.local.push(await execute(hub.url, hub.headers));
    times.hosted.push(await execute(hostedUrl("bench"), hostedHeaders));
    times.authorized.push(await authorized());
  } else {
    times.authorized.push(await authorized());
    times.hosted.push(await execute(hostedUrl("bench"), hostedHeaders));
    times.local.push(await execute(hub.url, hub.headers));
  }
}
// Cold start of a new tenant's object on a warm Worker: its first call, then its second.
const cold = [];
const second = [];
for (let i = 0; i < 20; i++) {
  cold.push(await execute(hostedUrl(`cold-${i}`), hostedHeaders));
  second.push(await execute(hostedUrl(`cold-${i}`), hostedHeaders));
}
const local50 = quantile(times.local, 0.5);
const hosted50 = quantile(times.hosted, 0.5);
console.log(
  JSON.stringify(
    {
      rounds,
      localP50Ms: round(local50),
      localP90Ms: round(quantile(times.local, 0.9)),
      hostedP50Ms: round(hosted50),
      hostedP90Ms: round(quantile(times.hosted, 0.9)),
      hostedOverLocal: round(hosted50 / local50),
      authorizedMcpP50Ms: round(quantile(times.authorized, 0.5)),
      authorizedMcpP90Ms: round(quantile(times.authorized, 0.9)),
      authorizedOverHosted: round(quantile(times.authorized, 0.5) / hosted50),
      newTenantFirstCallP50Ms: round(quantile(cold, 0.5)),
      newTenantSecondCallP50Ms: round(quantile(second, 0.5)),
      workerdListeningMs: round(worker.listening),
      workerdFirstCallMs: round(first),
    },
    null,
    2,
  ),
);
process.exit(0);
