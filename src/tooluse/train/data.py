"""Training examples: conversations from an SFT JSONL file or an environment's teacher, turned
into prompt/completion pairs rendered exactly as the local model sees them at inference.

::

    conversations = read_sft_jsonl("sft.jsonl")                 # tooluse.envs.export's lines
    conversations = teacher_conversations("math:arithmetic", size=200)   # scripted solver
    data = teacher_data("bfcl:parallel", size=40)   # .conversations, .rejected (gold refused)
    examples = render_examples(conversations, LlamaCppBackend.default())

One example per assistant turn: ``prompt`` is what the backend renders before that turn (tools
in the system prompt when the turn calls tools, as in a call turn), ``completion`` the text the
model writes for it, its calls in the profile's call format, up to the end-of-turn token. The
GGUF's own chat template renders only ``content`` and would drop the calls without a word.

Bad input never disappears silently: a file that is missing, empty or has lines that are not
SFT examples, and calls whose arguments do not parse, raise :class:`TrainDataError` with one
line that counts and lists them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from tooluse.evals.bfcl.single_turn import SINGLE_TURN_ENVIRONMENTS
from tooluse.messages import ChatMessage, ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition
from tooluse.train.bfcl_teachers import (
    BFCL_TEACHERS,
    MAX_DOC_CHARS,
    MAX_REQUEST_CHARS,
    bfcl_teacher_conversations,
)
from tooluse.train.conversation import Conversation
from tooluse.train.relevance import (
    RELEVANCE_PREFIX,
    cases_from_conversations,
    relevance_conversations,
)
from tooluse.train.result_answers import RESULT_ANSWERS, AnswerWriting, result_answers
from tooluse.train.word_problems import program_from_solution

__all__ = [
    "ANSWER_STYLES",
    "TEACHERS",
    "Conversation",
    "TeacherData",
    "TrainDataError",
    "TrainExample",
    "TurnRenderer",
    "conversation_from_record",
    "read_sft_jsonl",
    "refuse_test_split",
    "render_examples",
    "teacher_conversations",
    "teacher_data",
    "train_environment",
]

#: BFCL's single-turn categories with a gold answer (``live_relevance`` has none).
BFCL_SINGLE_TURN = tuple(n for n in SINGLE_TURN_ENVIRONMENTS if n != "bfcl:live_relevance")
#: Environments with a scripted teacher (a solver whose trajectories the environment grades;
#: those it grades wrong are left out): math:arithmetic runs the expression in python and
#: submits its output; the BFCL multi-turn categories whose tools stay the same through an
#: entry replay BFCL's ground truth; the reasoning-gym datasets below run their entry's
#: expression in python, ``gsm_symbolic`` (and ``math:gsm8k`` on a GSM8K file) the steps of its
#: worked solution (:mod:`tooluse.train.word_problems`); BFCL's single-turn categories answer
#: with their accepted calls, or in text where no call is right
#: (:mod:`tooluse.evals.bfcl.single_turn`); the last two teach which tool to call and the
#: yes/no question of ``YesNoDecider`` (:mod:`tooluse.train.bfcl_teachers`;
#: ``relevance:NAME`` asks it of any teacher); ``bfcl:multi_turn_answers`` the text reply after
#: real results, written by another model and kept when grounded
#: (:mod:`tooluse.train.result_answers`); the τ²-bench domains play each task's
#: expected actions (with the scripted customer, or solo), and NESTFUL and ComplexFuncBench
#: make their gold call sequences (their environments' ``gold_script``).
TEACHERS = (
    "math:arithmetic",
    "math:gsm8k",
    "bfcl:multi_turn_base",
    "bfcl:multi_turn_miss_param",
    "bfcl:multi_turn_long_context",
    "reasoning_gym:basic_arithmetic",
    "reasoning_gym:chain_sum",
    "reasoning_gym:products",
    "reasoning_gym:gsm_symbolic",
    *BFCL_SINGLE_TURN,
    "bfcl:multi_turn_calls",
    "bfcl:relevance",
    RESULT_ANSWERS,
    "tau2:airline",
    "tau2:retail",
    "tau2:telecom",
    "tau2:telecom:solo",
    "tau2:mock",
    "nestful",
    "complexfuncbench",
)
#: How a python-then-submit teacher gives its answer: a ``submit_answer`` call, or a text reply.
ANSWER_STYLES = ("submit", "text")
_REASONING_GYM = "reasoning_gym:"
_LISTED = 8  # how many bad lines or calls an error message names


class TrainDataError(ValueError):
    """Training data that cannot be used as it is (the message says where and why)."""


@dataclass(frozen=True, kw_only=True)
class TrainExample:
    """One assistant turn as training text: loss goes on ``completion`` only."""

    prompt: str
    completion: str
    source: str = ""


class TurnRenderer(Protocol):
    """Renders a turn as the model sees it (``LlamaCppBackend.render_turn``)."""

    def render_turn(
        self,
        history: Sequence[ChatMessage],
        reply: ChatMessage,
        tools: Sequence[ToolDefinition] = (),
    ) -> tuple[str, str]: ...


def refuse_test_split(split: str) -> str:
    """``split`` if the trainer may use it; the test split is kept for evaluation."""
    if split == "test":
        raise TrainDataError(
            "the trainer refuses the test split (it is kept for evaluation); use --split train"
        )
    if split != "train":
        raise TrainDataError(f"unknown split {split!r}; the trainer uses the train split")
    return split


# -- SFT JSONL (the chat shape of tooluse.envs.export) ------------------------------------------


def _arguments(raw: Any) -> dict[str, Any] | None:
    """A call's argument object from a dict or JSON text; None when it does not parse."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    return None


