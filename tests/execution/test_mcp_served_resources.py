"""``tooluse mcp serve FILE`` serves the file's resources and prompts too: declared with
``@mcp_resource`` / ``@mcp_prompt``, listed, read and got by a real client over stdio."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tooluse import Image
from tooluse.errors import MCPError, ToolDefinitionError
from tooluse.execution.mcp import (
    MCPServerConfig,
    MCPToolExecutor,
    MCPToolServer,
    load_module_offer,
    mcp_prompt,
    mcp_resource,
)

pytestmark = pytest.mark.slow

LIBRARY = str(Path(__file__).parent / "mcp_servers" / "served_library.py")
SERVE = MCPServerConfig(
    command=sys.executable,
    args=("-c", "from tooluse.cli.app import main; main()", "mcp", "serve", LIBRARY),
    name="library",
    # the server is this checkout's tooluse (the SDK starts servers in a small environment)
    env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
)


async def test_the_served_file_lists_its_tools_resources_templates_and_prompts():
    async with MCPToolExecutor(SERVE) as mcp:
        tools = [tool.name for tool in await mcp.list_tools()]
        resources = {r.uri: r for r in await mcp.list_resources()}
        templates = await mcp.list_resource_templates()
        prompts = {p.name: p for p in await mcp.list_prompts()}
    assert tools == ["count_words"]  # resource and prompt functions are not tools
    assert set(resources) == {
        "notes://today",
        "data://settings",
        "images://pixel",
        "notes://broken",
    }
    assert resources["notes://today"].description == "Today's notes."
    assert resources["notes://today"].mime_type == "text/plain"
    assert [(t.uri_template, t.name) for t in templates] == [("notes://day/{day}", "notes_of")]
    assert prompts["review"].arguments == ("code", "language")
    assert prompts["review"].required == ("code",)
    assert prompts["review"].description == "Review a piece of code."
    assert prompts["greeting"].description == "Say hello."


async def test_resources_are_read_as_text_json_images_and_from_templates():
    async with MCPToolExecutor(SERVE) as mcp:
        text = await mcp.read_resource("notes://today")
        templated = await mcp.read_resource("notes://day/monday")
        settings = await mcp.read_resource("data://settings")
        [image] = await mcp.read_resource("images://pixel")
    assert text == ("Buy milk.",)
    assert templated == ("Nothing planned on monday.",)
    assert settings == ('{"theme": "dark", "size": 12}',)
    assert isinstance(image, Image) and image.media_type == "image/png"
    assert image.data.startswith(b"\x89PNG")


async def test_prompts_are_filled_in_as_messages():
    async with MCPToolExecutor(SERVE) as mcp:
        review = await mcp.get_prompt("review", {"code": "x = 1", "language": "rust"})
        default = await mcp.get_prompt("review", {"code": "y = 2"})
        greeting = await mcp.get_prompt("greeting", {"name": "Ada"})
    assert [(m.role, m.content) for m in review] == [
        ("user", "Review this rust code:\nx = 1"),
        ("assistant", "Looking at it now."),
    ]
    assert default[0].content == "Review this python code:\ny = 2"
    assert [(m.role, m.content) for m in greeting] == [("user", "Say hello to Ada.")]


async def test_unknown_names_missing_arguments_and_failures_are_errors():
    async with MCPToolExecutor(SERVE) as mcp:
        with pytest.raises(MCPError, match="Unknown resource: notes://nowhere"):
            await mcp.read_resource("notes://nowhere")
        with pytest.raises(MCPError, match="reading notes://broken failed: OSError: disk"):
            await mcp.read_resource("notes://broken")
        with pytest.raises(MCPError, match="missing code"):
            await mcp.get_prompt("review", {})
        with pytest.raises(MCPError, match="unknown colour"):
            await mcp.get_prompt("greeting", {"name": "Ada", "colour": "red"})
        with pytest.raises(MCPError, match="Unknown prompt: nope"):
            await mcp.get_prompt("nope")
        assert (await mcp.read_resource("notes://today")) == ("Buy milk.",)


async def test_a_server_of_resources_only_in_process():
    @mcp_resource("docs://manual", mime_type="application/pdf")
    def manual() -> bytes:
        """The manual."""
        return b"%PDF-1.4 tiny"

    @mcp_resource("config://raw")
    def raw() -> bytes:
        """Raw settings."""
        return b"\x00\x01"

    server = MCPToolServer(resources=[manual, raw], name="only-resources")
    async with MCPToolExecutor(MCPServerConfig(server=server.lowlevel_server())) as mcp:
        [document] = await mcp.read_resource("docs://manual")
        [described] = await mcp.read_resource("config://raw")
        listed = await mcp.list_resources()
    assert document.data == b"%PDF-1.4 tiny" and document.media_type == "application/pdf"
    assert described == "[resource: config://raw, application/octet-stream, 2 bytes]"
    assert [r.uri for r in listed] == ["docs://manual", "config://raw"]


def test_declarations_are_checked():
    with pytest.raises(ToolDefinitionError, match="needs a URI"):
        mcp_resource("today")
    with pytest.raises(ToolDefinitionError, match=r"variables \['day'\] but notes\(\) takes"):

        @mcp_resource("notes://{day}")
        def notes(date: str) -> str:
            return date

    with pytest.raises(ToolDefinitionError, match="cannot take"):

        @mcp_prompt
        def loose(*parts: str) -> str:
            return ""

    with pytest.raises(ToolDefinitionError, match="not a served resource"):
        MCPToolServer(resources=[len])
    with pytest.raises(ToolDefinitionError, match="at least one tool, resource or prompt"):
        MCPToolServer()


def test_a_module_with_lists_and_one_without_anything(tmp_path):
    listed = tmp_path / "listed.py"
    listed.write_text(
        "from tooluse.execution.mcp import mcp_resource, mcp_prompt\n"
        "@mcp_resource('a://one')\ndef one():\n    return '1'\n"
        "@mcp_resource('a://two')\ndef two():\n    return '2'\n"
        "RESOURCES = [one]\n"
    )
    offer = load_module_offer(str(listed))
    assert [r.uri for r in offer.resources] == ["a://one"]
    assert offer.tools == [] and offer.prompts == ()
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    with pytest.raises(ToolDefinitionError, match="defines no tools, resources or prompts"):
        load_module_offer(str(empty))
