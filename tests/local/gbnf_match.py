"""A small GBNF recognizer for tests: does a grammar accept a text?

It reads the subset the compiler writes (string literals, character classes, rule references,
groups, ``|``, ``?``, ``*``, ``+``, ``{m,n}``) and answers by computing, for each rule and
position, the set of positions where a match can end. Slow but exact; test texts are short.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-"}


def _escape(body: str, i: int) -> tuple[str, int]:
    nxt = body[i + 1]
    if nxt == "x":
        return chr(int(body[i + 2 : i + 4], 16)), i + 4
    if nxt == "u":
        return chr(int(body[i + 2 : i + 6], 16)), i + 6
    return _ESCAPES.get(nxt, nxt), i + 2


class _Parser:
    def __init__(self, body: str) -> None:
        self.s = body
        self.i = 0

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def alt(self) -> Any:
        options = [self.seq()]
        self.ws()
        while self.i < len(self.s) and self.s[self.i] == "|":
            self.i += 1
            options.append(self.seq())
            self.ws()
        return ("alt", tuple(options))

    def seq(self) -> Any:
        items = []
        while True:
            self.ws()
            if self.i >= len(self.s) or self.s[self.i] in "|)":
                return ("seq", tuple(items))
            atom = self.atom()
            low, high = 1, 1
            if self.i < len(self.s) and self.s[self.i] in "?*+{":
                c = self.s[self.i]
                if c == "?":
                    low, high, self.i = 0, 1, self.i + 1
                elif c == "*":
                    low, high, self.i = 0, None, self.i + 1
                elif c == "+":
                    low, high, self.i = 1, None, self.i + 1
                else:
                    end = self.s.index("}", self.i)
                    spec = self.s[self.i + 1 : end]
                    self.i = end + 1
                    if "," in spec:
                        a, b = spec.split(",")
                        low, high = int(a), (int(b) if b.strip() else None)
                    else:
                        low = high = int(spec)
            items.append((atom, low, high))

    def atom(self) -> Any:
        c = self.s[self.i]
        if c == '"':
            out, self.i = "", self.i + 1
            while self.s[self.i] != '"':
                if self.s[self.i] == "\\":
                    ch, self.i = _escape(self.s, self.i)
                else:
                    ch, self.i = self.s[self.i], self.i + 1
                out += ch
            self.i += 1
            return ("lit", out)
        if c == "[":
            self.i += 1
            negated = self.s[self.i] == "^"
            if negated:
                self.i += 1
            ranges = []
            while self.s[self.i] != "]":
                if self.s[self.i] == "\\":
                    lo, self.i = _escape(self.s, self.i)
                else:
                    lo, self.i = self.s[self.i], self.i + 1
                hi = lo
                if self.s[self.i] == "-" and self.s[self.i + 1] != "]":
                    self.i += 1
                    if self.s[self.i] == "\\":
                        hi, self.i = _escape(self.s, self.i)
                    else:
                        hi, self.i = self.s[self.i], self.i + 1
                ranges.append((lo, hi))
            self.i += 1
            return ("cls", negated, tuple(ranges))
        if c == "(":
            self.i += 1
            inner = self.alt()
            self.ws()
            assert self.s[self.i] == ")", self.s[self.i :]
            self.i += 1
            return inner
        start = self.i
        while self.i < len(self.s) and (self.s[self.i].isalnum() or self.s[self.i] == "-"):
            self.i += 1
        assert self.i > start, f"unexpected {self.s[self.i :]!r}"
        return ("ref", self.s[start : self.i])


def parse_gbnf(gbnf: str) -> dict[str, Any]:
    rules = {}
    for line in gbnf.strip().splitlines():
        name, _, body = line.partition(" ::= ")
        rules[name.strip()] = _Parser(body).alt()
    return rules


def accepts(gbnf: str, text: str, rule: str = "root") -> bool:
    """Whether ``rule`` of ``gbnf`` matches the whole of ``text``."""
    rules = parse_gbnf(gbnf)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))

    @cache
    def match_rule(name: str, pos: int) -> frozenset[int]:
        return match(rules[name], pos)

    def match(node: Any, pos: int) -> frozenset[int]:
        kind = node[0]
        if kind == "lit":
            return frozenset({pos + len(node[1])}) if text.startswith(node[1], pos) else frozenset()
        if kind == "cls":
            if pos >= len(text):
                return frozenset()
            ch = text[pos]
            inside = any(lo <= ch <= hi for lo, hi in node[2])
            return frozenset({pos + 1}) if inside != node[1] else frozenset()
        if kind == "ref":
            return match_rule(node[1], pos)
        if kind == "alt":
            out: set[int] = set()
            for option in node[1]:
                out |= match(option, pos)
            return frozenset(out)
        # seq
        current = {pos}
        for atom, low, high in node[1]:
            reached: set[int] = set(current) if low == 0 else set()
            frontier = set(current)
            count = 0
            while frontier and (high is None or count < high):
                count += 1
                nxt: set[int] = set()
                for p in frontier:
                    nxt |= match(atom, p)
                if count >= low:
                    new = nxt - reached
                    reached |= nxt
                    frontier = new if high is None else nxt
                else:
                    frontier = nxt
                if high is None and not frontier:
                    break
            current = reached
            if not current:
                return frozenset()
        return frozenset(current)

    return len(text) in match_rule(rule, 0)
