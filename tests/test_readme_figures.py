"""The README's benchmark figures are the rendering of the committed results files."""

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
    readme = tmp_path / "README.md"
    shutil.copy(README, readme)
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    return readme, results


def _table() -> str:
    text = README.read_text(encoding="utf-8")
    start, stop = figures.read_block(text, "benchmarks")
    return text[start:stop]


def test_readme_blocks_equal_the_rendering_of_the_results_files():
    text = README.read_text(encoding="utf-8")
    diffs = figures.differences(text, figures.Results(RESULTS))
    assert diffs == [], "\n\n".join(diffs)


def test_every_benchmark_make_bench_runs_has_a_results_file_the_table_uses():
    recipe = (ROOT / "Makefile").read_text().split("\nbench:")[1].split("\n\n")[0]
    # run_all.py without names runs every bench_*.py; the README is rendered after it
    assert "$(PY) benchmarks/run_all.py\n" in recipe
    assert recipe.index("run_all.py") < recipe.index("readme_figures.py")
    names = figures.benchmark_names()
    assert {"validation", "parsers", "local", "demo", "serve"} <= set(names)
    table = _table()
    for name in names:
        record = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
        assert record["benchmark"] == name
        assert f"(`{name}.json`) |" in table, f"no README row comes from {name}.json"


def test_every_table_row_names_its_results_file():
    rows = [line for line in _table().splitlines() if line.startswith("| ")][1:]
    assert len(rows) >= len(figures.benchmark_names())
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
    readme, results = _copy(tmp_path)
    original = readme.read_text(encoding="utf-8")
    row = next(line for line in _table().splitlines() if "(`mcp.json`)" in line)
    edited_row = row.replace("| MCP", "| edited MCP", 1)
    readme.write_text(original.replace(row, edited_row), encoding="utf-8")

    check = _run("--check", "--readme", readme, "--results", results)
    assert check.returncode == 1
    assert "README.md (benchmarks, as written)" in check.stdout
    assert f"-{edited_row}" in check.stdout and f"+{row}" in check.stdout
    assert "1 README block(s) differ" in check.stdout

    rewrite = _run("--readme", readme, "--results", results)
    assert rewrite.returncode == 0, rewrite.stderr
    assert readme.read_text(encoding="utf-8") == original
    assert _run("--check", "--readme", readme, "--results", results).returncode == 0


def test_a_changed_results_file_changes_the_rendering(tmp_path):
    readme, results = _copy(tmp_path)
    path = results / "mcp.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    record["figures"]["call (async)"]["tooluse_ms"] = 99.04
    path.write_text(json.dumps(record), encoding="utf-8")
    serve = results / "serve.json"
    record = json.loads(serve.read_text(encoding="utf-8"))
    record["figures"]["tooluse_serve"]["tokens_per_s"] = 12.5
    serve.write_text(json.dumps(record), encoding="utf-8")

    check = _run("--check", "--readme", readme, "--results", results)
    assert check.returncode == 1
    assert "+| MCP call (async) (`mcp.json`) | 99.0 ms |" in check.stdout
    # the serve figure appears twice: the Benchmarks table and the serve section's table
    assert "+| generation, plain text | 12.5 tok/s |" in check.stdout
    assert "2 README block(s) differ" in check.stdout
    assert readme.read_text(encoding="utf-8") == README.read_text(encoding="utf-8")


def test_a_missing_results_file_is_a_clear_error(tmp_path):
    readme, results = _copy(tmp_path)
    (results / "local.json").unlink()
    before = readme.read_text(encoding="utf-8")
    for args in (("--check",), ()):
        done = _run(*args, "--readme", readme, "--results", results)
        assert done.returncode == 1
        assert "error: local.json is missing" in done.stderr
        assert "benchmarks/run_all.py local" in done.stderr
    assert readme.read_text(encoding="utf-8") == before


def test_a_missing_marker_is_a_clear_error(tmp_path):
    readme, results = _copy(tmp_path)
    text = readme.read_text(encoding="utf-8")
    readme.write_text(text.replace("<!-- serve-figures:end -->", ""), encoding="utf-8")
    done = _run("--readme", readme, "--results", results)
    assert done.returncode == 1
    assert "<!-- serve-figures:end -->" in done.stderr
    assert readme.read_text(encoding="utf-8") == text.replace("<!-- serve-figures:end -->", "")
