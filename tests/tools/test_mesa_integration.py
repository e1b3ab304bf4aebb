"""Mesa-LLM's built-in tools on real Mesa models, chosen by a scripted model through tooluse.run."""

from __future__ import annotations

import warnings

import mesa
import pytest
from mesa.discrete_space import CellAgent, OrthogonalMooreGrid  # noqa: E402
from mesa.space import ContinuousSpace, MultiGrid, SingleGrid  # noqa: E402

import tooluse  # noqa: E402
from tooluse import ScriptedBackend, ToolCall, ToolManager  # noqa: E402
from tooluse.integrations.mesa import (  # noqa: E402
    MESA_TOOLS,
    move_one_step,
    speak_to,
    teleport_to_location,
)


class Memory:
    def __init__(self) -> None:
        self.entries: list[tuple[str, dict]] = []

    def add_to_memory(self, *, type: str, content: dict) -> None:
        self.entries.append((type, content))


class Walker(mesa.Agent):
    def __init__(self, model: mesa.Model) -> None:
        super().__init__(model)
        self.memory = Memory()


class GridModel(mesa.Model):
    def __init__(self, grid_cls: type = MultiGrid, torus: bool = False) -> None:
        super().__init__(seed=7)
        self.grid = grid_cls(5, 5, torus)
        self.walkers = [Walker(self) for _ in range(3)]
        for walker, pos in zip(self.walkers, [(0, 0), (2, 2), (4, 4)], strict=True):
            self.grid.place_agent(walker, pos)


def test_schemas_hide_the_agent_and_name_the_directions():
    by_name = {t.name: t for t in MESA_TOOLS}
    assert set(by_name) == {"move_one_step", "teleport_to_location", "speak_to"}
    for definition in MESA_TOOLS:
        assert "agent" not in definition.parameters_schema["properties"]
        assert definition.injected == ("agent",)
    direction = by_name["move_one_step"].parameters_schema["properties"]["direction"]
    assert direction["enum"] == [
        "North", "South", "East", "West", "NorthEast", "NorthWest", "SouthEast", "SouthWest"
    ]  # fmt: skip
    coords = by_name["teleport_to_location"].parameters_schema["properties"]["target_coordinates"]
    assert coords["minItems"] == coords["maxItems"] == 2


def test_scripted_model_moves_teleports_and_speaks_on_a_real_grid():
    model = GridModel()
    walker, other, third = model.walkers
    backend = ScriptedBackend(
        [
            [
                ToolCall(id="c1", name="move_one_step", arguments={"direction": "north"}),
                ToolCall(
                    id="c2",
                    name="speak_to",
                    arguments={"listener_agents_unique_ids": [other.unique_id], "message": "hi"},
                ),
            ],
            [
                ToolCall(
                    id="c3", name="teleport_to_location", arguments={"target_coordinates": [3, 1]}
                )
            ],
            [ToolCall(id="c4", name="move_one_step", arguments={"direction": "NorthEast"})],
            "done",
        ]
    )
    result = tooluse.run(
        backend, "Explore.", tools=list(MESA_TOOLS), injected={"agent": walker}, max_tool_iters=5
    )
    assert result.final_text == "done"
    outputs = {step.name + str(i): step for i, step in enumerate(result.trail)}
    assert not any(step.is_error for step in result.trail), outputs
    assert walker.pos == (4, 2)  # (0,0) -> North (0,1) -> teleport (3,1) -> NorthEast (4,2)
    assert model.grid.get_cell_list_contents([(4, 2)]) == [walker]
    assert other.memory.entries == [("message", {"message": "hi", "sender": walker.unique_id})]
    assert third.memory.entries == []
    assert "moved North to (0, 1)" in result.trail[0].output
    assert result.trail[1].output.startswith(f'agent {walker.unique_id} sent "hi"')


def test_boundary_and_out_of_bounds_are_answers_the_model_can_read():
    model = GridModel()
    walker = model.walkers[0]  # at (0, 0)
    assert "at the boundary and cannot move South" in move_one_step(walker, "South")
    assert walker.pos == (0, 0)
    backend = ScriptedBackend(
        [
            [
                ToolCall(
                    id="c1", name="teleport_to_location", arguments={"target_coordinates": [9, 9]}
                )
            ],
            "ok",
        ]
    )
    result = tooluse.run(backend, "Go.", tools=list(MESA_TOOLS), injected={"agent": walker})
    assert result.trail[0].is_error
    assert "outside the space" in result.trail[0].output
    assert walker.pos == (0, 0)


