"""A BFCL evaluation as engine work: one JSON record per entry, a summary per run directory.

::

    from tooluse.evals.bfcl_job import BFCLOptions, run_bfcl_job
    entries = select_entries(load_bfcl_categories(["simple_python", "parallel"]), sample=20)
    summary = run_bfcl_job(entries, "local", BFCLOptions(), "runs/smollm2")

``run_bfcl_job`` writes ``results.jsonl`` (one line per entry as it finishes: id, category,
model, options, prompt, tools offered, raw output, ``decoded`` in BFCL's
``[{"func": {"arg": value}}]`` shape or null when the output could not be decoded, expected
answer, ``valid``, ``error_type``, ``error``, latency, tokens) and ``summary.json``
(per-category accuracy with counts, error types, items/min). Running it again on the same
directory resumes (see :mod:`tooluse.evals.engine`). The model is loaded once per worker.

Prompt styles: ``native`` offers the tools the way the backend takes them (native function
calling, else the ``--format`` text parser); ``bfcl`` is BFCL's own prompt for models without
function calling: the function docs as JSON in a system prompt asking for
``[func(a=1), ...]``, and the reply decoded as Python calls.
"""

from __future__ import annotations

import ast
import functools
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from tooluse.evals.bfcl_checker import CheckResult, check_entry, checker_kind
from tooluse.evals.bfcl_data import PYTHON_NOTE, BFCLEntry, tools_for_entry
from tooluse.evals.engine import EngineError, WorkItem, read_results, run_items
from tooluse.messages import ChatMessage
from tooluse.providers.base import SamplingParams

__all__ = [
    "BFCL_SYSTEM_PROMPT",
    "BFCLOptions",
    "bfcl_system_prompt",
    "decode_python_calls",
    "few_shot_prompt",
    "entry_from_payload",
    "entry_payload",
    "load_backend",
    "make_bfcl_worker",
    "run_bfcl_job",
    "score_bfcl_entry",
    "summarize_records",
]

#: BFCL's default system prompt for prompting (non function-calling) models, verbatim.
BFCL_SYSTEM_PROMPT = (
    "You are an expert in composing functions.You are given a question and a set of possible "
    "functions. Based on the question, you will need to make one or more function/tool calls "
    "to achieve the purpose. If none of the functions can be used, point it out. If the given "
    "question lacks the parameters required by the function, also point it out.\n\n"
    "You should only return the function calls in your response.\n\n"
    "If you decide to invoke any of the function(s), you MUST put it in the format of "
    "[func_name1(params_name1=params_value1, params_name2=params_value2...), "
    "func_name2(params)].  You SHOULD NOT include any other text in the response.\n\n"
    "At each turn, you should try your best to complete the tasks requested by the user within "
    "the current turn. Continue to output functions to call until you have fulfilled the "
    "user's request to the best of your ability. Once you have no more functions to call, the "
    "system will consider the current turn complete and proceed to the next turn or task.\n\n"
    "Here is a list of functions in json format that you can invoke.\n{functions}\n"
)


@dataclass(frozen=True, kw_only=True)
class BFCLOptions:
    """What decides a score, recorded with every result.

    ``parallel=None`` allows parallel calls only in the parallel categories.
    ``constrained`` switches the local backend's call grammar (other backends ignore it).
    """

    tool_choice: Literal["auto", "required"] = "auto"
    parallel: bool | None = None
    constrained: bool = True
    format: str | None = None
    prompt_style: Literal["native", "bfcl"] = "native"
    max_tokens: int | None = None
    temperature: float = 0.0
    tools_top_k: int | None = None
    few_shot: bool = False

    def __post_init__(self) -> None:
        if self.tool_choice not in ("auto", "required"):
            raise ValueError("tool_choice must be 'auto' or 'required'")
        if self.prompt_style not in ("native", "bfcl"):
            raise ValueError("prompt_style must be 'native' or 'bfcl'")
        if self.tools_top_k is not None and self.tools_top_k < 1:
            raise ValueError("tools_top_k must be at least 1")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BFCLOptions:
        return cls(**dict(data))

    def parallel_for(self, category: str) -> bool:
        return self.parallel if self.parallel is not None else "parallel" in category


def load_backend(spec: str) -> Any:
    """The backend a model string names: ``local`` is the embedded model, anything else goes
    to ``tooluse.load_model`` (``openai:gpt-4o``, ``anthropic:...``)."""
    if spec in ("local", "local:default", "local:"):
        from tooluse.local import LlamaCppBackend

        return LlamaCppBackend.default()
    from tooluse.providers import load_model

    return load_model(spec)


