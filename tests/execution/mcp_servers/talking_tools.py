"""Tools that talk to the MCP client calling them (``served_call``), served by
``tooluse mcp serve`` in the tests; and a resource one of them changes."""

from __future__ import annotations

from typing import Literal

from tooluse.execution.mcp import mcp_prompt, mcp_resource, served_call
from tooluse.media import Image

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005050200a3c1ddd30000000049454e44ae426082"
)
NOTES = {"text": "nothing yet"}


async def plan_trip(city: str) -> str:
    """Plans a trip, asking the user and the client's model along the way.

    Args:
        city: Where to.
    """
    call = served_call()
    await call.alog(f"planning {city}", "info")
    await call.alog("a detail nobody asked for", "debug")
    await call.aprogress(1, 2, "asking the user")
    answer = await call.aelicit(
        f"How many days in {city}?",
        {"type": "object", "properties": {"days": {"type": "integer", "default": 3}}},
    )
    await call.aprogress(2, 2, "asking the model")
    idea = await call.asample(f"One thing to do in {city}?", max_tokens=20)
    return f"{answer.action} {dict(answer.content or {})} / {idea}"


def confirm(question: str) -> str:
    """Asks the user a yes/no question (a blocking tool, run in a worker thread).

    Args:
        question: The question.
    """
    call = served_call()
    call.log("asking for a confirmation", "warning")
    answer = call.elicit(question, {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    return f"{answer.action}: {dict(answer.content or {})}"


def outside_mcp() -> str:
    """Says whether it runs for an MCP client."""
    return "served" if served_call() is not None else "not served"


async def write_notes(text: str) -> str:
    """Replaces today's notes and tells the clients watching them.

    Args:
        text: The new notes.
    """
    NOTES["text"] = text
    told = await served_call().aresource_updated("notes://today")
    return f"{told} told"


def snapshot() -> list:
    """A text and an image."""
    return ["the view:", Image(data=PNG, media_type="image/png")]


@mcp_resource("notes://today", mime_type="text/plain")
def notes() -> str:
    """Today's notes."""
    return NOTES["text"]


@mcp_resource("notes://day/{weekday}")
def notes_of(weekday: Literal["monday", "tuesday", "wednesday"]) -> str:
    """The notes of one day."""
    return f"nothing on {weekday}"


@mcp_prompt
def review(code: str, language: Literal["python", "perl", "prolog"] = "python") -> list:
    """Review some code, with a picture of it.

    Args:
        code: The code.
        language: Its language.
    """
    return [f"Review this {language}: {code}", Image(data=PNG, media_type="image/png")]
