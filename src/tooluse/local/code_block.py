"""The embedded model in code mode: its program written as a grammar-constrained Python block.

A small model cannot write a program inside a JSON string (every newline and quote escaped), so
:class:`CodeBlockModel` asks it for a fenced ``python`` block instead, decoded under a GBNF
grammar (:func:`program_grammar`) of the Python a program needs: up to ``max_statements``
lines, the first ``result = await name(key=value, ...)`` (a tool's call with the keyword
arguments of its stub in order, each a literal of its type or an earlier result), the next
ones more calls (``result2 = ...``) or a ``print(...)`` / ``final_answer(...)`` of a result, a
string or an f-string; fixed names leave the model no room for a keyword or a stray name. The
block becomes a call of the program tool. A turn that comes after the program's result, or a
request without the program tool, goes to the wrapped model as usual (a text answer).

With ``constrain=False`` the block is written freely (up to the closing fence), for measuring
what the grammar brings (``benchmarks/measure_code_mode_local.py``).

The block is decoded on the wrapped backend's batch engine (its model, adapter and prompt
caches), beside whatever else that engine decodes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tooluse.execution.code_mode.stubs import ToolStub, tool_stubs
from tooluse.messages import ChatMessage, ToolCall, Usage
from tooluse.providers.base import (
    BaseBackend,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    ToolChoice,
)
from tooluse.tools.definition import ToolDefinition

if TYPE_CHECKING:
    from tooluse.local.backend import LlamaCppBackend

__all__ = ["CodeBlockModel", "program_grammar"]

FENCE = "```python\n"
INSTRUCTIONS = (
    "Answer by writing a short Python program that calls one of the async functions below "
    "with await and keyword arguments and prints what it returns, like this:\n"
    '```python\nresult = await some_function(argument="value")\nprint(result)\n```\n'
    "The functions:"
)

_COMMON = r"""
first ::= "result = " await "\n"
stmt ::= (assign | output) "\n"
assign ::= var " = " await
await ::= "await " call
output ::= ("print(" | "final_answer(") shown ")"
shown ::= ref | str | fstr
var ::= "result" [2-9]
ref ::= "result" [2-9]? ("[" (str | int) "]"){0,2}
str ::= "\"" [^"\\\n]{0,60} "\""
fstr ::= "f\"" ([^"\\\n{}] | "{" ref "}"){0,60} "\""
int ::= "-"? [0-9]{1,12}
num ::= int ("." [0-9]{1,8})?
bool ::= "True" | "False"
"""


def program_grammar(stubs: Sequence[ToolStub], *, max_statements: int = 6) -> str:
    """The GBNF of a program's block (after its opening fence, up to its closing one) calling
    ``stubs`` (those taking ``**arguments`` are left out: their names are not keywords)."""
    usable = [s for s in stubs if not s.variadic]
    if not usable:
        raise ValueError("no tool can be called from a program block (none has named arguments)")
    rules = [
        f'root ::= first stmt{{0,{max_statements - 1}}} "```"',
        "call ::= " + " | ".join(f"call{i}" for i in range(len(usable))),
    ]
    for number, stub in enumerate(usable):
        rules += _call_rules(number, stub)
    return "\n".join(rules) + _COMMON


def _call_rules(number: int, stub: ToolStub) -> list[str]:
    rules = []
    required = [p for p in stub.parameters if p.required]
    optional = [p for p in stub.parameters if not p.required]
    parts = []
    for index, parameter in enumerate(required):
        value = f"v{number}x{index}"
        rules.append(f"{value} ::= {_value(parameter.schema)}")
        separator = '", " ' if index else ""
        parts.append(f'{separator}"{parameter.name}=" {value}')
    body = " ".join(parts)
    for index, parameter in enumerate(optional, start=len(required)):
        value = f"v{number}x{index}"
        rules.append(f"{value} ::= {_value(parameter.schema)}")
        lead = '", " ' if body else ""
        body = f'{body} ({lead}"{parameter.name}=" {value})?'.strip()
    rules.append(f'call{number} ::= "{stub.function}(" {body or chr(34) * 2} ")"')
    return rules


def _value(schema: Mapping[str, Any] | None, depth: int = 0) -> str:
    """The GBNF of a Python literal of ``schema`` (or an earlier variable)."""
    schema = schema or {}
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and depth < 3:
        return " | ".join(_gbnf_literal(_python_literal(v)) for v in enum) + " | ref"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "array" and depth < 2:
        item = _value(schema.get("items"), depth + 1)
        return f'"[" (({item}) (", " ({item})){{0,15}})? "]" | ref'
    return {
        "string": "str | ref",
        "integer": "int | ref",
        "number": "num | ref",
        "boolean": "bool | ref",
    }.get(str(kind), "ref | str | num | bool")


def _python_literal(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def _gbnf_literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class CodeBlockModel(BaseBackend):
    """The embedded model writing code mode's programs as Python blocks (see the module).

    ``backend`` is a :class:`~tooluse.local.backend.LlamaCppBackend` (its prompt format, model
    file and adapter are used); ``max_tokens`` bounds a block; ``constrain=False`` writes it
    without the grammar.
    """

    def __init__(
        self,
        backend: LlamaCppBackend,
        *,
        constrain: bool = True,
        max_tokens: int = 160,
        max_statements: int = 6,
    ) -> None:
        self.backend = backend
        self.constrain = constrain
        self.max_tokens = max_tokens
        self.max_statements = max_statements
        self.name = f"{getattr(backend, 'display_name', 'local')} (program blocks)"

    @property
    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(supports_vision=False)

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        return self.generate(messages, tools, params, tool_choice)

    def generate(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolDefinition] = (),
        params: SamplingParams | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> GenerationResult:
        """A program block when the program tool is offered and has not answered yet; else the
        wrapped model's turn (without the program tool)."""
        program = next((t for t in tools if t.metadata.get("code_mode")), None)
        answered = bool(messages) and messages[-1].role == "tool"
        if program is None or answered or tool_choice == "none":
            others = [t for t in tools if t is not program]
            result: GenerationResult = self.backend.generate(messages, others, params, "auto")
            return result
        stubs = tool_stubs(_program_tools(program))
        code, usage = self._write(messages, stubs)
        call = ToolCall(name=program.name, arguments={"code": code})
        return GenerationResult(tool_calls=(call,), usage=usage, finish_reason="tool_calls")

    def _write(
        self, messages: Sequence[ChatMessage], stubs: Sequence[ToolStub]
    ) -> tuple[str, Usage]:
        shown = "\n\n".join(s.shown() for s in stubs if not s.variadic)
        system = ChatMessage.system(f"{INSTRUCTIONS}\n```python\n{shown}\n```")
        rest = [m for m in messages if m.role != "system"]
        prompt = self.backend.render([system, *rest]) + FENCE
        from tooluse.local.sampling import DecodeSettings, GrammarSampler

        engine = self.backend.engine
        tokens = engine.tokenize(prompt)
        settings = DecodeSettings(max_tokens=self.max_tokens, temperature=0.0, stop=("```",))
        grammar = None
        if self.constrain:
            gbnf = program_grammar(stubs, max_statements=self.max_statements)
            grammar = GrammarSampler(self.backend.llm, gbnf)
        text = "".join(step.text for step in engine.run(tokens, settings, grammar))
        usage = Usage(
            input_tokens=len(tokens), output_tokens=len(engine.tokenize(text)), requests=1
        )
        return text.split("```")[0].rstrip() + "\n", usage

    def close(self) -> None:
        """Nothing of its own to free: the block is decoded on the wrapped backend."""


def _program_tools(program: ToolDefinition) -> list[ToolDefinition]:
    """The tools a program may call, as the program tool's settings keep them."""
    tools = program.metadata.get("code_tools")
    return list(tools) if isinstance(tools, (list, tuple)) else []
