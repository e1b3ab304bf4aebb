"""BFCL's own AST checker and score aggregation, from the installed ``bfcl-eval`` package.

Both modules import bfcl-eval's model registry, which imports every provider SDK that bfcl-eval
supports; bfcl-eval is installed without its dependencies, so that import fails. What the tests
call reads only a few fields of one model's entry in the registry (its name rule for dotted
function names, its display name and prices), so while the modules load the registry is a
stand-in holding one model, and afterwards every bfcl-eval module the loading added leaves
``sys.modules`` again (the stand-in never reaches other tests).
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


@contextlib.contextmanager
def official_modules() -> Iterator[tuple[Any, Any, Any]]:
    """``(ast_checker module, eval_runner_helper module, Language enum)``."""
    before = set(sys.modules)
    registry = types.ModuleType(_REGISTRY)
    registry.MODEL_CONFIG_MAPPING = {MODEL: _model_config()}  # type: ignore[attr-defined]
    sys.modules[_REGISTRY] = registry
    try:
        checker = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
        helper = importlib.import_module("bfcl_eval.eval_checker.eval_runner_helper")
        enums = importlib.import_module("bfcl_eval.constants.enums")
        yield checker, helper, enums.Language
    finally:
        # bfcl-eval's own modules go (they hold the stand-in); numpy and pandas, which cannot
        # be imported twice in one process, stay
        for name in set(sys.modules) - before:
            if name == "bfcl_eval" or name.startswith("bfcl_eval."):
                del sys.modules[name]
