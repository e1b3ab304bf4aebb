"""tooluse's own modules import each other without circles.

The graph is built from the source (AST), not by importing: an edge for every ``import`` or
``from ... import`` of a tooluse module at any nesting level (a function-level import is still a
dependency), except inside ``if TYPE_CHECKING:`` blocks, which never run.
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


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, skipping the bodies of ``if TYPE_CHECKING:`` (not their else)."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


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
    assert all(target.startswith(PACKAGE) for targets in graph.values() for target in targets)


def test_relative_and_type_checking_imports_are_resolved(tmp_path):
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
