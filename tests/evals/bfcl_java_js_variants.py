"""Right and wrong answers for BFCL's Java and JavaScript entries.

A model answers these entries with every argument a string in the function's language
(``"true"``, ``"42L"``, ``"new ArrayList<>(Arrays.asList(1, 2))"``, ``"[1, 2]"``...).
``oracle_calls`` writes the ground truth that way (the first accepted value of each parameter;
a string when the parameter is a string type and a string is accepted). ``variants`` derives
answers from it, each with the verdict it must get: ``None`` where only agreement with BFCL's
checker is asserted (spellings whose verdict is one of BFCL's quirks).
"""

from __future__ import annotations

import copy
import json
from typing import Any

_NO_VALUE = object()
_STRING_TYPES = ("String", "any", "char")


def _doc(entry: Any) -> dict[str, Any]:
    return entry.functions[0]


def _properties(entry: Any) -> dict[str, Any]:
    return _doc(entry)["parameters"]["properties"]


def _item_type(schema: dict[str, Any]) -> str | None:
    items = schema.get("items")
    return items.get("type") if isinstance(items, dict) else None


def _java_literal(value: Any) -> str:
    """A value inside a Java collection or map, read back without a declared type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def _java_item(value: Any, item_type: str | None, *, array: bool) -> str:
    if item_type in ("String", "char"):
        # an Array keeps an item's quotes, an ArrayList drops them: the item as written
        return value if array else json.dumps(value)
    if item_type is None:
        return _java_literal(value)
    return encode_java(value, item_type, None)


def encode_java(value: Any, declared: str, item_type: str | None) -> str:
    """``value`` written as the Java string BFCL reads back as it."""
    if declared == "boolean":
        return "true" if value else "false"
    if declared == "long":
        return f"{value}L"
    if declared == "float":
        return f"{float(value)!r}f"
    if declared in ("byte", "short", "integer", "double"):
        return str(value)
    if declared == "Array" and isinstance(value, list):
        items = ", ".join(_java_item(v, item_type, array=True) for v in value)
        return f"new {item_type or 'Object'}[]{{{items}}}"
    if declared == "ArrayList" and isinstance(value, list):
        items = ", ".join(_java_item(v, item_type, array=False) for v in value)
        return f"new ArrayList<>(Arrays.asList({items}))"
    if declared == "HashMap" and isinstance(value, dict):
        puts = " ".join(f'put("{k}", {_java_literal(v)});' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    return value if isinstance(value, str) else str(value)


def _js_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_js_literal(v) for v in value) + "]"
    return str(value)


def encode_js(value: Any, declared: str, item_type: str | None) -> str:
    """``value`` written as the JavaScript string BFCL reads back as it."""
    if declared == "Boolean":
        return "true" if value else "false"
    if declared == "Bigint":
        return f"{value}n"
    if declared in ("integer", "float"):
        return str(value)
    if declared == "array" and isinstance(value, list):
        return "[" + ", ".join(_js_literal(v) for v in value) + "]"
    if declared == "dict" and isinstance(value, dict):
        pairs = ", ".join(f"{k}: {_js_literal(v)}" for k, v in value.items())
        return "{" + pairs + "}"
    return value if isinstance(value, str) else str(value)


def _materialize(value: Any) -> Any:
    """A dict alternative holds lists of accepted values: take the first of each."""
    if isinstance(value, dict):
        return {k: v[0] if isinstance(v, list) else v for k, v in value.items() if v != [""]}
    return copy.deepcopy(value)


def _chosen(alternatives: list[Any], declared: str) -> Any:
    options = [a for a in alternatives if a != ""]
    if not options:
        return _NO_VALUE
    if declared in _STRING_TYPES:
        strings = [a for a in options if isinstance(a, str)]
        if strings:
            return strings[0]
    return _materialize(options[0])


def oracle_calls(entry: Any, language: str) -> list[dict[str, dict[str, str]]]:
    encode = encode_java if language == "java" else encode_js
    name, accepted = next(iter(entry.ground_truth[0].items()))
    arguments = {}
    for param, alternatives in accepted.items():
        schema = _properties(entry)[param]
        value = _chosen(alternatives, schema["type"])
        if value is not _NO_VALUE:
            arguments[param] = encode(value, schema["type"], _item_type(schema))
    return [{name: arguments}]


def _with(calls: list[dict], update: dict[str, Any]) -> list[dict]:
    out = copy.deepcopy(calls)
    next(iter(out[0].values())).update(update)
    return out


def _accepts_strings(alternatives: list[Any]) -> bool:
    return any(isinstance(a, str) and a != "" for a in alternatives)


def _wrong_value(value: Any, declared: str, language: str) -> str | None:
    """Another value of the same type (written in the language), or None."""
    if declared in ("boolean", "Boolean") and isinstance(value, bool):
        return "false" if value else "true"
    if declared in ("integer", "long", "Bigint") and type(value) is int:
        suffix = {"long": "L", "Bigint": "n"}.get(declared, "")
        return f"{value + 1}{suffix}"
    if declared in ("float", "double") and isinstance(value, (int, float)):
        return f"{float(value) + 1.5!r}" + ("f" if language == "java" else "")
    if declared in _STRING_TYPES and isinstance(value, str):
        return "zq nonsense value 7"
    return None


def _param_variants(
    entry: Any, language: str, calls: list[dict], param: str, alternatives: list[Any]
) -> list[tuple[str, list[dict], bool | None]]:
    schema = _properties(entry)[param]
    declared = schema["type"]
    value = _chosen(alternatives, declared)
    out: list[tuple[str, list[dict], bool | None]] = []
    if value is _NO_VALUE:
        return out
    if not isinstance(value, str):
        # the value itself, not a string in the language: a type error in BFCL
        out.append((f"not_a_string:{param}", _with(calls, {param: value}), False))
    if not _accepts_strings(alternatives) and declared not in _STRING_TYPES:
        out.append((f"unreadable:{param}", _with(calls, {param: "zq!"}), False))
    wrong = _wrong_value(value, declared, language)
    if wrong is not None and not _accepts_strings(alternatives):
        out.append((f"wrong_value:{param}", _with(calls, {param: wrong}), False))
    elif wrong is not None and declared in _STRING_TYPES:
        out.append((f"wrong_value:{param}", _with(calls, {param: wrong}), False))
    # spellings whose verdict is BFCL's: only agreement is asserted
    if language == "java" and declared == "long" and type(value) is int:
        out.append((f"long_without_L:{param}", _with(calls, {param: str(value)}), None))
    if language == "java" and declared == "float":
        out.append((f"float_without_f:{param}", _with(calls, {param: str(value)}), None))
    if declared == "Array" and _item_type(schema) == "String" and isinstance(value, list):
        quoted = "new String[]{" + ", ".join(json.dumps(v) for v in value) + "}"
        out.append((f"quoted_array_items:{param}", _with(calls, {param: quoted}), None))
    if language == "javascript" and declared == "String" and isinstance(value, str):
        out.append((f"quoted_string:{param}", _with(calls, {param: json.dumps(value)}), None))
    if language == "javascript" and declared == "array" and isinstance(value, list):
        spelled = "new Array(" + ", ".join(_js_literal(v) for v in value) + ")"
        out.append((f"new_array:{param}", _with(calls, {param: spelled}), None))
    return out


def variants(entry: Any, language: str) -> list[tuple[str, list[dict], bool | None]]:
    """``(label, decoded calls, verdict or None)`` for one Java or JavaScript entry."""
    calls = oracle_calls(entry, language)
    name, arguments = next(iter(calls[0].items()))
    accepted = next(iter(entry.ground_truth[0].values()))
    required = _doc(entry)["parameters"].get("required") or []
    out: list[tuple[str, list[dict], bool | None]] = [
        ("no_call", [], False),
        ("extra_function", calls + copy.deepcopy(calls), False),
        ("wrong_name", [{name + "_x": dict(arguments)}], False),
        ("extra_param", _with(calls, {"zz_unexpected": "1"}), False),
    ]
    present = [p for p in required if p in arguments]
    if present:
        dropped = copy.deepcopy(calls)
        del dropped[0][name][present[0]]
        out.append((f"missing_required:{present[0]}", dropped, False))
    for param, alternatives in accepted.items():
        if param in _properties(entry) and isinstance(alternatives, list):
            out.extend(_param_variants(entry, language, calls, param, alternatives))
    return out
