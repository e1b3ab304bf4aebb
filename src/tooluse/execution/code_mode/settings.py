"""Code mode's settings (:class:`CodeMode`) and who may call a tool (``ToolDefinition.callers``)."""

from __future__ import annotations

from dataclasses import dataclass

from tooluse.execution.sandbox.limits import SandboxLimits
from tooluse.tools.definition import ToolDefinition, check_tool_name

__all__ = ["CodeMode", "callable_directly", "callable_from_code"]


@dataclass(frozen=True, kw_only=True)
class CodeMode:
    """Code mode: the model writes one Python program that calls the tools.

    The model gets one tool, ``tool_name``, whose description shows the tools as typed
    ``async def`` stubs; the program runs in a fresh sandboxed interpreter (see
    :mod:`tooluse.execution.sandbox`) and each tool call it makes is a request back to this
    process, which validates, approves, runs, traces and records it like a direct call.

    - ``timeout`` (wall-clock seconds), ``memory_mb``, ``max_output_chars`` (what the model
      reads of stdout and of stderr, each) and ``max_calls`` (tool calls per program) bound
      one program; ``max_program_chars`` bounds its source.
    - ``final_answer``: the program may call ``final_answer(text)`` to end the run with that
      text as the answer (no further model turn).
    - ``prestart``: keep one interpreter started ahead (isolated, the runtime loaded), so a
      program does not wait for a sandbox to start.
    - ``isolate=False`` runs without namespaces (limits only; see the sandbox's documentation).
    - ``provider=True``: the provider runs the programs (its own code mode: Claude's
      programmatic tool calling, OpenAI Responses'), for a backend that
      ``supports_code_execution``; each call a program makes comes back to the loop as a call
      whose ``caller`` names the program, and runs as any call does (the limits above are the
      provider's then).
    """

    tool_name: str = "run_python"
    timeout: float = 30.0
    memory_mb: int | None = 512
    max_output_chars: int = 8_000
    max_calls: int = 200
    max_program_chars: int = 100_000
    final_answer: bool = True
    prestart: bool = True
    isolate: bool = True
    provider: bool = False

    def __post_init__(self) -> None:
        check_tool_name(self.tool_name)
        if self.max_calls < 1:
            raise ValueError("max_calls must be at least 1")
        if self.max_program_chars < 1:
            raise ValueError("max_program_chars must be at least 1")
        self.limits()  # the sandbox checks its own limits

    def limits(self) -> SandboxLimits:
        """The sandbox limits of one program."""
        return SandboxLimits(
            timeout=self.timeout,
            cpu_seconds=max(1, int(self.timeout) + 1),
            memory_mb=self.memory_mb,
            max_output_chars=self.max_output_chars,
            isolate=self.isolate,
        )


def callable_from_code(definition: ToolDefinition) -> bool:
    """Whether programs may call ``definition`` (terminal tools are direct unless told)."""
    return "code" in definition.code_mode_callers()


def callable_directly(definition: ToolDefinition) -> bool:
    """Whether the model may call ``definition`` itself in code mode."""
    return "direct" in definition.code_mode_callers()
