"""Java and JavaScript entries (``simple_java``, ``simple_javascript``): how BFCL shows their
function docs to the model and how its checker reads the values the model writes.

BFCL asks for every argument of a Java or JavaScript function as a string holding the value in
that language's syntax (``"true"``, ``"42L"``, ``"new int[]{1, 2}"``, ``"[1, 2]"``...). The
model sees each parameter as a string, its description saying which type the string holds;
the checker turns the string back into a value by the declared type and compares that value
with the accepted ones. A string that is not valid syntax for its type stays a string, which
is then a type error (unless the accepted values are strings too, BFCL's "variable" escape).

The rules here are BFCL's, type by type:

- Java: ``byte``/``short``/``integer`` ``-?digits``; ``long`` needs an ``L``; ``float`` needs
  an ``f``; ``double`` has none; ``boolean`` is ``true``/``false``; ``char``, ``String`` and
  ``any`` stay as written; ``Array`` is ``new T[]{a, b}``, ``ArrayList``
  ``new ArrayList<>(Arrays.asList(a, b))`` or ``new ArrayList<>() {{ add(a); }}``, ``HashMap``
  ``new HashMap<>() {{ put("k", v); }}``; items are read by the items type (``String`` and
  ``char`` items of an ``ArrayList`` lose their quotes, those of an ``Array`` keep them);
- JavaScript: ``String`` loses one pair of surrounding quotes; ``integer`` and ``float`` are
  plain numbers, ``Bigint`` ends in ``n``, ``Boolean`` is ``true``/``false``; ``array`` is
  ``[a, b]`` or ``new Array(a, b)`` (a list of lists too), ``dict`` is ``{key: value, ...}``;
  ``any`` stays as written.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

__all__ = [
    "JAVA_TYPES",
    "JS_TYPES",
    "Language",
    "UnsupportedTypeError",
    "convert_java_value",
    "convert_js_value",
    "function_doc_for_model",
    "language_note",
    "language_of",
    "language_types",
]

Language = Literal["python", "java", "javascript"]

#: The Java type names of BFCL's docs and the Python type a converted value must have.
JAVA_TYPES: dict[str, type] = {
    "byte": int,
    "short": int,
    "integer": int,
    "float": float,
    "double": float,
    "long": int,
    "boolean": bool,
    "char": str,
    "Array": list,
    "ArrayList": list,
    "Set": set,
    "HashMap": dict,
    "Hashtable": dict,
    "Queue": list,
    "Stack": list,
    "String": str,
    "any": str,
}
#: The JavaScript type names of BFCL's docs and the Python type a converted value must have.
JS_TYPES: dict[str, type] = {
    "String": str,
    "integer": int,
    "float": float,
    "Bigint": int,
    "Boolean": bool,
    "dict": dict,
    "array": list,
    "any": str,
}
#: Types whose value holds items of the doc's ``items`` type.
NESTED_TYPES = ("Array", "ArrayList", "array")

_NOTES: dict[str, str] = {
    "python": " Note that the provided function is in Python 3 syntax.",
    "java": " Note that the provided function is in Java 8 SDK syntax.",
    "javascript": " Note that the provided function is in JavaScript syntax.",
}
_SYNTAX_NAME = {"java": "Java", "javascript": "JavaScript"}

_INT = re.compile(r"^-?\d+$")
_JAVA_FLOAT = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$")
_JAVA_DOUBLE = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$")
_JAVA_LONG = re.compile(r"^-?\d+[lL]$")
_JS_FLOAT = re.compile(r"^-?\d+(\.\d+)?$")
_JS_BIGINT = re.compile(r"^-?\d+n$")


class UnsupportedTypeError(ValueError):
    """A declared type BFCL has no reading for (its checker fails on it too)."""


def language_of(category: str) -> Language:
    """The language of a category's functions (BFCL: ``javascript`` or ``java`` in the name)."""
    if "javascript" in category:
        return "javascript"
    if "java" in category:
        return "java"
    return "python"


def language_note(language: str) -> str:
    """The sentence BFCL appends to every function description, naming the syntax."""
    return _NOTES.get(language, _NOTES["python"])


def language_types(language: str) -> dict[str, type] | None:
    """The type table of Java or JavaScript (``None`` for Python, whose rules are the checker's)."""
    return {"java": JAVA_TYPES, "javascript": JS_TYPES}.get(language)


