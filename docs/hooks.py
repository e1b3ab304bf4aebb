"""Build hooks of the documentation site (``mkdocs.yml`` names this file).

- The benchmark charts are drawn from ``benchmarks/results/*.json`` at each build and added to
  the site as ``benchmarks/charts/<name>.svg`` (``benchmarks/docs_charts.py``).
- A page holding generated figure blocks (``benchmarks/readme_figures.py``'s ``DOCUMENTS``) is
  checked against the results files: a stale block is a warning, so ``--strict`` fails the
  build and names the command that regenerates it.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the figures and charts modules live there

import docs_charts  # noqa: E402 - after the path it is found on
import readme_figures  # noqa: E402

log = logging.getLogger("mkdocs.plugins.tooluse")


def on_files(files: Files, config: Any) -> Files:
    """Add every chart the results files allow to the site's files."""
    for name, svg in docs_charts.render_charts(readme_figures.RESULTS).items():
        files.append(File.generated(config, f"benchmarks/charts/{name}", content=svg))
    return files


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Warn (an error under ``--strict``) when a page's generated figures are stale."""
    document = f"docs/{page.file.src_uri}"
    if document in readme_figures.DOCUMENTS:
        results = readme_figures.Results(readme_figures.RESULTS)
        try:
            stale = readme_figures.differences(markdown, document, results)
        except readme_figures.FiguresError as exc:
            stale = [str(exc)]
        for diff in stale:
            log.warning(
                "%s: figures differ from benchmarks/results/; run "
                "`python benchmarks/readme_figures.py`:\n%s",
                document,
                diff,
            )
    return markdown
