// Load on one `capabilities hub serve --http`: many MCP clients (the official TypeScript SDK)
// at once, each making `execute`s of one upstream call, on loopback only, in a bounded loop:
// nine in ten a read that runs, one in ten a write that waits for a person, approved through
// the CLI (`hub approve <run> --choice once`, its own process) and then resumed by the client.
//
//   node local/benches/load.mjs <capabilities binary> [clients] [runs per client]
//
// Defaults: 32 clients × 200 runs. The upstream (load/counter-server.mjs) records every call's
// id, so a repeated or lost call is seen against its own count. Prints throughput, latency
// p50/p99, errors, repeats and losses, and the server's resident memory and open file
// descriptors after warm-up, halfway and at the end, as JSON; the writes' own latency (ask,
// approve, resume) apart. Needs `cd node && npm ci`.

import { execFile, execFileSync, spawn } from "node:child_process";
import { promisify } from "node:util";
import { chmodSync, mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const binary = process.argv[2];
const clients = Number(process.argv[3] ?? 32);
const runs = Number(process.argv[4] ?? 200);
if (!binary) {
  console.error("usage: node local/benches/load.mjs <capabilities binary> [clients] [runs per client]");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const sdkDir = join(here, "..", "..", "node/node_modules/@modelcontextprotocol/sdk");
const load = (path) => import(pathToFileURL(join(sdkDir, "dist", "esm", path)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const home = mkdtempSync(join(tmpdir(), "capabilities-load-"));
chmodSync(home, 0o700);
const counterFile = join(home, "hits.txt");
const env = { ...process.env, CAPABILITIES_HOME: join(home, "hub"), CAPABILITIES_KEYCHAIN: "file" };
execFileSync(
  binary,
  ["hub", "add", "--yes", "--namespace", "counter", "--env", `COUNTER_FILE=${counterFile}`, "--env", `MCP_SDK_DIR=${sdkDir}`,
    "--", "node", join(here, "load/counter-server.mjs")],
  { env, stdio: ["ignore", "ignore", "inherit"] },
);

const server = spawn(binary, ["hub", "serve", "--http", "--port", "0"], { env, stdio: ["ignore", "ignore", "pipe"] });
const url = await new Promise((resolve, reject) => {
  let seen = "";
  server.stderr.setEncoding("utf8");
  server.stderr.on("data", (chunk) => {
    seen += chunk;
    const found = seen.match(/serving on (\S+)/);
    if (found) resolve(found[1]);
  });
  server.once("exit", (code) => reject(new Error(`the server exited (${code}): ${seen}`)));
});
const token = readFileSync(join(home, "hub", "http-token"), "utf8").trim();

const rssMb = () => {
  const line = readFileSync(`/proc/${server.pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"));
  return +(Number(line.split(/\s+/)[1]) / 1024).toFixed(1);
};
const fds = () => readdirSync(`/proc/${server.pid}/fd`).length;

async function connect(name) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name, version: "0.0.0" });
  await client.connect(transport);
  return client;
}

const latencies = [];
const errors = [];
async function execute(client, id) {
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

const approve = promisify(execFile);
const writeLatencies = [];
// A write: it waits for a person, who approves it from the CLI; the client's resume then
// answers with the call's result, made once.
async function write(client, id) {
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
      await approve(binary, ["hub", "approve", runId, "--choice", "once", "--json"], { env });
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
const connected = await Promise.all(Array.from({ length: clients }, (_, i) => connect(`load-${i}`)));
await Promise.all(connected.map((client, i) => execute(client, `warm-${i}`)));
latencies.length = 0;
const warm = { rss_mb: rssMb(), fds: fds() };

// Two halves, memory read after each: growth in the first only is warm-up, in both a leak.
const start = process.hrtime.bigint();
const half = Math.floor(runs / 2);
const phase = (from, to) =>
  Promise.all(
    connected.map(async (client, c) => {
      for (let r = from; r < to; r++) {
        if (r % 10 === 9) await write(client, `c${c}-r${r}`);
        else await execute(client, `c${c}-r${r}`);
      }
    }),
  );
await phase(0, half);
const middle = { rss_mb: rssMb(), fds: fds() };
await phase(half, runs);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const end = { rss_mb: rssMb(), fds: fds() };
await Promise.all(connected.map((client) => client.close()));
server.kill("SIGTERM");

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
