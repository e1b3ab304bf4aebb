"""Training data from independent sources: BFCL's single-turn gold answers graded by BFCL's
checker, word problems solved by programs made from their worked solutions, the recipe file and
its one-line errors, the n-gram leak check, and a recipe built end to end."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tooluse.cli.app import app
from tooluse.envs import TrajectoryRunner, environment_registry
from tooluse.evals.bfcl.checker import check_entry
from tooluse.evals.bfcl.single_turn import NO_TOOL_REPLY
from tooluse.messages import ToolCall
from tooluse.providers.scripted import ScriptedBackend
from tooluse.train.data import TrainDataError, read_sft_jsonl, teacher_data
from tooluse.train.dataset import build_dataset, turn_shares
from tooluse.train.leaks import LeakIndex
from tooluse.train.leaks import TestItem as Item
from tooluse.train.recipe import load_recipe, recipes_dir
from tooluse.train.word_problems import program_from_solution


def _run(program):
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(program, {})  # noqa: S102 - the test runs the program it checks
    return printed.getvalue().strip()


# -- BFCL's single-turn categories -----------------------------------------------------------------


def test_bfcl_gold_answers_are_graded_by_bfcls_checker_and_rejected_ones_listed():
    data = teacher_data("bfcl:parallel", size=12, seed=1)
    from tooluse.evals.bfcl.data import tools_for_entry

    env = environment_registry.get(name="bfcl:parallel", split="train")
    entries = {e.id: e for e in env.entries}
    assert len(data.conversations) == 12 and not data.rejected
    for conversation in data.conversations:
        entry = entries[conversation.source.split("/", 1)[1]]
        (reply,) = [m for m in conversation.messages if m.role == "assistant"]
        assert len(reply.tool_calls) >= 2  # parallel: several calls in one turn
        names = tools_for_entry(entry)[1]
        assert {t.name for t in conversation.tools} == set(names)
        decoded = [{names[c.name]: c.arguments} for c in reply.tool_calls]
        assert check_entry("parallel", entry.functions, decoded, entry.ground_truth).valid
    # Java: BFCL's answers hold Python booleans where its checker wants Java text; those golds
    # are rejected by the checker, counted and named, never trained on
    java = teacher_data("bfcl:simple_java", size=50)
    assert java.rejected and len(java.conversations) + len(java.rejected) == 50
    assert all(r.endswith("(the checker rejects the gold answer)") for r in java.rejected)
    assert "simple_java_6 (the checker rejects the gold answer)" in java.rejected
    # irrelevance: the right answer is no call
    (irrelevant, *_) = teacher_data("bfcl:irrelevance", size=3).conversations
    assert irrelevant.messages[-1].content == NO_TOOL_REPLY and irrelevant.tools
    assert not irrelevant.messages[-1].tool_calls
    with pytest.raises(TrainDataError, match="refuses the test split"):
        teacher_data("bfcl:parallel", split="test", size=1)


def test_the_single_turn_environment_grades_a_models_turn_as_bfcl_does():
    env = environment_registry.get(name="bfcl:simple_python", split="train", limit=2)
    right = env.gold_script(0)
    (call,) = right[0]
    wrong = [[ToolCall(name=call.name, arguments={**call.arguments, "unknown": 1})]]
    outcomes = [
        TrajectoryRunner(environment=env, backend=ScriptedBackend(script)).run_trajectory(0)
        for script in (right, wrong, ["I would rather not call anything."])
    ]
    assert [t.success for t in outcomes] == [True, False, False]
    assert [t.total_reward for t in outcomes] == [1.0, 0.0, 0.0]
    assert outcomes[0].messages[-1].result.output.startswith("recorded")
    # the request is the prompt; no system prompt is added (as tooluse eval bfcl asks)
    assert [m.role for m in outcomes[0].messages[:2]] == ["user", "assistant"]
    with pytest.raises(ValueError, match="no gold answer"):
        environment_registry.get(name="bfcl:live_relevance", split="train").gold_script(0)


# -- word problems -----------------------------------------------------------------------------


def test_programs_from_worked_solutions_compute_the_answer_step_by_step():
    prose = (
        "He works 6 days/week * 3 weeks/month = 18 days/month\n"
        "He earns £195/day * 18 days/month = £3510/month\n"
        "So in a year he earns £3510/month * 12 months/year = £42120\n#### 42120"
    )
    program = program_from_solution(prose)
    assert program.splitlines()[:3] == [
        "step_1 = 6 * 3",
        "step_2 = 195 * step_1",
        "step_3 = step_2 * 12",
    ]
    assert _run(program) == "42120"
    # a number the question gives stays a number, even when a step computed it too
    question = "Robert has 72 pebbles. He drops 36 and finds 17 of them again. How many has he?"
    steps = "He keeps 72*0.5=36 pebbles.\nThen 36+17=53 pebbles.\n#### 53"
    assert program_from_solution(steps, question).splitlines()[1] == "step_2 = 36 + 17"
    assert program_from_solution(steps).splitlines()[1] == "step_2 = step_1 + 17"
    marked = "Notebooks cost 3 * 2.50 = <<3*2.5=7.5>>7.50.\nTotal <<7.5+1.25=8.75>>8.75.\n#### 8.75"
    assert _run(program_from_solution(marked)) == "8.75"
    # a step whose arithmetic does not give its stated result: no program
    assert program_from_solution("Half of 188 is half * 188 = 94\n#### 94") is None
    assert program_from_solution("3 + 4 = 8\n#### 8") is None


def test_word_problem_teachers_compute_with_python_and_say_the_checked_answer(tmp_path):
    data = teacher_data("reasoning_gym:gsm_symbolic", size=12, seed=2, answer="text")
    assert len(data.conversations) + len(data.rejected) == 12
    assert len(data.conversations) >= 8
    for conversation in data.conversations:
        roles = [m.role for m in conversation.messages]
        assert roles == ["system", "user", "assistant", "tool", "assistant"]
        printed = conversation.messages[3].content.strip()
        assert conversation.messages[4].content == f"The answer is {printed}."
        assert [t.name for t in conversation.tools] == ["python"]  # said, not submitted
        assert "submit_answer" not in conversation.messages[0].content
    assert turn_shares(data.conversations)["text_after_tool_results"] == 0.5
    # GSM8K-format files: the calculator marks make the program
    problems = tmp_path / "gsm8k.jsonl"
    problems.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"p{n}",
                    "question": f"A box holds {n + 3} pens. How many pens are in {n + 2} boxes?",
                    "answer": f"{n + 3} * {n + 2} = <<{n + 3}*{n + 2}={(n + 3) * (n + 2)}>>"
                    f"{(n + 3) * (n + 2)}\n#### {(n + 3) * (n + 2)}",
                }
            )
            + "\n"
            for n in range(12)
        )
    )
    gsm8k = teacher_data("math:gsm8k", size=12, options={"data_path": str(problems)})
    assert gsm8k.conversations
    for conversation in gsm8k.conversations:
        code = conversation.messages[2].tool_calls[0].arguments["code"]
        assert code.startswith("step_1 = ")
        submitted = conversation.messages[4].tool_calls[0].arguments["answer"]
        assert submitted == conversation.messages[3].content.strip()
    with pytest.raises(TrainDataError, match="unknown answer style"):
        teacher_data("math:arithmetic", size=1, answer="shout")


# -- the leak check ----------------------------------------------------------------------------


def test_the_leak_check_finds_copies_edits_and_embeddings_but_not_templates():
    template = "State the final answer to the following arithmetic problem: {} ="
    items = [
        Item(source="bfcl:a", id="1", text="What's the area of a circle with a radius of 10?"),
        Item(
            source="bfcl:b",
            id="2",
            text="Could you kindly show me the list of files in tmp directory in my file system",
        ),
        Item(source="short", id="3", text="hi there"),
        *(
            Item(source="chain_sum", id=f"c{i}", text=template.format(f"{i} + {2 * i} - 7"))
            for i in range(40)
        ),
    ]
    index = LeakIndex(items, n=8, threshold=0.5)
    assert index.find("What's the area of a circle with a radius of 10?")[1] == 1.0
    # an edited copy (BFCL's miss_param drops a detail) and a copy inside a longer prompt
    near = "Could you kindly show me the list of files in tmp directory in my home folder"
    assert index.find(near)[0].id == "2"
    embedded = f"Does this need a tool? Request: {items[0].text} Tools: area(radius)"
    assert index.find(embedded)[0].id == "1"
    # short texts: only an equal one leaks
    assert index.find("Hi there")[0].id == "3"
    assert index.find("hi there, how are you doing today my friend?") is None
    # a generated task of the same template but other numbers holds no test item
    assert index.find(template.format("5 + 900 - 7")) is None
    assert index.find(template.format("3 + 6 - 7"))[0].id == "c3"


# -- recipes -----------------------------------------------------------------------------------


def _recipe(tmp_path, body, name="r.toml"):
    path = tmp_path / name
    path.write_text(body)
    return path


def _one_line_error(args):
    """The error line of a command that failed (the progress before it is allowed)."""
    result = CliRunner().invoke(app, args)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.output
    return errors[0]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('name = "x"\n[[source]]\nname = "bfcl:nope"\ncount = 3\n', "no source 'bfcl:nope'"),
        (
            'name = "x"\n[[source]]\nname = "math:arithmetic"\ncount = 3\nsplit = "test"\n',
            "source 1: the trainer refuses the test split",
        ),
        (
            'name = "x"\n[[source]]\nname = "math:arithmetic"\ncount = 3\nsplit = "dev"\n',
            "source 1: unknown split 'dev'",
        ),
        ('name = "x"\n[[source]]\nname = "math:arithmetic"\ncount = 0\n', "source.0.count"),
        ('name = "x"\ncolour = 1\n[[source]]\nname = "a"\ncount = 1\n', "unknown key 'colour'"),
        ('name = "x"\n', "missing key 'source'"),
        ('name = "x\n', "not TOML"),
    ],
)
def test_bad_recipes_are_one_line_errors(tmp_path, body, message):
    path = _recipe(tmp_path, body)
    line = _one_line_error(["train", "data", "--recipe", str(path), "--out", str(tmp_path / "o")])
    assert message in line and str(path) in line
    assert not (tmp_path / "o").exists()


def test_a_missing_recipe_file_is_one_line(tmp_path):
    line = _one_line_error(
        ["train", "data", "--recipe", str(tmp_path / "none.toml"), "--out", str(tmp_path / "o")]
    )
    assert "none.toml: cannot read it" in line


def test_the_shipped_recipe_reads_and_names_only_train_splits():
    recipe = load_recipe(recipes_dir() / "generalist.toml")
    assert recipe.name == "generalist" and recipe.leak_check.n == 8 and recipe.leak_check.drop
    assert {s.split for s in recipe.sources} == {"train"}
    names = [s.name for s in recipe.sources]
    bfcl = sum(s.count for s in recipe.sources if s.name.startswith("bfcl:"))
    own = sum(s.count for s in recipe.sources if s.name == "math:arithmetic")
    assert bfcl > 0.5 * sum(s.count for s in recipe.sources) and own < 0.1 * bfcl
    assert "reasoning_gym:gsm_symbolic" in names and "bfcl:live_irrelevance" in names


SMALL = """
name = "small"
seed = 3
[leak_check]
drop = {drop}
[[source]]
name = "bfcl:simple_python"
count = 40
[[source]]
name = "bfcl:live_irrelevance"
count = 10
[[source]]
name = "reasoning_gym:products"
count = 40
"""


def test_a_recipe_with_leaks_is_refused_with_examples_or_built_without_them(tmp_path):
    refused = _recipe(tmp_path, SMALL.format(drop="false"), "refused.toml")
    out = tmp_path / "refused"
    line = _one_line_error(["train", "data", "--recipe", str(refused), "--out", str(out)])
    assert "leak check:" in line and "training conversations hold a test item" in line
    # the examples: BFCL's simple_python asks questions that multiple's test split asks too
    assert " holds bfcl:" in line and "drop = true" in line
    assert not (out / "data.jsonl").exists()

    recipe = _recipe(tmp_path, SMALL.format(drop="true"), "dropped.toml")
    out = tmp_path / "built"
    result = CliRunner().invoke(app, ["train", "data", "--recipe", str(recipe), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "bfcl:simple_python: 40 conversations" in result.output
    assert "with no call" in result.output and "after tool results" in result.output
    report = json.loads((out / "report.json").read_text())
    leaks = report["leak_check"]
    assert leaks["leaks"] == len(leaks["dropped"]) > 0
    assert "bfcl:multiple" in leaks["test_splits"] and "math:arithmetic" in leaks["test_splits"]
    sources = report["sources"]
    assert sum(s["conversations"] for s in sources.values()) == report["conversations"]
    assert sources["bfcl:live_irrelevance"]["no_call"] == 1.0
    assert (
        sources["reasoning_gym:products"]["turns"]
        == 2 * sources["reasoning_gym:products"]["conversations"]
    )
    read = read_sft_jsonl(out / "data.jsonl")
    assert len(read) == report["conversations"]
    assert {c.source.split("/")[0] for c in read} == {
        "bfcl:simple_python",
        "bfcl:live_irrelevance",
        "reasoning_gym:products",
    }
    # every kept training prompt clears the check; the same recipe again is read back
    again = build_dataset(load_recipe(recipe), out, report=lambda line: None)
    assert again.report["data_sha256"] == report["data_sha256"]


BENCHMARKS = """
name = "benchmarks"
[leak_check]
drop = true
[[source]]
name = "tau2:retail"
count = 3
[[source]]
name = "nestful"
count = 3
"""


def test_benchmark_environments_are_recipe_sources_and_test_splits(tmp_path):
    recipe = _recipe(tmp_path, BENCHMARKS, "benchmarks.toml")
    built = build_dataset(load_recipe(recipe), tmp_path / "out", report=lambda line: None)
    sources = built.report["sources"]
    assert sources["tau2:retail"]["kept"] == 3 and sources["nestful"]["kept"] == 3
    assert sources["tau2:retail"]["conversations"] >= 1 and sources["nestful"]["conversations"] >= 1
    # the agent's closing message after the tools' results, and NESTFUL's answer after its calls
    assert sources["nestful"]["text_after_tool_results"] > 0
    checked = built.report["leak_check"]["test_splits"]
    assert {"tau2:retail", "tau2:airline", "tau2:telecom", "nestful", "complexfuncbench"} <= set(
        checked
    )
