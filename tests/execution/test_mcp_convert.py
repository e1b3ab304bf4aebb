"""MCP <-> tooluse conversions and config checks (pure functions, no server)."""

from __future__ import annotations

import enum
import json
import subprocess
import sys
from typing import Literal, Optional

import mcp_types
import pytest

from tooluse.errors import ToolArgumentError
from tooluse.execution.mcp import MCPServerConfig, load_mcp_servers
from tooluse.execution.mcp.schema import check_advertised_schema, check_arguments
from tooluse.execution.mcp.sdk import tool_definition_from_mcp, tool_result_from_mcp
from tooluse.execution.mcp.served_tools import (
    call_tool_result_from_output,
    mcp_tool_from_definition,
    served_output_schema,
)
from tooluse.messages import ToolResult
from tooluse.tools.definition import ToolDefinition

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"],
}


def make_tool(**overrides):
    fields = dict(
        name="forecast",
        title="Forecast",
        description="Weather forecast.",
        input_schema=SCHEMA,
        output_schema={"type": "object", "properties": {"summary": {"type": "string"}}},
        annotations=mcp_types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    fields.update(overrides)
    return mcp_types.Tool(**fields)


def test_import_tooluse_does_not_import_mcp():
    code = "import sys, tooluse, tooluse.execution.mcp; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_tool_definition_keeps_schemas_annotations_and_server_name():
    definition = tool_definition_from_mcp(make_tool(), prefix="wx_")
    assert definition.name == "wx_forecast"
    assert definition.metadata["mcp_name"] == "forecast"
    assert definition.input_schema == SCHEMA
    assert definition.parameters_schema == SCHEMA
    assert definition.output_schema == {
        "type": "object",
        "properties": {"summary": {"type": "string"}},
    }
    assert definition.annotations == {
        "readOnlyHint": True,
        "openWorldHint": False,
        "title": "Forecast",
    }
    assert definition.description == "Weather forecast."


def test_dotted_mcp_name_is_sanitised_but_remembered():
    definition = tool_definition_from_mcp(make_tool(name="files.read"))
    assert definition.name == "files_read"
    assert definition.metadata["mcp_name"] == "files.read"


def test_result_text_and_structured_content():
    result = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text='{"summary": "sunny"}')],
        structured_content={"summary": "sunny"},
    )
    converted = tool_result_from_mcp("call_1", "forecast", result)
    assert converted == ToolResult(
        call_id="call_1",
        tool_name="forecast",
        output='{"summary": "sunny"}',
        structured={"summary": "sunny"},
        metadata={"source": "mcp"},
    )


def test_result_with_only_structured_content_renders_json():
    result = mcp_types.CallToolResult(content=[], structured_content={"n": 3})
    converted = tool_result_from_mcp("c", "t", result)
    assert converted.output == '{"n": 3}'
    assert converted.structured == {"n": 3}


def test_is_error_maps_to_failure_with_server_text():
    result = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="city not found")], is_error=True
    )
    converted = tool_result_from_mcp("c", "forecast", result)
    assert converted.is_error
    assert converted.output == "error: city not found"


def test_non_text_blocks_are_described():
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="inside"),
            ),
        ]
    )
    converted = tool_result_from_mcp("c", "t", result)
    assert converted.output == "[image: image/png, 5 bytes]\ninside"
    assert converted.metadata["content_types"] == ["image", "resource"]


def test_definition_to_mcp_tool_round_trip():
    definition = ToolDefinition(
        name="forecast",
        description="Weather forecast.",
        input_schema=SCHEMA,
        annotations={"readOnlyHint": True, "x-custom": 1},
    )
    tool = mcp_tool_from_definition(definition)
    assert tool.name == "forecast"
    assert tool.input_schema == SCHEMA
    assert tool.annotations.read_only_hint is True
    back = tool_definition_from_mcp(tool)
    assert back.input_schema == SCHEMA
    assert back.annotations == {"readOnlyHint": True}


def test_tool_result_to_call_tool_result():
    ok = call_tool_result_from_output(
        ToolResult(call_id="c", tool_name="t", output='{"a": 1}', structured={"a": 1})
    )
    assert ok.structured_content == {"a": 1}
    assert ok.content[0].text == '{"a": 1}'
    assert not ok.is_error
    scalar = call_tool_result_from_output(
        ToolResult(call_id="c", tool_name="t", output="5", structured=5)
    )
    assert scalar.structured_content is None  # only objects are allowed before 2026-07-28
    wrapped = call_tool_result_from_output(
        ToolResult(call_id="c", tool_name="t", output="5", structured=5), wrap=True
    )
    assert wrapped.structured_content == {"result": 5}
    failed = call_tool_result_from_output(ToolResult.failure("c", "t", "boom"))
    assert failed.is_error
    assert failed.content[0].text == "error: boom"


