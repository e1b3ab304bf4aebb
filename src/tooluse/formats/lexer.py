"""The marker lexer: finds the next format marker in streamed text in one pass.

A :class:`MarkerSet` holds the literal markers of one parser state. ``find`` returns the text
before the earliest marker, or, when no marker is complete yet, the text that is safe to release:
everything except the longest tail that could still grow into a marker (at most one marker's
length minus one). Nothing is ever re-scanned except that bounded tail.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["CodeReader", "MarkerMatch", "MarkerSet", "held_back_length"]


@dataclass(frozen=True, slots=True)
class MarkerMatch:
    """Result of :meth:`MarkerSet.find`: text ends at ``text_end``; a marker may follow."""

    text_end: int
    marker: str | None = None
    marker_end: int = 0


class MarkerSet:
    """A fixed set of literal markers, searched with one compiled alternation.

    Instances are cached by their markers (they are immutable), so building one per stream is
    cheap.
    """

    _cache: dict[tuple[str, ...], MarkerSet] = {}

    def __new__(cls, markers: Iterable[str]) -> MarkerSet:
        key = tuple(sorted(set(markers)))
        cached = cls._cache.get(key)
        if cached is None:
            cached = super().__new__(cls)
            cached._setup(key)
            if len(cls._cache) < 256:
                cls._cache[key] = cached
        return cached

    def _setup(self, markers: Iterable[str]) -> None:
        unique = sorted({m for m in markers if m}, key=lambda m: (-len(m), m))
        if not unique:
            raise ValueError("a marker set needs at least one marker")
        for outer in unique:
            for inner in unique:
                # A marker strictly inside another (neither its prefix nor its suffix) would make
                # the earliest complete match depend on how much text has arrived.
                if inner != outer and inner in outer[1:-1]:
                    raise ValueError(f"marker {inner!r} occurs inside marker {outer!r}")
        self.markers: tuple[str, ...] = tuple(unique)
        # Longest first, so that a marker which is a prefix of another never wins early.
        self._pattern = re.compile("|".join(re.escape(m) for m in unique))
        self._prefixes = frozenset(m[:i] for m in unique for i in range(1, len(m)))
        self._longest = max(len(m) for m in unique)
        self.longest = self._longest

    def find(self, text: str, pos: int, final: bool) -> MarkerMatch:
        """The next marker at or after ``pos``, or how far text can be released without one.

        A marker is reported only when a longer marker could not still match at the same place,
        so the result never depends on how the text was split into deltas.
        """
        match = self._pattern.search(text, pos)
        if match is not None:
            start, marker = match.start(), match.group()
            if not final and len(marker) < self._longest:
                tail = text[start : start + self._longest]  # bounded: never copy the rest
                if len(tail) < self._longest and any(
                    m.startswith(tail) and len(m) > len(tail) for m in self.markers
                ):
                    return MarkerMatch(text_end=start)
            return MarkerMatch(text_end=start, marker=marker, marker_end=match.end())
        if final:
            return MarkerMatch(text_end=len(text))
        return MarkerMatch(
            text_end=len(text) - held_back_length(text, pos, self._prefixes, self._longest)
        )


def held_back_length(text: str, pos: int, prefixes: frozenset[str], longest: int) -> int:
    """Length of the longest tail of ``text[pos:]`` that is a proper prefix of a marker."""
    limit = min(longest - 1, len(text) - pos)
    for length in range(limit, 0, -1):
        if text[len(text) - length :] in prefixes:
            return length
    return 0


class CodeReader:
    """Gathers Python-like code up to a closing marker that lies outside string literals.

    ``'``/``"`` strings (with backslash escapes) are skipped, so a closing marker written inside
    a string value is code. A triple quote reads as an empty string followed by an opening
    quote, which tracks the same inside/outside state. One pass: plain runs are skipped by one
    regex search each, and only a possible marker prefix at the end is held back.
    """

    def __init__(self, close: str) -> None:
        self.close = close
        self._outside = MarkerSet([close, '"', "'"])
        self._inside = {q: re.compile("[" + q + "\\\\]") for q in "\"'"}
        self._parts: list[str] = []
        self._quote = ""
        self._escape = False

    def collect(self, text: str, pos: int, final: bool) -> tuple[int, bool]:
        """Consume ``text`` from ``pos``; return ``(position, closed)``. When ``closed``, the
        marker was consumed and :meth:`take` gives the code before it."""
        start, n = pos, len(text)
        while pos < n:
            if self._quote:
                if self._escape:
                    self._escape = False
                    pos += 1
                    continue
                match = self._inside[self._quote].search(text, pos)
                if match is None:
                    pos = n
                    break
                pos = match.end()
                if match.group() == "\\":
                    self._escape = True
                else:
                    self._quote = ""
                continue
            found = self._outside.find(text, pos, final)
            if found.marker is None:
                pos = found.text_end
                break
            if found.marker == self.close:
                self._parts.append(text[start : found.text_end])
                return found.marker_end, True
            self._quote = found.marker
            pos = found.marker_end
        self._parts.append(text[start:pos])
        return pos, False

    def take(self) -> str:
        """The code gathered so far; the reader starts afresh."""
        code, self._parts = "".join(self._parts), []
        self._quote, self._escape = "", False
        return code
