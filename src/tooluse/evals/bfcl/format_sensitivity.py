"""BFCL v4's format_sensitivity category: the same 200 entries under 26 prompt formats.

BFCL picks 200 entries of its Python AST categories (``BFCL_v4_format_sensitivity.json`` lists
their ids) and asks each under 26 system prompts for models without native function calling.
A format is a configuration ``ret_fmt=...&tool_call_tag=...&func_doc_fmt=...&prompt_fmt=...
&style=...``:

- ``ret_fmt``, how the model must write its calls: ``python`` (``[f(a=1)]``), ``json``
  (``[{"function": "f", "parameters": {...}}]``), ``verbose_xml`` (``<param name value type/>``)
  or ``concise_xml`` (``<param name type>value</param>``);
- ``tool_call_tag``: whether the calls go inside ``<TOOLCALL>...</TOOLCALL>``;
- ``func_doc_fmt``: the function docs written as ``python`` docstrings, ``xml`` or ``json``;
- ``prompt_fmt``: ``plaintext`` or ``markdown`` sections; ``style``: ``classic`` or
  ``experimental`` wording.

The 24 combinations of the first three (plain text, classic) plus one markdown and one
experimental variant of BFCL's default make the 26. An entry's id is
``format_sensitivity_<n>:<format>:<original id>``; it is checked with the rules of its original
category. The result is the accuracy per format, their largest difference and standard
deviation (in points), reported apart from the overall score, as BFCL does.
"""

from __future__ import annotations

import ast
import json
import re
import statistics
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooluse.evals.bfcl.java_js import function_doc_for_model

__all__ = [
    "FORMAT_CONFIGS",
    "FORMAT_SENSITIVITY",
    "PromptFormat",
    "decode_formatted_reply",
    "format_of_entry",
    "format_sensitivity_summary",
    "format_system_prompt",
    "is_format_sensitivity",
    "scoring_category",
]

FORMAT_SENSITIVITY = "format_sensitivity"

_RETURN_FORMATS = ("python", "json", "verbose_xml", "concise_xml")
_DOC_FORMATS = ("python", "xml", "json")
_DEFAULT = "ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt={}&style={}"

#: The 26 formats, in BFCL's order.
FORMAT_CONFIGS: tuple[str, ...] = (
    *(
        f"ret_fmt={ret}&tool_call_tag={tag}&func_doc_fmt={doc}&prompt_fmt=plaintext&style=classic"
        for ret in _RETURN_FORMATS
        for tag in ("True", "False")
        for doc in _DOC_FORMATS
    ),
    _DEFAULT.format("markdown", "classic"),
    _DEFAULT.format("plaintext", "experimental"),
)

# -- BFCL's prompt text, verbatim: it is the benchmark's input ---------------------------------

