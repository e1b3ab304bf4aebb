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

__all__ = ["MarkerMatch", "MarkerSet", "held_back_length"]


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
                tail = text[start:]
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
