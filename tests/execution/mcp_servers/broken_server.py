"""A hand-written stdio MCP server that misbehaves on purpose (no SDK).

It speaks just enough JSON-RPC to be connected to, then:

- advertises ``bad_schema``, whose input schema is not valid JSON Schema;
- answers ``garbled`` with a result whose ``content`` is not a list;
- answers ``mixed`` with an image block, a resource link and text;
- answers ``ok`` normally.

With ``--die-on-start`` it writes a message to stderr and exits before reading anything.
"""

from __future__ import annotations

import json
import sys

PROTOCOL = "2025-11-25"

TOOLS = [
    {"name": "ok", "description": "Works.", "inputSchema": {"type": "object", "properties": {}}},
    {
        "name": "bad_schema",
        "description": "Advertises a schema that is not JSON Schema.",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "banana"}}},
    },
    {
        "name": "garbled",
        "description": "Returns malformed content.",
        "inputSchema": {"type": "object"},
    },
    {
        "name": "mixed",
        "description": "Returns several content kinds.",
        "inputSchema": {"type": "object"},
    },
]


def reply(request_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


def error(request_id: object, code: int, message: str) -> None:
    payload = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def call_result(name: str) -> object:
    if name == "ok":
        return {"content": [{"type": "text", "text": "fine"}], "isError": False}
    if name == "garbled":
        return {"content": "not a list of blocks", "isError": "maybe"}
    if name == "mixed":
        return {
            "content": [
                {"type": "text", "text": "see attachments"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///tmp/report.txt", "name": "report"},
            ]
        }
    return None


def main() -> None:
    if "--die-on-start" in sys.argv:
        sys.stderr.write("fatal: configuration file missing\n")
        sys.stderr.flush()
        sys.exit(2)
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        request_id = message.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            reply(
                request_id,
                {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "broken", "version": "0"},
                },
            )
        elif method == "tools/list":
            reply(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            result = call_result(message["params"]["name"])
            if result is None:
                error(request_id, -32602, f"Unknown tool: {message['params']['name']}")
            else:
                reply(request_id, result)
        elif method == "ping":
            reply(request_id, {})
        else:
            error(request_id, -32601, f"Method not found: {method}")


if __name__ == "__main__":
    main()
