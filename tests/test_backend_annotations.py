"""A backend is typed as one: no parameter, field or return that holds a backend is annotated
``Any`` (``providers.base.Backend`` is the Protocol; a layer below it names what it uses in a
Protocol of its own). ``backend: Any`` came back twice, hiding calls the backend lacks."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "tooluse"


def _is_any(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.strip() in ("Any", "typing.Any")
    if isinstance(annotation, ast.Name):
        return annotation.id == "Any"
    return isinstance(annotation, ast.Attribute) and annotation.attr == "Any"


def _holds_a_backend(name: str) -> bool:
    return name in ("backend", "upstream") or name.endswith("_backend")


def backends_typed_any(source: str) -> list[str]:
    """``name (line)`` of each backend annotated ``Any`` in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.arg) and _holds_a_backend(node.arg) and _is_any(node.annotation):
            found.append(f"{node.arg} (line {node.lineno})")
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, (ast.Name, ast.Attribute))
            and _holds_a_backend(getattr(node.target, "id", getattr(node.target, "attr", "")))
            and _is_any(node.annotation)
        ):
            found.append(f"{ast.unparse(node.target)} (line {node.lineno})")
        elif (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and _holds_a_backend(node.name.lstrip("_"))
            and _is_any(node.returns)
        ):
            found.append(f"{node.name}() -> Any (line {node.lineno})")
    return found


def test_the_check_sees_each_form():
    source = (
        "from typing import Any\n"
        "def f(backend: Any, other: Any, upstream: 'Any'): ...\n"
        "class C:\n"
        "    judge_backend: Any = None\n"
        "def _backend() -> Any: ...\n"
        "def g(backend: object, model: Any) -> Any: ...\n"
    )
    assert sorted(backends_typed_any(source)) == [
        "_backend() -> Any (line 5)",
        "backend (line 2)",
        "judge_backend (line 4)",
        "upstream (line 2)",
    ]


def test_no_backend_is_typed_any():
    found = [
        f"{path.relative_to(SRC.parent)}: {where}"
        for path in sorted(SRC.rglob("*.py"))
        for where in backends_typed_any(path.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)
