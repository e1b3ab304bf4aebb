"""The BFCL-style AST checker: does a model's decoded calls match the accepted answers?

Decoded calls are ``[{function_name: {param: value}}]``; the ground truth is
``[{function_name: {param: [accepted values]}}]``. The rules follow BFCL's documented checker:

- the function name must match; every required parameter must be given; a given parameter
  must exist in the function doc and in the answer;
- types follow the doc (``float`` also accepts an ``int``; ``bool`` is never an ``int``;
  ``tuple`` is a list); a value whose type matches one of the accepted alternatives instead
  is compared exactly (BFCL's "variable" escape);
- strings are compared after removing spaces and ``,./-_*^``, lowercasing and ``'``→``"``;
  lists compare in order; dicts may not have unknown keys and must have every key whose
  alternatives do not include ``""``;
- a parameter the model left out is fine only if ``""`` is among its accepted values;
- ``parallel`` categories: same number of calls, matched regardless of order; ``multiple``:
  exactly one call; ``irrelevance``: right when there is no call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CheckResult",
    "check_entry",
    "check_irrelevance",
    "check_multiple",
    "check_parallel",
    "check_simple",
    "checker_kind",
    "standardize_string",
]

#: One decoded call: ``{function_name: {param: value}}``.
DecodedCall = Mapping[str, Mapping[str, Any]]

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "float": (float, int),
    "number": (float, int),
    "boolean": (bool,),
    "array": (list, tuple),
    "tuple": (list, tuple),
    "dict": (dict,),
    "object": (dict,),
    "any": (str,),
}


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
    """Which check a category uses: ``irrelevance``, ``parallel``, ``multiple`` or ``simple``."""
    if "irrelevance" in category:
        return "irrelevance"
    if "parallel" in category:
        return "parallel"
    if "multiple" in category:
        return "multiple"
    return "simple"


def _is_type(value: Any, declared: str) -> bool:
    if isinstance(value, bool) and declared not in ("boolean",):
        return False
    allowed = _PYTHON_TYPES.get(declared)
    if allowed is None:
        return True  # an unknown type name: nothing to check
    return isinstance(value, allowed)


def _values_equal(value: Any, accepted: Any) -> bool:
    """One value against one accepted alternative (strings normalised, lists in order)."""
    if isinstance(accepted, str) and isinstance(value, str):
        return standardize_string(value) == standardize_string(accepted)
    if isinstance(accepted, bool) or isinstance(value, bool):
        return type(value) is type(accepted) and value == accepted
    if isinstance(accepted, (int, float)) and isinstance(value, (int, float)):
        return float(value) == float(accepted)
    if isinstance(accepted, (list, tuple)) and isinstance(value, (list, tuple)):
        return len(value) == len(accepted) and all(
            _values_equal(v, a) for v, a in zip(value, accepted, strict=True)
        )
    if isinstance(accepted, Mapping) and isinstance(value, Mapping):
        return _dict_matches(value, accepted) is None
    return bool(value == accepted)


def _dict_matches(value: Mapping[str, Any], accepted: Mapping[str, Any]) -> str | None:
    """``None`` when a dict value matches a dict alternative (values: lists of alternatives)."""
    for key in value:
        if key not in accepted:
            return f"unexpected key {key!r}"
    for key, alternatives in accepted.items():
        options = alternatives if isinstance(alternatives, list) else [alternatives]
        if key not in value:
            if "" not in options:
                return f"missing key {key!r}"
            continue
        if not any(_values_equal(value[key], option) for option in options if option != ""):
            return f"key {key!r}: {value[key]!r} is not one of {options!r}"
    return None


def _check_value(param: str, value: Any, declared: str, accepted: Sequence[Any]) -> CheckResult:
    options = [a for a in accepted if a != ""]
    if not _is_type(value, declared):
        # BFCL's "variable" escape: an alternative of another type is matched exactly.
        exact = [a for a in options if type(a) is type(value)]
        if exact and any(value == a for a in exact):
            return CheckResult.ok()
        return CheckResult.fail(
            f"type_error:{declared}",
            f"parameter {param!r}: expected type {declared}, got {type(value).__name__} "
            f"({value!r})",
        )
    if declared in ("dict", "object") and isinstance(value, Mapping):
        problems = [_dict_matches(value, a) for a in options if isinstance(a, Mapping)]
        if any(p is None for p in problems):
            return CheckResult.ok()
        reason = problems[0] if problems else f"no dict among accepted values {options!r}"
        return CheckResult.fail("value_error:dict", f"parameter {param!r}: {reason}")
    if any(_values_equal(value, option) for option in options):
        return CheckResult.ok()
    kind = (
        "list"
        if isinstance(value, (list, tuple))
        else "string"
        if isinstance(value, str)
        else "value"
    )
    return CheckResult.fail(
        f"value_error:{kind}",
        f"parameter {param!r}: {value!r} is not one of the accepted values {options!r}",
    )


def check_simple(
    function_doc: Mapping[str, Any], call: DecodedCall, expected: DecodedCall
) -> CheckResult:
    """One decoded call against one expected call (name, parameters, types, values)."""
    if len(call) != 1:
        return CheckResult.fail(
            "simple:wrong_shape", f"expected one function per call, got {len(call)}"
        )
    name, arguments = next(iter(call.items()))
    expected_name, accepted = next(iter(expected.items()))
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
        declared = str((properties[param] or {}).get("type", "any"))
        verdict = _check_value(param, value, declared, accepted[param])
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
) -> CheckResult:
    """Several functions offered, exactly one call expected."""
    if len(calls) != 1:
        return CheckResult.fail("multiple:wrong_count", f"expected 1 call, got {len(calls)}")
    if len(expected) != 1:
        return CheckResult.fail("multiple:bad_answer", "the answer must hold exactly one call")
    name = next(iter(expected[0]))
    doc = _doc_for(functions, name)
    if doc is None:
        return CheckResult.fail("multiple:bad_answer", f"no function doc for {name!r}")
    return check_simple(doc, calls[0], expected[0])


def check_parallel(
    functions: Sequence[Mapping[str, Any]],
    calls: Sequence[DecodedCall],
    expected: Sequence[DecodedCall],
) -> CheckResult:
    """The same number of calls, each expected call matched by a distinct call, in any order."""
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
            verdict = check_simple(doc, calls[index], want)
            if verdict.valid:
                unused.remove(index)
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


def check_entry(
    category: str,
    functions: Sequence[Mapping[str, Any]],
    calls: Sequence[DecodedCall],
    expected: Sequence[DecodedCall],
) -> CheckResult:
    """Check one entry's decoded calls with the rule its category calls for."""
    kind = checker_kind(category)
    if kind == "irrelevance":
        return check_irrelevance(calls)
    if kind == "parallel":
        return check_parallel(functions, calls, expected)
    if kind == "multiple":
        return check_multiple(functions, calls, expected)
    if len(calls) != 1:
        return CheckResult.fail("simple:wrong_count", f"expected 1 call, got {len(calls)}")
    if len(expected) != 1:
        return CheckResult.fail("simple:bad_answer", "the answer must hold exactly one call")
    doc = _doc_for(functions, next(iter(expected[0])))
    if doc is None:
        return CheckResult.fail("simple:bad_answer", "the answer names no offered function")
    return check_simple(doc, calls[0], expected[0])
