"""Recipe files: which sources of training data, how many of each, the seed and the leak check.

::

    recipe = load_recipe("src/tooluse/train/recipes/generalist.toml")
    [(s.name, s.count) for s in recipe.sources]       # [('bfcl:simple_python', 120), ...]

A recipe is TOML: Python reads it without another package (``tomllib``; ``tomli`` before 3.11),
it takes comments, so each count can say why it is what it is, and this project's own settings
are TOML already (YAML would add a package and its implicit types: ``no`` is a boolean there).

.. code-block:: toml

    name = "generalist"
    seed = 0

    [leak_check]            # optional; these are the defaults
    n = 8                   # word n-grams (see tooluse.train.leaks)
    threshold = 0.5         # share of a test item's n-grams that makes a leak
    test_size = 200         # test tasks indexed per procedural source
    drop = false            # false: a leak refuses the build; true: the example is left out
    test_splits = []        # more environments whose test split is checked

    [[source]]
    name = "bfcl:simple_python"   # an environment with a gold teacher (tooluse.train.data.TEACHERS)
    count = 120                   # tasks of its train split
    # split = "train"             # the only split a recipe may name
    # answer = "text"             # python-then-submit teachers: say the answer instead
    # options = { data_path = "gsm8k.jsonl" }   # the environment's own options

Every problem is one line naming the file: a missing file, TOML that does not parse, an unknown
key, a source that is no teacher, a split other than ``train``.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tooluse.train.data import ANSWER_STYLES, TEACHERS, TrainDataError, refuse_test_split
from tooluse.train.relevance import RELEVANCE_PREFIX

__all__ = ["LeakCheck", "Recipe", "RecipeSource", "load_recipe", "recipes_dir"]


@dataclass(frozen=True, kw_only=True)
class RecipeSource:
    """One source: an environment's gold conversations on its train split."""

    name: str
    count: int
    split: str = "train"
    answer: str = "submit"
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class LeakCheck:
    """The n-gram overlap check of the training prompts against every test split."""

    n: int = 8
    threshold: float = 0.5
    test_size: int = 200
    drop: bool = False
    test_splits: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """A recipe file, read and checked."""

    name: str
    seed: int
    sources: tuple[RecipeSource, ...]
    leak_check: LeakCheck
    path: Path | None = None
    #: The file's SHA-256 (the run's card names it).
    digest: str = ""


class _Source(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    count: int = Field(ge=1)
    split: str = "train"
    answer: Literal["submit", "text"] = "submit"
    options: dict[str, Any] = Field(default_factory=dict)


class _LeakCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = Field(default=8, ge=1, le=64)
    threshold: float = Field(default=0.5, gt=0, le=1)
    test_size: int = Field(default=200, ge=1)
    drop: bool = False
    test_splits: list[str] = Field(default_factory=list)


class _Recipe(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    seed: int = Field(default=0, ge=0)
    description: str = ""
    leak_check: _LeakCheck = Field(default_factory=_LeakCheck)
    source: list[_Source] = Field(min_length=1)


def recipes_dir() -> Path:
    """The recipes that ship with tooluse (``generalist.toml`` ...)."""
    return Path(__file__).parent / "recipes"


def _toml(text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the train extra installs tomli there
        import tomli as tomllib
    return tomllib.loads(text)


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    if problem["type"] == "extra_forbidden":
        return f"unknown key {where!r}"
    if problem["type"] == "missing":
        return f"missing key {where!r}"
    return f"{where}: {problem['msg']}"


def _check_source(source: _Source, where: str) -> None:
    name = source.name.removeprefix(RELEVANCE_PREFIX)
    if name not in TEACHERS:
        raise TrainDataError(
            f"{where}: no source {source.name!r} (a source is an environment with a gold "
            f"teacher: {', '.join(TEACHERS)}, or relevance:NAME)"
        )
    try:
        refuse_test_split(source.split)
    except TrainDataError as exc:
        raise TrainDataError(f"{where}: {exc}") from None
    if source.answer not in ANSWER_STYLES:  # pragma: no cover - pydantic checks it first
        raise TrainDataError(f"{where}: unknown answer style {source.answer!r}")


def load_recipe(path: str | Path) -> Recipe:
    """The recipe in ``path`` (``TrainDataError`` with one line saying what is wrong)."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise TrainDataError(f"recipe {file}: cannot read it ({exc.strerror or exc})") from None
    try:
        parsed = _Recipe.model_validate(_toml(raw.decode("utf-8")))
    except UnicodeDecodeError:
        raise TrainDataError(f"recipe {file}: not UTF-8 text") from None
    except ValueError as exc:  # tomllib.TOMLDecodeError and pydantic's errors are ValueErrors
        reason = _first_problem(exc) if isinstance(exc, ValidationError) else f"not TOML ({exc})"
        raise TrainDataError(f"recipe {file}: {reason}") from None
    for number, source in enumerate(parsed.source, 1):
        _check_source(source, f"recipe {file}, source {number}")
    check = parsed.leak_check
    return Recipe(
        name=parsed.name,
        seed=parsed.seed,
        sources=tuple(
            RecipeSource(
                name=s.name, count=s.count, split=s.split, answer=s.answer, options=s.options
            )
            for s in parsed.source
        ),
        leak_check=LeakCheck(
            n=check.n,
            threshold=check.threshold,
            test_size=check.test_size,
            drop=check.drop,
            test_splits=tuple(check.test_splits),
        ),
        path=file,
        digest=hashlib.sha256(raw).hexdigest(),
    )