def _call(raw: Mapping[str, Any], where: str, bad: list[str]) -> ToolCall | None:
    function = raw.get("function", raw)
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str) or not name:
        bad.append(f"{where} (a call without a name)")
        return None
    arguments = _arguments(function.get("raw_arguments", function.get("arguments", {})))
    if arguments is None:
        bad.append(f"{where} {name!r}")
        return None
    return ToolCall(id=str(raw.get("id") or f"call_{len(bad)}"), name=name, arguments=arguments)


def _message(raw: Mapping[str, Any], where: str, bad_calls: list[str]) -> ChatMessage:
    role = raw.get("role")
    content = raw.get("content") or ""
    if role not in ("system", "user", "assistant", "tool") or not isinstance(content, str):
        raise TypeError(f"a message with role {role!r}")
    if role == "tool":
        result = ToolResult(
            call_id=str(raw.get("tool_call_id", "")),
            tool_name=str(raw.get("name", "")),
            output=content,
        )
        return ChatMessage.tool_result(result)
    calls = []
    for number, item in enumerate(raw.get("tool_calls") or (), 1):
        call = (
            _call(item, f"{where} call {number}", bad_calls) if isinstance(item, Mapping) else None
        )
        if call is not None:
            calls.append(call)
    return ChatMessage(role=role, content=content, tool_calls=tuple(calls))


def _tool(raw: Mapping[str, Any]) -> ToolDefinition:
    function = raw.get("function", raw)
    return ToolDefinition.from_schema(
        str(function["name"]),
        function.get("parameters"),
        description=str(function.get("description") or ""),
    )


def conversation_from_record(
    record: Mapping[str, Any], source: str, bad_calls: list[str] | None = None
) -> Conversation:
    """A conversation from an SFT line or a trajectory record (``messages`` and ``tools``).

    Calls whose arguments do not parse are appended to ``bad_calls`` (``TrainDataError`` when
    it is not given); ``TypeError``/``KeyError`` for a record of the wrong shape."""
    unparsed: list[str] = [] if bad_calls is None else bad_calls
    before = len(unparsed)
    messages = record["messages"]
    if not isinstance(messages, list) or not messages:
        raise TypeError("no messages")
    converted = tuple(
        _message(m, f"{source} message {i}", unparsed) for i, m in enumerate(messages, 1)
    )
    if not any(m.role == "assistant" for m in converted):
        raise TypeError("no assistant turn to learn")
    if bad_calls is None and len(unparsed) > before:
        raise TrainDataError(f"tool calls that do not parse: {', '.join(unparsed)}")
    tools = tuple(_tool(t) for t in record.get("tools") or ())
    return Conversation(messages=converted, tools=tools, source=source)


