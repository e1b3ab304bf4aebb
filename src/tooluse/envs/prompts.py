"""The system prompts environments are played with (``tooluse eval env``) and trained on
(``tooluse train``): one place, so training text and evaluation prompts agree."""

from __future__ import annotations

__all__ = [
    "BFCL_PROMPT",
    "MATH_PROMPT",
    "MATH_TEXT_PROMPT",
    "OWN_INSTRUCTIONS",
    "default_system_prompt",
]

MATH_PROMPT = "Use the tools to solve the problem, then call submit_answer with the answer."
#: The same task answered in a text reply (training data whose answer is said, not submitted).
MATH_TEXT_PROMPT = "Use the tools to solve the problem, then reply with the answer."
BFCL_PROMPT = (
    "You can call the given functions to carry out the user's requests. Call them as needed; "
    "when a request is done, reply briefly without calling a function."
)


#: Environments whose tasks carry their own instructions (τ²-bench's policy, the nested-call
#: benchmarks' task text): the runner adds nothing to them.
OWN_INSTRUCTIONS = ("tau2:", "nestful", "complexfuncbench")
#: BFCL environments played over several turns; its single-turn categories get no system
#: prompt, as ``tooluse eval bfcl`` asks them.
_BFCL_CONVERSATIONS = ("bfcl:multi_turn", "bfcl:memory", "bfcl:web_search")


def default_system_prompt(environment: str) -> str:
    """The system prompt for the environment called ``environment`` (empty for those whose
    tasks bring their own instructions, and for BFCL's single-turn categories)."""
    if environment.startswith(OWN_INSTRUCTIONS):
        return ""
    if environment.startswith(_BFCL_CONVERSATIONS):
        return BFCL_PROMPT
    return "" if environment.startswith("bfcl:") else MATH_PROMPT
