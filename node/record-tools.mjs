// Records the real `tools/list` result of real MCP servers from npm as JSON
// fixtures in core/tests/data/tools/<name>.json, so that the Rust tests of
// search and typegen run on real data.
//
// Re-run (needs only the npm registry, no browser, no token):
//
//   cd node && npm ci && node record-tools.mjs
//
// Pinned versions (see package.json / package-lock.json):
//   @modelcontextprotocol/sdk                1.32.2   (client used here)
//   @modelcontextprotocol/server-everything  2026.8.31 -> everything.json
//   @modelcontextprotocol/server-memory      2026.8.31 -> memory.json
//   @modelcontextprotocol/server-filesystem  2026.8.31 -> filesystem.json
//   @playwright/mcp                          0.0.83    -> playwright.json
//   @modelcontextprotocol/server-github      2025.4.8  -> github.json
//
// Each server is spawned over stdio with the official SDK client, straight
// from node_modules (never npx). `tools/list` is followed through every
// `nextCursor` page, and the raw `tools` arrays, exactly as they came off the
// wire (the JSON-RPC response is tapped before the SDK parses it, so no field
// is dropped or added), are concatenated in server order and written with a
// 2-space indent and a trailing newline. Nothing is sorted: key and tool order
// are the server's own, so the output is stable from run to run.
//
// Notes per server:
//   - everything registers some tools only after initialization, depending on
//     the client's capabilities (roots, sampling, elicitation, tasks). The
//     client advertises all of them for that server so its full tool set is
//     recorded; it answers roots/list with an empty list.
//   - filesystem is given a fresh temporary directory as its allowed
//     directory, and the client advertises no roots for it.
//   - github is started with no token in its environment (it still lists).
//   - playwright runs with --headless --isolated; tools/list does not launch
//     or download a browser.
//   - Servers get only the SDK's default environment (HOME, PATH, ...) plus
//     what is set below, so nothing from the caller's shell leaks in.

import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  StdioClientTransport,
  getDefaultEnvironment,
} from "@modelcontextprotocol/sdk/client/stdio.js";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = resolve(here, "..", "core", "tests", "data", "tools");
const TIMEOUT_MS = 60_000;
const MAX_PAGES = 100;

/** Absolute path of a package's bin script, read from its package.json. */
function binOf(pkg, binName) {
  const pkgDir = join(here, "node_modules", ...pkg.split("/"));
  const manifest = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  const bin = typeof manifest.bin === "string" ? manifest.bin : manifest.bin?.[binName];
  if (!bin) throw new Error(`${pkg} has no bin named ${binName}`);
  return { path: join(pkgDir, bin), version: manifest.version };
}

const fullClientCapabilities = {
  roots: { listChanged: true },
  sampling: {},
  elicitation: { form: {}, url: {} },
  tasks: {
    requests: {
      sampling: { createMessage: {} },
      elicitation: { create: {} },
    },
  },
};

