"""The system prompts environments are played with (``tooluse eval env``) and trained on
(``tooluse train``): one place, so training text and evaluation prompts agree."""

from __future__ import annotations

__all__ = ["BFCL_PROMPT", "MATH_PROMPT", "OWN_INSTRUCTIONS", "default_system_prompt"]

MATH_PROMPT = "Use the tools to solve the problem, then call submit_answer with the answer."
BFCL_PROMPT = (
    "You can call the given functions to carry out the user's requests. Call them as needed; "
    "when a request is done, reply briefly without calling a function."
)


#: Environments whose tasks carry their own instructions (τ²-bench's policy, the nested-call
#: benchmarks' task text): the runner adds nothing to them.
OWN_INSTRUCTIONS = ("tau2:", "nestful", "complexfuncbench")


def default_system_prompt(environment: str) -> str:
    """The system prompt for the environment called ``environment`` (empty for those whose
    tasks bring their own instructions)."""
    if environment.startswith(OWN_INSTRUCTIONS):
        return ""
    return BFCL_PROMPT if environment.startswith("bfcl:") else MATH_PROMPT
