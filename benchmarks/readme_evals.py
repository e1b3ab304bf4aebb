"""The README's figures of model measurements (training, every BFCL category, tool search),
rendered by ``readme_figures.py`` from ``benchmarks/results/``; ``r`` is its ``Results``."""

from __future__ import annotations

from typing import Any


def _row(source: str, what: str, ours: str, baseline: str = "", ratio: str = "") -> str:
    return f"| {what} (`{source}.json`) | {ours} | {baseline} | {ratio} |"


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def rows_tool_search(r: Any) -> list[str]:
    f = r.figures("tool_search")
    n, q = f["tools"], f["questions"]
    return [
        _row(
            "tool_search",
            f"{n} BFCL tools, {q} simple_python questions: `ToolSearch(top_k=5)` prompt",
            f"{f['search_prompt_tokens']:,} tokens, right tool {_pct(f['search_right_tool_rate'])}",
            f"all {n} schemas: {f['all_prompt_tokens']:,} tokens "
            f"(right tool {_pct(f['all_right_tool_rate'])})",
            f"{f['search_tokens_over_all']:.3f}x",
        ),
        _row(
            "tool_search",
            "same, `tools_top_k=5` (BM25 on the request, no extra turn)",
            f"{f['top_k_prompt_tokens']:,} tokens, right tool {_pct(f['top_k_right_tool_rate'])}",
            f"all {n} schemas: {f['all_prompt_tokens']:,} tokens",
            f"{f['top_k_tokens_over_all']:.3f}x",
        ),
        _row(
            "tool_search",
            f"retrieval alone, {f['retrieval_questions']} simple_python questions among "
            f"{f['retrieval_tools']:,} tools: own function in the top 5, rank fusion of BM25 "
            "and embeddings",
            _pct(f["fusion_top5_rate"]),
            f"BM25: {_pct(f['bm25_top5_rate'])}",
            f"{f['fusion_top5_over_bm25']:.3f}x",
        ),
    ]


def render_tool_search(r: Any) -> str:
    f = r.figures("tool_search")
    n, q = f["tools"], f["questions"]
    rate = _pct
    return (
        f"Measured (`benchmarks/bench_tool_search.py`, figures from "
        f"`benchmarks/results/tool_search.json`): {n} tools built from BFCL's function docs, "
        f"{q} simple_python questions whose function is among them, the embedded SmolLM2 model, "
        f"a call required. All {n} schemas take {f['all_prompt_tokens']:,} prompt tokens, far "
        f"beyond the model's context, so no question gets an answer "
        f"(right tool {rate(f['all_right_tool_rate'])}); `ToolSearch(top_k=5)` starts with "
        f"{f['search_prompt_tokens']:,} tokens ({f['search_tokens_over_all']:.3f}x) and finds "
        f"the right tool in {rate(f['search_right_tool_rate'])}; `tools_top_k=5` sends "
        f"{f['top_k_prompt_tokens']:,} tokens ({f['top_k_tokens_over_all']:.3f}x) and gets "
        f"{rate(f['top_k_right_tool_rate'])}. Retrieval alone, every one of the "
        f"{f['retrieval_questions']} simple_python questions among all {f['retrieval_tools']:,} "
        f"distinct functions of four categories: BM25 ranks the question's own function first "
        f"for {rate(f['bm25_top1_rate'])} and in the top 5 for {rate(f['bm25_top5_rate'])}; "
        f"`EmbeddingScorer()` (all-MiniLM-L6-v2, the `embeddings` extra) "
        f"{rate(f['embedding_top1_rate'])} and {rate(f['embedding_top5_rate'])}; "
        f"`RankFusionScorer(BM25Scorer(), EmbeddingScorer())` {rate(f['fusion_top1_rate'])} and "
        f"{rate(f['fusion_top5_rate'])} ({f['fusion_top5_over_bm25']:.3f}x BM25's top 5)."
    )


def _rate(row: dict[str, Any] | None) -> str:
    if not row:
        return "-"
    return f"{row['rate']:.0%} ({row['correct']}/{row['total']})"


def _change(row: dict[str, Any]) -> str:
    if "base" not in row or "trained" not in row:
        return ""
    points = (row["trained"]["rate"] - row["base"]["rate"]) * 100
    return f"{round(points):+d}"  # "+0", never "-0", for a change under half a point


