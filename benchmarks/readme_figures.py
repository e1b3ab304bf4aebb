"""Render the figures of the README and the documentation from ``benchmarks/results/``.

Every figure the README or a documentation page quotes from a benchmark sits between markers
such as ``<!-- benchmarks:begin -->`` and ``<!-- benchmarks:end -->``; this script renders each
block from the JSON the benchmarks wrote (``run_all.py`` and the ``measure_*.py`` scripts), so
no page can drift from them. ``DOCUMENTS`` says which file holds which block.

    python benchmarks/readme_figures.py          rewrite the blocks
    python benchmarks/readme_figures.py --check  exit 1 and list the blocks that differ

Each row of the Benchmarks table names the results file it comes from, and every
``bench_*.py`` must have a renderer here (a new benchmark without one is an error).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules below
from docs_figures import (  # noqa: E402 - after the path it is found on
    render_bfcl_options,
    render_environments,
    render_headline,
)
from readme_evals import (  # noqa: E402 - after the path it is found on
    render_benchmark_envs,
    render_bfcl,
    render_grounding,
    render_rules,
    render_sft_curve,
    render_tool_search,
    render_train,
    render_train_rft,
    render_weights,
    rows_code_mode,
    rows_kv_snapshots,
    rows_tool_search,
    rows_train_speed,
    rows_weights,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"


class FiguresError(Exception):
    """A results file or a block marker is missing or malformed."""


#: Results files that ``run_all.py`` does not write, and how to produce each.
MEASUREMENTS = {
    "train": "run `python benchmarks/measure_training.py`",
    "train_rft": "run `make train`'s commands (see the training benchmark page)",
    "rules": "run `python benchmarks/measure_rules.py` (see the training benchmark page)",
    "rules_shipped": "run `python benchmarks/measure_rules.py` on the shipped adapter "
    "(see the training benchmark page)",
    "sft_curve": "run `python benchmarks/measure_sft_curve.py`",
    "bfcl": "run `python benchmarks/measure_bfcl.py`",
    "grounding": "run `python benchmarks/measure_grounding.py`",
    "environments": "run `python benchmarks/measure_envs.py`",
    "bfcl_options": "run the commands its figures came from (see the BFCL benchmark page)",
    "benchmark_envs": "run `python benchmarks/measure_benchmark_envs.py`",
}

#: Benchmarks whose script exists but whose figures have not been measured yet: while their
#: results file is missing, their rows are left out (a test checks each is really missing).
NOT_YET_MEASURED: set[str] = set()


class Results:
    """The results files of one directory, loaded on first use."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._loaded: dict[str, dict[str, Any]] = {}

    def has(self, name: str) -> bool:
        """Whether ``<name>.json`` exists."""
        return (self.directory / f"{name}.json").is_file()

    def record(self, name: str) -> dict[str, Any]:
        """The whole record of ``<name>.json``."""
        if name not in self._loaded:
            path = self.directory / f"{name}.json"
            if not path.is_file():
                how = MEASUREMENTS.get(name, f"run `python benchmarks/run_all.py {name}`")
                raise FiguresError(
                    f"{path.name} is missing in {self.directory}; {how} to produce it"
                )
            try:
                self._loaded[name] = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise FiguresError(f"{path.name} is not valid JSON: {exc}") from exc
        return self._loaded[name]

    def figures(self, name: str) -> dict[str, Any]:
        """The ``figures`` of a ``run_all.py`` record (the whole file for other layouts)."""
        record = self.record(name)
        figures: dict[str, Any] = record.get("figures", record)
        return figures


# -- formatting --------------------------------------------------------------------------------


def _row(source: str, what: str, ours: str, baseline: str = "", ratio: str = "") -> str:
    return f"| {what} (`{source}.json`) | {ours} | {baseline} | {ratio} |"


def _k(rate: float) -> str:
    """A rate in thousands: 3.3k, 30k."""
    return f"{rate / 1000:.1f}k" if rate < 10_000 else f"{rate / 1000:.0f}k"


def _span(values: list[float], fmt: str) -> str:
    low, high = format(min(values), fmt), format(max(values), fmt)
    return low if low == high else f"{low}-{high}"


def _ms(value: float) -> str:
    """Milliseconds with a precision that suits their size (seconds from 1000 ms)."""
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return (
        f"{value:.0f} ms"
        if value >= 100
        else f"{value:.1f} ms"
        if value >= 10
        else f"{value:.2f} ms"
    )


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def _linear(time_ratio: float, size_ratio: float) -> str:
    # the benchmarks' own rule: work that grows less than twice as fast as the input is linear
    return " (linear)" if time_ratio < 2 * size_ratio else " (NOT linear)"


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


# -- one renderer per benchmark: rows of the Benchmarks table -------------------------------------


