"""How often ``tooluse demo`` answers its questions right, on ``local`` and ``local:base``.

The demo runs ``local`` (the embedded model with its shipped adapter) at temperature 0 without
the argument check (the same answers every run); to see how robust those answers are, the same
questions also run 10 times at temperature 0.7 with seeds 0-9. Each model is measured with the
demo's argument check and without it (the calculator then gets what the model wrote), so the
table shows what the check and the adapter are worth. A third model, ``adapter``, is the same
shipped adapter at the same strength with the library's defaults instead of ``local``'s rules
(``local:base#lora=<shipped>#lora_scale=0.5``): what those rules are worth on the demo. An
answer is right as ``tooluse demo`` judges it (``answer_problem``): the weather answer must hold
the number the weather tool returned, so one made up without the tool is wrong.
"""

from __future__ import annotations

import time
from typing import Any

from tooluse import SamplingParams, run
from tooluse.cli.local_cmd import DEMO_QUESTIONS, answer_problem
from tooluse.local.demo_tools import demo_tools, expression_check
from tooluse.local.model_files import trained_adapter_path
from tooluse.providers import load_model

SEEDS = range(10)


def models() -> dict[str, str]:
    """The model strings measured, by label."""
    adapter = f"local:base#lora={trained_adapter_path()}#lora_scale=0.5#n_ctx=2048"
    return {"trained": "local:#n_ctx=2048", "base": "local:base#n_ctx=2048", "adapter": adapter}


def ask(backend: Any, question: str, *, temperature: float, seed: int, helped: bool) -> bool:
    result = run(
        backend,
        question,
        tools=demo_tools(),
        params=SamplingParams(max_tokens=96, temperature=temperature, seed=seed),
        max_tool_iters=2,
        before_tool_call=expression_check(question) if helped else None,
    )
    return answer_problem(question, result) is None


def measure(backend: Any) -> dict[str, Any]:
    """Right answers with and without the argument check, greedy and sampled."""
    figures: dict[str, Any] = {}
    for helped in (True, False):
        label = "helped" if helped else "unhelped"
        greedy = {
            q: ask(backend, q, temperature=0.0, seed=0, helped=helped) for q in DEMO_QUESTIONS
        }
        sampled = {
            q: sum(ask(backend, q, temperature=0.7, seed=s, helped=helped) for s in SEEDS)
            for q in DEMO_QUESTIONS
        }
        figures[label] = {"temperature_0": greedy, "temperature_0.7_of_10": sampled}
    return figures


def main() -> dict[str, Any]:
    figures: dict[str, Any] = {}
    started = time.perf_counter()
    specs = models()
    for label, spec in specs.items():
        backend = load_model(spec)
        figures[label] = measure(backend)
        backend.close()
    figures["seconds"] = round(time.perf_counter() - started, 1)
    print(f"{'question':34}{'model':>9}{'t=0 helped':>12}{'t=0 plain':>11}", end="")
    print(f"{'t=0.7 helped':>14}{'t=0.7 plain':>13}")
    for q in DEMO_QUESTIONS:
        for label in specs:
            h, u = figures[label]["helped"], figures[label]["unhelped"]
            print(
                f"{q:34}{label:>9}{'right' if h['temperature_0'][q] else 'wrong':>12}"
                f"{'right' if u['temperature_0'][q] else 'wrong':>11}"
                f"{h['temperature_0.7_of_10'][q]:>11}/10{u['temperature_0.7_of_10'][q]:>10}/10"
            )
    return figures


if __name__ == "__main__":
    main()
