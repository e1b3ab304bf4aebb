"""A served tool's line to the client that called it: :func:`served_call`.

Inside a tool that :class:`~tooluse.execution.mcp.MCPToolServer` (``tooluse mcp serve``) runs
for a client, ``served_call()`` is that call's :class:`ServedCall`; anywhere else it is
``None``, so the same tool works unchanged outside MCP::

    from tooluse.execution.mcp import served_call

    @tool
    def research(topic: str) -> str:
        call = served_call()
        if call is not None:
            call.log(f"looking up {topic}")
            call.progress(1, 3)
            answer = call.elicit("Which meaning?", {"type": "object", "properties": {
                "meaning": {"type": "string", "enum": ["animal", "language"]}}})
        ...

- :meth:`ServedCall.log`: a log message (``notifications/message``), at a level the client
  asked for (``logging/setLevel``; every level until it asks);
- :meth:`ServedCall.progress`: progress of the call, when the client asked for it;
- :meth:`ServedCall.elicit`: a question to the user (``elicitation/create``), answered with an
  :class:`~tooluse.execution.mcp.ElicitationResponse`;
- :meth:`ServedCall.sample`: a completion from the client's model (``sampling/createMessage``),
  as text;
- :meth:`ServedCall.resource_updated`: a served resource changed (the clients subscribed to it
  get ``notifications/resources/updated``).

Each has an async twin (``alog``, ``aprogress``, ``aelicit``, ``asample``,
``aresource_updated``) for async tools;
the blocking ones are for tools that run in worker threads. Asking the user or the model needs
a client that offers it (:attr:`ServedCall.can_elicit`, :attr:`ServedCall.can_sample`) and a
protocol revision with requests during a call (2025-11-25 and earlier; 2026-07-28 asks
through ``input_required`` results, which tooluse's server does not offer): otherwise
:class:`~tooluse.errors.MCPError` says so. A call run as a task has no line to its client
(``served_call()`` is ``None`` there). No ``mcp`` import here: the SDK session is reached
through :mod:`~tooluse.execution.mcp.sdk`.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import warnings
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from tooluse.errors import MCPError
from tooluse.execution.mcp.server_requests import ElicitationResponse
from tooluse.messages import ChatMessage

__all__ = ["LOG_LEVELS", "ServedCall", "served_call"]

T = TypeVar("T")

#: The protocol's log levels, least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

_CURRENT: contextvars.ContextVar[ServedCall | None] = contextvars.ContextVar(
    "tooluse_served_call", default=None
)


def served_call() -> ServedCall | None:
    """The :class:`ServedCall` of the MCP call running this tool (``None`` outside one)."""
    return _CURRENT.get()


class ServedCall:
    """One served call's line to its client (see the module docs). Made by the server."""

    def __init__(
        self,
        context: Any,
        tool_name: str,
        log_level: str | None = None,
        subscriptions: Any = None,
    ) -> None:
        self._context = context
        self._subscriptions = subscriptions
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self.tool_name = tool_name
        self.log_level = log_level

    def bind(self) -> contextvars.Token[ServedCall | None]:
        """Make this the current call (the server does it around the tool's run)."""
        return _CURRENT.set(self)

    @staticmethod
    def unbind(token: contextvars.Token[ServedCall | None]) -> None:
        _CURRENT.reset(token)

    # -- what the client offers ----------------------------------------------------------------

    def _capabilities(self) -> Any:
        return getattr(self._context.session, "client_capabilities", None)

    @property
    def can_elicit(self) -> bool:
        """Whether the client answers questions to the user (and this call may ask)."""
        offered = getattr(self._capabilities(), "elicitation", None) is not None
        return offered and bool(self._context.session.can_send_request)

    @property
    def can_sample(self) -> bool:
        """Whether the client lends its model (and this call may ask)."""
        offered = getattr(self._capabilities(), "sampling", None) is not None
        return offered and bool(self._context.session.can_send_request)

    # -- async ---------------------------------------------------------------------------------

    async def alog(self, message: Any, level: str = "info", logger: str | None = None) -> None:
        """Send a log message (any JSON-able ``message``) at ``level`` (see :data:`LOG_LEVELS`),
        unless the client asked for a higher level only."""
        if level not in LOG_LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
        wanted = self.log_level
        if wanted in LOG_LEVELS and LOG_LEVELS.index(level) < LOG_LEVELS.index(wanted):
            return
        with warnings.catch_warnings():  # deprecated only for protocol 2026-07-28 clients
            warnings.simplefilter("ignore")
            await self._context.session.send_log_message(
                level, message, logger=logger or self.tool_name
            )

    async def aprogress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress (sent only when the client asked for progress of this call)."""
        await self._context.session.report_progress(progress, total, message)

    def _check_can_ask(self, what: str, offered: bool) -> None:
        if not offered:
            raise MCPError(
                f"the MCP client cannot be asked for {what} during this call (it does not "
                "offer it, or its protocol revision asks through input_required results)"
            )

    async def aelicit(self, message: str, schema: Mapping[str, Any]) -> ElicitationResponse:
        """Ask the user ``message``; ``schema`` is the flat JSON object schema of the answer."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        self._check_can_ask("an answer from the user", self.can_elicit)
        try:
            result = await self._context.session.elicit_form(
                message, dict(schema), related_request_id=self._context.request_id
            )
        except mcp_sdk.SDKError as exc:
            raise MCPError(f"the MCP client did not answer the question: {exc}") from exc
        content = dict(result.content) if result.content is not None else None
        if result.action != "accept":
            content = None
        return ElicitationResponse(action=result.action, content=content)

    async def asample(  # noqa: PLR0913 - the completion's settings, all keyword-only
        self,
        messages: str | Sequence[ChatMessage],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop: Sequence[str] = (),
    ) -> str:
        """A completion from the client's model: ``messages`` (one text is one user message;
        user and assistant messages otherwise); its text."""
        from tooluse.execution.mcp import sdk as mcp_sdk

        self._check_can_ask("a completion from its model", self.can_sample)
        types = mcp_sdk.mcp_types
        listed = [ChatMessage.user(messages)] if isinstance(messages, str) else list(messages)
        sampling = [
            types.SamplingMessage(
                role=m.role, content=types.TextContent(type="text", text=m.content)
            )
            for m in listed
            if m.role in ("user", "assistant")
        ]
        try:
            with warnings.catch_warnings():  # deprecated only for protocol 2026-07-28 clients
                warnings.simplefilter("ignore")
                result = await self._context.session.create_message(
                    sampling,
                    max_tokens=max_tokens,
                    system_prompt=system_prompt,
                    temperature=temperature,
                    stop_sequences=list(stop) or None,
                    related_request_id=self._context.request_id,
                )
        except mcp_sdk.SDKError as exc:
            raise MCPError(f"the MCP client's model did not answer: {exc}") from exc
        blocks = result.content if isinstance(result.content, list) else [result.content]
        return "\n".join(mcp_sdk.describe_content_block(block) for block in blocks)

    async def aresource_updated(self, uri: str) -> int:
        """Tell the clients subscribed to the served resource ``uri`` that it changed; how many
        were told."""
        if self._subscriptions is None:
            return 0
        return int(await self._subscriptions.notify(uri))

    # -- blocking (tools in worker threads) ----------------------------------------------------

    def _wait(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if threading.get_ident() == self._thread:
            coroutine.close()
            raise RuntimeError(
                "ServedCall's blocking methods are for tools run in worker threads; "
                "an async tool awaits alog, aprogress, aelicit or asample"
            )
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def log(self, message: Any, level: str = "info", logger: str | None = None) -> None:
        """:meth:`alog`, blocking."""
        self._wait(self.alog(message, level, logger))

    def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """:meth:`aprogress`, blocking."""
        self._wait(self.aprogress(progress, total, message))

    def elicit(self, message: str, schema: Mapping[str, Any]) -> ElicitationResponse:
        """:meth:`aelicit`, blocking."""
        return self._wait(self.aelicit(message, schema))

    def sample(  # noqa: PLR0913 - as asample
        self,
        messages: str | Sequence[ChatMessage],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop: Sequence[str] = (),
    ) -> str:
        """:meth:`asample`, blocking."""
        return self._wait(
            self.asample(
                messages,
                max_tokens=max_tokens,
                system_prompt=system_prompt,
                temperature=temperature,
                stop=stop,
            )
        )

    def resource_updated(self, uri: str) -> int:
        """:meth:`aresource_updated`, blocking."""
        return self._wait(self.aresource_updated(uri))
