"""Output cut off inside a parameter name (what ``max_tokens`` produces) ends the parse with the
call reported as cut off, in every XML-parameter format, whole and streamed."""

from __future__ import annotations

import pytest

from tooluse.formats import get_parser

CUT_OFF = {
    "qwen3_coder": "<tool_call>\n<function=f>\n<parameter=ci",
    "seed_oss": "<seed:tool_call>\n<function=f>\n<parameter=ci",
    "minimax_m2": '<minimax:tool_call><invoke name="f"><parameter name="ci',
    "glm45": "<tool_call>f\n<arg_key>ci",
}


@pytest.mark.timeout(10)
@pytest.mark.parametrize("fmt", sorted(CUT_OFF))
def test_cut_off_inside_parameter_name_reports_the_call(fmt: str) -> None:
    text = CUT_OFF[fmt]
    result = get_parser(fmt).parse(text)
    assert [c.name for c in result.tool_calls] == ["f"]
    assert result.tool_calls[0].arguments == {}
    assert any("cut off" in e.message for e in result.errors)
    stream = get_parser(fmt).stream()
    events = []
    for ch in text:
        events.extend(stream.feed(ch))
    events.extend(stream.close())
    finished = [e for e in events if type(e).__name__ == "ToolCallFinished"]
    assert len(finished) == 1


@pytest.mark.timeout(10)
def test_repeated_unclosed_key_garbage_ends() -> None:
    result = get_parser("glm45").parse("<tool_call>f\n" + "<arg_key" * 2000)
    assert len(result.tool_calls) == 1
