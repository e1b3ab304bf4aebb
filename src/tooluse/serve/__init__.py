"""``tooluse serve``: an OpenAI-compatible HTTP server that gives any backend reliable tool calls.

Needs the ``serve`` extra (``pip install 'tooluse[serve]'``: Starlette and uvicorn)::

    from tooluse.serve import ServedModel, create_app
    app = create_app([ServedModel(id="local", backend=LlamaCppBackend.default())])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tooluse.providers.text_tools import TextToolsBackend

if TYPE_CHECKING:
    from tooluse.serve.app import ServedModel, create_app

__all__ = ["ServedModel", "TextToolsBackend", "create_app"]


def __getattr__(name: str) -> Any:
    # The server needs Starlette (the `serve` extra); the rest of this package does not.
    if name in ("ServedModel", "create_app"):
        try:
            from tooluse.serve import app
        except ImportError as exc:
            from tooluse.errors import MissingDependencyError

            raise MissingDependencyError(exc.name or "starlette", "serve") from exc
        return getattr(app, name)
    raise AttributeError(f"module 'tooluse.serve' has no attribute {name!r}")
