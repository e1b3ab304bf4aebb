"""`tooluse train grpo`: bad options and the test split refused before any work; rollouts
played through the real environment (python really runs, the environment grades, its results
masked out of the loss); and, slow, a real tiny run whose adapter llama.cpp loads."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from tooluse.cli.app import app
from tooluse.envs import environment_registry
from tooluse.envs.prompts import MATH_PROMPT
from tooluse.local.chat_prompt import render_prompt
from tooluse.local.profiles import CHATML_TEMPLATE, SMOLLM2
from tooluse.messages import ToolCall
from tooluse.train.data import TrainDataError
from tooluse.train.grpo import GRPOOptions, run_grpo
from tooluse.train.rollout import RolloutSettings, TokenCodec, first_messages, play_rollouts

EOS = "<|im_end|>"


class ChatMLRenderer:
    """SmolLM2's profile under its ChatML template, rendered as the local backend does it
    (without loading the model)."""

    profile = SMOLLM2

    def render(self, messages, tools=()):
        return render_prompt(CHATML_TEMPLATE, SMOLLM2.to_template_messages(messages, tools))

    def render_turn(self, history, reply, tools=()):
        prompt = self.render(history, tools)
        whole = render_prompt(
            CHATML_TEMPLATE,
            SMOLLM2.to_template_messages([*history, reply], tools),
            add_generation_prompt=False,
        )
        completion = whole[len(prompt) :]
        return prompt, completion[: completion.index(EOS) + len(EOS)]


SPECIAL = {"<|im_start|>": 1, EOS: 2}


def _encode(text):
    ids = []
    for piece in re.split(r"(<\|im_start\|>|<\|im_end\|>)", text):
        ids.extend([SPECIAL[piece]] if piece in SPECIAL else [ord(c) + 10 for c in piece])
    return ids


def _decode(ids):
    names = {v: k for k, v in SPECIAL.items()}
    return "".join(names[i] if i in names else chr(i - 10) for i in ids)


CODEC = TokenCodec(encode=_encode, decode=_decode, eos_ids=frozenset({2}))


def _call(name, **arguments):
    return SMOLLM2.render_calls([ToolCall(name=name, arguments=arguments)]) + EOS


class ScriptedModel:
    """``generate`` that writes, round by round, one scripted turn for each running episode
    (in order); records the sequences it was given."""

    def __init__(self, rounds):
        self.rounds = [list(turns) for turns in rounds]
        self.seen = []

    def __call__(self, sequences, max_new_tokens):
        self.seen.append([list(s) for s in sequences])
        turns = self.rounds.pop(0)
        assert len(turns) == len(sequences)
        return [_encode(text) for text in turns]


@pytest.fixture
def env():
    with environment_registry.get(name="math:arithmetic", split="train", size=2, seed=0) as made:
        yield made


def _play(env, indices, model, **settings):
    settings.setdefault("max_completion_tokens", 4000)
    return play_rollouts(
        env,
        indices,
        renderer=ChatMLRenderer(),
        codec=CODEC,
        generate=model,
        settings=RolloutSettings(system_prompt=MATH_PROMPT, **settings),
    )


def test_a_group_is_rewarded_by_the_environment_and_python_really_runs(env):
    task = env.task(0)
    expression, answer = task.metadata["expression"], str(task.reference)
    model = ScriptedModel(
        [
            [_call("python", code=f"print({expression})"), _call("submit_answer", answer="7")],
            [_call("submit_answer", answer=answer)],
        ]
    )
    solved, wrong = _play(env, [0, 0], model)
    assert (solved.reward, solved.success, solved.ended) == (1.0, True, "answered")
    assert (solved.turns, solved.tool_calls) == (2, 2)
    assert (wrong.reward, wrong.success, wrong.ended) == (0.0, False, "answered")
    # the prompt is the backend's first turn: the tools in the system prompt, then the task
    renderer = ChatMLRenderer()
    first = renderer.render(first_messages(task.prompt, MATH_PROMPT), env.tools)
    assert _decode(solved.prompt_ids) == first and solved.prompt_ids == wrong.prompt_ids
    # the environment's tokens (the python output, the next header) are masked out of the loss
    ids, mask = solved.completion_ids, solved.model_mask
    by_model = _decode([t for t, m in zip(ids, mask) if m])
    by_env = _decode([t for t, m in zip(ids, mask) if not m])
    assert by_model == _call("python", code=f"print({expression})") + _call(
        "submit_answer", answer=answer
    )
    assert by_env == f"\n<|im_start|>tool\n{answer}{EOS}\n<|im_start|>assistant\n"
    # the second turn was sampled on exactly the tokens trained on (prompt + completion so far)
    second_input = model.seen[1][0]
    assert second_input == [*solved.prompt_ids, *ids[: len(second_input) - len(solved.prompt_ids)]]
    assert len(wrong.completion_ids) == sum(wrong.model_mask)


def test_episodes_end_on_the_token_budget_the_turn_limit_or_an_unreadable_call(env):
    expression = env.task(1).metadata["expression"]
    python = _call("python", code=f"print({expression})")
    limited, garbled = _play(
        env,
        [1, 1],
        ScriptedModel([[python, "<tool_call>[{not json]</tool_call>" + EOS]]),
        max_turns=1,
    )
    # one turn allowed: the call ran, the episode stops there, ungraded
    assert limited.ended == "turns" and limited.tool_calls == 1 and limited.reward == 0.0
    assert all(limited.model_mask)
    assert garbled.ended == "answered" and garbled.reward == 0.0 and garbled.tool_calls == 0
    # a model that never ends its turn is cut at the budget
    (long,) = _play(env, [1], ScriptedModel([["x" * 50]]), max_completion_tokens=20)
    assert long.ended == "length" and len(long.completion_ids) == 20 and long.reward == 0.0


def test_the_budget_stops_an_episode_before_tool_results_that_do_not_fit(env):
    expression = env.task(1).metadata["expression"]
    python = _call("python", code=f"print({expression})")
    (cut,) = _play(
        env, [1], ScriptedModel([[python]]), max_completion_tokens=len(_encode(python)) + 5
    )
    assert cut.ended == "length" and cut.turns == 1 and all(cut.model_mask)
    assert _decode(cut.completion_ids) == python


GRPO = ["train", "grpo", "--size", "2", "--steps", "1", "--generations", "2",
        "--max-completion-length", "24", "--max-turns", "1", "-q"]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--split", "test"], "the trainer refuses the test split"),
        (["--split", "dev"], "unknown split 'dev'"),
        (["--generations", "1"], "--generations must be at least 2"),
        (["--steps", "0"], "--steps must be at least 1"),
        (["--max-completion-length", "0"], "--max-completion-length must be at least 1"),
        (["--prompts-per-step", "3"], "--size must be at least --prompts-per-step"),
        (["--temperature", "0"], "--temperature must be above 0"),
        (["--env", "bfcl:multi_turn_base"], "train grpo plays single-question environments"),
        (["--adapter", "missing.gguf"], "LoRA adapter not found: missing.gguf"),
    ],
)
def test_bad_options_are_one_line_before_any_work(tmp_path, extra, message):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [*GRPO, *extra, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert f"error: {message}" in result.output
    assert not out.exists()


def test_an_adapter_that_is_not_a_lora_is_refused(tmp_path):
    from tooluse.local.model_files import default_model_path

    options = GRPOOptions(out=tmp_path / "r", start_adapter=default_model_path())
    with pytest.raises(TrainDataError, match="not a GGUF LoRA adapter"):
        run_grpo(options, renderer=ChatMLRenderer())
    with pytest.raises(TrainDataError, match="refuses the test split"):
        run_grpo(GRPOOptions(out=tmp_path / "r", split="test"), renderer=ChatMLRenderer())
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_tiny_grpo_run_exports_an_adapter_llama_cpp_loads_and_resumes(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    pytest.importorskip("gguf")
    from tooluse.local.backend import LlamaCppBackend
    from tooluse.messages import ChatMessage
    from tooluse.providers.base import SamplingParams

    out = tmp_path / "grpo"
    tiny = [*GRPO, "--max-completion-length", "32", "--save-steps", "1"]
    first = CliRunner().invoke(app, [*tiny, "--out", str(out)])
    assert first.exit_code == 0, first.output
    card = json.loads((out / "card.json").read_text())
    assert card["method"] == "grpo" and card["metrics"]["steps"] == 1
    assert card["data"] == {"environment": "math:arithmetic", "split": "train", "size": 2,
                            "seed": 0}  # fmt: skip
    (step,) = card["metrics"]["per_step"]
    assert step["step"] == 1 and 0.0 <= step["reward"] <= 1.0 and step["seconds"] > 0
    assert step["completion_tokens"] <= 32
    assert card["metrics"]["reward_first"] == card["metrics"]["reward_last"] == step["reward"]
    assert card["wall_seconds"] > 0 and card["cpu_seconds"] > 0 and card["resumed_from"] is None
    adapter = out / "adapter.gguf"
    assert adapter.stat().st_size == card["adapter_bytes"] > 0

    # the same command with one more step resumes from the checkpoint
    again = CliRunner().invoke(app, [*tiny, "--steps", "2", "--out", str(out)])
    assert again.exit_code == 0, again.output
    card = json.loads((out / "card.json").read_text())
    assert card["resumed_from"] == "checkpoint-1" and card["metrics"]["steps"] == 2
    assert [s["step"] for s in card["metrics"]["per_step"]] == [1, 2]
    assert "2 steps in" in again.output and "reward" in again.output

    backend = LlamaCppBackend.default(n_ctx=512, lora_path=adapter)
    try:
        assert backend.lora_path == adapter
        reply = backend.generate([ChatMessage.user("Hi")], params=SamplingParams(max_tokens=4))
        assert reply.usage.output_tokens >= 1
    finally:
        backend.close()


def test_a_train_sft_adapter_is_read_back_into_peft_with_its_effect(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    pytest.importorskip("gguf")
    import copy

    from tooluse.train.grpo import start_from_adapter
    from tooluse.train.runtime import import_training_stack
    from tooluse.train.sft import TARGET_MODULES, export_adapter

    stack = import_training_stack()
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    base = transformers.LlamaForCausalLM(config)
    lora = peft.LoraConfig(
        r=4, lora_alpha=8.0, lora_dropout=0.0, target_modules=list(TARGET_MODULES),
        init_lora_weights=False,  # random A and B: every tensor and row order matters
    )  # fmt: skip
    trained = peft.get_peft_model(copy.deepcopy(base), lora)
    path = export_adapter(stack, trained, 8.0, tmp_path / "sft.gguf")
    restarted, alpha = start_from_adapter(stack, copy.deepcopy(base), path)
    assert alpha == 8.0
    ids = torch.tensor([[1, 5, 9, 13, 17, 21]])
    with torch.no_grad():
        want, got, plain = trained(ids).logits, restarted(ids).logits, base(ids).logits
    assert (want - plain).abs().max() > 0.05  # the adapter changes the model...
    torch.testing.assert_close(got, want, atol=2e-3, rtol=2e-3)  # ...and reads back the same
    trainable = [n for n, p in restarted.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_" in n for n in trainable)
