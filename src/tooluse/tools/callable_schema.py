"""From a Python callable to an argument model and a JSON Schema.

The signature types are the truth: each parameter becomes a field of a pydantic model (built
once per tool), whose JSON Schema is cleaned (no titles, non-recursive ``$ref`` inlined) and
whose validator later checks the model's arguments. Docstrings (Google, NumPy, reST; detected
automatically) give the description and the parameter descriptions.
"""

from __future__ import annotations

import inspect
import re
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError
from pydantic.fields import FieldInfo

from tooluse.errors import ToolDefinitionError
from tooluse.tools.injection import InjectionKind, injection_kind
from tooluse.tools.json_schema_rewrite import clean_schema

__all__ = [
    "CallableSchema",
    "ToolDefinitionWarning",
    "callable_schema",
    "docstring_text",
    "is_unbound_method",
    "parse_docstring",
]


class ToolDefinitionWarning(UserWarning):
    """A tool definition is usable but suspicious (e.g. docstring and signature disagree)."""


@dataclass(frozen=True, kw_only=True)
class CallableSchema:
    """What a callable says about itself as a tool."""

    name: str
    description: str
    input_schema: dict[str, Any]
    arguments_model: type[BaseModel]
    field_names: tuple[tuple[str, str], ...]  # (model field name, argument name)
    injected: dict[str, InjectionKind]
    parameter_descriptions: dict[str, str]
    output_schema: dict[str, Any] | None
    is_async: bool
    # positional-only parameters in signature order, each with its default (or Parameter.empty)
    positional_only: tuple[tuple[str, Any], ...] = ()


_UNANNOTATED_DEFAULT_TYPES = (bool, int, float, str)


# Google sections that docstring_parser does not know by default but that hold parameters.
_KEYWORD_SECTIONS = ("Keyword Args", "Keyword Arguments", "Kwargs", "Other Parameters")
_KEYWORD_SECTION_LINE = re.compile(
    r"^\s*(?:" + "|".join(_KEYWORD_SECTIONS) + r")\s*:\s*$", re.MULTILINE
)


def parse_docstring(text: str) -> docstring_parser.Docstring:
    """The docstring parsed in its own style; Google ``Keyword Args:`` sections count as
    parameters, and ``name : text`` lines (a space before the colon) keep their text."""
    doc = docstring_parser.parse(text)
    if _KEYWORD_SECTION_LINE.search(text):
        from docstring_parser import google

        sections = [
            *google.DEFAULT_SECTIONS,
            *(google.Section(t, "param", google.SectionType.MULTIPLE) for t in _KEYWORD_SECTIONS),
        ]
        with_keywords = google.GoogleParser(sections=sections).parse(text)
        if len(with_keywords.params) > len(doc.params):
            doc = with_keywords
    for param in doc.params:
        param.arg_name = param.arg_name.strip()
    return doc


def docstring_text(doc: docstring_parser.Docstring) -> str:
    """The tool description from a parsed docstring: short text plus the long text."""
    parts = [p.strip() for p in (doc.short_description, doc.long_description) if p and p.strip()]
    return "\n\n".join(parts)


def _split_description(annotation: Any) -> tuple[Any, str | None]:
    """Take ``Annotated[T, "text"]`` apart: pydantic ignores plain-string metadata."""
    if get_origin(annotation) is not Annotated:
        return annotation, None
    base, *meta = get_args(annotation)
    texts = [m for m in meta if isinstance(m, str)]
    rest = [m for m in meta if not isinstance(m, str)]
    if not texts:
        return annotation, None
    parts = (base, *rest)
    rebuilt = Annotated[parts] if rest else base
    return rebuilt, " ".join(t.strip() for t in texts)


