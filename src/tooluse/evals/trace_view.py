"""A run's trail as a collapsible HTML timeline (the trace viewer of ``tooluse report``).

Reads a ``RunResult`` saved with ``RunResult.save(path)`` or one environment trajectory (a line
of the environments' JSONL): each model turn, each tool call with its arguments, output,
duration and error flag, the stop reason and the usage.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TRACE_CSS", "Trace", "load_traces", "render_trace"]

TRACE_CSS = """
.trace{background:#fff;border:1px solid #e3e3e3;padding:8px 12px;margin:12px 0}
.turn{border-left:3px solid #2f6db5;margin:6px 0 6px 6px;padding:2px 8px}
.turn.tool{border-color:#3a9a5b}.turn.tool.error{border-color:#b3261e}
.turn.user{border-color:#999}.turn.system{border-color:#ccc}
.turn summary{cursor:pointer}.meta{color:#666;font-size:12px}
"""


@dataclass(frozen=True, kw_only=True)
class Trace:
    """One run's events, normalised from either source."""

    title: str
    turns: tuple[dict[str, Any], ...]
    stop_reason: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    outcome: str = ""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, default=str)


def _from_run_result(data: Mapping[str, Any], title: str) -> Trace:
    durations = {t.get("id"): t for t in data.get("trail") or ()}
    turns = []
    for message in data.get("messages") or ():
        role = message.get("role", "?")
        turn: dict[str, Any] = {"role": role, "text": message.get("content", "")}
        if message.get("tool_calls"):
            turn["calls"] = [
                {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments")}
                for c in message["tool_calls"]
            ]
        result = message.get("result")
        if role == "tool" and result:
            step = durations.get(result.get("call_id"), {})
            turn.update(
                name=result.get("tool_name"),
                is_error=bool(result.get("is_error")),
                duration=step.get("duration"),
                arguments=step.get("arguments"),
            )
        turns.append(turn)
    return Trace(
        title=title,
        turns=tuple(turns),
        stop_reason=str(data.get("stop_reason", "")),
        usage=dict(data.get("usage") or {}),
        outcome=str(data.get("final_text", ""))[:500],
    )


def _from_trajectory(data: Mapping[str, Any], title: str) -> Trace:
    turns: list[dict[str, Any]] = []
    for message in data.get("messages") or ():
        if message.get("role") in ("system", "user"):
            turns.append({"role": message["role"], "text": message.get("content", "")})
            if message.get("role") == "user":
                break
    for step in data.get("steps") or ():
        turns.append(
            {"role": "assistant", "text": step.get("text", ""), "calls": step.get("calls")}
        )
        calls = {c.get("id"): c for c in step.get("calls") or ()}
        for result in step.get("results") or ():
            call = calls.get(result.get("call_id"), {})
            turns.append(
                {
                    "role": "tool",
                    "name": result.get("name"),
                    "text": result.get("output", ""),
                    "is_error": bool(result.get("is_error")),
                    "arguments": call.get("arguments"),
                    "duration": result.get("duration"),
                    "reward": step.get("reward"),
                }
            )
    outcome = f"success={data.get('success')} answer={data.get('answer')!r} reward={data.get('total_reward')}"
    return Trace(
        title=title,
        turns=tuple(turns),
        stop_reason=str(data.get("stop_reason", "")),
        usage=dict(data.get("usage") or {}),
        outcome=outcome,
    )


def trace_from_data(data: Mapping[str, Any], title: str) -> Trace:
    """A trace from a saved ``RunResult`` dict or a trajectory dict."""
    if "steps" in data and "messages" in data:
        return _from_trajectory(data, title)
    if "messages" in data and "stop_reason" in data:
        return _from_run_result(data, title)
    raise ValueError(f"{title}: neither a saved RunResult nor a trajectory")


def load_traces(path: str | Path) -> list[Trace]:
    """Traces from a ``RunResult`` JSON file or a trajectories JSONL file (one per line)."""
    source = Path(path)
    text = source.read_text(encoding="utf-8")
    if source.suffix != ".jsonl":
        try:
            return [trace_from_data(json.loads(text), source.name)]
        except json.JSONDecodeError:
            pass  # JSON Lines under another name
    traces = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{source} line {number}: not JSON ({exc.msg})") from None
            label = data.get("task_id") or f"line {number}"
            traces.append(trace_from_data(data, f"{source.name}: {label}"))
    if not traces:
        raise ValueError(f"{source} holds no trace")
    return traces


def render_trace(trace: Trace) -> str:
    """One trace as nested ``<details>`` (each turn collapsible)."""
    items = []
    for index, turn in enumerate(trace.turns):
        role = turn.get("role", "?")
        classes = f"turn {role}" + (" error" if turn.get("is_error") else "")
        head = f"{index + 1}. {role}"
        if role == "tool":
            flag = " ERROR" if turn.get("is_error") else ""
            duration = turn.get("duration")
            seconds = f" {float(duration):.3f}s" if isinstance(duration, (int, float)) else ""
            head += f" {turn.get('name')}{seconds}{flag}"
        elif turn.get("calls"):
            head += " calls " + ", ".join(str(c.get("name")) for c in turn["calls"])
        parts = [f'<details class="{classes}" open><summary>{_e(head)}</summary>']
        if turn.get("arguments") is not None:
            parts.append(
                f'<div class="meta">arguments</div><pre>{_e(_json(turn["arguments"]))}</pre>'
            )
        if turn.get("text"):
            parts.append(f"<pre>{_e(turn['text'])}</pre>")
        for call in turn.get("calls") or ():
            parts.append(
                f'<div class="meta">call {_e(call.get("name"))} ({_e(call.get("id"))})</div>'
                f"<pre>{_e(_json(call.get('arguments')))}</pre>"
            )
        if turn.get("reward") is not None:
            parts.append(f'<div class="meta">step reward {_e(turn["reward"])}</div>')
        parts.append("</details>")
        items.append("".join(parts))
    return (
        f'<details class="trace" open><summary><b>{_e(trace.title)}</b> '
        f'<span class="meta">stop: {_e(trace.stop_reason)}; usage: {_e(_json(trace.usage))}'
        f"</span></summary>{''.join(items)}"
        f'<div class="meta">outcome: {_e(trace.outcome)}</div></details>'
    )
