"""The results file of the run engine: one JSON record per line, appended as items finish.

:func:`read_results` reads it (a later line for a key wins); :func:`repair_results` is the one
repair: it cuts off a last line whose write was cut short and, when asked, sets the other
damaged lines aside in ``<stem>.corrupt.jsonl`` so that their items run again.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import IO, Any

from tooluse.evals.engine_types import EngineError

__all__ = ["ResultsFile", "read_results", "repair_results"]


def _complete_lines(data: bytes) -> tuple[list[tuple[int, bytes]], int]:
    """The numbered complete lines of ``data`` and where they end (anything after the last
    newline is a write cut short)."""
    complete_end = data.rfind(b"\n") + 1
    lines = data[:complete_end].split(b"\n")[:-1]
    return list(enumerate(lines, start=1)), complete_end


def _record(raw: bytes) -> dict[str, Any] | None:
    """The record on one line, or ``None`` when it is not a JSON object with a string key."""
    try:
        row = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return row if isinstance(row, dict) and isinstance(row.get("key"), str) else None


def repair_results(path: str | Path, *, set_aside_corrupt: bool = False) -> list[int]:
    """Cut off a last line without its newline (a write cut short); with ``set_aside_corrupt``,
    also move the other lines that are not records to ``<stem>.corrupt.jsonl`` beside ``path``.

    Returns the numbers of the lines set aside (empty when there were none).
    """
    target = Path(path)
    if not target.exists():
        return []
    data = target.read_bytes()
    lines, complete_end = _complete_lines(data)
    bad = (
        [(n, raw) for n, raw in lines if raw.strip() and _record(raw) is None]
        if set_aside_corrupt
        else []
    )
    if bad:
        corrupt = target.with_name(target.stem + ".corrupt.jsonl")
        with corrupt.open("ab") as handle:
            for _, raw in bad:
                handle.write(raw + b"\n")
        numbers = {n for n, _ in bad}
        kept = [raw for n, raw in lines if raw.strip() and n not in numbers]
        target.write_bytes(b"".join(line + b"\n" for line in kept))
    elif complete_end < len(data):
        with target.open("r+b") as handle:
            handle.truncate(complete_end)
    return [n for n, _ in bad]


def read_results(path: str | Path, *, repair: bool = False) -> dict[str, dict[str, Any]]:
    """The records in a results file by key (a later line for a key wins).

    A last line without its newline is a write cut short: it is ignored, and with ``repair``
    cut off the file (:func:`repair_results`) so its item is redone. Any other line that is not
    a JSON object with a ``"key"`` raises :class:`EngineError` naming the file and line.
    """
    target = Path(path)
    if not target.exists():
        return {}
    if repair:
        repair_results(target)
    lines, _ = _complete_lines(target.read_bytes())
    records: dict[str, dict[str, Any]] = {}
    for number, raw in lines:
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise EngineError(
                f"{target} line {number} is corrupt ({exc}); fix or remove that line to resume"
            ) from None
        if not isinstance(row, dict) or not isinstance(row.get("key"), str):
            raise EngineError(f"{target} line {number} is not a record with a string 'key'")
        records[row["key"]] = row
    return records


class ResultsFile:
    """Appends one record per line and flushes it (and fsyncs it when asked)."""

    def __init__(self, path: str | Path, *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._lock = threading.Lock()
        self._handle: IO[str] | None = None

    def __enter__(self) -> ResultsFile:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = self.path.open("a", encoding="utf-8")
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def append(self, key: str, record: dict[str, Any]) -> dict[str, Any]:
        """Write ``{"key": key, **record}`` as one line; returns the written row."""
        row = {"key": key, **{k: v for k, v in record.items() if k != "key"}}
        line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._handle is None:
                raise EngineError("the results file is not open")
            self._handle.write(line)
            self._handle.flush()
            if self.fsync:
                os.fsync(self._handle.fileno())
        return row
