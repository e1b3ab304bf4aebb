"""Use the tools of MCP servers (stdio subprocesses or streamable HTTP) as tooluse tools.

Supported SDK: the official ``mcp`` package, major version 2 (tested with 2.3, whose newest
protocol revision, ``mcp.types.LATEST_PROTOCOL_VERSION``, is 2026-07-28). The revision is
negotiated (2026-07-28 with current servers, the 2025-11-25 handshake with older ones;
``MCPServerConfig(protocol=...)`` pins one). Install with ``pip install 'tooluse[mcp]'``.

::

    config = MCPServerConfig(command="python", args=("-m", "mcp_server_time"))
    async with MCPToolExecutor(config) as executor:
        tools = await executor.list_tools()      # ToolDefinitions, usable by tooluse.run
        result = await executor.execute_async(ToolCall(name="get_current_time",
                                                       arguments={"timezone": "UTC"}))

- Each listed :class:`~tooluse.tools.ToolDefinition` carries ``input_schema``,
  ``output_schema`` and ``annotations`` as advertised, plus an async ``function`` that calls the
  server, so MCP tools mix freely with local tools in the tool loop.
- Arguments are validated against the input schema before anything is sent; structured
  content is checked against the output schema (a mismatch is a failed result naming it).
- Every call gets exactly one :class:`~tooluse.messages.ToolResult`: tool errors, unknown tools,
  timeouts, crashed servers and malformed replies become failures, never exceptions. A crashed
  server is restarted on the next use; a cancelled (or timed-out) call cancels its request.
- :class:`MCPHandlers` answer what servers ask of the client: sampling (:class:`MCPSampling`:
  any backend behind a policy), elicitation, roots; and receive their progress reports.
- :class:`MCPToolset` serves several servers at once (also from the ``mcpServers`` JSON of
  MCP clients: :meth:`MCPToolset.from_config`, :func:`load_mcp_servers`);
  :class:`SyncMCPToolExecutor` is the blocking facade and :class:`MCPToolServer` serves
  tooluse tools, resources (:func:`mcp_resource`) and prompts (:func:`mcp_prompt`) over MCP.

- Tools may run as tasks (protocol 2025-11-25, :mod:`~tooluse.execution.mcp.tasks`); a served
  tool talks to its client through :func:`served_call`.

Modules: :mod:`~tooluse.execution.mcp.config` (the shared types: server configs, a leaf),
:mod:`~tooluse.execution.mcp.schema` (schema checks, no SDK), :mod:`~tooluse.execution.mcp.process`
(stdio server processes), :mod:`~tooluse.execution.mcp.connection` (one live connection),
:mod:`~tooluse.execution.mcp.client`, :mod:`~tooluse.execution.mcp.sync`,
:mod:`~tooluse.execution.mcp.server_requests` / :mod:`~tooluse.execution.mcp.server_answers`
(what servers ask, and the SDK callbacks answering it), :mod:`~tooluse.execution.mcp.output_check`,
:mod:`~tooluse.execution.mcp.tasks` (tasks on the client),
:mod:`~tooluse.execution.mcp.deep_replies` (HTTP replies too deep for the SDK's parser),
:mod:`~tooluse.execution.mcp.server` with :mod:`~tooluse.execution.mcp.served` /
:mod:`~tooluse.execution.mcp.served_handlers` (resources and prompts to serve),
:mod:`~tooluse.execution.mcp.served_tools` / :mod:`~tooluse.execution.mcp.served_call` (tools
to serve, and their line to the client), :mod:`~tooluse.execution.mcp.served_tasks` (calls
served as tasks), :mod:`~tooluse.execution.mcp.event_store` (resumable HTTP streams),
:mod:`~tooluse.execution.mcp.stdio_transport` and :mod:`~tooluse.execution.mcp.sdk`, the only
module that imports the ``mcp`` SDK (the others reach it through it), on first connect (so
importing this package never does).
"""

from __future__ import annotations

from tooluse.execution.mcp.client import MCPToolExecutor, MCPToolset
from tooluse.execution.mcp.config import MCPOAuth, MCPServerConfig, load_mcp_servers
from tooluse.execution.mcp.resources import MCPPrompt, MCPResource, MCPResourceTemplate
from tooluse.execution.mcp.served import ServedPrompt, ServedResource, mcp_prompt, mcp_resource
from tooluse.execution.mcp.served_call import ServedCall, served_call
from tooluse.execution.mcp.server import MCPToolServer, load_module_offer, load_module_tools
from tooluse.execution.mcp.server_requests import (
    ElicitationRequest,
    ElicitationResponse,
    MCPHandlers,
    MCPProgress,
    MCPRoot,
    MCPSampling,
    SamplingRequest,
)
from tooluse.execution.mcp.sync import SyncMCPToolExecutor
from tooluse.execution.mcp.tasks import MCPTask

__all__ = [
    "ElicitationRequest",
    "ElicitationResponse",
    "MCPHandlers",
    "MCPOAuth",
    "MCPProgress",
    "MCPPrompt",
    "MCPResource",
    "MCPResourceTemplate",
    "MCPRoot",
    "MCPSampling",
    "MCPServerConfig",
    "MCPTask",
    "MCPToolExecutor",
    "MCPToolServer",
    "MCPToolset",
    "SamplingRequest",
    "ServedCall",
    "ServedPrompt",
    "ServedResource",
    "SyncMCPToolExecutor",
    "load_mcp_servers",
    "load_module_offer",
    "load_module_tools",
    "mcp_prompt",
    "mcp_resource",
    "served_call",
]
