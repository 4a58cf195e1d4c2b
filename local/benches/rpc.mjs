// A child process speaking newline-delimited JSON-RPC, shared by the benches that drive an MCP
// server over stdio (`serve.mjs`, `ab.mjs`).

import { spawn } from "node:child_process";

/** When each answer's last byte arrived, by answer. */
export const arrivals = new WeakMap();

/** A child speaking newline-delimited JSON-RPC. */
export function rpc(command, args, childEnv) {
  const child = spawn(command, args, { env: childEnv, stdio: ["pipe", "pipe", "ignore"] });
  // Chunks of the line being read: a tools/list of thousands of tools is megabytes on one
  // line, and searching the whole buffer again on every chunk would cost more than the answer.
  let parts = [];
  const waiting = new Map();
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    let at;
    while ((at = chunk.indexOf("\n")) >= 0) {
      parts.push(chunk.slice(0, at));
      chunk = chunk.slice(at + 1);
      // When the whole answer was in: what the server took, apart from this client's parse.
      const arrived = process.hrtime.bigint();
      const line = parts.join("");
      parts = [];
      if (!line.trim()) continue;
      const message = JSON.parse(line);
      const resolve = waiting.get(message.id);
      if (resolve) {
        waiting.delete(message.id);
        arrivals.set(message, arrived);
        resolve(message);
      }
    }
    if (chunk) parts.push(chunk);
  });
  let next = 1;
  return {
    child,
    request(method, params) {
      const id = next++;
      const answer = new Promise((resolve) => waiting.set(id, resolve));
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
      return answer;
    },
    notify(method) {
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method }) + "\n");
    },
    async close() {
      child.stdin.end();
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}
