"""tooluse: LLM tool calling end to end, for hosted APIs and small local models.

The public API is exactly ``__all__``; everything else is internal.
"""

from __future__ import annotations

from tooluse.errors import (
    BackendError,
    BackendHTTPError,
    BackendTimeoutError,
    ContextLengthError,
    GrammarError,
    HistoryError,
    MCPError,
    MissingDependencyError,
    SchemaExportError,
    ToolArgumentError,
    ToolDefinitionError,
    ToolExecutionError,
    ToolNotFoundError,
    ToolParseError,
    ToolUseError,
)
from tooluse.events import (
    ArgumentsDelta,
    ParseError,
    ReasoningDelta,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from tooluse.messages import ChatMessage, ToolCall, ToolResult, Usage
from tooluse.providers import (
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    ScriptedBackend,
)
from tooluse.tools import ToolDefinition, ToolParameter, ToolParameterType

__version__ = "0.1.0"

__all__ = [
    "ArgumentsDelta",
    "BackendError",
    "BackendHTTPError",
    "BackendTimeoutError",
    "ChatMessage",
    "ContextLengthError",
    "GenerationResult",
    "GrammarError",
    "HistoryError",
    "MCPError",
    "MissingDependencyError",
    "ModelCapabilities",
    "ParseError",
    "ReasoningDelta",
    "SamplingParams",
    "SchemaExportError",
    "ScriptedBackend",
    "TextDelta",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolDefinition",
    "ToolDefinitionError",
    "ToolExecutionError",
    "ToolNotFoundError",
    "ToolParameter",
    "ToolParameterType",
    "ToolParseError",
    "ToolResult",
    "ToolUseError",
    "Usage",
    "__version__",
]
