"""The SDK request handlers that serve declared resources and prompts (see
:mod:`~tooluse.execution.mcp.served`), for the low-level ``Server`` that
:class:`~tooluse.execution.mcp.MCPToolServer` builds.

A client may subscribe to a resource (``resources/subscribe``); a served tool that changes
what the resource shows says so with
:meth:`~tooluse.execution.mcp.served_call.ServedCall.resource_updated`, and every subscriber gets
``notifications/resources/updated``. Completions of prompt arguments and template variables (``completion/complete``) offer the
values their annotations allow (a ``Literal`` or an ``Enum``). An unknown resource or prompt, or
missing prompt arguments, is answered with the JSON-RPC
"invalid params" error; a function that raises, or returns something that cannot be served,
with "internal error" and the reason. The conversions are pure functions; the SDK is reached
through :mod:`~tooluse.execution.mcp.sdk`.
"""

from __future__ import annotations

import base64
import functools
import inspect
import json
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from tooluse.execution.mcp import sdk as mcp_sdk
from tooluse.execution.mcp.served import ServedPrompt, ServedResource
from tooluse.execution.mcp.served_tools import content_block
from tooluse.media import File, Image
from tooluse.messages import ChatMessage

__all__ = [
    "ResourceSubscriptions",
    "argument_choices",
    "prompt_result",
    "resource_contents",
    "served_handlers",
]

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
    if isinstance(item, (str, Image, File)):  # an image or a file is a user message of its own
        role, content = "user", content_block(item)
    elif isinstance(item, ChatMessage) and item.role in ("user", "assistant"):
        role, content = item.role, types.TextContent(type="text", text=item.content)
    elif isinstance(item, ChatMessage):
        raise ValueError(f"MCP prompts hold user and assistant messages, not {item.role!r} ones")
    else:
        raise ValueError(
            f"a prompt returns text, images, files or ChatMessages, not {type(item).__name__}"
        )
    return types.PromptMessage.model_validate({"role": role, "content": content})


def prompt_result(prompt: ServedPrompt, value: Any) -> Any:
    """What a prompt function returned, as a ``GetPromptResult`` (``ValueError`` when it holds
    something other than texts, images, files and user or assistant messages)."""
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


class ResourceSubscriptions:
    """Which client connections subscribed to which resource URIs (``resources/subscribe``),
    for the whole server; :meth:`notify` tells them a resource changed."""

    def __init__(self) -> None:
        # uri -> {connection: a session of it, to send with}; connections are the SDK's own
        self._by_uri: dict[str, weakref.WeakKeyDictionary[Any, Any]] = {}

    @staticmethod
    def _connection(session: Any) -> Any:
        return getattr(session, "_connection", session)  # private in the SDK: the session then

    def subscribe(self, uri: str, session: Any) -> None:
        listeners = self._by_uri.setdefault(uri, weakref.WeakKeyDictionary())
        listeners[self._connection(session)] = session

    def unsubscribe(self, uri: str, session: Any) -> None:
        self._by_uri.get(uri, {}).pop(self._connection(session), None)

    async def notify(self, uri: str) -> int:
        """Send ``notifications/resources/updated`` to every subscriber of ``uri``; how many got
        it (a connection that is gone is dropped)."""
        listeners = self._by_uri.get(uri)
        sent = 0
        for connection, session in list((listeners or {}).items()):
            try:
                await session.send_resource_updated(uri)
            except Exception:  # the client left: nothing to tell it any more
                listeners.pop(connection, None)  # type: ignore[union-attr]
                continue
            sent += 1
        return sent


def _resource_handlers(
    resources: Sequence[ServedResource], subscriptions: ResourceSubscriptions
) -> dict[str, Any]:
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

    async def on_subscribe(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        if find(uri) is None:
            raise mcp_sdk.SDKError(types.INVALID_PARAMS, f"Unknown resource: {uri}")
        subscriptions.subscribe(uri, ctx.session)
        return types.EmptyResult()

    async def on_unsubscribe(ctx: Any, params: Any) -> Any:
        subscriptions.unsubscribe(str(params.uri), ctx.session)
        return types.EmptyResult()

    return {
        "on_list_resources": on_list_resources,
        "on_list_resource_templates": on_list_resource_templates,
        "on_read_resource": on_read_resource,
        "on_subscribe_resource": on_subscribe,
        "on_unsubscribe_resource": on_unsubscribe,
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


def argument_choices(function: Callable[..., Any], name: str) -> tuple[str, ...]:
    """The values a prompt argument or template variable may take, from its annotation: a
    ``Literal`` or an ``Enum`` (also inside ``Optional``); ``()`` when it does not say."""
    import enum
    import typing

    try:
        annotation = typing.get_type_hints(function).get(name)
    except (NameError, TypeError):  # an annotation that cannot be resolved: no choices
        return ()
    pending: list[Any] = [annotation]
    found: list[str] = []
    while pending:
        current = pending.pop(0)
        if typing.get_origin(current) is typing.Literal:
            found.extend(str(value) for value in typing.get_args(current))
        elif isinstance(current, type) and issubclass(current, enum.Enum):
            found.extend(str(member.value) for member in current)
        elif typing.get_args(current):  # Optional[...], a union
            pending.extend(typing.get_args(current))
    return tuple(dict.fromkeys(found))


def _completion_handler(
    resources: Sequence[ServedResource], prompts: Sequence[ServedPrompt]
) -> dict[str, Any]:
    by_prompt = {prompt.name: prompt.function for prompt in prompts}
    by_template = {r.uri: r.function for r in resources if r.is_template}

    async def on_completion(_ctx: Any, params: Any) -> Any:
        ref = params.ref
        if ref.type == "ref/prompt":
            function = by_prompt.get(ref.name)
        else:
            function = by_template.get(ref.uri)
        if function is None:
            what = ref.name if ref.type == "ref/prompt" else ref.uri
            raise mcp_sdk.SDKError(types.INVALID_PARAMS, f"Unknown {ref.type[4:]}: {what}")
        choices = argument_choices(function, params.argument.name)
        matching = [value for value in choices if value.startswith(params.argument.value)]
        completion = types.Completion(
            values=matching[:100], total=len(matching), has_more=len(matching) > 100
        )
        return types.CompleteResult(completion=completion)

    return {"on_completion": on_completion}


def served_handlers(
    resources: Sequence[ServedResource],
    prompts: Sequence[ServedPrompt],
    subscriptions: ResourceSubscriptions | None = None,
) -> dict[str, Any]:
    """The low-level ``Server`` keywords serving ``resources`` (with subscriptions kept in
    ``subscriptions``) and ``prompts`` (none for an empty list, so the capability is not
    declared), and completions of their arguments (the choices :func:`argument_choices`
    finds) when there are prompts or resource templates."""
    handlers: dict[str, Any] = {}
    if resources:
        handlers.update(_resource_handlers(resources, subscriptions or ResourceSubscriptions()))
    if prompts:
        handlers.update(_prompt_handlers(prompts))
    if prompts or any(resource.is_template for resource in resources):
        handlers.update(_completion_handler(resources, prompts))
    return handlers
