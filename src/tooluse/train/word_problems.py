"""Word problems solved with python: a program made from a worked solution's own steps.

GSM8K-style solutions write each step as arithmetic with its result: reasoning-gym's
``gsm_symbolic`` in prose (``£195/day * 12 days/month = £2340/month``), GSM8K's release with
calculator marks (``<<195*12=2340>>``). :func:`program_from_solution` turns each step into a line
of python, ``step_3 = 195 * 12``, with a number that an earlier step computed written as that
step's name, and prints the last step. A step is kept only when its arithmetic gives the result
the solution states; a solution with a step that does not is refused (None). Whether the
program is right is then decided by the task's own checker on what it printed (the teacher
plays it through the environment), never assumed.
"""

from __future__ import annotations

import ast
import re

__all__ = ["program_from_solution", "steps_of_solution"]

_NUMBER = r"\d[\d,]*(?:\.\d+)?"
_MARKED = re.compile(r"<<([^<>=]+)=([^<>]+)>>")
#: One token of a step's left-hand side: a number, an operator or a bracket; a word is dropped,
#: and so is a slash before a word (a unit: ``days/week``, ``£195/day``).
_TOKEN = re.compile(
    rf"(?P<number>{_NUMBER})%?|(?P<op>[-+*×÷()]|/(?!\s*[^\W\d])|x(?![^\W\d]))|(?P<word>/?[^\W\d]+)"
)
_OPERATORS = {"×": "*", "x": "*", "÷": "/"}
#: Numbers that a solution brings in as units (weeks, months, hours, percent...).
_CONSTANTS = frozenset({"2", "7", "10", "12", "24", "30", "52", "60", "100", "365", "1000"})


def _tokens(text: str) -> list[str] | None:
    """The arithmetic in ``text`` (numbers, operators, brackets), words and units left out;
    None when what is left is not one expression."""
    out: list[str] = []
    for found in _TOKEN.finditer(text.replace("$", " ").replace("£", " ").replace("€", " ")):
        if found.group("number"):
            out.append(found.group("number").replace(",", ""))
        elif found.group("op"):
            out.append(_OPERATORS.get(found.group("op"), found.group("op")))
    out = out[_last_start(out) :]  # the arithmetic right before "=", not earlier numbers
    while out and out[0] in "*/+)":
        out.pop(0)
    while out and out[-1] in "*/+-(":
        out.pop()
    return out or None


def _last_start(tokens: list[str]) -> int:
    """Where the last expression starts: after the last two operands with no operator between
    them (``6 days every week ... 6 days/week * 2`` reads as ``6 * 2``)."""
    start = 0
    for index in range(1, len(tokens)):
        if tokens[index - 1] not in "+-*/(" and tokens[index] not in "+-*/)":
            start = index
    return start


def _value(expression: str) -> float | None:
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator, ast.unaryop)
    if not all(isinstance(node, allowed) for node in ast.walk(tree)):
        return None
    try:
        value = eval(compile(tree, "<step>", "eval"), {"__builtins__": {}})  # noqa: S307 - only numbers and operators
    except (ArithmeticError, TypeError, ValueError):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def steps_of_solution(solution: str) -> list[tuple[str, float]] | None:
    """The solution's steps as ``(python expression, stated result)``, each checked; None when
    a step's arithmetic does not give its stated result, or there is none."""
    marked = _MARKED.findall(solution)
    pairs = marked or [
        (left.rsplit("=", 1)[-1] if "=" in left else left, right)
        for line in solution.splitlines()
        if "=" in line and not line.startswith("####")
        for left, right in [line.rsplit("=", 1)]
    ]
    steps = []
    for left, right in pairs:
        stated = re.search(_NUMBER, right.replace("$", ""))
        tokens = _tokens(left)
        if stated is None or tokens is None:
            return None
        expression = " ".join(tokens)
        value = _value(expression)
        result = float(stated.group(0).replace(",", ""))
        if value is None or not _close(value, result):
            return None
        steps.append((expression, result))
    return steps or None


def program_from_solution(solution: str, question: str = "") -> str | None:
    """The python program of a worked solution (see the module), or None. A number that an
    earlier step computed is written as that step's name, unless the ``question`` gives it or
    it is a common constant (12 months, 60 minutes, 100 percent): there it is a given, and
    naming the step would tie it to the wrong quantity."""
    steps = steps_of_solution(solution)
    if steps is None:
        return None
    givens = {n.replace(",", "") for n in re.findall(_NUMBER, question)} | _CONSTANTS
    lines = []
    known: dict[str, str] = {}
    for number, (expression, result) in enumerate(steps, 1):
        parts = [known.get(token, token) for token in expression.split(" ")]
        name = f"step_{number}"
        lines.append(f"{name} = {' '.join(parts)}")
        text = f"{result:g}" if result != int(result) else str(int(result))
        if text not in givens:
            known.setdefault(text, name)
    last = f"step_{len(steps)}"
    lines.append(f"print(int({last}) if {last} == int({last}) else round({last}, 6))")
    return "\n".join(lines)