def rows_validation(r: Results) -> list[str]:
    cases = r.figures("validation")["cases"]
    ours = [c["tooluse_calls_per_s"] for c in cases]
    theirs = [c["jsonschema_calls_per_s"] for c in cases]
    speedups = [c["speedup"] for c in cases]
    return [
        _row(
            "validation",
            f"argument validation, {len(cases)} typical schemas",
            f"{_k(min(ours))}-{_k(max(ours))} calls/s",
            f"`jsonschema`: {_k(min(theirs))}-{_k(max(theirs))} calls/s",
            f"{_span(speedups, '.1f')}x faster (geo. mean {_geomean(speedups):.1f}x)",
        )
    ]


def rows_parsers(r: Results) -> list[str]:
    f = r.figures("parsers")
    s, c = f["streaming"], f["complete_parse"]
    t16, t64 = s["tooluse_16k"], s["tooluse_64k"]
    rows = []
    what = f"streaming one call, 16 KB argument in {t16['deltas']} deltas"
    ours = (
        f"{t16['total_ms']:.1f} ms (p50 {t16['p50_us']:.1f} us, p99 {t16['p99_us']:.1f} us "
        "per delta)"
    )
    if s.get("baseline_partial_json_parser_16k_ms") is not None:
        rows.append(
            _row(
                "parsers",
                what,
                ours,
                "partial-json-parser re-parse per delta: "
                f"{s['baseline_partial_json_parser_16k_ms']:.0f} ms",
                f"{s['speedup_vs_partial_json_parser_16k']:.0f}x faster",
            )
        )
        what, ours = "same, against a faster re-parse", f"{t16['total_ms']:.1f} ms"
    rows.append(
        _row(
            "parsers",
            what,
            ours,
            f"`jiter` partial re-parse per delta: {s['baseline_jiter_16k_ms']:.0f} ms",
            f"{s['speedup_vs_jiter_16k']:.1f}x faster",
        )
    )
    scaling = s["scaling_16k_to_64k"]
    rows.append(
        _row(
            "parsers",
            "same at 64 KB",
            f"{t64['total_ms']:.1f} ms",
            "16 KB run",
            f"{scaling:.2f}x for 4x the text{_linear(scaling, 4)}",
        )
    )
    ratio = c["ratio_to_regex"]
    verdict = (
        f"{ratio:.1f}x slower, but streaming-safe" if ratio > 1 else f"{1 / ratio:.1f}x faster"
    )
    rows.append(
        _row(
            "parsers",
            f"complete {c['response_bytes'] / 1024:.0f} KB response with 3 calls",
            f"{c['tooluse_parse_us']:.0f} us per parse",
            f"regex + `json.loads`: {c['regex_json_loads_us']:.0f} us",
            verdict,
        )
    )
    hostile = dict(f["hostile_growth"])
    markers = hostile.pop("hermes_markers")
    small, large = markers["sizes"]
    rows.append(
        _row(
            "parsers",
            f"{large:,} `<tool_call>` markers vs {small:,}",
            f"{markers['ms'][1] / 1000:.1f} s vs {markers['ms'][0] / 1000:.2f} s",
            "",
            f"{markers['time_ratio']:.1f}x for {markers['size_ratio']:.0f}x input"
            + _linear(markers["time_ratio"], markers["size_ratio"]),
        )
    )
    times = [h["time_ratio"] for h in hostile.values()]
    sizes = sorted({round(h["size_ratio"]) for h in hostile.values()})
    size_text = "/".join(str(s) for s in sizes)
    worst = max(hostile.values(), key=lambda h: h["time_ratio"] / h["size_ratio"])
    rows.append(
        _row(
            "parsers",
            f"{len(hostile)} other hostile inputs (huge argument, deep nesting, long parameter "
            f"value, long call list), {size_text}x the input",
            f"{_span([h['ms'][1] for h in hostile.values()], '.0f')} ms",
            f"same input {size_text}x smaller",
            f"{_span(times, '.1f')}x" + _linear(worst["time_ratio"], worst["size_ratio"]),
        )
    )
    return rows


def rows_format_limits(r: Results) -> list[str]:
    formats = r.figures("format_limits")["formats"]
    ten = [row["argument_10mb"] for row in formats.values()]
    keys = ("calls_x10", "calls_x10_streamed", "argument_x10", "parameters_x10")
    ratios = [row[k]["ratio"] for row in formats.values() for k in keys]
    return [
        _row(
            "format_limits",
            f"{len(formats)} text formats: 10 MB argument; 10x the calls, argument size or "
            "parameters",
            f"{_span([t['ms'] for t in ten], '.0f')} ms CPU, peak memory "
            f"{_span([t['peak_per_input_byte'] for t in ten], '.1f')}x the output",
            "same format, 10x less input",
            f"{_span(ratios, '.1f')}x for 10x{_linear(max(ratios), 10)}",
        )
    ]


