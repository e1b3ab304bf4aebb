"""What several ``tooluse`` commands share: loading ``--model`` and ``--format``, checking
output paths, the console.

Every model string goes through :func:`tooluse.providers.load_model` (``local`` is the
embedded model, ``openai:gpt-4o``, ``anthropic:...``); the commands differ only in how they
report a bad one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from tooluse.formats.base import ToolCallParser
    from tooluse.providers.base import Backend

__all__ = [
    "EMBEDDED_MODEL_SPECS",
    "check_output_paths",
    "console",
    "interruptible_run",
    "load_backend",
    "load_model_and_parser",
    "loading",
    "parser_or_exit",
]

#: The ``--model`` values that name the embedded model with its shipped adapter.
EMBEDDED_MODEL_SPECS = ("local", "local:default", "local:", "local:trained")


def console() -> Any:
    """A rich console for command output (no highlighting, long lines wrap softly)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


@contextmanager
def loading(console: Any, what: str) -> Iterator[None]:
    """A spinner while a model loads (only on a terminal)."""
    if console.is_terminal:
        with console.status(f"loading {what}..."):
            yield
    else:
        yield


def load_backend(spec: str, console: Any) -> Backend:
    """A backend from ``local``, ``llama-cpp:PATH`` or any ``load_model`` string; a bad one is
    a ``--model`` usage error (a missing extra stays one line naming the extra)."""
    from tooluse.errors import MissingDependencyError, ToolUseError
    from tooluse.providers.model_registry import load_model

    try:
        with loading(console, spec):
            return load_model(spec)
    except MissingDependencyError:
        raise  # one line naming the extra, from main()
    except (ToolUseError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--model") from exc


def parser_or_exit(format: str | None) -> ToolCallParser | None:
    """The text parser ``--format`` names (``None`` without one); exit 2 on an unknown name."""
    if format is None:
        return None
    from tooluse.formats import get_parser

    try:
        return get_parser(format)
    except KeyError as exc:
        typer.echo(f"error: {exc.args[0]}", err=True)
        raise typer.Exit(2) from None


def load_model_and_parser(model: str, format: str | None) -> tuple[Backend, ToolCallParser | None]:
    """The backend for ``--model`` and the text parser for ``--format``; exit 2 on a bad one."""
    from tooluse.providers.model_registry import load_model

    parser = parser_or_exit(format)
    try:
        backend = load_model(model)
    except Exception as exc:  # a bad model string or a missing extra: say so, exit 2
        typer.echo(f"error: cannot load model {model!r}: {exc}", err=True)
        raise typer.Exit(2) from None
    return backend, parser


def check_output_paths(out_dir: Path | None, output_file: Path | None) -> None:
    """Make sure the results can be written before any model is loaded: ``out_dir`` is
    created (and must be writable), ``output_file``'s folder must exist. Exit 2 otherwise."""
    problem = _out_dir_problem(out_dir) if out_dir is not None else None
    if problem is None and output_file is not None:
        problem = _output_file_problem(output_file)
    if problem is not None:
        typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(2)


def _interrupted_note(
    exc: KeyboardInterrupt,
    out: Path | None,
    scratch: Path | None,
    save: Callable[[Sequence[dict[str, Any]]], Path] | None,
) -> str:
    """Where an interrupted run's finished items are, and how to resume it."""
    written = getattr(exc, "written", None)
    if written is None:
        return "stopped"
    if out is not None:
        note = f"{written} finished item(s) written in {out}"
        resume = "; run the same command again to resume"
    elif scratch is not None:
        note = f"{written} finished item(s) written in {scratch}"
        resume = f"; run the same command with --out {scratch} to resume"
    else:
        note, resume = f"{written} finished item(s) not kept (no --out)", ""
    records = getattr(exc, "records", ())
    if save is not None and records:
        try:
            note += f", {len(records)} in {save(records)}"
        except OSError as error:
            note += f" (--output not written: {error.strerror or error})"
    return note + resume


def _out_dir_problem(out_dir: Path) -> str | None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".tooluse-write-check"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        return f"cannot write to --out {out_dir}: {exc.strerror or exc}"
    return None


def _output_file_problem(output_file: Path) -> str | None:
    folder = output_file.parent if str(output_file.parent) else Path(".")
    if output_file.is_dir():
        return f"--output {output_file} is a directory"
    if not folder.is_dir():
        return f"--output {output_file}: the folder {folder} does not exist"
    if not os.access(folder, os.W_OK):
        return f"--output {output_file}: the folder {folder} is not writable"
    return None


@contextmanager
def interruptible_run(
    out: Path | None,
    *,
    scratch: Path | None = None,
    save: Callable[[Sequence[dict[str, Any]]], Path] | None = None,
) -> Iterator[None]:
    """Ctrl-C or SIGTERM stops the run inside: what finished is in ``out``, resumable.

    The engine asks the in-flight generations to stop and waits up to two seconds for them;
    the command then exits 130 (Ctrl-C) or 143 (SIGTERM). A second Ctrl-C, or a worker still
    busy after the wait, ends the process at once: waiting for worker threads at interpreter
    exit would keep it running until their trajectories end. Without ``--out`` the run's
    directory is ``scratch`` (kept: the message names it) or none (nothing is kept).
    ``save(records)`` writes the finished rows (in item order) to the command's ``--output``
    file and returns its path, which the message names too.
    """
    import signal
    import sys

    from tooluse.evals.engine_types import RunInterrupted

    got: list[int] = []

    def on_term(number: int, frame: Any) -> None:
        got.append(number)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread: the default SIGTERM stays
        previous = None
    try:
        yield
    except KeyboardInterrupt as exc:
        code = 143 if got else 130
        typer.echo(f"interrupted: {_interrupted_note(exc, out, scratch, save)}", err=True)
        if isinstance(exc, RunInterrupted) and exc.abandoned:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        raise typer.Exit(code) from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