/** The servers, in output order. `setup` gets a scratch dir for this server. */
const servers = [
  {
    name: "everything",
    pkg: "@modelcontextprotocol/server-everything",
    bin: "mcp-server-everything",
    args: () => ["stdio"],
    capabilities: fullClientCapabilities,
  },
  {
    name: "memory",
    pkg: "@modelcontextprotocol/server-memory",
    bin: "mcp-server-memory",
    args: () => [],
    env: (scratch) => ({ MEMORY_FILE_PATH: join(scratch, "memory.jsonl") }),
  },
  {
    name: "filesystem",
    pkg: "@modelcontextprotocol/server-filesystem",
    bin: "mcp-server-filesystem",
    args: (scratch) => {
      const allowed = join(scratch, "allowed");
      mkdirSync(allowed);
      return [allowed];
    },
  },
  {
    name: "playwright",
    pkg: "@playwright/mcp",
    bin: "playwright-mcp",
    args: (scratch) => ["--headless", "--isolated", "--output-dir", join(scratch, "output")],
  },
  {
    name: "github",
    pkg: "@modelcontextprotocol/server-github",
    bin: "mcp-server-github",
    args: () => [],
    // Deliberately no GITHUB_PERSONAL_ACCESS_TOKEN.
  },
];

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function recordServer(server) {
  const { path: binPath, version } = binOf(server.pkg, server.bin);
  const scratch = mkdtempSync(join(tmpdir(), `mcp-record-${server.name}-`));
  const stderr = [];
  let transport;
  let client;
  try {
    const env = { ...getDefaultEnvironment(), ...(server.env?.(scratch) ?? {}) };
    delete env.GITHUB_PERSONAL_ACCESS_TOKEN;
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [binPath, ...server.args(scratch)],
      env,
      cwd: scratch,
      stderr: "pipe",
    });
    transport.stderr?.on("data", (chunk) => stderr.push(chunk));

    client = new Client(
      { name: "capabilities-testbed-recorder", version: "0.0.0" },
      { capabilities: server.capabilities ?? {} },
    );
    if (server.capabilities?.roots) {
      client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [] }));
    }

    // Tap the wire: remember the ids of outgoing tools/list requests and keep
    // the raw, unparsed result of the matching responses.
    const listIds = new Set();
    const rawResults = new Map();
    const origSend = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (message?.method === "tools/list" && message.id !== undefined) listIds.add(message.id);
      return origSend(message, options);
    };

    await withTimeout(client.connect(transport), TIMEOUT_MS, "connecting");
    const origOnMessage = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if (message && listIds.has(message.id) && "result" in message) {
        rawResults.set(message.id, structuredClone(message.result));
      }
      return origOnMessage?.(message, extra);
    };

    const tools = [];
    let cursor;
    let pages = 0;
    do {
      if (++pages > MAX_PAGES) throw new Error(`more than ${MAX_PAGES} pages of tools`);
      const before = new Set(listIds);
      const parsed = await withTimeout(
        client.listTools(cursor === undefined ? undefined : { cursor }),
        TIMEOUT_MS,
        `waiting for tools/list page ${pages}`,
      );
      const id = [...listIds].find((i) => !before.has(i));
      const raw = rawResults.get(id);
      if (!raw || !Array.isArray(raw.tools)) {
        throw new Error(`could not capture the raw tools/list response (page ${pages})`);
      }
      if (raw.tools.length !== parsed.tools.length) {
        throw new Error(`raw and parsed tool counts differ on page ${pages}`);
      }
      tools.push(...raw.tools);
      cursor = raw.nextCursor;
    } while (cursor !== undefined && cursor !== null);

    const file = join(outDir, `${server.name}.json`);
    writeFileSync(file, JSON.stringify(tools, null, 2) + "\n");
    console.log(
      `${server.name}: ${tools.length} tools in ${pages} page(s) from ${server.pkg}@${version} -> ${file}`,
    );
    return true;
  } catch (err) {
    console.error(`ERROR: server "${server.name}" (${server.pkg}) failed: ${err?.message ?? err}`);
    const text = Buffer.concat(stderr).toString("utf8").trim();
    if (text) console.error(`--- stderr of "${server.name}" ---\n${text}\n---`);
    return false;
  } finally {
    try {
      await withTimeout(client?.close() ?? transport?.close() ?? Promise.resolve(), 10_000, "closing");
    } catch {
      // The child is killed by the transport on close; nothing more to do.
    }
    rmSync(scratch, { recursive: true, force: true });
  }
}

mkdirSync(outDir, { recursive: true });
const only = new Set(process.argv.slice(2));
const unknown = [...only].filter((n) => !servers.some((s) => s.name === n));
if (unknown.length) {
  console.error(`unknown server name(s): ${unknown.join(", ")}`);
  process.exit(2);
}
let failed = 0;
for (const server of servers) {
  if (only.size && !only.has(server.name)) continue;
  if (!(await recordServer(server))) failed++;
}
if (failed) {
  console.error(`${failed} server(s) failed`);
  process.exit(1);
}