def rows_loop(r: Results) -> list[str]:
    f = r.figures("loop")
    rows = [
        _row(
            "loop",
            f"64 {kind} tool calls sleeping 100 ms",
            f"{f[f'{kind}_parallel_s']:.3f} s",
            f"sequential: {f[f'{kind}_sequential_s']:.2f} s",
            f"{f[f'{kind}_vs_one_call']:.2f}x one call",
        )
        for kind in ("async", "sync")
    ]
    theirs = f.get("pydantic_ai_us_per_round")
    rows.append(
        _row(
            "loop",
            "loop overhead per tool round (scripted model)",
            f"`arun` {f['tooluse_arun_us_per_round']:.0f} us, "
            f"`run` {f['tooluse_run_us_per_round']:.0f} us",
            "pydantic-ai was not installed in this run"
            if theirs is None
            else f"pydantic-ai `Agent.run` + `FunctionModel`: {theirs:.0f} us",
            ""
            if theirs is None
            else f"{f['arun_over_pydantic_ai']:.2f}x / {f['run_over_pydantic_ai']:.2f}x",
        )
    )
    return rows


def rows_providers(r: Results) -> list[str]:
    f = r.figures("providers")
    rows = []
    if f.get("pydantic_ai_repair_us") is not None:
        rows.append(
            _row(
                "providers",
                "repair a 40-turn history with unanswered calls",
                f"{f['repair_us']:.0f} us",
                f"pydantic-ai `_repair_dangling_tool_calls`: {f['pydantic_ai_repair_us']:.0f} us",
                f"{f['repair_us'] / f['pydantic_ai_repair_us']:.2f}x",
            )
        )
    apis = [k.removeprefix("encode_").removesuffix("_us") for k in f if k.startswith("encode_")]
    ours = [f[f"encode_{a}_us"] for a in apis]
    floor = [f[f"json_dumps_{a}_us"] for a in apis]
    rows.append(
        _row(
            "providers",
            f"encode that history for {len(apis)} wire APIs",
            f"{_span(ours, '.0f')} us",
            f"`json.dumps` of the body: {_span(floor, '.0f')} us",
            f"{_span([o / b for o, b in zip(ours, floor)], '.1f')}x",
        )
    )
    rows.append(
        _row(
            "providers",
            "HTTP round trip on loopback",
            f"{f['http_roundtrip_ms'] * 1000:.0f} us",
            f"bare httpx: {f['bare_httpx_roundtrip_ms'] * 1000:.0f} us",
            f"{f['http_roundtrip_ms'] / f['bare_httpx_roundtrip_ms']:.2f}x",
        )
    )
    rows.append(
        _row(
            "providers",
            "400-chunk SSE stream on loopback",
            f"{f['sse_stream_ms']:.2f} ms",
            f"bare httpx: {f['bare_httpx_sse_ms']:.2f} ms",
            f"{f['sse_stream_ms'] / f['bare_httpx_sse_ms']:.2f}x",
        )
    )
    return rows


_MCP_ROWS = {
    "call (async)": ("MCP call (async)", "mcp SDK `Client`"),
    "call (sync facade)": ("MCP call from sync code", "mcp SDK `Client` (async)"),
    "startup + list_tools": ("MCP server start + tool list", "mcp SDK `Client`"),
}


def rows_mcp(r: Results) -> list[str]:
    f = r.figures("mcp")
    rows = []
    for key, (what, baseline) in _MCP_ROWS.items():
        case = f[key]
        rows.append(
            _row(
                "mcp",
                what,
                _ms(case["tooluse_ms"]),
                f"{baseline}: {_ms(case['baseline_ms'])}",
                f"{case['ratio']:.2f}x",
            )
        )
    batch = next(key for key in f if key.startswith("batch of"))
    size = batch.split()[2]
    rows.append(
        _row(
            "mcp",
            f"{size} MCP calls at once",
            _ms(f[batch]["tooluse_ms"]),
            f"SDK, one after another: {_ms(f[batch]['baseline_ms'])}",
            f"{f[batch]['ratio']:.2f}x",
        )
    )
    return rows


def rows_sandbox(r: Results) -> list[str]:
    f = r.figures("sandbox")
    p = f["snippets"]["print"]
    return [
        _row(
            "sandbox",
            "sandboxed Python run (`print`), full isolation",
            f"{p['sandbox_ms']:.0f} ms (limits only, `isolate=False`: {p['no_isolation_ms']:.0f} "
            f"ms; a session call: {p['session_call_ms']:.1f} ms)",
            f"plain `subprocess.run`: {p['plain_ms']:.0f} ms",
            f"{p['ratio']:.1f}x",
        ),
        _row(
            "sandbox",
            "environment step running that code (call + rewards)",
            f"{f['env_step_ms']:.0f} ms",
            f"the sandbox run alone: {p['sandbox_ms']:.0f} ms",
            f"{f['env_step_over_sandbox']:.2f}x",
        ),
    ]


