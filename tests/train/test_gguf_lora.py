"""The GGUF LoRA writer: llama.cpp's tensor names and layout, and never a half-written file."""

from __future__ import annotations

import errno

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from tooluse.train.gguf_lora import LoraShape, read_lora_gguf, write_lora_gguf  # noqa: E402

SHAPE = LoraShape(alpha=8.0, n_layers=1, n_head=2, n_head_kv=1)


def _tensors(scale=1.0):
    rng = np.random.default_rng(0)
    prefix = "base_model.model.model.layers.0"
    return {
        f"{prefix}.self_attn.q_proj.lora_A.default.weight": rng.normal(size=(4, 8)).astype(
            np.float32
        ),
        f"{prefix}.self_attn.q_proj.lora_B.default.weight": scale
        * np.arange(32, dtype=np.float32).reshape(8, 4),
        f"{prefix}.mlp.down_proj.lora_A.default.weight": rng.normal(size=(4, 16)).astype(
            np.float32
        ),
        f"{prefix}.mlp.down_proj.lora_B.default.weight": rng.normal(size=(8, 4)).astype(np.float32),
    }


def test_writes_llama_cpp_names_metadata_and_permuted_query_rows(tmp_path):
    path = write_lora_gguf(_tensors(), SHAPE, tmp_path / "a.gguf", dtype="f32")
    reader = gguf.GGUFReader(str(path))
    fields = {name: field for name, field in reader.fields.items()}
    assert bytes(fields["general.type"].parts[-1]).decode() == "adapter"
    assert bytes(fields["adapter.type"].parts[-1]).decode() == "lora"
    assert float(fields["adapter.lora.alpha"].parts[-1][0]) == 8.0
    tensors = {t.name: np.array(t.data) for t in reader.tensors}
    assert set(tensors) == {
        "blk.0.attn_q.weight.lora_a", "blk.0.attn_q.weight.lora_b",
        "blk.0.ffn_down.weight.lora_a", "blk.0.ffn_down.weight.lora_b",
    }  # fmt: skip
    rows = tensors["blk.0.attn_q.weight.lora_b"][:, 0]
    # 2 heads of 4 rows each: llama.cpp interleaves the two halves of each head's rows
    assert rows.tolist() == [0, 8, 4, 12, 16, 24, 20, 28]


