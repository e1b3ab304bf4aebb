"""BFCL-format data: entries (question, function docs, ground truth) and their tools.

BFCL keeps prompts and answers in two JSON Lines files paired by line: prompts are
``{"id", "question": [[messages of turn 1], ...], "function": [docs]}`` and answers
``{"id", "ground_truth": [{function_name: {param: [accepted values]}}]}``. Function docs use
BFCL's type names (``dict``, ``float``, ``tuple``, ``any``...), which
:func:`tool_from_bfcl_function` turns into JSON Schema, and may have dotted names, which are
given as underscores to the model and mapped back for scoring.

A small hand-written sample in this format ships with tooluse (:func:`load_sample`).
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from tooluse.envs.splits import check_split, split_of
from tooluse.evals.bfcl.format_sensitivity import (
    FORMAT_CONFIGS,
    FORMAT_SENSITIVITY,
    format_sensitivity_ids,
)
from tooluse.evals.bfcl.java_js import function_doc_for_model, language_note, language_of
from tooluse.messages import ChatMessage
from tooluse.tools.definition import ToolDefinition, sanitize_tool_name

__all__ = [
    "BFCL_CATEGORIES",
    "CATEGORY_COLLECTIONS",
    "LANGUAGE_CATEGORIES",
    "MULTI_TURN_CATEGORY_NAMES",
    "PYTHON_CATEGORIES",
    "SAMPLE_CATEGORIES",
    "SEPARATE_CATEGORIES",
    "BFCLEntry",
    "bfcl_data_dir",
    "category_of",
    "expand_categories",
    "unknown_category_message",
    "load_bfcl_categories",
    "load_bfcl_category",
    "load_bfcl_entries",
    "load_format_sensitivity",
    "load_sample",
    "select_entries",
    "split_of_entry",
    "tool_from_bfcl_function",
    "tools_for_entry",
]

SAMPLE_CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance")

#: BFCL v4's single-turn Python categories, as the installed ``bfcl-eval`` package names them.
PYTHON_CATEGORIES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
#: The single-turn categories whose functions are Java or JavaScript (arguments as strings).
LANGUAGE_CATEGORIES = ("simple_java", "simple_javascript")
#: Every single-turn category of BFCL v4 (what ``tooluse eval bfcl`` runs), in BFCL's order.
BFCL_CATEGORIES = (
    "simple_python",
    *LANGUAGE_CATEGORIES,
    *PYTHON_CATEGORIES[1:],
)
#: The multi-turn categories: played as environments (``tooluse eval env bfcl:NAME``).
MULTI_TURN_CATEGORY_NAMES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
#: Categories reported apart from the overall score (BFCL's non-scoring ones).
SEPARATE_CATEGORIES = (FORMAT_SENSITIVITY,)
#: Names of several categories at once (BFCL's collections restricted to single-turn ones).
CATEGORY_COLLECTIONS: dict[str, tuple[str, ...]] = {
    "single_turn": BFCL_CATEGORIES,
    "non_live": tuple(c for c in BFCL_CATEGORIES if not c.startswith("live_")),
    "live": tuple(c for c in BFCL_CATEGORIES if c.startswith("live_")),
    "python": PYTHON_CATEGORIES,
    "non_python": LANGUAGE_CATEGORIES,
}
#: Categories that have no answer file: the verdict depends only on whether a call is made.
NO_ANSWER_CATEGORIES = ("irrelevance", "live_irrelevance", "live_relevance")
_ALIASES = {"simple": "simple_python"}
BFCL_INSTALL_HINT = "pip install --no-deps 'bfcl-eval==2026.3.23' (see the tooluse[eval] extra)"

PYTHON_NOTE = language_note("python")

_TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}


@dataclass(frozen=True, kw_only=True)
class BFCLEntry:
    """One test case: the first turn's messages, the function docs and the accepted answers.

    ``ground_truth`` is empty for irrelevance entries (no call is the right answer).
    """

    id: str
    category: str
    question: tuple[tuple[dict[str, Any], ...], ...]
    functions: tuple[dict[str, Any], ...]
    ground_truth: tuple[dict[str, Any], ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def messages(self) -> list[ChatMessage]:
        """The first turn as chat messages."""
        if not self.question or not self.question[0]:
            raise ValueError(f"entry {self.id!r} has no question")
        out = []
        for message in self.question[0]:
            role = message.get("role", "user")
            if role not in ("system", "user", "assistant"):
                raise ValueError(f"entry {self.id!r}: unsupported role {role!r} in the question")
            out.append(ChatMessage(role=role, content=str(message.get("content", ""))))
        return out


def category_of(entry_id: str, path: str | Path | None = None) -> str:
    """The category of an entry: from a ``BFCL_*_<category>.json`` file name, else its id."""
    if path is not None:
        stem = Path(path).stem
        found = re.match(r"BFCL_(?:v\d+_|sample_)?(.+)$", stem)
        if found:
            return found.group(1)
    base = re.sub(r"_\d+(?:-\d+)*$", "", entry_id)
    return base or entry_id


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path.name} line {number}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict) or "id" not in row:
            raise ValueError(f"{path.name} line {number}: expected an object with an 'id'")
        rows.append(row)
    return rows


def load_bfcl_entries(
    question_path: str | Path,
    answer_path: str | Path | None = None,
    *,
    category: str | None = None,
) -> list[BFCLEntry]:
    """Entries of one BFCL prompt file, paired by line with its answer file (when given).

    Raises ``ValueError`` naming the line when the files do not line up.
    """
    qpath = Path(question_path)
    questions = _read_jsonl(qpath)
    answers: list[dict[str, Any]] = []
    if answer_path is not None:
        answers = _read_jsonl(Path(answer_path))
        if len(answers) != len(questions):
            raise ValueError(
                f"{qpath.name} has {len(questions)} entries but its answer file has {len(answers)}"
            )
    entries = []
    for index, row in enumerate(questions):
        truth: Sequence[Any] = ()
        if answers:
            if answers[index]["id"] != row["id"]:
                raise ValueError(
                    f"line {index + 1}: question id {row['id']!r} does not match answer id "
                    f"{answers[index]['id']!r}"
                )
            truth = answers[index].get("ground_truth") or ()
        functions = row.get("function") or []
        if not isinstance(functions, list) or not all(isinstance(f, dict) for f in functions):
            raise ValueError(f"entry {row['id']!r}: 'function' must be a list of function docs")
        question = row.get("question") or []
        turns = tuple(tuple(turn) for turn in question) if question else ()
        entries.append(
            BFCLEntry(
                id=str(row["id"]),
                category=category or category_of(str(row["id"]), qpath),
                question=turns,
                functions=tuple(functions),
                ground_truth=tuple(truth),
            )
        )
    return entries


def load_sample(categories: Iterable[str] | None = None) -> list[BFCLEntry]:
    """The shipped hand-written sample (about 20 entries), optionally only some categories."""
    wanted = tuple(categories) if categories is not None else SAMPLE_CATEGORIES
    unknown = sorted(set(wanted) - set(SAMPLE_CATEGORIES))
    if unknown:
        raise ValueError(
            f"unknown sample categories {', '.join(unknown)}; known: {', '.join(SAMPLE_CATEGORIES)}"
        )
    root = resources.files("tooluse.evals") / "data"
    entries: list[BFCLEntry] = []
    for name in wanted:
        question = root / f"BFCL_sample_{name}.json"
        answer = root / "possible_answer" / f"BFCL_sample_{name}.json"
        with resources.as_file(question) as qpath, resources.as_file(answer) as apath:
            entries.extend(
                load_bfcl_entries(qpath, apath if apath.exists() else None, category=name)
            )
    return entries


def bfcl_data_dir() -> Path:
    """The ``data`` folder of the installed ``bfcl-eval`` package (found without importing
    it: its ``__init__`` pulls in dependencies that the data does not need)."""
    from importlib.util import find_spec

    spec = find_spec("bfcl_eval")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        data = Path(location) / "data"
        if data.is_dir():
            return data
    raise FileNotFoundError(f"real BFCL data needs the bfcl-eval package: {BFCL_INSTALL_HINT}")


def load_bfcl_category(name: str, *, data_dir: str | Path | None = None) -> list[BFCLEntry]:
    """All entries of one BFCL v4 category (``simple`` is an alias of ``simple_python``),
    from the installed ``bfcl-eval`` package or ``data_dir``, paired with their answers."""
    category = _ALIASES.get(name, name)
    if category == FORMAT_SENSITIVITY:
        return load_format_sensitivity(data_dir=data_dir)
    if category not in BFCL_CATEGORIES:
        raise ValueError(unknown_category_message(name))
    root = Path(data_dir) if data_dir is not None else bfcl_data_dir()
    question = root / f"BFCL_v4_{category}.json"
    answer = root / "possible_answer" / f"BFCL_v4_{category}.json"
    if not question.is_file():
        raise FileNotFoundError(f"BFCL data file {question} is missing")
    if category not in NO_ANSWER_CATEGORIES and not answer.is_file():
        raise FileNotFoundError(f"BFCL answer file {answer} is missing")
    entries = load_bfcl_entries(
        question, answer if category not in NO_ANSWER_CATEGORIES else None, category=category
    )
    if not entries:
        raise ValueError(f"BFCL category {category!r} has no entries in {question}")
    return entries


def load_format_sensitivity(*, data_dir: str | Path | None = None) -> list[BFCLEntry]:
    """The format_sensitivity category: BFCL's 200 chosen entries, each once per prompt format
    (26), with ids ``format_sensitivity_<n>:<format>:<original id>`` in BFCL's order."""
    root = Path(data_dir) if data_dir is not None else bfcl_data_dir()
    sources: list[BFCLEntry] = []
    for category, ids in format_sensitivity_ids(root).items():
        wanted = set(ids)
        sources.extend(e for e in load_bfcl_category(category, data_dir=root) if e.id in wanted)
    entries = []
    for number, (source, config) in enumerate((s, c) for s in sources for c in FORMAT_CONFIGS):
        new_id = f"{FORMAT_SENSITIVITY}_{number}:{config}:{source.id}"
        entries.append(replace(source, id=new_id, category=FORMAT_SENSITIVITY))
    return entries