_OUTPUT_FORMATS = {
    "python": "[func_name1(params_name1=params_value1, params_name2=params_value2...), "
    "func_name2(params)]",
    "json": '```json\n[{"function":"func_name1","parameters":{"param1":"value1","param2":'
    '"value2"...}},{"function":"func_name2","parameters":{"param":"value"}}]\n```',
    "verbose_xml": '<functions><function name="func_name1"><params><param name="param1" '
    'value="value1" type="type1"/><param name="param2" value="value2" type="type2"/>...'
    '</params></function><function name="func_name2"><params><param name="param3" '
    'value="value3" type="type3"/></params></function></functions>',
    "concise_xml": '<functions><function name="func_name1"><param name="param1" type="type1">'
    'value1</param><param name="param2" type="type2">value2</param>...</function><function '
    'name="func_name2"><param name="param3" type="type3">value</param></function></functions>',
}
_XML_TYPES = (
    "The type fields of the parameters in your function calls must be one of: string, "
    "integer, float, boolean, array, dict, or tuple."
)
_PARAM_TYPES = {"python": "", "json": "", "verbose_xml": _XML_TYPES, "concise_xml": _XML_TYPES}
_STYLES: dict[str, dict[str, str]] = {
    "classic": {
        "persona": "You are an expert in composing functions.",
        "task": "You are given a question and a set of possible functions. Based on the "
        "question, you will need to make one or more function/tool calls to achieve the "
        "purpose. If none of the functions can be used, point it out. If the given question "
        "lacks the parameters required by the function, also point it out.",
        "no_tag": "You should only return the function calls in your response.\n\nIf you "
        "decide to invoke any of the function(s), you MUST put it in the format of "
        "{output_format}. {param_types} You SHOULD NOT include any other text in the response.",
        "tag": "You should only return the function calls in the <TOOLCALL> section. If you "
        "decide to invoke any of the function(s), you MUST put it in the format of "
        "<TOOLCALL>{output_format}</TOOLCALL>. {param_types} You SHOULD NOT include any other "
        "text in the response.",
        "multiturn": "At each turn, you should try your best to complete the tasks requested "
        "by the user within the current turn. Continue to output functions to call until you "
        "have fulfilled the user's request to the best of your ability. Once you have no more "
        "functions to call, the system will consider the current turn complete and proceed to "
        "the next turn or task.",
        "tools": "Here is a list of functions in {format} format that you can invoke.\n"
        "{functions}\n",
    },
    "experimental": {
        "persona": "You are an expert in generating structured function calls.",
        "task": "You are given a user query and a set of available functions. Your task is to "
        "produce one or more function/tool calls to fulfill the user's request. If no suitable "
        "function exists, or required parameters are missing, clearly indicate this.",
        "no_tag": "Respond with only the function calls.\n\nYou MUST format it exactly as "
        "{output_format}. {param_types} Do NOT include any other text.",
        "tag": "Return only the function calls enclosed in <TOOLCALL> tags.\n\nYou MUST format "
        "it exactly as <TOOLCALL>{output_format}</TOOLCALL>. {param_types} Do NOT include any "
        "other text.",
        "multiturn": "At every turn, aim to complete the user's tasks within that turn. "
        "Continue emitting function calls until the request is satisfied to the best of your "
        "ability. Once no more calls are needed, the system will proceed to the next turn.",
        "tools": "Below is a list of callable functions in the {format} style:\n{functions}\n",
    },
}
_LAYOUTS = {
    "plaintext": "{persona}{task}\n\n{calls}\n\n{multiturn}\n\n{tools}",
    "markdown": "{persona}\n\n## Task\n{task}\n\n## Tool Call Format\n{calls}\n\n"
    "## Multi-turn Behavior\n{multiturn}\n\n## Available Tools\n{tools}",
}
_CONFIG = re.compile(
    r"^ret_fmt=(python|json|verbose_xml|concise_xml)&tool_call_tag=(True|False)"
    r"&func_doc_fmt=(python|xml|json)&prompt_fmt=(plaintext|markdown)"
    r"&style=(classic|experimental)$"
)


@dataclass(frozen=True, kw_only=True)
class PromptFormat:
    """One of the formats: how the calls are written, tagged, the docs shown, the prompt laid
    out and worded."""

    return_format: str
    tool_call_tag: bool
    doc_format: str
    prompt_format: str
    style: str

    @classmethod
    def parse(cls, config: str) -> PromptFormat:
        found = _CONFIG.match(config)
        if not found:
            raise ValueError(f"not a BFCL prompt format: {config!r}")
        ret, tag, doc, layout, style = found.groups()
        return cls(
            return_format=ret,
            tool_call_tag=tag == "True",
            doc_format=doc,
            prompt_format=layout,
            style=style,
        )


def is_format_sensitivity(category: str) -> bool:
    return FORMAT_SENSITIVITY in category


def format_of_entry(entry_id: str) -> PromptFormat:
    """The format of a format_sensitivity entry (the middle part of its id)."""
    parts = entry_id.split(":")
    if len(parts) != 3:
        raise ValueError(f"{entry_id!r} is not a format_sensitivity id (two ':' expected)")
    return PromptFormat.parse(parts[1])


def scoring_category(category: str, entry_id: str) -> str:
    """The category whose checking rules apply: a format_sensitivity entry is checked as the
    entry it copies (``parallel``, ``live_multiple``...), named by the end of its id."""
    if is_format_sensitivity(category):
        return entry_id.rsplit(":", 1)[-1]
    return category


# -- the function docs in the three formats ----------------------------------------------------


def _xml_param(name: str, meta: Mapping[str, Any], required: Any, level: int) -> str:
    indent = " " * level * 2
    kind = str(meta.get("type", "string"))
    desc = str(meta.get("description", ""))
    is_required = "true" if required is None or name in required else "false"
    if "enum" in meta:
        desc += f" Enum values: {meta['enum']}."
    items = meta.get("items")
    if isinstance(items, Mapping) and "type" in items:
        kind = f"{kind}[{items['type']}]"
    elif "additionalProperties" in meta:
        kind = f"{kind}[{meta['additionalProperties'].get('type', 'string')}]"
    attributes = f'name="{name}" type="{kind}" required="{is_required}"'
    if "default" in meta:
        attributes += f' default="{meta["default"]!r}"'
    # BFCL drops every comma of the opening tag, those inside values included
    parts = [f"{indent}<param {attributes.replace(',', '')}>\n", f"{indent}  <desc>{desc}</desc>\n"]
    if "properties" in meta:
        parts.append(f"{indent}  <params>\n")
        for child, child_meta in meta["properties"].items():
            parts.append(_xml_param(child, child_meta, meta.get("required"), level + 2))
        parts.append(f"{indent}  </params>\n")
    parts.append(f"{indent}</param>\n")
    return "".join(parts)


