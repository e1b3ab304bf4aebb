"""Scoring one BFCL single-turn entry: the one scorer, used by the engine jobs and ``run_bfcl``.

``score_bfcl_entry(backend, entry, options)`` asks the backend once and returns the entry's
result record (see :mod:`tooluse.evals.bfcl.job` for its fields). Prompt styles: ``native``
offers the tools the way the backend takes them (native function calling, else the text
parser); ``bfcl`` is BFCL's own prompt for models without function calling: the function docs
as JSON in a system prompt asking for ``[func(a=1), ...]``, and the reply decoded as Python
calls. A ``format_sensitivity`` entry is always asked in its own prompt format and its reply
decoded in it (:mod:`tooluse.evals.bfcl.format_sensitivity`).
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from tooluse.evals.bfcl.checker import CheckResult, check_entry, checker_kind
from tooluse.evals.bfcl.data import BFCLEntry, tools_for_entry
from tooluse.evals.bfcl.format_sensitivity import (
    decode_formatted_reply,
    format_of_entry,
    format_system_prompt,
    is_format_sensitivity,
    scoring_category,
)
from tooluse.evals.bfcl.java_js import function_doc_for_model, language_of
from tooluse.loop import run
from tooluse.messages import ChatMessage, ToolCall, Usage
from tooluse.providers.base import (
    Backend,
    BaseBackend,
    GenerationDone,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    StreamItem,
    ToolChoice,
    as_backend,
)
from tooluse.retrieval.scorers import latest_request_text, select_tools
from tooluse.tools.definition import ToolDefinition

if TYPE_CHECKING:
    from tooluse.formats.base import ToolCallParser
    from tooluse.loop.core import RunResult

__all__ = [
    "BFCL_STYLE_PYTHON_ONLY",
    "BFCL_SYSTEM_PROMPT",
    "BFCLOptions",
    "bfcl_system_prompt",
    "decode_python_calls",
    "few_shot_prompt",
    "record_head",
    "score_bfcl_entry",
    "score_bfcl_entry_with_usage",
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


# -- BFCL's prompt style -----------------------------------------------------------------------

#: Why the ``bfcl`` prompt style scores no Java or JavaScript entry.
BFCL_STYLE_PYTHON_ONLY = (
    "the bfcl prompt style decodes replies as Python calls; Java and JavaScript entries "
    "need the native prompt style"
)


def bfcl_system_prompt(functions: Sequence[Mapping[str, Any]], language: str = "python") -> str:
    """BFCL's system prompt with the function docs as indented JSON, as BFCL shows them for
    the ``language`` (its note added; Java and JavaScript parameters as strings)."""
    docs = [function_doc_for_model(f, language) for f in functions]
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


def few_shot_prompt(backend: Backend, prompt_style: str = "native") -> str:
    """Worked examples for the system prompt, the calls written as the model must write them
    (Python calls for the ``bfcl`` style, the local model's call format, else JSON)."""
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
    category = scoring_category(entry.category, entry.id)
    if decoded is None:
        if checker_kind(category) == "irrelevance":
            return CheckResult.ok()  # an output that is not a call is no call
        return CheckResult.fail("decoder_failed", "the reply does not decode as function calls")
    return check_entry(category, entry.functions, decoded, entry.ground_truth)


class _RawRecorder(BaseBackend):
    """The backend, keeping the last turn's raw output (the loop keeps only parsed calls)."""

    def __init__(self, backend: Backend) -> None:
        self._backend = as_backend(backend)
        self.raw: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._backend.capabilities

    def _keep(self, result: GenerationResult) -> GenerationResult:
        raw = getattr(result, "raw", None)
        if isinstance(raw, Mapping) and isinstance(raw.get("output"), str):
            self.raw = raw["output"]
        return result

    def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        return self._keep(self._backend.generate(messages, tools, params, tool_choice))

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        return self._keep(await self._backend.agenerate(messages, tools, params, tool_choice))

    def stream(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> Iterator[StreamItem]:
        for item in self._backend.stream(messages, tools, params, tool_choice):
            if isinstance(item, GenerationDone):
                self._keep(item.result)
            yield item


def record_head(entry: BFCLEntry, model: str, options: BFCLOptions) -> dict[str, Any]:
    """The fields of an entry's record that do not depend on the reply."""
    return {
        "id": entry.id,
        "category": entry.category,
        "model": model,
        "options": options.to_dict(),
        "prompt": [dict(m) for m in entry.question[0]] if entry.question else [],
        "expected": list(entry.ground_truth),
    }


def _failed(
    record: dict[str, Any], error_type: str, error: str, started: float | None
) -> dict[str, Any]:
    """The record of an entry that got no verdict from the checker (counted, never dropped)."""
    return {
        **record,
        "raw": "",
        "decoded": None,
        "valid": False,
        "error_type": error_type,
        "error": error,
        "latency": round(time.perf_counter() - started, 4) if started is not None else 0.0,
        "tokens": {"input": 0, "output": 0},
    }


def _run_arguments(
    backend: Backend,
    entry: BFCLEntry,
    options: BFCLOptions,
    tools: Sequence[ToolDefinition],
    parser: ToolCallParser | None,
    params: SamplingParams | None,
) -> tuple[list[ChatMessage], list[ToolDefinition], dict[str, Any]]:
    """The messages, the tools offered and the keywords of the loop run for ``entry``."""
    messages = entry.messages()
    if params is None:
        params = SamplingParams(
            temperature=options.temperature,
            max_tokens=options.max_tokens,
            parallel_tool_calls=options.parallel_for(scoring_category(entry.category, entry.id)),
        )
    offered = list(tools)
    if is_format_sensitivity(entry.category):  # the entry's own format, whatever the options
        prompt = format_system_prompt(format_of_entry(entry.id), entry.functions)
        messages = _with_system(messages, prompt)
        return messages, offered, {"tools": (), "max_tool_iters": 0, "params": params}
    if options.few_shot:
        messages = _with_system(messages, few_shot_prompt(backend, options.prompt_style))
    if options.prompt_style == "bfcl":
        language = language_of(entry.category)
        messages = _with_system(messages, bfcl_system_prompt(entry.functions, language))
        return messages, offered, {"tools": (), "max_tool_iters": 0, "params": params}
    if options.tools_top_k is not None:
        offered = list(select_tools(tools, latest_request_text(messages), options.tools_top_k))
    kwargs = {
        "tools": offered,
        "max_tool_iters": 0,
        "params": params,
        "tool_choice": options.tool_choice,
        "tool_call_parser": parser,
    }
    return messages, offered, kwargs


def _read_reply(
    result: RunResult,
    recorder: _RawRecorder,
    entry: BFCLEntry,
    options: BFCLOptions,
    names: Mapping[str, str],
) -> tuple[str, list[dict[str, Any]] | None]:
    """The raw reply and its calls in BFCL's decoded form (``None``: it does not decode)."""
    reply = next((m for m in result.new_messages if m.role == "assistant"), None)
    raw = str(reply.metadata.get("raw_text", reply.content)) if reply is not None else ""
    if recorder.raw is not None:
        raw = recorder.raw
    elif reply is not None and reply.tool_calls and not raw:
        raw = json.dumps([{c.name: c.arguments} for c in reply.tool_calls], default=str)
    if is_format_sensitivity(entry.category):
        return raw, decode_formatted_reply(raw, format_of_entry(entry.id))
    if options.prompt_style == "bfcl":
        return raw, decode_python_calls(raw)
    calls = reply.tool_calls if reply is not None else ()
    return raw, [{names.get(c.name, c.name): dict(c.arguments)} for c in calls]


def score_bfcl_entry(
    backend: Backend,
    entry: BFCLEntry,
    options: BFCLOptions | None = None,
    *,
    parser: ToolCallParser | None = None,
    model: str = "",
    params: SamplingParams | None = None,
) -> dict[str, Any]:
    """Ask the backend once about ``entry`` and return its result record.

    ``params`` replaces the sampling parameters the options give (temperature, max_tokens,
    parallel calls in the parallel categories).
    """
    return score_bfcl_entry_with_usage(
        backend, entry, options, parser=parser, model=model, params=params
    )[0]


def score_bfcl_entry_with_usage(
    backend: Backend,
    entry: BFCLEntry,
    options: BFCLOptions | None = None,
    *,
    parser: ToolCallParser | None = None,
    model: str = "",
    params: SamplingParams | None = None,
) -> tuple[dict[str, Any], Usage]:
    """:func:`score_bfcl_entry`, with the run's token usage."""
    options = options or BFCLOptions()
    record = record_head(entry, model, options)
    started = time.perf_counter()
    if options.prompt_style == "bfcl" and language_of(entry.category) != "python":
        failed = _failed(record, "unsupported_prompt_style", BFCL_STYLE_PYTHON_ONLY, None)
        return {**failed, "tools": []}, Usage()
    try:
        tools, names = tools_for_entry(entry)
    except ValueError as exc:  # counted and listed in the summary, never dropped
        return {**_failed(record, "convert_error", str(exc), None), "tools": []}, Usage()
    messages, offered, kwargs = _run_arguments(backend, entry, options, tools, parser, params)
    record["tools"] = [names.get(t.name, t.name) for t in offered]
    recorder = _RawRecorder(backend)
    try:
        result = run(recorder, messages, **kwargs)
    except Exception as exc:  # one failing request must not lose the rest of the run
        failed = _failed(record, "backend_error", f"{type(exc).__name__}: {exc}", started)
        return failed, Usage()
    raw, decoded = _read_reply(result, recorder, entry, options, names)
    verdict = _verdict(entry, decoded)
    usage = result.usage
    scored = {
        **record,
        "raw": raw,
        "decoded": decoded,
        "valid": verdict.valid,
        "error_type": verdict.error_type,
        "reason": list(verdict.errors),
        "error": None,
        "latency": round(time.perf_counter() - started, 4),
        "tokens": {"input": usage.input_tokens, "output": usage.output_tokens},
    }
    return scored, usage