def _portable_typeddict(annotation: Any) -> Any:
    """``typing.TypedDict`` classes rebuilt with ``typing_extensions`` (pydantic needs it < 3.12)."""
    import sys

    if sys.version_info >= (3, 12) or not typing.is_typeddict(annotation):
        return annotation
    import typing_extensions as te

    make_typeddict: Any = te.TypedDict
    if type(annotation) is type(make_typeddict("_Probe", {})):  # already portable
        return annotation
    hints = typing.get_type_hints(annotation, include_extras=True)
    required = getattr(annotation, "__required_keys__", frozenset(hints))
    fields = {
        k: te.Required[_portable_typeddict(v)]
        if k in required
        else te.NotRequired[_portable_typeddict(v)]
        for k, v in hints.items()
    }
    rebuilt = make_typeddict(annotation.__name__, fields)
    rebuilt.__doc__ = annotation.__doc__
    return rebuilt


def _resolve_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:
        pass
    # One unresolvable forward reference (e.g. "LLMAgent" under TYPE_CHECKING) must not hide
    # the others: resolve each annotation on its own, keeping the text when it fails.
    raw = dict(getattr(fn, "__annotations__", {}) or {})
    namespace = dict(getattr(fn, "__globals__", {}) or {})
    hints: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, str):
            try:
                value = eval(value, namespace)  # noqa: S307 - the function's own annotation text
            except Exception:
                pass
        hints[key] = value
    return hints


