// The load bench's upstream: an MCP server (official TypeScript SDK, from MCP_SDK_DIR) with a
// read-only tool, `hit {id}`, and a write, `record {id}` (which the hub's policy asks a person
// about); each appends the id to COUNTER_FILE and answers with it. The file is the upstream's
// own count: every id the bench sent must be in it exactly once.
//
// Over stdio by default; with `--http`, streamable HTTP (stateless, JSON answers) on a loopback
// port it prints as one JSON line {"port"}, for the hosted hub in workerd.

import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const load = (path) => import(pathToFileURL(join(process.env.MCP_SDK_DIR, "dist", "esm", path)).href);
const { Server } = await load("server/index.js");
const { CallToolRequestSchema, ListToolsRequestSchema } = await load("types.js");

const file = process.env.COUNTER_FILE;
const tool = (name, description, readOnlyHint) => ({
  name,
  description,
  inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
  annotations: readOnlyHint ? { readOnlyHint } : { readOnlyHint, destructiveHint: false },
});
const tools = [tool("hit", "Counts one hit under an id.", true), tool("record", "Records one entry under an id.", false)];

function makeServer() {
  const server = new Server({ name: "counter", version: "0.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const id = String(request.params.arguments?.id ?? "");
    appendFileSync(file, id + "\n");
    return { content: [{ type: "text", text: id }], structuredContent: { id } };
  });
  return server;
}

if (process.argv.includes("--http")) {
  const { StreamableHTTPServerTransport } = await load("server/streamableHttp.js");
  const http = createServer(async (req, res) => {
    if (req.url !== "/mcp") {
      res.writeHead(404);
      res.end();
      return;
    }
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  http.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ port: http.address().port })));
} else {
  const { StdioServerTransport } = await load("server/stdio.js");
  await makeServer().connect(new StdioServerTransport());
}