def unknown_category_message(name: str) -> str:
    """The error for a name that is no single-turn category: every valid name, and where the
    multi-turn categories are run instead."""
    message = f"unknown BFCL category {name!r}"
    if name in MULTI_TURN_CATEGORY_NAMES:
        message += f" for this command (run it with: tooluse eval env bfcl:{name})"
    collections = ", ".join(CATEGORY_COLLECTIONS)
    return (
        f"{message}; valid categories: {', '.join(BFCL_CATEGORIES)} (simple = simple_python); "
        f"apart from the score: {', '.join(SEPARATE_CATEGORIES)}; collections: {collections}; "
        f"multi-turn (tooluse eval env bfcl:NAME): {', '.join(MULTI_TURN_CATEGORY_NAMES)}"
    )


def expand_categories(names: Iterable[str]) -> list[str]:
    """Category names with collections expanded and aliases resolved, each once, in order.

    Raises ``ValueError`` listing every valid name on a name that is not one.
    """
    out: list[str] = []
    for name in names:
        expanded = CATEGORY_COLLECTIONS.get(name, (_ALIASES.get(name, name),))
        for category in expanded:
            if category not in BFCL_CATEGORIES and category not in SEPARATE_CATEGORIES:
                raise ValueError(unknown_category_message(name))
            if category not in out:
                out.append(category)
    return out