def _string_parameter(schema: dict[str, Any], language: str) -> None:
    """One parameter as BFCL shows it for Java/JavaScript: a string, its type in words."""
    syntax = _SYNTAX_NAME[language]
    declared = schema.get("type")
    description = str(schema.get("description", ""))
    if declared == "any":
        description += (
            f" This parameter can be of any type of {syntax} object in string representation."
        )
    else:
        description += f" This is {syntax} {declared} type parameter in string representation."
    if declared in NESTED_TYPES and isinstance(schema.get("items"), Mapping):
        item_type = schema["items"].get("type")
        description += (
            f" The list elements are of type {item_type}; they are not in string representation."
        )
        del schema["items"]
    if language == "javascript" and declared == "dict" and "properties" in schema:
        description += (
            " The dictionary entries have the following schema; they are not in string "
            f"representation. {json.dumps(schema['properties'])}"
        )
        del schema["properties"]
    schema["description"] = description
    schema["type"] = "string"


def function_doc_for_model(doc: Mapping[str, Any], language: str) -> dict[str, Any]:
    """A BFCL function doc as the model is shown it: the syntax note added to its description
    and, for Java and JavaScript, every parameter a string described by its type. The doc
    given is not changed (the checker reads the original types)."""
    shown = copy.deepcopy(dict(doc))
    shown["description"] = str(shown.get("description", "")) + language_note(language)
    if language in _SYNTAX_NAME:
        parameters = shown.get("parameters") or {}
        for schema in (parameters.get("properties") or {}).values():
            if isinstance(schema, dict):
                _string_parameter(schema, language)
    return shown


# -- Java ----------------------------------------------------------------------------------


