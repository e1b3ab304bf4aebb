"""Saved KV states of the local backend (``kv_snapshots``) on a conversation whose turns switch
between the prompt with the tool list (a call) and the one without it (the text answer).

The tools are a real BFCL world's (``multi_turn_base_100``, TradingBot: about 2,300 tokens of
tool list); its user turns are asked one after another, each answered by a call (forced), a
tool result and a text answer, greedy. The baseline is the same backend with one cache
(``kv_snapshots=0``), in the same run: seconds, tokens evaluated, and whether every call and
answer came out the same.
"""

from __future__ import annotations

import time
from typing import Any

ENTRY = "multi_turn_base_100"
CALL = 64
ANSWER = 48


def _world() -> tuple[tuple[Any, ...], list[str]]:
    from tooluse.envs import environment_registry

    env = environment_registry.get(name="bfcl:multi_turn_base")
    index = next(i for i, e in enumerate(env.entries) if e.id == ENTRY)
    state, _ = env.reset(options={"task_index": index})
    return tuple(state.observation.available_tools), list(env.entries[index].turns)


def play(snapshots: int, tools: tuple[Any, ...], turns: list[str]) -> dict[str, Any]:
    """One conversation on a fresh backend: seconds, tokens evaluated, the outputs."""
    from tooluse import ChatMessage, SamplingParams, ToolResult
    from tooluse.local import LlamaCppBackend

    backend = LlamaCppBackend.default(n_ctx=8192, kv_snapshots=snapshots)
    call_params = SamplingParams(max_tokens=CALL, temperature=0.0)
    answer_params = SamplingParams(max_tokens=ANSWER, temperature=0.0)
    messages: list[Any] = []
    evaluated, outputs = 0, []
    started = time.perf_counter()
    try:
        for turn in turns:
            messages.append(ChatMessage.user(turn))
            call = backend.generate_with_tools(messages, tools, call_params, "required")
            evaluated += backend.loop.last_prefill_tokens
            messages.append(ChatMessage.assistant("", tool_calls=call.tool_calls))
            for c in call.tool_calls:
                messages.append(
                    ChatMessage.tool_result(
                        ToolResult(call_id=c.id, tool_name=c.name, output="done")
                    )
                )
            answer = backend.generate_with_tools(messages, tools, answer_params, "none")
            evaluated += backend.loop.last_prefill_tokens
            messages.append(ChatMessage.assistant(answer.text))
            outputs.append(([(c.name, c.arguments) for c in call.tool_calls], answer.text))
    finally:
        backend.close()
    return {
        "seconds": time.perf_counter() - started,
        "evaluated": evaluated,
        "outputs": outputs,
    }


def main() -> dict[str, Any]:
    tools, turns = _world()
    plain = play(0, tools, turns)
    saved = play(2, tools, turns)
    figures = {
        "user_turns": len(turns),
        "tools": len(tools),
        "one_cache_seconds": round(plain["seconds"], 2),
        "snapshots_seconds": round(saved["seconds"], 2),
        "speedup": round(plain["seconds"] / saved["seconds"], 2),
        "one_cache_tokens_evaluated": plain["evaluated"],
        "snapshots_tokens_evaluated": saved["evaluated"],
        "tokens_ratio": round(plain["evaluated"] / max(saved["evaluated"], 1), 2),
        "same_outputs": plain["outputs"] == saved["outputs"],
    }
    for key, value in figures.items():
        print(f"{key:32} {value}")
    return figures


if __name__ == "__main__":
    main()
