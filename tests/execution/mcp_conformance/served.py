"""What the official conformance suite's server scenarios call, written as tooluse tools,
resources and prompts and served with ``tooluse mcp serve served.py --http``.

``test_audio_content`` answers with a WAV file, which tooluse cannot send (its files are the
documents model providers take): the suite's audio scenario is an expected failure."""

from __future__ import annotations

import asyncio
import base64
import json

from tooluse.execution.mcp import mcp_prompt, mcp_resource, served_call
from tooluse.media import File, Image
from tooluse.tools.definition import ToolDefinition

# A 1x1 red PNG and a short silent WAV.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = (
    b"RIFF"
    + (36 + 8).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (8000).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (8).to_bytes(2, "little")
    + b"data"
    + (8).to_bytes(4, "little")
    + b"\x80" * 8
)


def test_simple_text() -> str:
    """Answers with a fixed text."""
    return "This is a simple text response for testing."


def test_image_content() -> Image:
    """Answers with an image."""
    return Image(data=PNG, media_type="image/png")


def test_audio_content() -> File:
    """Answers with a sound."""
    return File(data=WAV, media_type="audio/wav", name="silence.wav")


def test_embedded_resource() -> File:
    """Answers with a text document."""
    text = b"This is an embedded resource content."
    return File(data=text, media_type="text/plain", name="embedded-resource.txt")


def test_multiple_content_types() -> list:
    """Answers with a text, an image and a document."""
    document = json.dumps({"test": "data", "value": 123}).encode()
    return [
        "Multiple content types test:",
        Image(data=PNG, media_type="image/png"),
        File(data=document, media_type="text/plain", name="mixed-content-resource.json"),
    ]


def test_error_handling() -> str:
    """Always fails."""
    raise RuntimeError("This tool intentionally returns an error for testing")


async def test_tool_with_logging() -> str:
    """Logs three messages while it works."""
    call = served_call()
    await call.alog("Tool execution started")
    await asyncio.sleep(0.05)
    await call.alog("Tool processing data")
    await asyncio.sleep(0.05)
    await call.alog("Tool execution completed")
    return "Logged three messages."


async def test_tool_with_progress() -> str:
    """Reports its progress."""
    call = served_call()
    for done in (0, 50, 100):
        await call.aprogress(done, 100)
        await asyncio.sleep(0.05)
    return "Progress reported."


def test_sampling(prompt: str) -> str:
    """Asks the client's model.

    Args:
        prompt: The prompt to send to the LLM.
    """
    return "LLM response: " + served_call().sample(prompt, max_tokens=100)


def test_elicitation(message: str) -> str:
    """Asks the user for a name and an email address.

    Args:
        message: The message to show the user.
    """
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    answer = served_call().elicit(message, schema)
    return f"User response: action={answer.action}, content={dict(answer.content or {})}"


def test_elicitation_sep1034_defaults() -> str:
    """Asks the user with a default for every field."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {
                "type": "string",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "default": True},
        },
    }
    answer = served_call().elicit("Please review your details.", schema)
    return f"Elicitation completed: action={answer.action}, content={dict(answer.content or {})}"


def test_elicitation_sep1330_enums() -> str:
    """Asks the user to choose, in every enum form."""
    titled = [{"const": f"value{i}", "title": f"Choice {i}"} for i in (1, 2, 3)]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": titled},
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {"type": "array", "items": {"anyOf": titled}},
        },
    }
    answer = served_call().elicit("Please choose.", schema)
    return f"Elicitation completed: action={answer.action}, content={dict(answer.content or {})}"


def _schema_2020_12_tool(**arguments: object) -> str:
    return json.dumps(arguments)


JSON_SCHEMA_2020_12 = ToolDefinition(
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    },
    function=_schema_2020_12_tool,
)


@mcp_resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@mcp_resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource."""
    return PNG


@mcp_resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> dict:
    """Data for one id."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


@mcp_prompt
def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@mcp_prompt
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@mcp_prompt
def test_prompt_with_embedded_resource(resourceUri: str) -> list:  # noqa: N803 - the wire name
    """A prompt holding a document.

    Args:
        resourceUri: URI of the resource to embed.
    """
    text = b"Embedded resource content for testing."
    document = File(data=text, media_type="text/plain", name=resourceUri.rsplit("/", 1)[-1])
    return [document, "Please process the embedded resource above."]


@mcp_prompt
def test_prompt_with_image() -> list:
    """A prompt holding an image."""
    return [Image(data=PNG, media_type="image/png"), "Please analyze the image above."]


WATCHED = {"version": 1}


@mcp_resource("test://watched-resource", mime_type="application/json")
def watched_resource() -> dict:
    """A resource clients may subscribe to (``touch_watched_resource`` changes it)."""
    return dict(WATCHED)


async def touch_watched_resource() -> str:
    """Changes the watched resource and tells its subscribers."""
    WATCHED["version"] += 1
    told = await served_call().aresource_updated("test://watched-resource")
    return f"version {WATCHED['version']}, {told} subscriber(s) told"


TOOLS = [
    test_simple_text,
    test_image_content,
    test_audio_content,
    test_embedded_resource,
    test_multiple_content_types,
    test_error_handling,
    test_tool_with_logging,
    test_tool_with_progress,
    test_sampling,
    test_elicitation,
    test_elicitation_sep1034_defaults,
    test_elicitation_sep1330_enums,
    JSON_SCHEMA_2020_12,
    touch_watched_resource,
]