def rows_local(r: Results) -> list[str]:
    f = r.figures("local")
    s, g = f["speed"], f["grammar"]
    v, lng, ans, auto = f["validity"], f["long_strings"], f["answers"], f["auto"]
    con, unc = v["constrained"], v["unconstrained"]
    budget, caller = lng["call budget (default)"], lng["caller max_tokens only"]
    told, plain = ans["instructed (default)"], ans["plain results"]
    default = auto["marker or relevance (default)"]
    mixed = auto["mixed_set_size"]["need_tool"] + auto["mixed_set_size"]["no_tool"]
    slow = g["lazy_grammar_slowdown_percent"]
    native = g["llama_cpp_grammar_slowdown_percent"]
    return [
        _row(
            "local",
            "local generation through `LlamaCppBackend`",
            f"{s['backend_tokens_per_s']} tok/s",
            f"llama-cpp-python direct: {s['llama_cpp_direct_tokens_per_s']} tok/s",
            f"{s['backend_tokens_per_s'] / s['llama_cpp_direct_tokens_per_s']:.2f}x",
        ),
        _row(
            "local",
            "grammar-constrained tool call",
            f"{g['lazy_grammar_tokens_per_s']} tok/s",
            f"unconstrained: {g['unconstrained_tokens_per_s']} tok/s",
            f"{abs(slow):.0f}% {'slower' if slow >= 0 else 'faster'} (llama.cpp's own GBNF: "
            f"{abs(native):.0f}% {'slower' if native >= 0 else 'faster'})",
        ),
        _row(
            "local",
            f"local tool calls, {con['questions']} questions, 4 tools, forced",
            f"{_pct(con['valid_share'])} valid, {_pct(con['right_tool_share'])} right tool, "
            f"{_pct(con['sensible_args_share'])} sensible arguments",
            f"unconstrained: {_pct(unc['valid_share'])} valid "
            f"({_pct(unc['emitted_share'])} with a call)",
        ),
        _row(
            "local",
            f"local forced call with 4 long strings, short `max_tokens` "
            f"({budget['questions']} requests)",
            f"{_pct(budget['valid_share'])} valid (own call budget, closing reserve)",
            f"only the caller's limit: {_pct(caller['valid_share'])}",
        ),
        _row(
            "local",
            f"local answer after a tool result holds the tool's value ({told['questions']} "
            "questions)",
            _pct(told["key_value_share"]),
            f"plain results prompt: {_pct(plain['key_value_share'])}",
        ),
        _row(
            "local",
            f"local auto mode: right call/no-call, {mixed} mixed questions",
            f"{default['mixed_accuracy'] * 100:.1f}%",
            f"always call {auto['always-call']['mixed_accuracy'] * 100:.1f}%, "
            f"never {auto['never-call']['mixed_accuracy'] * 100:.1f}%",
        ),
    ]


def rows_evals(r: Results) -> list[str]:
    f = r.figures("evals")
    o, m = f["engine_overhead"], f["embedded_model"]
    rows = [
        _row(
            "evals",
            "run engine, 120 items sleeping 50 ms, 2 workers",
            f"Ray: {o['ray']['items_per_minute']:.0f} items/min "
            f"({o['ray']['overhead_vs_ideal']:.2f}x the ideal time)",
            f"local threads: {o['local']['items_per_minute']:.0f} items/min "
            f"({o['local']['overhead_vs_ideal']:.2f}x)",
            f"{o['ray_vs_local']:.2f}x",
        )
    ]
    one = o.get("one_second_items")
    if one:  # results of the benchmark since it measures one-second items
        rows.append(
            _row(
                "evals",
                "run engine, 16 items of 1 s, 2 workers",
                f"Ray: {one['ray_cold']['overhead_vs_ideal']:.2f}x the ideal time with new "
                f"actors, {one['ray_warm']['overhead_vs_ideal']:.2f}x with the last run's",
                f"local threads: {one['local']['overhead_vs_ideal']:.2f}x",
                f"{one['local']['seconds'] / one['ray_warm']['seconds']:.2f}x",
            )
        )
    runs = [w for w in (1, 2) if f"ray_{w}" in m] or [0]
    for w in runs:
        ray_run, local = (m[f"ray_{w}"], m[f"local_{w}"]) if w else (m["ray"], m["local"])
        verdicts = "same" if m["same_verdicts"] else "DIFFERENT"
        rows.append(
            _row(
                "evals",
                f"embedded model on {m['items']} BFCL entries",
                f"Ray, {ray_run['workers']} actor(s): {ray_run['items_per_minute']:.1f} items/min",
                f"local, {local['workers']} worker(s): {local['items_per_minute']:.1f} items/min",
                f"{ray_run['items_per_minute'] / local['items_per_minute']:.2f}x "
                f"({verdicts} verdicts)",
            )
        )
    return rows


