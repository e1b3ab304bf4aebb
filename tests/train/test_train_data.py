"""Training data: the test split refused, bad files and unparsable calls named, teacher
trajectories right, and the training text exactly what the local backend renders."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tooluse.cli.app import app
from tooluse.envs.export import sft_examples
from tooluse.train.data import (
    TrainDataError,
    read_sft_jsonl,
    refuse_test_split,
    render_examples,
    teacher_conversations,
)


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _good_row():
    return {
        "messages": [
            {"role": "user", "content": "Add 2 and 3."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "add", "content": "5"},
            {"role": "assistant", "content": "5"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "add",
                    "description": "Add.",
                    "parameters": {
                        "type": "object",
                        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    },
                },
            }
        ],
    }


def test_trainer_refuses_the_test_split():
    with pytest.raises(TrainDataError, match="refuses the test split"):
        refuse_test_split("test")
    with pytest.raises(TrainDataError, match="refuses the test split"):
        teacher_conversations("math:arithmetic", split="test", size=2)
    assert refuse_test_split("train") == "train"


def test_cli_refuses_the_test_split_in_one_line(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "train",
            "sft",
            "--env",
            "math:arithmetic",
            "--split",
            "test",
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [
        "error: the trainer refuses the test split (it is kept for evaluation); use --split train"
    ]
    assert not (tmp_path / "r").exists()


def test_empty_missing_and_corrupt_files_are_clear_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(TrainDataError, match=r"empty.jsonl: no examples \(the file is empty\)"):
        read_sft_jsonl(empty)
    with pytest.raises(TrainDataError, match="no such file"):
        read_sft_jsonl(tmp_path / "absent.jsonl")
    corrupt = _write(
        tmp_path / "corrupt.jsonl",
        [
            _good_row(),
            "{not json",
            _good_row(),
            {"tools": []},
            [1, 2],
            {"messages": [{"role": "user", "content": "hi"}]},
        ],
    )
    with pytest.raises(TrainDataError) as info:
        read_sft_jsonl(corrupt)
    message = str(info.value)
    assert "\n" not in message
    assert "4 line(s) are not SFT examples" in message
    assert (
        "line 2 (not JSON), 4 (no 'messages'), 5 (not a JSON object), 6 (no assistant turn to learn)"
        in message
    )


def test_calls_that_do_not_parse_are_counted_and_listed(tmp_path):
    rows = [_good_row() for _ in range(3)]
    rows[0]["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"a": 2, "b":'
    rows[2]["messages"][1]["tool_calls"][0]["function"]["arguments"] = "[1, 2]"
    path = _write(tmp_path / "calls.jsonl", rows)
    with pytest.raises(TrainDataError) as info:
        read_sft_jsonl(path)
    message = str(info.value)
    assert "2 tool call(s) have arguments that do not parse" in message
    assert "calls.jsonl:1 message 2 call 1 'add'" in message
    assert "calls.jsonl:3 message 2 call 1 'add'" in message
    good = read_sft_jsonl(_write(tmp_path / "good.jsonl", [_good_row()]))
    assert good[0].messages[1].tool_calls[0].arguments == {"a": 2, "b": 3}
    assert [t.name for t in good[0].tools] == ["add"]


def test_teacher_runs_the_expression_in_python_and_submits_it():
    conversations = teacher_conversations("math:arithmetic", split="train", size=6, seed=3)
    assert len(conversations) == 6
    for conversation in conversations:
        roles = [m.role for m in conversation.messages]
        assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
        python_call = conversation.messages[2].tool_calls[0]
        submit = conversation.messages[4].tool_calls[0]
        expression = conversation.messages[1].content.removeprefix("Compute ").split(".")[0]
        assert python_call.name == "python"
        assert python_call.arguments["code"].splitlines()[0] == f"result = {expression}"
        # the tool really ran: its output is what gets submitted
        assert submit.name == "submit_answer"
        assert submit.arguments["answer"] == conversation.messages[3].content.strip()
        assert [t.name for t in conversation.tools] == ["python", "submit_answer"]


def test_reasoning_gym_teachers_print_whole_numbers_as_the_dataset_writes_them():
    conversations = teacher_conversations("reasoning_gym:basic_arithmetic", size=30, seed=5)
    divisions = [c for c in conversations if "/" in c.messages[1].content]
    assert divisions, "the sample holds divisions"
    for conversation in conversations:
        printed = conversation.messages[3].content.strip()
        submitted = conversation.messages[4].tool_calls[0].arguments["answer"]
        assert printed == submitted and not printed.endswith(".0")


def test_exported_sft_lines_read_back_as_the_same_conversation(tmp_path):
    from tooluse.envs import TrajectoryRunner, environment_registry
    from tooluse.providers.scripted import ScriptedBackend
    from tooluse.train.data import _arithmetic_turns

    env = environment_registry.get(name="math:arithmetic", split="train", size=2)
    with env:
        record = (
            TrajectoryRunner(
                environment=env, backend=ScriptedBackend(_arithmetic_turns(env.task(0)))
            )
            .run_trajectory(task_index=0)
            .to_dict()
        )
    path = tmp_path / "sft.jsonl"
    for arguments_as in ("dict", "json"):
        (example,) = sft_examples([record], arguments_as=arguments_as)
        _write(path, [example])
        (read,) = read_sft_jsonl(path)
        calls = [c for m in read.messages for c in m.tool_calls]
        assert [(c.name, c.arguments) for c in calls] == [
            (c["name"], c["arguments"])
            for m in record["messages"]
            for c in m.get("tool_calls") or ()
        ]
        assert [t.to_openai_schema() for t in read.tools] == record["tools"]


@pytest.mark.slow
def test_training_text_is_what_the_backend_renders_at_inference():
    from tooluse.local.backend import LlamaCppBackend
    from tooluse.local.chat_prompt import render_prompt
    from tooluse.providers.base import SamplingParams

    backend = LlamaCppBackend.default(n_ctx=1024)
    try:
        conversations = teacher_conversations("math:arithmetic", size=3)
        examples = render_examples(conversations, backend)
        assert len(examples) == 6
        for number, example in enumerate(examples):
            conversation = conversations[number // 2]
            at = 2 if number % 2 == 0 else 4
            history, reply = conversation.messages[:at], conversation.messages[at]
            # the prompt the backend tokenizes for this call turn, through its own turn planning
            turn = backend._prepare_turn(history, conversation.tools, "required", SamplingParams())
            assert backend.loop.tokenize(example.prompt) == turn.prompt
            assert turn.plan.show_tools
            # the completion is the call exactly as the grammar lets the model write it
            assert (
                example.completion == backend.profile.render_calls(reply.tool_calls) + "<|im_end|>"
            )
            assert conversation.messages[1].content in example.prompt
            assert '"name": "python"' in example.prompt  # the tools are in the system prompt
        # the GGUF's own template renders only content: the calls would vanish from the text
        plain = render_prompt(
            backend.chat_template,
            [{"role": m.role, "content": m.content} for m in conversations[0].messages[:3]],
            add_generation_prompt=False,
        )
        assert "python" not in plain.split("assistant")[-1]
    finally:
        backend.close()


def test_bfcl_multi_turn_teacher_replays_the_ground_truth_on_the_train_split():
    from tooluse.envs import environment_registry

    conversations = teacher_conversations("bfcl:multi_turn_base", size=3)
    train_ids = {
        t.id for t in environment_registry.get(name="bfcl:multi_turn_base", split="train").tasks
    }
    assert len(conversations) == 3
    for conversation in conversations:
        assert conversation.source.split("/", 1)[1] in train_ids
        calls = [c for m in conversation.messages for c in m.tool_calls]
        assert calls and all(c.name in {t.name for t in conversation.tools} for c in calls)
        assert conversation.messages[-1].content == "Done."
    with pytest.raises(TrainDataError, match="no scripted teacher for 'bfcl:multi_turn_miss_func'"):
        teacher_conversations("bfcl:multi_turn_miss_func", size=1)


def test_irrelevance_teacher_answers_in_text_on_the_train_split_only():
    from tooluse.evals.bfcl.data import load_bfcl_category, split_of_entry
    from tooluse.train.bfcl_teachers import NO_TOOL_REPLY

    conversations = teacher_conversations("bfcl:live_irrelevance", size=30)
    assert len(conversations) == 30
    by_id = {e.id: e for e in load_bfcl_category("live_irrelevance")}
    for conversation in conversations:
        entry = by_id[conversation.source.split("/", 1)[1]]
        assert split_of_entry(entry) == "train"
        assert conversation.tools  # the functions that cannot serve the request are on offer
        reply = conversation.messages[-1]
        assert reply.role == "assistant" and not reply.tool_calls
        assert reply.content == NO_TOOL_REPLY
        assert conversation.messages[-2].content == entry.messages()[-1].content


def test_multi_turn_calls_teacher_offers_the_called_functions_among_decoys():
    from tooluse.envs.splits import split_of
    from tooluse.evals.bfcl.world import ground_truth_calls, load_multi_turn

    conversations = teacher_conversations("bfcl:multi_turn_calls", size=20)
    assert len(conversations) == 20
    entries = {e.id: e for e in load_multi_turn("multi_turn_base")}
    with_decoys = 0
    for conversation in conversations:
        entry = entries[conversation.source.removeprefix("bfcl:").removesuffix("/turn0")]
        assert split_of(entry.id, salt="bfcl:multi_turn_base") == "train"
        user, reply = conversation.messages
        assert user.content == entry.turns[0]
        expected = [(name, args) for name, args in ground_truth_calls(entry)[0]]
        assert [(c.name, c.arguments) for c in reply.tool_calls] == expected
        offered = {t.name for t in conversation.tools}
        assert {name for name, _ in expected} <= offered
        with_decoys += len(offered) > len({name for name, _ in expected})
    assert with_decoys >= 10  # most have other functions of their classes to choose from


def test_env_counts_after_an_equals_sign_and_bad_counts_are_refused(tmp_path):
    from tooluse.cli.train_cmd import _sized

    assert _sized("bfcl:live_irrelevance=40", 200) == ("bfcl:live_irrelevance", 40)
    assert _sized("math:arithmetic", 200) == ("math:arithmetic", 200)
    result = CliRunner().invoke(
        app,
        ["train", "sft", "--env", "math:arithmetic=0", "--out", str(tmp_path / "o")],
    )
    assert result.exit_code != 0 and "whole number of 1 or more" in result.output