def load_bfcl_categories(
    names: Iterable[str], *, data_dir: str | Path | None = None
) -> list[BFCLEntry]:
    """Entries of several categories or collections (``live``, ``non_python``...), in the
    order given (each category once). Every name is checked before any file is read."""
    entries: list[BFCLEntry] = []
    for category in expand_categories(names):
        entries.extend(load_bfcl_category(category, data_dir=data_dir))
    return entries


def select_entries(
    entries: Sequence[BFCLEntry],
    *,
    sample: int | None = None,
    seed: int = 0,
    limit: int | None = None,
    split: str | None = None,
) -> list[BFCLEntry]:
    """Per category: the entries of ``split`` (``"train"`` or ``"test"``, disjoint by entry id;
    see :mod:`tooluse.envs.splits`), a reproducible random ``sample`` of them (kept in data
    order) drawn with ``seed``, then the first ``limit``. The same seed gives the same items on
    every machine."""
    entries = [e for e in entries if split is None or split_of_entry(e) == check_split(split)]
    if sample is not None and sample < 1:
        raise ValueError("sample must be at least 1")
    if limit is not None and limit < 1:
        raise ValueError("limit must be at least 1")
    by_category: dict[str, list[BFCLEntry]] = {}
    for entry in entries:
        by_category.setdefault(entry.category, []).append(entry)
    chosen: list[BFCLEntry] = []
    for category, group in by_category.items():
        picked = group
        if sample is not None and sample < len(group):
            rng = random.Random(f"{seed}:{category}")  # str seeds hash the same everywhere
            indices = sorted(rng.sample(range(len(group)), sample))
            picked = [group[i] for i in indices]
        if limit is not None:
            picked = picked[:limit]
        chosen.extend(picked)
    return chosen


