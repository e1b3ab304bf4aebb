"""The public surface: ``__all__`` is the define -> loop path, every listed name exists, and the
names the package exported before stay importable from it (loaded on first use)."""

import importlib
import subprocess
import sys
import types

import tooluse

# Everything `tooluse` exported in 0.1.0 (README, docs, examples and users import these).
EXPORTED_IN_0_1 = """
AnthropicBackend ArgumentsDelta AsyncToolExecutor BackendError BackendHTTPError
BackendTimeoutError BedrockBackend CancellationToken ChatMessage ChatTemplateError
ContextLengthError Conversation DEFAULT_REGISTRY ExtractionError GeminiBackend GenerationDone
GenerationResult GrammarError HermesToolCallParser HistoryError IncompleteStreamError Injected
MCPError MCPServerConfig MCPToolExecutor MCPToolServer MCPToolset MissingDependencyError
ModelCapabilities OpenAIBackend ParseError ParsedToolResponse Participant ProviderState
ReasoningDelta ReasoningPart RunOptions RunResult SamplingParams SchemaExportError
ScriptedBackend SimpleToolExecutor StopReason SyncMCPToolExecutor TextDelta TextPart Tool
ToolArgumentError ToolCall ToolCallFinished ToolCallParser ToolCallStarted ToolContext
ToolDefinition ToolDefinitionError ToolExecutionError ToolManager ToolNotFoundError
ToolParameter ToolParameterType ToolParseError ToolRegistry ToolResult ToolUseError
TrajectoryRunner Usage Veto aextract arun as_tool detect_format extract get_parser load_model
register_model_prefix render_chat_template run tool validate_history __version__
""".split()


def test_every_name_in_all_resolves():
    for name in tooluse.__all__:
        assert getattr(tooluse, name) is not None, name


def test_all_is_sorted_and_unique():
    assert len(tooluse.__all__) == len(set(tooluse.__all__))
    names = [n for n in tooluse.__all__ if n != "__version__"]
    assert names == sorted(names, key=lambda n: (not n.isupper(), n))


def test_all_is_the_define_to_loop_path():
    public = set(tooluse.__all__)
    for name in ("tool", "ToolDefinition", "ChatMessage", "ToolUseError", "load_model", "run"):
        assert name in public
    for name in ("arun", "iter_run", "extract", "ToolCallFinished", "SimpleToolExecutor"):
        assert name in public
    # environments, MCP and the text formats live in their subpackages
    for name in ("TrajectoryRunner", "MCPToolset", "MCPToolServer", "get_parser", "Conversation"):
        assert name not in public


def test_names_exported_before_still_import_from_tooluse():
    for name in EXPORTED_IN_0_1:
        assert getattr(tooluse, name) is not None, name
    namespace: dict[str, object] = {}
    exec(f"from tooluse import {', '.join(EXPORTED_IN_0_1)}", namespace)
    assert set(EXPORTED_IN_0_1) <= set(namespace)


def test_a_moved_name_is_the_subpackage_object():
    from tooluse.envs import TrajectoryRunner
    from tooluse.execution.mcp import MCPToolset
    from tooluse.formats import get_parser

    assert tooluse.TrajectoryRunner is TrajectoryRunner
    assert tooluse.MCPToolset is MCPToolset
    assert tooluse.get_parser is get_parser
    assert "get_parser" in dir(tooluse)


def test_an_unknown_name_is_an_attribute_error():
    try:
        tooluse.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_every_public_module_attribute_is_listed_or_moved():
    public = {
        name
        for name, value in vars(tooluse).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name not in ("annotations", "importlib", "TYPE_CHECKING", "Any")
    }
    assert public <= set(tooluse.__all__) | set(EXPORTED_IN_0_1)


def test_import_tooluse_loads_no_environment_mcp_or_format_module():
    code = (
        "import sys, tooluse\n"
        "print(sorted(m for m in sys.modules if m.startswith(('tooluse.envs', "
        "'tooluse.execution.mcp', 'tooluse.conversation', 'tooluse.integrations'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_subpackage_all_resolves():
    for mod in [
        "tooluse.errors",
        "tooluse.messages",
        "tooluse.events",
        "tooluse.tools",
        "tooluse.providers",
    ]:
        m = importlib.import_module(mod)
        for name in m.__all__:
            assert hasattr(m, name), f"{mod}.{name}"
