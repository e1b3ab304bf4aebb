"""The CLI reference (``docs/cli.md``), generated from the commands themselves.

``python -m tooluse.cli.reference > docs/cli.md`` writes it; a test checks that the file is
what this prints, so the reference cannot drift from ``--help``.
"""

from __future__ import annotations

from typing import Any


def _command_tree(command: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    out = [(path, command)]
    for name in sorted(getattr(command, "commands", {}) or {}):
        sub = command.commands[name]
        if getattr(sub, "hidden", False):
            continue
        out.extend(_command_tree(sub, (*path, name)))
    return out


def _option_line(param: Any) -> str:
    names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
    text = " ".join((getattr(param, "help", None) or "").split())
    default = param.default
    shown = ""
    if getattr(param, "is_flag", False) and not param.secondary_opts:
        shown = ""
    elif default not in (None, (), [], False) and not callable(default):
        shown = f" [default: {default}]"
    required = " (required)" if param.required else ""
    return f"- {names}{required}: {text}{shown}".rstrip()


def cli_reference() -> str:
    """Markdown for every command: usage, description, arguments and options."""
    import typer.main

    from tooluse.cli.app import app

    root = typer.main.get_command(app)
    lines = [
        "# `tooluse` command reference",
        "",
        "Generated from the commands by `python -m tooluse.cli.reference`; do not edit by hand.",
        "",
    ]
    for path, command in _command_tree(root, ("tooluse",)):
        heading = "#" * min(2 + len(path) - 1, 4)
        lines.append(f"{heading} `{' '.join(path)}`")
        lines.append("")
        help_text = (command.help or "").strip()
        if help_text:
            lines.append(help_text.split("\f")[0].strip())
            lines.append("")
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        options = [
            p
            for p in command.params
            if p.param_type_name == "option" and p.name not in ("help",) and not p.hidden
        ]
        for argument in arguments:
            text = " ".join((getattr(argument, "help", None) or "").split())
            name = (argument.name or "").upper()
            lines.append(
                f"- `{name}` (argument{'' if argument.required else ', optional'}): {text}"
            )
        if arguments:
            lines.append("")
        if options:
            lines.extend(_option_line(p) for p in options)
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    print(cli_reference(), end="")
