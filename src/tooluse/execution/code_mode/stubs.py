"""Tools as Python functions: the typed stubs the model reads and the functions the program calls.

Each tool becomes one function named after it (``Calendar.create_event`` becomes
``Calendar_create_event``; a name a builtin or the program's helpers already use gets a
``_tool`` suffix). The model reads an ``async def`` with the argument types from the JSON
Schema (``str``, ``int``, ``list[str]``, ``Literal[...]``, ``X | None`` ...), the return type from
the tool's output schema, and the description and argument descriptions as its docstring. The
program gets a function of the same signature that sends the call to the host and returns
what to ``await``. Arguments whose names are not Python identifiers make the function take
``**arguments`` instead.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooluse.tools.definition import ToolDefinition

__all__ = ["PROGRAM_NAMES", "ToolStub", "annotation", "tool_stubs"]

#: Names the program's namespace already holds (besides the builtins).
PROGRAM_NAMES = frozenset({"asyncio", "json", "ToolError", "CallDenied", "final_answer", "_return"})
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MAX_LITERALS = 20


_UNSET = "__tooluse_unset__"  # defined by the sandbox runtime beside __tooluse_call__


@dataclass(frozen=True, kw_only=True)
class _Parameter:
    name: str  # the argument's name (also the Python name)
    annotation: str
    required: bool
    default: str  # Python source of the default ("None" when the schema gives none)
    nullable: bool
    description: str
    schema: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, kw_only=True)
class ToolStub:
    """One tool as a Python function: ``function`` (its name in the program) calls ``tool``."""

    tool: str
    function: str
    description: str
    parameters: tuple[_Parameter, ...]
    variadic: bool
    returns: str

    def signature(self) -> str:
        if self.variadic:
            return f"(**arguments) -> {self.returns}"
        parts = [
            f"{p.name}: {p.annotation}" + ("" if p.required else f" = {p.default}")
            for p in self._ordered()
        ]
        return f"({', '.join(parts)}) -> {self.returns}"

    def _ordered(self) -> list[_Parameter]:
        # Python wants the parameters without a default first; each group keeps schema order.
        return [p for p in self.parameters if p.required] + [
            p for p in self.parameters if not p.required
        ]

    def shown(self) -> str:
        """The stub the model reads: the signature and a docstring."""
        lines = [f"async def {self.function}{self.signature()}:"]
        doc = [self.description.strip()] if self.description.strip() else []
        described = [p for p in self.parameters if p.description or self.variadic]
        if described:
            doc.append("\nArgs:" if doc else "Args:")
            for p in described:
                what = p.description or p.annotation
                if self.variadic:
                    what = f"({p.annotation}{'' if p.required else ', optional'}) {what}"
                doc.append(f"    {p.name}: {' '.join(what.split())}")
        if doc:
            body = "\n".join(doc).replace('"""', "'''")
            indented = "\n".join(f"    {line}" if line else "" for line in body.split("\n"))
            lines.append('    """' + indented.removeprefix("    ") + '\n    """')
        else:
            lines.append("    ...")
        return "\n".join(lines)

    def source(self) -> str:
        """The function the program calls: it returns the call to ``await``."""
        if self.variadic:
            return (
                f"def {self.function}(**arguments):\n"
                f"    return __tooluse_call__({self.tool!r}, arguments)\n"
            )
        ordered = self._ordered()
        # An optional argument the program leaves out is not sent (the tool's own default
        # holds, as when a direct call leaves it out): its default here is a marker, not the
        # schema's default, which the model reads in the stub but may not be the tool's value
        # (a default "None" written as a string would reach the tool as text).
        names = ", ".join(p.name if p.required else f"{p.name}={_UNSET}" for p in ordered)
        lines = [f"def {self.function}({names}):", "    __a = {}"]
        for p in self.parameters:  # schema order, as the tool documents its arguments
            if p.required:
                lines.append(f"    __a[{p.name!r}] = {p.name}")
                continue
            sent = f"{p.name} is not {_UNSET}"
            if not p.nullable:  # None for a non-nullable argument means "leave it out"
                sent += f" and {p.name} is not None"
            lines.append(f"    if {sent}:\n        __a[{p.name!r}] = {p.name}")
        lines.append(f"    return __tooluse_call__({self.tool!r}, __a)")
        return "\n".join(lines) + "\n"