def _train_rows(evaluations: dict[str, Any]) -> list[str]:
    lines = []
    for name, row in evaluations.items():
        if name == "bfcl":
            continue
        lines.append(
            f"| {name} (test) | {_rate(row.get('base'))} | {_rate(row.get('trained'))} "
            f"| {_change(row)} |"
        )
    bfcl = evaluations.get("bfcl")
    if bfcl:
        categories = (bfcl.get("trained") or bfcl.get("base") or {}).get("categories", {})
        for category in categories:
            cells = {
                k: bfcl[k]["categories"].get(category) for k in ("base", "trained") if k in bfcl
            }
            lines.append(
                f"| BFCL {category} | {_rate(cells.get('base'))} "
                f"| {_rate(cells.get('trained'))} | {_change(cells)} |"
            )
        lines.append(
            f"| **BFCL single-turn, all** | {_rate(bfcl.get('base'))} "
            f"| {_rate(bfcl.get('trained'))} | {_change(bfcl)} |"
        )
    return lines


def render_train(r: Any) -> str:
    record = r.record("train")
    card = record.get("card") or {}
    metrics = card.get("metrics", {})
    lines = [
        "| `benchmarks/results/train.json` | base (`local:base`) | trained (`local`) | points |",
        "|---|---|---|---|",
        *_train_rows(record["evaluations"]),
        "",
        f"The adapter: {record['adapter_bytes'] / 1e6:.1f} MB GGUF LoRA, {card.get('method', '?')} "
        f"on {card.get('examples', '?')} turns, {metrics.get('steps', '?')} steps in "
        f"{card.get('wall_seconds', 0) / 60:.0f} minutes "
        f"({metrics.get('tokens_per_second', '?')} training tokens/s), "
        f"loss {metrics.get('loss_first', 0):.3f} -> {metrics.get('loss_last', 0):.3f}; "
        f"the base model ran as `local:base`, the trained one as "
        f"`local:base#lora=A{_train_setting(record)}`; both models played the environments with `--tool-choice {record.get('env_tool_choice', 'auto')}`.",
    ]
    return "\n".join(lines)


def _train_setting(record: dict[str, Any]) -> str:
    """The model-string suffixes the trained column ran with (defaults left out)."""
    scale = record.get("lora_scale", 1.0)
    setting = f"#lora_scale={scale:g}" if scale != 1.0 else ""
    keys = (
        ("decider", "model"),
        ("narrow", "off"),
        ("grounding", "on"),
        ("judge", "model"),
        ("text", "model"),
    )
    for key, default in keys:
        value = record.get(key, default)
        setting += f"#{key}={value}" if value != default else ""
    return setting


def _cell(row: dict[str, Any] | None) -> str:
    if not row or not row.get("total"):
        return "not run"
    return f"{row['correct'] / row['total']:.0%} ({row['correct']}/{row['total']})"


def _score_lines(models: dict[str, Any]) -> list[str]:
    labels = list(models)
    groups = list(next(iter(models.values()))["score"]["groups"])
    lines = [
        "| **overall score** | "
        + " | ".join(f"**{models[k]['score']['overall']:.1%}**" for k in labels)
        + " |"
    ]
    for name in groups:
        cells = []
        for label in labels:
            group = models[label]["score"]["groups"][name]
            cells.append(f"{group['accuracy']:.1%}")
        weight = models[labels[0]]["score"]["groups"][name]["weight"]
        lines.append(f"| {name} group (weight {weight}) | " + " | ".join(cells) + " |")
    return lines