def _java_literal(text: str) -> Any:
    """A Java literal read without a declared type (items of untyped collections, map values)."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _JAVA_LONG.match(text):
        return int(_strip_suffix(text, "lL"))
    if _JAVA_FLOAT.match(text):
        return float(_strip_suffix(text, "fF"))
    return _number_or_text(text)


def _strip_suffix(text: str, letters: str) -> str:
    """The text without its type letter (``$`` also matches before a final newline)."""
    return re.sub(f"[{letters}]$", "", text)


def _number_or_text(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _java_item(text: str, nested: str | None, *, unquote: bool) -> Any:
    if unquote and nested in ("char", "String"):
        return text[1:-1]
    if nested:
        return convert_java_value(text, nested)
    return _java_literal(text)


def _java_array_list(text: str, nested: str | None) -> Any:
    as_list = re.search(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)", text)
    if as_list:
        parts = as_list.group(1).split(",")
        return [_java_item(p.strip(), nested, unquote=True) for p in parts]
    with_adds = re.search(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", text, re.DOTALL)
    if with_adds:
        added = re.findall(r"add\((.+?)\)", with_adds.group(1))
        return [_java_item(a.strip(), nested, unquote=True) for a in added]
    if re.search(r"new\s+ArrayList<\w*>\(\)", text):
        return []
    return text


def _java_array(text: str, nested: str | None) -> Any:
    found = re.search(r"new\s+\w+\[\]\s*\{(.*?)\}", text)
    if not found:
        return text
    parts = [p.strip() for p in found.group(1).split(",") if p.strip()]
    return [_java_item(p, nested, unquote=False) for p in parts]


def _java_hash_map(text: str) -> Any:
    found = re.search(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", text, re.DOTALL)
    if found:
        puts = found.group(1)
        if not puts.strip():
            return {}
        pairs = re.findall(r"put\(\"(.*?)\",\s*(.*?)\)", puts)
        return {key: _java_literal(value.strip()) for key, value in pairs}
    if re.search(r"new\s+HashMap<.*?>\s*\(\)", text):
        return {}
    return text


def _java_scalar(text: str, declared: str) -> Any:
    """A Java scalar by its declared type; the text itself when it is not valid syntax."""
    if declared in ("byte", "short", "integer"):
        return int(text) if _INT.match(text) else text
    if declared == "float":
        return float(_strip_suffix(text, "fF")) if _JAVA_FLOAT.match(text) else text
    if declared == "double":
        return float(text) if _JAVA_DOUBLE.match(text) else text
    if declared == "long":
        return int(_strip_suffix(text, "lL")) if _JAVA_LONG.match(text) else text
    if declared == "boolean":
        return text == "true" if text in ("true", "false") else text
    return text  # char, String, any: as written


def convert_java_value(text: str, declared: str, nested: str | None = None) -> Any:
    """A Java value written as a string, read as BFCL's checker reads it.

    Raises :class:`UnsupportedTypeError` for a type BFCL cannot read (``Set``, ``Queue``...).
    """
    if declared not in JAVA_TYPES:
        raise UnsupportedTypeError(f"unsupported Java type {declared!r}")
    if declared == "ArrayList":
        return _java_array_list(text, nested)
    if declared == "Array":
        return _java_array(text, nested)
    if declared == "HashMap":
        return _java_hash_map(text)
    if declared in ("Set", "Hashtable", "Queue", "Stack"):
        raise UnsupportedTypeError(f"BFCL does not read Java {declared} values")
    return _java_scalar(text, declared)


# -- JavaScript -----------------------------------------------------------------------------

_JS_2D = re.compile(
    r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)"
)
_JS_1D = re.compile(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")


def _quoted(text: str) -> bool:
    return (text.startswith('"') and text.endswith('"')) or (
        text.startswith("'") and text.endswith("'")
    )


def _js_literal(text: str) -> Any:
    """A JavaScript literal read without a declared type."""
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if _quoted(text):
        return text[1:-1]
    return _number_or_text(text)


def _js_items(body: str | None) -> list[str]:
    body = (body or "").strip()
    return body.split(",") if body else []


def _js_array(code: str, nested: str | None) -> Any:
    two_d = _JS_2D.match(code)
    if two_d:
        rows = []
        for index, row in enumerate(re.findall(r"\[(.*?)\]", two_d.group(0))):
            row = row.strip()
            if index == 0 and row.startswith("["):
                row = row[1:]
            rows.append([_js_literal(item.strip()) for item in row.split(",")])
        return rows
    one_d = _JS_1D.match(code)
    if not one_d:
        return code
    body = one_d.group(1) if one_d.group(1) is not None else one_d.group(2)
    items = [item.strip() for item in _js_items(body)]
    if not nested:
        return [_js_literal(item) for item in items]
    # a quoted item is read with String as its own items type (BFCL passes it along)
    return [
        convert_js_value(item, nested, "String" if item[:1] in ("'", '"') else None)
        for item in items
    ]


def _js_dict(code: str) -> Any:
    if code == "{}":
        return {}
    found = re.match(r"\{(.*?)\}", code)
    if not found:
        return code
    pairs = re.findall(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", found.group(1))
    out: dict[str, Any] = {}
    for key, value in pairs:
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            out[key.strip().strip("'\"")] = _js_collection(value, "array")
        elif value.startswith("{") and value.endswith("}"):
            out[key.strip().strip("'\"")] = _js_collection(value, "dict")
        else:
            out[key.strip().strip("'\"")] = _js_literal(value.strip("'\""))
    return out


def _js_collection(code: str, declared: str, nested: str | None = None) -> Any:
    """An array or dict literal; the text itself when it cannot be read (as in BFCL)."""
    code = code.strip()
    try:
        return _js_array(code, nested) if declared == "array" else _js_dict(code)
    except Exception:  # noqa: BLE001 - BFCL gives the text back whatever the failure
        return code


_JS_SCALARS: dict[str, tuple[re.Pattern[str], Callable[[str], Any]]] = {
    "integer": (_INT, int),
    "float": (_JS_FLOAT, float),
    "Bigint": (_JS_BIGINT, lambda text: int(text[:-1])),
}


def convert_js_value(text: str, declared: str, nested: str | None = None) -> Any:
    """A JavaScript value written as a string, read as BFCL's checker reads it.

    Raises :class:`UnsupportedTypeError` for a type name JavaScript entries do not use.
    """
    if declared not in JS_TYPES:
        raise UnsupportedTypeError(f"unsupported JavaScript type {declared!r}")
    if declared == "String":
        return text[1:-1] if _quoted(text) else text
    if declared in _JS_SCALARS:
        pattern, read = _JS_SCALARS[declared]
        return read(text) if pattern.match(text) else text
    if declared == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if declared in ("dict", "array"):
        return _js_collection(text, declared, nested)
    return text  # any: as written
