"""Replays of gold call sequences: the outputs a sample's calls give, the gold arguments with
their references resolved, and which gold call a model's call is.

ComplexFuncBench calls give their recorded responses. NESTFUL v1 (in ``nestful-wrapper``
0.1.7) records none, so each gold call's output is made up, deterministically: an object with
the function's output parameters and every path a later argument refers to, each holding a
value of its own (``skyId_3``, ``1037``...) of the type the consuming parameter wants. A model
that passes an earlier output on must copy that value, which is what nesting asks of it.

A reference ``$var1.a.b$`` is read in the label's memory, as NESTFUL's wrapper reads it: a list
response stands for its first item, a response object with ``data`` for that ``data``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tooluse.envs.nested.data import GoldCall, NestedSample

__all__ = [
    "gold_arguments",
    "gold_outputs",
    "memory_of",
    "references",
    "resolve",
    "same_value",
]

#: ``$var1$`` or ``$var1.path.to.value$`` (labels are ``var`` and a number: ``$100-$200`` in
#: a price range is text).
_REFERENCE = re.compile(r"\$(var\d+(?:\.[^$]+)?)\$")
_NUMBER_TYPES = ("number", "integer", "int", "float", "double")


def references(value: Any) -> list[tuple[str, list[str]]]:
    """The ``(label, path)`` of each reference in an argument value."""
    found: list[tuple[str, list[str]]] = []
    if isinstance(value, str):
        for match in _REFERENCE.finditer(value):
            label, *path = match.group(1).split(".")
            found.append((label, path))
    elif isinstance(value, Mapping):
        for item in value.values():
            found.extend(references(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(references(item))
    return found


def memory_of(output: Any) -> Any:
    """What a reference reads in a call's output (see the module)."""
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except ValueError:
            return output
    if isinstance(output, list):
        return output[0] if output else {}
    if isinstance(output, Mapping):
        inner = output.get("data", output)
        if isinstance(inner, list):
            return inner[0] if inner else {}
        return inner
    return output


def _walk(value: Any, path: Sequence[str]) -> Any:
    for key in path:
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def resolve(value: Any, memory: Mapping[str, Any]) -> Any:
    """An argument value with its references replaced by what they point at (a reference
    inside other text becomes that text with the value written in)."""
    if isinstance(value, str):
        whole = _REFERENCE.fullmatch(value)
        if whole:
            label, *path = whole.group(1).split(".")
            return _walk(memory.get(label), path)

        def text(match: re.Match[str]) -> str:
            label, *path = match.group(1).split(".")
            found = _walk(memory.get(label), path)
            return found if isinstance(found, str) else json.dumps(found)

        return _REFERENCE.sub(text, value)
    if isinstance(value, Mapping):
        return {k: resolve(v, memory) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, memory) for v in value]
    return value


def _parameter_type(sample: NestedSample, call: GoldCall, argument: str) -> str:
    spec = sample.catalog.get(call.name) or {}
    parameter = (spec.get("query_parameters") or {}).get(argument) or {}
    return str(parameter.get("type") or "string").lower()


def _made_up(kind: str, leaf: str, counter: list[int]) -> Any:
    counter[0] += 1
    if kind in _NUMBER_TYPES:
        return 1000 + 37 * counter[0]
    if kind in ("boolean", "bool"):
        return True
    if kind in ("array", "list"):
        return [f"{leaf}_{counter[0]}"]
    if kind in ("object", "dict"):
        return {"id": f"{leaf}_{counter[0]}"}
    return f"{leaf}_{counter[0]}"


def _put(target: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        nested = target.get(key)
        if not isinstance(nested, dict):
            nested = target[key] = {}
        target = nested
    if path and path[-1] not in target:
        target[path[-1]] = value


def _made_up_outputs(sample: NestedSample) -> list[Any]:
    """Outputs for calls without a recorded response (see the module)."""
    counter = [0]
    outputs: list[dict[str, Any]] = [{} for _ in sample.calls]
    index = {c.label: i for i, c in enumerate(sample.calls) if c.label}
    uses: list[tuple[GoldCall | None, str, Any]] = [
        (call, k, v) for call in sample.calls for k, v in call.arguments.items()
    ]
    uses += [(None, k, v) for k, v in sample.result.items()]
    for call, argument, value in uses:
        kind = _parameter_type(sample, call, argument) if call is not None else "string"
        for label, path in references(value):
            if label in index and path:
                _put(outputs[index[label]], path, _made_up(kind, path[-1], counter))
    for i, call in enumerate(sample.calls):
        spec = sample.catalog.get(call.name) or {}
        for name, parameter in (spec.get("output_parameters") or {}).items():
            kind = str((parameter or {}).get("type") or "string").lower()
            _put(outputs[i], [name], _made_up(kind, name, counter))
    return list(outputs)


def gold_outputs(sample: NestedSample) -> list[Any]:
    """What each gold call returns: its recorded response, or made-up data (see the module)."""
    if all(c.response is not None for c in sample.calls):
        return [c.response for c in sample.calls]
    made_up = _made_up_outputs(sample)
    return [
        c.response if c.response is not None else made_up[i] for i, c in enumerate(sample.calls)
    ]


def gold_arguments(sample: NestedSample, outputs: Sequence[Any]) -> list[dict[str, Any]]:
    """Each gold call's arguments with the references resolved against the gold outputs."""
    memory = {c.label: memory_of(o) for c, o in zip(sample.calls, outputs, strict=True) if c.label}
    return [resolve(call.arguments, memory) for call in sample.calls]


def same_value(given: Any, wanted: Any) -> bool:
    """Whether two argument values are the same (as NESTFUL compares them: as text, so that
    ``5`` and ``"5"`` or ``5.0`` agree)."""
    if given == wanted:
        return True
    return _text(given) == _text(wanted)


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)
