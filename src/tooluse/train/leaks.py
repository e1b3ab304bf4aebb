"""The leak check: does a training prompt hold (nearly) a test item's text?

::

    index = LeakIndex(items, n=8)                 # every test split's prompts
    index.find("What's the area of a circle with a radius of 10?")   # (item, 1.0) or None

Texts are compared as word n-grams (lowercased words and punctuation marks as tokens, numbers
kept). A test item leaks into a training text when at least ``threshold`` of the item's
n-grams occur in it: the share is of the test item, so a request copied into a longer prompt
(the yes/no relevance question, a conversation's history) is found as well as a copy of it.

Two refinements keep templates from counting. An n-gram found in at least ``common_share`` of
one test source's items (and at least :data:`MIN_COMMON` of them) is that generator's wording
(``State the final answer to the following arithmetic problem:``), not an item, and is not
counted; so two generated tasks leak only when their own numbers and words match. A text
shorter than ``n`` tokens (or made of template n-grams only) is compared whole: it leaks when
it equals the item.

Why n = 8 (the default): the requests compared here are short (BFCL's run 10-40 words). The
13-grams used to check long documents for contamination leave a 12-word request with no
n-gram at all, and a paraphrase that changes every tenth word shares none; with 8, BFCL's
identical requests across categories (``simple_python`` and ``multiple``, the multi-turn
categories' shared first turns) and the edited copies (``multi_turn_miss_param`` leaves a
detail out of the request) are found, while unrelated requests almost never share 8 tokens in
a row.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["MIN_COMMON", "Leak", "LeakIndex", "TestItem", "tokens"]

_TOKEN = re.compile(r"\w+|[^\w\s]")
#: The fewest items of a test source that make an n-gram its template's wording.
MIN_COMMON = 3

Gram = tuple[str, ...]


def tokens(text: str) -> list[str]:
    """The text's tokens: lowercased words and punctuation marks."""
    return _TOKEN.findall(text.lower())


def _grams(words: Sequence[str], n: int) -> set[Gram]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@dataclass(frozen=True, kw_only=True)
class TestItem:
    """One test item's text: which test split (``source``) and which item (``id``)."""

    source: str
    id: str
    text: str


@dataclass(frozen=True, kw_only=True)
class Leak:
    """A training text that holds a test item: ``share`` of the item's n-grams are in it."""

    train_source: str
    train_text: str
    item: TestItem
    share: float

    def describe(self, width: int = 70) -> str:
        """One line: the training example, the test item, the share."""
        text = " ".join(self.train_text.split())
        shown = text if len(text) <= width else text[: width - 3] + "..."
        return (
            f"{self.train_source} holds {self.item.source}/{self.item.id} "
            f"({self.share:.0%} of its {len(tokens(self.item.text))}-token text): {shown!r}"
        )


class LeakIndex:
    """The test items' n-grams, their template wording set apart (see the module)."""

    def __init__(
        self,
        items: Iterable[TestItem],
        *,
        n: int = 8,
        threshold: float = 0.5,
        common_share: float = 0.05,
    ) -> None:
        if n < 1 or not 0 < threshold <= 1:
            raise ValueError("n must be at least 1 and threshold in (0, 1]")
        self.n = n
        self.threshold = threshold
        self.items: list[TestItem] = []
        unique: set[tuple[str, str]] = set()
        for item in items:
            if item.text.strip() and (item.source, item.text) not in unique:
                unique.add((item.source, item.text))
                self.items.append(item)
        grams = [_grams(tokens(item.text), n) for item in self.items]
        common = self._common(grams, common_share)
        self._grams = [
            g - common.get(item.source, set()) for g, item in zip(grams, self.items, strict=True)
        ]
        self._by_gram: dict[Gram, list[int]] = defaultdict(list)
        self._whole: dict[Gram, list[int]] = defaultdict(list)
        for number, (item, own) in enumerate(zip(self.items, self._grams, strict=True)):
            for gram in own:
                self._by_gram[gram].append(number)
            if not own:  # short, or template only: compared whole
                self._whole[tuple(tokens(item.text))].append(number)

    def _common(self, grams: Sequence[set[Gram]], share: float) -> dict[str, set[Gram]]:
        """Per test source, the n-grams of its template (in ``share`` of its items or more)."""
        by_source: dict[str, Counter[Gram]] = defaultdict(Counter)
        sizes: Counter[str] = Counter()
        for item, own in zip(self.items, grams, strict=True):
            by_source[item.source].update(own)
            sizes[item.source] += 1
        return {
            source: {
                gram
                for gram, count in counts.items()
                if count >= max(MIN_COMMON, share * sizes[source])
            }
            for source, counts in by_source.items()
        }

    def find(self, text: str) -> tuple[TestItem, float] | None:
        """The test item ``text`` holds most of, when that share reaches the threshold."""
        words = tokens(text)
        for number in self._whole.get(tuple(words), ()):
            return self.items[number], 1.0
        hits: Counter[int] = Counter()
        for gram in _grams(words, self.n):
            for number in self._by_gram.get(gram, ()):
                hits[number] += 1
        best: tuple[TestItem, float] | None = None
        for number, count in hits.items():
            share = count / len(self._grams[number])
            if share >= self.threshold and (best is None or share > best[1]):
                best = (self.items[number], share)
        return best

    def leaks(self, texts: Iterable[tuple[str, str]]) -> list[Leak]:
        """The leaks among ``(source, text)`` training texts."""
        found = []
        for source, text in texts:
            hit = self.find(text)
            if hit is not None:
                found.append(Leak(train_source=source, train_text=text, item=hit[0], share=hit[1]))
        return found
