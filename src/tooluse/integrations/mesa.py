"""Mesa-LLM's built-in agent tools for Mesa models: ``move_one_step``, ``teleport_to_location``,
``speak_to`` (``pip install 'tooluse[mesa]'``, Mesa 3.x).

Each tool takes the calling agent as its ``agent`` parameter, which is hidden from the model and
injected at call time (``tooluse.run(..., injected={"agent": agent})`` or
``ToolManager.call_tools(agent, response)``); an ``agent`` the model sends is answered as an
unknown argument and the call is not run. Movement works on the spaces Mesa ships:
``SingleGrid``/``MultiGrid`` and ``ContinuousSpace`` (``x, y``; North is ``y + 1``) and the
``mesa.discrete_space`` orthogonal grids (``row, col``; North is ``row - 1``), found as the
model's ``grid`` or ``space`` attribute. A move the space cannot make (the boundary of a
non-torus space, an occupied cell) is answered in words so the model can try something else;
a target outside the space is an error result.

``speak_to`` delivers a message to each listener's ``memory.add_to_memory(type="message",
content={"message": ..., "sender": ...})`` (Mesa-LLM's agent memory) or, failing that, to a
``receive_message(message, sender)`` method; listeners with neither are reported as skipped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from tooluse.errors import MissingDependencyError
from tooluse.tools.definition import ToolDefinition

try:
    from mesa.discrete_space import OrthogonalMooreGrid, OrthogonalVonNeumannGrid
    from mesa.space import ContinuousSpace, MultiGrid, SingleGrid
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("mesa", "mesa") from exc

__all__ = [
    "DIRECTIONS",
    "MESA_TOOLS",
    "Direction",
    "move_one_step",
    "speak_to",
    "teleport_to_location",
]

Direction = Literal[
    "North", "South", "East", "West", "NorthEast", "NorthWest", "SouthEast", "SouthWest"
]
# (dx, dy) in x/y spaces, where North increases y
DIRECTIONS: dict[str, tuple[int, int]] = {
    "North": (0, 1),
    "South": (0, -1),
    "East": (1, 0),
    "West": (-1, 0),
    "NorthEast": (1, 1),
    "NorthWest": (-1, 1),
    "SouthEast": (1, -1),
    "SouthWest": (-1, -1),
}
_ORTHOGONAL = (OrthogonalMooreGrid, OrthogonalVonNeumannGrid)
_XY_SPACES = (SingleGrid, MultiGrid, ContinuousSpace)


def _space_of(agent: Any) -> Any:
    model = getattr(agent, "model", None)
    for attribute in ("grid", "space"):
        space = getattr(model, attribute, None)
        if isinstance(space, (*_ORTHOGONAL, *_XY_SPACES)):
            return space
    raise ValueError(
        "the agent's model has no Mesa space as 'grid' or 'space' (expected SingleGrid, "
        "MultiGrid, ContinuousSpace, OrthogonalMooreGrid or OrthogonalVonNeumannGrid)"
    )


def _position(agent: Any) -> tuple[Any, ...]:
    cell = getattr(agent, "cell", None)
    if cell is not None and getattr(cell, "coordinate", None) is not None:
        return tuple(cell.coordinate)
    for attribute in ("pos", "position"):
        value = getattr(agent, attribute, None)
        if value is not None:
            return tuple(value)
    raise ValueError(f"agent {agent.unique_id} is not placed in the space")


def _shown(position: Sequence[Any]) -> str:
    return "(" + ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in position) + ")"


def _place(agent: Any, space: Any, target: tuple[Any, ...]) -> None:
    """Move ``agent`` to ``target`` in ``space``; raises ``ValueError`` when it cannot go."""
    if isinstance(space, _ORTHOGONAL):
        key = tuple(int(v) for v in target)
        if any(int(v) != v for v in target):
            raise ValueError(f"grid coordinates must be whole numbers, got {list(target)}")
        try:
            cell = space[key]
        except KeyError:
            raise ValueError(
                f"{list(target)} is outside the grid (rows 0-{space.dimensions[0] - 1}, "
                f"columns 0-{space.dimensions[1] - 1})"
            ) from None
        if cell.is_full and agent not in cell.agents:
            raise ValueError(f"the cell {list(key)} is full")
        agent.cell = cell
        return
    if space.out_of_bounds(target):
        if isinstance(space, ContinuousSpace):
            bounds = (
                f"x in [{space.x_min:g}, {space.x_max:g}), y in [{space.y_min:g}, {space.y_max:g})"
            )
        else:
            bounds = f"x 0-{space.width - 1}, y 0-{space.height - 1}"
        raise ValueError(f"{list(target)} is outside the space ({bounds})")
    if isinstance(space, ContinuousSpace):
        space.move_agent(agent, (float(target[0]), float(target[1])))
        return
    if any(int(v) != v for v in target):
        raise ValueError(f"grid coordinates must be whole numbers, got {list(target)}")
    key = (int(target[0]), int(target[1]))
    if isinstance(space, SingleGrid) and key != tuple(agent.pos) and not space.is_cell_empty(key):
        raise ValueError(f"the cell {list(key)} is occupied")
    space.move_agent(agent, key)


def move_one_step(agent: Any, direction: Direction) -> str:
    """Move one step in a direction: North, South, East, West, NorthEast, NorthWest,
    SouthEast or SouthWest. Works on Mesa's grids and continuous space.

    Args:
        agent: Provided automatically.
        direction: The direction to move in.

    Returns:
        What happened: the new position, or why the agent could not move.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"invalid direction {direction!r}; use one of {', '.join(DIRECTIONS)}")
    space = _space_of(agent)
    here = _position(agent)
    dx, dy = DIRECTIONS[direction]
    if isinstance(space, _ORTHOGONAL):
        target: tuple[Any, ...] = (here[0] - dy, here[1] + dx)  # rows grow southwards
        if space.torus:
            target = tuple(v % size for v, size in zip(target, space.dimensions, strict=False))
        elif target not in space._cells:
            return f"agent {agent.unique_id} is at the boundary and cannot move {direction}"
        if space[target].is_full:
            return f"agent {agent.unique_id} cannot move {direction}: the cell is full"
    else:
        target = (here[0] + dx, here[1] + dy)
        if space.torus:
            target = tuple(space.torus_adj(target))
        elif space.out_of_bounds(target):
            return f"agent {agent.unique_id} is at the boundary and cannot move {direction}"
        if isinstance(space, SingleGrid) and not space.is_cell_empty(target):
            return f"agent {agent.unique_id} cannot move {direction}: the cell is occupied"
    _place(agent, space, target)
    return f"agent {agent.unique_id} moved {direction} to {_shown(_position(agent))}"