def _right(answers: dict[str, bool]) -> str:
    return f"{sum(answers.values())}/{len(answers)}"


def rows_demo(r: Results) -> list[str]:
    f = r.figures("demo")
    trained, base = f["trained"], f["base"]
    plain = trained["unhelped"]
    n = len(plain["temperature_0"])
    return [
        _row(
            "demo",
            f"`tooluse demo` answers right, {n} questions, temperature 0, no argument check",
            f"`local`: {_right(plain['temperature_0'])}",
            f"`local:base`: {_right(base['unhelped']['temperature_0'])} "
            f"({_right(base['helped']['temperature_0'])} with the check)",
        ),
        _row(
            "demo",
            "same, temperature 0.7, 10 seeds",
            f"{sum(plain['temperature_0.7_of_10'].values())}/{10 * n}",
            f"{sum(base['unhelped']['temperature_0.7_of_10'].values())}/{10 * n} "
            f"({sum(base['helped']['temperature_0.7_of_10'].values())}/{10 * n} with the check)",
        ),
    ]


def rows_serve(r: Results) -> list[str]:
    f = r.figures("serve")
    ours, theirs = f["tooluse_serve"], f["llama_cpp_server"]
    rows = [
        _row(
            "serve",
            "`tooluse serve`, plain-text generation",
            f"{ours['tokens_per_s']} tok/s",
            f"`python -m llama_cpp.server`: {theirs['tokens_per_s']} tok/s",
            f"{f['tokens_per_s_ratio']:.2f}x",
        ),
        _row(
            "serve",
            f'`tooluse serve`, {ours["questions"]} tool questions, `tool_choice="auto"`',
            f"{ours['right_tool']}/{ours['questions']} right tool, "
            f"{ours['valid_calls']}/{ours['replies_with_call']} calls valid",
            f"`llama_cpp.server`: {theirs['right_tool']}/{theirs['questions']} right tool, "
            f"{theirs['valid_calls']}/{theirs['replies_with_call']} calls valid",
        ),
    ]
    if "tooluse_serve_concurrent" in f:
        together = f["tooluse_serve_concurrent"]
        rows.append(
            _row(
                "serve",
                f"`tooluse serve`, 8 concurrent clients ({together['requests']} requests, "
                "text and tool calls)",
                f"{together['tokens_per_s']} tok/s of all",
                f"`--concurrency 1`: {f['tooluse_serve_one_at_a_time']['tokens_per_s']} tok/s; "
                f"`llama_cpp.server`: {f['llama_cpp_server_concurrent']['tokens_per_s']} tok/s",
                f"{f['concurrent_over_one_at_a_time']:.2f}x (at most {_bound(f)}), "
                f"{f['concurrent_over_llama_cpp_server']:.2f}x",
            )
        )
    return rows


def rows_batch(r: Results) -> list[str]:
    f = r.figures("batch")
    limit = f["limit_tokens_per_s"]
    rows = [
        _row(
            "batch",
            "local model, 8 sequences decoded together (greedy, 64 tokens each)",
            f"batch engine: {f['engine_tokens_per_s']['8']} tok/s",
            f"llama.cpp's own batched decode: {limit['8']} tok/s (one sequence: {limit['1']})",
            f"{f['engine_tokens_per_s']['8'] / limit['8']:.2f}x the limit",
        )
    ]
    b = f["bfcl"]
    rows.append(
        _row(
            "batch",
            f"`tooluse eval bfcl -j 8`, {b['entries']} simple_python entries, local:base",
            f"{b['batched_j8']['items_per_minute']} items/min "
            f"({len(b['verdicts_differ'])} verdicts differ)",
            f"`-j 1`: {b['one_at_a_time']['items_per_minute']} items/min",
            f"{b['ratio']:.2f}x (decode limit {f['limit_gain_at_8']:.2f}x, at most {_bound(b)})",
        )
    )
    t = f["rft"]
    rows.append(
        _row(
            "batch",
            f"`train rft` sampling, {t['samples_per_task']} samples per task",
            f"{t['batched_samples_per_s']} samples/s together",
            f"one at a time: {t['one_at_a_time_samples_per_s']} samples/s",
            f"{t['ratio']:.2f}x (at most {_bound(t)})",
        )
    )
    if "ray" in f:
        y = f["ray"]
        rows.append(
            _row(
                "batch",
                "the Ray engine, 2 actors, the same BFCL entries",
                f"{y['ray_2_actors']['items_per_minute']} items/min",
                f"local engine `-j 8`: {y['local_j8_items_per_minute']} items/min",
                f"{y['ratio']:.2f}x",
            )
        )
    return rows


