"""The BFCL AST checker: do a model's decoded calls match the accepted answers?

Decoded calls are ``[{function_name: {param: value}}]``; the ground truth is
``[{function_name: {param: [accepted values]}}]``. The verdicts follow BFCL's own checker
(``bfcl_eval.eval_checker.ast_eval.ast_checker``, Python rules) case by case:

- the function name must match exactly (BFCL's dotted names included); every required
  parameter must be given; a given parameter must exist in the function doc and in the answer;
  a parameter the model left out is fine only if ``""`` is among its accepted values;
- types follow the doc exactly (``bool`` is never an ``int``); an ``int`` for a ``float`` is
  converted first; a tuple for a ``tuple`` parameter is a list; an ``array``/``tuple`` value
  has its items checked one level deep against the items type (``[1, 3]`` is not an array of
  floats when the accepted list holds floats);
- when the accepted values are of another type than the doc says (BFCL's "variable" escape),
  a value of that type is accepted and compared exactly;
- strings are compared after removing spaces and ``,./-_*^``, lowercasing and ``'`` → ``"``;
  lists compare in order, their string items normalised the same way; a ``""`` among the
  accepted values also accepts ``""`` for a string and ``[]`` for a list (BFCL treats an empty
  value like an omitted one); dicts may not have unknown keys and must have every key whose
  alternatives do not include ``""``; lists of dicts compare dict by dict, in order;
- Java and JavaScript (``simple_java``, ``simple_javascript``): every value must be a string,
  read by its declared type with BFCL's rules (:mod:`tooluse.evals.bfcl.java_js`), then
  checked as above against that type's Python type (no ``int`` to ``float`` conversion);
- ``parallel`` categories: same number of calls, each expected call matched greedily by a
  distinct call, in any order; ``multiple``: exactly one call; other AST categories: one call,
  checked against the first function doc; ``irrelevance``: right when there is no call;
  ``relevance``: right when there is at least one.

Error types use tooluse's names (``simple:missing_required``, ``type_error:nested``...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse.evals.bfcl.java_js import (
    NESTED_TYPES,
    convert_java_value,
    convert_js_value,
    language_of,
    language_types,
)

__all__ = [
    "CheckResult",
    "check_entry",
    "check_irrelevance",
    "check_multiple",
    "check_parallel",
    "check_relevance",
    "check_simple",
    "checker_kind",
    "standardize_string",
]

#: One decoded call: ``{function_name: {param: value}}``.
DecodedCall = Mapping[str, Mapping[str, Any]]

#: BFCL's Python type names and the one Python type a value of each must have.
_PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "number": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "object": dict,
    "any": str,
}
_NESTED = ("array", "tuple")


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """The verdict: ``valid``, and when not, an ``error_type`` (``"type_error:..."``) and why."""

    valid: bool
    error_type: str = ""
    errors: tuple[str, ...] = ()

    @classmethod
    def ok(cls) -> CheckResult:
        return cls(valid=True)

    @classmethod
    def fail(cls, error_type: str, *errors: str) -> CheckResult:
        return cls(valid=False, error_type=error_type, errors=tuple(errors))


def standardize_string(text: str) -> str:
    """BFCL's string normalisation: drop spaces and ``,./-_*^``, lowercase, ``'`` → ``"``."""
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def checker_kind(category: str) -> str:
    """Which check a category uses: ``irrelevance``, ``relevance``, ``parallel``,
    ``multiple`` or ``simple``."""
    if "irrelevance" in category:
        return "irrelevance"
    if "relevance" in category:
        return "relevance"
    if "parallel" in category:
        return "parallel"
    if "multiple" in category:
        return "multiple"
    return "simple"


def _std(value: Any) -> Any:
    return standardize_string(value) if type(value) is str else value


def _answer_type(accepted: Sequence[Any]) -> type | None:
    """The type of the first accepted value that is not ``""`` (the "variable" escape)."""
    return next((type(a) for a in accepted if a != ""), None)


