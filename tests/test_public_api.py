"""The public surface: ``__all__`` is the define -> loop path, every listed name exists, and the
names the package exported before stay importable from it (loaded on first use)."""

import ast
import importlib
import json
import subprocess
import sys
import types
from pathlib import Path

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
        "'tooluse.execution.mcp', 'tooluse.loop.conversation', 'tooluse.integrations'))))"
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
        "tooluse.loop",
        "tooluse.retrieval",
    ]:
        m = importlib.import_module(mod)
        for name in m.__all__:
            assert hasattr(m, name), f"{mod}.{name}"


# Module paths of 0.1.0 that moved into the loop/ and retrieval/ packages, old -> new.
MOVED_MODULES = {
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


def test_tooluse_loop_offers_what_the_loop_module_offered():
    # the names `from tooluse.loop import ...` gave before the loop became a package
    from tooluse.loop import (  # noqa: F401
        ApprovalRequested,
        ModelTurnFinished,
        Prompt,
        ResultCollector,
        RunFinished,
        RunOptions,
        ToolExecutionFinished,
        ToolExecutionStarted,
        aiter_run,
        build_setup,
        drive_async,
        drive_sync,
        initial_history,
        iter_run,
    )

    assert tooluse.loop.iter_run is tooluse.iter_run
    assert tooluse.loop.run is tooluse.run
    from tooluse.retrieval import BM25Scorer, select_tools  # noqa: F401


def test_a_moved_module_imports_by_its_old_path_as_the_same_module():
    """Each old path gives the module at its new path, with a DeprecationWarning naming it."""
    code = (
        "import importlib, json, sys, warnings\n"
        f"moved = {MOVED_MODULES!r}\n"
        "out = {}\n"
        "for old, new in moved.items():\n"
        "    with warnings.catch_warnings(record=True) as seen:\n"
        "        warnings.simplefilter('always')\n"
        "        module = importlib.import_module(old)\n"
        "    out[old] = [module is importlib.import_module(new), module.__name__,\n"
        "                module.__spec__.name, [str(w.message) for w in seen\n"
        "                if w.category is DeprecationWarning]]\n"
        "from tooluse.run_log import RunLog\n"
        "from tooluse.loop.run_log import RunLog as New\n"
        "print(json.dumps([out, RunLog is New]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    found, same_class = json.loads(done.stdout)
    assert same_class
    for old, new in MOVED_MODULES.items():
        assert found[old] == [True, new, new, [f"{old} moved to {new}"]], old


def test_the_old_paths_are_for_users_only():
    """tooluse's own code, tests, examples and benchmarks import the moved modules by their new
    paths (the import-graph test sees only real module paths)."""
    root = Path(__file__).resolve().parent.parent
    old_paths = set(MOVED_MODULES)
    stale = []
    for folder in ("src", "tests", "examples", "benchmarks"):
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                stale += [f"{path.relative_to(root)}: {n}" for n in names if n in old_paths]
    assert not stale, "\n".join(stale)
    assert set(tooluse._MOVED_MODULES.items()) == set(MOVED_MODULES.items())
