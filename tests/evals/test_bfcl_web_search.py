"""BFCL's web-search categories against a search service stub on 127.0.0.1.

The stub is a real HTTP server on a free port that answers like SerpAPI's DuckDuckGo engine
(``/search``) and serves pages; the environments reach it through their configurable base URL
with the key from ``SERPAPI_API_KEY``, as bfcl-eval reads it.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from tooluse import ScriptedBackend, ToolCall
from tooluse.envs import Action, TrajectoryRunner, environment_registry
from tooluse.evals.bfcl.web_search import (
    SEARCH_KEY_VARIABLE,
    SEARCH_URL_VARIABLE,
    BFCLWebSearchEnvironment,
    SerpAPISearch,
    load_web_search_category,
)

KEY = "stub-key-123"
PAGE = (
    "<html><head><style>p {color: red}</style><script>var hidden = 1;</script></head>"
    "<body><h1>Da Hong Pao</h1><p>The tea grows in <b>Fujian</b>, China.</p></body></html>"
)
_ids = itertools.count()


def call(name, **arguments):
    return ToolCall(id=f"w{next(_ids)}", name=name, arguments=arguments)


class SearchStub:
    """A SerpAPI-like service: ``/search`` (needs the key), ``/page``, ``/missing`` (404)."""

    def __init__(self):
        self.queries: list[dict[str, str]] = []
        self.rate_limited = 0  # answer this many searches with HTTP 429 first
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/search":
                    stub.queries.append(query)
                    self.search(query)
                elif url.path == "/page":
                    self.send(200, PAGE, "text/html")
                else:
                    self.send(404, "not here", "text/plain")

            def search(self, query):
                if stub.rate_limited:
                    stub.rate_limited -= 1
                    return self.send(429, json.dumps({"error": "429 Too Many Requests"}))
                if query.get("api_key") != KEY:
                    return self.send(401, json.dumps({"error": "Invalid API key."}))
                if query.get("q") == "nothing":
                    return self.send(200, json.dumps({"search_metadata": {}}))
                results = [
                    {
                        "title": f"Result {n} for {query['q']}",
                        "link": f"http://127.0.0.1:{stub.port}/page?n={n}",
                        "snippet": f"snippet {n} ({query.get('kl')})",
                    }
                    for n in range(12)
                ]
                self.send(200, json.dumps({"organic_results": results}))

            def send(self, status, body, kind="application/json"):
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def stub(monkeypatch):
    server = SearchStub()
    monkeypatch.setenv(SEARCH_KEY_VARIABLE, KEY)
    monkeypatch.setenv(SEARCH_URL_VARIABLE, server.url)
    yield server
    server.close()


# -- data and refusals ---------------------------------------------------------------------------


def test_both_categories_share_bfcl_s_questions_under_their_own_ids():
    base = load_web_search_category("web_search_base")
    no_snippet = load_web_search_category("web_search_no_snippet")
    assert len(base) == len(no_snippet) == 100
    assert base[0].id == "web_search_base_0" and no_snippet[0].id == "web_search_no_snippet_0"
    assert [e.turns for e in base] == [e.turns for e in no_snippet]
    assert {d["name"] for d in base[0].functions} == {"search_engine_query", "fetch_url_content"}


def test_without_a_key_the_environment_refuses_in_one_line(monkeypatch):
    monkeypatch.delenv(SEARCH_KEY_VARIABLE, raising=False)
    with pytest.raises(ValueError) as excinfo:
        environment_registry.get(name="bfcl:web_search_base")
    message = str(excinfo.value)
    assert "\n" not in message and SEARCH_KEY_VARIABLE in message


def test_the_command_refuses_without_a_key_before_loading_a_model(monkeypatch):
    from typer.testing import CliRunner

    from tooluse.cli.app import app

    monkeypatch.delenv(SEARCH_KEY_VARIABLE, raising=False)
    result = CliRunner().invoke(app, ["eval", "env", "bfcl:web_search_no_snippet", "-m", "local"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and SEARCH_KEY_VARIABLE in lines[0], result.output


def test_a_category_that_does_not_exist_lists_the_valid_ones():
    with pytest.raises(ValueError, match="known: web_search_base, web_search_no_snippet"):
        BFCLWebSearchEnvironment("web_search_deep", api_key=KEY)


# -- the adapter -----------------------------------------------------------------------------------


def test_the_adapter_queries_the_configured_url_as_bfcl_eval_does(stub):
    search = SerpAPISearch()
    assert search.base_url == stub.url
    results = search.search("most expensive tea", max_results=3, region="cn-zh")
    assert [r["title"] for r in results] == [f"Result {n} for most expensive tea" for n in range(3)]
    assert results[0] == {
        "title": "Result 0 for most expensive tea",
        "href": f"{stub.url}/page?n=0",
        "body": "snippet 0 (cn-zh)",
    }
    (query,) = stub.queries
    assert query["engine"] == "duckduckgo" and query["api_key"] == KEY and query["kl"] == "cn-zh"
    assert search.search("nothing")["error"].startswith("Failed to retrieve the search results")
    other = SerpAPISearch(api_key="wrong", base_url=stub.url + "/")
    assert other.base_url == stub.url
    assert other.search("tea") == {"error": "Invalid API key."}
    search.close()
    other.close()


def test_a_rate_limited_search_is_retried(stub):
    search = SerpAPISearch(backoff=0.0, retries=2)
    stub.rate_limited = 2
    assert len(search.search("tea")) == 10
    assert len(stub.queries) == 3
    stub.rate_limited = 3
    assert "429" in search.search("tea")["error"]
    search.close()


def test_pages_are_fetched_in_each_mode(stub):
    search = SerpAPISearch()
    raw = search.fetch(f"{stub.url}/page")["content"]
    assert raw == PAGE
    markdown = search.fetch(f"{stub.url}/page", mode="markdown")["content"]
    assert "# Da Hong Pao" in markdown and "**Fujian**" in markdown
    text = search.fetch(f"{stub.url}/page", mode="truncate")["content"]
    assert text.splitlines() == ["Da Hong Pao", "The tea grows in", "Fujian", ", China."]
    assert "hidden" not in text and "color" not in text
    assert "404" in search.fetch(f"{stub.url}/missing")["error"]
    assert "unsupported mode" in search.fetch(f"{stub.url}/page", mode="pdf")["error"]
    with pytest.raises(ValueError, match="Invalid URL"):
        search.fetch("ftp://example.invalid/file")
    search.close()


# -- episodes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("category", ["web_search_base", "web_search_no_snippet"])
def test_a_scripted_model_searches_reads_and_answers(category, stub):
    with environment_registry.get(name=f"bfcl:{category}", limit=3) as env:
        entry = env.entries[0]
        answer = entry.possible_answers[0]
        backend = ScriptedBackend(
            [
                [call("search_engine_query", keywords="most expensive tea", max_results=2)],
                [call("fetch_url_content", url=f"{stub.url}/page", mode="truncate")],
                f"{{'answer': '{answer}', 'context': 'searched'}}",
            ]
        )
        runner = TrajectoryRunner(environment=env, backend=backend, system_prompt="Be brief.")
        trajectory = runner.run_trajectory(0)
        assert backend.remaining == 0 and trajectory.success and trajectory.terminated
        system = backend.requests[0].messages[0]
        # The entry's own instructions (BFCL's answer format) first, the runner's after.
        assert system.role == "system" and system.content.startswith("For your final answer")
        assert system.content.endswith("\n\nBe brief.") and "{'answer'" in system.content
        assert backend.requests[0].messages[1].content == entry.turns[0]
        found = ast.literal_eval(trajectory.steps[0].results[0].output)  # BFCL renders str(list)
        assert len(found) == 2 and found[0]["href"] == f"{stub.url}/page?n=0"
        assert ("body" in found[0]) == (category == "web_search_base")
        page = json.loads(trajectory.steps[1].results[0].output)
        assert "Fujian" in page["content"]
        assert stub.queries[0]["q"] == "most expensive tea"


def test_failed_calls_are_error_results_and_a_wrong_answer_fails(stub):
    with environment_registry.get(name="bfcl:web_search_base", limit=1) as env:
        state, _ = env.reset(options={"task_index": 0})
        calls = (
            call("fetch_url_content", url="not a url"),
            call("fetch_url_content", url=f"{stub.url}/missing"),
            call("search_engine_query", keywords="nothing"),
            call("search_engine_query"),
            call("browse", url="x"),
        )
        result = env.step(state, Action(tool_calls=calls))
        outputs = [r.output for r in result.tool_results]
        assert [r.call_id for r in result.tool_results] == [c.id for c in calls]
        assert all(r.is_error for r in result.tool_results)
        assert outputs[0] == "Error during execution: Invalid URL: not a url"
        assert "404" in outputs[1] and "Failed to retrieve" in outputs[2]
        assert "keywords" in outputs[3] and "unknown function 'browse'" in outputs[4]
        final = env.step(result.state, Action(text="{'answer': 'I do not know'}"))
        assert final.terminated and final.info["correct"] is False
        assert final.info["error_type"] == "agentic:answer_not_found"


def test_a_turn_over_the_step_cap_fails(stub):
    with environment_registry.get(name="bfcl:web_search_base", limit=1, max_steps=2) as env:
        backend = ScriptedBackend(
            [[call("search_engine_query", keywords=f"q{n}")] for n in range(2)]
        )
        trajectory = TrajectoryRunner(environment=env, backend=backend).run_trajectory(0)
        assert trajectory.truncated and not trajectory.success
        assert "cap: 2" in trajectory.steps[-1].result.info["truncated_reason"]


@pytest.mark.skipif(
    not os.environ.get(SEARCH_KEY_VARIABLE), reason="needs a real SerpAPI key in SERPAPI_API_KEY"
)
def test_the_real_search_service_answers():
    search = SerpAPISearch(base_url="https://serpapi.com")
    results = search.search("Berkeley Function Calling Leaderboard", max_results=3)
    assert isinstance(results, list) and results and {"title", "href", "body"} <= set(results[0])
    search.close()