def test_served_output_schema_wraps_non_objects():
    scalar = ToolDefinition(name="n", output_schema={"type": "integer"})
    assert served_output_schema(scalar) == (
        {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]},
        True,
    )
    obj = ToolDefinition(name="o", output_schema={"type": "object"})
    assert served_output_schema(obj) == ({"type": "object"}, False)
    assert served_output_schema(ToolDefinition(name="x")) == (None, False)


def test_models_become_structured_content():
    from pydantic import BaseModel

    class Point(BaseModel):
        x: int
        y: int

    result = ToolResult.success("c", "t", Point(x=1, y=2))
    converted = call_tool_result_from_output(result)
    assert converted.structured_content == {"x": 1, "y": 2}


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"type": "object", "properties": {"x": {"type": "banana"}}}, "properties/x/type"),
        ({"type": "array"}, "root type must be 'object'"),
        (["not", "a", "schema"], "not an object"),
        ({"type": "object", "required": "x"}, "required"),
    ],
)
def test_invalid_advertised_schemas_are_explained(schema, fragment):
    problem = check_advertised_schema(schema)
    assert problem is not None
    assert fragment in problem


def test_valid_advertised_schema_passes():
    assert check_advertised_schema(SCHEMA) is None
    assert check_advertised_schema({"type": "object"}) is None


def test_check_arguments_rejects_and_accepts():
    definition = ToolDefinition(name="forecast", input_schema=SCHEMA)
    assert check_arguments(definition, {"city": "Oslo", "days": 2}) == {"city": "Oslo", "days": 2}
    with pytest.raises(ToolArgumentError) as info:
        check_arguments(definition, {"days": 0})
    assert "city" in info.value.model_message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of"),
        ({"command": "x", "url": "http://127.0.0.1:1/mcp"}, "exactly one of"),
        ({"url": "127.0.0.1:8000"}, "http(s) URL"),
        ({"command": "x", "args": "one string"}, "sequence of strings"),
        ({"command": "x", "timeout": 0}, "timeout must be positive"),
        ({"url": "http://127.0.0.1:1/mcp", "args": ("a",)}, "only to command="),
        ({"command": "x", "headers": {"A": "b"}}, "only to url="),
        ({"command": "x", "server": object()}, "exactly one of"),
    ],
)
def test_config_rejects_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        MCPServerConfig(**kwargs)


def test_config_labels_and_transport():
    stdio = MCPServerConfig(command="python", args=["-m", "mcp_server_time"])
    assert stdio.args == ("-m", "mcp_server_time")
    assert stdio.transport == "stdio"
    assert stdio.label == "python -m mcp_server_time"
    http = MCPServerConfig(url="http://127.0.0.1:9/mcp", name="remote")
    assert http.transport == "http"
    assert http.label == "remote"


def test_load_mcp_servers_from_mapping_text_and_file(tmp_path):
    data = {
        "mcpServers": {
            "time": {"command": "python", "args": ["-m", "mcp_server_time"], "env": {"TZ": "UTC"}},
            "docs": {"type": "http", "url": "http://127.0.0.1:8000/mcp", "timeout": 5},
        }
    }
    configs = load_mcp_servers(data, prefix_with_name=True, timeout=12)
    time_config, docs_config = configs
    assert (time_config.name, time_config.command, time_config.args) == (
        "time",
        "python",
        ("-m", "mcp_server_time"),
    )
    assert time_config.env == {"TZ": "UTC"} and time_config.timeout == 12
    assert time_config.tool_prefix == "time_"
    assert (docs_config.url, docs_config.timeout, docs_config.transport) == (
        "http://127.0.0.1:8000/mcp",
        5,
        "http",
    )
    assert load_mcp_servers(json.dumps(data)) == load_mcp_servers(data)
    path = tmp_path / "servers.json"
    path.write_text(json.dumps(data))
    assert load_mcp_servers(path)[0].tool_prefix == ""
    assert load_mcp_servers(str(path)) == load_mcp_servers(data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"mcpServers": {}}, "non-empty"),
        ([], "JSON object"),
        ({"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1/sse"}}}, "'old': SSE"),
        ({"mcpServers": {"both": {"command": "x", "url": "http://127.0.0.1/mcp"}}}, "'both'"),
        ({"mcpServers": {"bad": {"command": "x", "args": "not-a-list"}}}, "'bad'"),
    ],
)
def test_load_mcp_servers_rejects_bad_configs(data, message):
    with pytest.raises(ValueError, match=message):
        load_mcp_servers(data)


