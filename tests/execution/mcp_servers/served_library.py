"""A module for ``tooluse mcp serve`` with tools, resources and prompts (the decorators)."""

from __future__ import annotations

from tooluse import Image
from tooluse.execution.mcp import mcp_prompt, mcp_resource
from tooluse.messages import ChatMessage

# the smallest valid PNG (1x1, transparent)
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def count_words(text: str) -> int:
    """Count the words of a text.

    Args:
        text: The text.
    """
    return len(text.split())


@mcp_resource("notes://today", mime_type="text/plain")
def today() -> str:
    """Today's notes."""
    return "Buy milk."


@mcp_resource("notes://day/{day}")
async def notes_of(day: str) -> str:
    """The notes of one day."""
    return f"Nothing planned on {day}."


@mcp_resource("data://settings")
def settings() -> dict:
    """The settings, as JSON."""
    return {"theme": "dark", "size": 12}


@mcp_resource("images://pixel")
def pixel() -> Image:
    """A one-pixel image."""
    return Image(data=PIXEL, media_type="image/png")


@mcp_resource("notes://broken")
def broken() -> str:
    """Always fails."""
    raise OSError("disk unplugged")


@mcp_prompt
def review(code: str, language: str = "python") -> list:
    """Review a piece of code.

    Args:
        code: The code to review.
        language: The language it is written in.
    """
    return [
        ChatMessage.user(f"Review this {language} code:\n{code}"),
        ChatMessage(role="assistant", content="Looking at it now."),
    ]


@mcp_prompt(name="greeting", description="Say hello.")
def hello(name: str) -> str:
    return f"Say hello to {name}."