def tool_stubs(definitions: Sequence[ToolDefinition]) -> tuple[ToolStub, ...]:
    """A stub per tool, each with a distinct Python name."""
    taken = set(dir(builtins)) | set(PROGRAM_NAMES) | set(keyword.kwlist)
    stubs = []
    for definition in definitions:
        function = _python_name(definition.name, taken)
        taken.add(function)
        stubs.append(_stub(definition, function))
    return tuple(stubs)


def _python_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not base or base[0].isdigit():
        base = "tool_" + base
    candidate = base if base not in taken else f"{base}_tool"
    number = 2
    while candidate in taken:
        candidate = f"{base}_tool{number}"
        number += 1
    return candidate


def _stub(definition: ToolDefinition, function: str) -> ToolStub:
    schema = definition.parameters_schema
    required = set(schema.get("required") or ())
    properties = schema.get("properties") or {}
    parameters = tuple(
        _parameter(name, sub if isinstance(sub, Mapping) else {}, name in required)
        for name, sub in properties.items()
        if name not in definition.injected
    )
    variadic = any(
        not _IDENTIFIER.match(p.name)
        or keyword.iskeyword(p.name)
        or p.name.startswith("__")
        or p.name in PROGRAM_NAMES
        for p in parameters
    )
    output = definition.output_schema
    return ToolStub(
        tool=definition.name,
        function=function,
        description=definition.description,
        parameters=parameters,
        variadic=variadic,
        returns=annotation(output) if output else "Any",
    )


def _parameter(name: str, schema: Mapping[str, Any], required: bool) -> _Parameter:
    default = "None"
    if not required and "default" in schema and _literal(schema["default"]):
        default = repr(schema["default"])
    nullable = _allows_null(schema)
    text = annotation(schema)
    if not required and default == "None" and not nullable:
        text = f"{text} | None"
    return _Parameter(
        name=name,
        annotation=text,
        required=required,
        default=default,
        nullable=nullable,
        description=str(schema.get("description") or ""),
        schema=dict(schema),
    )


def _literal(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_literal(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _literal(v) for k, v in value.items())
    return False


def _allows_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    branches = schema.get("anyOf") or schema.get("oneOf") or ()
    return any(isinstance(b, Mapping) and _allows_null(b) for b in branches)


_SIMPLE = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
}


def annotation(schema: Mapping[str, Any] | None, depth: int = 0) -> str:
    """A Python type annotation for a JSON Schema (``Any`` where none fits)."""
    if not isinstance(schema, Mapping) or depth > 6:
        return "Any"
    enum = schema.get("enum")
    if isinstance(enum, list) and 0 < len(enum) <= _MAX_LITERALS and all(map(_literal, enum)):
        return f"Literal[{', '.join(repr(v) for v in enum)}]"
    if "const" in schema and _literal(schema["const"]):
        return f"Literal[{schema['const']!r}]"
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and branches:
        return _union([annotation(b, depth + 1) for b in branches])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([annotation({**schema, "type": k}, depth + 1) for k in kind])
    if kind == "array":
        items = schema.get("items")
        return f"list[{annotation(items, depth + 1)}]" if isinstance(items, Mapping) else "list"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and not schema.get("properties"):
            return f"dict[str, {annotation(extra, depth + 1)}]"
        return "dict"
    return _SIMPLE.get(str(kind), "Any")


def _union(parts: list[str]) -> str:
    unique = list(dict.fromkeys(parts))
    if "Any" in unique:
        return "Any"
    if "None" in unique:  # written last, as people write it
        unique = [p for p in unique if p != "None"] + ["None"]
    return " | ".join(unique)
