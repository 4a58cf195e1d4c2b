// Two builds of the hub side by side in one run, against the same call sent straight:
//
//   node local/benches/ab.mjs <capabilities binary A> <capabilities binary B> [rounds] [store parent dir]
//
// Each build serves its own fresh hub (`hub serve --stdio`, the reference memory server added
// as a source), and each round sends `execute` of one `memory.readGraph` call to A, to B, and
// `tools/call read_graph` straight to the memory server, in an order where each follows each
// other equally often, so the machine's moods fall on all three alike. Prints the medians and
// each build's ratio to the straight call as JSON. The store parent defaults to the system
// temporary directory; pass /dev/shm to take the disk's syncs out of the picture; GAP_MS=5
// spaces the steps (see below).
// Needs `cd node && npm ci`.

import { execFileSync } from "node:child_process";
import { mkdtempSync, chmodSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

import { rpc } from "./rpc.mjs";

const [binA, binB, roundsArg, parentArg] = process.argv.slice(2);
if (!binA || !binB) {
  console.error("usage: node local/benches/ab.mjs <binary A> <binary B> [rounds] [store parent dir]");
  process.exit(2);
}
const rounds = Number(roundsArg ?? 200);
const parent = parentArg ?? tmpdir();
const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const memoryServer = join(repo, "node/node_modules/@modelcontextprotocol/server-memory/dist/index.js");

const init = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "ab", version: "0" } };

/** A fresh hub served by `binary`, with the memory server as its one source. */
async function hub(binary) {
  const home = mkdtempSync(join(parent, "capabilities-ab-"));
  chmodSync(home, 0o700);
  // The hub's home goes with the script, however it ends.
  process.on("exit", () => rmSync(home, { recursive: true, force: true }));
  const env = { ...process.env, CAPABILITIES_HOME: home, CAPABILITIES_KEYCHAIN: "file", BROWSER: "true" };
  const memoryFile = join(home, "memory.jsonl");
  const add = ["hub", "add", "--yes", "--namespace", "memory", "--env", `MEMORY_FILE_PATH=${memoryFile}`, "--", "node", memoryServer];
  execFileSync(binary, add, { env, stdio: "ignore" });
  const client = rpc(binary, ["hub", "serve", "--stdio"], env);
  await client.request("initialize", init);
  client.notify("notifications/initialized");
  return { client, memoryFile };
}

const a = await hub(binA);
const b = await hub(binB);
const straight = rpc("node", [memoryServer], { ...process.env, MEMORY_FILE_PATH: a.memoryFile });
await straight.request("initialize", init);
straight.notify("notifications/initialized");

const execute = { name: "execute", arguments: { code: "return await memory.readGraph({})" } };
const completed = async (client) => {
  const answer = await client.request("tools/call", execute);
  if (answer.result?.structuredContent?.status !== "completed") {
    throw new Error("execute did not complete: " + JSON.stringify(answer));
  }
};
const steps = {
  a: () => completed(a.client),
  b: () => completed(b.client),
  straight: () => straight.request("tools/call", { name: "read_graph", arguments: {} }),
};
// One stream of steps in which every step follows each of the other two equally often: a hub
// still freeing and preparing after its answer slows whatever comes next, so a fixed rotation
// (a b s, b s a, s a b) has b follow a twice as often as a follows b, and b measured about 10%
// slower than a with the same binary on both sides.
const stream = ["a", "b", "straight", "a", "straight", "b"];
const took = { a: [], b: [], straight: [] };
const warmUp = 10;
// After answering, a hub frees the spent guest and prepares the next one; back to back, that
// work lands on the next step's clock. GAP_MS=<ms> spaces the steps, as an agent's calls are
// spaced: each then meets idle cores, whose wake-ups cost more.
const gapMs = Number(process.env.GAP_MS ?? 0);
const gap = () => (gapMs > 0 ? new Promise((resolve) => setTimeout(resolve, gapMs)) : Promise.resolve());
for (let i = 0; i < (rounds + warmUp) * 3; i++) {
  const step = stream[i % stream.length];
  await gap();
  const start = process.hrtime.bigint();
  await steps[step]();
  if (i >= warmUp * 3) took[step].push(Number(process.hrtime.bigint() - start) / 1e6);
}
await a.client.close();
await b.client.close();
await straight.close();

const median = (xs) => {
  const sorted = [...xs].sort((x, y) => x - y);
  return +sorted[Math.floor(sorted.length / 2)].toFixed(3);
};
const [ma, mb, ms] = [median(took.a), median(took.b), median(took.straight)];
console.log(
  JSON.stringify({
    store_parent: parent,
    rounds,
    a_execute_ms: ma,
    b_execute_ms: mb,
    straight_tools_call_ms: ms,
    a_ratio: +(ma / ms).toFixed(2),
    b_ratio: +(mb / ms).toFixed(2),
  }),
);
