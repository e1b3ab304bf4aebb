"""BFCL v4's web-search categories as tool environments: ``bfcl:web_search_base`` and
``bfcl:web_search_no_snippet``.

::

    env = environment_registry.get(name="bfcl:web_search_base")   # needs SERPAPI_API_KEY
    trajectory = TrajectoryRunner(environment=env, backend=backend).run_trajectory(0)

Each of the 100 entries is a multi-hop question that the model answers with two functions,
BFCL's ``search_engine_query(keywords, max_results=10, region="wt-wt")`` and
``fetch_url_content(url, mode="raw")``; the final reply is scored with BFCL's
``agentic_checker`` (see :mod:`tooluse.evals.bfcl.agentic`). The two categories share the
questions; ``web_search_no_snippet`` gives search results without their text snippet.

The search backend is the one bfcl-eval uses, SerpAPI's DuckDuckGo engine, reached over HTTP by
:class:`SerpAPISearch`: the key comes from ``SERPAPI_API_KEY`` (bfcl-eval's variable), the base
URL from ``search_url=`` or ``TOOLUSE_SERPAPI_URL`` (default ``https://serpapi.com``), so that
a proxy or a local stub can stand in. Without a key the environment refuses to start. Pages are
fetched directly; ``markdown`` mode converts them with html2text and ``truncate`` keeps the text
(BeautifulSoup): ``pip install 'tooluse[bfcl-web]'``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from importlib.util import find_spec
from typing import Any

import httpx

from tooluse.envs.splits import split_indices
from tooluse.errors import MissingDependencyError
from tooluse.evals.bfcl.agentic import AgenticEntry, AgenticEnvironment, load_bfcl_rows
from tooluse.evals.bfcl.world import function_docs, render_result

__all__ = [
    "SEARCH_KEY_VARIABLE",
    "SEARCH_URL_VARIABLE",
    "WEB_SEARCH_CATEGORIES",
    "BFCLWebSearchEnvironment",
    "SerpAPISearch",
    "WebSearchWorld",
    "load_web_search_category",
]

WEB_SEARCH_CATEGORIES = ("web_search_base", "web_search_no_snippet")
#: The variable bfcl-eval reads its SerpAPI key from.
SEARCH_KEY_VARIABLE = "SERPAPI_API_KEY"
#: Overrides the search API's base URL (a proxy, a cache, a test stub).
SEARCH_URL_VARIABLE = "TOOLUSE_SERPAPI_URL"
DEFAULT_SEARCH_URL = "https://serpapi.com"
_TOO_MANY_REQUESTS = 429
# Pages refuse clients that do not look like a browser; bfcl-eval sends browser headers too.
_PAGE_HEADERS = {
    "User-Agent": (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/124.0 Safari/537.36"
    ),
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "Accept-Language": "en-US,en;q=0.9",
}


def _check_category(category: str) -> None:
    if category not in WEB_SEARCH_CATEGORIES:
        raise ValueError(
            f"unknown BFCL web-search category {category!r}; "
            f"known: {', '.join(WEB_SEARCH_CATEGORIES)}"
        )


def load_web_search_category(category: str) -> tuple[AgenticEntry, ...]:
    """The entries of one web-search category with BFCL's ids (``web_search_base_0`` ...)."""
    _check_category(category)
    docs = tuple(function_docs(("WebSearchAPI",)))
    rows = load_bfcl_rows("BFCL_v4_web_search.json")
    answers = {
        row["id"]: tuple(str(a) for a in row["ground_truth"])
        for row in load_bfcl_rows("possible_answer/BFCL_v4_web_search.json")
    }
    entries = []
    for row in rows:
        if row["id"] not in answers:
            raise ValueError(f"web-search entry {row['id']!r} has no answer in the answer file")
        turns = tuple(
            "\n".join(str(m.get("content", "")) for m in turn if m.get("role") == "user")
            for turn in row["question"]
        )
        entries.append(
            AgenticEntry(
                id=str(row["id"]).replace("web_search", category),
                category=category,
                turns=turns,
                possible_answers=answers[row["id"]],
                functions=docs,
            )
        )
    return tuple(entries)


