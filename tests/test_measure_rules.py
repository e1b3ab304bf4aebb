"""The rules measurement plays a clean validation slice: train tasks that neither the rft run's
environments nor the recipe's gold conversations hold."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "measure_rules.py"


def _load():
    spec = importlib.util.spec_from_file_location("measure_rules", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_clean_slice_leaves_out_gold_and_the_runs_own_tasks(tmp_path):
    rules = _load()
    env, everything = rules.clean_slice("math:arithmetic", set(), 1000)
    taken = env.tasks[everything[0]].prompt
    gold = tmp_path / "data.jsonl"
    gold.write_text(
        json.dumps({"messages": [{"role": "user", "content": taken}]}) + "\n", encoding="utf-8"
    )
    env, clean = rules.clean_slice("math:arithmetic", rules.gold_user_texts(gold), 5)
    assert len(clean) == 5 and everything[0] not in clean
    from tooluse.train.data import train_environment

    with train_environment("math:arithmetic", "train", rules.RFT_TASKS, 0, {}) as used:
        run_prompts = {task.prompt for task in used.tasks}
    assert not run_prompts & {env.tasks[n].prompt for n in everything}