def _xml_docs(functions: Sequence[Mapping[str, Any]]) -> str:
    blocks = []
    for doc in functions:
        schema = doc.get("parameters") or {}
        params = "".join(
            _xml_param(name, meta, schema.get("required"), 2)
            for name, meta in (schema.get("properties") or {}).items()
        )
        blocks.append(
            f'<function name="{doc["name"]}">\n  <desc>{doc.get("description", "")}</desc>\n'
            f"  <params>\n{params}  </params>\n</function>\n"
        )
    return "\n".join(blocks)


_PY_PRIMITIVES = {"string": "str", "number": "float", "integer": "int", "boolean": "bool"}


def _py_type(meta: Mapping[str, Any]) -> str:
    kind = str(meta.get("type", "string"))
    if kind in _PY_PRIMITIVES:
        return _PY_PRIMITIVES[kind]
    if kind in ("array", "list", "tuple") and "items" in meta:
        return f"list[{_py_type(meta['items'])}]"
    if kind in ("object", "dict"):
        extra = meta.get("additionalProperties")
        return f"dict[str, {_py_type(extra)}]" if extra is not None else "dict"
    return kind


def _py_param(name: str, meta: Mapping[str, Any], depth: int) -> list[str]:
    desc = str(meta.get("description", ""))
    if "enum" in meta:
        desc += f" Enum values: {meta['enum']}."
    default = f", default={meta['default']!r}" if "default" in meta else ""
    lines = [f"{' ' * (8 + 4 * depth)}{name} ({_py_type(meta)}{default}): {desc}\n"]
    for child, child_meta in (meta.get("properties") or {}).items():
        lines.extend(_py_param(child, child_meta, depth + 1))
    return lines


def _python_docs(functions: Sequence[Mapping[str, Any]]) -> str:
    docs = []
    for doc in functions:
        lines = [
            f"# Function: {doc['name']}\n",
            '    """\n',
            f"    {doc.get('description', '')}\n\n",
        ]
        properties = (doc.get("parameters") or {}).get("properties") or {}
        if properties:
            lines.append("    Args:\n")
            for name, meta in properties.items():
                lines.extend(_py_param(name, meta, 0))
        lines.append('    """\n')
        docs.extend(["".join(lines), "\n"])
    return "\n\n".join(docs)


def format_system_prompt(config: str | PromptFormat, functions: Sequence[Mapping[str, Any]]) -> str:
    """BFCL's system prompt in one format, with the function docs (Python note added)."""
    chosen = PromptFormat.parse(config) if isinstance(config, str) else config
    docs = [function_doc_for_model(f, "python") for f in functions]
    if chosen.doc_format == "xml":
        shown = _xml_docs(docs)
    elif chosen.doc_format == "python":
        shown = _python_docs(docs)
    else:
        shown = json.dumps(docs, indent=4)
    style = _STYLES[chosen.style]
    calls = style["tag" if chosen.tool_call_tag else "no_tag"].format(
        output_format=_OUTPUT_FORMATS[chosen.return_format],
        param_types=_PARAM_TYPES[chosen.return_format],
    )
    return _LAYOUTS[chosen.prompt_format].format(
        persona=style["persona"],
        task=style["task"],
        calls=calls,
        multiturn=style["multiturn"],
        tools=style["tools"].format(format=chosen.doc_format, functions=shown),
    )


# -- decoding the reply ------------------------------------------------------------------------

DecodedCalls = list[dict[str, dict[str, Any]]]


