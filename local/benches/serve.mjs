// Measures `capabilities hub serve --stdio` the way a harness meets it, over raw JSON-RPC lines:
//
//   node local/benches/serve.mjs <capabilities binary> [rounds] [--out FILE] [--date YYYY-MM-DD]
//
// (a) process start → `initialize` answered, and → `tools/list` answered, on a hub with two
//     stdio sources (they start lazily, so neither number should grow with sources);
// (b) resident memory of an idle server after those answers;
// (c) `execute` of one call to the reference memory server through the hub, against the same
//     `tools/call` sent straight to that server and sent through `relay.c` (the smallest
//     program that can sit between: the floor for anything in the middle on this machine),
//     alternated in one run, each call 5 ms after the last answer.
// (d) a direct-mode profile over the same memory server: `tools/call memory_read_graph` through
//     the hub against the same call sent straight, alternated in one run;
// (f) the same `execute` through `hub serve --http` (a bare HTTP/1.1 client, `http1.mjs`, on
//     one kept-alive connection), against the same straight call, alternated in one run.
// (e) `tools/list` of a direct-mode profile serving 500 operations of the usual size (a document
//     written here), then about 500 operations of GitHub's REST API
//     (its OpenAPI document from @octokit/openapi), then all 1,223, on a warm server: until the
//     answer is in (the hub's part) and until this client has parsed it.
// Prints medians (and p90) as JSON on stdout. With `--out FILE` (or `BENCH_SERVE_OUT=FILE`) it
// also writes them there with the command, the day measured (`--date`, else today) and the
// machine (`nproc`, `uname -m`): the site's performance page is generated from
// `site/data/bench-serve.json`, written this way.
// Needs `cd node && npm ci` and a C compiler (`cc`) for the relay.

import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, chmodSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

import { http1 } from "./http1.mjs";
import { arrivals, rpc } from "./rpc.mjs";

const usage = "usage: node local/benches/serve.mjs <capabilities binary> [rounds] [--out FILE] [--date YYYY-MM-DD]";
const positional = [];
let outFile = process.env.BENCH_SERVE_OUT || null;
let measuredOn = null;
for (let i = 2; i < process.argv.length; i++) {
  const arg = process.argv[i];
  if (arg === "--out" || arg === "--date") {
    const value = process.argv[++i];
    if (!value) {
      console.error(`${arg} needs a value\n${usage}`);
      process.exit(2);
    }
    if (arg === "--out") outFile = value;
    else measuredOn = value;
  } else {
    positional.push(arg);
  }
}
const binary = positional[0];
const rounds = Number(positional[1] ?? 30);
if (!binary) {
  console.error(usage);
  process.exit(2);
}
if (measuredOn !== null && !/^\d{4}-\d{2}-\d{2}$/.test(measuredOn)) {
  console.error(`--date takes YYYY-MM-DD, not \`${measuredOn}\``);
  process.exit(2);
}
const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const memoryServer = join(repo, "node/node_modules/@modelcontextprotocol/server-memory/dist/index.js");

const home = mkdtempSync(join(tmpdir(), "capabilities-bench-"));
chmodSync(home, 0o700);
// The hub's home goes with the script, however it ends.
process.on("exit", () => rmSync(home, { recursive: true, force: true }));
const env = { ...process.env, CAPABILITIES_HOME: home, CAPABILITIES_KEYCHAIN: "file", BROWSER: "true" };
const memoryFile = join(home, "memory.jsonl");
for (const ns of ["memory", "memory_b"]) {
  execFileSync(
    binary,
    ["hub", "add", "--yes", "--namespace", ns, "--env", `MEMORY_FILE_PATH=${memoryFile}`, "--", "node", memoryServer],
    { env, stdio: ["ignore", "ignore", "ignore"] },
  );
}

const init = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "0" } };
const ms = (start) => Number(process.hrtime.bigint() - start) / 1e6;
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { median: +at(0.5).toFixed(2), p90: +at(0.9).toFixed(2), n: s.length };
};
const rssMb = (pid) => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"));
  return Number(line.split(/\s+/)[1]) / 1024;
};

// (a) and (b)
const initialize = [];
const toolsList = [];
const rss = [];
for (let i = 0; i < rounds; i++) {
  const start = process.hrtime.bigint();
  const hub = rpc(binary, ["hub", "serve", "--stdio"], env);
  await hub.request("initialize", init);
  initialize.push(ms(start));
  hub.notify("notifications/initialized");
  await hub.request("tools/list", {});
  toolsList.push(ms(start));
  if (i < 5) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    rss.push(rssMb(hub.child.pid));
  }
  await hub.close();
}

