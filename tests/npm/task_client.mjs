// An outside MCP client for the tests, written with the official TypeScript SDK: it calls one
// tool as a task (protocol 2025-11-25) and prints each message of the call as a JSON line.
//
//   node task_client.mjs URL TOOL ARGUMENTS_JSON
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, name, args] = process.argv.slice(2);
const client = new Client({ name: "task-client", version: "1.0.0" }, { capabilities: {} });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const { tools } = await client.listTools();
const listed = tools.find((tool) => tool.name === name);
console.log(JSON.stringify({ type: "listed", taskSupport: listed?.execution?.taskSupport }));
const stream = client.experimental.tasks.callToolStream(
  { name, arguments: JSON.parse(args) },
  CallToolResultSchema,
  { task: { ttl: 60000 } },
);
for await (const message of stream) {
  if (message.type === "result") {
    console.log(JSON.stringify({ type: "result", text: message.result.content[0].text }));
  } else if (message.type === "error") {
    console.log(JSON.stringify({ type: "error", message: String(message.error) }));
  } else {
    console.log(JSON.stringify({ type: message.type, status: message.task.status }));
  }
}
await transport.close();
