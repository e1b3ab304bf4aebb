"""Every example of the README and the documentation runs (``doc_blocks.py`` says how each kind
of block is treated): Python blocks page by page, ``tooluse`` commands through the real CLI,
examples that call a hosted API through mypy."""

from __future__ import annotations

import contextlib
import io
import os
import re
import socket
import subprocess
import sys
import time
import types
from pathlib import Path

import httpx
import pytest
import typer.main
from tests.docs.doc_blocks import ROOT, Block, documents, read_blocks, shell_commands

from tooluse import DEFAULT_REGISTRY
from tooluse.cli.app import app

# A page runs the real embedded model when a block loads it or a command uses it.
_LOCAL_MODEL = re.compile(
    r"load_model\(\s*\"local|LlamaCppBackend|(-m|--model)[ =]local|tooluse (serve|demo)\b"
)
PAGES = [p for p in documents() if any(b.kind != "other" for b in read_blocks(p))]


def _page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _uses_local_model(blocks: list[Block]) -> bool:
    return any(
        _LOCAL_MODEL.search(b.code + " ".join(b.directives))
        for b in blocks
        if b.kind in ("run", "shell") and b.directive("parse-only") is None
    )


def _params() -> list[object]:
    out = []
    for path in PAGES:
        marks = [pytest.mark.slow, pytest.mark.timeout(900)]
        slow = _uses_local_model(read_blocks(path))
        out.append(pytest.param(path, id=_page_id(path), marks=marks if slow else []))
    return out


# -- commands -------------------------------------------------------------------------------------


def _parse_cli(args: list[str]) -> None:
    """Parse ``tooluse ARGS`` as the CLI would, down to the leaf command, running nothing."""
    # typer ships its own copy of click, so groups are told by what they do, not by class
    command = typer.main.get_command(app)
    try:
        ctx = command.make_context("tooluse", list(args))
        while hasattr(command, "resolve_command"):
            rest = [*ctx._protected_args, *ctx.args]  # what the group hands its subcommand
            if not rest:
                break
            name, sub, rest = command.resolve_command(ctx, rest)
            assert sub is not None, f"no command {name!r}"
            command, ctx = sub, sub.make_context(name or "", rest, parent=ctx)
    except typer.Exit as done:  # an eager option such as --version ends the parse early
        assert done.exit_code == 0, args


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([\w-]+):", text, flags=re.MULTILINE))


