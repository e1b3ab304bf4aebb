"""One exception tree for tooluse.

::

    ToolUseError
     ├── ToolDefinitionError        a tool cannot be described (bad name, *args, recursive model...)
     │    └── SchemaExportError      a schema cannot be expressed in a provider's dialect
     ├── ToolArgumentError          the model's arguments fail validation (``model_message`` is for the model)
     ├── ToolNotFoundError          a call names a tool that is not registered
     ├── ToolExecutionError         a tool raised or timed out (``model_message`` is for the model)
     ├── ToolParseError             model text could not be read as tool calls
     ├── ChatTemplateError          a model's chat template failed to compile or render
     ├── ExtractionError            structured extraction got no valid record within its retries
     ├── HistoryError               a conversation a provider would reject (unanswered call ids...)
     ├── BackendError               a model backend failed
     │    ├── BackendHTTPError       non-success HTTP status (``status_code``, ``body``)
     │    ├── BackendTimeoutError    the request timed out
     │    ├── ContextLengthError     the prompt does not fit the model's context
     │    └── IncompleteStreamError  a stream ended before its terminal event (``partial`` turn)
     ├── GrammarError               a schema the grammar compiler cannot express
     ├── MCPError                   an MCP server failed to start, crashed or answered badly
     └── MissingDependencyError     an optional extra is not installed (also an ImportError)

Errors never log or print on construction; they only carry data.
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "BackendHTTPError",
    "BackendTimeoutError",
    "ChatTemplateError",
    "ContextLengthError",
    "ExtractionError",
    "GrammarError",
    "HistoryError",
    "IncompleteStreamError",
    "StreamTimeoutError",
    "MCPError",
    "MissingDependencyError",
    "SchemaExportError",
    "ToolArgumentError",
    "ToolDefinitionError",
    "ToolExecutionError",
    "ToolNotFoundError",
    "ToolParseError",
    "ToolUseError",
]


class ToolUseError(Exception):
    """Root of every error raised by tooluse."""


class ToolDefinitionError(ToolUseError):
    """A tool cannot be described correctly; raised at definition time."""


class SchemaExportError(ToolDefinitionError):
    """A tool schema cannot be expressed in a provider's schema dialect."""


class ToolArgumentError(ToolUseError):
    """Arguments from a model fail validation.

    ``model_message`` is short text meant to go back to the model so it can fix the call;
    ``errors`` lists the individual problems (dicts with ``path``, ``message``).
    """

    def __init__(
        self,
        message: str,
        *,
        tool_name: str = "",
        errors: list[dict[str, object]] | None = None,
        model_message: str | None = None,
    ) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.errors = list(errors or [])
        self.model_message = model_message if model_message is not None else message


class ToolNotFoundError(ToolUseError, KeyError):
    """A call names a tool that is not registered."""

    def __init__(self, name: str, available: list[str] | tuple[str, ...] = ()) -> None:
        self.name = name
        self.available = tuple(available)
        hint = f"; available tools: {', '.join(self.available)}" if self.available else ""
        self.model_message = f"unknown tool {name!r}{hint}"
        super().__init__(self.model_message)

    def __str__(self) -> str:  # KeyError would quote the message
        return self.model_message


class ToolExecutionError(ToolUseError):
    """A tool raised, hung past its timeout, or returned something unusable."""

    def __init__(self, message: str, *, tool_name: str = "", model_message: str | None = None):
        super().__init__(message)
        self.tool_name = tool_name
        self.model_message = model_message if model_message is not None else message


class ToolParseError(ToolUseError):
    """Model output could not be read as tool calls; ``raw`` keeps the offending text."""

    def __init__(self, message: str, *, raw: str = "") -> None:
        super().__init__(message)
        self.raw = raw


class ChatTemplateError(ToolUseError):
    """A chat template failed to compile, or refused the conversation (``raise_exception``)."""


class ExtractionError(ToolUseError):
    """The model gave no valid record within the allowed attempts.

    ``attempts`` counts the model's tries, ``last_error`` is the last problem sent back to it
    (empty when it never called the record tool) and ``result`` is the run (its messages show
    every try).
    """

    def __init__(
        self, message: str, *, attempts: int = 0, last_error: str = "", result: object = None
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_error = last_error
        self.result = result


class HistoryError(ToolUseError):
    """A message history that a provider would reject; ``call_ids`` names the offenders."""

    def __init__(self, message: str, *, call_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.call_ids = tuple(call_ids)


class BackendError(ToolUseError):
    """A model backend failed."""


class BackendHTTPError(BackendError):
    """A backend answered with a non-success HTTP status."""

    def __init__(self, message: str, *, status_code: int, body: str = "") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class BackendTimeoutError(BackendError):
    """A backend request timed out."""


class ContextLengthError(BackendError):
    """The prompt does not fit the model's context window."""


class IncompleteStreamError(BackendError):
    """A streamed answer ended before the provider's terminal event (``[DONE]``,
    ``message_stop``, ``response.completed``, a finish reason), so it may hold half-written
    tool arguments. ``partial`` is the turn as far as it came (a ``GenerationResult``, or
    ``None``), for inspection only: it is not a complete turn."""

    def __init__(self, message: str, *, partial: object = None) -> None:
        super().__init__(message)
        self.partial = partial


class StreamTimeoutError(BackendTimeoutError, IncompleteStreamError):
    """A streamed answer stalled past the read timeout: a timeout (as for a request that never
    answered) that also carries the turn as far as it came (``partial``)."""


class GrammarError(ToolUseError):
    """A JSON Schema the grammar compiler cannot express; the message names the keyword."""


class MCPError(ToolUseError):
    """An MCP server failed to start, crashed, hung or answered with something malformed."""


class MissingDependencyError(ToolUseError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{package} is not installed; install it with: pip install 'tooluse[{extra}]'"
        )

    @classmethod
    def installed_without_deps(
        cls, package: str, extra: str, pinned: str
    ) -> MissingDependencyError:
        """The error for a package that goes in with ``pip install --no-deps`` (its declared
        pins conflict with tooluse's, and the extra holds what it imports): the message names
        the one command to run, with the extra only when the extra is not installed yet."""
        error = cls(package, extra)
        step = f"pip install --no-deps '{pinned}'"
        command = step if _extra_installed(extra) else f"pip install 'tooluse[{extra}]' && {step}"
        error.msg = f"{package} is not installed; install it with: {command}"
        error.args = (error.msg,)
        return error


def _extra_installed(extra: str) -> bool:
    """Whether every requirement of tooluse's ``extra`` is installed (from the package
    metadata; ``False`` when tooluse itself is not installed as a package)."""
    import re
    from importlib import metadata

    try:
        requirements = metadata.requires("tooluse") or []
    except metadata.PackageNotFoundError:
        return False
    marker = re.compile(r"""extra\s*==\s*["']""" + re.escape(extra) + """["']""")
    names = [
        match.group(0)
        for requirement in requirements
        if ";" in requirement and marker.search(requirement.split(";", 1)[1])
        if (match := re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement))
    ]
    if not names:
        return False
    for name in names:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return False
    return True
