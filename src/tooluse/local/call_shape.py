"""The shape of one constrained turn of calls: its GBNF grammar and its token budget.

Both are read from the tool schemas and the profile's call format alone (pure functions);
:class:`~tooluse.local.backend.LlamaCppBackend` compiles the grammar and counts the tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tooluse.local.grammar import GrammarBuilder, gbnf_literal, minimal_instance, tool_call_rules
from tooluse.local.profiles import ToolPromptProfile
from tooluse.messages import ToolCall
from tooluse.tools.definition import ToolDefinition

__all__ = [
    "CALL_MAX_STRING_LENGTH",
    "CALL_TOKENS_PER_VALUE",
    "MAX_PARALLEL_CALLS",
    "call_budget",
    "call_grammar_text",
    "count_values",
]

MAX_PARALLEL_CALLS = 4
# Strings in constrained calls end within this many characters (unless the schema says
# otherwise), so a model looping inside an argument still closes a valid call.
CALL_MAX_STRING_LENGTH = 120
# Token allowance per argument value in a call's own budget (on top of the closing reserve).
CALL_TOKENS_PER_VALUE = 40


def call_grammar_text(
    profile: ToolPromptProfile,
    tools: Sequence[ToolDefinition],
    *,
    parallel: bool = False,
    strict: bool = False,
) -> str:
    """GBNF text that matches one turn of calls to ``tools`` in ``profile``'s format."""
    builder = GrammarBuilder(
        strict=strict, max_string_length=CALL_MAX_STRING_LENGTH, plain_string_start=True
    )
    call = tool_call_rules(builder, [(t.name, t.parameters_schema) for t in tools])
    sep = gbnf_literal(profile.separator)
    if profile.list_form:
        body = f"{call} ( {sep} {call} ){{0,{MAX_PARALLEL_CALLS - 1}}}" if parallel else call
        builder.set_root(f"{gbnf_literal(profile.open)} {body} {gbnf_literal(profile.close)}")
    else:
        one = builder.add_rule(
            "wrapped-call", f"{gbnf_literal(profile.open)} {call} {gbnf_literal(profile.close)}"
        )
        builder.set_root(
            f"{one} ( {sep} {one} ){{0,{MAX_PARALLEL_CALLS - 1}}}" if parallel else one
        )
    return builder.render()


def call_budget(
    profile: ToolPromptProfile,
    count_tokens: Callable[[str], int],
    tools: Sequence[ToolDefinition],
    parallel: bool = False,
) -> tuple[int, int]:
    """``(budget, reserve)`` in tokens for one constrained turn of calls to ``tools``.

    ``reserve`` covers writing the longest tool's call from scratch with the shortest allowed
    values (so from any point of a call its end fits in it); ``budget`` adds
    ``CALL_TOKENS_PER_VALUE`` per argument value.
    """
    budget = reserve = 0
    for tool in tools:
        schema = tool.parameters_schema
        skeleton = profile.render_calls(
            [ToolCall(name=tool.name, arguments=minimal_instance(schema) or {})]
        )
        # forced literals may come out in smaller pieces than the natural tokenization
        need = (3 * count_tokens(skeleton)) // 2 + 4
        reserve = max(reserve, need)
        budget = max(budget, need + CALL_TOKENS_PER_VALUE * max(1, count_values(schema)))
    return (budget * MAX_PARALLEL_CALLS if parallel else budget), reserve


def count_values(schema: Any, depth: int = 0) -> int:
    """How many leaf values (strings, numbers...) the properties of ``schema`` hold, nested
    objects and array items included once."""
    if not isinstance(schema, dict) or depth > 8:
        return 1
    props = schema.get("properties")
    if isinstance(props, dict) and props:
        return sum(count_values(sub, depth + 1) for sub in props.values())
    if isinstance(schema.get("items"), dict):
        return count_values(schema["items"], depth + 1)
    return 1