def _listed(items: Sequence[str]) -> str:
    more = f", and {len(items) - _LISTED} more" if len(items) > _LISTED else ""
    return ", ".join(items[:_LISTED]) + more


def read_sft_jsonl(path: str | Path) -> list[Conversation]:
    """The conversations of an SFT JSONL file (``{"messages": [...], "tools": [...]}`` lines)."""
    source = Path(path)
    if not source.is_file():
        raise TrainDataError(f"{source}: no such file")
    conversations: list[Conversation] = []
    bad_lines: list[str] = []
    bad_calls: list[str] = []
    with source.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise TypeError("not a JSON object")
                label = row.get("source") or f"{source.name}:{number}"
                conversations.append(conversation_from_record(row, str(label), bad_calls))
            except (json.JSONDecodeError, TypeError, KeyError, AttributeError) as exc:
                bad_lines.append(f"{number} ({_reason(exc)})")
    if bad_lines:
        raise TrainDataError(
            f"{source}: {len(bad_lines)} line(s) are not SFT examples: line {_listed(bad_lines)}"
        )
    if bad_calls:
        raise TrainDataError(
            f"{source}: {len(bad_calls)} tool call(s) have arguments that do not parse: "
            f"{_listed(bad_calls)}"
        )
    if not conversations:
        raise TrainDataError(f"{source}: no examples (the file is empty)")
    return conversations


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return "not JSON"
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r}"
    return str(exc) or type(exc).__name__


# -- teacher trajectories ------------------------------------------------------------------------


def python_code(expression: str) -> str:
    """The teachers' program for an expression. The expression stands alone on its line, so a
    small model copies it without counting brackets around it (``print(EXPR)`` lost the
    closing one after nested brackets); a whole number prints without ``.0`` (Python's ``/``
    gives 23.0 where the answer is 23)."""
    return f"result = {expression}\nprint(int(result) if result == int(result) else result)"


def _arithmetic_turns(task: Any) -> list[list[ToolCall]]:
    """The scripted solver: run the expression in python, then submit what it printed."""
    expression = task.metadata["expression"]
    return [
        [ToolCall(name="python", arguments={"code": python_code(expression)})],
        [ToolCall(name="submit_answer", arguments={"answer": str(task.reference)})],
    ]


def _expression_turns(task: Any) -> list[list[ToolCall]]:
    """The scripted solver of a reasoning-gym entry that carries its expression."""
    entry = task.reference
    return [
        [ToolCall(name="python", arguments={"code": python_code(entry["metadata"]["expression"])})],
        [ToolCall(name="submit_answer", arguments={"answer": str(entry["answer"])})],
    ]


def _word_problem_turns(solution: str, answer: Any, question: str) -> list[Any]:
    """The scripted solver of a word problem with a worked solution: its steps as a program
    (:func:`~tooluse.train.word_problems.program_from_solution`), then submit the answer."""
    code = program_from_solution(solution, question)
    if code is None:
        raise ValueError("no program from its worked solution")
    return [
        [ToolCall(name="python", arguments={"code": code})],
        [ToolCall(name="submit_answer", arguments={"answer": str(answer)})],
    ]


def _teacher_script(env: Any, index: int) -> list[Any]:
    """The scripted turns that solve task ``index`` of ``env`` (``ValueError``: it has none)."""
    if hasattr(env, "gold_script"):  # BFCL's single-turn categories (and later benchmarks)
        return list(env.gold_script(index))
    task = env.task(index)
    if env.name == "math:arithmetic":
        return list(_arithmetic_turns(task))
    if env.name == "math:gsm8k":
        return _word_problem_turns(task.metadata["solution"], task.reference, task.prompt)
    if env.name == f"{_REASONING_GYM}gsm_symbolic":
        entry = task.reference
        return _word_problem_turns(entry["metadata"]["answer_cot"], entry["answer"], task.prompt)
    if env.name.startswith(_REASONING_GYM):
        return list(_expression_turns(task))
    from tooluse.evals.bfcl.world import ground_truth_calls

    script: list[Any] = []
    for turn in ground_truth_calls(env.entries[index]):
        if turn:
            script.append([ToolCall(name=name, arguments=arguments) for name, arguments in turn])
        script.append("Done.")  # each user turn ends with a short reply, as BFCL expects
    return script