def _type_check(
    param: str, value: Any, declared: str, expected: type, nested: type | None, accepted: Any
) -> tuple[CheckResult, bool]:
    """``(verdict, is_variable)`` for one value: its type, one level of nesting, the escape."""
    answer_type = _answer_type(accepted) if isinstance(accepted, (list, tuple)) else None
    is_variable = answer_type is not None and answer_type is not expected
    members: Any = value  # a list here whenever ``nested`` is set
    if type(value) is expected:
        if nested is None:
            return CheckResult.ok(), is_variable
        for alternative in accepted if isinstance(accepted, (list, tuple)) else ():
            if type(alternative) is not list or all(
                _type_check(param, item, nested.__name__, nested, None, alternative)[0].valid
                for item in members
            ):
                return CheckResult.ok(), is_variable
        return CheckResult.fail(
            "type_error:nested",
            f"parameter {param!r}: expected {declared} of {nested.__name__}, got {value!r}",
        ), is_variable
    if answer_type is not None and type(value) is answer_type:
        return CheckResult.ok(), True
    return CheckResult.fail(
        f"type_error:{declared}",
        f"parameter {param!r}: expected type {declared}, got {type(value).__name__} ({value!r})",
    ), is_variable


def _key_options(accepted: Any) -> list[Any]:
    """The accepted values of one dict key. BFCL iterates over what the answer holds, so an
    answer written as a bare string accepts only its single characters (as in BFCL)."""
    if isinstance(accepted, (list, str)):
        return list(accepted)
    return [accepted]


def _dict_problem(value: Mapping[str, Any], accepted: Mapping[str, Any]) -> str | None:
    """``None`` when a dict value matches one dict alternative (its values: lists of values)."""
    for key, item in value.items():
        if key not in accepted:
            return f"unexpected key {key!r}"
        options = _key_options(accepted[key])
        if _std(item) not in [_std(o) for o in options]:
            return f"key {key!r}: {item!r} is not one of {options!r}"
    for key, options in accepted.items():
        if key not in value and "" not in options:
            return f"missing key {key!r}"
    return None


def _check_dict(param: str, value: Mapping[str, Any], accepted: Sequence[Any]) -> CheckResult:
    reason = f"no dict among the accepted values {list(accepted)!r}"
    for alternative in accepted:
        if alternative == "":
            continue
        if not isinstance(alternative, Mapping):
            reason = f"accepted value {alternative!r} is not a dict"
            continue
        problem = _dict_problem(value, alternative)
        if problem is None:
            return CheckResult.ok()
        reason = problem
    return CheckResult.fail("value_error:dict", f"parameter {param!r}: {reason}")


def _check_list_of_dicts(param: str, value: list[Any], accepted: Sequence[Any]) -> CheckResult:
    reason = "no accepted list of dicts"
    for alternative in accepted:
        if not isinstance(alternative, (list, tuple, str)) or len(value) != len(alternative):
            reason = f"expected {len(alternative)} dicts, got {len(value)}"
            continue
        problems = [
            _dict_problem(item, want)
            if isinstance(item, Mapping) and isinstance(want, Mapping)
            else "not a dict"
            for item, want in zip(value, alternative, strict=True)
        ]
        bad = next((p for p in problems if p is not None), None)
        if bad is None:
            return CheckResult.ok()
        reason = bad
    return CheckResult.fail("value_error:list_dict", f"parameter {param!r}: {reason}")


def _python_types(doc: Mapping[str, Any]) -> tuple[type | None, type | None]:
    """The Python type a value of the declared type must have, and its items' type."""
    declared = str(doc.get("type", "any"))
    nested: type | None = None
    if declared in _NESTED:
        items = doc.get("items")
        if isinstance(items, Mapping):
            nested = _PYTHON_TYPES.get(str(items.get("type")))
    return _PYTHON_TYPES.get(declared), nested


