"""The code blocks of the README and the documentation pages, read as the tests run them.

A fenced block's info string says what it is:

- ```` ```python ```` runs, in page order, in one namespace per page (like a notebook);
  a ```` ```text title="Output" ```` block right after it is what it must print
  (``title="Output (first lines)"``: what its output must start with).
- ```` ```python title="Needs OPENAI_API_KEY" ```` (a title starting with "Needs ") calls a
  hosted API: it is type-checked with mypy (after the page's earlier blocks), not run.
- A block titled with a file name (```` ```python title="my_tools.py" ````,
  ```` ```json title="mcp_servers.json" ````) is written to the page's working folder.
- ```` ```bash ```` blocks hold commands: every ``tooluse`` command is parsed by the real CLI
  and then run in the working folder, ``make`` targets and ``pip install 'tooluse[...]'``
  extras must exist, ``python`` scripts and modules must be found.

An HTML comment right before a block changes that (``<!-- docs-test: ... -->``):
``parse-only: REASON`` (commands parsed, not run: a hosted model, an hour of training...)
and ``server: COMMAND`` (a loopback server the Python block talks to at ``127.0.0.1:8000``;
the test starts it on a free port and points the block there).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>[^`]*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<text>.*?)\s*-->\s*$")
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_FILE_NAME = re.compile(r"^[\w./-]+\.(py|json|jinja|txt|jsonl|yaml|toml)$")
SHELLS = ("bash", "sh", "shell", "console")


@dataclass(frozen=True, kw_only=True)
class Block:
    """One fenced code block of a Markdown file."""

    path: Path
    line: int
    lang: str
    title: str
    code: str
    directives: tuple[str, ...] = ()
    output: str | None = field(default=None)
    output_is_prefix: bool = False

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def kind(self) -> str:
        """``run``, ``needs-key``, ``file``, ``shell``, ``output`` or ``other``."""
        if _FILE_NAME.match(self.title):
            return "file"
        if self.lang in ("python", "py"):
            return "needs-key" if self.title.startswith("Needs ") else "run"
        if self.lang in SHELLS:
            return "shell"
        if self.lang == "text" and self.title in ("Output", "Output (first lines)"):
            return "output"
        return "other"

    def directive(self, name: str) -> str | None:
        """The text after ``name:`` in this block's directives, if there is one."""
        for text in self.directives:
            key, _, rest = text.partition(":")
            if key.strip() == name:
                return rest.strip()
        return None


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, an ``Output`` block attached to the block before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opened = _FENCE.match(lines[index])
        if not opened or not opened["info"].strip():
            index += 1
            continue
        indent, fence = opened["indent"], opened["fence"]
        info = opened["info"].strip()
        lang = info.split()[0]
        attrs = dict(_ATTR.findall(info))
        directives = _directives_before(lines, index)
        body, end = [], index + 1
        while end < len(lines) and lines[end].strip() != fence:
            body.append(lines[end][len(indent) :] if lines[end].startswith(indent) else lines[end])
            end += 1
        block = Block(
            path=path,
            line=index + 1,
            lang=lang,
            title=attrs.get("title", ""),
            code="\n".join(body) + "\n",
            directives=directives,
        )
        if block.kind == "output" and blocks and blocks[-1].kind == "run":
            previous = blocks.pop()
            prefix = block.title == "Output (first lines)"
            block = Block(**{**previous.__dict__, "output": block.code, "output_is_prefix": prefix})
        blocks.append(block)
        index = end + 1
    return blocks


def _directives_before(lines: list[str], index: int) -> tuple[str, ...]:
    found = []
    at = index - 1
    while at >= 0 and (not lines[at].strip() or _DIRECTIVE.match(lines[at])):
        match = _DIRECTIVE.match(lines[at])
        if match:
            found.append(match["text"])
        at -= 1
    return tuple(reversed(found))


def shell_commands(code: str) -> list[list[str]]:
    """The commands of a shell block as argument lists: continuation lines joined, comments
    dropped, ``NAME=value`` lines kept as variables that later ``$NAME`` expand to."""
    variables: dict[str, str] = {}
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        expanded = re.sub(
            r"\$\{?(\w+)\}?",
            lambda m: variables.get(m[1], m[0]),
            line,
        )
        words = shlex.split(expanded, comments=True)
        if not words:
            continue
        assignment = re.fullmatch(r"([A-Z_][A-Z0-9_]*)=(.*)", words[0])
        if assignment and len(words) == 1:
            variables[assignment[1]] = assignment[2]
            continue
        commands.append(words)
    return commands


def documents() -> list[Path]:
    """The README and every page of the site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
