"""tooluse's own modules import each other without circles.

The graph is built from the source (AST), not by importing: an edge for every ``import`` or
``from ... import`` of a tooluse module at any nesting level. A function-level import is still a
dependency, and so is one inside ``if TYPE_CHECKING:``: a module that names another's type
depends on it, even if the import never runs (a lower layer that needs a higher one's type
describes what it uses as a small Protocol of its own).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "tooluse"


def module_files() -> dict[str, Path]:
    """Map every module name under src/tooluse to its file."""
    files: dict[str, Path] = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, ``if TYPE_CHECKING:`` blocks and function bodies included."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _base_of(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module a ``from`` import names (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    anchor = package[: len(package) - (node.level - 1)]
    return ".".join(anchor + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, modules: set[str]) -> set[str]:
    """The tooluse modules that ``module`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = _base_of(node, module, is_package)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            targets.add(sub if sub in modules else base)
    return {target for target in targets if target in modules}


def import_graph() -> dict[str, set[str]]:
    """Every tooluse module and the tooluse modules it imports."""
    files = module_files()
    names = set(files)
    return {module: imports_of(module, path, names) for module, path in files.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative, so deep graphs are fine)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _cycle_in(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One concrete cycle through the component's first module, for the failure message."""
    members = set(component)
    start = component[0]
    path = [start]
    seen = {start}
    while True:
        nxt = sorted(graph[path[-1]] & members)
        if start in nxt and len(path) > 1:
            return [*path, start]
        fresh = [name for name in nxt if name not in seen]
        if not fresh:
            return [*path, start]
        path.append(fresh[0])
        seen.add(fresh[0])


def test_the_graph_sees_real_imports():
    graph = import_graph()
    # Spot checks that the parser resolves absolute, relative and package imports.
    assert "tooluse.loop" in graph["tooluse"]
    assert "tooluse.execution.worker_threads" in graph["tooluse.execution.local"]
    # and the type-only ones (the package's lazily loaded names, for type checkers)
    assert "tooluse.envs" in graph["tooluse"]
    assert all(target.startswith(PACKAGE) for targets in graph.values() for target in targets)


def test_relative_type_only_and_late_imports_are_resolved(tmp_path):
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import sibling\n"
        "from .. import top\n"
        "from .sibling import name\n"
        "if TYPE_CHECKING:\n"
        "    from tooluse.hidden import X\n"
        "def f():\n"
        "    import tooluse.late\n"
    )
    path = tmp_path / "mod.py"
    path.write_text(source)
    modules = {
        "tooluse.pkg.mod",
        "tooluse.pkg.sibling",
        "tooluse.top",
        "tooluse.hidden",
        "tooluse.late",
        "tooluse.pkg",
        "tooluse",
    }
    assert imports_of("tooluse.pkg.mod", path, modules) == {
        "tooluse.pkg.sibling",
        "tooluse.top",
        "tooluse.hidden",  # a type-only import is a dependency too
        "tooluse.late",
    }


def test_no_import_circles():
    graph = import_graph()
    problems = [
        f"{module} imports itself" for module, targets in sorted(graph.items()) if module in targets
    ]
    for component in strongly_connected(graph):
        if len(component) > 1:
            problems.append(
                f"circle of {len(component)}: " + " -> ".join(_cycle_in(component, graph))
            )
    for problem in problems:
        print(problem)
    assert not problems, "\n".join(problems)


# The layers of ARCHITECTURE.md, in the order of the flow: a module may import its own unit and
# the units before it, never one after it. "<define>" is the loose modules at the top of the
# package (errors, messages, events, media...); "tooluse" is the package's own __init__, whose
# names come from every layer up to the evaluation; __main__ counts as the CLI.
LAYERS = (
    "<define>",
    "tools",
    "formats",
    "providers",
    "execution",
    "retrieval",
    "loop",
    "envs",
    "evals",
    "local",
    "train",
    "serve",
    "integrations",
    "tooluse",
    "cli",
)


def layer_of(module: str) -> str:
    """The unit of ``LAYERS`` that a tooluse module belongs to."""
    parts = module.split(".")
    if len(parts) == 1:
        return "tooluse"
    if parts[1] == "__main__":
        return "cli"
    if (SRC / PACKAGE / parts[1]).is_dir():
        return parts[1]
    return "<define>"


def test_every_package_has_a_layer():
    units = {layer_of(module) for module in module_files()}
    assert units <= set(LAYERS), f"place these in LAYERS: {sorted(units - set(LAYERS))}"


def test_no_module_imports_a_later_layer():
    """The folders follow the flow: define -> export/parse -> execute -> loop -> evaluate -> top."""
    graph = import_graph()
    rank = {unit: index for index, unit in enumerate(LAYERS)}
    upward = sorted(
        f"{module} ({layer_of(module)}) -> {target} ({layer_of(target)})"
        for module, targets in graph.items()
        for target in targets
        if rank[layer_of(target)] > rank[layer_of(module)]
    )
    assert not upward, "\n".join(upward)


def test_the_loop_and_retrieval_are_packages():
    modules = set(module_files())
    assert {"tooluse.loop.core", "tooluse.loop.drivers", "tooluse.retrieval.tool_search"} <= modules
    loose = {module.split(".")[1] for module in modules if layer_of(module) == "<define>"}
    assert not {name for name in loose if name.startswith(("loop", "run_", "tool_search"))}


def test_envs_never_imports_evals():
    """Environments sit below evaluation: evals builds on envs, never the reverse."""
    graph = import_graph()
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.startswith("tooluse.envs")
        for target in targets
        if target.startswith("tooluse.evals")
    )
    assert not upward, "\n".join(upward)


def test_envs_offers_bfcl_without_importing_evals():
    import subprocess
    import sys

    code = (
        "import sys, tooluse.envs as e\n"
        "before = sorted(m for m in sys.modules if m.startswith('tooluse.evals'))\n"
        "names = e.environment_registry.names()\n"
        "print(before, 'bfcl:multi_turn_base' in names)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[] True"


def _sys_modules_keys(tree: ast.AST) -> set[str]:
    """The string keys of ``sys.modules.get(KEY)`` and ``sys.modules[KEY]`` in a module."""

    def is_sys_modules(node: ast.expr) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "modules"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        )

    keys: set[ast.expr] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_sys_modules(node.value):
            keys.add(node.slice)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and is_sys_modules(node.func.value)
            and node.args
        ):
            keys.add(node.args[0])
    return {k.value for k in keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def test_modules_looked_up_by_name_exist():
    """Lower layers find ``tooluse.loop.telemetry`` in ``sys.modules`` instead of importing it;
    a stale name there would turn tracing off without an error."""
    files = module_files()
    looked_up = {
        (module, key)
        for module, path in files.items()
        for key in _sys_modules_keys(ast.parse(path.read_text(encoding="utf-8")))
        if key.startswith(f"{PACKAGE}.")
    }
    assert ("tooluse.execution.base", "tooluse.loop.telemetry") in looked_up
    missing = sorted(f"{module}: {key}" for module, key in looked_up if key not in files)
    assert not missing, "\n".join(missing)
