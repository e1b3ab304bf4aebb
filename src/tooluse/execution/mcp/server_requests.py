"""What MCP servers may ask of a tooluse client, and how the client answers: :class:`MCPHandlers`.

A server may, in the middle of a tool call (or a prompt or resource read):

- ask the client's model for a completion (**sampling**): answered by :class:`MCPSampling`,
  any tooluse backend behind a policy that allows or refuses each :class:`SamplingRequest`;
- ask the user for input (**elicitation**): answered by an :data:`ElicitationHandler` given an
  :class:`ElicitationRequest`, returning an :class:`ElicitationResponse`;
- ask for the client's **roots** (the folders it may work in): a list of :class:`MCPRoot`;
- report **progress** of a call: each report is an :class:`MCPProgress` given to ``on_progress``.

Nothing set means nothing offered: the client does not declare the capability and the server
gets a clear MCP error (or, for elicitation, may fall back to its own default). No ``mcp``
import here; :mod:`~tooluse.execution.mcp.server_answers` turns these into SDK callbacks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union

from tooluse.messages import ChatMessage

if TYPE_CHECKING:
    from tooluse.providers.base import Backend

__all__ = [
    "ElicitationHandler",
    "ElicitationRequest",
    "ElicitationResponse",
    "MCPHandlers",
    "MCPProgress",
    "MCPRoot",
    "MCPSampling",
    "ProgressHandler",
    "SamplingPolicy",
    "SamplingRequest",
]


@dataclass(frozen=True, kw_only=True)
class MCPRoot:
    """A folder the client offers to servers (``file://`` URI), with an optional display name."""

    uri: str
    name: str | None = None

    def __post_init__(self) -> None:
        if not self.uri.startswith("file://"):
            raise ValueError(f"an MCP root must be a file:// URI, got {self.uri!r}")

    @classmethod
    def from_path(cls, path: str | Path, name: str | None = None) -> MCPRoot:
        """The root for a local folder (made absolute); named after the folder by default."""
        resolved = Path(path).expanduser().resolve()
        return cls(uri=resolved.as_uri(), name=name if name is not None else resolved.name)


@dataclass(frozen=True, kw_only=True)
class SamplingRequest:
    """A server's request for a model completion, as tooluse messages.

    ``messages`` start with the server's system prompt (when it gave one); ``model_hints`` are
    the model names the server would prefer, in order (advisory); ``include_context`` is what
    the server asked to add to the prompt (``"none"``, ``"thisServer"``, ``"allServers"``;
    tooluse adds nothing).
    """

    server: str
    messages: tuple[ChatMessage, ...]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_hints: tuple[str, ...] = ()
    include_context: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


SamplingPolicy = Callable[[SamplingRequest], Union[bool, Awaitable[bool]]]
"""``allow(request)`` -> ``True`` to answer the request with the model, ``False`` to refuse it
(possibly awaitable; a blocking one runs in a worker thread)."""


@dataclass(frozen=True, kw_only=True)
class MCPSampling:
    """Answer servers' sampling requests with ``backend``, when ``allow`` says so.

    ``allow`` is required: a server spending the client's model is the client's decision
    (``allow=lambda request: True`` trusts every server). ``max_tokens`` caps what a server
    may ask for per request; ``temperature`` is used when the server sets none.
    """

    backend: Backend
    allow: SamplingPolicy
    max_tokens: int = 1024
    temperature: float | None = None

    def __post_init__(self) -> None:
        if not callable(self.allow):
            raise TypeError("MCPSampling.allow must be a callable taking a SamplingRequest")
        if self.max_tokens < 1:
            raise ValueError("MCPSampling.max_tokens must be at least 1")


@dataclass(frozen=True, kw_only=True)
class ElicitationRequest:
    """A server's request for input from the user.

    ``mode="form"``: ``schema`` is a flat JSON object schema (strings, numbers, integers,
    booleans, enums) the answer's ``content`` must match. ``mode="url"``: the user is asked to
    open ``url`` (to sign in, say) outside the client; accepting means they agreed to go there.
    """

    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    schema: Mapping[str, Any] = field(default_factory=dict)
    url: str | None = None
    elicitation_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ElicitationResponse:
    """The user's answer: ``accept`` (with ``content`` in form mode; a field it leaves out gets
    the schema's ``default``, when there is one), ``decline`` or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.action not in ("accept", "decline", "cancel"):
            raise ValueError(f"action must be accept, decline or cancel, got {self.action!r}")
        if self.action != "accept" and self.content is not None:
            raise ValueError("only an accepted elicitation carries content")

    @classmethod
    def accept(cls, content: Mapping[str, Any] | None = None) -> ElicitationResponse:
        """The user answered (``content``: the form's values)."""
        return cls(action="accept", content=dict(content) if content is not None else None)

    @classmethod
    def decline(cls) -> ElicitationResponse:
        """The user said no."""
        return cls(action="decline")

    @classmethod
    def cancel(cls) -> ElicitationResponse:
        """The user dismissed the question without choosing."""
        return cls(action="cancel")


ElicitationHandler = Callable[
    [ElicitationRequest], Union[ElicitationResponse, Awaitable[ElicitationResponse]]
]
"""``handler(request)`` -> the user's :class:`ElicitationResponse` (possibly awaitable; a
blocking one, such as a terminal prompt, runs in a worker thread)."""


@dataclass(frozen=True, kw_only=True)
class MCPProgress:
    """One progress report of a running MCP call (``total`` when the server knows it)."""

    server: str
    tool_name: str
    call_id: str
    progress: float
    total: float | None = None
    message: str | None = None

    @property
    def fraction(self) -> float | None:
        """``progress / total`` when the total is known (and positive)."""
        if self.total is None or self.total <= 0:
            return None
        return self.progress / self.total


ProgressHandler = Callable[[MCPProgress], Union[None, Awaitable[None]]]
"""``on_progress(report)``; called on the event loop of the connection, so keep it quick."""


@dataclass(frozen=True, kw_only=True)
class MCPHandlers:
    """What a tooluse MCP client answers when a server asks (see the module docs).

    ``roots`` is a sequence of :class:`MCPRoot` (or of paths), or a callable returning one
    each time a server asks (the current folders).
    """

    sampling: MCPSampling | None = None
    elicitation: ElicitationHandler | None = None
    roots: Sequence[MCPRoot | str | Path] | Callable[[], Sequence[MCPRoot | str | Path]] | None = (
        None
    )
    on_progress: ProgressHandler | None = None

    def __post_init__(self) -> None:
        if self.elicitation is not None and not callable(self.elicitation):
            raise TypeError("MCPHandlers.elicitation must be a callable")
        if self.on_progress is not None and not callable(self.on_progress):
            raise TypeError("MCPHandlers.on_progress must be a callable")
        if self.roots is not None and not callable(self.roots):
            if isinstance(self.roots, (str, Path)):
                raise TypeError("MCPHandlers.roots is a sequence of roots, not one path")
            object.__setattr__(self, "roots", tuple(as_root(root) for root in self.roots))

    def current_roots(self) -> tuple[MCPRoot, ...]:
        """The roots to offer now (``()`` when none are set)."""
        roots = self.roots
        if roots is None:
            return ()
        listed = roots() if callable(roots) else roots
        return tuple(as_root(root) for root in listed)


def as_root(root: MCPRoot | str | Path) -> MCPRoot:
    """A root from an :class:`MCPRoot`, a ``file://`` URI or a local path."""
    if isinstance(root, MCPRoot):
        return root
    if isinstance(root, str) and root.startswith("file://"):
        return MCPRoot(uri=root)
    if isinstance(root, (str, Path)):
        return MCPRoot.from_path(root)
    raise TypeError(
        f"an MCP root is an MCPRoot, a file:// URI or a path, not {type(root).__name__}"
    )
