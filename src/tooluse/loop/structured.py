"""Structured output through a forced tool call: ``tooluse.extract(backend, text, Model)``.

``Model`` is a pydantic model class (the result is an instance) or a function used only for its
signature and docstring, like the Qwen3 walkthrough's ``Movie`` (the result is a dict of the
validated arguments; the function is never called). The record is offered as a terminal tool
and forced with ``tool_choice``; arguments that fail validation go back to the model with the
problems listed, for at most ``max_retries`` more tries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

from tooluse.errors import ExtractionError
from tooluse.loop.core import LoopSetup, StopReason
from tooluse.loop.drivers import (
    Prompt,
    ResultCollector,
    RunResult,
    build_setup,
    drive_async,
    drive_sync,
    initial_history,
)
from tooluse.messages import ChatMessage
from tooluse.providers.base import Backend, SamplingParams
from tooluse.tools.definition import ToolDefinition

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ExtractOptions", "aextract", "extract", "record_tool"]

DEFAULT_INSTRUCTIONS = (
    "Extract the requested information from the text below by calling the tool {name}. "
    "Use only facts stated in the text."
)


def _is_model_class(target: Any) -> bool:
    return isinstance(target, type) and hasattr(target, "model_validate")


def record_tool(target: Any, *, name: str | None = None) -> ToolDefinition:
    """The terminal tool describing the record ``target`` (pydantic model class or function)."""
    if isinstance(target, ToolDefinition):
        import dataclasses

        return dataclasses.replace(target, is_terminal=True)
    if _is_model_class(target):
        return ToolDefinition.from_model(target, name=name, is_terminal=True)  # type: ignore[attr-defined]
    if callable(target):
        return ToolDefinition.from_callable(target, name=name, is_terminal=True)  # type: ignore[attr-defined]
    raise TypeError(
        f"extract() needs a pydantic model class or a function, not {type(target).__name__}"
    )


def _prompt_for(text_or_messages: Prompt, instructions: str) -> Prompt:
    if isinstance(text_or_messages, str):
        return ChatMessage.user(f"{instructions}\n\n# Text\n{text_or_messages}")
    return text_or_messages


def _record_from(target: Any, definition: ToolDefinition, result: RunResult) -> Any:
    if result.stop_reason is StopReason.TERMINAL_TOOL and isinstance(result.output, dict):
        # The validated arguments are keyed as the schema names them, which the model accepts.
        return target.model_validate(result.output) if _is_model_class(target) else result.output
    attempts = sum(1 for t in result.trail if t.name == definition.name)
    errors = [t.output for t in result.trail if t.name == definition.name and t.is_error]
    last_error = errors[-1] if errors else ""
    if attempts == 0:
        problem = f"the model never called {definition.name!r}"
        if result.final_text:
            problem += f" (it answered: {result.final_text[:200]!r})"
    else:
        problem = (
            f"no valid {definition.name!r} after {attempts} attempts; last error: {last_error}"
        )
    raise ExtractionError(
        f"extraction failed: {problem}", attempts=attempts, last_error=last_error, result=result
    )


class ExtractOptions(TypedDict, total=False):
    """The options of :func:`extract` and :func:`aextract` (see :func:`extract`)."""

    name: str | None
    instructions: str | None
    max_retries: int
    system_prompt: str | None
    params: SamplingParams | None
    tool_call_parser: Any
    validate: Callable[[dict[str, Any]], Any] | None


def _prepare(  # noqa: PLR0913 -- ExtractOptions spelled out: an unknown one is a TypeError
    backend: Backend,
    text_or_messages: Prompt,
    target: Any,
    *,
    name: str | None = None,
    instructions: str | None = None,
    max_retries: int = 2,
    system_prompt: str | None = None,
    params: SamplingParams | None = None,
    tool_call_parser: Any = None,
    validate: Callable[[dict[str, Any]], Any] | None = None,
) -> tuple[ToolDefinition, LoopSetup, list[ChatMessage]]:
    """The record tool, the loop setup forcing it, and the starting history."""
    if max_retries < 0:
        raise ValueError("max_retries must be >= 0")
    definition = record_tool(target, name=name)
    forced = definition.name
    capabilities = getattr(backend, "capabilities", None)
    if capabilities is not None and not capabilities.supports_tool_choice_required:
        forced = "auto"  # the prompt still asks for the call; the retries catch a plain answer
    setup = build_setup(
        backend,
        tools=[definition],
        tool_choice=forced,
        max_tool_iters=max_retries,
        tool_call_parser=tool_call_parser,
        params=params,
        tool_timeout=None,
        max_output_chars=1_000_000,
        max_identical_calls=max_retries + 1,
        terminal_validators={definition.name: validate} if validate is not None else None,
    )
    prompt = _prompt_for(
        text_or_messages, (instructions or DEFAULT_INSTRUCTIONS).format(name=definition.name)
    )
    return definition, setup, initial_history(prompt, system_prompt)


def extract(
    backend: Backend, text_or_messages: Prompt, model: Any, **options: Unpack[ExtractOptions]
) -> Any:
    """Extract one record from text (or a conversation) with a forced tool call.

    - ``model``: a pydantic model class (returns an instance) or a function used for its
      signature only (returns a dict of validated arguments).
    - ``text_or_messages``: text is wrapped in ``instructions`` (which may use ``{name}``);
      messages are sent as they are.

    Options (:class:`ExtractOptions`, defaults in brackets): ``name`` of the tool [the
    model's], ``instructions`` [:data:`DEFAULT_INSTRUCTIONS`], ``max_retries``: how many more
    tries the model gets after invalid arguments [2], ``system_prompt``, ``params``,
    ``tool_call_parser`` (as in :func:`tooluse.run`), ``validate``: an extra check of the
    validated arguments; raise to reject them (the message goes back to the model).

    Raises :class:`ExtractionError` (with the run attached) when no valid record came back.
    """
    definition, setup, history = _prepare(backend, text_or_messages, model, **options)
    result = ResultCollector().drain(drive_sync(backend, setup, history))
    return _record_from(model, definition, result)


async def aextract(
    backend: Backend, text_or_messages: Prompt, model: Any, **options: Unpack[ExtractOptions]
) -> Any:
    """The async twin of :func:`extract` (same options)."""
    definition, setup, history = _prepare(backend, text_or_messages, model, **options)
    result = await ResultCollector().adrain(drive_async(backend, setup, history))
    return _record_from(model, definition, result)
