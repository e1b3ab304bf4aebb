"""The SDK request handlers that serve declared resources and prompts (see
:mod:`~tooluse.execution.mcp.served`), for the low-level ``Server`` that
:class:`~tooluse.execution.mcp.MCPToolServer` builds.

An unknown resource or prompt, or missing prompt arguments, is answered with the JSON-RPC
"invalid params" error; a function that raises, or returns something that cannot be served,
with "internal error" and the reason. The conversions are pure functions; the SDK is reached
through :mod:`~tooluse.execution.mcp.sdk`.
"""

from __future__ import annotations

import base64
import functools
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from tooluse.execution.mcp import sdk as mcp_sdk
from tooluse.execution.mcp.served import ServedPrompt, ServedResource
from tooluse.media import File, Image
from tooluse.messages import ChatMessage

__all__ = ["prompt_result", "resource_contents", "served_handlers"]

types = mcp_sdk.mcp_types


def resource_contents(uri: str, value: Any, mime_type: str | None) -> Any:
    """What a resource function returned, as the contents of a ``ReadResourceResult``.

    Raises ``ValueError`` for a value that is neither text, data nor JSON-able.
    """
    if isinstance(value, str):
        return types.TextResourceContents(uri=uri, text=value, mime_type=mime_type or "text/plain")
    if isinstance(value, (Image, File)):
        data, media_type = value.data, mime_type or value.media_type
    elif isinstance(value, (bytes, bytearray)):
        data, media_type = bytes(value), mime_type or "application/octet-stream"
    else:
        try:
            text = json.dumps(to_jsonable_python(value), ensure_ascii=False)
        except (TypeError, ValueError, PydanticSerializationError) as exc:
            raise ValueError(f"a {type(value).__name__} cannot be served as a resource") from exc
        return types.TextResourceContents(
            uri=uri, text=text, mime_type=mime_type or "application/json"
        )
    blob = base64.b64encode(data).decode("ascii")
    return types.BlobResourceContents(uri=uri, blob=blob, mime_type=media_type)


def _prompt_message(item: Any) -> Any:
    if isinstance(item, str):
        role, text = "user", item
    elif isinstance(item, ChatMessage) and item.role in ("user", "assistant"):
        role, text = item.role, item.content
    elif isinstance(item, ChatMessage):
        raise ValueError(f"MCP prompts hold user and assistant messages, not {item.role!r} ones")
    else:
        raise ValueError(f"a prompt returns text or ChatMessages, not {type(item).__name__}")
    content = types.TextContent(type="text", text=text)
    return types.PromptMessage.model_validate({"role": role, "content": content})


def prompt_result(prompt: ServedPrompt, value: Any) -> Any:
    """What a prompt function returned, as a ``GetPromptResult`` (``ValueError`` when it holds
    something other than texts and user or assistant messages)."""
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    return types.GetPromptResult(
        description=prompt.description or None,
        messages=[_prompt_message(item) for item in items],
    )


async def _call(function: Callable[..., Any], arguments: Mapping[str, Any]) -> Any:
    import anyio

    if inspect.iscoroutinefunction(function):
        return await function(**arguments)
    return await anyio.to_thread.run_sync(functools.partial(function, **arguments))


def _failed(what: str, exc: BaseException) -> Any:
    return mcp_sdk.SDKError(types.INTERNAL_ERROR, f"{what} failed: {type(exc).__name__}: {exc}")


def _resource_handlers(resources: Sequence[ServedResource]) -> dict[str, Any]:
    fixed = {r.uri: r for r in resources if not r.is_template}
    templates = [(mcp_sdk.UriTemplate.parse(r.uri), r) for r in resources if r.is_template]

    def find(uri: str) -> tuple[ServedResource, dict[str, Any]] | None:
        if uri in fixed:
            return fixed[uri], {}
        for template, resource in templates:
            variables = template.match(uri)
            if variables is not None:
                return resource, dict(variables)
        return None

    async def on_list_resources(_ctx: Any, _params: Any) -> Any:
        listed = [
            types.Resource(
                uri=r.uri, name=r.name, description=r.description or None, mime_type=r.mime_type
            )
            for r in fixed.values()
        ]
        return types.ListResourcesResult(resources=listed)

    async def on_list_resource_templates(_ctx: Any, _params: Any) -> Any:
        listed = [
            types.ResourceTemplate(
                uri_template=r.uri,
                name=r.name,
                description=r.description or None,
                mime_type=r.mime_type,
            )
            for _, r in templates
        ]
        return types.ListResourceTemplatesResult(resource_templates=listed)

    async def on_read_resource(_ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        found = find(uri)
        if found is None:
            raise mcp_sdk.SDKError(types.INVALID_PARAMS, f"Unknown resource: {uri}")
        resource, variables = found
        try:
            value = await _call(resource.function, variables)
            contents = resource_contents(uri, value, resource.mime_type)
        except Exception as exc:
            raise _failed(f"reading {uri}", exc) from exc
        return types.ReadResourceResult(contents=[contents])

    return {
        "on_list_resources": on_list_resources,
        "on_list_resource_templates": on_list_resource_templates,
        "on_read_resource": on_read_resource,
    }


def _prompt_handlers(prompts: Sequence[ServedPrompt]) -> dict[str, Any]:
    by_name = {prompt.name: prompt for prompt in prompts}

    async def on_list_prompts(_ctx: Any, _params: Any) -> Any:
        listed = [
            types.Prompt(
                name=p.name,
                description=p.description or None,
                arguments=[
                    types.PromptArgument(
                        name=a.name, description=a.description or None, required=a.required
                    )
                    for a in p.arguments
                ],
            )
            for p in prompts
        ]
        return types.ListPromptsResult(prompts=listed)

    async def on_get_prompt(_ctx: Any, params: Any) -> Any:
        prompt = by_name.get(params.name)
        if prompt is None:
            raise mcp_sdk.SDKError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        given = dict(params.arguments or {})
        known = {a.name for a in prompt.arguments}
        missing = [a.name for a in prompt.arguments if a.required and a.name not in given]
        unknown = sorted(set(given) - known)
        if missing or unknown:
            problems = [f"missing {', '.join(missing)}"] if missing else []
            problems += [f"unknown {', '.join(unknown)}"] if unknown else []
            message = f"prompt {prompt.name!r} arguments: {'; '.join(problems)}"
            raise mcp_sdk.SDKError(types.INVALID_PARAMS, message)
        try:
            return prompt_result(prompt, await _call(prompt.function, given))
        except Exception as exc:
            raise _failed(f"the prompt {prompt.name!r}", exc) from exc

    return {"on_list_prompts": on_list_prompts, "on_get_prompt": on_get_prompt}


def served_handlers(
    resources: Sequence[ServedResource], prompts: Sequence[ServedPrompt]
) -> dict[str, Any]:
    """The low-level ``Server`` keywords serving ``resources`` and ``prompts`` (none for an
    empty list, so the capability is not declared)."""
    handlers: dict[str, Any] = {}
    if resources:
        handlers.update(_resource_handlers(resources))
    if prompts:
        handlers.update(_prompt_handlers(prompts))
    return handlers
