// Load on one hub: many MCP clients (the official TypeScript SDK) at once, each making
// `execute`s of one upstream call, on loopback only, in a bounded loop: nine in ten a read that
// runs, one in ten a write that waits for a person, approved out of band and then resumed by
// the client.
//
//   node local/benches/load.mjs <capabilities binary> [clients] [runs per client]
//   node local/benches/load.mjs <capabilities binary> [clients] [runs per client] \
//        --hosted <bundle dir> <workerd binary> [tenants]
//
// Defaults: 32 clients × 200 runs. Local: one `hub serve --http`, the upstream over stdio, each
// write approved through the CLI (`hub approve <run> --choice once`, its own process). Hosted:
// the Worker in workerd with `tenants` tenants (8 unless told), the clients spread over them,
// each tenant loaded through the admin endpoint with the same source (the upstream over
// streamable HTTP) and the policy a local `hub add --yes` proposed, each write approved through
// the admin endpoint. The upstream (load/counter-server.mjs) records every call's id, so a
// repeated or lost call is seen against its own count. Prints throughput, latency p50/p99
// (reads, and the writes' ask-approve-resume apart), errors, repeats and losses, and the
// server's resident memory and open file descriptors after warm-up, halfway and at the end,
// as JSON. Needs `cd node && npm ci`.

