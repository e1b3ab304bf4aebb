"""The providers' own code modes on the wire: the provider runs the model's program, and each
tool call the program makes comes back to the client as a call with a ``caller``.

Pure helpers of the adapters, driven by ``SamplingParams.code_execution``; each tool goes out
with the callers of :meth:`~tooluse.tools.definition.ToolDefinition.code_mode_callers`.

- Anthropic (programmatic tool calling): the request adds the code execution tool
  (``code_execution_20260120``) and each tool's ``allowed_callers`` (``direct`` and/or the
  code execution tool's version). A program shows in the response as a ``server_tool_use``
  block (``code_execution``, its code in ``input.code``); each call it makes is a ``tool_use``
  block whose ``caller`` (``{"type": "code_execution_20260120", "tool_id": ...}``) names it;
  its end is a ``code_execution_tool_result`` block. The response's ``container`` must go
  back with the next request while the program waits for those calls' results. The server
  blocks are kept as provider state and replayed in place (as for tool search); a call's
  ``caller`` is replayed with it.
- OpenAI Responses (programmatic tool calling, JavaScript): the request adds the
  ``programmatic_tool_calling`` tool and each function's ``allowed_callers`` (``direct``,
  ``programmatic``). A program is a ``program`` item (``call_id``, ``code``, an opaque
  ``fingerprint``); its calls are ``function_call`` items with ``caller: {"type": "program",
  "caller_id": ...}``; its end a ``program_output`` item. Both items are replayed whole.

Either way the calls reach the loop as ordinary calls (approval, checkpoints, the trail) with
``ToolCall.caller`` set, and :class:`~tooluse.providers.base.ProviderProgram` describes the
programs for the loop's events, as tooluse's own code mode does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.messages import ChatMessage, ProviderState, ToolCall
from tooluse.providers.base import ProviderProgram, SamplingParams
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "ANTHROPIC_CODE_EXECUTION",
    "CONTAINER_KEY",
    "RESPONSES_PROGRAM_ITEMS",
    "RESPONSES_PROGRAM_TOOL",
    "anthropic_call",
    "anthropic_container",
    "anthropic_programs",
    "with_anthropic_callers",
    "responses_call_caller",
    "responses_programs",
    "with_responses_callers",
]

#: Claude's code execution tool, in the version that runs programs calling the tools.
ANTHROPIC_CODE_EXECUTION: Mapping[str, str] = {
    "type": "code_execution_20260120",
    "name": "code_execution",
}
#: The Responses tool that lets the model run programs calling the functions.
RESPONSES_PROGRAM_TOOL: Mapping[str, str] = {"type": "programmatic_tool_calling"}
#: The Responses output items of a program, replayed whole.
RESPONSES_PROGRAM_ITEMS = frozenset({"program", "program_output"})
#: Where an assistant message keeps the Anthropic container its program runs in.
CONTAINER_KEY = "anthropic_container"

_ANTHROPIC_CALLERS = {"direct": "direct", "code": ANTHROPIC_CODE_EXECUTION["type"]}
_RESPONSES_CALLERS = {"direct": "direct", "code": "programmatic"}


def _on(params: SamplingParams | None) -> bool:
    return params is not None and params.code_execution


def with_anthropic_callers(
    schemas: list[dict[str, Any]], tools: Sequence[ToolDefinition], params: SamplingParams | None
) -> list[dict[str, Any]]:
    """The Messages ``tools`` with each tool's ``allowed_callers`` and the code execution tool
    first, when ``params.code_execution``; else ``schemas`` as they are."""
    if not _on(params):
        return schemas
    by_name = {t.name: t for t in tools}
    out: list[dict[str, Any]] = [dict(ANTHROPIC_CODE_EXECUTION)]
    for schema in schemas:
        tool = by_name.get(str(schema.get("name")))
        if tool is None or schema.get("type", "custom") != "custom":  # a server tool
            out.append(schema)
            continue
        callers = [_ANTHROPIC_CALLERS[c] for c in tool.code_mode_callers()]
        out.append({**schema, "allowed_callers": callers})
    return out


def with_responses_callers(
    schemas: list[dict[str, Any]], tools: Sequence[ToolDefinition], params: SamplingParams | None
) -> list[dict[str, Any]]:
    """The Responses ``tools`` with each function's ``allowed_callers`` and the programmatic
    tool calling tool, when ``params.code_execution``; else ``schemas`` as they are."""
    if not _on(params):
        return schemas
    by_name = {t.name: t for t in tools}
    out: list[dict[str, Any]] = [dict(RESPONSES_PROGRAM_TOOL)]
    for schema in schemas:
        tool = by_name.get(str(schema.get("name")))
        if schema.get("type") != "function" or tool is None:
            out.append(schema)
            continue
        callers = [_RESPONSES_CALLERS[c] for c in tool.code_mode_callers()]
        out.append({**schema, "allowed_callers": callers})
    return out


# -- Anthropic: calls, programs, the container ---------------------------------------------------


def anthropic_call(call: ToolCall, block: Mapping[str, Any], model: str) -> ToolCall:
    """``call`` (decoded from a ``tool_use`` block) with the program that made it, if any."""
    caller = block.get("caller")
    if not isinstance(caller, Mapping) or caller.get("type") == "direct":
        return call
    state = ProviderState(provider="anthropic", model=model, data={"caller": dict(caller)})
    return ToolCall(
        id=call.id,
        name=call.name,
        arguments=call.arguments,
        raw_arguments=call.raw_arguments,
        state=state,
        synthetic_id=call.synthetic_id,
        caller=str(caller.get("tool_id") or "") or None,
    )


def anthropic_programs(blocks: Sequence[Mapping[str, Any]]) -> tuple[ProviderProgram, ...]:
    """The programs a Messages response started or ended."""
    programs = []
    for block in blocks:
        kind = block.get("type")
        if kind == "server_tool_use" and block.get("name") == "code_execution":
            code = (block.get("input") or {}).get("code")
            programs.append(
                ProviderProgram(
                    id=str(block.get("id", "")),
                    runner="anthropic",
                    code=code if isinstance(code, str) else None,
                )
            )
        elif kind == "code_execution_tool_result":
            output, failed = _anthropic_output(block.get("content") or {})
            programs.append(
                ProviderProgram(
                    id=str(block.get("tool_use_id", "")),
                    runner="anthropic",
                    output=output,
                    is_error=failed,
                )
            )
    return tuple(programs)


def _anthropic_output(content: Mapping[str, Any]) -> tuple[str, bool]:
    kind = content.get("type")
    if kind == "code_execution_tool_result_error":
        return f"error: {content.get('error_code', 'unknown')}", True
    stdout = str(content.get("stdout") or "")
    if not stdout and content.get("encrypted_stdout"):
        stdout = "(the output is encrypted)"
    stderr = str(content.get("stderr") or "")
    text = stdout.rstrip("\n") + (f"\n[stderr]\n{stderr.rstrip()}" if stderr.strip() else "")
    return text, int(content.get("return_code") or 0) != 0


def anthropic_container(messages: Sequence[ChatMessage]) -> str | None:
    """The container to send: the last assistant turn's, when a program of it waits for the
    results of its calls."""
    for message in reversed(messages):
        if message.role != "assistant":
            continue
        container = message.metadata.get(CONTAINER_KEY)
        waiting = any(call.caller for call in message.tool_calls)
        if isinstance(container, Mapping) and container.get("id") and waiting:
            return str(container["id"])
        return None
    return None


# -- OpenAI Responses: calls and programs --------------------------------------------------------


def responses_call_caller(item: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The program a ``function_call`` item names as its caller (``None`` for the model), and
    the state to replay it with."""
    caller = item.get("caller")
    if not isinstance(caller, Mapping) or caller.get("type") != "program":
        return None, {}
    return str(caller.get("caller_id") or "") or None, {"caller": dict(caller)}


def responses_programs(items: Sequence[Mapping[str, Any]]) -> tuple[ProviderProgram, ...]:
    """The programs a Responses output started or ended."""
    programs = []
    for item in items:
        if item.get("type") == "program":
            programs.append(
                ProviderProgram(
                    id=str(item.get("call_id", "")), runner="openai", code=item.get("code")
                )
            )
        elif item.get("type") == "program_output":
            programs.append(
                ProviderProgram(
                    id=str(item.get("call_id", "")),
                    runner="openai",
                    output=str(item.get("result", "")),
                    is_error=item.get("status") != "completed",
                )
            )
    return tuple(programs)
