"""The neutral description of a tool: ``ToolDefinition`` and its parameters.

A tool is described either by a tuple of :class:`ToolParameter` (the simple, llenvs-style form)
or by a full JSON Schema (``input_schema``) for anything richer. ``parameters_schema`` always
gives the JSON Schema of the argument object. Tools built from callables
(:meth:`ToolDefinition.from_callable`) or pydantic models (:meth:`ToolDefinition.from_model`)
keep the generated argument model, so their signature types are the validation truth.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from tooluse.errors import ToolDefinitionError, ToolExecutionError
from tooluse.tools.injection import ToolContext

if TYPE_CHECKING:
    from pydantic import BaseModel

    from tooluse.tools.argument_validation import ArgumentValidator, ValidationReport
    from tooluse.tools.schema_export import SchemaExport

__all__ = [
    "TOOL_NAME_PATTERN",
    "ToolDefinition",
    "ToolParameter",
    "ToolParameterType",
    "check_tool_name",
    "sanitize_tool_name",
]

# The intersection of what OpenAI, Anthropic, Gemini, Bedrock and MCP accept.
TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]{0,63}$")
# Dotted names (``Calendar.create_event``, MCP and OpenAPI style): each provider gets its own
# form on export (see :mod:`tooluse.tools.tool_names`) and calls map back to this name.
DOTTED_TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]*(?:\.[a-zA-Z_][a-zA-Z0-9_-]*)+$")


def check_tool_name(name: str) -> str:
    """``name`` if it is a valid tool name; else :class:`ToolDefinitionError` with a fix.

    Valid: a letter, then letters, digits, ``_`` or ``-`` (the rule every provider accepts),
    optionally in dotted parts (``Calendar.create_event``); at most 64 characters.
    """
    if (
        not isinstance(name, str)
        or len(name) > 64
        or not (TOOL_NAME_PATTERN.match(name) or DOTTED_TOOL_NAME_PATTERN.match(name))
    ):
        raise ToolDefinitionError(
            f"invalid tool name {name!r}: names must start with a letter and contain only "
            "letters, digits, '_' or '-', optionally in dotted parts ('Calendar.create_event'), "
            f"at most 64 characters; for example {sanitize_tool_name(str(name))!r}"
        )
    return name


def sanitize_tool_name(name: str) -> str:
    """A valid tool name derived from ``name`` (invalid characters become ``_``)."""
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", name).strip("_") or "tool"
    if not cleaned[0].isalpha():
        cleaned = "t_" + cleaned
    return cleaned[:64]


class ToolParameterType(str, Enum):
    """JSON Schema type names of tool parameters."""

    STRING = "string"
    INTEGER = "integer"
    NUMBER = "number"
    BOOLEAN = "boolean"
    ARRAY = "array"
    OBJECT = "object"
    NULL = "null"


@dataclass(frozen=True)
class ToolParameter:
    """One parameter of a tool (positional construction is allowed, as in the llenvs docs)."""

    name: str
    type: ToolParameterType = ToolParameterType.STRING
    description: str = ""
    required: bool = True
    enum: tuple[Any, ...] | None = None
    default: Any = None
    items: dict[str, Any] | None = None
    schema: dict[str, Any] | None = None

    def to_json_schema(self) -> dict[str, Any]:
        """The JSON Schema of this parameter (``schema`` wins when given)."""
        if self.schema is not None:
            out = dict(self.schema)
        else:
            out = {"type": ToolParameterType(self.type).value}
            if self.items is not None:
                out["items"] = dict(self.items)
            if self.enum is not None:
                out["enum"] = list(self.enum)
            if not self.required and self.default is not None:
                out["default"] = self.default
        if self.description and "description" not in out:
            out["description"] = self.description
        return out


def _parameter_type(schema: dict[str, Any]) -> ToolParameterType:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    if t is None:
        for branch in schema.get("anyOf", []):
            if isinstance(branch, dict) and branch.get("type") not in (None, "null"):
                t = branch["type"]
                break
    try:
        return ToolParameterType(t)
    except ValueError:
        return ToolParameterType.OBJECT if "properties" in schema else ToolParameterType.STRING


def parameters_from_schema(schema: dict[str, Any]) -> tuple[ToolParameter, ...]:
    """Flat :class:`ToolParameter` views of the top-level properties of an argument schema."""
    required = set(schema.get("required") or ())
    out = []
    for name, sub in (schema.get("properties") or {}).items():
        if not isinstance(sub, dict):
            continue
        enum = sub.get("enum")
        out.append(
            ToolParameter(
                name=name,
                type=_parameter_type(sub),
                description=str(sub.get("description", "")),
                required=name in required,
                enum=tuple(enum) if isinstance(enum, list) else None,
                default=sub.get("default"),
                schema=sub,
            )
        )
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class ToolDefinition:
    """A tool: its name, description, argument schema and, optionally, its implementation.

    ``input_schema`` (full JSON Schema of the argument object) takes precedence over
    ``parameters`` when both are given. ``function`` is the callable that runs the tool;
    ``injected`` names its parameters that the caller supplies at run time (never the model).
    ``arguments_model`` (set by :meth:`from_callable`/:meth:`from_model`) validates arguments
    by the signature types. ``requires_approval`` makes a run stop before the call until a
    person decides (``tooluse.resume``); ``idempotent`` says a call interrupted by a crash may
    simply run again when the run resumes. ``callers`` says who may call the tool in code
    mode: ``("direct",)`` the model itself, ``("code",)`` the model's programs, or both;
    ``None`` leaves it to the run (from programs in code mode, terminal tools directly).
    """

    name: str
    description: str = ""
    parameters: tuple[ToolParameter, ...] = ()
    is_terminal: bool = False
    requires_approval: bool = False
    idempotent: bool = False
    callers: tuple[str, ...] | None = None
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    function: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    injected: tuple[str, ...] = ()
    annotations: dict[str, Any] = field(default_factory=dict, compare=False)
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    arguments_model: type[BaseModel] | None = field(default=None, compare=False, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_tool_name(self.name)
        if not isinstance(self.parameters, tuple):
            object.__setattr__(self, "parameters", tuple(self.parameters))
        if not isinstance(self.injected, tuple):
            object.__setattr__(self, "injected", tuple(self.injected))
        if self.callers is not None:
            object.__setattr__(self, "callers", _check_callers(self.name, self.callers))
        names = [p.name for p in self.parameters]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ToolDefinitionError(
                f"tool {self.name!r}: duplicate parameter names: {', '.join(duplicates)}"
            )
        if self.input_schema is not None and self.input_schema.get("type", "object") != "object":
            raise ToolDefinitionError(
                f"tool {self.name!r}: the argument schema must be an object schema, "
                f"got type {self.input_schema.get('type')!r}"
            )
        if self.input_schema is not None:
            from tooluse.tools.schema_safety import check_schema

            # dangling or cyclic $ref, absurd depth, exponential patterns: refused now, with
            # their path, rather than when a model's arguments hit them
            check_schema(self.input_schema, self.name)

    def __hash__(self) -> int:  # the schema dicts are unhashable; equal tools share these
        return hash((self.name, self.description, self.is_terminal))

    def code_mode_callers(self) -> tuple[str, ...]:
        """Who may call this tool in code mode: ``callers``, else programs (``("code",)``),
        except a terminal tool, which the model calls itself (``("direct",)``)."""
        if self.callers is not None:
            return self.callers
        return ("direct",) if self.is_terminal else ("code",)

    # ---------------------------------------------------------------- construction

    @classmethod
    def from_callable(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        is_terminal: bool = False,
        annotations: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ToolDefinition:
        """Describe a function (sync or async) or callable object from signature and docstring.

        Parameters marked ``Injected[...]``, typed ``ToolContext`` or named ``agent`` are hidden
        from the schema and supplied by :meth:`invoke`'s ``injected``.
        """
        from tooluse.tools.callable_schema import callable_schema

        described = callable_schema(fn, name=name, description=description)
        check_tool_name(described.name)
        optional = _injected_with_default(fn, described.injected)
        return cls(
            name=described.name,
            description=described.description,
            parameters=parameters_from_schema(described.input_schema),
            is_terminal=is_terminal,
            input_schema=described.input_schema,
            output_schema=described.output_schema,
            function=fn,
            injected=tuple(described.injected),
            annotations=dict(annotations or {}),
            metadata={
                **(metadata or {}),
                "injection_kinds": dict(described.injected),
                "optional_injected": optional,
                "field_names": described.field_names,
                "positional_only": described.positional_only,
            },
            arguments_model=described.arguments_model,
        )

    @classmethod
    def from_model(
        cls,
        model: type[BaseModel],
        *,
        name: str | None = None,
        description: str | None = None,
        is_terminal: bool = False,
    ) -> ToolDefinition:
        """A pydantic model class as a tool (structured output): invoking it builds the model."""
        import docstring_parser

        from tooluse.tools.callable_schema import docstring_text
        from tooluse.tools.json_schema_rewrite import clean_schema

        schema = clean_schema(model.model_json_schema())
        schema.setdefault("properties", {})
        doc_text = docstring_text(docstring_parser.parse(model.__doc__ or ""))
        return cls(
            name=name or model.__name__,
            description=description if description is not None else doc_text,
            parameters=parameters_from_schema(schema),
            is_terminal=is_terminal,
            input_schema=schema,
            function=model,
            metadata={
                "structured_output": True,
                "forbid_extra": True,
                # Validated arguments are keyed as the schema names them (aliases), which is
                # also what ``model(**arguments)`` accepts.
                "field_names": _model_argument_names(model),
            },
            arguments_model=model,
        )

    @classmethod
    def from_schema(
        cls,
        name: str,
        schema: Mapping[str, Any] | None = None,
        *,
        description: str = "",
        function: Callable[..., Any] | None = None,
        is_terminal: bool = False,
        output_schema: dict[str, Any] | None = None,
    ) -> ToolDefinition:
        """A tool described by a raw JSON Schema (validated against that schema)."""
        input_schema = dict(schema or {"type": "object", "properties": {}})
        input_schema.setdefault("type", "object")
        return cls(
            name=name,
            description=description,
            parameters=parameters_from_schema(input_schema),
            is_terminal=is_terminal,
            input_schema=input_schema,
            output_schema=output_schema,
            function=function,
        )

    # ---------------------------------------------------------------- schema

    @property
    def parameters_schema(self) -> dict[str, Any]:
        """JSON Schema of the argument object."""
        if self.input_schema is not None:
            return self.input_schema
        cached = self._cache.get("parameters_schema")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        props = {p.name: p.to_json_schema() for p in self.parameters}
        required = [p.name for p in self.parameters if p.required]
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        self._cache["parameters_schema"] = schema
        return schema

    def export(self, provider: str, *, strict: bool = False) -> SchemaExport:
        """The provider schema plus the report of what the export dropped or changed."""
        from tooluse.tools.schema_export import export_tool

        return export_tool(self, provider, strict=strict)

    def to_openai_schema(self, strict: bool = False) -> dict[str, Any]:
        """OpenAI Chat Completions tool schema (``{"type": "function", "function": {...}}``)."""
        return self.export("openai", strict=strict).schema

    def to_openai_responses_schema(self, strict: bool = False) -> dict[str, Any]:
        """OpenAI Responses API tool schema (flat ``{"type": "function", "name": ...}``)."""
        return self.export("openai_responses", strict=strict).schema

    def to_anthropic_schema(self, strict: bool = False) -> dict[str, Any]:
        """Anthropic Messages tool schema (``{"name", "description", "input_schema"}``)."""
        return self.export("anthropic", strict=strict).schema

    def to_gemini_schema(self) -> dict[str, Any]:
        """Gemini function declaration with an OpenAPI-subset ``parameters`` schema."""
        return self.export("gemini").schema

    def to_bedrock_schema(self, strict: bool = False) -> dict[str, Any]:
        """Bedrock Converse tool (``{"toolSpec": {..., "inputSchema": {"json": ...}}}``)."""
        return self.export("bedrock", strict=strict).schema

    def to_mcp_schema(self) -> dict[str, Any]:
        """MCP ``Tool`` object (``name``, ``description``, ``inputSchema``, ...)."""
        return self.export("mcp").schema

    # ---------------------------------------------------------------- validation

    @property
    def validator(self) -> ArgumentValidator:
        """The compiled argument validator (built on first use, then reused)."""
        validator = self._cache.get("validator")
        if validator is None:
            from tooluse.tools.argument_validation import ArgumentValidator

            validator = ArgumentValidator(
                tool_name=self.name,
                schema=self.parameters_schema,
                model=self.arguments_model,
                field_names=self.metadata.get("field_names"),
                forbid_extra=bool(self.metadata.get("forbid_extra")),
            )
            self._cache["validator"] = validator
        return validator

    def validate_arguments_report(self, arguments: Any) -> ValidationReport:
        """Validated arguments plus the coercions applied; raises ``ToolArgumentError``."""
        return self.validator.validate(_raw_arguments(arguments))

    def validate_arguments(self, arguments: Any) -> dict[str, Any]:
        """Validated arguments (dict, JSON text or a ``ToolCall``); raises ``ToolArgumentError``.

        Safe coercions are applied; :meth:`validate_arguments_report` also lists them.
        """
        return self.validator.validate(_raw_arguments(arguments)).arguments

    # ---------------------------------------------------------------- invocation

    def _call_kwargs(
        self, arguments: Any, injected: Mapping[str, Any] | None, call_id: str, validate: bool
    ) -> dict[str, Any]:
        if self.function is None:
            raise ToolExecutionError(
                f"tool {self.name!r} has no implementation",
                tool_name=self.name,
                model_message=f"error: tool {self.name!r} cannot be run here",
            )
        kwargs = self.validate_arguments(arguments) if validate else dict(arguments or {})
        if not self.injected:
            return kwargs
        supplied = dict(injected or {})
        kinds: dict[str, str] = self.metadata.get("injection_kinds", {})
        optional = self.metadata.get("optional_injected", ())
        for pname in self.injected:
            kind = kinds.get(pname, "value")
            if kind == "context":
                ctx = supplied.get(pname, supplied.get("context"))
                if not isinstance(ctx, ToolContext):
                    ctx = ToolContext(
                        call_id=call_id,
                        tool_name=self.name,
                        agent=supplied.get("agent"),
                        values=supplied,
                    )
                kwargs[pname] = ctx
            elif pname in supplied:
                kwargs[pname] = supplied[pname]
            elif kind == "agent" and "agent" in supplied:
                kwargs[pname] = supplied["agent"]
            elif pname not in optional:
                raise ToolExecutionError(
                    f"tool {self.name!r} needs the injected value {pname!r}, which the caller "
                    "did not supply",
                    tool_name=self.name,
                    model_message=f"error: tool {self.name!r} is not available right now",
                )
        return kwargs

    def invoke(
        self,
        arguments: Any = None,
        *,
        injected: Mapping[str, Any] | None = None,
        call_id: str = "",
        validate: bool = True,
    ) -> Any:
        """Validate ``arguments``, add injected values and run the tool; returns its output.

        Coroutine functions are run to completion (outside a running event loop only; inside
        one, use :meth:`ainvoke`). Exceptions raised by the tool propagate unchanged.
        """
        kwargs = self._call_kwargs(arguments, injected, call_id, validate)
        assert self.function is not None
        args = _positional_arguments(self.metadata.get("positional_only"), kwargs)
        result = self.function(*args, **kwargs)
        if inspect.isawaitable(result):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(_await(result))
            if inspect.iscoroutine(result):
                result.close()
            raise ToolExecutionError(
                f"tool {self.name!r} is async; call ainvoke() inside an event loop",
                tool_name=self.name,
            )
        return result

    async def ainvoke(
        self,
        arguments: Any = None,
        *,
        injected: Mapping[str, Any] | None = None,
        call_id: str = "",
        validate: bool = True,
    ) -> Any:
        """Async :meth:`invoke`: awaits coroutine tools, runs sync tools inline."""
        kwargs = self._call_kwargs(arguments, injected, call_id, validate)
        assert self.function is not None
        args = _positional_arguments(self.metadata.get("positional_only"), kwargs)
        result = self.function(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    @property
    def is_async(self) -> bool:
        """Whether the implementation is a coroutine function."""
        fn = self.function
        if fn is None:
            return False
        return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


#: Who may call a tool (``ToolDefinition.callers``): the model itself, or its programs.
CALLERS = ("direct", "code")


def _check_callers(name: str, callers: Any) -> tuple[str, ...]:
    values = (callers,) if isinstance(callers, str) else tuple(callers)
    wrong = [repr(c) for c in values if c not in CALLERS]
    if wrong or not values:
        raise ToolDefinitionError(
            f"tool {name!r}: callers must name 'direct' and/or 'code', got "
            f"{', '.join(wrong) or 'nothing'}"
        )
    return tuple(dict.fromkeys(values))


def _positional_arguments(
    positional: tuple[tuple[str, Any], ...] | None, kwargs: dict[str, Any]
) -> list[Any]:
    """Take the positional-only parameters out of ``kwargs``, in order (defaults fill gaps)."""
    args: list[Any] = []
    for name, default in positional or ():
        if name in kwargs:
            args.append(kwargs.pop(name))
        elif default is not inspect.Parameter.empty:
            args.append(default)
        else:
            break
    return args


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _raw_arguments(arguments: Any) -> Any:
    """Accept a ``ToolCall`` too: its raw text when the arguments could not be decoded."""
    if hasattr(arguments, "arguments") and hasattr(arguments, "raw_arguments"):
        if arguments.raw_arguments is not None and not arguments.arguments:
            return arguments.raw_arguments
        return arguments.arguments
    return arguments


def _model_argument_names(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """(field name, argument name) per field: the validation alias when there is one."""
    names = []
    for field_name, info in model.model_fields.items():
        alias = info.validation_alias
        choices = getattr(alias, "choices", None)
        if choices and isinstance(choices[0], str):
            alias = choices[0]  # AliasChoices: the schema shows the first choice
        if not isinstance(alias, str):
            alias = info.alias
        names.append((field_name, alias if isinstance(alias, str) else field_name))
    return tuple(names)


def _injected_with_default(fn: Callable[..., Any], names: Mapping[str, Any]) -> tuple[str, ...]:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    return tuple(
        n for n in names if n in params and params[n].default is not inspect.Parameter.empty
    )