# Table order; every bench_*.py needs an entry.
TABLE: dict[str, Callable[[Results], list[str]]] = {
    "validation": rows_validation,
    "parsers": rows_parsers,
    "format_limits": rows_format_limits,
    "loop": rows_loop,
    "providers": rows_providers,
    "mcp": rows_mcp,
    "sandbox": rows_sandbox,
    "code_mode": rows_code_mode,
    "local": rows_local,
    "kv_snapshots": rows_kv_snapshots,
    "batch": rows_batch,
    "weights": rows_weights,
    "serve": rows_serve,
    "demo": rows_demo,
    "evals": rows_evals,
    "tool_search": rows_tool_search,
    "train_speed": rows_train_speed,
}


def benchmark_names(directory: Path = HERE) -> list[str]:
    """The benchmarks ``run_all.py`` (and so ``make bench``) runs."""
    return sorted(p.stem.removeprefix("bench_") for p in directory.glob("bench_*.py"))


def _run_line(name: str, record: dict[str, Any]) -> str:
    where = [record.get("recorded"), f"Python {record['python']}", record.get("machine")]
    if record.get("cpus"):
        where.append(f"{record['cpus']} CPUs")
    where.append(f"{record['seconds'] / 60:.1f} min")
    line = f"`{name}.json` ({', '.join(str(w) for w in where if w)})"
    # a run known to be disturbed says so in its record; its absolute figures are not to be used
    if record.get("conditions"):
        line += f": {record['conditions']}"
    return line


def render_benchmarks(r: Results) -> str:
    unknown = sorted(set(benchmark_names()) - set(TABLE))
    if unknown:
        raise FiguresError(f"no table rows for benchmark(s): {', '.join(unknown)}")
    lines = [
        "| what (results file) | tooluse | baseline (same run) | ratio |",
        "|---|---|---|---|",
    ]
    measured = {
        name: rows for name, rows in TABLE.items() if name not in NOT_YET_MEASURED or r.has(name)
    }
    for rows in measured.values():
        lines += rows(r)
    records = {name: r.record(name) for name in measured}
    minutes = sum(rec["seconds"] for rec in records.values()) / 60
    lines += ["", f"The runs behind the table ({minutes:.0f} minutes in all):", ""]
    lines += [f"- {_run_line(name, rec)}" for name, rec in sorted(records.items())]
    return "\n".join(lines)


def render_demo(r: Results) -> str:
    f = r.figures("demo")
    trained, base = f["trained"], f["base"]
    per_question = ", ".join(
        f"“{question}” {count}/10 (`local:base`: "
        f"{base['unhelped']['temperature_0.7_of_10'][question]}/10, "
        f"{base['helped']['temperature_0.7_of_10'][question]}/10 with the check)"
        for question, count in trained["unhelped"]["temperature_0.7_of_10"].items()
    )
    return (
        "How right the demo is (`benchmarks/bench_demo.py`, figures from "
        "`benchmarks/results/demo.json`): at temperature 0, as the demo runs (`local`, no "
        f"argument check), {_right(trained['unhelped']['temperature_0'])} answers are right "
        f"({_right(trained['helped']['temperature_0'])} with the check); the untouched model "
        f"(`local:base`) gets {_right(base['unhelped']['temperature_0'])} without the check and "
        f"{_right(base['helped']['temperature_0'])} with it. Sampled at temperature 0.7 with 10 "
        f"seeds, the 135M model is far less steady: {per_question}." + _demo_rules_sentence(f)
    )


def _demo_rules_sentence(f: dict[str, Any]) -> str:
    """What ``local``'s rules are worth on the demo: the shipped adapter with the library's
    defaults instead (measured since 2026-12-07; older records lack it)."""
    adapter = f.get("adapter")
    if adapter is None:
        return ""
    plain = adapter["unhelped"]
    n = len(plain["temperature_0"])
    return (
        " The same adapter at the same strength with the library's defaults instead of "
        "`local`'s rules (`local:base#lora=<shipped>#lora_scale=0.5`) gets "
        f"{_right(plain['temperature_0'])} at temperature 0 without the check "
        f"({_right(adapter['helped']['temperature_0'])} with it) and "
        f"{sum(plain['temperature_0.7_of_10'].values())}/{10 * n} sampled."
    )