def test_torus_wraps_and_single_grid_refuses_an_occupied_cell():
    torus = GridModel(torus=True)
    walker = torus.walkers[0]
    move_one_step(walker, "West")
    assert walker.pos == (4, 0)
    single = GridModel(SingleGrid)
    walker, other, _ = single.walkers
    teleport_to_location(walker, (2, 1))
    assert "occupied" in move_one_step(walker, "North")  # (2, 2) holds the other walker
    assert walker.pos == (2, 1)
    with pytest.raises(ValueError, match="occupied"):
        teleport_to_location(walker, (2, 2))


def test_continuous_space_moves_by_unit_steps_and_teleports_to_floats():
    model = mesa.Model(seed=1)
    model.space = ContinuousSpace(10, 10, torus=False)
    walker = Walker(model)
    model.space.place_agent(walker, (5.0, 5.0))
    assert "moved SouthWest to (4, 4)" in move_one_step(walker, "SouthWest")
    assert teleport_to_location(walker, (3.5, 7.25)).endswith("moved to (3.5, 7.25)")
    assert walker.pos == (3.5, 7.25)
    with pytest.raises(ValueError, match="outside the space"):
        teleport_to_location(walker, (10.0, 1.0))


def test_orthogonal_grid_uses_rows_and_columns():
    model = mesa.Model(seed=3)
    model.grid = OrthogonalMooreGrid((4, 4), torus=False, capacity=1, random=model.random)
    walker = CellAgent(model)
    walker.cell = model.grid[(2, 2)]
    blocker = CellAgent(model)
    blocker.cell = model.grid[(1, 2)]
    assert "full" in move_one_step(walker, "North")  # North is row - 1
    assert "moved East to (2, 3)" in move_one_step(walker, "East")
    assert walker.cell.coordinate == (2, 3)
    assert "boundary" in move_one_step(walker, "East")
    teleport_to_location(walker, (0, 0))
    assert walker.cell.coordinate == (0, 0)
    with pytest.raises(ValueError, match="outside the grid"):
        teleport_to_location(walker, (4, 0))


def test_speak_to_reports_skipped_and_unknown_listeners():
    model = GridModel()
    walker, other, _ = model.walkers
    plain = mesa.Agent(model)  # no memory
    text = speak_to(walker, [other.unique_id, plain.unique_id, 999, walker.unique_id], "go")
    assert f'sent "go" to [{other.unique_id}]' in text
    assert f"skipped [{plain.unique_id}]" in text
    assert "999" in text and str(walker.unique_id) in text.split("no other agent")[1]


def test_tool_manager_runs_the_mesa_tools_for_an_agent():
    model = GridModel()
    walker = model.walkers[1]  # at (2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        manager = ToolManager(registry=None)
        for definition in MESA_TOOLS:
            manager.register(definition)
    # Mesa-LLM's call(name, {"agent": a, ...})
    assert "moved East to (3, 2)" in manager.call(
        "move_one_step", {"agent": walker, "direction": "East"}
    )
    response = ScriptedBackend(
        [[ToolCall(id="m1", name="move_one_step", arguments={"direction": "Up"})]]
    ).generate_with_tools([], tools=[])
    [result] = manager.call_tools(walker, response)
    assert result["is_error"] and "one of" in result["response"]
    assert walker.pos == (3, 2)


def test_an_agent_sent_by_the_model_is_an_unknown_argument_not_silently_replaced():
    """The model cannot choose the agent: its ``agent`` value is reported as unknown (the
    loop's words), the move is not made, and a call without it runs for the real agent."""
    model = GridModel()
    walker, other = model.walkers[1], model.walkers[2]  # at (2, 2) and (4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        manager = ToolManager(registry=None)
        for definition in MESA_TOOLS:
            manager.register(definition)
    chosen = {"direction": "East", "agent": other.unique_id}
    response = ScriptedBackend(
        [
            [
                ToolCall(id="m1", name="move_one_step", arguments=chosen),
                ToolCall(id="m2", name="move_one_step", arguments={"direction": "North"}),
            ]
        ]
    ).generate_with_tools([], tools=[])
    refused, moved = manager.call_tools(walker, response)
    assert refused["tool_call_id"] == "m1" and refused["is_error"] is True
    assert "agent: unknown argument" in refused["response"]
    assert moved["is_error"] is False and "moved North to (2, 3)" in moved["response"]
    assert (walker.pos, other.pos) == ((2, 3), (4, 4))  # only the call without an agent ran
    # The loop answers the same call in the same words.
    backend = ScriptedBackend(
        [
            [ToolCall(id="l1", name="move_one_step", arguments=chosen)],
            tooluse.GenerationResult(text="ok"),
        ]
    )
    result = tooluse.run(backend, "move", tools=list(MESA_TOOLS), injected={"agent": walker})
    [reply] = [m.content for m in result.messages if m.role == "tool"]
    assert refused["response"].removeprefix("Error: ") == reply.removeprefix("error: ")
    assert walker.pos == (2, 3)
