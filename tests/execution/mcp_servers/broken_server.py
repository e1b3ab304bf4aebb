"""A hand-written stdio MCP server that misbehaves on purpose (no SDK).

It speaks just enough JSON-RPC to be connected to, then:

- advertises ``bad_schema``, whose input schema is not valid JSON Schema;
- answers ``garbled`` with a result whose ``content`` is not a list;
- answers ``mixed`` with an image block, a resource link and text;
- answers ``ok`` normally.

With ``--die-on-start`` it writes a message to stderr and exits before reading anything.
Further options: ``--pid-file PATH`` (writes its pid there first), ``--hang-on-init`` (never
answers ``initialize``, ignoring SIGTERM), ``--error-on METHOD`` (answers that method with a
JSON-RPC error), ``--bad-tools`` (also advertises tools with a missing, non-object, very deep
and dangling-``$ref`` input schema), ``--deep-tool LEVELS`` (also advertises ``deep_schema``,
its schema nested LEVELS objects deep) and a ``huge`` tool answering ``{"mb": N}`` megabytes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

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
    {
        "name": "huge",
        "description": "Returns `mb` megabytes of text.",
        "inputSchema": {"type": "object", "properties": {"mb": {"type": "integer"}}},
    },
]

DEEP = 40  # 80+ nested containers: beyond any real tool, yet parseable as JSON


def deep_schema(levels: int = DEEP) -> str:
    inner = '{"type": "object", "properties": {"x": ' * levels + '{"type": "string"}'
    return inner + "}}" * levels


BAD_TOOLS = [
    {"name": "no_schema", "description": "No input schema at all."},
    {"name": "string_schema", "description": "A string schema.", "inputSchema": "anything"},
    {
        "name": "dangling_ref",
        "description": "Refers to a definition that is not there.",
        "inputSchema": {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/missing"}},
        },
    },
]


def reply(request_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


def error(request_id: object, code: int, message: str) -> None:
    payload = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def call_result(name: str, arguments: dict) -> object:
    if name == "huge":
        return {"content": [{"type": "text", "text": "h" * (arguments.get("mb", 1) * 1_000_000)}]}
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


def option(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def tools_payload() -> str:
    tools = json.dumps(TOOLS + (BAD_TOOLS if "--bad-tools" in sys.argv else []))
    levels = option("--deep-tool")  # only the good tools, and one nested that many levels
    if "--bad-tools" in sys.argv or levels:
        deep = '{"name": "deep_schema", "description": "Nested very deep.", "inputSchema": '
        tools = tools[:-1] + ", " + deep + deep_schema(int(levels or DEEP)) + "}]"
    return '{"tools": ' + tools + "}"


def main() -> None:
    pid_file = option("--pid-file")
    if pid_file:
        with open(pid_file + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.replace(pid_file + ".tmp", pid_file)
    failing = option("--error-on")
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
        if method == failing:
            error(request_id, -32000, f"database is down (while handling {method})")
        elif method == "initialize" and "--hang-on-init" in sys.argv:
            # Survives SIGTERM, leaving a note that it got one: a client that stops a hung
            # server must SIGKILL it, not wait out a polite shutdown.
            signal.signal(signal.SIGTERM, lambda *_: open(f"{pid_file}.sigterm", "w").close())
            time.sleep(600)
        elif method == "initialize":
            reply(
                request_id,
                {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "broken", "version": "0"},
                },
            )
        elif method == "tools/list":
            text = '{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "result": '
            sys.stdout.write(text + tools_payload() + "}\n")
            sys.stdout.flush()
        elif method == "tools/call":
            params = message["params"]
            result = call_result(params["name"], params.get("arguments") or {})
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
