"""Images and files in tool results: a tool returns them, the loop keeps them, and each provider
adapter sends them in its own form, checked against the official SDKs' request types (OpenAI,
Anthropic; Bedrock through botocore's Converse model) and Gemini's documented parts. A model
without vision gets the text placeholders; oversized or unknown media are refused."""

from __future__ import annotations

import base64
import io
import logging

import pytest
from pydantic import TypeAdapter

from tooluse import (
    ChatMessage,
    File,
    Image,
    MediaError,
    ModelCapabilities,
    OpenAIBackend,
    ScriptedBackend,
    ToolCall,
    ToolResult,
    run,
)
from tooluse.loop.run_state import RunState
from tooluse.providers import RetryPolicy, anthropic, bedrock, gemini, openai_chat, openai_responses

from .conftest import Reply

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def screenshot(url: str) -> list:
    """Take a screenshot of a page.

    Args:
        url: The page.
    """
    return [f"the page {url}", Image(data=PNG, media_type="image/png")]


def history() -> list[ChatMessage]:
    call = ToolCall(id="call_1", name="screenshot", arguments={"url": "x"})
    result = ToolResult.success("call_1", "screenshot", screenshot("x"))
    return [
        ChatMessage.user("What does the page show?"),
        ChatMessage.assistant("", [call]),
        ChatMessage.tool_result(result),
    ]


def test_a_tool_returning_an_image_gives_a_result_with_parts_and_a_text_placeholder():
    backend = ScriptedBackend([[ToolCall(id="s", name="screenshot", arguments={"url": "x"})], "ok"])
    result = run(backend, "look", tools=[screenshot])
    answer = result.messages[-2].result
    assert answer.parts[0] == "the page x" and answer.media[0].data == PNG
    assert answer.output == "the page x\n[image: image/png, 0 KB]"
    # the model's next request carries the result with its image
    sent = backend.requests[1].messages[-1].result
    assert sent.media and sent.media[0].media_type == "image/png"


def test_openai_chat_sends_the_text_in_the_tool_message_and_the_image_right_after():
    from openai.types.chat import ChatCompletionMessageParam

    body = openai_chat.encode_request(history(), model="gpt-4o")
    tool_message, images = body["messages"][-2], body["messages"][-1]
    assert tool_message["role"] == "tool" and "[image: image/png" in tool_message["content"]
    assert images["role"] == "user"
    assert images["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    adapter = TypeAdapter(ChatCompletionMessageParam)
    for message in body["messages"]:
        adapter.validate_python(message, strict=False)


def test_openai_responses_sends_image_input_in_the_function_call_output():
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    body = openai_responses.encode_request(history(), model="gpt-4o")
    output = next(i for i in body["input"] if i.get("type") == "function_call_output")
    TypeAdapter(FunctionCallOutput).validate_python(output)
    assert [p["type"] for p in output["output"]] == ["input_text", "input_image"]
    assert output["output"][1]["image_url"] == Image(data=PNG).data_url


def test_anthropic_sends_image_blocks_inside_the_tool_result():
    from anthropic.types import MessageParam

    body = anthropic.encode_request(history(), model="claude-sonnet-4-5")
    results = body["messages"][-1]
    TypeAdapter(MessageParam).validate_python(results)
    block = results["content"][0]
    assert block["type"] == "tool_result"
    assert [b["type"] for b in block["content"]] == ["text", "image"]
    assert base64.b64decode(block["content"][1]["source"]["data"]) == PNG


def test_gemini_sends_inline_data_after_the_function_response():
    body = gemini.encode_request(history(), model="gemini-2.5-flash")
    parts = body["contents"][-1]["parts"]
    assert "functionResponse" in parts[0]
    assert parts[1]["inlineData"]["mimeType"] == "image/png"
    assert base64.b64decode(parts[1]["inlineData"]["data"]) == PNG


def test_bedrock_sends_image_and_document_blocks_valid_for_converse():
    from botocore.session import get_session
    from botocore.validate import ParamValidator

    messages = history()
    pdf = File(data=b"%PDF-1.4 tiny", media_type="application/pdf", name="report.pdf")
    result = ToolResult.success("call_1", "screenshot", ["see the report", pdf, Image(data=PNG)])
    messages[-1] = ChatMessage.tool_result(result)
    body = bedrock.encode_request(messages, model="anthropic.claude-3-5-sonnet-20241022-v2:0")
    shape = get_session().get_service_model("bedrock-runtime").operation_model("Converse")
    report = ParamValidator().validate({"modelId": "m", **body}, shape.input_shape)
    assert not report.has_errors(), report.generate_report()
    content = body["messages"][-1]["content"][0]["toolResult"]["content"]
    assert [next(iter(block)) for block in content] == ["text", "document", "image"]


def test_a_model_without_vision_gets_the_placeholders_and_a_warning(server, caplog):
    server.replies.append(
        Reply(json={"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]})
    )
    text_only = ModelCapabilities(supports_vision=False)
    backend = OpenAIBackend(
        "m", base_url=server.url, api_key="k", retry=RetryPolicy(max_retries=0),
        capabilities=text_only,
    )  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="tooluse.providers"):
        backend.generate(history())
    sent = server.requests[0].body["messages"]
    assert "[image: image/png" in sent[-1]["content"] and sent[-1]["role"] == "tool"
    assert "has no vision" in caplog.text


def test_oversized_and_unknown_media_are_refused_with_the_reason():
    with pytest.raises(MediaError, match="over the 20 MB limit"):
        Image(data=b"\0" * (50 * 1024 * 1024), media_type="image/png")
    with pytest.raises(MediaError, match="image/tiff"):
        Image(data=PNG, media_type="image/tiff")

    def huge() -> Image:
        """Return a huge image."""
        return Image(data=b"\0" * (21 * 1024 * 1024))

    backend = ScriptedBackend([[ToolCall(id="h", name="huge", arguments={})], "ok"])
    result = run(backend, "q", tools=[huge])
    refused = result.messages[-2].result
    assert refused.is_error and "over the 20 MB limit" in refused.output


def test_images_from_pil_and_through_a_saved_run_state():
    from PIL import Image as PILImage

    picture = Image.from_pil(PILImage.new("RGB", (4, 4), "red"))
    assert picture.media_type == "image/png" and picture.data.startswith(b"\x89PNG")
    PILImage.open(io.BytesIO(picture.data)).verify()
    state = RunState(messages=tuple(history()))
    again = RunState.from_json(state.to_json()).messages[-1].result
    assert again.parts[0] == "the page x" and again.media[0].data == PNG