def render_serve(r: Results) -> str:
    f = r.figures("serve")
    ours, theirs = f["tooluse_serve"], f["llama_cpp_server"]
    n = ours["questions"]
    return "\n".join(
        [
            "| from `benchmarks/results/serve.json` | `tooluse serve` "
            "| `python -m llama_cpp.server` | ratio |",
            "|---|---|---|---|",
            f"| generation, plain text | {ours['tokens_per_s']} tok/s "
            f"| {theirs['tokens_per_s']} tok/s | {f['tokens_per_s_ratio']:.2f}x |",
            f"| time to first streamed token | {ours['ttft_s']:.3f} s | {theirs['ttft_s']:.3f} s "
            f"| {f['ttft_ratio']:.2f}x |",
            f"| replies with a tool call | {ours['replies_with_call']}/{n} "
            f"| {theirs['replies_with_call']}/{theirs['questions']} | |",
            "| valid calls (JSON that satisfies the schema) "
            f"| {ours['valid_calls']}/{ours['replies_with_call']} "
            f"| {theirs['valid_calls']}/{theirs['replies_with_call']} | |",
            f"| right tool | {ours['right_tool']}/{n} | {theirs['right_tool']}/{theirs['questions']} "
            "| |",
        ]
    )


def render_batch(r: Results) -> str:
    f = r.figures("batch")
    limit, engine = f["limit_tokens_per_s"], f["engine_tokens_per_s"]
    sizes = list(limit)
    lines = [
        f"| sequences decoded together (`benchmarks/results/batch.json`, {f['threads']} threads) | "
        + " | ".join(sizes)
        + " |",
        "|---|" + "---|" * len(sizes),
        "| llama.cpp's own batched decode, tokens/s | "
        + " | ".join(str(limit[n]) for n in sizes)
        + " |",
        "| the batch engine, tokens/s | " + " | ".join(str(engine[n]) for n in sizes) + " |",
        "| engine / limit | " + " | ".join(f"{engine[n] / limit[n]:.2f}" for n in sizes) + " |",
        "",
        "| workload | batched | one at a time | ratio | at most (see below) |",
        "|---|---|---|---|---|",
    ]
    b = f["bfcl"]
    lines.append(
        f"| `tooluse eval bfcl`, {b['entries']} simple_python entries, `local:base` "
        f"| `-j 8`: {b['batched_j8']['items_per_minute']} items/min "
        f"| `-j 1`: {b['one_at_a_time']['items_per_minute']} items/min | {b['ratio']:.2f}x "
        f"({len(b['verdicts_differ'])} verdicts differ) | {_bound(b)} |"
    )
    t = f["rft"]
    lines.append(
        f"| `train rft` sampling, {t['tasks']} tasks x {t['samples_per_task']} samples "
        f"| {t['batched_samples_per_s']} samples/s | {t['one_at_a_time_samples_per_s']} samples/s "
        f"| {t['ratio']:.2f}x (same trajectories: {'yes' if t['same_trajectories'] else 'no'}) "
        f"| {_bound(t)} |"
    )
    if "ray" in f:
        y = f["ray"]
        lines.append(
            "| the Ray engine (2 actors) against the local engine (`-j 8`), the same entries "
            f"| {y['ray_2_actors']['items_per_minute']} items/min "
            f"| {y['local_j8_items_per_minute']} items/min | {y['ratio']:.2f}x | |"
        )
    return "\n".join(lines)


def _bound(figures: dict[str, Any]) -> str:
    """The most batching could give a workload (``bound_at_8``), when the run measured it."""
    bound = figures.get("bound_at_8")
    return f"{bound:.2f}x" if bound is not None else "-"


# What each mutation group covers (the groups themselves are defined in mutation.py).
_MUTATION_GROUPS = {
    "tools": "argument validation, schema export",
    "formats": "lexer, JSON scanner, hermes, pythonic, xml_params",
    "providers": "five adapters, SigV4/event stream, history",
    "loop_core": "loop/core.py",
    "grammar": "local/grammar.py",
    "execution": "local executors, sandbox",
    "evals": "BFCL checker (scorer)",
}


def render_mutation(r: Results) -> str:
    groups = r.figures("mutation")["groups"]
    lines = [
        "| group (`benchmarks/results/mutation.json`) | modules | killed / run "
        "| non-equivalent killed |",
        "|---|---|---|---|",
    ]
    for name, g in groups.items():
        if name == "named":
            lines.append(
                f"| named | the six mutants of issue 16 | {g['caught']} / {g['total']} caught | |"
            )
            continue
        run = g["sampled"] - g["invalid"]
        lines.append(
            f"| {name} | {_MUTATION_GROUPS.get(name, name)} | {g['killed']} / {run} "
            f"| {g['kill_rate_non_equivalent'] * 100:.0f}% |"
        )
    return "\n".join(lines)


