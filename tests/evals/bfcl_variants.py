"""Right and wrong answers for real BFCL entries, each with the verdict BFCL's checker gives.

``oracle_calls`` builds the calls a perfect model would make from the ground truth (the first
accepted value of each parameter). ``variants`` derives wrong (and a few right) answers from
them; each comes with the verdict BFCL's own AST checker gives it, from BFCL's rules:

- ``reversed``: parallel calls in another order are right (matching is order-free);
- ``drop_required`` / ``wrong_name`` / ``extra_param`` / ``no_call`` / ``two_calls``: wrong;
- ``empty_string``: ``""`` for an optional string (``""`` among its accepted values): right;
- ``empty_list``: ``[]`` for an optional array: right (BFCL reads ``""`` as an empty value);
- ``int_items_in_float_array``: ``[1, 3]`` where only float lists are accepted: wrong
  (``type_error:nested``);
- ``int_for_float``: ``3`` for an accepted ``3.0``: right (Python converts it);
- ``bool_for_int``: ``True`` for an integer: wrong;
- ``wrong_string``: a string none of the accepted ones normalises to: wrong;
- ``underscored_name``: a dotted name given with underscores (not mapped back): wrong;
- ``reused_call``: the first call given twice for two different expected calls: wrong;
- ``irrelevance``: a call is wrong, no call right; ``live_relevance``: the other way round.
"""

from __future__ import annotations

import copy
from typing import Any

from tooluse.evals.bfcl.checker import standardize_string

_NO_VALUE = object()


def _first(alternatives: Any) -> Any:
    """The first accepted value that is not ``""`` (materialised), or ``_NO_VALUE``."""
    if not isinstance(alternatives, list):
        return materialize(alternatives)
    for value in alternatives:
        if value != "":
            return materialize(value)
    return _NO_VALUE


def materialize(value: Any) -> Any:
    """A concrete value from an accepted one: dict alternatives hold lists of values."""
    if isinstance(value, dict):
        out = {}
        for key, alternatives in value.items():
            chosen = _first(alternatives)
            if chosen is not _NO_VALUE:
                out[key] = chosen
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [materialize(v) for v in value]
    return copy.deepcopy(value)


def oracle_calls(entry: Any) -> list[dict[str, dict[str, Any]]]:
    calls = []
    for expected in entry.ground_truth:
        name, params = next(iter(expected.items()))
        arguments = {}
        for param, alternatives in params.items():
            chosen = _first(alternatives)
            if chosen is not _NO_VALUE:
                arguments[param] = chosen
        calls.append({name: arguments})
    return calls


def _doc(entry: Any, name: str) -> dict[str, Any]:
    return next((f for f in entry.functions if f["name"] == name), {})


def _properties(entry: Any, name: str) -> dict[str, Any]:
    return (_doc(entry, name).get("parameters") or {}).get("properties") or {}


def _with(calls: list[dict], index: int, update: dict[str, Any]) -> list[dict]:
    out = copy.deepcopy(calls)
    name = next(iter(out[index]))
    out[index][name].update(update)
    return out


def variants(entry: Any) -> list[tuple[str, list[dict], bool]]:
    """``(label, decoded calls, verdict of BFCL's checker)`` for one entry."""
    category = entry.category
    if "irrelevance" in category or "relevance" in category:
        first = entry.functions[0]["name"] if entry.functions else "any_function"
        calling = [{first: {}}]
        relevant = "irrelevance" not in category
        return [("no_call", [], not relevant), ("a_call", calling, relevant)]
    calls = oracle_calls(entry)
    out: list[tuple[str, list[dict], bool]] = [("no_call", [], False)]
    name, arguments = next(iter(calls[0].items()))
    accepted = next(iter(entry.ground_truth[0].values()))
    doc = _doc(entry, name)
    properties = _properties(entry, name)
    required = (doc.get("parameters") or {}).get("required") or []

    if "parallel" in category and len(calls) > 1:
        out.append(("reversed", calls[::-1], True))
    if "multiple" in category and "parallel" not in category:
        out.append(("two_calls", calls + calls, False))
    present = [p for p in required if p in arguments]
    if present:
        dropped = copy.deepcopy(calls)
        del dropped[0][name][present[0]]
        out.append(("drop_required", dropped, False))
    renamed = copy.deepcopy(calls)
    renamed[0] = {name + "_x": renamed[0][name]}
    out.append(("wrong_name", renamed, False))
    out.append(("extra_param", _with(calls, 0, {"zz_unexpected": 1}), False))
    if "." in name:
        underscored = copy.deepcopy(calls)
        underscored[0] = {name.replace(".", "_"): underscored[0][name]}
        out.append(("underscored_name", underscored, False))

    for param, alternatives in accepted.items():
        schema = properties.get(param)
        if not isinstance(schema, dict) or not isinstance(alternatives, list):
            continue
        declared = schema.get("type")
        options = [a for a in alternatives if a != ""]
        if "" in alternatives and declared == "string":
            out.append((f"empty_string:{param}", _with(calls, 0, {param: ""}), True))
        if "" in alternatives and declared == "array":
            out.append((f"empty_list:{param}", _with(calls, 0, {param: []}), True))
        items = (schema.get("items") or {}).get("type")
        if (
            declared == "array"
            and items == "float"
            and options
            and len(options) == len(alternatives)
            and all(isinstance(o, list) and o and all(type(v) is float for v in o) for o in options)
            and all(float(v).is_integer() for v in options[0])
        ):
            ints = [int(v) for v in options[0]]
            out.append((f"int_items_in_float_array:{param}", _with(calls, 0, {param: ints}), False))
        if declared == "float":
            whole = [o for o in options if type(o) is float and o.is_integer()]
            if whole:
                out.append(
                    (f"int_for_float:{param}", _with(calls, 0, {param: int(whole[0])}), True)
                )
        if declared == "integer" and not any(type(o) is bool for o in options):
            out.append((f"bool_for_int:{param}", _with(calls, 0, {param: True}), False))
        if declared == "string" and options and all(type(o) is str for o in options):
            nonsense = "zq nonsense value 7"
            if standardize_string(nonsense) not in {standardize_string(o) for o in options}:
                out.append((f"wrong_string:{param}", _with(calls, 0, {param: nonsense}), False))

    if "parallel" in category and len(calls) > 1:
        second_name, second_accepted = next(iter(entry.ground_truth[1].items()))
        reused = [calls[0], copy.deepcopy(calls[0]), *calls[2:]]
        if second_name != name:
            out.append(("reused_call", reused, False))
        else:
            second_props = _properties(entry, second_name)
            for param, value in arguments.items():
                alts = second_accepted.get(param)
                if (
                    type(value) is str
                    and isinstance(alts, list)
                    and (second_props.get(param) or {}).get("type") == "string"
                    and standardize_string(value)
                    not in {standardize_string(a) for a in alts if type(a) is str}
                ):
                    out.append(("reused_call", reused, False))
                    break
    return out
