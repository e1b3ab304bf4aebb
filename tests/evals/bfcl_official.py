"""BFCL's own AST checker and score aggregation, from the installed ``bfcl-eval`` package.

These modules import bfcl-eval's model registry, which imports every provider SDK that
bfcl-eval supports, and its Java/JavaScript parsers, which need tree-sitter; bfcl-eval is
installed without its dependencies, so those imports fail. What the tests call reads only a few
fields of one model's entry in the registry (its name rule for dotted function names, its
display name and prices) and never parses Java or JavaScript, so while the modules load the
registry is a stand-in holding one model and tree-sitter a stand-in that parses nothing;
afterwards every bfcl-eval module the loading added and the stand-ins leave ``sys.modules``
again (no stand-in reaches other tests).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from collections.abc import Iterator
from typing import Any

#: The one model of the stand-in registry (no underscore: BFCL reads ``_`` in names as ``/``).
MODEL = "tooluse-parity"
_REGISTRY = "bfcl_eval.constants.model_config"


def _model_config() -> Any:
    return types.SimpleNamespace(
        display_name="tooluse parity",
        url="",
        org="",
        license="",
        input_price=None,
        output_price=None,
        underscore_to_dot=False,  # dotted names are compared as they are (a prompting model)
        is_fc_model=False,
    )


class _NoParser:
    """Stands in for tree-sitter's Java/JavaScript parser, which bfcl-eval builds when its
    prompt helpers are imported; the tests never parse Java or JavaScript with it."""

    def __init__(self, *args: Any) -> None:
        pass

    def set_language(self, language: Any) -> None:
        pass

    def parse(self, source: bytes) -> Any:
        raise NotImplementedError("tree-sitter is not installed")


def _stand_ins() -> dict[str, types.ModuleType]:
    registry = types.ModuleType(_REGISTRY)
    registry.MODEL_CONFIG_MAPPING = {MODEL: _model_config()}  # type: ignore[attr-defined]
    tree_sitter = types.ModuleType("tree_sitter")
    tree_sitter.Language = _NoParser  # type: ignore[attr-defined]
    tree_sitter.Parser = _NoParser  # type: ignore[attr-defined]
    out = {_REGISTRY: registry, "tree_sitter": tree_sitter}
    for grammar in ("tree_sitter_java", "tree_sitter_javascript"):
        module = types.ModuleType(grammar)
        module.language = lambda: None  # type: ignore[attr-defined]
        out[grammar] = module
    return out


@contextlib.contextmanager
def official_modules() -> Iterator[Any]:
    """bfcl-eval's modules: ``checker`` (the AST checker), ``helper`` (the leaderboard
    aggregation), ``prompts`` (its model-handler helpers: system prompts, reply decoding) and
    the ``Language`` and ``ReturnFormat`` enums."""
    before = set(sys.modules)
    stand_ins = _stand_ins()
    sys.modules.update(stand_ins)
    try:
        enums = importlib.import_module("bfcl_eval.constants.enums")
        yield types.SimpleNamespace(
            checker=importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker"),
            helper=importlib.import_module("bfcl_eval.eval_checker.eval_runner_helper"),
            prompts=importlib.import_module("bfcl_eval.model_handler.utils"),
            Language=enums.Language,
            ReturnFormat=enums.ReturnFormat,
        )
    finally:
        # bfcl-eval's own modules and the stand-ins go; numpy and pandas, which cannot be
        # imported twice in one process, stay
        for name in set(sys.modules) - before:
            if name in stand_ins or name == "bfcl_eval" or name.startswith("bfcl_eval."):
                del sys.modules[name]
