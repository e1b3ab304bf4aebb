// A streamable HTTP MCP server written with the official TypeScript SDK, for the tests: it
// offers `ok` and `deep_schema`, whose input schema nests LEVELS objects deep.
//
//   node deep_schema_server.mjs PORT LEVELS [--json]
//
// Stateless (a fresh server per request); replies come as event streams, or as JSON bodies
// with --json.
import http from "node:http";

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [port, levels] = process.argv.slice(2, 4).map(Number);
const json = process.argv.includes("--json");

let deep = { type: "string" };
for (let level = 0; level < levels; level++) {
  deep = { type: "object", properties: { x: deep } };
}
const tools = [
  { name: "ok", description: "Works.", inputSchema: { type: "object", properties: {} } },
  { name: "deep_schema", description: "Nested very deep.", inputSchema: deep },
];

function mcpServer() {
  const server = new Server({ name: "deep", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => ({
    content: [{ type: "text", text: `called ${request.params.name}` }],
  }));
  return server;
}

http
  .createServer(async (request, response) => {
    if (request.method !== "POST") {
      response.writeHead(405).end();
      return;
    }
    const chunks = [];
    for await (const chunk of request) chunks.push(chunk);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: json,
    });
    response.on("close", () => transport.close());
    await mcpServer().connect(transport);
    await transport.handleRequest(request, response, JSON.parse(Buffer.concat(chunks)));
  })
  .listen(port, "127.0.0.1");