# -- entries as engine payloads ----------------------------------------------------------------


def entry_payload(entry: BFCLEntry) -> dict[str, Any]:
    """An entry as JSON-able data (the engine's item payload)."""
    return {
        "id": entry.id,
        "category": entry.category,
        "question": [list(turn) for turn in entry.question],
        "functions": list(entry.functions),
        "ground_truth": list(entry.ground_truth),
    }


def entry_from_payload(data: Mapping[str, Any]) -> BFCLEntry:
    return BFCLEntry(
        id=str(data["id"]),
        category=str(data["category"]),
        question=tuple(tuple(turn) for turn in data.get("question") or ()),
        functions=tuple(data.get("functions") or ()),
        ground_truth=tuple(data.get("ground_truth") or ()),
    )


# -- BFCL's prompt style -----------------------------------------------------------------------


def bfcl_system_prompt(functions: Sequence[Mapping[str, Any]]) -> str:
    """BFCL's system prompt with the function docs (Python note added) as indented JSON."""
    docs = [{**f, "description": str(f.get("description", "")) + PYTHON_NOTE} for f in functions]
    return BFCL_SYSTEM_PROMPT.format(functions=json.dumps(docs, indent=4))


# -- few-shot examples -------------------------------------------------------------------------

# Made-up functions (not BFCL's), one per kind of answer the categories ask for: several calls
# for several requests, one call, and no call when no function fits.
_FEW_SHOT_EXAMPLES: tuple[tuple[str, tuple[tuple[str, dict[str, Any]], ...], str], ...] = (
    (
        "What is the weather in Paris and in Rome?",
        (("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})),
        "",
    ),
    ("Find the area of a circle of radius 3.", (("circle_area", {"radius": 3}),), ""),
    (
        "Who wrote Hamlet?",
        (),
        "None of the functions fits; Hamlet was written by William Shakespeare.",
    ),
)


def few_shot_prompt(backend: Any, prompt_style: str = "native") -> str:
    """Worked examples for the system prompt, the calls written as the model must write them
    (Python calls for the ``bfcl`` style, the local model's call format, else JSON)."""
    from tooluse.messages import ToolCall

    profile = getattr(backend, "profile", None)
    lines = ["Examples of answers (their functions are only examples, not available now):"]
    for question, calls, text in _FEW_SHOT_EXAMPLES:
        if not calls:
            answer = text
        elif prompt_style == "bfcl":
            rendered = (
                f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
                for name, args in calls
            )
            answer = f"[{', '.join(rendered)}]"
        elif profile is not None:
            answer = profile.render_calls([ToolCall(name=n, arguments=a) for n, a in calls])
        else:
            answer = json.dumps([{"name": n, "arguments": a} for n, a in calls])
        lines.append(f"Question: {question}\nAnswer: {answer}")
    return "\n\n".join(lines)


def _with_system(messages: Sequence[ChatMessage], text: str) -> list[ChatMessage]:
    """``messages`` with ``text`` put before the content of their system message (or as one)."""
    if messages and messages[0].role == "system":
        return [ChatMessage.system(f"{text}\n\n{messages[0].content}"), *messages[1:]]
    return [ChatMessage.system(text), *messages]


def _call_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_call_name(node.value)}.{node.attr}"
    raise ValueError(f"not a function name: {ast.dump(node)[:60]}")


def _value(node: ast.expr) -> Any:
    if isinstance(node, ast.Name):  # a bare name: BFCL keeps it as a string (a variable)
        return node.id
    if isinstance(node, ast.Call):
        return {_call_name(node.func): {k.arg: _value(k.value) for k in node.keywords if k.arg}}
    if isinstance(node, ast.List):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return {
            _value(k) if k is not None else None: _value(v)
            for k, v in zip(node.keys, node.values, strict=True)
        }
    return ast.literal_eval(node)


def decode_python_calls(text: str) -> list[dict[str, dict[str, Any]]] | None:
    """BFCL's decoding of a prompting model's reply: strip backticks and newlines, wrap in
    ``[...]``, parse as Python; keyword arguments only. ``None`` when it does not decode."""
    body = text.strip("`\n ")
    if body.startswith("python"):
        body = body[len("python") :].strip()
    if not body.startswith("["):
        body = "[" + body
    if not body.endswith("]"):
        body = body + "]"
    try:
        tree = ast.parse(body, mode="eval").body
        elements = tree.elts if isinstance(tree, ast.List) else [tree]
        calls = []
        for element in elements:
            if not isinstance(element, ast.Call) or element.args:
                return None
            arguments = {k.arg: _value(k.value) for k in element.keywords if k.arg is not None}
            calls.append({_call_name(element.func): arguments})
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return None
    return calls


# -- scoring one entry -------------------------------------------------------------------------


def _verdict(entry: BFCLEntry, decoded: list[dict[str, Any]] | None) -> CheckResult:
    if decoded is None:
        if checker_kind(entry.category) == "irrelevance":
            return CheckResult.ok()  # an output that is not a call is no call
        return CheckResult.fail("decoder_failed", "the reply does not decode as function calls")
    return check_entry(entry.category, entry.functions, decoded, entry.ground_truth)


class _RawRecorder:
    """The backend, keeping the last turn's raw output (the loop keeps only parsed calls)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self.raw: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def generate_with_tools(self, *args: Any, **kwargs: Any) -> Any:
        result = self._backend.generate_with_tools(*args, **kwargs)
        raw = getattr(result, "raw", None)
        if isinstance(raw, Mapping) and isinstance(raw.get("output"), str):
            self.raw = raw["output"]
        return result


def _record_head(entry: BFCLEntry, model: str, options: BFCLOptions) -> dict[str, Any]:
    return {
        "id": entry.id,
        "category": entry.category,
        "model": model,
        "options": options.to_dict(),
        "prompt": [dict(m) for m in entry.question[0]] if entry.question else [],
        "expected": list(entry.ground_truth),
    }


def score_bfcl_entry(
    backend: Any,
    entry: BFCLEntry,
    options: BFCLOptions,
    *,
    parser: Any = None,
    model: str = "",
) -> dict[str, Any]:
    """Ask the backend once about ``entry`` and return its result record."""
    from tooluse.loop import run

    record = _record_head(entry, model, options)
    started = time.perf_counter()
    try:
        messages = entry.messages()
        tools, names = tools_for_entry(entry)
    except ValueError as exc:  # counted and listed in the summary, never dropped
        return {
            **record,
            "tools": [],
            "raw": "",
            "decoded": None,
            "valid": False,
            "error_type": "convert_error",
            "error": str(exc),
            "latency": 0.0,
            "tokens": {"input": 0, "output": 0},
        }
    params = SamplingParams(
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        parallel_tool_calls=options.parallel_for(entry.category),
    )
    offered = list(tools)
    if options.few_shot:
        messages = _with_system(messages, few_shot_prompt(backend, options.prompt_style))
    if options.prompt_style == "bfcl":
        messages = _with_system(messages, bfcl_system_prompt(entry.functions))
        kwargs: dict[str, Any] = {"tools": (), "max_tool_iters": 0, "params": params}
    else:
        if options.tools_top_k is not None:
            from tooluse.retrieval import latest_request_text, select_tools

            offered = list(select_tools(tools, latest_request_text(messages), options.tools_top_k))
        kwargs = {
            "tools": offered,
            "max_tool_iters": 0,
            "params": params,
            "tool_choice": options.tool_choice,
            "tool_call_parser": parser,
        }
    record["tools"] = [names.get(t.name, t.name) for t in offered]
    recorder = _RawRecorder(backend)
    try:
        result = run(recorder, messages, **kwargs)
    except Exception as exc:  # one failing request must not lose the rest of the run
        return {
            **record,
            "raw": "",
            "decoded": None,
            "valid": False,
            "error_type": "backend_error",
            "error": f"{type(exc).__name__}: {exc}",
            "latency": round(time.perf_counter() - started, 4),
            "tokens": {"input": 0, "output": 0},
        }
    reply = next((m for m in result.new_messages if m.role == "assistant"), None)
    raw = str(reply.metadata.get("raw_text", reply.content)) if reply is not None else ""
    if recorder.raw is not None:
        raw = recorder.raw
    elif reply is not None and reply.tool_calls and not raw:
        raw = json.dumps([{c.name: c.arguments} for c in reply.tool_calls], default=str)
    decoded: list[dict[str, Any]] | None
    if options.prompt_style == "bfcl":
        decoded = decode_python_calls(raw)
    else:
        calls = reply.tool_calls if reply is not None else ()
        decoded = [{names.get(c.name, c.name): dict(c.arguments)} for c in calls]
    verdict = _verdict(entry, decoded)
    return {
        **record,
        "raw": raw,
        "decoded": decoded,
        "valid": verdict.valid,
        "error_type": verdict.error_type,
        "reason": list(verdict.errors),
        "error": None,
        "latency": round(time.perf_counter() - started, 4),
        "tokens": {"input": result.usage.input_tokens, "output": result.usage.output_tokens},
    }


def _bfcl_worker(
    model: str, options: Mapping[str, Any], backend_factory: Callable[[str], Any] | None
) -> Callable[[WorkItem], dict[str, Any]]:
    chosen = BFCLOptions.from_dict(options)
    backend = (backend_factory or load_backend)(model)
    if hasattr(backend, "constrain"):
        backend.constrain = chosen.constrained
    parser = None
    if chosen.format is not None:
        from tooluse.formats import get_parser

        parser = get_parser(chosen.format)

    def work(item: WorkItem) -> dict[str, Any]:
        entry = entry_from_payload(item.payload)
        return score_bfcl_entry(backend, entry, chosen, parser=parser, model=model)

    return work


def make_bfcl_worker(
    model: str,
    options: BFCLOptions,
    backend_factory: Callable[[str], Any] | None = None,
) -> Callable[[], Callable[[WorkItem], dict[str, Any]]]:
    """The engine's worker factory (picklable): loads the model once per worker.

    ``backend_factory(model)`` replaces :func:`load_backend` (a module-level function, so
    that it pickles for Ray)."""
    return functools.partial(_bfcl_worker, model, options.to_dict(), backend_factory)


# -- summary -----------------------------------------------------------------------------------


def summarize_records(
    records: Sequence[Mapping[str, Any]],
    *,
    model: str,
    options: BFCLOptions,
    items_per_minute: float | None = None,
    seconds: float | None = None,
) -> dict[str, Any]:
    """Per-category accuracy with counts, error types, failures and speed."""
    categories: dict[str, dict[str, Any]] = {}
    for record in records:
        score = categories.setdefault(record["category"], {"correct": 0, "total": 0})
        score["total"] += 1
        score["correct"] += bool(record.get("valid"))
    for score in categories.values():
        score["accuracy"] = score["correct"] / score["total"] if score["total"] else 0.0
    calls = [
        s["accuracy"]
        for c, s in categories.items()
        if checker_kind(c) not in ("irrelevance", "relevance")
    ]
    latencies = [float(r.get("latency") or 0.0) for r in records]
    correct = sum(bool(r.get("valid")) for r in records)
    return {
        "model": model,
        "options": options.to_dict(),
        "correct": correct,
        "total": len(records),
        "accuracy": correct / len(records) if records else 0.0,
        "ast_mean": sum(calls) / len(calls) if calls else None,
        "categories": categories,
        "error_types": dict(
            Counter(r.get("error_type") or "" for r in records if not r.get("valid"))
        ),
        "unconvertible": [r["id"] for r in records if r.get("error_type") == "convert_error"],
        "errors": [
            {"id": r.get("id", r.get("key")), "error": r["error"]}
            for r in records
            if r.get("error")
        ],
        "items_per_minute": items_per_minute,
        "seconds": seconds,
        "mean_latency": sum(latencies) / len(latencies) if latencies else None,
    }


def run_bfcl_job(
    entries: Sequence[BFCLEntry],
    model: str,
    options: BFCLOptions,
    out_dir: str | Path,
    *,
    engine: Literal["local", "ray"] = "local",
    concurrency: int = 1,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
    item_timeout: float | None = None,
    backend_factory: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """Score ``model`` on ``entries`` into ``out_dir`` (resuming what is there) and return
    the summary, also written as ``summary.json``."""
    if not entries:
        raise ValueError("no BFCL entries to run")
    directory = Path(out_dir)
    if directory.exists() and not directory.is_dir():
        raise EngineError(f"{directory} is not a directory")
    results = directory / "results.jsonl"
    existing = read_results(results)
    for row in existing.values():
        if row.get("options") not in (None, options.to_dict()) or row.get("model") not in (
            None,
            model,
        ):
            raise EngineError(
                f"{directory} holds results of another model or other options "
                f"({row.get('model')}, {row.get('options')}); use another --out"
            )
    items = [WorkItem(key=e.id, payload=entry_payload(e)) for e in entries]
    run = run_items(
        items,
        make_bfcl_worker(model, options, backend_factory),
        results,
        engine=engine,
        concurrency=concurrency,
        workers=workers,
        ray_address=ray_address,
        progress=progress,
        description=f"BFCL {model}",
        score=lambda r: r.get("valid"),
        item_timeout=item_timeout,
        error_fields=lambda item: (
            _record_head(entry_from_payload(item.payload), model, options)
            | {"tools": [], "raw": "", "decoded": None, "valid": False, "latency": None}
        ),
    )
    records = list(run.records)
    summary = summarize_records(
        records,
        model=model,
        options=options,
        items_per_minute=run.items_per_minute if run.ran else None,
        seconds=round(run.seconds, 3),
    )
    summary["ran"], summary["resumed"] = run.ran, run.skipped
    (directory / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary
