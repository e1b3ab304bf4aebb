"""Code mode: the model writes one Python program that calls the tools.

::

    tooluse.run(backend, "Which of our 20 stores sold more than 1,000 units?",
                tools=[list_stores, store_sales], code_mode=True)

The model gets one tool (``run_python``) whose description shows the tools as typed
``async def`` stubs; its program runs in tooluse's sandbox (:mod:`tooluse.execution.sandbox`)
and each tool call the program makes is a request back to the host, which runs it there
(secrets and connections never enter the sandbox) with the same validation, hooks, approval,
tracing and journaling as a direct call. What the program prints, its return value and the
answer it gives with ``final_answer(...)`` come back to the model.

- :class:`CodeMode`: the settings (limits, the tool's name, a sandbox kept ready).
- :class:`CodeModeExecutor`: the program tool over another executor's tools.
- :class:`ProgramJournal`: the calls of a program, by which a paused or crashed program runs
  again without repeating one (:mod:`~tooluse.execution.code_mode.journal`).
- :func:`tool_stubs`: the tools as Python stubs.
"""

from tooluse.execution.code_mode.executor import CodeModeExecutor, program_tool
from tooluse.execution.code_mode.host import (
    ProgramRun,
    check_program,
    done_calls,
    final_answer_of,
    new_calls,
    program_calls,
    program_journal,
    suspended_journal,
    without_program_data,
)
from tooluse.execution.code_mode.journal import InnerCall, ProgramJournal, Resolution
from tooluse.execution.code_mode.settings import CodeMode, callable_directly, callable_from_code
from tooluse.execution.code_mode.stubs import ToolStub, tool_stubs

__all__ = [
    "CodeMode",
    "CodeModeExecutor",
    "InnerCall",
    "ProgramJournal",
    "ProgramRun",
    "Resolution",
    "ToolStub",
    "callable_directly",
    "callable_from_code",
    "check_program",
    "done_calls",
    "final_answer_of",
    "new_calls",
    "program_calls",
    "program_journal",
    "program_tool",
    "suspended_journal",
    "tool_stubs",
    "without_program_data",
]