def teleport_to_location(agent: Any, target_coordinates: tuple[float, float]) -> str:
    """Move instantly to [x, y] coordinates inside the space (for a row/column grid: [row,
    column]).

    Args:
        agent: Provided automatically.
        target_coordinates: Exactly two numbers inside the space, e.g. [3, 7] or [3.5, 7.25].

    Returns:
        The agent's new position.
    """
    space = _space_of(agent)
    _place(agent, space, tuple(target_coordinates))
    return f"agent {agent.unique_id} moved to {_shown(_position(agent))}"


def speak_to(agent: Any, listener_agents_unique_ids: list[int], message: str) -> str:
    """Send a message to other agents; it is added to each listener's memory.

    Args:
        agent: Provided automatically.
        listener_agents_unique_ids: The unique ids of the agents receiving the message.
        message: The message to send.

    Returns:
        To whom the message was delivered, and who was skipped or not found.
    """
    wanted = list(dict.fromkeys(listener_agents_unique_ids))
    by_id = {a.unique_id: a for a in agent.model.agents}
    delivered: list[int] = []
    skipped: list[int] = []
    missing = [uid for uid in wanted if uid not in by_id or uid == agent.unique_id]
    for uid in wanted:
        listener = by_id.get(uid)
        if listener is None or listener is agent:
            continue
        memory = getattr(listener, "memory", None)
        receive = getattr(listener, "receive_message", None)
        if memory is not None and callable(getattr(memory, "add_to_memory", None)):
            memory.add_to_memory(
                type="message", content={"message": message, "sender": agent.unique_id}
            )
        elif callable(receive):
            receive(message, agent.unique_id)
        else:
            skipped.append(uid)
            continue
        delivered.append(uid)
    parts = []
    if delivered:
        parts.append(f"agent {agent.unique_id} sent {json.dumps(message)} to {delivered}")
    if skipped:
        parts.append(f"skipped {skipped} (no memory to receive messages)")
    if missing:
        parts.append(f"no other agent with id {missing}")
    return "; ".join(parts) if parts else "no listener given"


# Definitions built once, without registering anywhere: add them where you want them
# (``ToolManager.register``, ``tooluse.run(tools=...)``).
MESA_TOOLS: tuple[ToolDefinition, ...] = tuple(
    ToolDefinition.from_callable(fn) for fn in (move_one_step, teleport_to_location, speak_to)
)