// (c)
const hub = rpc(binary, ["hub", "serve", "--stdio"], env);
await hub.request("initialize", init);
hub.notify("notifications/initialized");
const direct = rpc("node", [memoryServer], { ...process.env, MEMORY_FILE_PATH: memoryFile });
await direct.request("initialize", init);
direct.notify("notifications/initialized");
const relayBinary = join(home, "relay");
execFileSync("cc", ["-O2", "-o", relayBinary, join(repo, "local/benches/relay.c")], { stdio: "inherit" });
const relayed = rpc(relayBinary, ["node", memoryServer], { ...process.env, MEMORY_FILE_PATH: memoryFile });
await relayed.request("initialize", init);
relayed.notify("notifications/initialized");
const execute = { name: "execute", arguments: { code: "return await memory.readGraph({})" } };
// After answering, the hub frees the spent guest and prepares the next one, about 0.9 ms of CPU
// on another thread. Timed right after, the direct call would share the machine's cores with
// that work and the ratio would flatter the hub; an agent's calls come seconds apart. So every
// call starts on a quiet machine: 5 ms after the last answer.
const quiet = () => new Promise((resolve) => setTimeout(resolve, 5));
// Runs each step in turn, `rounds` times after five to warm up, each 5 ms after the last
// answer; the times by step.
async function alternate(steps) {
  const took = Object.fromEntries(Object.keys(steps).map((name) => [name, []]));
  for (let i = 0; i < rounds + 5; i++) {
    for (const [name, step] of Object.entries(steps)) {
      await quiet();
      const start = process.hrtime.bigint();
      await step();
      if (i >= 5) took[name].push(ms(start));
    }
  }
  return took;
}
const readGraph = (client) => () => client.request("tools/call", { name: "read_graph", arguments: {} });
const completed = (answer, how) => {
  if (answer.result?.structuredContent?.status !== "completed") {
    throw new Error(`execute ${how} did not complete: ` + JSON.stringify(answer));
  }
};
const c = await alternate({
  hub: async () => completed(await hub.request("tools/call", execute), "over stdio"),
  straight: readGraph(direct),
  relay: readGraph(relayed),
});
await hub.close();
await relayed.close();

// (f)
const httpServer = spawn(binary, ["hub", "serve", "--http", "--port", "0"], { env, stdio: ["ignore", "ignore", "pipe"] });
const url = await new Promise((resolve, reject) => {
  let seen = "";
  httpServer.stderr.setEncoding("utf8");
  httpServer.stderr.on("data", (chunk) => {
    seen += chunk;
    // Up to the newline: a pipe may hand a line over in pieces.
    const found = /serving on (\S+)\n/.exec(seen);
    if (found) resolve(found[1]);
  });
  httpServer.once("exit", (code) => reject(new Error(`hub serve --http ended (${code}): ${seen}`)));
});
const httpHeaders = {
  authorization: `Bearer ${readFileSync(join(home, "http-token"), "utf8").trim()}`,
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};
let httpId = 0;
const connection = await http1(url);
// One JSON-RPC message over streamable HTTP; the answer comes as JSON or as SSE events.
async function post(method, params) {
  const id = method.startsWith("notifications/") ? undefined : ++httpId;
  const response = await connection.post({ jsonrpc: "2.0", id, method, params }, httpHeaders);
  if (response.headers["mcp-session-id"]) httpHeaders["mcp-session-id"] = response.headers["mcp-session-id"];
  if (id === undefined) return null;
  const json = (response.headers["content-type"] ?? "").includes("text/event-stream")
    ? response.body.split("\n").filter((line) => line.startsWith("data:") && line.slice(5).trim()).map((line) => JSON.parse(line.slice(5))).find((m) => m.id === id)
    : JSON.parse(response.body);
  if (!json) throw new Error(`no answer to ${method}: ${response.status} ${response.body}`);
  return json;
}
await post("initialize", init);
await post("notifications/initialized");
const f = await alternate({
  hub: async () => completed(await post("tools/call", execute), "over HTTP"),
  straight: readGraph(direct),
});
connection.close();
httpServer.kill();

// (d)
execFileSync(binary, ["hub", "profiles", "create", "plain", "--serves", "memory", "--mode", "direct"], { env, stdio: "ignore" });
const plain = rpc(binary, ["hub", "serve", "--stdio", "--profile", "plain"], env);
await plain.request("initialize", init);
plain.notify("notifications/initialized");
const d = await alternate({
  hub: async () => {
    const answer = await plain.request("tools/call", { name: "memory_read_graph", arguments: {} });
    if (answer.result?.isError !== false) throw new Error("the direct call failed: " + JSON.stringify(answer));
  },
  straight: readGraph(direct),
});
await plain.close();
await direct.close();

