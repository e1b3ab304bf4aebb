"""The embedded SmolLM2-135M's weights as shipped (Q4_1) against copies in Q8_0 and F16
(``local:base#weights=q8_0``), all measured in the same run, each the best of 3 alternating
runs where it is a rate:

1. **prompt**: tokens/s reading a 400-token prompt (llama-cpp-python's ``eval``, one chunk).
2. **decode**: generated tokens/s of 1 and of 8 sequences decoded together by llama.cpp
   itself (``bench_batch``'s limit, 64 tokens each, greedy).
3. **bfcl** (Q4_1 and Q8_0 only): ``tooluse eval bfcl`` with ``local:base`` on 60
   simple_python entries at ``-j 1`` and at ``-j 8`` (items/min), then 50 multiple and 50
   irrelevance entries at ``-j 8``: correct entries per category, and the entries whose verdict
   differs between the two.

llama.cpp multiplies many rows at once (a prompt, a batch of sequences) through a faster
routine for Q8_0 and F16 weights than for Q4_1 on an AVX2 CPU; a lone sequence's decoding
reads the weights once a token, where the smaller file is not slower.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the sibling bench_batch, whose decode limit and BFCL run these are

import bench_batch  # noqa: E402

FORMATS = ("q4_1", "q8_0", "f16")  # q4_1: the file as shipped
BFCL_FORMATS = ("q4_1", "q8_0")
PROMPT_TOKENS = 400
REPEATS = 3
ACCURACY = (("multiple", 50), ("irrelevance", 50))


def _model_file(name: str) -> Path:
    from tooluse.local.model_files import default_model_path
    from tooluse.local.weights import converted_weights

    shipped = default_model_path()
    return shipped if name == "q4_1" else converted_weights(shipped, name)


def _prompt_rate(llm: Any) -> float:
    """Tokens/s reading one prompt, on the compute thread (as ``bench_batch.raw_limit``: a
    second OpenMP team spinning after its work would slow the next measurement)."""
    from tooluse.local.threads import on_compute_thread

    return on_compute_thread(lambda: _read_prompt(llm))


def _read_prompt(llm: Any) -> float:
    text = " ".join(
        f"Tool {i} takes a city and a date and returns the forecast." for i in range(40)
    )
    tokens = llm.tokenize(text.encode())[:PROMPT_TOKENS]
    llm.reset()
    started = time.perf_counter()
    llm.eval(tokens)
    return round(len(tokens) / (time.perf_counter() - started), 1)


def speeds() -> dict[str, dict[str, float]]:
    """Prompt and decode rates of each format (the best of REPEATS alternating runs)."""
    import llama_cpp

    from tooluse.local.threads import default_threads, llama_thread_options

    threads = default_threads()
    best: dict[str, dict[str, float]] = {name: {} for name in FORMATS}
    for _ in range(REPEATS):
        for name in FORMATS:
            llm = llama_cpp.Llama(
                model_path=str(_model_file(name)), n_ctx=1024, n_batch=512, verbose=False,
                **llama_thread_options(threads),
            )  # fmt: skip
            limit = bench_batch.raw_limit(llm, threads)
            rates = {"prompt": _prompt_rate(llm), "decode_1": limit[1], "decode_8": limit[8]}
            llm.close()
            for key, rate in rates.items():
                best[name][key] = max(best[name].get(key, 0.0), rate)
    return best


def bfcl(scratch: Path, rates: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Both BFCL figures of each of BFCL_FORMATS: speed on simple_python (beside the most
    batching could give it with that format's decode gain at 8), then accuracy."""
    from tooluse.evals.bfcl import load_bfcl_category

    runs: dict[str, Any] = {}
    verdicts: dict[str, dict[str, Any]] = {}
    for name in BFCL_FORMATS:
        model = "local:base" if name == "q4_1" else f"local:base#weights={name}"
        alone, _ = bench_batch.bfcl_run(scratch, f"{name}-j1", model, concurrency=1)
        batched, seen = bench_batch.bfcl_run(scratch, f"{name}-j8", model, concurrency=8)
        correct = {"simple_python": batched["correct"]}
        for category, count in ACCURACY:
            entries = load_bfcl_category(category)[:count]
            figures, found = bench_batch.bfcl_run(
                scratch, f"{name}-{category}", model, entries, concurrency=8
            )
            correct[category] = figures["correct"]
            seen.update(found)
        verdicts[name] = {key: valid for key, (valid, _) in seen.items()}
        runs[name] = {
            "j1_items_per_minute": alone["items_per_minute"],
            "j8_items_per_minute": batched["items_per_minute"],
            "j8_over_j1": round(batched["items_per_minute"] / alone["items_per_minute"], 2),
            "bound_at_8": bench_batch.batching_bound(
                alone, batched, rates[name]["decode_8"] / rates[name]["decode_1"]
            ),
            "engine_j1": alone.get("engine"),
            "engine_j8": batched.get("engine"),
            "correct": correct,
        }
    shipped, copy = verdicts["q4_1"], verdicts["q8_0"]
    return {
        "entries": {"simple_python": bench_batch.BFCL_ENTRIES, **dict(ACCURACY)},
        "formats": runs,
        "verdicts_differ": sorted(key for key in shipped if shipped[key] != copy.get(key)),
        "q8_0_j8_over_q4_1_j1": round(
            runs["q8_0"]["j8_items_per_minute"] / runs["q4_1"]["j1_items_per_minute"], 2
        ),
    }


def main() -> dict[str, Any]:
    rates = speeds()
    print(f"{'weights':>8}{'prompt tok/s':>14}{'decode 1':>10}{'decode 8':>10}")
    for name in FORMATS:
        r = rates[name]
        print(f"{name:>8}{r['prompt']:>14}{r['decode_1']:>10}{r['decode_8']:>10}")
    figures: dict[str, Any] = {"rates": rates}
    with tempfile.TemporaryDirectory(prefix="bench-weights-") as scratch:
        figures["bfcl"] = b = bfcl(Path(scratch), rates)
    for name, run in b["formats"].items():
        print(f"BFCL {name}: simple_python -j 1 {run['j1_items_per_minute']} items/min, "
              f"-j 8 {run['j8_items_per_minute']} ({run['j8_over_j1']}x, "
              f"about {run['bound_at_8']}x at most); "
              f"correct {run['correct']}")  # fmt: skip
    print(f"Q8_0 at -j 8 over Q4_1 at -j 1: {b['q8_0_j8_over_q4_1_j1']}x; "
          f"verdicts that differ: {len(b['verdicts_differ'])} of {sum(b['entries'].values())}")  # fmt: skip
    return figures


if __name__ == "__main__":
    main()