class SerpAPISearch:
    """The search backend: SerpAPI's DuckDuckGo engine, queried as bfcl-eval queries it.

    ``api_key`` defaults to ``SERPAPI_API_KEY`` and ``base_url`` to ``TOOLUSE_SERPAPI_URL`` or
    SerpAPI itself; without a key, ``ValueError``. A rate-limited search (HTTP 429) is retried
    ``retries`` times, waiting ``backoff`` seconds, doubled each time.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 2.0,
    ) -> None:
        key = api_key or os.environ.get(SEARCH_KEY_VARIABLE, "")
        if not key:
            raise ValueError(
                f"BFCL web search needs a SerpAPI key: set {SEARCH_KEY_VARIABLE} (the variable "
                "bfcl-eval reads)"
            )
        self._key = key
        self.base_url = (
            base_url or os.environ.get(SEARCH_URL_VARIABLE) or DEFAULT_SEARCH_URL
        ).rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self._client = httpx.Client(timeout=timeout, follow_redirects=True)

    def search(
        self, keywords: str, max_results: int = 10, region: str = "wt-wt"
    ) -> list[dict[str, str]] | dict[str, str]:
        """The first ``max_results`` results (``title``, ``href``, ``body``), or ``{"error"}``."""
        params = {
            "engine": "duckduckgo",
            "q": keywords,
            "kl": region,
            "api_key": self._key,
            "output": "json",
        }
        wait = self.backoff
        for attempt in range(self.retries + 1):
            try:
                response = self._client.get(f"{self.base_url}/search", params=params)
            except httpx.HTTPError as exc:
                return {"error": f"the search request failed: {type(exc).__name__}: {exc}"}
            if response.status_code != _TOO_MANY_REQUESTS or attempt == self.retries:
                break
            time.sleep(wait)
            wait *= 2
        return _search_results(response, max_results)

    def fetch(self, url: str, mode: str = "raw") -> dict[str, str]:
        """A page as ``{"content": ...}``: its HTML (``raw``), as Markdown (``markdown``) or
        its text without scripts and styles (``truncate``); ``{"error": ...}`` when it fails."""
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"Invalid URL: {url}")
        if mode not in ("raw", "markdown", "truncate"):
            return {"error": f"An error occurred while fetching {url}: unsupported mode {mode!r}"}
        try:
            response = self._client.get(url, headers=_PAGE_HEADERS, timeout=20.0)
            response.raise_for_status()
        except httpx.HTTPError as exc:
            return {"error": f"An error occurred while fetching {url}: {exc}"}
        return {"content": page_content(response.text, mode)}

    def close(self) -> None:
        self._client.close()


def _search_results(response: httpx.Response, max_results: int) -> Any:
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict) and "error" in payload:
        return {"error": str(payload["error"])}
    if response.status_code >= 400:  # noqa: PLR2004 - HTTP's error range
        return {"error": f"the search service answered HTTP {response.status_code}"}
    if not isinstance(payload, dict) or "organic_results" not in payload:
        return {
            "error": "Failed to retrieve the search results from server. Please try again later."
        }
    results = []
    for item in payload["organic_results"][: int(max_results)]:
        results.append(
            {
                "title": str(item.get("title", "")),
                "href": str(item.get("link", "")),
                "body": str(item.get("snippet", "")),
            }
        )
    return results


def page_content(html: str, mode: str) -> str:
    """A fetched page in one of ``fetch_url_content``'s modes."""
    if mode == "markdown":
        import html2text

        return str(html2text.HTML2Text().handle(html))
    if mode == "truncate":
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(html, "html.parser")
        for element in soup(["script", "style"]):
            element.extract()
        return str(soup.get_text(separator="\n", strip=True))
    return html


class WebSearchWorld:
    """BFCL's two web-search functions on a :class:`SerpAPISearch` (stateless: every call
    stands alone). ``show_snippet=False`` drops each result's ``body``."""

    stateful = False

    def __init__(self, search: SerpAPISearch, *, show_snippet: bool) -> None:
        self.search = search
        self.show_snippet = show_snippet

    def call(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, bool]:
        """Run one function: the result rendered as BFCL renders it, and whether it failed."""
        try:
            if name == "search_engine_query":
                value: Any = self.search.search(**arguments)
                if isinstance(value, list) and not self.show_snippet:
                    value = [{k: v for k, v in r.items() if k != "body"} for r in value]
            elif name == "fetch_url_content":
                value = self.search.fetch(**arguments)
            else:
                return f"Error during execution: name '{name}' is not defined", True
        except Exception as exc:  # bad arguments or a bad URL go back to the model as text
            return f"Error during execution: {exc}", True
        return render_result(value), isinstance(value, dict) and "error" in value


class BFCLWebSearchEnvironment(AgenticEnvironment):
    """One web-search category (``bfcl:web_search_base`` ... in the registry).

    ``search`` is the backend (default: a :class:`SerpAPISearch` from ``api_key`` and
    ``search_url``, or their variables). ``split`` keeps the entries of that split (see
    :mod:`tooluse.envs.splits`), then ``limit`` the first. ``max_steps`` caps the steps of the
    turn (BFCL's cap is 20). ``tool_types`` is accepted for the registry's sake.
    """

    def __init__(  # noqa: PLR0913 - the environment's options, keyword-only
        self,
        category: str = "web_search_base",
        *,
        search: SerpAPISearch | None = None,
        api_key: str | None = None,
        search_url: str | None = None,
        limit: int | None = None,
        split: str | None = None,
        rewards: Sequence[Any] | None = None,
        max_steps: int = 20,
        tool_types: Sequence[str] = (),
    ) -> None:
        _check_category(category)
        for module, package in (("html2text", "html2text"), ("bs4", "beautifulsoup4")):
            if find_spec(module) is None:
                raise MissingDependencyError(f"{package} (for BFCL web search)", "bfcl-web")
        entries = load_web_search_category(category)
        keep = split_indices([e.id for e in entries], split, salt=f"bfcl:{category}")
        entries = tuple(entries[i] for i in keep)
        if limit is not None:
            entries = entries[:limit]
        self.search = search or SerpAPISearch(api_key=api_key, base_url=search_url)
        self._owns_search = search is None
        self.category = category
        super().__init__(entries, name=f"bfcl:{category}", rewards=rewards, max_steps=max_steps)

    def new_world(self, entry: AgenticEntry) -> WebSearchWorld:
        return WebSearchWorld(self.search, show_snippet=self.category != "web_search_no_snippet")

    def close(self) -> None:
        super().close()
        if self._owns_search:
            self.search.close()
