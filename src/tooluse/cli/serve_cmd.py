"""``tooluse serve``: the OpenAI-compatible server from the command line."""

from __future__ import annotations

import typer

from tooluse.errors import MissingDependencyError


def _served_id(spec: str, backend: object) -> tuple[str, tuple[str, ...]]:
    """The name clients use for the model (the ``--model`` value) and its other names."""
    aliases = []
    for attr in ("model", "name"):
        value = getattr(backend, attr, None)
        if isinstance(value, str) and value and value != spec and value not in aliases:
            aliases.append(value)
    return spec, tuple(aliases)


def register(app: typer.Typer) -> None:
    """Attach ``serve`` to the main app."""

    @app.command("serve")
    def serve_command(
        model: str = typer.Option(
            "local",
            "--model",
            "-m",
            help="local | llama-cpp:PATH | openai-compatible:URL#MODEL | anthropic:... | any model string.",
        ),
        format: str | None = typer.Option(
            None,
            "--format",
            "-f",
            help="Text tool-call format of the model (adds tool calls to a server without them).",
        ),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to bind."),
        port: int = typer.Option(8000, "--port", "-p", min=1, max=65535, help="Port to bind."),
        api_key: str | None = typer.Option(
            None, "--api-key", envvar="TOOLUSE_SERVE_API_KEY", help="Require this Bearer key."
        ),
        max_queue: int = typer.Option(
            32, "--max-queue", min=0, help="Requests that may wait for the model; more get 503."
        ),
        concurrency: int | None = typer.Option(
            None,
            "--concurrency",
            min=1,
            help="Generations at once (default: a local model's batch size, its requests "
            "decoded together; 8 for a remote one).",
        ),
    ) -> None:
        """Serve a model over the OpenAI Chat Completions API, with reliable tool calls."""
        try:
            import uvicorn
        except ImportError as exc:  # main() prints it as one line naming the extra
            raise MissingDependencyError("uvicorn", "serve") from exc
        from tooluse.cli.shared import load_model_and_parser
        from tooluse.serve import ServedModel, TextToolsBackend, create_app

        backend, parser = load_model_and_parser(model, format)
        is_local = hasattr(backend, "grammar_for")
        if parser is not None and not is_local:
            backend = TextToolsBackend(backend, parser)
        served_id, aliases = _served_id(model, backend)
        served = ServedModel(
            id=served_id,
            backend=backend,
            aliases=aliases,
            max_concurrent=concurrency or int(getattr(backend, "batch_size", 8)),
            max_queue=max_queue,
        )
        application = create_app([served], api_key=api_key)
        typer.echo(
            f"tooluse serve: {served_id} on http://{host}:{port}/v1 (Ctrl-C stops)", err=True
        )
        # requests still generating at shutdown get a few seconds, not forever
        uvicorn.run(
            application, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5
        )
