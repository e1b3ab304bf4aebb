"""Batched generation on the embedded SmolLM2-135M (``tooluse.local.batching``), each figure
beside the machine's batched-decode limit measured in the same run:

1. **limit**: llama.cpp's own batched decoding through its low-level API (one context holding N
   sequences, one ``llama_decode`` per step over all of them, greedy, no grammar, 64 tokens
   each), N = 1, 2, 4, 8, 16: generated tokens/s, all sequences together. Then the batch
   engine doing the same through ``BatchEngine.run`` from N threads (its overhead); each the
   best of 3 alternating runs.
2. **bfcl**: ``tooluse eval bfcl`` on 60 simple_python entries with ``local:base``, ``-j 1``
   (one sequence at a time) against ``-j 8`` (one batched model): items/min, and whether every
   verdict and decoded call is the same.
3. **rft**: ``train rft``'s sampling, k = 8 samples per task of math:arithmetic's train split:
   samples/s played together against one at a time (the same trajectories).
4. **ray**: the same 60 entries on the Ray engine with 2 actors against the local engine
   (``-j 8``): items/min, with the phases timed (Ray start, actors' model load, the items).

``tooluse serve`` under 8 concurrent clients is in ``bench_serve.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

SIZES = (1, 2, 4, 8, 16)
REPEATS = 3
DECODE_TOKENS = 64
BFCL_ENTRIES = 60
RFT_TASKS = 6
RFT_SAMPLES = 8
TOPICS = ("cat", "dog", "robot", "river", "king", "ship", "tree", "star",
          "lamp", "bird", "cloud", "horse", "train", "book", "moon", "sun")  # fmt: skip


def _prompt(topic: str) -> str:
    return (
        f"<|im_start|>user\nTell me a short story about a {topic}.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def raw_limit(llm: Any, threads: int) -> dict[int, float]:
    """Generated tokens/s of N sequences decoded together by llama.cpp itself (on the thread
    the engine computes on: llama.cpp's OpenMP team belongs to the thread that computes, and
    a second team's idle spinning would slow the first)."""
    from tooluse.local.threads import on_compute_thread

    return on_compute_thread(lambda: _raw_limit(llm, threads))


def _raw_limit(llm: Any, threads: int) -> dict[int, float]:
    import llama_cpp as lib

    vocab_size = llm.n_vocab()
    rates: dict[int, float] = {}
    for count in SIZES:
        params = lib.llama_context_params.from_buffer_copy(llm.context_params)
        params.n_ctx, params.n_seq_max, params.kv_unified = 1024 * count, count, False
        params.n_threads = params.n_threads_batch = threads
        ctx = lib.llama_init_from_model(llm._model.model, params)
        batch = lib.llama_batch_init(512, 0, 1)
        prompts = [llm.tokenize(_prompt(t).encode(), add_bos=False, special=True) for t in TOPICS]
        last, position = [], []
        for seq, tokens in enumerate(prompts[:count]):
            batch.n_tokens = len(tokens)
            for i, token in enumerate(tokens):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, i, 1
                batch.seq_id[i][0], batch.logits[i] = seq, i == len(tokens) - 1
            lib.llama_decode(ctx, batch)
            row = lib.llama_get_logits_ith(ctx, len(tokens) - 1)
            last.append(int(np.argmax(np.ctypeslib.as_array(row, shape=(vocab_size,)))))
            position.append(len(tokens))
        started = time.perf_counter()
        for _ in range(DECODE_TOKENS - 1):
            batch.n_tokens = count
            for seq in range(count):
                batch.token[seq], batch.pos[seq], batch.n_seq_id[seq] = last[seq], position[seq], 1
                batch.seq_id[seq][0], batch.logits[seq] = seq, True
                position[seq] += 1
            lib.llama_decode(ctx, batch)
            for seq in range(count):
                row = lib.llama_get_logits_ith(ctx, seq)
                last[seq] = int(np.argmax(np.ctypeslib.as_array(row, shape=(vocab_size,))))
        rates[count] = round(count * (DECODE_TOKENS - 1) / (time.perf_counter() - started), 1)
        lib.llama_batch_free(batch)
        lib.llama_free(ctx)
    return rates


def engine_rates(llm: Any, threads: int) -> dict[int, float]:
    """The same through the batch engine: N threads each running one sequence."""
    from tooluse.local.batching import BatchEngine
    from tooluse.local.sampling import DecodeSettings

    rates: dict[int, float] = {}
    for count in SIZES:
        engine = BatchEngine(llm, n_ctx=1024, batch=count, keep=0, threads=threads)
        prompts = [engine.tokenize(_prompt(t)) for t in TOPICS[:count]]
        # prompts read beforehand, as in the raw measurement, and together: the context has
        # grown to hold them all before the clock starts
        reading = [threading.Thread(target=engine.next_logits, args=(p,)) for p in prompts]
        for thread in reading:
            thread.start()
        for thread in reading:
            thread.join()
        counts = [0] * count
        settings = DecodeSettings(max_tokens=DECODE_TOKENS)
        barrier = threading.Barrier(count + 1)

        def one(index: int, prompt: list[int]) -> None:
            barrier.wait()
            counts[index] = sum(1 for _ in engine.run(prompt, settings))

        workers = [threading.Thread(target=one, args=(i, p)) for i, p in enumerate(prompts)]
        for worker in workers:
            worker.start()
        barrier.wait()
        started = time.perf_counter()
        for worker in workers:
            worker.join()
        rates[count] = round(sum(counts) / (time.perf_counter() - started), 1)
        engine.close()
    return rates


def bfcl_run(
    scratch: Path, name: str, model: str = "local:base", entries: Any = None, **options: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One ``tooluse eval bfcl`` run (BFCL_ENTRIES simple_python entries unless ``entries``):
    its items/min, correct count and engine time split, and each entry's verdict and call."""
    from tooluse.evals.bfcl import load_bfcl_category
    from tooluse.evals.bfcl.job import BFCLOptions, run_bfcl_job
    from tooluse.providers import load_model

    if entries is None:
        entries = load_bfcl_category("simple_python")[:BFCL_ENTRIES]
    loaded: list[Any] = []

    def keep(model: str) -> Any:  # the local engine's backend, for its time split
        loaded.append(load_model(model))
        return loaded[-1]

    if options.get("engine") != "ray":
        options["backend_factory"] = keep
    started = time.perf_counter()
    summary = run_bfcl_job(entries, model, BFCLOptions(), scratch / name, progress=False, **options)
    seconds = time.perf_counter() - started
    rows = [
        json.loads(line) for line in (scratch / name / "results.jsonl").read_text().splitlines()
    ]
    verdicts = {row["id"]: (row.get("valid"), json.dumps(row.get("decoded"))) for row in rows}
    figures: dict[str, Any] = {
        "items_per_minute": round(len(entries) / seconds * 60, 1),
        "seconds": round(seconds, 1),
        "correct": summary["correct"],
    }
    if loaded:
        figures["engine"] = engine_time([backend.engine.stats for backend in loaded])
    return figures, verdicts


def engine_time(stats: list[Any], since: list[Any] | None = None) -> dict[str, Any]:
    """Where the local engines' compute thread spent the run (their ``EngineStats``, less
    ``since``'s): reading prompts (prefill), decoding the generating sequences' tokens, and
    the rest of its steps (sampling, grammar, queues), with the tokens of each."""
    if since is not None:
        stats = [
            replace(now, **{k: getattr(now, k) - getattr(then, k) for k in vars(now)})
            for now, then in zip(stats, since, strict=True)
        ]
    return {
        "prefill_seconds": round(sum(s.prompt_seconds for s in stats), 1),
        "decode_seconds": round(sum(s.decode_seconds for s in stats), 1),
        "step_seconds": round(sum(s.step_seconds for s in stats), 1),
        "prompt_tokens": sum(s.prompt_tokens for s in stats),
        "reused_tokens": sum(s.reused_tokens for s in stats),
        "decoded_tokens": sum(s.decoded for s in stats),
        "decode_steps": sum(s.steps for s in stats),  # tokens / steps: sequences per step
    }


def batching_bound(alone: dict[str, Any], batched: dict[str, Any], gain: float) -> float:
    """About the most batching can give a workload over one sequence at a time: the batched
    run's prompt reading (prompts are read in chunks already, and a chunk of several prompts
    is no faster per token on this CPU; a prompt shared by the batch is read once), the
    one-at-a-time run's decoding sped up by the machine's decode ``gain``, and the rest of the
    one-at-a-time run (Python: sampling, parsing, checking) as it was."""
    seconds = alone["seconds"]
    prefill, decode = alone["engine"]["prefill_seconds"], alone["engine"]["decode_seconds"]
    best = batched["engine"]["prefill_seconds"] + decode / gain + (seconds - prefill - decode)
    return round(seconds / best, 2)


def bfcl(scratch: Path) -> dict[str, Any]:
    alone, alone_verdicts = bfcl_run(scratch, "j1", concurrency=1)
    batched, batched_verdicts = bfcl_run(scratch, "j8", concurrency=8)
    differ = sorted(key for key in alone_verdicts if alone_verdicts[key] != batched_verdicts[key])
    return {
        "entries": BFCL_ENTRIES,
        "one_at_a_time": alone,
        "batched_j8": batched,
        "ratio": round(batched["items_per_minute"] / alone["items_per_minute"], 2),
        "verdicts_differ": differ,
    }


def rft(scratch: Path) -> dict[str, Any]:
    from tooluse.envs import environment_registry
    from tooluse.train.rft import RFTOptions, _backend, _runner, _sample
    from tooluse.train.sft import SFTOptions

    options = RFTOptions(
        environments=(("math:arithmetic", RFT_TASKS + 1),),
        sft=SFTOptions(out=scratch / "rft"),
        held_out=1,
        samples=RFT_SAMPLES,
        temperature=0.8,
        max_tokens=96,
    )
    env = environment_registry.get(
        name="math:arithmetic", split="train", size=RFT_TASKS + 1, seed=0
    )
    backend = _backend(None)
    try:
        _sample(env, backend, options, round_number=1)  # warm: the prompts' first evaluation
        before = [replace(backend.engine.stats)]
        started = time.perf_counter()
        together = _sample(env, backend, options, round_number=1)
        batched_seconds = time.perf_counter() - started
        together_time = engine_time([backend.engine.stats], before)
        before = [replace(backend.engine.stats)]
        started = time.perf_counter()
        alone = []
        for sample in range(RFT_SAMPLES):
            runner = _runner(env, backend, options, options.temperature, 100 + sample)
            alone += [runner.run_trajectory(task_index=i) for i in range(RFT_TASKS)]
        alone_seconds = time.perf_counter() - started
        alone_time = engine_time([backend.engine.stats], before)
    finally:
        backend.close()

    def said(trajectory: Any) -> str:
        return json.dumps(
            [(m["role"], m.get("content"), [(c["name"], c["arguments"])
              for c in m.get("tool_calls", ())]) for m in trajectory.to_dict()["messages"]]
        )  # fmt: skip

    samples = RFT_TASKS * RFT_SAMPLES
    return {
        "tasks": RFT_TASKS,
        "samples_per_task": RFT_SAMPLES,
        "batched_samples_per_s": round(samples / batched_seconds, 3),
        "one_at_a_time_samples_per_s": round(samples / alone_seconds, 3),
        "ratio": round(alone_seconds / batched_seconds, 2),
        "one_at_a_time": {"seconds": round(alone_seconds, 1), "engine": alone_time},
        "together": {"seconds": round(batched_seconds, 1), "engine": together_time},
        "same_trajectories": [said(t) for t in together] == [said(t) for t in alone],
    }


def ray(scratch: Path, local_items_per_minute: float) -> dict[str, Any]:
    import ray as ray_module

    from tooluse.evals.engine_ray import ensure_ray

    started = time.perf_counter()
    ensure_ray(None)
    ray_start = time.perf_counter() - started
    try:
        figures, _ = bfcl_run(scratch, "ray", engine="ray", workers=2)
    finally:
        ray_module.shutdown()
    return {
        "ray_start_seconds": round(ray_start, 1),
        "ray_2_actors": figures,
        "local_j8_items_per_minute": local_items_per_minute,
        "ratio": round(figures["items_per_minute"] / local_items_per_minute, 2),
    }


def main() -> dict[str, Any]:
    import llama_cpp

    from tooluse.local.model_files import default_model_path
    from tooluse.local.threads import default_threads, llama_thread_options

    threads = default_threads()
    llm = llama_cpp.Llama(
        model_path=str(default_model_path()), n_ctx=256, verbose=False,
        **llama_thread_options(threads),
    )  # fmt: skip
    # the best of REPEATS alternating runs of each: this machine's speed drifts by a third from
    # one minute to the next, and alternating keeps the two sides under the same drift
    limit: dict[int, float] = {}
    engine: dict[int, float] = {}
    for _ in range(REPEATS):
        for count, rate in raw_limit(llm, threads).items():
            limit[count] = max(limit.get(count, 0.0), rate)
        for count, rate in engine_rates(llm, threads).items():
            engine[count] = max(engine.get(count, 0.0), rate)
    llm.close()
    print(f"decode limit, {threads} threads: tokens/s of N sequences decoded together")
    print(f"{'N':>4}{'llama.cpp':>12}{'engine':>10}{'engine/limit':>14}")
    for count in SIZES:
        print(f"{count:>4}{limit[count]:>12}{engine[count]:>10}"
              f"{engine[count] / limit[count]:>14.2f}")  # fmt: skip
    figures: dict[str, Any] = {
        "threads": threads,
        "limit_tokens_per_s": limit,
        "engine_tokens_per_s": engine,
        "limit_gain_at_8": round(limit[8] / limit[1], 2),
    }
    scratch = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    try:
        figures["bfcl"] = b = bfcl(scratch)
        b["bound_at_8"] = batching_bound(
            b["one_at_a_time"], b["batched_j8"], figures["limit_gain_at_8"]
        )
        print(f"\nBFCL simple_python x{BFCL_ENTRIES}, local:base: "
              f"-j 1 {b['one_at_a_time']['items_per_minute']} items/min, "
              f"-j 8 {b['batched_j8']['items_per_minute']} ({b['ratio']}x; "
              f"decode limit {figures['limit_gain_at_8']}x, about {b['bound_at_8']}x at most: "
              f"{b['one_at_a_time']['engine']}, {b['batched_j8']['engine']}); "
              f"verdicts that differ: {len(b['verdicts_differ'])}")  # fmt: skip
        figures["rft"] = rft(scratch)
        r = figures["rft"]
        r["bound_at_8"] = batching_bound(
            r["one_at_a_time"], r["together"], figures["limit_gain_at_8"]
        )
        print(f"RFT sampling, {RFT_TASKS} tasks x {RFT_SAMPLES}: "
              f"{r['batched_samples_per_s']} samples/s together, "
              f"{r['one_at_a_time_samples_per_s']} one at a time ({r['ratio']}x, "
              f"about {r['bound_at_8']}x at most: {r['one_at_a_time']['engine']}, "
              f"{r['together']['engine']}); "
              f"same trajectories: {r['same_trajectories']}")  # fmt: skip
        if os.environ.get("TOOLUSE_BENCH_RAY", "1") != "0":
            figures["ray"] = ray(scratch, b["batched_j8"]["items_per_minute"])
            y = figures["ray"]
            print(f"Ray, 2 actors: {y['ray_2_actors']['items_per_minute']} items/min, "
                  f"{y['ratio']}x the local engine (Ray start {y['ray_start_seconds']} s)")  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