// (e)
const github = join(repo, "node/node_modules/@octokit/openapi/generated/api.github.com.json");
execFileSync(binary, ["hub", "add", github, "--namespace", "github", "--auth", "none", "--yes"], { env, stdio: "ignore" });
// `tools/list` of a direct-mode profile serving `serves`, on a warm server: the count, the
// answer's size and the medians.
async function listing(profile, serves) {
  execFileSync(binary, ["hub", "profiles", "create", profile, "--serves", serves, "--mode", "direct"], { env, stdio: "ignore" });
  const server = rpc(binary, ["hub", "serve", "--stdio", "--profile", profile], env);
  await server.request("initialize", init);
  server.notify("notifications/initialized");
  const first = await server.request("tools/list", {});
  const count = first.result.tools.length;
  const bytes = JSON.stringify(first).length;
  const took = [];
  const received = [];
  for (let i = 0; i < rounds; i++) {
    const start = process.hrtime.bigint();
    const answer = await server.request("tools/list", {});
    took.push(ms(start));
    received.push(Number(arrivals.get(answer) - start) / 1e6);
    if (answer.result.tools.length !== count) throw new Error("tools/list changed between calls");
  }
  await server.close();
  // `received_ms`: request sent → the answer's last byte in (the hub's part); `ms`: → parsed.
  return { tools: count, bytes, received_ms: stats(received), ms: stats(took) };
}
// 500 operations of the size most APIs have (a path parameter, three query parameters, a
// small JSON body), from a document written here: the listing's cost apart from GitHub's
// unusually large schemas.
const synthetic = { openapi: "3.0.3", info: { title: "Synthetic", version: "1" }, servers: [{ url: "http://127.0.0.1:9" }], paths: {} };
for (let i = 0; i < 500; i++) {
  synthetic.paths[`/things${i}/{id}`] = {
    post: {
      operationId: `updateThing${i}`,
      summary: `Update thing ${i}: its name, labels and state.`,
      parameters: [
        { name: "id", in: "path", required: true, schema: { type: "string" }, description: "The thing's id." },
        { name: "dryRun", in: "query", schema: { type: "boolean" }, description: "Check without writing." },
        { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 100 } },
        { name: "sort", in: "query", schema: { type: "string", enum: ["name", "created", "updated"] } },
      ],
      requestBody: {
        content: {
          "application/json": {
            schema: {
              type: "object",
              properties: {
                name: { type: "string", description: "A new name." },
                labels: { type: "array", items: { type: "string" } },
                state: { type: "string", enum: ["open", "closed"] },
              },
            },
          },
        },
      },
      responses: { 200: { description: "The thing." } },
    },
  };
}
const syntheticFile = join(home, "synthetic.json");
writeFileSync(syntheticFile, JSON.stringify(synthetic));
execFileSync(binary, ["hub", "add", syntheticFile, "--namespace", "things", "--auth", "none", "--yes"], { env, stdio: "ignore" });
const typical500 = await listing("typical500", "things");
// About 500 of GitHub's operations (the repos, actions and orgs groups), then all of them.
const gh500 = await listing("gh500", "github.repos*,github.actions*,github.orgs*");
const ghAll = await listing("gh", "github");

const hubStats = stats(c.hub);
const directStats = stats(c.straight);
const relayStats = stats(c.relay);
const httpStats = stats(f.hub);
const straightHttpStats = stats(f.straight);
const directModeStats = stats(d.hub);
const straightTooStats = stats(d.straight);
const results = {
  sources: 2,
  start_to_initialize_ms: stats(initialize),
  start_to_tools_list_ms: stats(toolsList),
  idle_rss_mb: stats(rss),
  execute_one_call_ms: hubStats,
  direct_tools_call_ms: directStats,
  ratio_of_medians: +(hubStats.median / directStats.median).toFixed(2),
  relay_tools_call_ms: relayStats,
  relay_ratio_of_medians: +(relayStats.median / directStats.median).toFixed(2),
  http_execute_one_call_ms: httpStats,
  http_direct_tools_call_alongside_ms: straightHttpStats,
  http_ratio_of_medians: +(httpStats.median / straightHttpStats.median).toFixed(2),
  direct_mode_call_ms: directModeStats,
  direct_tools_call_alongside_ms: straightTooStats,
  direct_mode_ratio_of_medians: +(directModeStats.median / straightTooStats.median).toFixed(2),
  direct_mode_tools_list_500_typical: typical500,
  direct_mode_tools_list_500: gh500,
  direct_mode_tools_list_all: ghAll,
};
console.log(JSON.stringify(results, null, 2));
if (outFile) {
  const facts = (command, args) => execFileSync(command, args, { encoding: "utf8" }).trim();
  const record = {
    command: `node local/benches/serve.mjs <capabilities binary> ${rounds}`,
    date: measuredOn ?? new Date().toISOString().slice(0, 10),
    rounds,
    machine: { nproc: Number(facts("nproc", [])), arch: facts("uname", ["-m"]) },
    results,
  };
  writeFileSync(outFile, JSON.stringify(record, null, 2) + "\n");
  console.error(`bench-serve: wrote ${outFile}`);
}
