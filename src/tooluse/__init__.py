"""tooluse: LLM tool calling end to end, for hosted APIs and small local models.

``__all__`` is the define -> loop path: tools and their definitions, messages, errors, the
backends' common types and :func:`load_model`, the loop (:func:`run`, :func:`arun`,
:func:`iter_run`), structured extraction, stream events and the executors. Everything else
lives in its subpackage (``tooluse.envs``, ``tooluse.execution.mcp``, ``tooluse.formats``,
``tooluse.providers``, ...); the names this package exported before stay importable from here,
loaded on first use, and the modules that moved into ``tooluse.loop`` and ``tooluse.retrieval``
stay importable by their old paths (with a ``DeprecationWarning``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from typing import TYPE_CHECKING, Any

from tooluse.errors import (
    BackendError,
    BackendHTTPError,
    BackendTimeoutError,
    ChatTemplateError,
    ContextLengthError,
    ExtractionError,
    GrammarError,
    HistoryError,
    IncompleteStreamError,
    MCPError,
    MissingDependencyError,
    SchemaExportError,
    StreamTimeoutError,
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
from tooluse.execution import (
    AbstractToolExecutor,
    AsyncToolExecutor,
    CancellationToken,
    SimpleToolExecutor,
    ToolExecutor,
    Veto,
)
from tooluse.loop import RunOptions, RunResult, StopReason, arun, iter_run, run
from tooluse.loop.resume import aresume, resume
from tooluse.loop.run_state import Approve, Deny, Edit, RunState, RunStateError
from tooluse.loop.structured import aextract, extract
from tooluse.media import File, Image, MediaError
from tooluse.messages import (
    ChatMessage,
    ProviderState,
    ReasoningPart,
    TextPart,
    ToolCall,
    ToolResult,
    Usage,
)
from tooluse.providers import (
    Backend,
    BaseBackend,
    GenerationDone,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    ScriptedBackend,
    load_model,
)
from tooluse.tools import (
    DEFAULT_REGISTRY,
    Injected,
    Tool,
    ToolContext,
    ToolDefinition,
    ToolManager,
    ToolParameter,
    ToolParameterType,
    ToolRegistry,
    as_tool,
    tool,
)
from tooluse.version import __version__

if TYPE_CHECKING:  # the names loaded on first use, for type checkers (`X as X`: re-exported)
    from tooluse.envs import TrajectoryRunner as TrajectoryRunner
    from tooluse.execution.mcp import MCPServerConfig as MCPServerConfig
    from tooluse.execution.mcp import MCPToolExecutor as MCPToolExecutor
    from tooluse.execution.mcp import MCPToolServer as MCPToolServer
    from tooluse.execution.mcp import MCPToolset as MCPToolset
    from tooluse.execution.mcp import SyncMCPToolExecutor as SyncMCPToolExecutor
    from tooluse.formats import HermesToolCallParser as HermesToolCallParser
    from tooluse.formats import ParsedToolResponse as ParsedToolResponse
    from tooluse.formats import ToolCallParser as ToolCallParser
    from tooluse.formats import detect_format as detect_format
    from tooluse.formats import get_parser as get_parser
    from tooluse.formats import render_chat_template as render_chat_template
    from tooluse.loop.conversation import Conversation as Conversation
    from tooluse.loop.conversation import Participant as Participant
    from tooluse.loop.telemetry import instrument as instrument
    from tooluse.providers import AnthropicBackend as AnthropicBackend
    from tooluse.providers import BedrockBackend as BedrockBackend
    from tooluse.providers import FallbackBackend as FallbackBackend
    from tooluse.providers import GeminiBackend as GeminiBackend
    from tooluse.providers import OpenAIBackend as OpenAIBackend
    from tooluse.providers import register_model_prefix as register_model_prefix
    from tooluse.providers import validate_history as validate_history
    from tooluse.retrieval.tool_search import ToolSearch as ToolSearch

__all__ = [
    "DEFAULT_REGISTRY",
    "AbstractToolExecutor",
    "Approve",
    "ArgumentsDelta",
    "AsyncToolExecutor",
    "Backend",
    "BackendError",
    "BackendHTTPError",
    "BackendTimeoutError",
    "BaseBackend",
    "CancellationToken",
    "ChatMessage",
    "ChatTemplateError",
    "ContextLengthError",
    "Deny",
    "Edit",
    "ExtractionError",
    "File",
    "GenerationDone",
    "GenerationResult",
    "GrammarError",
    "HistoryError",
    "Image",
    "IncompleteStreamError",
    "Injected",
    "MCPError",
    "MediaError",
    "MissingDependencyError",
    "ModelCapabilities",
    "ParseError",
    "ProviderState",
    "ReasoningDelta",
    "ReasoningPart",
    "RunOptions",
    "RunResult",
    "RunState",
    "RunStateError",
    "SamplingParams",
    "SchemaExportError",
    "ScriptedBackend",
    "SimpleToolExecutor",
    "StopReason",
    "StreamTimeoutError",
    "TextDelta",
    "TextPart",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolContext",
    "ToolDefinition",
    "ToolDefinitionError",
    "ToolExecutionError",
    "ToolExecutor",
    "ToolManager",
    "ToolNotFoundError",
    "ToolParameter",
    "ToolParameterType",
    "ToolParseError",
    "ToolRegistry",
    "ToolResult",
    "ToolUseError",
    "Usage",
    "Veto",
    "aextract",
    "aresume",
    "arun",
    "as_tool",
    "extract",
    "instrument",
    "iter_run",
    "load_model",
    "resume",
    "run",
    "tool",
    "__version__",
]

# Names exported here before that belong to a subpackage: imported on first use (so that
# `import tooluse` does not load environments, MCP or the text formats), name -> module.
_MOVED: dict[str, str] = {
    "Conversation": "tooluse.loop.conversation",
    "Participant": "tooluse.loop.conversation",
    "TrajectoryRunner": "tooluse.envs",
    "MCPServerConfig": "tooluse.execution.mcp",
    "MCPToolExecutor": "tooluse.execution.mcp",
    "MCPToolset": "tooluse.execution.mcp",
    "MCPToolServer": "tooluse.execution.mcp",
    "SyncMCPToolExecutor": "tooluse.execution.mcp",
    "HermesToolCallParser": "tooluse.formats",
    "ParsedToolResponse": "tooluse.formats",
    "ToolCallParser": "tooluse.formats",
    "detect_format": "tooluse.formats",
    "get_parser": "tooluse.formats",
    "render_chat_template": "tooluse.formats",
    "AnthropicBackend": "tooluse.providers",
    "BedrockBackend": "tooluse.providers",
    "FallbackBackend": "tooluse.providers",
    "GeminiBackend": "tooluse.providers",
    "OpenAIBackend": "tooluse.providers",
    "register_model_prefix": "tooluse.providers",
    "validate_history": "tooluse.providers",
    "instrument": "tooluse.loop.telemetry",
    "ToolSearch": "tooluse.retrieval.tool_search",
}


def __getattr__(name: str) -> Any:
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'tooluse' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_MOVED})


# Modules that moved into packages, old path -> new path. The old path imports the very module
# at the new one (one module object, so patching it under either name patches both).
_MOVED_MODULES: dict[str, str] = {
    "tooluse.conversation": "tooluse.loop.conversation",
    "tooluse.embedding_scorer": "tooluse.retrieval.embedding",
    "tooluse.loop_core": "tooluse.loop.core",
    "tooluse.loop_resume": "tooluse.loop.resume",
    "tooluse.loop_setup": "tooluse.loop.setup",
    "tooluse.loop_types": "tooluse.loop.types",
    "tooluse.message_data": "tooluse.loop.message_data",
    "tooluse.run_log": "tooluse.loop.run_log",
    "tooluse.run_state": "tooluse.loop.run_state",
    "tooluse.structured": "tooluse.loop.structured",
    "tooluse.telemetry": "tooluse.loop.telemetry",
    "tooluse.tool_search": "tooluse.retrieval.tool_search",
}
_OWN_SPECS: dict[str, importlib.machinery.ModuleSpec | None] = {}  # old path -> new one's spec


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a moved module by its old path and hands over the module at its new path."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = _MOVED_MODULES[spec.name]
        warnings.warn(f"{spec.name} moved to {new}", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        _OWN_SPECS[spec.name] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # The module ran under its new path; importlib has just given it the old path's spec:
        # it gets its own back (reloading it and reading its file keep working).
        old = module.__spec__.name if module.__spec__ is not None else ""
        module.__spec__ = _OWN_SPECS.pop(old, module.__spec__)


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())