def _call_name(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _py_value(node: ast.expr) -> Any:
    if isinstance(node, ast.Name):  # a bare name is kept as its text (a variable)
        return node.id
    if isinstance(node, ast.Call):
        return _py_call(node) if node.keywords else ast.unparse(node)
    if isinstance(node, ast.List):
        return [_py_value(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_py_value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return {
            _py_value(k) if k is not None else None: _py_value(v)
            for k, v in zip(node.keys, node.values, strict=True)
        }
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return "..."
    return ast.literal_eval(node)


def _py_call(node: ast.Call) -> dict[str, dict[str, Any]]:
    """Keyword arguments only (BFCL ignores positional ones)."""
    return {_call_name(node.func): {k.arg: _py_value(k.value) for k in node.keywords if k.arg}}


def _decode_python(body: str) -> DecodedCalls:
    tree = ast.parse(body.strip().strip("'"), mode="eval").body
    if isinstance(tree, ast.Call):
        return [_py_call(tree)]
    elements = getattr(tree, "elts", None)
    if elements is None or not all(isinstance(e, ast.Call) for e in elements):
        raise ValueError("not a list of calls")
    return [_py_call(e) for e in elements]


def _decode_json(body: str) -> DecodedCalls:
    whole = re.search(r"\[.*\]", body, re.DOTALL)
    text = whole.group(0) if whole else body
    calls = re.search(r"\[\s*{.*?}\s*(?:,\s*{.*?}\s*)*\]", text, re.DOTALL)
    if calls:
        text = calls.group(0)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []  # BFCL reads JSON it cannot parse as no call
    return [{c["function"]: c["parameters"]} for c in data if isinstance(c, dict)]


def _xml_value(raw: str, kind: str) -> Any:
    if kind == "integer":
        return int(raw)
    if kind == "float":
        return float(raw)
    if kind == "boolean":
        return raw.lower() == "true"
    if kind == "null":
        return None
    if kind in ("array", "tuple", "object", "dict"):
        return ast.literal_eval(raw)
    return raw


def _decode_xml(body: str, *, verbose: bool) -> DecodedCalls:
    found = re.search(r"<functions>(.*?)</functions>", body, re.DOTALL)
    if not found:
        raise ValueError("no <functions> element")
    calls = []
    for function in ET.fromstring(found.group(0)).findall("function"):
        arguments: dict[str, Any] = {}
        if verbose:
            container = function.find("params")
            for param in (container if container is not None else function).findall("param"):
                kind = param.attrib.get("type", "string")
                value = _xml_value(param.attrib.get("value", ""), kind)
                arguments[str(param.attrib.get("name"))] = value
        else:
            for param in function.findall("param"):
                kind = param.attrib.get("type", "string")
                arguments[param.attrib["name"]] = _xml_value((param.text or "").strip(), kind)
        calls.append({function.attrib["name"]: arguments})
    return calls


def decode_formatted_reply(text: str, config: str | PromptFormat) -> DecodedCalls | None:
    """The calls of a reply written in ``config``'s format, decoded as BFCL decodes them
    (``None``: it does not decode, which BFCL counts as wrong)."""
    chosen = PromptFormat.parse(config) if isinstance(config, str) else config
    body = text.strip("`\n ")
    body = body if body.startswith("[") else "[" + body
    body = body if body.endswith("]") else body + "]"
    if chosen.tool_call_tag:
        tagged = re.search(r"<TOOLCALL>(.*?)</TOOLCALL>", body, re.DOTALL)
        if not tagged:
            return None
        body = tagged.group(1).strip()
    try:
        if chosen.return_format == "python":
            return _decode_python(body)
        if chosen.return_format == "json":
            return _decode_json(body)
        return _decode_xml(body, verbose=chosen.return_format == "verbose_xml")
    except (SyntaxError, ValueError, TypeError, KeyError, AttributeError, ET.ParseError):
        return None
    except (RecursionError, MemoryError):
        return None


# -- loading and summing up --------------------------------------------------------------------


def format_sensitivity_ids(data_dir: Path) -> dict[str, list[str]]:
    """``{category: [entry ids]}`` of the 200 entries (BFCL's id file)."""
    path = data_dir / f"BFCL_v4_{FORMAT_SENSITIVITY}.json"
    if not path.is_file():
        raise FileNotFoundError(f"BFCL data file {path} is missing")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path.name}: expected an object of category -> ids")
    return {str(k): [str(i) for i in v] for k, v in data.items() if v}


def format_sensitivity_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Accuracy per format of the format_sensitivity records, and across formats the largest
    difference, the standard deviation and the variance in points (BFCL's figures, rounded
    to 2 decimals). ``None`` when there are no such records."""
    counts: dict[str, list[int]] = {}
    for record in records:
        if not is_format_sensitivity(str(record.get("category", ""))):
            continue
        config = str(record.get("id", "")).split(":")
        count = counts.setdefault(config[1] if len(config) == 3 else "?", [0, 0])
        count[0] += bool(record.get("valid"))
        count[1] += 1
    if not counts:
        return None
    by_config = {
        c: {"correct": n[0], "total": n[1], "accuracy": n[0] / n[1]}
        for c, n in sorted(counts.items(), key=lambda kv: _order(kv[0]))
    }
    accuracies = [v["accuracy"] for v in by_config.values()]
    several = len(accuracies) > 1
    return {
        "formats": by_config,
        "max_delta": round((max(accuracies) - min(accuracies)) * 100, 2) if several else 0.0,
        "std": round(statistics.stdev(accuracies) * 100, 2) if several else 0.0,
        "variance": round(statistics.variance(accuracies) * 100**2, 2) if several else 0.0,
        "missing_formats": [c for c in FORMAT_CONFIGS if c not in by_config],
    }


def _order(config: str) -> int:
    return FORMAT_CONFIGS.index(config) if config in FORMAT_CONFIGS else len(FORMAT_CONFIGS)
