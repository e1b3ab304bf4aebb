"""Training data export: SFT chat examples and per-step RL lines, rendered and parsed back."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from typer.testing import CliRunner

import tooluse
from tooluse import ScriptedBackend, ToolCall, get_parser, render_chat_template
from tooluse.cli.app import app
from tooluse.envs import TrajectoryRunner, environment_registry
from tooluse.envs.export import read_trajectories, rl_steps, sft_examples
from tooluse.evals.bfcl.world import ground_truth_calls

# A ChatML template with a Qwen-style tools section, written for this test (the shape of
# Qwen2.5's: tools as JSON lines in the system turn, calls in <tool_call> blocks, results in
# <tool_response> blocks of a user turn).
QWEN_STYLE = """
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- '# Tools\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}
{{- '\\n</tools><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- set tc = tool_call.function if tool_call.function is defined else tool_call %}
{{- '\\n<tool_call>\\n{"name": "' + tc.name + '", "arguments": ' }}
{%- if tc.arguments is string %}{{- tc.arguments }}{%- else %}{{- tc.arguments | tojson }}{%- endif %}
{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""

ASSISTANT = re.compile(r"<\|im_start\|>assistant(.*?)<\|im_end\|>", re.S)
_ids = itertools.count()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A real run: the ground-truth policy on 3 BFCL entries, one of them spoiled."""
    out = tmp_path_factory.mktemp("run")
    env = environment_registry.get(name="bfcl:multi_turn_base", limit=3)
    script = []
    for index in range(3):
        for turn in ground_truth_calls(env.entries[index]):
            if turn and index != 2:
                calls = [ToolCall(id=f"c{next(_ids)}", name=n, arguments=a) for n, a in turn]
                script.append(calls)
            script.append("Done.")
    runner = TrajectoryRunner(
        environment=env, backend=ScriptedBackend(script), system_prompt="Use the functions."
    )
    result = runner.run_evaluation(out=out, progress=False)
    assert [r["success"] for r in result.records] == [True, True, False]
    return out


def test_sft_examples_are_in_the_chat_template_shape(run_dir):
    records = read_trajectories(run_dir)
    examples = list(sft_examples(records))
    assert len(examples) == 3
    first = examples[0]
    assert set(first) == {"messages", "tools"}
    assert [m["role"] for m in first["messages"][:3]] == ["system", "user", "assistant"]
    call = first["messages"][2]["tool_calls"][0]
    assert call["type"] == "function" and isinstance(call["function"]["arguments"], dict)
    result = first["messages"][3]
    assert result["role"] == "tool" and result["tool_call_id"] == call["id"]
    assert {t["function"]["name"] for t in first["tools"]} >= {"cd", "mv", "mkdir"}
    assert first["tools"][0]["type"] == "function"
    as_json = next(sft_examples(records, arguments_as="json"))
    assert isinstance(as_json["messages"][2]["tool_calls"][0]["function"]["arguments"], str)
    assert len(list(sft_examples(records, min_reward=1.0))) == 2
    assert len(list(sft_examples(records, only_success=True))) == 2


def test_rendered_examples_round_trip_through_the_hermes_parser(run_dir):
    parser = get_parser("hermes")
    checked = 0
    for example in sft_examples(read_trajectories(run_dir), chat_template=QWEN_STYLE):
        text = example["text"]
        assert text == render_chat_template(
            QWEN_STYLE, example["messages"], tools=example["tools"], add_generation_prompt=False
        )
        tools = [tooluse.as_tool(t) for t in example["tools"]]
        turns = [m for m in example["messages"] if m["role"] == "assistant"]
        segments = ASSISTANT.findall(text)
        assert len(segments) == len(turns)
        for segment, turn in zip(segments, turns):
            parsed = parser.parse(segment, tools)
            assert parsed.errors == ()
            want = [
                (c["function"]["name"], c["function"]["arguments"])
                for c in turn.get("tool_calls", [])
            ]
            assert [(c.name, c.arguments) for c in parsed.tool_calls] == want
            checked += len(want)
    assert checked > 10


def test_rl_lines_have_one_step_each_with_rewards(run_dir):
    records = read_trajectories(run_dir)
    rows = list(rl_steps(records, chat_template=QWEN_STYLE))
    assert len(rows) == sum(len(r["steps"]) for r in records)
    first = rows[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert first["completion"][0]["role"] == "assistant"
    assert set(first["signals"]) == {"tool_validity", "tool_efficiency"}
    last = [r for r in rows if r["trajectory"] == "0/0"][-1]
    assert last["done"] and last["reward"] == 1.0 and last["signals"]["correctness"] == 1.0
    spoiled = [r for r in rows if r["trajectory"] == "2/0"][-1]
    assert spoiled["reward"] == 0.0 and spoiled["signals"]["bfcl_state"] == 0.0
    assert first["prompt_text"].endswith("<|im_start|>assistant\n")
    assert "<tool_call>" in first["completion_text"]


def test_cli_export_sft_and_rl(run_dir, tmp_path):
    template = tmp_path / "qwen.jinja"
    template.write_text(QWEN_STYLE)
    sft = tmp_path / "sft.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "export",
            "sft",
            str(run_dir),
            "--out",
            str(sft),
            "--min-reward",
            "1",
            "--chat-template",
            str(template),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "wrote 2 of 3 trajectories" in result.output
    lines = [json.loads(line) for line in sft.read_text().splitlines()]
    assert len(lines) == 2 and all("<tool_call>" in line["text"] for line in lines)
    rl = tmp_path / "rl.jsonl"
    result = CliRunner().invoke(
        app, ["export", "rl", str(run_dir / "trajectories.jsonl"), "-o", str(rl)]
    )
    assert result.exit_code == 0, result.output
    assert len(rl.read_text().splitlines()) > 3
    missing = CliRunner().invoke(app, ["export", "sft", str(tmp_path / "nope"), "-o", str(sft)])
    assert missing.exit_code == 2 and "no trajectories at" in missing.output


def test_corrupt_lines_are_skipped_with_a_warning(run_dir, tmp_path):
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    damaged = tmp_path / "t.jsonl"
    damaged.write_text("\n".join([lines[0], "{not json", lines[1]]) + "\n")
    with pytest.warns(RuntimeWarning, match="skipped 1 line"):
        records = read_trajectories(damaged)
    assert len(records) == 2