def _read_language_value(
    param: str, value: Any, doc: Mapping[str, Any], language: str
) -> tuple[CheckResult | None, Any, type | None, type | None]:
    """A Java/JavaScript value, given as a string, read by its declared type:
    ``(failure or None, value, expected type, items type)``."""
    table = language_types(language) or {}
    declared = str(doc.get("type", "any"))
    short = "js" if language == "javascript" else language
    if declared not in table:
        failure = CheckResult.fail(
            "type_error:unknown_type", f"parameter {param!r}: {language} has no type {declared!r}"
        )
        return failure, value, None, None
    if type(value) is not str:
        failure = CheckResult.fail(
            f"type_error:{short}",
            f"parameter {param!r}: expected a string holding a {language} {declared}, "
            f"got {type(value).__name__} ({value!r})",
        )
        return failure, value, None, None
    items = doc.get("items") if declared in NESTED_TYPES else None
    item_type = str(items.get("type")) if isinstance(items, Mapping) else None
    convert = convert_java_value if language == "java" else convert_js_value
    try:
        converted = convert(value, declared, item_type)
    except ValueError as exc:  # a type BFCL cannot read, or a literal it chokes on
        return (
            CheckResult.fail("type_error:unsupported", f"parameter {param!r}: {exc}"),
            value,
            None,
            None,
        )
    nested = table.get(item_type) if item_type is not None else None
    return None, converted, table[declared], nested


def _check_param(
    param: str, value: Any, doc: Mapping[str, Any], accepted: Any, language: str = "python"
) -> CheckResult:
    declared = str(doc.get("type", "any"))
    if language == "python":
        expected, nested = _python_types(doc)
    else:
        failure, value, expected, nested = _read_language_value(param, value, doc, language)
        if failure is not None:
            return failure
    if expected is None:  # a type name BFCL's Python rules do not know: compare values only
        ok = value in accepted if isinstance(accepted, (list, tuple)) else value == accepted
        if ok:
            return CheckResult.ok()
        return CheckResult.fail("value_error:value", f"parameter {param!r}: {value!r}")
    if declared == "tuple" and type(value) is tuple:
        value = list(value)
    if language == "python" and declared == "float" and type(value) is int:
        value = float(value)
    verdict, is_variable = _type_check(param, value, declared, expected, nested, accepted)
    if not verdict.valid:
        return verdict
    options = list(accepted) if isinstance(accepted, (list, tuple)) else [accepted]
    if not is_variable:
        by_type = _check_by_type(param, value, expected, nested, options)
        if by_type is not None:
            return by_type
    if value in options:
        return CheckResult.ok()
    return CheckResult.fail(
        "value_error:value",
        f"parameter {param!r}: {value!r} is not one of the accepted values {options!r}",
    )


def _check_by_type(
    param: str, value: Any, expected: type, nested: type | None, options: list[Any]
) -> CheckResult | None:
    """The value checks BFCL makes per declared type (``None``: compare values as they are)."""
    if expected is dict:
        return _check_dict(param, value, options)
    if expected is list and nested is dict:
        return _check_list_of_dicts(param, value, options)
    if expected is str:
        if _std(value) in [_std(o) for o in options if type(o) is str]:
            return CheckResult.ok()
        return CheckResult.fail(
            "value_error:string",
            f"parameter {param!r}: {value!r} is not one of the accepted values {options!r}",
        )
    if expected is list:
        # "" is an empty sequence here, so [] matches an optional list (as in BFCL)
        wanted = [[_std(i) for i in o] for o in options if isinstance(o, (list, tuple, str))]
        if [_std(i) for i in value] in wanted:
            return CheckResult.ok()
        return CheckResult.fail(
            "value_error:list",
            f"parameter {param!r}: {value!r} is not one of the accepted values {options!r}",
        )
    return None


def check_simple(
    function_doc: Mapping[str, Any],
    call: DecodedCall,
    expected: DecodedCall,
    *,
    language: str = "python",
) -> CheckResult:
    """One decoded call against one expected call (name, parameters, types, values);
    ``language`` (``python``, ``java``, ``javascript``) picks the type rules."""
    if len(call) != 1:
        return CheckResult.fail(
            "simple:wrong_shape", f"expected one function per call, got {len(call)}"
        )
    name, arguments = next(iter(call.items()))
    accepted = next(iter(expected.values()))
    expected_name = str(function_doc.get("name", next(iter(expected))))
    if name != expected_name:
        return CheckResult.fail(
            "simple:wrong_func_name", f"called {name!r}, expected {expected_name!r}"
        )
    if not isinstance(arguments, Mapping):
        return CheckResult.fail("simple:wrong_shape", f"arguments of {name!r} are not an object")
    schema = function_doc.get("parameters") or {}
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for required in schema.get("required") or ():
        if required not in arguments:
            return CheckResult.fail(
                "simple:missing_required", f"required parameter {required!r} is missing"
            )
    for param, value in arguments.items():
        if param not in properties or param not in accepted:
            return CheckResult.fail("simple:unexpected_param", f"unexpected parameter {param!r}")
        verdict = _check_param(param, value, properties[param] or {}, accepted[param], language)
        if not verdict.valid:
            return verdict
    for param, options in accepted.items():
        if param not in arguments and "" not in options:
            return CheckResult.fail(
                "simple:missing_optional",
                f"parameter {param!r} is missing and has no default among {options!r}",
            )
    return CheckResult.ok()


