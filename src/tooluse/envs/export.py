"""Training data from recorded trajectories: chat examples for SFT, per-step rewards for RL.

::

    records = read_trajectories("runs/bfcl")            # a run directory or a JSONL file
    for example in sft_examples(records, min_reward=1.0):
        example["messages"], example["tools"]          # as apply_chat_template(messages, tools=) takes
    for row in rl_steps(records):
        row["prompt"], row["completion"], row["reward"], row["signals"]

SFT lines are ``{"messages": [...], "tools": [...]}`` in the OpenAI / Hugging Face chat shape:
assistant turns carry ``tool_calls`` (``{"id", "type": "function", "function": {"name",
"arguments"}}``, arguments as an object by default, as chat templates expect, or as JSON text
with ``arguments_as="json"``, as the OpenAI API expects), results are ``{"role": "tool",
"tool_call_id", "name", "content"}`` messages, and tools are OpenAI function schemas. With a
chat template, each example also gets ``"text"``: the conversation rendered by
:func:`tooluse.render_chat_template`.

RL lines are one per environment step: ``prompt`` is the conversation before the step's
assistant turn, ``completion`` that turn (a one-message list), ``reward`` the step's weighted
reward and ``signals`` each reward's value (by name); rendered, they also get ``prompt_text``
and ``completion_text``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

__all__ = ["read_trajectories", "rl_steps", "sft_examples", "to_chat_messages"]

ArgumentsAs = Literal["dict", "json"]


def read_trajectories(source: str | Path) -> list[dict[str, Any]]:
    """The trajectory records of a run directory (its ``trajectories.jsonl``) or a JSONL file.

    Records with an ``"error"`` (trajectories that did not run) are left out; a line that is
    not a JSON object is skipped with a warning naming it; a missing source raises
    ``FileNotFoundError``.
    """
    path = Path(source)
    if path.is_dir():
        path = path / "trajectories.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"no trajectories at {path}")
    records: list[dict[str, Any]] = []
    bad: list[int] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                bad.append(number)
                continue
            if not isinstance(row, dict) or "messages" not in row and "error" not in row:
                bad.append(number)
            elif not row.get("error"):
                records.append(row)
    if bad:
        warnings.warn(
            f"{path}: skipped {len(bad)} line(s) that are not trajectories: "
            f"{', '.join(map(str, bad[:10]))}",
            RuntimeWarning,
            stacklevel=2,
        )
    return records


def _chat_message(message: Mapping[str, Any], arguments_as: ArgumentsAs) -> dict[str, Any]:
    role = message["role"]
    out: dict[str, Any] = {"role": role, "content": message.get("content") or ""}
    if role == "assistant" and message.get("tool_calls"):
        calls = []
        for call in message["tool_calls"]:
            arguments: Any = call.get("arguments", {})
            if "raw_arguments" in call:
                arguments = call["raw_arguments"]  # what the model wrote, kept as written
            elif arguments_as == "json":
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append(
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": arguments},
                }
            )
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = message.get("tool_call_id", "")
        out["name"] = message.get("name", "")
    if message.get("reasoning"):
        out["reasoning_content"] = message["reasoning"]
    return out


def to_chat_messages(
    record: Mapping[str, Any], *, arguments_as: ArgumentsAs = "dict"
) -> list[dict[str, Any]]:
    """A trajectory record's conversation in the OpenAI / Hugging Face chat shape."""
    return [_chat_message(m, arguments_as) for m in record.get("messages", ())]


def _render(template: str, messages: Sequence[Mapping[str, Any]], tools: Any, **kw: Any) -> str:
    from tooluse.formats.chat_template import render_chat_template

    return render_chat_template(template, messages, tools=tools or None, **kw)


def sft_examples(
    records: Iterable[Mapping[str, Any]],
    *,
    min_reward: float | None = None,
    only_success: bool = False,
    arguments_as: ArgumentsAs = "dict",
    chat_template: str | None = None,
) -> Iterator[dict[str, Any]]:
    """One chat example per trajectory whose total reward is at least ``min_reward``."""
    for record in records:
        if min_reward is not None and float(record.get("total_reward", 0.0)) < min_reward:
            continue
        if only_success and not record.get("success"):
            continue
        messages = to_chat_messages(record, arguments_as=arguments_as)
        tools = list(record.get("tools", ()))
        example: dict[str, Any] = {"messages": messages, "tools": tools}
        if chat_template is not None:
            template_messages = to_chat_messages(record)  # templates want argument objects
            example["text"] = _render(
                chat_template, template_messages, tools, add_generation_prompt=False
            )
        yield example


def rl_steps(
    records: Iterable[Mapping[str, Any]],
    *,
    arguments_as: ArgumentsAs = "dict",
    chat_template: str | None = None,
) -> Iterator[dict[str, Any]]:
    """One line per environment step: the conversation so far, the step's turn, its rewards.

    The n-th step is the n-th assistant turn of the conversation; a trajectory whose turns and
    steps do not line up (a run cut short mid-turn) gives the steps that do, with a warning.
    """
    for record in records:
        messages = to_chat_messages(record, arguments_as=arguments_as)
        plain = to_chat_messages(record)
        turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        steps = list(record.get("steps", ()))
        if len(turns) != len(steps):
            warnings.warn(
                f"trajectory {record.get('key', record.get('task_id'))}: {len(turns)} assistant "
                f"turns but {len(steps)} steps; exporting the first {min(len(turns), len(steps))}",
                RuntimeWarning,
                stacklevel=2,
            )
        tools = list(record.get("tools", ()))
        for index, (at, step) in enumerate(zip(turns, steps, strict=False)):
            signals = {s["name"]: s["value"] for s in step.get("signals", {}).get("signals", ())}
            row: dict[str, Any] = {
                "prompt": messages[:at],
                "completion": [messages[at]],
                "reward": float(step.get("reward", 0.0)),
                "signals": signals,
                "tools": tools,
                "trajectory": record.get("key", record.get("task_id")),
                "step": index,
                "done": bool(step.get("terminated") or step.get("truncated")),
            }
            if chat_template is not None:
                prompt_text = _render(chat_template, plain[:at], tools, add_generation_prompt=True)
                full = _render(chat_template, plain[: at + 1], tools, add_generation_prompt=False)
                row["prompt_text"] = prompt_text
                row["completion_text"] = (
                    full[len(prompt_text) :] if full.startswith(prompt_text) else full
                )
            yield row
