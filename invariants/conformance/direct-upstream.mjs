// The upstream behind the direct-mode conformance run: an MCP server over stdio, on the
// official TypeScript SDK, serving the fixture tools the suite's `tools-call-*` and
// `json-schema-2020-12` scenarios call, each answering as the scenario's text asks. The hub adds
// it as a source and serves it through a direct-mode profile with bare names, so the suite
// reaches these tools through the hub: policy, journal and scrubbing included.
//
// The SDK is loaded from MCP_SDK_DIR (node/node_modules/@modelcontextprotocol/sdk).

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const sdkDir = process.env.MCP_SDK_DIR;
if (!sdkDir) {
  console.error("MCP_SDK_DIR is not set");
  process.exit(2);
}
const load = (path) => import(pathToFileURL(join(sdkDir, "dist", "esm", path)).href);
const { Server } = await load("server/index.js");
const { StdioServerTransport } = await load("server/stdio.js");
const { CallToolRequestSchema, ListToolsRequestSchema } = await load("types.js");

// A 1x1 red PNG and a short silent WAV, base64.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

const readOnly = { readOnlyHint: true };
const none = { type: "object", properties: {} };

const tools = [
  { name: "test_simple_text", description: "Returns a line of text", inputSchema: none, annotations: readOnly },
  { name: "test_image_content", description: "Returns a 1x1 PNG", inputSchema: none, annotations: readOnly },
  { name: "test_audio_content", description: "Returns a short WAV", inputSchema: none, annotations: readOnly },
  { name: "test_embedded_resource", description: "Returns an embedded text resource", inputSchema: none, annotations: readOnly },
  { name: "test_multiple_content_types", description: "Returns text, an image and a resource", inputSchema: none, annotations: readOnly },
  { name: "test_error_handling", description: "Always fails", inputSchema: none, annotations: readOnly },
  {
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features",
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: {
        address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } },
      },
      properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
      additionalProperties: false,
    },
    annotations: readOnly,
  },
];

const resource = { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." };

const answers = {
  test_simple_text: () => ({ content: [{ type: "text", text: "This is a simple text response for testing." }] }),
  test_image_content: () => ({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] }),
  test_audio_content: () => ({ content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] }),
  test_embedded_resource: () => ({ content: [{ type: "resource", resource }] }),
  test_multiple_content_types: () => ({
    content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: PNG, mimeType: "image/png" },
      { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: '{"test":"data","value":123}' } },
    ],
  }),
  test_error_handling: () => ({ isError: true, content: [{ type: "text", text: "This tool intentionally returns an error for testing" }] }),
  json_schema_2020_12_tool: (args) => ({ content: [{ type: "text", text: JSON.stringify(args ?? {}) }] }),
};

const server = new Server({ name: "direct-upstream", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const answer = answers[request.params.name];
  if (!answer) return { isError: true, content: [{ type: "text", text: `no tool ${request.params.name}` }] };
  return answer(request.params.arguments);
});
await server.connect(new StdioServerTransport());