def _signature_target(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The function whose signature and docstring describe ``fn`` (unwrap classes, partials)."""
    if inspect.isclass(fn):
        return fn
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)) and callable(fn):
        call = type(fn).__call__
        if not inspect.isbuiltin(call):
            return fn.__call__  # type: ignore[operator,no-any-return]
    return fn


def is_unbound_method(fn: Any) -> bool:
    """Whether ``fn`` is a plain function defined in a class body whose first parameter is
    the instance (``self``) or the class (``cls``): a method not yet bound."""
    if not inspect.isfunction(fn):
        return False
    outer, _, _ = fn.__qualname__.rpartition(".")
    if not outer or outer.endswith("<locals>"):
        return False
    params = list(inspect.signature(fn).parameters.values())
    return (
        bool(params)
        and params[0].name in ("self", "cls")
        and params[0].kind
        in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        )
    )


def callable_schema(
    fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> CallableSchema:
    """Describe ``fn`` as a tool; raises :class:`ToolDefinitionError` for what cannot be described."""
    target = _signature_target(fn)
    tool_name = name or getattr(fn, "__name__", None) or type(fn).__name__
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"tool {tool_name!r}: cannot read the signature: {exc}") from exc
    hints = _resolve_hints(target)
    raw_doc = inspect.getdoc(target) or (inspect.getdoc(fn) if target is not fn else None) or ""
    doc = parse_docstring(raw_doc)
    doc_params = {p.arg_name.lstrip("*"): (p.description or "").strip() for p in doc.params}

    fields: dict[str, Any] = {}
    field_names: list[tuple[str, str]] = []
    injected: dict[str, InjectionKind] = {}
    descriptions: dict[str, str] = {}
    positional: dict[str, Any] = {}  # positional-only parameters, in order, with defaults
    for index, param in enumerate(sig.parameters.values()):
        if index == 0 and is_unbound_method(target):
            continue  # the instance is bound on access, never asked of the model
        _reject_variadic(tool_name, param)
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            # the model names it like any other; invoke() passes it by position
            positional[param.name] = param.default
        annotation = hints.get(param.name, param.annotation)
        kind = injection_kind(param.name, annotation)
        if kind is not None:
            injected[param.name] = kind
            continue
        annotation, annotated_text = _split_description(_described_annotation(param, annotation))
        annotation = _portable_typeddict(annotation)
        field_info = _parameter_field(param, annotated_text or doc_params.get(param.name) or "")
        if field_info.description:
            descriptions[param.name] = field_info.description
        internal = f"p{index}"
        fields[internal] = (annotation, field_info)
        field_names.append((internal, param.name))

    _warn_docstring_mismatch(tool_name, doc_params, [n for _, n in field_names], injected)
    model, schema = _arguments_model(tool_name, fields)
    return CallableSchema(
        name=tool_name,
        description=description if description is not None else docstring_text(doc),
        input_schema=schema,
        arguments_model=model,
        field_names=tuple(field_names),
        injected=injected,
        parameter_descriptions=descriptions,
        output_schema=_output_schema(sig.return_annotation, hints.get("return")),
        is_async=inspect.iscoroutinefunction(target),
        positional_only=tuple(positional.items()),
    )


def _reject_variadic(tool_name: str, param: inspect.Parameter) -> None:
    if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        star = "*" if param.kind is inspect.Parameter.VAR_POSITIONAL else "**"
        raise ToolDefinitionError(
            f"tool {tool_name!r}: parameter {star}{param.name} cannot be described to a "
            "model; use a named list or dict parameter instead"
        )


def _described_annotation(param: inspect.Parameter, annotation: Any) -> Any:
    """The annotation to describe: an unannotated parameter takes its default's simple type."""
    if annotation is not inspect.Parameter.empty:
        return annotation
    default = param.default
    if default is not inspect.Parameter.empty and type(default) in _UNANNOTATED_DEFAULT_TYPES:
        return type(default)
    # Documented fallback: an unannotated parameter is described as a string and accepts any
    # JSON value.
    return Annotated[Any, WithJsonSchema({"type": "string"})]


def _parameter_field(param: inspect.Parameter, text: str) -> FieldInfo:
    """The model field of one parameter (its default may be a pydantic ``Field(...)``)."""
    default = param.default
    if isinstance(default, FieldInfo):
        overrides: dict[str, Any] = {
            "alias": param.name,
            "validation_alias": param.name,
            "serialization_alias": param.name,
        }
        if text and not default.description:
            overrides["description"] = text
        return FieldInfo.merge_field_infos(default, **overrides)
    kwargs: dict[str, Any] = {"alias": param.name}
    if default is not inspect.Parameter.empty:
        kwargs["default"] = default
    if text:
        kwargs["description"] = text
    field_info: FieldInfo = Field(**kwargs)
    return field_info


def _arguments_model(
    tool_name: str, fields: dict[str, Any]
) -> tuple[type[BaseModel], dict[str, Any]]:
    """The arguments model built from ``fields`` and its cleaned JSON Schema."""
    try:
        model = create_model(
            f"{tool_name}_arguments",
            __config__=ConfigDict(
                extra="forbid",
                populate_by_name=False,
                arbitrary_types_allowed=False,
                allow_inf_nan=False,  # NaN and Infinity are not JSON numbers
            ),
            **fields,
        )
        schema = model.model_json_schema(by_alias=True)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
        raise ToolDefinitionError(
            f"tool {tool_name!r}: a parameter type cannot be described as JSON Schema: {exc}"
        ) from exc
    schema = clean_schema(schema)
    schema.setdefault("properties", {})
    order = ("type", "properties", "required", "additionalProperties")
    return model, {**{k: schema[k] for k in order if k in schema}, **schema}


def _warn_docstring_mismatch(
    tool_name: str, documented: dict[str, str], params: list[str], injected: dict[str, Any]
) -> None:
    if not documented:
        return
    extra = [n for n in documented if n not in params and n not in injected]
    missing = [n for n in params if n not in documented]
    problems = []
    if extra:
        problems.append(f"documented but not in the signature: {', '.join(extra)}")
    if missing:
        problems.append(f"in the signature but not documented: {', '.join(missing)}")
    if problems:
        warnings.warn(
            f"tool {tool_name!r}: docstring and signature disagree ({'; '.join(problems)})",
            ToolDefinitionWarning,
            stacklevel=4,
        )


def _output_schema(annotation: Any, resolved: Any) -> dict[str, Any] | None:
    ret = resolved if resolved is not None else annotation
    if ret is inspect.Signature.empty or ret is None or ret is type(None) or ret is str:
        return None
    from pydantic import TypeAdapter

    try:
        return clean_schema(TypeAdapter(ret).json_schema())
    except Exception:  # the return type is documentation only; never block the tool on it
        return None
