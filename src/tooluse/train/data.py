"""Training examples: conversations from an SFT JSONL file or an environment's teacher, turned
into prompt/completion pairs rendered exactly as the local model sees them at inference.

::

    conversations = read_sft_jsonl("sft.jsonl")                 # tooluse.envs.export's lines
    conversations = teacher_conversations("math:arithmetic", size=200)   # scripted solver
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tooluse.messages import ChatMessage, ToolCall, ToolResult
from tooluse.tools.definition import ToolDefinition
from tooluse.train.bfcl_teachers import BFCL_TEACHERS, bfcl_teacher_conversations
from tooluse.train.conversation import Conversation
from tooluse.train.relevance import (
    RELEVANCE_PREFIX,
    cases_from_conversations,
    relevance_conversations,
)

__all__ = [
    "TEACHERS",
    "Conversation",
    "TrainDataError",
    "TrainExample",
    "TurnRenderer",
    "conversation_from_record",
    "read_sft_jsonl",
    "refuse_test_split",
    "render_examples",
    "teacher_conversations",
]

#: Environments with a scripted teacher (a solver whose trajectories are right by construction):
#: math:arithmetic runs the expression in python and submits its output; the BFCL multi-turn
#: categories whose tools stay the same through an entry replay BFCL's ground truth; the
#: reasoning-gym datasets below run their entry's expression in python; the last three teach
#: when not to call, which tool to call, and the yes/no question of ``YesNoDecider``
#: (:mod:`tooluse.train.bfcl_teachers`; ``relevance:NAME`` asks it of any teacher); the
#: τ²-bench domains play each task's expected actions (with the scripted customer, or solo),
#: and NESTFUL and ComplexFuncBench make their gold call sequences, the calls getting the
#: recorded (or, for NESTFUL, made-up) outputs.
TEACHERS = (
    "math:arithmetic",
    "bfcl:multi_turn_base",
    "bfcl:multi_turn_miss_param",
    "bfcl:multi_turn_long_context",
    "reasoning_gym:basic_arithmetic",
    "reasoning_gym:chain_sum",
    "reasoning_gym:products",
    "bfcl:live_irrelevance",
    "bfcl:multi_turn_calls",
    "bfcl:relevance",
    "tau2:airline",
    "tau2:retail",
    "tau2:telecom",
    "tau2:telecom:solo",
    "tau2:mock",
    "nestful",
    "complexfuncbench",
)
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
                conversations.append(
                    conversation_from_record(row, f"{source.name}:{number}", bad_calls)
                )
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


def _teacher_script(env: Any, index: int) -> list[Any]:
    """The scripted turns that solve task ``index`` of ``env``."""
    if env.name == "math:arithmetic":
        return list(_arithmetic_turns(env.task(index)))
    if env.name.startswith(_REASONING_GYM):
        return list(_expression_turns(env.task(index)))
    if hasattr(env, "gold_script"):  # τ²-bench, NESTFUL, ComplexFuncBench
        return list(env.gold_script(index))
    from tooluse.evals.bfcl.world import ground_truth_calls

    script: list[Any] = []
    for turn in ground_truth_calls(env.entries[index]):
        if turn:
            script.append([ToolCall(name=name, arguments=arguments) for name, arguments in turn])
        script.append("Done.")  # each user turn ends with a short reply, as BFCL expects
    return script


def teacher_conversations(
    environment: str, *, split: str = "train", size: int = 200, seed: int = 0
) -> list[Conversation]:
    """Right-by-construction conversations on the ``split`` tasks of ``environment``, played
    through the real environment and tool loop (the python tool and BFCL's classes really
    run), with the system prompt ``tooluse eval env`` uses. ``size`` tasks of a procedural
    environment from ``seed``; the first ``size`` of a fixed set's split."""
    refuse_test_split(split)
    if environment.startswith(RELEVANCE_PREFIX):  # the yes/no question of another teacher
        inner = environment[len(RELEVANCE_PREFIX) :]
        asked = teacher_conversations(inner, split=split, size=size, seed=seed)
        return relevance_conversations(cases_from_conversations(asked))
    if environment not in TEACHERS:
        raise TrainDataError(
            f"no scripted teacher for {environment!r}; teachers: {', '.join(TEACHERS)}, "
            f"and {RELEVANCE_PREFIX}TEACHER (or pass an SFT JSONL file with --data)"
        )
    if environment in BFCL_TEACHERS:
        conversations = bfcl_teacher_conversations(environment, split=split, size=size, seed=seed)
    else:
        conversations = _played_conversations(environment, split=split, size=size, seed=seed)
    if not conversations:
        raise TrainDataError(f"the teacher of {environment} kept no conversation")
    return conversations


def _played_conversations(
    environment: str, *, split: str, size: int, seed: int
) -> list[Conversation]:
    """The scripted solver's right conversations, played through the environment."""
    from tooluse.envs import TrajectoryRunner, environment_registry
    from tooluse.envs.prompts import default_system_prompt
    from tooluse.providers.scripted import ScriptedBackend

    if environment == "math:arithmetic" or environment.startswith(_REASONING_GYM):
        env = environment_registry.get(name=environment, split=split, size=size, seed=seed)
    elif environment.startswith("tau2:") and not environment.endswith(":solo"):
        env = environment_registry.get(name=environment, split=split, limit=size, user="gold")
    else:  # a fixed set: its train split, at most ``size`` entries
        env = environment_registry.get(name=environment, split=split, limit=size)
    conversations = []
    with env:
        for index in range(len(env)):
            runner = TrajectoryRunner(
                environment=env,
                backend=ScriptedBackend(_teacher_script(env, index)),
                system_prompt=default_system_prompt(environment),
            )
            trajectory = runner.run_trajectory(task_index=index)
            record = trajectory.to_dict()
            if not trajectory.success and hasattr(env, "gold_script"):
                continue  # the benchmark's own expected actions miss its criteria: left out
            if not trajectory.success:  # the solver is wrong: never train on it
                raise TrainDataError(f"the teacher failed task {trajectory.task_id}")
            if _submits_what_python_printed(record):
                conversations.append(
                    conversation_from_record(record, f"{environment}/{trajectory.task_id}")
                )
    return conversations


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