def test_tool_filters():
    config = MCPServerConfig(command="x", include_tools=["a", "b"], exclude_tools=["b"])
    assert [config.wants_tool(name) for name in ("a", "b", "c")] == [True, False, False]
    everything = MCPServerConfig(command="x", exclude_tools=("c",))
    assert [everything.wants_tool(name) for name in ("a", "c")] == [True, False]


def test_bare_input_schema_gets_object_type_and_properties():
    definition = tool_definition_from_mcp(make_tool(name="ping", input_schema={"type": "object"}))
    assert definition.input_schema == {"type": "object", "properties": {}}
    full = tool_definition_from_mcp(make_tool())
    assert full.input_schema == SCHEMA  # complete schemas pass through unchanged


def test_images_and_documents_pass_through_as_result_parts():
    import base64

    from tooluse.media import File, Image

    png = base64.b64encode(b"\x89PNG tiny").decode()
    pdf = base64.b64encode(b"%PDF-1.4 tiny").decode()
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(type="text", text="here it is"),
            mcp_types.ImageContent(type="image", data=png, mime_type="image/png"),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.BlobResourceContents(
                    uri="file:///report.pdf", blob=pdf, mime_type="application/pdf"
                ),
            ),
            mcp_types.ImageContent(type="image", data=png, mime_type="image/tiff"),
        ]
    )
    converted = tool_result_from_mcp("c", "t", result)
    text, image, document, unsupported = converted.parts
    assert text == "here it is"
    assert isinstance(image, Image) and image.data == b"\x89PNG tiny"
    assert isinstance(document, File) and document.name == "report.pdf"
    assert unsupported.startswith("[image: image/tiff")  # no provider takes it: described


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005050200a3c1ddd30000000049454e44ae426082"
)


def test_images_and_files_are_served_as_image_blocks_and_embedded_resources():
    from tooluse.media import File, Image

    image = Image(data=PNG, media_type="image/png")
    pdf = File(data=b"%PDF-1.4", media_type="application/pdf", name="a report.pdf")
    note = File(data=b"hello", media_type="text/plain", name="note.txt")
    served = call_tool_result_from_output(ToolResult.success("c", "t", ["look:", image, pdf, note]))
    kinds = [block.type for block in served.content]
    assert kinds == ["text", "image", "resource", "resource"]
    assert served.content[1].mime_type == "image/png" and served.content[1].data == image.base64
    assert served.content[2].resource.blob == pdf.base64
    assert str(served.content[2].resource.uri) == "tooluse://files/a%20report.pdf"
    assert served.content[3].resource.text == "hello"
    assert served.structured_content is None  # no output schema declared


def test_media_results_of_a_tool_with_an_output_schema_carry_structured_content():
    from tooluse.media import Image

    image = Image(data=PNG, media_type="image/png")
    alone = call_tool_result_from_output(ToolResult.success("c", "t", image), declares_output=True)
    assert alone.structured_content == {"data": image.base64, "media_type": "image/png"}
    listed = call_tool_result_from_output(
        ToolResult.success("c", "t", ["x", image]), wrap=True, declares_output=True
    )
    assert listed.structured_content == {"result": ["x", alone.structured_content]}
    failed = call_tool_result_from_output(ToolResult.failure("c", "t", "no"), declares_output=True)
    assert failed.structured_content is None and failed.content[0].text.endswith("no")


def test_elicited_forms_get_the_schemas_defaults():
    from tooluse.execution.mcp.server_answers import with_defaults

    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "default": "Ada"}, "age": {"type": "integer"}},
    }
    assert with_defaults(schema, {}) == {"name": "Ada"}
    assert with_defaults(schema, {"name": "Bo", "age": 3}) == {"name": "Bo", "age": 3}
    assert with_defaults({"type": "object"}, {"x": 1}) == {"x": 1}


class Sky(enum.Enum):
    CLEAR = "clear"
    GREY = "grey"


def a_prompt(a: Literal["x", "y"], b: Optional[Sky], c: str, d: int = 0) -> str:
    return ""


def test_argument_choices_come_from_literals_and_enums():
    from tooluse.execution.mcp.served_handlers import argument_choices

    assert argument_choices(a_prompt, "a") == ("x", "y")
    assert argument_choices(a_prompt, "b") == ("clear", "grey")
    assert argument_choices(a_prompt, "c") == ()
    assert argument_choices(a_prompt, "missing") == ()