def render_format_peak(r: Results) -> str:
    formats = r.figures("format_limits")["formats"]
    peaks = [
        row[size]["peak_per_input_byte"]
        for row in formats.values()
        for size in ("argument_1mb", "argument_10mb")
    ]
    return f"{_span(peaks, '.1f')}x"


# Blocks of whole lines (markers on lines of their own) and spans inside a line of prose.
BLOCKS: dict[str, Callable[[Results], str]] = {
    "headline": render_headline,
    "benchmarks": render_benchmarks,
    "demo-figures": render_demo,
    "serve-figures": render_serve,
    "batch-figures": render_batch,
    "weights-figures": render_weights,
    "mutation-figures": render_mutation,
    "train-figures": render_train,
    "train-rft-figures": render_train_rft,
    "rules-figures": render_rules,
    "rules-shipped-figures": lambda r: render_rules(r, "rules_shipped"),
    "sft-curve-figures": render_sft_curve,
    "grounding-figures": render_grounding,
    "tool-search-figures": render_tool_search,
    "bfcl-figures": render_bfcl,
    "benchmark-envs-figures": render_benchmark_envs,
    "bfcl-options": render_bfcl_options,
    "environments": render_environments,
}
SPANS: dict[str, Callable[[Results], str]] = {"format-peak": render_format_peak}

#: Which file (relative to the repository) holds which blocks; each block is in one file.
DOCUMENTS: dict[str, tuple[str, ...]] = {
    "README.md": ("headline",),
    "docs/benchmarks/index.md": ("benchmarks", "mutation-figures"),
    "docs/benchmarks/local-model.md": (
        "demo-figures",
        "serve-figures",
        "batch-figures",
        "weights-figures",
    ),
    "docs/benchmarks/bfcl.md": ("bfcl-figures", "bfcl-options", "grounding-figures"),
    "docs/benchmarks/training.md": (
        "train-figures",
        "train-rft-figures",
        "rules-figures",
        "rules-shipped-figures",
        "sft-curve-figures",
        "environments",
        "benchmark-envs-figures",
    ),
    "docs/benchmarks/tool-search.md": ("tool-search-figures",),
    "docs/guides/formats.md": ("format-peak",),
}


def _renderers() -> dict[str, Callable[[Results], str]]:
    def lines(render: Callable[[Results], str]) -> Callable[[Results], str]:
        return lambda r: f"\n{render(r)}\n"

    return {**{name: lines(render) for name, render in BLOCKS.items()}, **SPANS}


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def read_block(text: str, name: str, document: str = "README.md") -> tuple[int, int]:
    """Start and end offsets of block ``name``'s content in ``text`` (the file ``document``)."""
    begin, end = _markers(name)
    if text.count(begin) != 1 or text.count(end) != 1:
        raise FiguresError(
            f"{document} needs exactly one `{begin.strip()}` and one `{end.strip()}`"
        )
    start = text.index(begin) + len(begin)
    stop = text.index(end)
    if stop < start:
        raise FiguresError(f"`{end.strip()}` comes before `{begin.strip()}` in {document}")
    return start, stop


def render_document(text: str, document: str, results: Results) -> str:
    """``text`` (the file ``document``) with each of its blocks replaced by its rendering."""
    renderers = _renderers()
    for name in DOCUMENTS[document]:
        start, stop = read_block(text, name, document)
        text = text[:start] + renderers[name](results) + text[stop:]
    return text


def differences(text: str, document: str, results: Results) -> list[str]:
    """One unified diff per block of ``document`` whose text differs from its rendering."""
    out = []
    renderers = _renderers()
    for name in DOCUMENTS[document]:
        start, stop = read_block(text, name, document)
        current, wanted = text[start:stop], renderers[name](results)
        if current != wanted:
            diff = difflib.unified_diff(
                current.splitlines(),
                wanted.splitlines(),
                f"{document} ({name}, as written)",
                f"{document} ({name}, from the results files)",
                lineterm="",
            )
            out.append("\n".join(diff))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a block differs")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository's folder")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    results = Results(args.results)
    texts = {name: (args.root / name).read_text(encoding="utf-8") for name in DOCUMENTS}
    try:
        if args.check:
            diffs = [d for name, text in texts.items() for d in differences(text, name, results)]
            for diff in diffs:
                print(diff)
            if diffs:
                print(
                    f"{len(diffs)} block(s) differ from {args.results}; "
                    "run `python benchmarks/readme_figures.py` to regenerate them"
                )
            return 1 if diffs else 0
        updated = {name: render_document(text, name, results) for name, text in texts.items()}
    except FiguresError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for name, text in updated.items():
        if text != texts[name]:
            (args.root / name).write_text(text, encoding="utf-8")
            print(f"updated {name}")
    if updated == texts:
        print("every block is up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
