"""The streaming machine shared by formats whose calls are JSON.

:class:`JsonCallMachine` connects a :class:`~tooluse.formats.json_scanner.JsonScanner` to the
event stream: a call starts when its name is read, its raw argument text streams as
``ArgumentsDelta``, and it finishes when its object closes. A body cut off by the end of output or
by the format's closing marker finishes any started call with ``raw_arguments`` and an error.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tooluse.formats.base import StreamMachine, normalise_arguments
from tooluse.formats.json_scanner import ARGUMENT_KEYS, JsonScanner
from tooluse.formats.lexer import MarkerSet
from tooluse.formats.literals import LiteralSyntaxError, decode_arguments

__all__ = ["JsonCallMachine", "call_from_object"]

_WS_RUN = re.compile(r"[ \t\r\n]*")
# Whitespace after a call longer than this is released as text instead of waiting on it.
_MAX_WAIT_WS = 64


def call_from_object(obj: Any) -> tuple[str | None, Any, str | None]:
    """``(name, arguments, problem)`` from a decoded call object.

    Accepts ``{"name", "arguments"|"parameters"}`` and the OpenAI wrapper
    ``{"type": "function", "function": {...}}``; missing arguments mean ``{}``.
    """
    if not isinstance(obj, dict):
        return None, None, f"expected a call object, got {type(obj).__name__}"
    if "name" not in obj and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None, None, "call object has no 'name'"
    for key in ARGUMENT_KEYS:
        if key in obj:
            return name, obj[key], None
    return name, {}, None


class JsonCallMachine(StreamMachine):
    """Base of JSON-call formats; subclasses drive text states and open bodies."""

    #: Whether a call object starts streaming as soon as its name is read. Formats whose call
    #: objects carry the model's own call id (Mistral's ``"id"``) read each object whole, so
    #: the call starts with that id.
    stream_calls: bool = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deferred: str | None = None  # name of a call object read whole (stream_calls off)
        self._scanner: JsonScanner | None = None
        self._prefix = ""  # marker text that opened the current body, for error reports
        self._current: tuple[int, str, str] | None = None  # (index, id, name) of a started call
        self._args_only: tuple[str, str | None] | None = None  # (name, id) in arguments mode
        self._raw_parts: list[str] = []
        self._args_sent = False  # argument text of the current call has been streamed

    # -- opening and scanning bodies ---------------------------------------------------------
    def _open_calls(self, prefix: str, terminators: MarkerSet | None) -> None:
        """A body of call object(s) begins at ``self._pos``."""
        self._prefix = prefix
        self._args_only = None
        self._scanner = JsonScanner(self, calls=True, terminators=terminators)

    def _open_arguments(
        self, prefix: str, name: str, terminators: MarkerSet | None, call_id: str | None = None
    ) -> None:
        """An argument object of a call whose name is already known begins at ``self._pos``."""
        self._prefix = prefix
        self._scanner = JsonScanner(self, calls=False, terminators=terminators)
        index, cid = self._start_call(name, call_id)
        self._current = (index, cid, name)
        self._args_only = (name, cid)

    def _scan_body(self) -> bool | None:
        """Advance the open body. ``None``: it ended (see ``self._scanner``); ``False``: it needs
        more text; ``True``: it progressed and is still open."""
        scanner = self._scanner
        assert scanner is not None
        before = self._pos
        self._pos = scanner.scan(self._buf, self._pos, self._final)
        if scanner.done:
            return None
        if self._final:
            return None
        return self._pos != before

    def _body_raw(self) -> str:
        scanner = self._scanner
        return "".join(scanner.raw.parts) if scanner is not None else ""

    def _end_body(self) -> str:
        """Close the current body; report a cut-off one. Returns how it ended:
        ``"complete"``, ``"invalid"`` (not JSON at all), or ``"cut"``."""
        scanner = self._scanner
        assert scanner is not None
        raw = self._prefix + self._body_raw()
        self._scanner = None
        if scanner.invalid:
            # what the raw state gathers next starts after the skipped whitespace
            self._raw_parts = ["".join(scanner.leading)]
            return "invalid"
        return self._end_scanned(scanner, raw)

    def _end_scanned(self, scanner: JsonScanner, raw: str) -> str:
        if self._args_only is not None:
            name, _ = self._args_only
            assert self._current is not None
            index, cid, _ = self._current
            self._current = None
            self._args_only = None
            text = "".join(scanner.raw.parts)
            if scanner.complete:
                self._finish_json_arguments(index, cid, name, text, raw)
                return "complete"
            self._finish_call(
                index, cid, name, None, raw_arguments=text, raw=raw, problem=_cut_message(scanner)
            )
            return "cut"
        if scanner.complete:
            body = raw[len(self._prefix) :].strip()
            if scanner.calls_seen == 0 and body != "[]":  # e.g. a list of strings
                self._error("tool call list holds no call object", raw)
            return "complete"
        if self._current is None and self._deferred is not None:
            name, self._deferred = self._deferred, None
            partial = scanner.partial_arguments()
            value = partial if scanner.terminated_by is not None else None
            self._whole_call(
                name, value, raw_arguments=partial, raw=raw, problem=_cut_message(scanner)
            )
        elif self._current is not None:
            index, cid, name = self._current
            self._current = None
            partial = scanner.partial_arguments()
            # A closing marker means the model meant to end the call: keep its arguments when
            # they are complete. A call cut off by the end of output keeps only the raw text.
            value = partial if scanner.terminated_by is not None else None
            if partial is None:  # cut before its arguments began: they are empty, and say so
                self._emit_arguments(index, "{}")
            self._finish_call(
                index,
                cid,
                name,
                value,
                raw_arguments=partial,
                raw=raw,
                problem=_cut_message(scanner),
            )
        else:
            self._error(_cut_message(scanner), raw)
        return "cut"

    def _collect_raw(self, terminators: MarkerSet) -> str | None:
        """Gather text up to (not including) the next terminator, or to the end of output.
        Returns the gathered text once it is complete, ``None`` while more is needed."""
        found = terminators.find(self._buf, self._pos, self._final)
        self._raw_parts.append(self._buf[self._pos : found.text_end])
        self._pos = found.text_end
        if found.marker is None and not self._final:
            return None
        raw, self._raw_parts = "".join(self._raw_parts), []
        return raw

    def _end_invalid(self, raw_body: str) -> None:
        """Report a body that is not JSON; a started call finishes with the raw text."""
        raw = self._prefix + raw_body
        if self._args_only is not None and self._current is not None:
            index, cid, name = self._current
            self._current, self._args_only = None, None
            self._finish_call(
                index,
                cid,
                name,
                None,
                raw_arguments=raw_body,
                raw=raw,
                problem=f"arguments of {name!r} are not a JSON object",
            )
            return
        self._error("tool call block does not hold a JSON call object", raw)

    def _finish_json_arguments(self, index: int, cid: str, name: str, text: str, raw: str) -> None:
        try:
            value = decode_arguments(text)
        except LiteralSyntaxError as exc:
            self._finish_call(
                index,
                cid,
                name,
                None,
                raw_arguments=text,
                raw=raw,
                problem=f"arguments of {name!r} are not valid JSON: {exc}",
            )
            return
        self._finish_call(index, cid, name, value, raw_arguments=text, raw=raw)

    def _skip_closing(self, marker: str) -> bool | None:
        """After a body: skip whitespace and ``marker`` if it follows. ``None`` when undecided
        (more text needed); ``True`` when the marker was consumed, ``False`` when it is absent
        (the whitespace is left in place)."""
        match = _WS_RUN.match(self._buf, self._pos)
        end = match.end() if match else self._pos
        rest = self._buf[end : end + len(marker)]
        if rest == marker:
            self._pos = end + len(marker)
            return True
        if not self._final and marker.startswith(rest) and end - self._pos <= _MAX_WAIT_WS:
            return None
        return False

    # -- JsonSink -------------------------------------------------------------------------------
    def json_name(self, name: str) -> None:
        if not self.stream_calls:
            self._deferred = name
            return
        index, cid = self._start_call(name)
        self._current = (index, cid, name)
        self._args_sent = False

    def json_arguments_text(self, text: str) -> None:
        if self._current is not None and text:
            self._emit_arguments(self._current[0], text)
            self._args_sent = True

    def json_call_end(self, raw_call: str, raw_arguments: str | None, streamed: bool) -> None:
        raw = raw_call if not self._prefix else self._prefix + raw_call
        problem: str | None = None
        try:
            obj = decode_arguments(raw_call)
        except LiteralSyntaxError as exc:
            obj, problem = None, f"tool call is not valid JSON: {exc}"
        name, arguments, shape_problem = (
            call_from_object(obj) if obj is not None else (None, None, None)
        )
        current, self._current = self._current, None
        self._deferred = None
        if current is not None:
            index, cid, started_name = current
            if name is None:
                fallback = raw_arguments if raw_arguments is not None else None
                args, unread, _ = normalise_arguments(fallback, fallback)
                if not self._args_sent and unread is None:  # what it ends with must stream
                    self._emit_arguments(index, json.dumps(args, ensure_ascii=False))
                self._finish_call(
                    index,
                    cid,
                    started_name,
                    fallback,
                    raw_arguments=fallback,
                    raw=raw,
                    problem=problem or shape_problem,
                )
            else:
                scanner = self._scanner
                if streamed and scanner is not None and scanner.repeated_arguments:
                    arguments = raw_arguments  # the value that streamed: the first one
                if not streamed:  # arguments before the name, or sent as a JSON string
                    args, unread, _ = normalise_arguments(arguments, raw_arguments)
                    if unread is None:
                        self._emit_arguments(index, json.dumps(args, ensure_ascii=False))
                self._finish_call(
                    index, cid, started_name, arguments, raw_arguments=raw_arguments, raw=raw
                )
            return
        if name is None:
            self._not_a_call(raw_call, problem or shape_problem or "not a tool call")
            return
        own_id = obj.get("id") if isinstance(obj, dict) else None
        self._whole_call(
            name,
            arguments,
            raw_arguments=raw_arguments,
            raw=raw,
            call_id=own_id if isinstance(own_id, str) and own_id.strip() else None,
        )

    def _not_a_call(self, raw_value: str, problem: str) -> None:
        """A JSON value in call position that is not a call object: an error by default."""
        self._error(problem, self._prefix + raw_value)

    def _finish(self) -> None:
        if self._scanner is not None and self._end_body() == "invalid":
            self._end_invalid("".join(self._raw_parts) + self._remaining())
            self._raw_parts = []
            self._pos = len(self._buf)


def _cut_message(scanner: JsonScanner) -> str:
    if not scanner.started:
        return "empty tool call block"
    if scanner.terminated_by is not None:
        return f"tool call JSON is unbalanced: {scanner.terminated_by!r} came before it closed"
    return "tool call was cut off before its JSON closed"