def _answered_in_text(script: list[Any]) -> list[Any]:
    """The script with its closing ``submit_answer`` turn said in text instead."""
    last = script[-1] if script else None
    if not (isinstance(last, list) and len(last) == 1 and last[0].name == "submit_answer"):
        raise ValueError("its answer is not a submit_answer call")
    return [*script[:-1], f"The answer is {last[0].arguments['answer']}."]


@dataclass(frozen=True, kw_only=True)
class TeacherData:
    """A teacher's conversations, and the tasks it left out (``"task_id (why)"``)."""

    conversations: tuple[Conversation, ...]
    rejected: tuple[str, ...] = ()


def teacher_conversations(
    environment: str, *, split: str = "train", size: int = 200, seed: int = 0
) -> list[Conversation]:
    """Right-by-construction conversations on the ``split`` tasks of ``environment``, played
    through the real environment and tool loop (the python tool and BFCL's classes really
    run), with the system prompt ``tooluse eval env`` uses. ``size`` tasks of a procedural
    environment from ``seed``; a seeded sample (BFCL's single-turn categories) or the first
    ``size`` of a fixed set's split. Tasks whose gold answer the environment's checker rejects
    are left out (:func:`teacher_data` lists them)."""
    conversations = teacher_data(environment, split=split, size=size, seed=seed).conversations
    if not conversations:
        raise TrainDataError(f"the teacher of {environment} kept no conversation")
    return list(conversations)


def teacher_data(  # noqa: PLR0913 - the source's settings, keyword-only
    environment: str,
    *,
    split: str = "train",
    size: int = 200,
    seed: int = 0,
    answer: str = "submit",
    options: Mapping[str, Any] | None = None,
) -> TeacherData:
    """:func:`teacher_conversations` with the tasks left out. ``answer="text"`` says the
    answer of a python-then-submit teacher in a text reply (``The answer is N.``, graded by
    the environment like a submitted one) and trains it without ``submit_answer`` on offer;
    ``options`` go to the environment (``data_path`` for ``math:gsm8k``)."""
    refuse_test_split(split)
    if answer not in ANSWER_STYLES:
        raise TrainDataError(
            f"unknown answer style {answer!r}; use one of: {', '.join(ANSWER_STYLES)}"
        )
    if environment.startswith(RELEVANCE_PREFIX):  # the yes/no question of another teacher
        inner = environment[len(RELEVANCE_PREFIX) :]
        asked = teacher_conversations(inner, split=split, size=size, seed=seed)
        return TeacherData(
            conversations=tuple(relevance_conversations(cases_from_conversations(asked)))
        )
    if environment not in TEACHERS:
        raise TrainDataError(
            f"no scripted teacher for {environment!r}; teachers: {', '.join(TEACHERS)}, "
            f"and {RELEVANCE_PREFIX}TEACHER (or pass an SFT JSONL file with --data)"
        )
    if environment in BFCL_TEACHERS:
        found = bfcl_teacher_conversations(environment, split=split, size=size, seed=seed)
        return TeacherData(conversations=tuple(found))
    if environment == RESULT_ANSWERS:
        try:
            how = AnswerWriting(**(options or {}))
        except TypeError as exc:
            raise TrainDataError(f"{environment}: {exc}") from exc
        written, left = result_answers(split=split, size=size, seed=seed, how=how)
        return TeacherData(conversations=tuple(written), rejected=tuple(left))
    return _played_conversations(
        environment, split=split, size=size, seed=seed, answer=answer, options=options or {}
    )


def train_environment(
    environment: str, split: str, size: int, seed: int, options: Mapping[str, Any]
) -> Any:
    """Environment ``environment`` on ``split`` with ``size`` tasks as training uses it: a
    procedural one generated from ``seed``, a seeded sample of a BFCL single-turn category's
    entries that fit a short sequence, the first ``size`` of another fixed set."""
    from tooluse.envs import environment_registry

    if environment == "math:arithmetic" or environment.startswith(_REASONING_GYM):
        return environment_registry.get(
            name=environment, split=split, size=size, seed=seed, **options
        )
    if environment in BFCL_SINGLE_TURN:  # a seeded sample of entries that fit a short sequence
        return environment_registry.get(
            name=environment,
            split=split,
            sample=size,
            seed=seed,
            max_doc_chars=MAX_DOC_CHARS,
            max_request_chars=MAX_REQUEST_CHARS,
            **options,
        )
    if environment.startswith("tau2:") and not environment.endswith(":solo"):
        return environment_registry.get(
            name=environment, split=split, limit=size, user="gold", **options
        )
    # a fixed set: its train split, at most ``size`` entries
    return environment_registry.get(name=environment, split=split, limit=size, **options)