def _extras() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project.optional-dependencies]")[1].split("\n[")[0]
    return set(re.findall(r"^([\w-]+) = \[", section, flags=re.MULTILINE))


def _check_command(words: list[str], block: Block) -> None:
    program, args = words[0], words[1:]
    if program == "make":
        targets = [a for a in args if "=" not in a and not a.startswith("-")]
        assert set(targets) <= _make_targets(), f"{block.where}: unknown make target in {words}"
    elif program in ("pip", "pip3") or words[:3] == ["python", "-m", "pip"]:
        for arg in args:
            extras = re.fullmatch(r"tooluse\[([\w,-]+)\]", arg)
            if extras:
                assert set(extras[1].split(",")) <= _extras(), f"{block.where}: {arg}"
    elif program == "python":
        if args[:1] == ["-m"]:
            import importlib.util

            assert importlib.util.find_spec(args[1]), f"{block.where}: no module {args[1]}"
        else:
            assert (ROOT / args[0]).is_file(), f"{block.where}: no script {args[0]}"
    elif program not in ("apt-get", "git", "cd"):
        raise AssertionError(f"{block.where}: the docs tests do not know command {program!r}")


def _environment() -> dict[str, str]:
    """The test's environment with this interpreter's folder first on PATH, as in an activated
    virtualenv: a page's ``python -m ...`` is the Python tooluse is installed in."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path}


def _run_shell(block: Block, cwd: Path) -> None:
    parse_only = block.directive("parse-only")
    for words in shell_commands(block.code):
        if words[0] != "tooluse":
            _check_command(words, block)
            continue
        _parse_cli(words[1:])
        if parse_only is not None:
            continue
        done = subprocess.run(
            [sys.executable, "-m", "tooluse", *words[1:]],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            env=_environment(),
        )
        assert done.returncode == 0, f"{block.where}: {' '.join(words)}\n{done.stderr[-3000:]}"


# -- Python blocks --------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _server(command: str, cwd: Path):
    """Start ``command --port P`` on a free port and wait for its ``/health``."""
    port = _free_port()
    words = command.split()
    assert words[0] == "tooluse", command
    process = subprocess.Popen(
        [sys.executable, "-m", "tooluse", *words[1:], "--port", str(port)],
        cwd=cwd,
        env=_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            time.sleep(0.3)
        else:
            raise AssertionError(f"{command} did not answer /health within 120 s")
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def _run_python(block: Block, module: types.ModuleType, cwd: Path) -> None:
    code = block.code
    server = block.directive("server")
    with contextlib.ExitStack() as stack:
        if server:
            port = stack.enter_context(_server(server, cwd))
            assert "127.0.0.1:8000" in code, f"{block.where}: the server block has no address"
            code = code.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, block.where, "exec"), module.__dict__)
    if block.output is not None:
        shown = printed.getvalue().strip()
        if block.output_is_prefix:
            shown = "\n".join(shown.splitlines()[: len(block.output.strip().splitlines())])
        assert shown == block.output.strip(), (
            f"{block.where}: printed\n{printed.getvalue()}\nbut the page shows\n{block.output}"
        )


@pytest.mark.parametrize("path", _params())
def test_page_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = read_blocks(path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PATH", _environment()["PATH"])  # for servers a Python block starts
    name = "docs_page_" + re.sub(r"\W", "_", _page_id(path))
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    # each page is a program of its own: its @tool functions start from an empty registry
    monkeypatch.setattr(DEFAULT_REGISTRY, "_definitions", {})
    monkeypatch.setattr(DEFAULT_REGISTRY, "_objects", {})
    ran = 0
    for block in blocks:
        if block.kind == "file":
            target = tmp_path / block.title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
        elif block.kind == "run":
            _run_python(block, module, tmp_path)
            ran += 1
        elif block.kind == "shell":
            _run_shell(block, tmp_path)
            ran += 1
    assert ran or any(b.kind == "needs-key" for b in blocks)


# -- examples that need an API key: type-checked ------------------------------------------------


def _typed_modules(tmp_path: Path) -> dict[Path, tuple[Block, int]]:
    """One module per block that needs a key: the page's earlier Python (run by the page's
    test already, here only as context), then the block, and the line the block starts on."""
    written = {}
    for path in PAGES:
        earlier: list[str] = []
        slug = re.sub(r"\W", "_", _page_id(path))
        for number, block in enumerate(read_blocks(path)):
            if block.kind == "needs-key":
                target = tmp_path / f"{slug}_{number}.py"
                context = "\n".join(earlier)
                target.write_text(f"{context}\n{block.code}", encoding="utf-8")
                written[target] = (block, context.count("\n") + 2)
            if block.kind in ("run", "needs-key"):
                earlier.append(block.code)
            if block.kind == "file" and block.title.endswith(".py"):
                (tmp_path / block.title).write_text(block.code, encoding="utf-8")
    return written


def test_examples_that_need_an_api_key_type_check(tmp_path: Path) -> None:
    modules = _typed_modules(tmp_path)
    assert len(modules) >= 2  # the README's hosted quick start and the providers guide at least
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            "--no-error-summary",
            *map(str, modules),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MYPYPATH": str(ROOT / "src")},
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    problems = []
    for line in done.stdout.splitlines():
        match = re.match(r"(.+?\.py):(\d+): error: (.*)", line)
        if not match:
            continue
        module = tmp_path / Path(match[1]).name
        if module not in modules:
            problems.append(line)  # an error outside the generated modules
            continue
        block, first = modules[module]
        if int(match[2]) >= first:  # in the block itself, not in the page's earlier code
            problems.append(
                f"{block.path.relative_to(ROOT)}:{block.line + 1 + int(match[2]) - first}: {match[3]}"
            )
    assert not problems, "\n".join(problems)