def _doc_for(functions: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((f for f in functions if f.get("name") == name), None)


def check_multiple(
    functions: Sequence[Mapping[str, Any]],
    calls: Sequence[DecodedCall],
    expected: Sequence[DecodedCall],
    *,
    language: str = "python",
) -> CheckResult:
    """Several functions offered, exactly one call expected."""
    if len(calls) != len(expected):
        return CheckResult.fail(
            "multiple:wrong_count", f"expected {len(expected)} call, got {len(calls)}"
        )
    if len(expected) != 1:
        return CheckResult.fail("multiple:bad_answer", "the answer must hold exactly one call")
    name = next(iter(expected[0]))
    doc = _doc_for(functions, name)
    if doc is None:
        return CheckResult.fail("multiple:bad_answer", f"no function doc for {name!r}")
    return check_simple(doc, calls[0], expected[0], language=language)


def check_parallel(
    functions: Sequence[Mapping[str, Any]],
    calls: Sequence[DecodedCall],
    expected: Sequence[DecodedCall],
    *,
    language: str = "python",
) -> CheckResult:
    """The same number of calls, each expected call matched by a distinct call, in any order
    (greedily, in order, as BFCL does)."""
    if len(calls) != len(expected):
        return CheckResult.fail(
            "parallel:wrong_count", f"expected {len(expected)} calls, got {len(calls)}"
        )
    unused = list(range(len(calls)))
    for want in expected:
        name = next(iter(want))
        doc = _doc_for(functions, name)
        if doc is None:
            return CheckResult.fail("parallel:bad_answer", f"no function doc for {name!r}")
        reasons: list[str] = []
        for index in unused:
            verdict = check_simple(doc, calls[index], want, language=language)
            if verdict.valid:
                unused.remove(index)  # each call answers one expectation only
                break
            reasons.extend(verdict.errors)
        else:
            return CheckResult.fail(
                "parallel:no_match",
                f"no call matches the expected {name!r} call",
                *reasons[:3],
            )
    return CheckResult.ok()


def check_irrelevance(calls: Sequence[DecodedCall]) -> CheckResult:
    """Right when the model made no call (none of the functions fits the question)."""
    if calls:
        names = ", ".join(next(iter(c), "?") for c in calls)
        return CheckResult.fail("irrelevance:called", f"expected no call, got: {names}")
    return CheckResult.ok()


def check_relevance(calls: Sequence[DecodedCall]) -> CheckResult:
    """Right when the model made at least one call (BFCL's live_relevance rule)."""
    if any(len(c) for c in calls):
        return CheckResult.ok()
    return CheckResult.fail("relevance:no_call", "expected at least one call, got none")


def check_entry(
    category: str,
    functions: Sequence[Mapping[str, Any]],
    calls: Sequence[DecodedCall],
    expected: Sequence[DecodedCall],
) -> CheckResult:
    """Check one entry's decoded calls with the rule its category calls for (and the type
    rules of its language: ``simple_java`` and ``simple_javascript`` are not Python)."""
    kind = checker_kind(category)
    language = language_of(category)
    if kind == "irrelevance":
        return check_irrelevance(calls)
    if kind == "relevance":
        return check_relevance(calls)
    if kind == "parallel":
        return check_parallel(functions, calls, expected, language=language)
    if kind == "multiple":
        return check_multiple(functions, calls, expected, language=language)
    if len(calls) != 1:
        return CheckResult.fail("simple:wrong_count", f"expected 1 call, got {len(calls)}")
    if len(expected) != 1 or not functions:
        return CheckResult.fail("simple:bad_answer", "the answer must hold exactly one call")
    return check_simple(functions[0], calls[0], expected[0], language=language)
