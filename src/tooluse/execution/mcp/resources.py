"""MCP beyond tools: a server's resources (listed, read as text, image or file parts) and its
prompts (listed, got as :class:`ChatMessage` lists ready for ``tooluse.run``).

:class:`MCPResources` is a mixin of :class:`~tooluse.execution.mcp.MCPToolExecutor`; the
conversions from the SDK's types are pure functions below it.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tooluse.errors import MCPError
from tooluse.media import File, Image, MediaError, MediaPart
from tooluse.messages import ChatMessage

__all__ = [
    "MCPPrompt",
    "MCPResource",
    "MCPResourceTemplate",
    "MCPResources",
    "prompt_messages",
    "resource_parts",
]


@dataclass(frozen=True, kw_only=True)
class MCPResource:
    """One resource a server lists."""

    uri: str
    name: str
    description: str = ""
    mime_type: str | None = None


@dataclass(frozen=True, kw_only=True)
class MCPResourceTemplate:
    """A family of resources a server lists as a URI template (``notes://day/{day}``)."""

    uri_template: str
    name: str
    description: str = ""
    mime_type: str | None = None


@dataclass(frozen=True, kw_only=True)
class MCPPrompt:
    """One prompt a server lists, with its argument names (``required`` among them)."""

    name: str
    description: str = ""
    arguments: tuple[str, ...] = ()
    required: tuple[str, ...] = ()


def resource_parts(result: Any) -> tuple[MediaPart, ...]:
    """A ``ReadResourceResult``'s contents: texts as strings, images and documents as parts,
    other binary contents described."""
    parts: list[MediaPart] = []
    for content in result.contents:
        text = getattr(content, "text", None)
        if text is not None:
            parts.append(str(text))
            continue
        media_type = getattr(content, "mime_type", None) or "application/octet-stream"
        data = base64.b64decode(getattr(content, "blob", "") or "")
        try:
            if media_type.startswith("image/"):
                parts.append(Image(data=data, media_type=media_type))
            else:
                name = str(content.uri).rsplit("/", 1)[-1] or "resource"
                parts.append(File(data=data, media_type=media_type, name=name))
        except MediaError:
            parts.append(f"[resource: {content.uri}, {media_type}, {len(data)} bytes]")
    return tuple(parts)


def prompt_messages(result: Any) -> list[ChatMessage]:
    """A ``GetPromptResult`` as chat messages (text content; other content described)."""
    out: list[ChatMessage] = []
    for message in result.messages:
        content = message.content
        text = getattr(content, "text", None)
        if text is None:
            text = f"[{getattr(content, 'type', 'unknown')} content]"
        out.append(
            ChatMessage(
                role="assistant" if message.role == "assistant" else "user", content=str(text)
            )
        )
    return out


class MCPResources:
    """Resources and prompts of the server behind ``_ensure_connection``."""

    config: Any

    async def _ensure_connection(self) -> Any: ...  # provided by MCPToolExecutor

    async def _ask(self, what: str, request: Any) -> Any:
        from tooluse.execution.mcp import sdk as mcp_sdk

        try:
            return await asyncio.wait_for(request, timeout=self.config.timeout)
        except asyncio.TimeoutError as exc:
            raise MCPError(
                f"MCP server {self.config.label!r} did not {what} within {self.config.timeout:g}s"
            ) from exc
        except mcp_sdk.SDKError as exc:
            raise MCPError(f"MCP server {self.config.label!r} could not {what}: {exc}") from exc

    async def list_resources(self) -> tuple[MCPResource, ...]:
        """The server's resources (every page)."""
        client = (await self._ensure_connection()).client
        found: list[MCPResource] = []
        cursor: str | None = None
        for _ in range(1000):  # a server that pages forever must not hang us
            page = await self._ask("list its resources", client.list_resources(cursor=cursor))
            found.extend(
                MCPResource(
                    uri=str(r.uri),
                    name=r.name,
                    description=r.description or "",
                    mime_type=r.mime_type,
                )
                for r in page.resources
            )
            cursor = page.next_cursor
            if not cursor:
                break
        return tuple(found)

    async def list_resource_templates(self) -> tuple[MCPResourceTemplate, ...]:
        """The server's resource templates (every page); read one with a filled-in URI."""
        client = (await self._ensure_connection()).client
        found: list[MCPResourceTemplate] = []
        cursor: str | None = None
        for _ in range(1000):  # a server that pages forever must not hang us
            request = client.list_resource_templates(cursor=cursor)
            page = await self._ask("list its resource templates", request)
            found.extend(
                MCPResourceTemplate(
                    uri_template=t.uri_template,
                    name=t.name,
                    description=t.description or "",
                    mime_type=t.mime_type,
                )
                for t in page.resource_templates
            )
            cursor = page.next_cursor
            if not cursor:
                break
        return tuple(found)

    async def read_resource(self, uri: str) -> tuple[MediaPart, ...]:
        """A resource's contents: texts, images and files."""
        client = (await self._ensure_connection()).client
        return resource_parts(await self._ask(f"read {uri}", client.read_resource(uri)))

    async def list_prompts(self) -> tuple[MCPPrompt, ...]:
        """The server's prompts."""
        client = (await self._ensure_connection()).client
        listed = await self._ask("list its prompts", client.list_prompts())
        return tuple(
            MCPPrompt(
                name=p.name,
                description=p.description or "",
                arguments=tuple(a.name for a in p.arguments or ()),
                required=tuple(a.name for a in p.arguments or () if a.required),
            )
            for p in listed.prompts
        )

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> list[ChatMessage]:
        """A prompt filled with ``arguments``, as messages to start a run with."""
        client = (await self._ensure_connection()).client
        request = client.get_prompt(name, dict(arguments or {}))
        return prompt_messages(await self._ask(f"get the prompt {name!r}", request))