import { execFile, execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

const args = process.argv.slice(2);
const hostedAt = args.indexOf("--hosted");
const [binary, clientsArg, runsArg] = hostedAt < 0 ? args : args.slice(0, hostedAt);
const [bundle, workerd, tenantsArg] = hostedAt < 0 ? [] : args.slice(hostedAt + 1);
const clients = Number(clientsArg ?? 32);
const runs = Number(runsArg ?? 200);
const tenants = Number(tenantsArg ?? 8);
if (!binary || (hostedAt >= 0 && (!bundle || !workerd))) {
  console.error(
    "usage: node local/benches/load.mjs <capabilities binary> [clients] [runs per client] [--hosted <bundle dir> <workerd binary> [tenants]]",
  );
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const sdkDir = join(here, "..", "..", "node/node_modules/@modelcontextprotocol/sdk");
const load = (path) => import(pathToFileURL(join(sdkDir, "dist", "esm", path)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const home = mkdtempSync(join(tmpdir(), "capabilities-load-"));
chmodSync(home, 0o700);
const children = [];
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
  rmSync(home, { recursive: true, force: true });
});
const counterFile = join(home, "hits.txt");
const env = { ...process.env, CAPABILITIES_HOME: join(home, "hub"), CAPABILITIES_KEYCHAIN: "file" };
const counterEnv = { ...process.env, COUNTER_FILE: counterFile, MCP_SDK_DIR: sdkDir };
const run = promisify(execFile);

/// Reads a child's stderr (or stdout) until `pattern` matches; the first group.
const waitForLine = (child, stream, pattern, what) =>
  new Promise((resolve, reject) => {
    let seen = "";
    child[stream].setEncoding("utf8");
    child[stream].on("data", (chunk) => {
      seen += chunk;
      const found = seen.match(pattern);
      if (found) resolve(found[1]);
    });
    child.once("exit", (code) => reject(new Error(`${what} exited (${code}): ${seen}`)));
  });

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/// The hub under load: where each client connects, with which headers, how a waiting run is
/// approved, and which process to watch.
async function localHub() {
  execFileSync(
    binary,
    ["hub", "add", "--yes", "--namespace", "counter", "--env", `COUNTER_FILE=${counterFile}`, "--env", `MCP_SDK_DIR=${sdkDir}`,
      "--", "node", join(here, "load/counter-server.mjs")],
    { env, stdio: ["ignore", "ignore", "inherit"] },
  );
  const server = spawn(binary, ["hub", "serve", "--http", "--port", "0"], { env, stdio: ["ignore", "ignore", "pipe"] });
  children.push(server);
  const url = await waitForLine(server, "stderr", /serving on (\S+)\r?\n/, "the server");
  const token = readFileSync(join(home, "hub", "http-token"), "utf8").trim();
  return {
    target: "local serve --http",
    pid: server.pid,
    address: () => ({ url, headers: { Authorization: `Bearer ${token}` } }),
    approve: (_client, runId) => run(binary, ["hub", "approve", runId, "--choice", "once", "--json"], { env }),
  };
}

async function hostedHub() {
  const ADMIN = "load-admin-token";
  const OPERATOR = "load-operator-token";
  const counter = spawn("node", [join(here, "load/counter-server.mjs"), "--http"], { env: counterEnv, stdio: ["ignore", "pipe", "inherit"] });
  children.push(counter);
  const upstream = `http://127.0.0.1:${JSON.parse(await waitForLine(counter, "stdout", /(\{.*\})\n/, "the counter")).port}`;
  // The source and the policy a person would push: what a local `hub add --yes` proposed.
  execFileSync(binary, ["hub", "add", "--yes", "--namespace", "counter", `${upstream}/mcp`], { env, stdio: ["ignore", "ignore", "inherit"] });
  const manifest = JSON.parse(readFileSync(join(home, "hub", "manifests", "counter.json"), "utf8"));
  const policy = JSON.parse(readFileSync(join(home, "hub", "policies", "policy.json"), "utf8"));
  const port = await freePort();
  const storage = join(home, "workerd");
  mkdirSync(storage);
  const origin = `http://127.0.0.1:${port}`;
  const worker = spawn(
    workerd,
    ["serve", join(bundle, "workerd.capnp"), "--socket-addr", `http=127.0.0.1:${port}`, "--directory-path", `storage=${storage}`],
    { env: { ...process.env, HUB_ADMIN_TOKEN: ADMIN, HUB_SECRETS_KEY: "load-secrets-key", HUB_PUBLIC_URL: origin, HUB_ACCESS_TOKEN: OPERATOR }, stdio: ["ignore", "ignore", "inherit"] },
  );
  children.push(worker);
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await fetch(`${origin}/`);
      break;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`workerd did not answer within 30 s: ${err}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  const admin = (path, body) =>
    fetch(`${origin}${path}`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  for (let t = 0; t < tenants; t++) {
    const loaded = await admin(`/t/tenant-${t}/admin/load`, {
      sources: [{ namespace: "counter", url: `${upstream}/mcp`, reviewedOrigin: upstream, manifest }],
      policy,
    });
    if (loaded.status !== 200) throw new Error(`loading tenant-${t}: HTTP ${loaded.status}: ${await loaded.text()}`);
  }
  return {
    target: `hosted workerd, ${tenants} tenants`,
    pid: worker.pid,
    address: (c) => ({ url: `${origin}/t/tenant-${c % tenants}/mcp`, headers: { Authorization: `Bearer ${OPERATOR}` }, tenant: `tenant-${c % tenants}` }),
    approve: async (c, runId) => {
      const answer = await admin(`/t/tenant-${c % tenants}/admin/approve`, { run: runId, choice: "once" });
      if (answer.status !== 200) throw new Error(`approving ${runId}: HTTP ${answer.status}: ${await answer.text()}`);
    },
  };
}

const hub = hostedAt < 0 ? await localHub() : await hostedHub();
const rssMb = () => {
  const line = readFileSync(`/proc/${hub.pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"));
  return +(Number(line.split(/\s+/)[1]) / 1024).toFixed(1);
};
const fds = () => readdirSync(`/proc/${hub.pid}/fd`).length;

async function connect(c) {
  const { url, headers } = hub.address(c);
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: `load-${c}`, version: "0.0.0" });
  await client.connect(transport);
  return client;
}

const latencies = [];
const writeLatencies = [];
const errors = [];
async function read(client, id) {
  const start = process.hrtime.bigint();
  try {
    const answer = await client.callTool({
      name: "execute",
      arguments: { code: `return (await counter.hit({ id: ${JSON.stringify(id)} })).id` },
    });
    const status = answer.structuredContent?.status;
    if (status !== "completed" || answer.structuredContent?.result !== id) {
      errors.push(`${id}: ${status}: ${JSON.stringify(answer.structuredContent).slice(0, 200)}`);
    }
  } catch (err) {
    errors.push(`${id}: ${err?.message ?? err}`);
  }
  latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
}

// A write: it waits for a person, who approves it out of band; the client's resume then
// answers with the call's result, made once.
async function write(client, c, id) {
  const start = process.hrtime.bigint();
  try {
    const asked = await client.callTool({
      name: "execute",
      arguments: { code: `return (await counter.record({ id: ${JSON.stringify(id)} })).id` },
    });
    const runId = asked.structuredContent?.runId;
    if (asked.structuredContent?.status !== "awaiting_approval" || !runId) {
      errors.push(`${id}: not waiting: ${JSON.stringify(asked.structuredContent).slice(0, 200)}`);
    } else {
      await hub.approve(c, runId);
      const answer = await client.callTool({ name: "execute", arguments: { resume: runId } });
      if (answer.structuredContent?.status !== "completed" || answer.structuredContent?.result !== id) {
        errors.push(`${id}: resumed: ${JSON.stringify(answer.structuredContent).slice(0, 200)}`);
      }
    }
  } catch (err) {
    errors.push(`${id}: ${err?.message ?? err}`);
  }
  writeLatencies.push(Number(process.hrtime.bigint() - start) / 1e6);
}

// Warm-up: every client connects and makes one run; memory and descriptors are read after it.
const connected = await Promise.all(Array.from({ length: clients }, (_, c) => connect(c)));
await Promise.all(connected.map((client, c) => read(client, `warm-${c}`)));
latencies.length = 0;
const warm = { rss_mb: rssMb(), fds: fds() };

// Two halves, memory read after each: growth in the first only is warm-up, in both a leak.
const start = process.hrtime.bigint();
const half = Math.floor(runs / 2);
const phase = (from, to) =>
  Promise.all(
    connected.map(async (client, c) => {
      for (let r = from; r < to; r++) {
        if (r % 10 === 9) await write(client, c, `c${c}-r${r}`);
        else await read(client, `c${c}-r${r}`);
      }
    }),
  );
await phase(0, half);
const middle = { rss_mb: rssMb(), fds: fds() };
await phase(half, runs);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const end = { rss_mb: rssMb(), fds: fds() };
await Promise.all(connected.map((client) => client.close()));

// The upstream's own count against what was sent.
const hits = new Map();
for (const id of readFileSync(counterFile, "utf8").split("\n").filter(Boolean)) hits.set(id, (hits.get(id) ?? 0) + 1);
let repeated = 0;
let lost = 0;
for (let c = 0; c < clients; c++) {
  for (let r = 0; r < runs; r++) {
    const n = hits.get(`c${c}-r${r}`) ?? 0;
    if (n === 0) lost++;
    if (n > 1) repeated += n - 1;
  }
}
const quantile = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return (q) => (sorted.length ? +sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(2) : null);
};
const at = quantile(latencies);
const writeAt = quantile(writeLatencies);
console.log(
  JSON.stringify(
    {
      target: hub.target,
      clients,
      runs_per_client: runs,
      runs: latencies.length + writeLatencies.length,
      reads: latencies.length,
      writes_approved: writeLatencies.length,
      seconds: +seconds.toFixed(2),
      runs_per_second: +((latencies.length + writeLatencies.length) / seconds).toFixed(1),
      latency_ms: { p50: at(0.5), p99: at(0.99), max: at(1) },
      write_latency_ms: { p50: writeAt(0.5), p99: writeAt(0.99), max: writeAt(1) },
      errors: errors.length,
      first_errors: errors.slice(0, 3),
      repeated_calls: repeated,
      lost_calls: lost,
      after_warm_up: warm,
      after_half: middle,
      at_end: end,
    },
    null,
    2,
  ),
);
process.exit(0);
