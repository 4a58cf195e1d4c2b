// The load bench's upstream: an MCP stdio server (official TypeScript SDK, from MCP_SDK_DIR)
// with a read-only tool, `hit {id}`, and a write, `record {id}` (which the hub's policy asks a
// person about); each appends the id to COUNTER_FILE and answers with it. The file is the
// upstream's own count: every id the bench sent must be in it exactly once.

import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const load = (path) => import(pathToFileURL(join(process.env.MCP_SDK_DIR, "dist", "esm", path)).href);
const { Server } = await load("server/index.js");
const { StdioServerTransport } = await load("server/stdio.js");
const { CallToolRequestSchema, ListToolsRequestSchema } = await load("types.js");

const file = process.env.COUNTER_FILE;
const server = new Server({ name: "counter", version: "0.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: "hit",
      description: "Counts one hit under an id.",
      inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      annotations: { readOnlyHint: true },
    },
    {
      name: "record",
      description: "Records one entry under an id.",
      inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      annotations: { readOnlyHint: false, destructiveHint: false },
    },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const id = String(request.params.arguments?.id ?? "");
  appendFileSync(file, id + "\n");
  return { content: [{ type: "text", text: id }], structuredContent: { id } };
});
await server.connect(new StdioServerTransport());