def render_bfcl(r: Any) -> str:
    models: dict[str, Any] = r.record("bfcl")["models"]
    labels = list(models)
    categories: list[str] = []
    for found in models.values():
        categories += [c for c in found["categories"] if c not in categories]
    first = models[labels[0]]
    missing = first["score"]["missing"]
    categories += [c for c in missing if c not in categories]
    lines = [
        "| category (`benchmarks/results/bfcl.json`) | " + " | ".join(labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    for category in categories:
        cells = [_cell(models[k]["categories"].get(category)) for k in labels]
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    lines += _score_lines(models)
    lines += [
        "",
        f"Not run, so counted as 0 in the score as bfcl-eval counts them: "
        f"{', '.join(missing) or 'none'}. Every other category is a sample (the score "
        f"weighs the live categories by the sampled counts). "
        + " ".join(_bfcl_model_sentence(label, found) for label, found in models.items())
        + (
            f" The commands are the {labels[0]} runs'; the others differ only in MODEL and in "
            "the folder their runs go to."
            if len(labels) > 1
            else ""
        ),
        "",
        "<!-- docs-test: parse-only: MODEL stands for the model string above; each runs for minutes"
        " to hours -->",
        "```bash",
        *(
            f"# not run here: {command}" if name in first.get("skipped", ()) else command
            for name, command in first["commands"].items()
        ),
        "```",
    ]
    return "\n".join(lines)


def _bfcl_model_sentence(label: str, found: dict[str, Any]) -> str:
    """One model's format sensitivity (apart from the score) and the time its runs took."""
    sensitivity = found.get("format_sensitivity") or {}
    formats = sensitivity.get("formats", {})
    seconds = sum(found["wall_seconds"].values())
    conditions = f" ({found['conditions']})" if found.get("conditions") else ""
    return (
        f"{label} (`{found.get('model', label)}`): format sensitivity "
        f"{sum(f['correct'] for f in formats.values())}/"
        f"{sum(f['total'] for f in formats.values())} right over {len(formats)} of 26 formats, "
        f"largest difference {sensitivity.get('max_delta', 0):.0f} points, standard deviation "
        f"{sensitivity.get('std', 0):.1f}; its runs took {seconds / 60:.0f} minutes on the "
        f"2-core machine{conditions}."
    )


def rows_kv_snapshots(r: Any) -> list[str]:
    f = r.figures("kv_snapshots")
    same = "the same calls and answers" if f["same_outputs"] else "some outputs differ"
    return [
        _row(
            "kv_snapshots",
            f"local conversation over a BFCL world's {f['tools']} tools, {f['user_turns']} "
            "turns of call then answer",
            f"{f['snapshots_seconds']:.0f} s, {f['snapshots_tokens_evaluated']:,} tokens "
            f"evaluated (saved KV states; {same})",
            f"one cache: {f['one_cache_seconds']:.0f} s, "
            f"{f['one_cache_tokens_evaluated']:,} tokens",
            f"{f['speedup']:.2f}x",
        )
    ]


def rows_train_speed(r: Any) -> list[str]:
    f = r.figures("train_speed")
    return [
        _row(
            "train_speed",
            "the training base model read by each `train` command",
            f"{f['base_cached_read_seconds']:.1f} s from the cached conversion",
            f"transformers reading the GGUF (and writing the cache): "
            f"{f['base_gguf_read_seconds']:.0f} s",
            f"{f['base_cache_speedup']:.0f}x",
        ),
        _row(
            "train_speed",
            f"`train sft`, LoRA rank 16, {f['sft_steps']} steps of {f['sft_tokens']:,} tokens",
            f"{f['sft_tokens_per_second']:.0f} tokens/s trained",
            f"a forward pass alone: {f['forward_tokens_per_second']:.0f} tokens/s",
            f"{f['sft_over_forward']:.2f}x",
        ),
        _row(
            "train_speed",
            f"`train sft` on {f['mixed_examples']} turns, half long BFCL, half short "
            "arithmetic, in batches grouped by length",
            f"{f['sft_grouped_tokens_per_second']:.0f} tokens/s trained",
            f"random batches: {f['sft_random_tokens_per_second']:.0f} tokens/s "
            f"({f['sft_kept_tokens_per_second']:.0f} with the activations kept)",
            f"{f['sft_grouped_over_random']:.2f}x",
        ),
        _row(
            "train_speed",
            f"{f['episodes']} math:arithmetic rollouts (python tool), llama.cpp on the GGUF",
            f"{f['llama_cpp_episodes_per_second']:.2f} episodes/s, "
            f"{f['llama_cpp_model_tokens_per_second']:.0f} model tokens/s",
            f"transformers `generate`, batched: {f['transformers_episodes_per_second']:.2f} "
            f"episodes/s, {f['transformers_model_tokens_per_second']:.0f} tokens/s",
            f"{f['llama_cpp_episodes_over_transformers']:.2f}x",
        ),
    ]


def _count(correct: int, total: int) -> str:
    return f"{correct / total * 100:.0f}% ({correct}/{total})"


def _grounding_cells(row: dict[str, list[int]] | None) -> list[str]:
    if not row:
        return ["-", "-", ""]
    (off, n), (on, _) = row["off"], row["on"]
    return [_count(off, n), _count(on, n), f"{round(100 * (on - off) / n):+d}"]


def _grounding_total(table: dict[str, dict[str, list[int]]]) -> dict[str, list[int]] | None:
    if not table:
        return None
    return {
        side: [
            sum(row[side][0] for row in table.values()),
            sum(row[side][1] for row in table.values()),
        ]
        for side in ("off", "on")
    }


def render_grounding(r: Any) -> str:
    f = r.figures("grounding")
    table, held_out = f["categories"], f.get("held_out") or {}
    lines = [
        "| `benchmarks/results/grounding.json` | entries 1-50: off | on | points "
        "| entries 51-100: off | on | points |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in table.items():
        cells = _grounding_cells(row) + _grounding_cells(held_out.get(name))
        lines.append(f"| {name} | {' | '.join(cells)} |")
    cells = _grounding_cells(_grounding_total(table)) + _grounding_cells(_grounding_total(held_out))
    lines.append(f"| **all** | {' | '.join(cells)} |")
    verified = f["verified"]
    lines += [
        "",
        f"Verified with the check on: {verified['agree']} of {verified['total']} irrelevance "
        "and simple_python verdicts as computed from the run without it.",
    ]
    return "\n".join(lines)


def rows_code_mode(r: Any) -> list[str]:
    """Code mode against direct calls (``bench_code_mode.py``)."""
    f = r.figures("code_mode")
    fan, bfcl, over, sec = f["fanout"], f["bfcl_multi_turn"], f["overhead"], f["security"]
    tasks = list(fan["tasks"].values())
    direct_tokens = sum(t["direct_tokens_read"] for t in tasks)
    code_tokens = sum(t["code_tokens_read"] for t in tasks)
    right = sum(t["code_answer_right"] and t["direct_answer_right"] for t in tasks)
    turns = (tasks[0]["direct_turns"], tasks[0]["code_turns"])
    source = "code_mode"
    return [
        _row(
            source,
            f"fan-out: {len(tasks)} tasks of {fan['calls_per_task']} calls returning "
            f"{min(t['result_kb_per_call'] for t in tasks):.0f}-"
            f"{max(t['result_kb_per_call'] for t in tasks):.0f} KB each, answered by a filter "
            "or a sum (scripted model): tokens the model reads",
            f"code mode: {code_tokens:,} tokens, {turns[1]} model turns per task",
            f"one call per turn: {direct_tokens:,} tokens, {turns[0]} turns",
            f"{fan['tokens_ratio_all']:.2%} ({right}/{len(tasks)} answers right both ways)",
        ),
        _row(
            source,
            f"BFCL `multi_turn_base` ground truth replayed, {bfcl['entries']} entries: model turns",
            f"one program per user turn: {bfcl['code_model_turns']:,}",
            f"one call per turn: {bfcl['direct_model_turns']:,}",
            f"{bfcl['turn_reduction']:.0%} fewer (same BFCL checks: "
            f"{bfcl['same_turn_checks']}/{bfcl['entries']})",
        ),
        _row(
            source,
            "a tool call from a program to the host and back (p50)",
            f"{over['inner_call_ms_p50']:.2f} ms",
            f"a program's interpreter starting (p50): {over['sandbox_start_ms_p50']:.0f} ms",
        ),
        _row(
            source,
            "a one-call program, end to end (scripted model, interpreter started ahead)",
            f"{over['program_one_call_run_ms_p50']:.1f} ms",
            f"one direct call: {over['direct_one_call_run_ms_p50']:.1f} ms",
            f"+{over['program_minus_direct_ms']:.1f} ms",
        ),
        _row(
            source,
            f"escape corpus: {sec['cases']} programs (processes, ctypes, dunder chains, host "
            "secrets, network, memory, CPU, output, 10,000 calls, the channel)",
            f"{sec['passed']}/{sec['cases']} contained or refused, the run went on: "
            f"{'yes' if sec['run_went_on'] else 'no'}",
        ),
    ]


#: The runs of ``measure_benchmark_envs.py``: their row titles and the figures each shows.
_BENCHMARK_RUNS = {
    "tau2_telecom_solo": "τ²-bench telecom, solo, test split",
    "tau2_airline": "τ²-bench airline, test split, customer played by `local`",
    "tau2_retail": "τ²-bench retail, test split, customer played by `local`",
    "nestful": "NESTFUL v1, test half",
    "complexfuncbench": "ComplexFuncBench, test half (rule-based matching)",
}


def _benchmark_limits(models: dict[str, Any]) -> str:
    """Which runs were capped at how many tasks (nothing when every run is whole), naming the
    model when the models' runs of one benchmark were not capped alike."""
    capped: dict[int, list[str]] = {}
    for name, title in _BENCHMARK_RUNS.items():
        limits = {k: m["runs"][name].get("limit") for k, m in models.items() if name in m["runs"]}
        alike = len(set(limits.values())) == 1
        for label, limit in limits.items():
            shown = title.split(",")[0] if alike else f"{title.split(',')[0]} ({label})"
            if limit and shown not in capped.get(limit, []):
                capped.setdefault(limit, []).append(shown)
    if not capped:
        return ""
    parts = [f"the first {n} tasks of {', '.join(titles)}" for n, titles in sorted(capped.items())]
    return "; a quick look, not the whole splits: " + "; ".join(parts)


def _benchmark_cell(name: str, run: dict[str, Any] | None) -> str:
    if run is None:
        return "not run"
    tasks = run.get("tasks") or 0
    if not tasks:  # every trajectory ended in an error (for the embedded model: context full)
        return f"no task scored: {run.get('errors') or 0} errors"
    rewards = run.get("reward_by_name") or {}
    parts = [f"{_pct(run.get('success_rate') or 0.0)} of {tasks}"]
    hat = run.get("pass_hat_k") or {}
    if len(hat) > 1:
        parts = [f"pass^1 {hat['1'] or 0:.3f}, pass^{len(hat)} {hat[str(len(hat))] or 0:.3f}"]
    if name == "nestful":
        parts.append(f"partial {rewards.get('partial_sequence', 0):.2f}")
        parts.append(f"call F1 {rewards.get('call_f1', 0):.2f}")
    if name == "complexfuncbench":
        parts.append(f"call accuracy {rewards.get('call_accuracy', 0):.2f}")
    if run.get("errors"):
        parts.append(f"{run['errors']} errors")
    parts.append(f"{run.get('seconds_per_trajectory') or 0:.0f} s/task")
    return ", ".join(parts)


def render_benchmark_envs(r: Any) -> str:
    """The table of ``measure_benchmark_envs.py`` (a note when it has not been run yet)."""
    if not (r.directory / "benchmark_envs.json").is_file():
        return (
            "Not measured yet: `python benchmarks/measure_benchmark_envs.py` writes "
            "`benchmarks/results/benchmark_envs.json`, and `python benchmarks/readme_figures.py` "
            "puts its table here."
        )
    record = r.record("benchmark_envs")
    models: dict[str, Any] = record["models"]
    labels = list(models)
    lines = [
        "| run (`benchmarks/results/benchmark_envs.json`) | "
        + " | ".join(f"{k} (`{models[k]['model']}`)" for k in labels)
        + " |",
        "|---|" + "---|" * len(labels),
    ]
    for name, title in _BENCHMARK_RUNS.items():
        cells = [_benchmark_cell(name, models[k]["runs"].get(name)) for k in labels]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    first = models[labels[0]]["runs"]
    lines += [
        "",
        f"{record.get('tries')} tries per task at temperature {record.get('temperature')} for "
        f"telecom (pass^k: all k tries succeed), one at temperature 0 elsewhere; at most "
        f"{record.get('max_tokens')} tokens per reply{_benchmark_limits(models)}.",
        "",
        "<!-- docs-test: parse-only: each runs for minutes to hours on the embedded model -->",
        "```bash",
        *(run["command"] for run in first.values()),
        "```",
    ]
    return "\n".join(lines)


def render_train_rft(r: Any) -> str:
    """The generalist recipe's `train rft` run: its learning curve on the validation slices,
    then its best round's adapter against the base model on the test splits (the base column
    taken from ``train.json`` where this record has no base run of its own: same model, engine
    and entries)."""
    record = r.record("train_rft")
    run = record.get("rft_run") or {}
    curve = run.get("curve", [])
    lines = _curve_lines(curve)
    borrowed = r.record("train")["evaluations"] if r.has("train") else {}
    evaluations = {}
    for name, row in record["evaluations"].items():
        base = row.get("base") or (borrowed.get(name) or {}).get("base")
        evaluations[name] = {
            k: v for k, v in (("base", base), ("trained", row.get("trained"))) if v
        }
    best = run.get("best_round", "?")
    lines += [
        "",
        f"| `benchmarks/results/train_rft.json` | base (`local:base`) | round {best}'s adapter "
        "| points |",
        "|---|---|---|---|",
        *_train_rows(evaluations),
        "",
        f"The trained column ran as `local:base#lora=A{_train_setting(record)}`, the base column "
        f"as `local:base`; both played the environments with "
        f"`--tool-choice {record.get('env_tool_choice', 'auto')}`."
        + (
            " Base cells this record has no run of are `train.json`'s (the same model, engine "
            "and entries)."
            if any(not row.get("base") for row in record["evaluations"].values())
            else ""
        ),
    ]
    return "\n".join(lines)


def _curve_lines(curve: list[dict[str, Any]]) -> list[str]:
    """The validation slices' success per round (environments as rows), then what each
    round sampled, kept and trained on."""
    if not curve:
        return ["No `train rft` run card in the record."]
    rounds = [row["round"] for row in curve]
    names = list(curve[0]["validation"]["by_environment"])
    lines = [
        "| validation slice (train split) | "
        + " | ".join("base" if n == 0 else f"round {n}" for n in rounds)
        + " |",
        "|---|" + "---|" * len(rounds),
    ]
    for name in names:
        cells = [f"{row['validation']['by_environment'].get(name, 0):.0%}" for row in curve]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    means = [f"**{row['validation']['mean']:.1%}**" for row in curve]
    lines += ["| **mean** | " + " | ".join(means) + " |", ""]
    for row in curve[1:]:
        kept, sampled = sum(row["kept"].values()), sum(row["sampled"].values())
        minutes = ((row.get("sample_seconds") or 0) + (row.get("train_seconds") or 0)) / 60
        lines.append(
            f"- Round {row['round']}: kept {kept} of {sampled} sampled trajectories ("
            + ", ".join(f"{k} {v}/{row['sampled'][k]}" for k, v in row["kept"].items())
            + "); trained "
            f"on the {row['training_conversations']} kept so far and "
            f"{row['gold_conversations']} gold conversations, {row['steps']} "
            f"steps, loss {row['loss_first']:.3f} -> {row['loss_last']:.3f}, "
            f"{minutes:.0f} minutes sampling and training."
        )
    return lines


def render_rules(r: Any, name: str = "rules") -> str:
    """Each of the embedded model's rules on top of an adapter (a `train rft` one in
    ``rules.json``, the shipped one in ``rules_shipped.json``), on the clean validation slice
    ``measure_rules.py`` plays (solved of tried per environment)."""
    record = r.record(name)
    variants = record["variants"]
    names = list(next(iter(variants.values()))["by_env"])
    lines = [
        f"| `benchmarks/results/{name}.json` | " + " | ".join(names) + " | all |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    # the plain model first, single rules, then `local`'s whole set and the set less each rule
    order = sorted(
        variants,
        key=lambda v: (v != "plain", v.startswith("local's rules"), v != "local's rules"),
    )
    for variant in order:
        row = variants[variant]
        cells = [f"{row['by_env'][n]['solved']}/{row['by_env'][n]['tried']}" for n in names]
        suffix = row["model"].partition("#n_ctx=2048")[2]
        shown = f"{variant} (`{suffix}`)" if suffix else f"{variant} (no suffix)"
        lines.append(
            f"| {shown} | " + " | ".join(cells) + f" | **{row['solved']}/{row['tried']}** |"
        )
    return "\n".join(lines)


def render_sft_curve(r: Any) -> str:
    """Validation after each stage of SFT on a recipe's gold data (``measure_sft_curve.py``):
    the plain model on the clean slices, step 0 the untouched model."""
    record = r.record("sft_curve")
    stages = record["stages"]
    names = list(next(iter(stages.values()))["by_env"])
    lines = [
        "| steps (`benchmarks/results/sft_curve.json`) | this stage trained | loss | "
        + " | ".join(names)
        + " | all |",
        "|---|---|---|" + "---|" * (len(names) + 1),
    ]
    for steps in sorted(stages, key=int):
        row = stages[steps]
        cells = [f"{row['by_env'][n]['solved']}/{row['by_env'][n]['tried']}" for n in names]
        train = row["train"]
        trained = "untouched model" if train is None else f"{train['wall_seconds'] / 60:.0f} min"
        loss = "" if train is None else f"{train['loss_last']:.2f}"
        lines.append(
            f"| {steps} | {trained} | {loss} | "
            + " | ".join(cells)
            + f" | **{row['solved']}/{row['tried']}** |"
        )
    return "\n".join(lines)


def render_weights(r: Any) -> str:
    """The embedded model's weights as shipped against its Q8_0 and F16 copies: rates, then
    BFCL speed and accuracy (``bench_weights.py``)."""
    f = r.figures("weights")
    rates = f["rates"]
    lines = [
        "| weights (`benchmarks/results/weights.json`) | reading a prompt, tokens/s "
        "| decoding 1 sequence, tokens/s | decoding 8 together, tokens/s |",
        "|---|---|---|---|",
    ]
    for name, rate in rates.items():
        shown = f"{name.upper()} (as shipped)" if name == "q4_1" else f"{name.upper()} copy"
        lines.append(f"| {shown} | {rate['prompt']} | {rate['decode_1']} | {rate['decode_8']} |")
    b = f["bfcl"]
    entries = b["entries"]
    lines += [
        "",
        f"| `tooluse eval bfcl`, `local:base` | {entries['simple_python']} simple_python, `-j 1` "
        "| the same, `-j 8` | at most (`-j 8`) | "
        + " | ".join(f"{name} correct" for name in entries)
        + " |",
        "|---|---|---|---|" + "---|" * len(entries),
    ]
    for name, run in b["formats"].items():
        cells = " | ".join(f"{run['correct'][k]}/{n}" for k, n in entries.items())
        lines.append(
            f"| {name.upper()} | {run['j1_items_per_minute']} items/min "
            f"| {run['j8_items_per_minute']} items/min ({run['j8_over_j1']:.2f}x) "
            f"| {run['bound_at_8']:.2f}x | {cells} |"
        )
    total = sum(entries.values())
    lines += [
        "",
        f"Q8_0 at `-j 8` against Q4_1 at `-j 1`: {b['q8_0_j8_over_q4_1_j1']:.2f}x; verdicts that "
        f"differ between the two formats: {len(b['verdicts_differ'])} of {total}.",
    ]
    return "\n".join(lines)


def rows_weights(r: Any) -> list[str]:
    """The Q8_0 copy against the shipped Q4_1 weights (``bench_weights.py``)."""
    f = r.figures("weights")
    shipped, copy = f["rates"]["q4_1"], f["rates"]["q8_0"]
    b = f["bfcl"]
    q4, q8 = b["formats"]["q4_1"], b["formats"]["q8_0"]
    return [
        _row(
            "weights",
            "local model, a Q8_0 copy of the shipped Q4_1 file (`#weights=q8_0`): reading a "
            "prompt; 8 sequences decoded together",
            f"{copy['prompt']} tok/s; {copy['decode_8']} tok/s",
            f"Q4_1: {shipped['prompt']} tok/s; {shipped['decode_8']} tok/s",
            f"{copy['prompt'] / shipped['prompt']:.2f}x; "
            f"{copy['decode_8'] / shipped['decode_8']:.2f}x",
        ),
        _row(
            "weights",
            f"`tooluse eval bfcl -j 8`, {b['entries']['simple_python']} simple_python entries, "
            "local:base on each",
            f"Q8_0: {q8['j8_items_per_minute']} items/min",
            f"Q4_1: {q4['j8_items_per_minute']} items/min",
            f"{q8['j8_items_per_minute'] / q4['j8_items_per_minute']:.2f}x "
            f"({len(b['verdicts_differ'])} of {sum(b['entries'].values())} verdicts differ)",
        ),
    ]