def _played_conversations(  # noqa: PLR0913 - the source's settings, keyword-only
    environment: str,
    *,
    split: str,
    size: int,
    seed: int,
    answer: str,
    options: Mapping[str, Any],
) -> TeacherData:
    """The scripted solver's conversations that the environment grades right, played through
    it; the tasks it grades wrong (or that have no script) are left out and listed."""
    from tooluse.envs import TrajectoryRunner
    from tooluse.envs.prompts import MATH_TEXT_PROMPT, default_system_prompt
    from tooluse.providers.scripted import ScriptedBackend

    try:
        env = train_environment(environment, split, size, seed, options)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        raise TrainDataError(f"{environment}: {exc}") from exc
    system = MATH_TEXT_PROMPT if answer == "text" else default_system_prompt(environment)
    conversations: list[Conversation] = []
    rejected: list[str] = []
    with env:
        for index in range(len(env)):
            task_id = env.task(index).id or str(index)
            try:
                script = _teacher_script(env, index)
                if answer == "text":
                    script = _answered_in_text(script)
            except (ValueError, KeyError) as exc:
                rejected.append(f"{task_id} ({exc.args[0] if exc.args else exc})")
                continue
            runner = TrajectoryRunner(
                environment=env, backend=ScriptedBackend(script), system_prompt=system
            )
            trajectory = runner.run_trajectory(task_index=index)
            record = trajectory.to_dict()
            if not trajectory.success:  # the checker rejects the gold answer: never train on it
                rejected.append(f"{task_id} (the checker rejects the gold answer)")
            elif not _submits_what_python_printed(record):
                rejected.append(f"{task_id} (python printed another form of the answer)")
            else:
                conversation = conversation_from_record(record, f"{environment}/{task_id}")
                if answer == "text":  # the answer is said, not submitted: no submit tool
                    tools = tuple(t for t in conversation.tools if t.name != "submit_answer")
                    conversation = replace(conversation, tools=tools)
                conversations.append(conversation)
    return TeacherData(conversations=tuple(conversations), rejected=tuple(rejected))


def _submits_what_python_printed(record: Mapping[str, Any]) -> bool:
    """False when python printed something other than the submitted answer (``-4.0`` for a
    reference ``-4``): the graders accept both, but a model taught to copy would learn to
    change the number. Such tasks are left out of the training text."""
    messages = record["messages"]
    printed = [m.get("content", "") for m in messages if m.get("role") == "tool"]
    submitted = [
        call.get("arguments", {}).get("answer")
        for m in messages
        for call in m.get("tool_calls") or ()
        if call.get("name") == "submit_answer"
    ]
    if not printed or not submitted or not isinstance(submitted[-1], str):
        return True  # not a python-then-submit script: nothing to compare
    return str(printed[0]).strip() == submitted[-1].strip()


# -- rendering -----------------------------------------------------------------------------------


def render_examples(
    conversations: Sequence[Conversation], renderer: TurnRenderer
) -> list[TrainExample]:
    """One example per assistant turn, rendered by ``renderer`` with the conversation's tools
    in its prompt: that is the prompt where the model's odds of starting a call decide
    between calling and answering (:class:`~tooluse.local.decision.ModelDecider`), so a text
    turn teaches it not to call there."""
    examples = []
    for conversation in conversations:
        for index, message in enumerate(conversation.messages):
            if message.role != "assistant":
                continue
            prompt, completion = renderer.render_turn(
                conversation.messages[:index], message, conversation.tools
            )
            examples.append(
                TrainExample(prompt=prompt, completion=completion, source=conversation.source)
            )
    if not examples:
        raise TrainDataError("no assistant turns to train on")
    return examples
