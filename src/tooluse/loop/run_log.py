"""A log of runs in SQLite, like ``llm logs``: prompt, model, tools, every call with its
arguments, output, duration and error flag, the final text, usage and stop reason.

CLI runs (``tooluse chat``, ``tooluse demo``) are logged; library runs when asked:
``tooluse.run(..., log=True)`` or ``TOOLUSE_LOG=1`` in the environment. The database is
``tooluse/logs.db`` under the user's data directory, or the file ``TOOLUSE_LOG_PATH`` names.
``tooluse logs`` lists entries, ``tooluse logs show ID`` prints one, and the saved record is a
``RunResult.to_dict()``, so ``tooluse report`` renders it as a trace.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["LogEntry", "RunLog", "default_log_path", "log_requested", "record_run"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    source TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,
    tools TEXT NOT NULL,
    final_text TEXT NOT NULL,
    stop_reason TEXT NOT NULL,
    duration REAL NOT NULL,
    error TEXT,
    result TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created);
"""


def default_log_path() -> Path:
    """``$TOOLUSE_LOG_PATH``, else ``logs.db`` in the user's data directory for tooluse."""
    explicit = os.environ.get("TOOLUSE_LOG_PATH")
    if explicit:
        return Path(explicit).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("tooluse", appauthor=False)) / "logs.db"


def log_requested(log: bool | None) -> bool:
    """Whether a library run should be logged: ``log=`` wins, else ``TOOLUSE_LOG``."""
    if log is not None:
        return log
    return os.environ.get("TOOLUSE_LOG", "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True, kw_only=True)
class LogEntry:
    """One logged run."""

    id: str
    created: float
    source: str
    model: str
    prompt: str
    tools: tuple[str, ...]
    final_text: str
    stop_reason: str
    duration: float
    error: str | None = None
    result: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Each tool call of the run: name, arguments, output, error flag, duration."""
        return list(self.result.get("trail", []))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created": self.created,
            "source": self.source,
            "model": self.model,
            "prompt": self.prompt,
            "tools": list(self.tools),
            "final_text": self.final_text,
            "stop_reason": self.stop_reason,
            "duration": self.duration,
            "error": self.error,
            "calls": self.calls,
            "usage": self.result.get("usage", {}),
        }


class RunLog:
    """The SQLite run log at ``path`` (created on first write)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_log_path()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=10)
        connection.executescript(_SCHEMA)
        return connection

    def add(
        self,
        result: Any,
        *,
        model: str,
        prompt: str,
        tools: Sequence[str] = (),
        source: str = "library",
        duration: float = 0.0,
        error: str | None = None,
    ) -> str:
        """Store one run (a ``RunResult``, or ``None`` when it failed before any result)."""
        data = result.to_dict() if result is not None else {}
        # ids sort by time: a hex timestamp in microseconds, then randomness
        entry_id = f"{int(time.time() * 1e6):x}{uuid.uuid4().hex[:8]}"
        row = (
            entry_id,
            time.time(),
            source,
            model,
            prompt,
            json.dumps(list(tools)),
            data.get("final_text", ""),
            data.get("stop_reason", "error" if error else ""),
            duration,
            error,
            json.dumps(data, ensure_ascii=False, default=str),
        )
        with self._connect() as connection:
            connection.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)", row)
        return entry_id

    def entries(self, limit: int | None = 20) -> list[LogEntry]:
        """The newest ``limit`` entries (all with ``None``), newest first."""
        if not self.path.exists():
            return []
        query = "SELECT * FROM runs ORDER BY created DESC, id DESC"
        args: tuple[Any, ...] = ()
        if limit is not None:
            query += " LIMIT ?"
            args = (limit,)
        with self._connect() as connection:
            return [_entry(row) for row in connection.execute(query, args)]

    def get(self, entry_id: str) -> LogEntry:
        """The entry with this id (or the only one starting with it); ``KeyError`` if none."""
        if self.path.exists():
            with self._connect() as connection:
                rows = connection.execute(
                    "SELECT * FROM runs WHERE id LIKE ? ORDER BY id", (entry_id + "%",)
                ).fetchall()
            if len(rows) == 1:
                return _entry(rows[0])
            if len(rows) > 1:
                raise KeyError(f"{entry_id!r} matches {len(rows)} log entries; give more of it")
        raise KeyError(f"no log entry {entry_id!r}")


def _entry(row: Sequence[Any]) -> LogEntry:
    return LogEntry(
        id=row[0],
        created=row[1],
        source=row[2],
        model=row[3],
        prompt=row[4],
        tools=tuple(json.loads(row[5])),
        final_text=row[6],
        stop_reason=row[7],
        duration=row[8],
        error=row[9],
        result=json.loads(row[10]),
    )


def prompt_text(prompt: Any) -> str:
    """The prompt of a run as text: the string, or the last user message of a history."""
    if isinstance(prompt, str):
        return prompt
    messages = [prompt] if hasattr(prompt, "role") else list(prompt or ())
    for message in reversed(messages):
        if getattr(message, "role", None) == "user":
            return str(message.content)
    return ""


def model_name(backend: object) -> str:
    """The name a log shows for a backend: its ``model_spec`` when it has one."""
    for attribute in ("model_spec", "model", "name"):
        value = getattr(backend, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(backend).__name__


def record_run(
    result: Any,
    *,
    backend: object,
    prompt: Any,
    tools: Sequence[Any] = (),
    source: str = "library",
    duration: float = 0.0,
    error: BaseException | None = None,
    log: RunLog | None = None,
) -> str | None:
    """Log a run; a log that cannot be written gives a warning, never a failed run."""
    import warnings

    names = [str(getattr(t, "name", None) or getattr(t, "__name__", t)) for t in tools or ()]
    try:
        return (log or RunLog()).add(
            result,
            model=model_name(backend),
            prompt=prompt_text(prompt),
            tools=names,
            source=source,
            duration=duration,
            error=f"{type(error).__name__}: {error}" if error is not None else None,
        )
    except (OSError, sqlite3.Error) as exc:
        warnings.warn(f"tooluse could not write the run log: {exc}", stacklevel=2)
        return None