def test_a_failed_write_leaves_the_old_adapter_and_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "adapter.gguf"
    write_lora_gguf(_tensors(), SHAPE, target)
    before = target.read_bytes()

    def full_disk(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gguf.GGUFWriter, "write_tensors_to_file", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_lora_gguf(_tensors(scale=2.0), SHAPE, target)
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["adapter.gguf"]


def test_reading_an_adapter_back_gives_peft_names_and_the_original_rows(tmp_path):
    original = _tensors()
    path = write_lora_gguf(original, SHAPE, tmp_path / "a.gguf", dtype="f32")
    adapter = read_lora_gguf(path, n_layers=1, n_head=2, n_head_kv=1)
    assert adapter.alpha == 8.0 and adapter.rank == 4
    assert adapter.modules == ("down_proj", "q_proj")
    # peft's names without the adapter name, the query rows back in transformers' order
    expected = {key.replace(".default", ""): value for key, value in original.items()}
    assert set(adapter.tensors) == set(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(adapter.tensors[key], value)


def test_reading_refuses_a_model_file_and_tensors_of_another_shape(tmp_path):
    from tooluse.local.model_files import default_model_path

    with pytest.raises(ValueError, match="not a GGUF LoRA adapter"):
        read_lora_gguf(default_model_path(), n_layers=30, n_head=9, n_head_kv=3)
    deep = _tensors()
    deep = {key.replace("layers.0", "layers.3"): value for key, value in deep.items()}
    path = write_lora_gguf(
        deep, LoraShape(alpha=8.0, n_layers=4, n_head=2, n_head_kv=1), tmp_path / "d.gguf"
    )
    with pytest.raises(
        ValueError, match="blk.3.attn_q.weight.lora_a is not a LoRA tensor of this model"
    ):
        read_lora_gguf(path, n_layers=2, n_head=2, n_head_kv=1)


def test_rejects_tensors_that_are_not_lora(tmp_path):
    with pytest.raises(ValueError, match="not a LoRA tensor"):
        write_lora_gguf(
            {"model.layers.0.self_attn.q_proj.weight": np.zeros((2, 2))}, SHAPE, tmp_path / "x.gguf"
        )
    assert not list(tmp_path.iterdir())


def test_the_backend_checks_a_lora_file_before_llama_cpp_sees_it(tmp_path):
    from tooluse.local.model_files import ModelFileError, check_lora_path, default_model_path

    adapter = write_lora_gguf(_tensors(), SHAPE, tmp_path / "ok.gguf")
    assert check_lora_path(adapter) == adapter
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"GGUF" + b"\0" * 64)  # llama.cpp itself loads this without a word
    with pytest.raises(ModelFileError, match="cannot read the LoRA adapter .*known version"):
        check_lora_path(garbage)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(adapter.read_bytes()[:40])
    with pytest.raises(ModelFileError, match="ends inside its header"):
        check_lora_path(cut)
    with pytest.raises(ModelFileError, match="not a GGUF LoRA adapter"):
        check_lora_path(default_model_path())
    with pytest.raises(ModelFileError, match="not found"):
        check_lora_path(tmp_path / "absent.gguf")


def _smollm_adapter(path):
    """A random rank-2 adapter on the embedded SmolLM2's first query and down projections."""
    rng = np.random.default_rng(1)
    prefix = "base_model.model.model.layers.0"
    tensors = {
        f"{prefix}.self_attn.q_proj.lora_A.weight": rng.normal(size=(2, 576)).astype(np.float32),
        f"{prefix}.self_attn.q_proj.lora_B.weight": rng.normal(size=(576, 2)).astype(np.float32),
        f"{prefix}.mlp.down_proj.lora_A.weight": rng.normal(size=(2, 1536)).astype(np.float32),
        f"{prefix}.mlp.down_proj.lora_B.weight": rng.normal(size=(576, 2)).astype(np.float32),
    }
    return write_lora_gguf(tensors, LoraShape(alpha=2, n_layers=30, n_head=9, n_head_kv=3), path)


def test_an_adapter_for_another_model_is_refused(tmp_path):
    from tooluse.local.model_files import ModelFileError, check_lora_path, default_model_path

    other = write_lora_gguf(_tensors(), SHAPE, tmp_path / "other.gguf")  # 8-wide projections
    with pytest.raises(ModelFileError, match=r"does not fit .*blk.0.attn_q.weight is \(576, 576\)"):
        check_lora_path(other, default_model_path())
    fitting = _smollm_adapter(tmp_path / "fits.gguf")
    assert check_lora_path(fitting, default_model_path()) == fitting


@pytest.mark.slow
def test_model_strings_name_an_adapter_and_round_trip(tmp_path):
    from tooluse.providers.model_registry import load_model

    adapter = _smollm_adapter(tmp_path / "a.gguf")
    backend = load_model(f"local:base#lora={adapter}", n_ctx=256)
    try:
        assert backend.lora_path == adapter
        assert backend.model_spec == f"local:base#lora={adapter}"
        again = load_model(backend.model_spec, n_ctx=256)
        assert again.lora_path == adapter
        again.close()
        spec = f"local:base#lora={adapter}#decider=trained#narrow=on"
        trained = load_model(spec, n_ctx=256)
        assert trained.model_spec == spec and trained.narrow_tools
        trained.close()
        spec = f"local:base#lora={adapter}#decider=default-then-model"
        stepwise = load_model(spec, n_ctx=256)
        assert stepwise.model_spec == spec and not stepwise.narrow_tools
        stepwise.close()
        spec = f"local:base#lora={adapter}#lora_scale=0.5"
        halved = load_model(spec, n_ctx=256)
        assert halved.model_spec == spec and halved.lora_scale == 0.5
        halved.close()
    finally:
        backend.close()
    with pytest.raises(ValueError, match="#lora= needs the path"):
        load_model("local:base#lora=")


def test_model_strings_set_the_context_length_and_refuse_unknown_options():
    from tooluse.local.model_strings import parse_local_options

    options: dict = {}
    assert parse_local_options("#lora=a.gguf#n_ctx=8192", options) == ""
    assert options == {"lora_path": "a.gguf", "n_ctx": 8192}
    for bad in ("#n_ctx=big", "#n_ctx=0", "#threads=2", "#decider"):
        with pytest.raises(ValueError, match="takes #lora=PATH, #n_ctx=N"):
            parse_local_options(bad, {})
    chosen: dict = {}
    assert parse_local_options("#lora=a.gguf#decider=trained", chosen) == ""
    assert type(chosen["decider"]).__name__ == "TrainedDecider"
    scaled: dict = {}
    assert parse_local_options("#lora=a.gguf#lora_scale=0.5", scaled) == ""
    assert scaled["lora_scale"] == 0.5
    for bad in ("#lora_scale=lots", "#lora_scale=-1", "#lora_scale=9"):
        with pytest.raises(ValueError, match=r"#lora_scale=X \(0 to 4\)"):
            parse_local_options(bad, {})
    stepwise: dict = {}
    parse_local_options("#decider=default-then-model", stepwise)
    decider = stepwise["decider"]
    # the untouched model's combination for a first step, the model's odds after results
    assert [type(d).__name__ for d in decider.ask.deciders] == ["MarkerDecider", "RelevanceDecider"]
    assert type(decider.then).__name__ == "ModelDecider"
    narrowed: dict = {}
    parse_local_options("#narrow=on", narrowed)
    parse_local_options("#narrow=off", chosen)
    assert narrowed["narrow_tools"] is True and chosen["narrow_tools"] is False
    parse_local_options("#narrow=first", narrowed)
    assert narrowed["narrow_tools"] == "first"
    with pytest.raises(ValueError, match="#narrow=on|off|first"):
        parse_local_options("#narrow=maybe", {})
    with pytest.raises(ValueError, match="no decider 'psychic'; deciders: default, model"):
        parse_local_options("#decider=psychic", {})


@pytest.mark.slow
def test_an_adapted_model_chooses_its_tools_itself_unless_told_otherwise(tmp_path):
    from tooluse.local.backend import LlamaCppBackend
    from tooluse.local.decision import ModelDecider, RelevanceDecider
    from tooluse.messages import ChatMessage, ToolCall, ToolResult
    from tooluse.tools.definition import ToolDefinition

    adapter = _smollm_adapter(tmp_path / "a.gguf")
    adapted = LlamaCppBackend.default(n_ctx=1024, lora_path=adapter)
    plain = LlamaCppBackend.default(n_ctx=1024)
    told = LlamaCppBackend.default(
        n_ctx=1024, lora_path=adapter, narrow_tools=True, decider=RelevanceDecider()
    )
    try:
        assert (adapted.narrow_tools, type(adapted.decider)) == (False, ModelDecider)
        assert plain.narrow_tools and not isinstance(plain.decider, ModelDecider)
        assert told.narrow_tools and isinstance(told.decider, RelevanceDecider)
        # after a tool result the base model's deciders always answer; the model decider
        # reads the model's own odds of starting a call there
        tool = ToolDefinition.from_schema("submit_answer", {"type": "object", "properties": {}})
        call = ToolCall(name="submit_answer", arguments={})
        history = [
            ChatMessage.user("Compute 2 + 2."),
            ChatMessage(role="assistant", content="", tool_calls=(call,)),
            ChatMessage.tool_result(ToolResult(call_id=call.id, tool_name=call.name, output="4")),
        ]
        always, never = ModelDecider(threshold=-1e9), ModelDecider(threshold=1e9)
        assert always.decide(adapted, history, [tool]).call
        decision = never.decide(adapted, history, [tool])
        assert not decision.call and decision.score <= 0.0 and "model score" in decision.reason
    finally:
        for backend in (adapted, plain, told):
            backend.close()


@pytest.mark.slow
def test_judge_base_reads_call_decisions_and_the_ranking_from_the_untouched_model(tmp_path):
    from tooluse.local.backend import LlamaCppBackend
    from tooluse.local.decision import MarkerDecider, ModelDecider, rank_tools
    from tooluse.messages import ChatMessage
    from tooluse.providers.model_registry import load_model
    from tooluse.tools.definition import ToolDefinition

    adapter = _smollm_adapter(tmp_path / "a.gguf")
    plain = LlamaCppBackend.default(n_ctx=1024)
    adapted = LlamaCppBackend.default(n_ctx=1024, lora_path=adapter)
    judged = load_model(f"local:base#lora={adapter}#judge=base", n_ctx=1024)
    unscaled = LlamaCppBackend.default(n_ctx=1024, lora_path=adapter, lora_scale=0.0)
    tools = [
        ToolDefinition.from_schema(name, {"type": "object", "properties": {}}, description=text)
        for name, text in (("get_weather", "The weather in a city"), ("add", "Add two numbers"))
    ]
    request = "What is 2 + 3?"
    history = [ChatMessage.user(request)]
    try:
        assert judged.judge == "base" and judged.model_spec.endswith("#judge=base")
        marker = MarkerDecider()
        scores = [marker.score(b, request, tools) for b in (plain, adapted, judged)]
        assert scores[2] == pytest.approx(scores[0], abs=1e-3)  # the base model's score
        assert abs(scores[1] - scores[0]) > 1e-3  # which the adapter moves
        # an adapter at scale 0 changes nothing
        assert marker.score(unscaled, request, tools) == pytest.approx(scores[0], abs=1e-3)
        ranked = [[round(s, 3) for s, _ in rank_tools(b, request, tools)] for b in (plain, judged)]
        assert ranked[0] == ranked[1]
        # the model's own odds still come from the adapted model
        model = ModelDecider()
        odds = [model.decide(b, history, tools).score for b in (adapted, judged)]
        assert odds[0] == pytest.approx(odds[1], abs=1e-3)
    finally:
        for backend in (plain, adapted, judged, unscaled):
            backend.close()
    with pytest.raises(ValueError, match="judge must be 'model' or 'base'"):
        LlamaCppBackend.default(n_ctx=256, judge="adapter")  # type: ignore[arg-type]


@pytest.mark.slow
def test_judge_base_refuses_a_first_call_when_the_base_models_own_call_is_guessed(tmp_path):
    from dataclasses import dataclass, field

    from tooluse.local.backend import LlamaCppBackend
    from tooluse.local.decision import ModelDecider, ToolDecision
    from tooluse.local.grounding import GroundingCheck
    from tooluse.messages import ChatMessage
    from tooluse.tools.definition import ToolDefinition

    @dataclass(frozen=True, kw_only=True)
    class PassFirst(GroundingCheck):
        """Lets the first review's calls stand and refuses every later one (recorded)."""

        seen: list = field(default_factory=list)

        def review(self, messages, calls, tools=()):
            self.seen.append(list(calls))
            if len(self.seen) == 1:
                return ToolDecision(call=True, score=1.0)
            return ToolDecision(call=False, score=0.0, reason="none of it is in the request")

    adapter = _smollm_adapter(tmp_path / "a.gguf")
    weather = ToolDefinition.from_schema(
        "get_weather",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        description="The weather in a city",
    )
    history = [ChatMessage.user("What is the weather like in Oslo today?")]
    always = ModelDecider(threshold=-1e9)
    checks = {judge: PassFirst() for judge in ("base", "model")}
    backends = {
        judge: LlamaCppBackend.default(
            n_ctx=1024, lora_path=adapter, decider=always, judge=judge, grounding=check
        )
        for judge, check in checks.items()
    }
    plain = LlamaCppBackend.default(n_ctx=1024)
    try:
        base_call = plain.generate(history, [weather], tool_choice="get_weather").tool_calls
        judged = backends["base"].generate(history, [weather])
        assert not judged.tool_calls and judged.text
        assert judged.raw["plan"] == "the base model's call: none of it is in the request"
        adapter_call, reviewed_base = checks["base"].seen
        assert judged.raw["refused_calls"] and adapter_call
        # the second review read the untouched model's call, written under the same grammar
        assert [(c.name, c.arguments) for c in reviewed_base] == [
            (c.name, c.arguments) for c in base_call
        ]
        # judged by the adapted model itself, the first review is the only one: the call stands
        own = backends["model"].generate(history, [weather])
        assert own.tool_calls and len(checks["model"].seen) == 1
    finally:
        for backend in (*backends.values(), plain):
            backend.close()


@pytest.mark.slow
def test_text_base_writes_text_answers_with_the_untouched_model_and_calls_with_the_adapter(
    tmp_path,
):
    from tooluse.local.backend import LlamaCppBackend
    from tooluse.messages import ChatMessage
    from tooluse.providers.base import SamplingParams
    from tooluse.tools.definition import ToolDefinition

    adapter = _smollm_adapter(tmp_path / "a.gguf")
    plain = LlamaCppBackend.default(n_ctx=1024)
    adapted = LlamaCppBackend.default(n_ctx=1024, lora_path=adapter)
    written = LlamaCppBackend.default(n_ctx=1024, lora_path=adapter, text="base")
    add = ToolDefinition.from_schema(
        "add",
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        description="Add two numbers",
    )
    history = [ChatMessage.user("Tell me about Paris in one sentence.")]
    params = SamplingParams(max_tokens=24)
    try:
        texts = [b.generate(history, params=params).text for b in (plain, adapted, written)]
        assert texts[2] == texts[0] and texts[1] != texts[0]  # the base model's words
        assert written.text_loop() is not written.loop and adapted.text_loop() is adapted.loop
        calls = [
            b.generate(history, [add], params=params, tool_choice="required").tool_calls
            for b in (adapted, written)
        ]
        written_calls = [[(c.name, c.arguments) for c in turn] for turn in calls]
        assert calls[0] and written_calls[1] == written_calls[0]  # the adapter writes the calls
        assert written.model_spec.endswith("#text=base")
    finally:
        for backend in (plain, adapted, written):
            backend.close()
    with pytest.raises(ValueError, match="text must be 'model' or 'base'"):
        LlamaCppBackend.default(n_ctx=256, text="adapter")  # type: ignore[arg-type]
