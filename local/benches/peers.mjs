// Another hub measured beside ours, here and in one run: mcp-hub (npm, a Node proxy that
// aggregates MCP servers and serves them over MCP's SSE transport), calling the reference
// memory server's `read_graph` through it against the same call sent straight to the server
// over stdio, alternated, 30 warm calls each unless told.
//
//   node local/benches/peers.mjs [rounds] [--out FILE] [--date YYYY-MM-DD]
//
// Prints medians as JSON; with --out also writes them (with the command and the machine) for
// the site's performance page. magg is not here: it needs Python 3.12, this Debian has 3.11.

import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, arch, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const outAt = args.indexOf("--out");
const out = outAt >= 0 ? args.splice(outAt, 2)[1] : undefined;
const dateAt = args.indexOf("--date");
const date = dateAt >= 0 ? args.splice(dateAt, 2)[1] : new Date().toISOString().slice(0, 10);
const rounds = Number(args[0] ?? 30);
const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const modules = join(repo, "node/node_modules");
const sdk = (path) => import(pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const { SSEClientTransport } = await sdk("client/sse.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const home = mkdtempSync(join(tmpdir(), "capabilities-peers-"));
const memoryServer = join(modules, "@modelcontextprotocol/server-memory/dist/index.js");
const memoryEnv = { ...process.env, MEMORY_FILE_PATH: join(home, "memory.jsonl") };
const port = await new Promise((resolve) => {
  const probe = createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const config = join(home, "mcp-hub.json");
writeFileSync(
  config,
  JSON.stringify({ mcpServers: { memory: { command: "node", args: [memoryServer], env: { MEMORY_FILE_PATH: memoryEnv.MEMORY_FILE_PATH } } } }),
);
const hub = spawn(join(modules, ".bin/mcp-hub"), ["--port", String(port), "--config", config], {
  stdio: ["ignore", "pipe", "ignore"],
});
await new Promise((resolve, reject) => {
  let seen = "";
  hub.stdout.setEncoding("utf8");
  hub.stdout.on("data", (chunk) => {
    seen += chunk;
    if (seen.includes("servers started successfully")) resolve();
  });
  hub.once("exit", (code) => reject(new Error(`mcp-hub exited (${code}): ${seen}`)));
});

const viaHub = new Client({ name: "peers-bench", version: "0" });
await viaHub.connect(new SSEClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
const listed = await viaHub.listTools();
const readGraph = listed.tools.find((t) => t.name.endsWith("read_graph"));
if (!readGraph) throw new Error(`mcp-hub lists no read_graph: ${listed.tools.map((t) => t.name).join(", ")}`);
const straight = new Client({ name: "peers-bench", version: "0" });
await straight.connect(new StdioClientTransport({ command: "node", args: [memoryServer], env: memoryEnv }));

const ms = (start) => Number(process.hrtime.bigint() - start) / 1e6;
const through = [];
const direct = [];
for (let i = 0; i < rounds + 3; i++) {
  let start = process.hrtime.bigint();
  await viaHub.callTool({ name: readGraph.name, arguments: {} });
  const a = ms(start);
  start = process.hrtime.bigint();
  await straight.callTool({ name: "read_graph", arguments: {} });
  const b = ms(start);
  // The first few warm both paths up.
  if (i >= 3) {
    through.push(a);
    direct.push(b);
  }
}
// mcp-hub 4.2.1 loops logging "Maximum call stack size exceeded" when an SSE client closes;
// it is stopped first, and its log is not shown.
hub.kill("SIGKILL");
await straight.close();

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return +s[Math.floor(s.length / 2)].toFixed(2);
};
const result = {
  peer: "mcp-hub 4.2.1",
  transport: "SSE",
  tool: readGraph.name,
  rounds,
  through_peer_ms: median(through),
  direct_ms: median(direct),
  ratio_of_medians: +(median(through) / median(direct)).toFixed(2),
};
console.log(JSON.stringify(result, null, 2));
if (out) {
  const machine = { cpus: cpus().length, arch: arch() };
  writeFileSync(out, JSON.stringify({ command: `node local/benches/peers.mjs ${rounds}`, date, machine, result }, null, 2) + "\n");
}
