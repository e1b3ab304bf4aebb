"""The figures of the README and the documentation's benchmark pages are the rendering of the
committed results files (the charts are drawn from them when the site is built)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "readme_figures.py"
README = ROOT / "README.md"
OVERVIEW = "docs/benchmarks/index.md"
RESULTS = ROOT / "benchmarks" / "results"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_figures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


figures = _load_script()


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    """A repository folder holding every document with blocks, and a copy of the results."""
    root = tmp_path / "repo"
    for name in figures.DOCUMENTS:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, root / name)
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    return root, results


def _table() -> str:
    text = (ROOT / OVERVIEW).read_text(encoding="utf-8")
    start, stop = figures.read_block(text, "benchmarks", OVERVIEW)
    return text[start:stop]


def _texts(root: Path) -> dict[str, str]:
    return {name: (root / name).read_text(encoding="utf-8") for name in figures.DOCUMENTS}


def test_every_block_equals_the_rendering_of_the_results_files():
    results = figures.Results(RESULTS)
    for name in figures.DOCUMENTS:
        text = (ROOT / name).read_text(encoding="utf-8")
        diffs = figures.differences(text, name, results)
        assert diffs == [], "\n\n".join(diffs)


def test_each_block_lives_in_exactly_one_document():
    names = [block for blocks in figures.DOCUMENTS.values() for block in blocks]
    assert sorted(names) == sorted({*figures.BLOCKS, *figures.SPANS})
    for document, blocks in figures.DOCUMENTS.items():
        others = [o for o in figures.DOCUMENTS if o != document]
        for block in blocks:
            for other in others:
                assert f"<!-- {block}:begin -->" not in (ROOT / other).read_text(encoding="utf-8")


def test_the_readme_keeps_a_short_headline_table_with_links():
    text = README.read_text(encoding="utf-8")
    start, stop = figures.read_block(text, "headline")
    rows = [line for line in text[start:stop].splitlines() if line.startswith("| ")][1:]
    assert 5 <= len(rows) <= 12
    assert all("](docs/benchmarks/" in row for row in rows[1:])


def test_benchmarks_not_measured_yet_really_have_no_results_file():
    # a benchmark leaves NOT_YET_MEASURED as soon as its results file is committed
    for name in figures.NOT_YET_MEASURED:
        assert not (RESULTS / f"{name}.json").exists(), name
        assert (ROOT / "benchmarks" / f"bench_{name}.py").is_file(), name


def test_every_benchmark_make_bench_runs_has_a_results_file_the_table_uses():
    recipe = (ROOT / "Makefile").read_text().split("\nbench:")[1].split("\n\n")[0]
    # run_all.py without names runs every bench_*.py; the README is rendered after it
    assert "$(PY) benchmarks/run_all.py\n" in recipe
    assert recipe.index("run_all.py") < recipe.index("readme_figures.py")
    names = figures.benchmark_names()
    assert {"validation", "parsers", "local", "demo", "serve"} <= set(names)
    table = _table()
    for name in sorted(set(names) - figures.NOT_YET_MEASURED):
        record = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
        assert record["benchmark"] == name
        assert f"(`{name}.json`) |" in table, f"no README row comes from {name}.json"


def test_every_table_row_names_its_results_file():
    rows = [line for line in _table().splitlines() if line.startswith("| ")][1:]
    assert len(rows) >= len(set(figures.benchmark_names()) - figures.NOT_YET_MEASURED)
    for row in rows:
        what = row.split(" | ")[0]
        source = what.rsplit("(`", 1)[1].removesuffix("`)")
        assert (RESULTS / source).is_file(), row


def test_results_files_are_not_ignored_but_other_scratch_is():
    def ignored(path: str) -> bool:
        done = subprocess.run(
            ["git", "check-ignore", "--no-index", "-q", path], cwd=ROOT, timeout=30
        )
        assert done.returncode in (0, 1)
        return done.returncode == 0

    assert not ignored("benchmarks/results/local.json")
    assert ignored("benchmarks/results/scratch.log")


def test_check_lists_an_edited_figure_and_a_rewrite_restores_it(tmp_path):
    root, results = _copy(tmp_path)
    page = root / OVERVIEW
    original = page.read_text(encoding="utf-8")
    row = next(line for line in _table().splitlines() if "(`mcp.json`)" in line)
    edited_row = row.replace("| MCP", "| edited MCP", 1)
    page.write_text(original.replace(row, edited_row), encoding="utf-8")

    check = _run("--check", "--root", root, "--results", results)
    assert check.returncode == 1
    assert f"{OVERVIEW} (benchmarks, as written)" in check.stdout
    assert f"-{edited_row}" in check.stdout and f"+{row}" in check.stdout
    assert "1 block(s) differ" in check.stdout

    rewrite = _run("--root", root, "--results", results)
    assert rewrite.returncode == 0, rewrite.stderr
    assert page.read_text(encoding="utf-8") == original
    assert _run("--check", "--root", root, "--results", results).returncode == 0


def test_a_changed_results_file_changes_the_rendering(tmp_path):
    root, results = _copy(tmp_path)
    before = _texts(root)
    path = results / "mcp.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["figures"]["call (async)"]["tooluse_ms"] = 99.04
    path.write_text(json.dumps(record), encoding="utf-8")
    serve = results / "serve.json"
    record = json.loads(serve.read_text(encoding="utf-8"))
    record["figures"]["tooluse_serve"]["tokens_per_s"] = 12.5
    serve.write_text(json.dumps(record), encoding="utf-8")

    check = _run("--check", "--root", root, "--results", results)
    assert check.returncode == 1
    assert "+| MCP call (async) (`mcp.json`) | 99.0 ms |" in check.stdout
    # the serve figure appears in the overview table and in the serve page's table
    assert "+| generation, plain text | 12.5 tok/s |" in check.stdout
    assert "2 block(s) differ" in check.stdout
    assert _texts(root) == before


def test_a_missing_results_file_is_a_clear_error(tmp_path):
    root, results = _copy(tmp_path)
    (results / "local.json").unlink()
    before = _texts(root)
    for args in (("--check",), ()):
        done = _run(*args, "--root", root, "--results", results)
        assert done.returncode == 1
        assert "error: local.json is missing" in done.stderr
        assert "benchmarks/run_all.py local" in done.stderr
    assert _texts(root) == before


def test_a_missing_marker_is_a_clear_error(tmp_path):
    root, results = _copy(tmp_path)
    page = root / "docs/benchmarks/local-model.md"
    text = page.read_text(encoding="utf-8").replace("<!-- serve-figures:end -->", "")
    page.write_text(text, encoding="utf-8")
    done = _run("--root", root, "--results", results)
    assert done.returncode == 1
    assert "docs/benchmarks/local-model.md needs exactly one" in done.stderr
    assert "<!-- serve-figures:end -->" in done.stderr
    assert page.read_text(encoding="utf-8") == text


def _load_charts() -> ModuleType:
    path = ROOT / "benchmarks" / "docs_charts.py"
    spec = importlib.util.spec_from_file_location("docs_charts", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_chart_is_drawn_from_the_committed_results(tmp_path):
    charts = _load_charts()
    drawn = charts.render_charts(RESULTS)
    missing = {
        name
        for name, (sources, _) in charts.CHARTS.items()
        if not all((RESULTS / f"{s}.json").is_file() for s in sources)
    }
    assert set(drawn) == set(charts.CHARTS) - missing
    # only a benchmark still waiting for its figures may lack its chart
    assert {s for n in missing for s in charts.CHARTS[n][0]} <= figures.NOT_YET_MEASURED
    for name, svg in drawn.items():
        assert svg.startswith("<?xml") and "<svg" in svg, name
    assert charts.render_charts(RESULTS) == drawn  # the same bytes on every build
    # a changed figure changes its chart
    changed = tmp_path / "results"
    shutil.copytree(RESULTS, changed)
    record = json.loads((changed / "loop.json").read_text(encoding="utf-8"))
    record["figures"]["pydantic_ai_us_per_round"] = 4321.0
    (changed / "loop.json").write_text(json.dumps(record), encoding="utf-8")
    assert "4321 us" in charts.render_charts(changed)["loop-overhead.svg"]


def test_the_batch_chart_draws_a_record_in_the_shape_bench_batch_writes(tmp_path):
    # batch.json is not measured yet: the chart is checked on a record of bench_batch.py's shape
    charts = _load_charts()
    sizes = ["1", "2", "4", "8", "16"]
    record = {
        "figures": {
            "limit_tokens_per_s": {s: 100.0 * int(s) ** 0.5 for s in sizes},
            "engine_tokens_per_s": {s: 90.0 * int(s) ** 0.5 for s in sizes},
        }
    }
    (tmp_path / "batch.json").write_text(json.dumps(record), encoding="utf-8")
    svg = charts.render_charts(tmp_path)["batch-throughput.svg"]
    assert "sequences decoded together" in svg and "batch engine" in svg


def test_the_benchmark_envs_table_says_when_no_task_was_scored(tmp_path):
    scored = {
        "tasks": 2,
        "errors": 1,
        "success_rate": 0.5,
        "pass_hat_k": {"1": 0.5},
        "reward_by_name": {"partial_sequence": 0.25, "call_f1": 0.5},
        "seconds_per_trajectory": 14.2,
        "command": "tooluse eval env nestful -m local:base",
    }
    scored["limit"] = 20
    failed = {"tasks": 0, "errors": 2, "limit": 2, "command": "tooluse eval env x"}
    record = {
        "tries": 4,
        "temperature": 0.7,
        "max_tokens": 256,
        "models": {
            "base": {"model": "local:base", "runs": {"nestful": scored, "tau2_airline": failed}}
        },
    }
    (tmp_path / "benchmark_envs.json").write_text(json.dumps(record), encoding="utf-8")
    table = figures.render_benchmark_envs(figures.Results(tmp_path))
    assert (
        "| NESTFUL v1, test half | 50% of 2, partial 0.25, call F1 0.50, 1 errors, 14 s/task |"
        in table
    )
    assert "customer played by `local` | no task scored: 2 errors |" in table
    assert "| τ²-bench retail, test split, customer played by `local` | not run |" in table
    assert (
        "a quick look, not the whole splits: the first 2 tasks of τ²-bench airline; "
        "the first 20 tasks of NESTFUL v1." in table
    )
    # a second model whose NESTFUL run is whole: the cap is named with the model it applies to
    whole = {**scored, "limit": None}
    record["models"]["trained"] = {"model": "local", "runs": {"nestful": whole}}
    (tmp_path / "benchmark_envs.json").write_text(json.dumps(record), encoding="utf-8")
    table = figures.render_benchmark_envs(figures.Results(tmp_path))
    assert "the first 20 tasks of NESTFUL v1 (base)." in table


def test_the_rft_table_shows_the_curve_and_borrows_only_missing_base_cells(tmp_path):
    def cell(correct: int, total: int) -> dict:
        return {"correct": correct, "total": total, "rate": correct / total}

    validation = {"by_environment": {"math:arithmetic": 0.0, "bfcl:irrelevance": 0.75}}
    curve = [
        {"round": 0, "model": "base", "validation": {**validation, "mean": 0.375}},
        {
            "round": 1,
            "sampled": {"math:arithmetic": 32, "bfcl:irrelevance": 32},
            "kept": {"math:arithmetic": 0, "bfcl:irrelevance": 28},
            "training_conversations": 28,
            "gold_conversations": 100,
            "steps": 32,
            "loss_first": 1.2,
            "loss_last": 0.5,
            "sample_seconds": 600,
            "train_seconds": 1800,
            "validation": {
                "by_environment": {"math:arithmetic": 0.25, "bfcl:irrelevance": 0.75},
                "mean": 0.5,
            },
        },
    ]
    record = {
        "env_tool_choice": "required",
        "rft_run": {"best_round": 1, "curve": curve},
        "evaluations": {
            "math:arithmetic": {"trained": cell(25, 50)},
            "reasoning_gym:products": {"base": cell(2, 20), "trained": cell(18, 20)},
        },
    }
    earlier = {
        "evaluations": {
            "math:arithmetic": {"base": cell(1, 50), "trained": cell(37, 50)},
            "reasoning_gym:products": {"base": cell(0, 20), "trained": cell(18, 20)},
        }
    }
    (tmp_path / "train_rft.json").write_text(json.dumps(record), encoding="utf-8")
    (tmp_path / "train.json").write_text(json.dumps(earlier), encoding="utf-8")
    table = figures.render_train_rft(figures.Results(tmp_path))
    assert "| math:arithmetic | 0% | 25% |" in table
    assert "| **mean** | **37.5%** | **50.0%** |" in table
    assert (
        "kept 28 of 64 sampled trajectories (math:arithmetic 0/32, bfcl:irrelevance 28/32)" in table
    )
    assert "40 minutes sampling and training" in table
    # the base cell missing here comes from train.json; the one present is this record's own
    assert "| math:arithmetic (test) | 2% (1/50) | 50% (25/50) | +48 |" in table
    assert "| reasoning_gym:products (test) | 10% (2/20) | 90% (18/20) | +80 |" in table
    assert "Base cells this record has no run of are `train.json`'s" in table


def test_the_training_measurement_keeps_an_rft_runs_card_only_for_a_rounds_adapter(tmp_path):
    import argparse

    spec = importlib.util.spec_from_file_location(
        "measure_training", ROOT / "benchmarks" / "measure_training.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # its dataclasses look their module up
    spec.loader.exec_module(script)

    def measured(adapter: Path) -> dict:
        out = tmp_path / f"{adapter.parent.name}.json"
        settings = dict.fromkeys(("decider", "narrow", "judge", "grounding", "text"))
        args = argparse.Namespace(
            adapter=adapter, out=out, card=None, env_tool_choice="auto", lora_scale=None, **settings
        )
        script._write(args, {})
        return json.loads(out.read_text(encoding="utf-8"))

    round_dir, sft_dir = tmp_path / "rft" / "round-1", tmp_path / "sft"
    for folder, card in ((round_dir, {"round": 1}), (sft_dir, {"method": "sft"})):
        folder.mkdir(parents=True)
        (folder / "adapter.gguf").write_bytes(b"lora")
        (folder / "card.json").write_text(json.dumps(card), encoding="utf-8")
    (tmp_path / "rft" / "card.json").write_text(json.dumps({"best_round": 1}), encoding="utf-8")
    (tmp_path / "card.json").write_text(json.dumps({"not": "a run"}), encoding="utf-8")
    assert measured(round_dir / "adapter.gguf")["rft_run"] == {"best_round": 1}
    assert measured(sft_dir / "adapter.gguf")["rft_run"] is None


def test_the_batch_table_gives_each_workloads_bound_when_the_run_measured_it(tmp_path):
    record = json.loads((RESULTS / "batch.json").read_text(encoding="utf-8"))
    record["figures"]["bfcl"]["bound_at_8"] = 1.23
    record["figures"]["rft"].pop("bound_at_8", None)
    (tmp_path / "batch.json").write_text(json.dumps(record), encoding="utf-8")
    table = figures.render_batch(figures.Results(tmp_path))
    bfcl = next(line for line in table.splitlines() if "eval bfcl" in line)
    rft = next(line for line in table.splitlines() if "train rft" in line)
    assert bfcl.endswith("| 1.23x |")
    assert rft.endswith("| - |")  # a run from before the bound was measured


def test_the_rules_table_puts_the_plain_model_first_and_locals_rules_last(tmp_path):
    def row(model: str, solved: int) -> dict:
        return {
            "model": f"local:base#lora=A#n_ctx=2048{model}",
            "solved": solved,
            "tried": 4,
            "by_env": {"math:arithmetic": {"solved": solved, "tried": 4, "seconds": 1.0}},
        }

    record = {
        "adapter": "A",
        "tasks": 4,
        "variants": {
            "local's rules": row("#narrow=first", 3),
            "defaults": row("", 2),
            "plain": row("#decider=model#grounding=off", 1),
        },
    }
    (tmp_path / "rules.json").write_text(json.dumps(record), encoding="utf-8")
    rows = figures.render_rules(figures.Results(tmp_path)).splitlines()[2:]
    assert rows[0].startswith("| plain (`#decider=model#grounding=off`) | 1/4 |")
    assert rows[1].startswith("| defaults (no suffix) | 2/4 |")
    assert rows[2].endswith("| 3/4 | **3/4** |") and "local's rules" in rows[2]


def test_the_shipped_adapters_rules_table_names_its_file_and_hides_the_adapters_strength(
    tmp_path,
):
    record = {
        "adapter": "A",
        "tasks": 4,
        "lora_scale": 0.5,
        "variants": {
            "plain": {
                "model": "local:base#lora=A#lora_scale=0.5#n_ctx=2048#grounding=off",
                "solved": 2,
                "tried": 4,
                "by_env": {"bfcl:simple_python": {"solved": 2, "tried": 4, "seconds": 1.0}},
            }
        },
    }
    (tmp_path / "rules_shipped.json").write_text(json.dumps(record), encoding="utf-8")
    block = figures.BLOCKS["rules-shipped-figures"](figures.Results(tmp_path)).splitlines()
    assert block[0].startswith("| `benchmarks/results/rules_shipped.json` | bfcl:simple_python |")
    assert block[2] == "| plain (`#grounding=off`) | 2/4 | **2/4** |"


def test_the_demo_text_says_what_locals_rules_are_worth_when_the_adapter_was_measured(
    tmp_path,
):
    def answers(greedy: list[bool], sampled: list[int]) -> dict:
        questions = ("q1", "q2", "q3")
        return {
            "temperature_0": dict(zip(questions, greedy, strict=True)),
            "temperature_0.7_of_10": dict(zip(questions, sampled, strict=True)),
        }

    def model(greedy: list[bool], sampled: list[int]) -> dict:
        return {"helped": answers(greedy, sampled), "unhelped": answers(greedy, sampled)}

    record = {
        "figures": {
            "trained": model([True, True, True], [2, 0, 9]),
            "base": model([True, False, True], [3, 2, 9]),
        }
    }
    (tmp_path / "demo.json").write_text(json.dumps(record), encoding="utf-8")
    older = figures.BLOCKS["demo-figures"](figures.Results(tmp_path))
    assert "library's defaults" not in older  # a record from before the third model
    record["figures"]["adapter"] = model([False, False, True], [1, 0, 8])
    (tmp_path / "demo.json").write_text(json.dumps(record), encoding="utf-8")
    text = figures.BLOCKS["demo-figures"](figures.Results(tmp_path))
    assert text.startswith(older)
    assert text.endswith(
        "gets 1/3 at temperature 0 without the check (1/3 with it) and 9/30 sampled."
    )