def split_of_entry(entry: BFCLEntry) -> str:
    """The split (``"train"`` or ``"test"``) of one BFCL entry."""
    return split_of(entry.id, salt=f"bfcl:{entry.category}")


def _convert_schema(schema: Any) -> Any:
    """A BFCL parameter schema as JSON Schema (recursively, BFCL type names mapped)."""
    if isinstance(schema, list):
        return [_convert_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = _TYPE_MAP.get(value, value)
            if value == "float":
                out["format"] = "float"
        elif key in ("properties",) and isinstance(value, Mapping):
            out[key] = {name: _convert_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf"):
            out[key] = _convert_schema(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def tool_from_bfcl_function(doc: Mapping[str, Any], *, language: str = "python") -> ToolDefinition:
    """A tool (without implementation) from a BFCL function doc; ``metadata["bfcl_name"]``
    keeps the original (possibly dotted) name. The description ends with BFCL's note naming
    the ``language``; Java and JavaScript parameters are strings holding a value of the
    declared type, as BFCL shows them (:func:`~tooluse.evals.bfcl.java_js.function_doc_for_model`)."""
    original = str(doc.get("name", ""))
    if not original:
        raise ValueError("a BFCL function doc needs a 'name'")
    shown = function_doc_for_model(doc, language)
    parameters = _convert_schema(shown.get("parameters") or {"type": "object", "properties": {}})
    parameters["type"] = "object"
    parameters.setdefault("properties", {})
    tool = ToolDefinition.from_schema(
        sanitize_tool_name(original.replace(".", "_")),
        parameters,
        description=str(shown.get("description", "")),
    )
    tool.metadata["bfcl_name"] = original
    return tool


def tools_for_entry(entry: BFCLEntry) -> tuple[tuple[ToolDefinition, ...], dict[str, str]]:
    """The entry's tools and the map from tool name back to the BFCL function name."""
    language = language_of(entry.category)
    tools = tuple(tool_from_bfcl_function(doc, language=language) for doc in entry.functions)
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise ValueError(f"entry {entry.id!r}: two functions map to the same tool name")
    return tools, {t.name: t.metadata["bfcl_name"] for t in tools}
