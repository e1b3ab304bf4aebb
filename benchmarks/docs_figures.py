"""Figures of the README's headline table and of the documentation's benchmark pages that
``readme_figures.py`` renders from ``benchmarks/results/``; ``r`` is its ``Results``."""

from __future__ import annotations

from typing import Any

# Where the headline rows send the reader (paths from the repository's root, as the README
# links them).
BENCHMARKS = "docs/benchmarks/index.md"
BFCL = "docs/benchmarks/bfcl.md"
LOCAL = "docs/benchmarks/local-model.md"
TRAINING = "docs/benchmarks/training.md"


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def _count(row: dict[str, Any]) -> str:
    return f"{row['rate']:.0%} ({row['correct']}/{row['total']})"


def _headline_speed(r: Any) -> list[str]:
    validation = r.figures("validation")
    loop = r.figures("loop")
    streaming = r.figures("parsers")["streaming"]
    rows = [
        f"| argument validation, {len(validation['cases'])} typical schemas "
        f"| {validation['geomean_speedup']:.1f}x faster than `jsonschema` (geometric mean) "
        f"| [method]({BENCHMARKS}#the-table) |",
        f"| streaming a 16 KB tool-call argument | {streaming['speedup_vs_jiter_16k']:.1f}x faster "
        f"than re-parsing each delta with `jiter` | [method]({BENCHMARKS}#the-table) |",
    ]
    if loop.get("pydantic_ai_us_per_round") is not None:
        rows.append(
            f"| loop overhead per tool round (scripted model) "
            f"| `run` {loop['tooluse_run_us_per_round']:.0f} us against pydantic-ai's "
            f"{loop['pydantic_ai_us_per_round']:.0f} us | [chart]({BENCHMARKS}#charts) |"
        )
    return rows


def _headline_models(r: Any) -> list[str]:
    local = r.figures("local")["validity"]
    serve = r.figures("serve")
    ours, theirs = serve["tooluse_serve"], serve["llama_cpp_server"]
    fanout = r.figures("code_mode")["fanout"]["tasks"]
    direct = sum(t["direct_tokens_read"] for t in fanout.values())
    code = sum(t["code_tokens_read"] for t in fanout.values())
    train = r.record("train")["evaluations"]
    arithmetic, bfcl = train["math:arithmetic"], train["bfcl"]
    bfcl_models = r.record("bfcl")["models"]
    overall = " -> ".join(f"{m['score']['overall']:.1%}" for m in bfcl_models.values())
    grounding = r.figures("grounding")["categories"]["irrelevance"]
    return [
        f"| embedded 135M model, forced tool calls ({local['constrained']['questions']} "
        f"questions) | {_pct(local['constrained']['valid_share'])} valid under the call grammar, "
        f"{_pct(local['unconstrained']['valid_share'])} without it | [method]({LOCAL}) |",
        f"| `tooluse serve` against `llama_cpp.server`, same GGUF, {ours['questions']} tool "
        f"questions | right tool {ours['right_tool']}/{ours['questions']} against "
        f"{theirs['right_tool']}/{theirs['questions']} | [method]({LOCAL}#tooluse-serve) |",
        f"| code mode on fan-out tasks (scripted model) | the model reads {code / direct:.2%} of "
        f"the tokens it reads with one call per turn | [method]({BENCHMARKS}#the-table) |",
        f"| the shipped adapter on math:arithmetic (test split) | {_count(arithmetic['base'])} "
        f"-> {_count(arithmetic['trained'])} | [chart]({TRAINING}) |",
        f"| the shipped adapter on BFCL single-turn (350 entries) | {_count(bfcl['base'])} "
        f"-> {_count(bfcl['trained'])} | [per category]({TRAINING}) |",
        f"| grounding check on BFCL irrelevance (50 entries) | {grounding['off'][0]}/50 "
        f"-> {grounding['on'][0]}/50 right | [method]({BFCL}#the-grounding-check) |",
        f"| BFCL v4 overall score, embedded model: {' -> '.join(bfcl_models)} (sampled "
        f"categories) | {overall} | [every category]({BFCL}) |",
    ]


def render_headline(r: Any) -> str:
    """The README's short table: one row per headline figure, each with a link."""
    lines = [
        "| what (from `benchmarks/results/`) | figure | more |",
        "|---|---|---|",
        *_headline_speed(r),
        *_headline_models(r),
    ]
    return "\n".join(lines)


def _cell(cell: list[int] | None) -> str:
    if not cell:
        return "-"
    correct, total = cell
    return f"{correct / total:.0%} ({correct}/{total})"


def render_bfcl_options(r: Any) -> str:
    """The BFCL options table: one column per run, the same entries (``bfcl_options.json``)."""
    record = r.record("bfcl_options")
    columns: dict[str, dict[str, list[int]]] = record["columns"]
    names = list(columns)
    categories: list[str] = []
    for column in columns.values():
        categories += [c for c in column if c not in categories]
    lines = [
        "| category (`benchmarks/results/bfcl_options.json`) | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for category in categories:
        lines.append(
            f"| {category} | " + " | ".join(_cell(columns[n].get(category)) for n in names) + " |"
        )
    totals = []
    for name in names:
        cells = list(columns[name].values())
        totals.append(_cell([sum(c[0] for c in cells), sum(c[1] for c in cells)]))
    lines.append("| **all** | " + " | ".join(totals) + " |")
    lines += ["", f"Source: {record['source']}"]
    return "\n".join(lines)


def render_environments(r: Any) -> str:
    """The embedded model on two environments (``environments.json``)."""
    record = r.record("environments")
    lines = [
        "| environment (`benchmarks/results/environments.json`) | tasks | success "
        "| mean reward by type | by name | calls per task | seconds per task |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in record["environments"].items():
        by_type = ", ".join(f"{k} {v:g}" for k, v in row["reward_by_type"].items())
        by_name = ", ".join(f"{k} {v:g}" for k, v in row["reward_by_name"].items())
        lines.append(
            f"| `{name}` | {row['tasks']} | {row['successes']}/{row['tasks']} | {by_type} "
            f"| {by_name} | {row['calls_per_task']:g} | {row['seconds_per_task']:g} |"
        )
    lines += ["", f"Source: {record['source']}"]
    return "\n".join(lines)
