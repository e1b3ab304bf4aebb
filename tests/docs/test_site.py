"""The documentation site: it builds with ``--strict``, covers every public package, the README
is short and its links land, a newcomer reaches a working MCP loop and a BFCL run by links, and
in a real browser a search finds its page and the charts render."""

from __future__ import annotations

import functools
import http.server
import importlib
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify
from tests.docs.doc_blocks import ROOT, read_blocks, shell_commands

# one worker builds the site once for all of them (pytest-xdist, --dist loadgroup)
pytestmark = pytest.mark.xdist_group("docs-site")

DOCS = ROOT / "docs"
README = ROOT / "README.md"
ARTEFACTS = ROOT / "build" / "test-artifacts" / "docs-site"
_LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `make docs` builds it (strict: any warning fails), in a scratch folder."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    assert "WARNING" not in done.stderr, done.stderr[-5000:]
    return out


# -- structure, without a build -------------------------------------------------------------------


def _public_packages() -> set[str]:
    """Every package of tooluse with an ``__all__`` (the CLI is documented by its reference)."""
    import tooluse

    found = {"tooluse"}
    for info in pkgutil.walk_packages(tooluse.__path__, "tooluse."):
        if not info.ispkg or info.name.startswith("tooluse.cli"):
            continue
        module = importlib.import_module(info.name)
        if getattr(module, "__all__", None):
            found.add(info.name)
    return found


def test_every_public_package_has_an_api_page_in_the_nav() -> None:
    pages = {
        match[1]: path.name
        for path in (DOCS / "api").glob("*.md")
        if (match := re.match(r"::: ([\w.]+)", path.read_text(encoding="utf-8")))
    }
    assert set(pages) == _public_packages()
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name, page in pages.items():
        assert f"{name}: api/{page}" in nav, name


def test_the_readme_is_short_and_keeps_its_set_up_and_quick_starts() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    blocks = read_blocks(README)
    kinds = [b.kind for b in blocks]
    assert kinds.count("run") >= 1 and kinds.count("needs-key") >= 1
    assert ["make", "demo"] in shell_commands(blocks[0].code)
    assert "<!-- headline:begin -->" in text and "MIT" in text


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return {slugify(h, "-") for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}


def _links(page: Path) -> list[tuple[Path, str]]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    out = []
    for target in _LINK.findall(text):
        if re.match(r"\w+://", target) or target.startswith("#"):
            continue
        path, _, anchor = target.partition("#")
        out.append(((page.parent / path).resolve(), anchor))
    return out


def test_every_readme_link_lands_on_a_file_and_heading() -> None:
    links = _links(README)
    assert len(links) >= 20
    for path, anchor in links:
        assert path.exists(), path
        if anchor:
            assert anchor in _anchors(path), f"{path.name}#{anchor}"


def _reachable(start: Path) -> dict[Path, int]:
    """Pages reachable from ``start`` by links, with the number of clicks to each."""
    depth = {start: 0}
    queue = [start]
    while queue:
        page = queue.pop(0)
        for path, _ in _links(page):
            if path.suffix == ".md" and path.is_file() and path not in depth:
                depth[path] = depth[page] + 1
                queue.append(path)
    return depth


def test_a_newcomer_reaches_a_working_mcp_loop_and_a_bfcl_run_from_the_readme() -> None:
    reachable = _reachable(README)
    mcp, evaluation = DOCS / "guides" / "mcp.md", DOCS / "guides" / "evaluation.md"
    assert reachable[mcp] <= 2 and reachable[evaluation] <= 2
    # the first example of each is one the suite runs for real (not parse-only, no key)
    loop = next(b for b in read_blocks(mcp) if b.kind == "run")
    assert "SyncMCPToolExecutor" in loop.code and "tooluse.run(" in loop.code
    first_run = next(b for b in read_blocks(evaluation) if b.kind == "shell")
    assert first_run.directive("parse-only") is None
    assert shell_commands(first_run.code)[0][:3] == ["tooluse", "eval", "bfcl"]


# -- the built site -------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_site_builds_strictly_with_api_charts_and_changelog(site: Path) -> None:
    api = (site / "api" / "tooluse" / "index.html").read_text(encoding="utf-8")
    for name in ("tooluse.run", "tooluse.ToolDefinition", "tooluse.load_model"):
        assert f'id="{name}"' in api, name
    charts = sorted(p.name for p in (site / "benchmarks" / "charts").glob("*.svg"))
    assert {"training.svg", "bfcl-categories.svg", "loop-overhead.svg"} <= set(charts)
    changelog = (site / "changelog" / "index.html").read_text(encoding="utf-8")
    assert "Unreleased" in changelog
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "get_weather" in home  # the README's quick start, included


@pytest.mark.slow
def test_stale_figures_fail_the_strict_build(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for name in ("mkdocs.yml", "README.md", "CHANGELOG.md", "ARCHITECTURE.md"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes((ROOT / name).read_bytes())
    shutil.copytree(DOCS, copy / "docs")
    shutil.copytree(ROOT / "benchmarks", copy / "benchmarks")
    page = copy / "docs" / "benchmarks" / "tool-search.md"
    text = page.read_text(encoding="utf-8")
    block = text[text.index("<!-- tool-search-figures:begin -->") :]
    edited = block.replace("prompt tokens", "prompt tokens (edited)", 1)
    assert edited != block
    page.write_text(text.replace(block, edited), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "out")],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode != 0
    assert "docs/benchmarks/tool-search.md: figures differ" in done.stderr


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # the test's output stays readable
        pass


@pytest.fixture
def served(site: Path):
    """The built site on 127.0.0.1 (a free port), as a static file server."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_search_finds_approval_and_a_chart_renders_in_chromium(served: str) -> None:
    from tests.docs.cdp import Browser

    browser = Browser()
    try:
        browser.goto(served)
        browser.click("label.md-search__icon, .md-search__input")
        browser.wait_for(
            "document.activeElement && document.activeElement.matches('.md-search__input')"
        )
        browser.type_text("approval")
        first = browser.wait_for(
            "(() => { const a = document.querySelector('.md-search-result__item a');"
            " return a && a.href; })()",
            timeout=60,
        )
        browser.screenshot(ARTEFACTS / "search-approval.png")
        browser.click(".md-search-result__item a")
        browser.wait_for(f"location.href === {first!r} && document.readyState === 'complete'")
        title = browser.evaluate("document.querySelector('article h1').textContent")
        body = browser.evaluate("document.querySelector('article').textContent")
        assert "approval" in body.lower()
        assert "/guides/production/" in first, (first, title)
        browser.screenshot(ARTEFACTS / "search-result.png")

        browser.goto(served + "benchmarks/")
        charts = browser.wait_for(
            "(() => { const imgs = [...document.querySelectorAll('article img')]"
            ".filter(i => i.src.endsWith('.svg'));"
            " return imgs.length && imgs.every(i => i.complete)"
            " && imgs.map(i => [i.src, i.naturalWidth, i.naturalHeight]); })()"
        )
        assert len(charts) >= 2
        for src, width, height in charts:
            assert width > 100 and height > 50, src
        browser.evaluate("document.querySelector('article img').scrollIntoView()")
        shot = browser.screenshot(ARTEFACTS / "benchmarks-chart.png")
        assert shot.stat().st_size > 10_000
    finally:
        browser.close()
