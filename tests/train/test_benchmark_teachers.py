"""Teacher data from the benchmark environments: τ²-bench's expected actions and the nested
benchmarks' gold sequences, played through the real environments on the train split."""

from __future__ import annotations

import pytest

from tooluse.envs import environment_registry
from tooluse.train.data import TrainDataError, teacher_conversations


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("tau2:airline", {"user": "gold"}),
        ("tau2:retail", {"user": "gold"}),
        ("tau2:telecom", {"user": "gold"}),
        ("tau2:telecom:solo", {}),
        ("nestful", {}),
        ("complexfuncbench", {}),
    ],
)
def test_teachers_play_the_gold_calls_of_train_tasks(name, options):
    conversations = teacher_conversations(name, size=4)
    train = environment_registry.get(name=name, split="train", **options)
    train_ids = {t.id for t in train.tasks}
    assert len(conversations) == 4
    for conversation in conversations:
        assert conversation.source.split("/", 1)[1] in train_ids
        offered = {t.name for t in conversation.tools}
        calls = [c for m in conversation.messages for c in m.tool_calls]
        assert all(c.name in offered for c in calls)
        results = [m for m in conversation.messages if m.role == "tool"]
        assert len(results) == len(calls)  # every call answered in the training text
    if name.startswith("tau2:") and not name.endswith(":solo"):
        # The customer's side is there (its first message), the policy in the system prompt.
        first = conversations[0].messages
        assert first[0].role == "system" and "<policy>" in first[0].content
        assert first[1].content == "Hi! How can I help you today?" and first[2].role == "user"
    with pytest.raises(TrainDataError, match="refuses the test split"):
        teacher_conversations(name, split="test", size=1)
