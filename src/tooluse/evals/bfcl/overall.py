"""BFCL v4's overall score and group scores, from per-category results, as bfcl-eval's
leaderboard computes them.

::

    score = bfcl_score([CategoryResult(category="simple_python", correct=350, total=400), ...])
    score.overall, score.group("live").accuracy, score.missing

The aggregation (bfcl-eval 2026.3.23, its leaderboard table):

- **non_live** (weight 10): ``simple`` is the unweighted mean of ``simple_python``,
  ``simple_java`` and ``simple_javascript``; the group is the unweighted mean of ``simple``,
  ``multiple``, ``parallel`` and ``parallel_multiple``;
- **live** (10): the mean of ``live_simple``, ``live_multiple``, ``live_parallel`` and
  ``live_parallel_multiple`` weighted by their entry counts;
- **irrelevance** (10): the unweighted mean of ``irrelevance`` and ``live_irrelevance``;
- **multi_turn** (30): the unweighted mean of the four multi-turn categories;
- **agentic** (40): the unweighted mean of ``web_search`` (mean of its two categories) and
  ``memory`` (mean of its three);
- **overall**: the groups' weighted mean, weights normalised to sum to 1.

``live_relevance`` is reported beside the score, not in it (as on BFCL's leaderboard). A
category that was not run counts as accuracy 0 with its full entry count (bfcl-eval shows it as
N/A but keeps the 0 in every average), so the number is bfcl-eval's; :attr:`BFCLScore.missing`
names those categories, and :attr:`BFCLScore.partial` those run on fewer entries than BFCL has
(a sample), whose own counts then weight the live mean.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AGENTIC_CATEGORIES",
    "CATEGORY_SIZES",
    "GROUP_WEIGHTS",
    "SCORED_CATEGORIES",
    "BFCLScore",
    "CategoryResult",
    "GroupScore",
    "bfcl_score",
    "category_results",
    "format_bfcl_score",
]

SIMPLE_CATEGORIES = ("simple_python", "simple_java", "simple_javascript")
NON_LIVE_CATEGORIES = (*SIMPLE_CATEGORIES, "multiple", "parallel", "parallel_multiple")
LIVE_CATEGORIES = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
IRRELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance")
MULTI_TURN_CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
WEB_SEARCH_CATEGORIES = ("web_search_base", "web_search_no_snippet")
MEMORY_CATEGORIES = ("memory_kv", "memory_vector", "memory_rec_sum")
AGENTIC_CATEGORIES = (*WEB_SEARCH_CATEGORIES, *MEMORY_CATEGORIES)
RELEVANCE_CATEGORY = "live_relevance"
#: Reported apart from the score (its own figures), so neither scored nor "unscored".
SEPARATE_CATEGORIES = ("format_sensitivity",)
_SHOWN_APART = (RELEVANCE_CATEGORY, *SEPARATE_CATEGORIES)

#: The groups of the overall score and their weights, in bfcl-eval's order.
GROUP_WEIGHTS: dict[str, int] = {
    "non_live": 10,
    "live": 10,
    "irrelevance": 10,
    "multi_turn": 30,
    "agentic": 40,
}
_GROUP_CATEGORIES: dict[str, tuple[str, ...]] = {
    "non_live": NON_LIVE_CATEGORIES,
    "live": LIVE_CATEGORIES,
    "irrelevance": IRRELEVANCE_CATEGORIES,
    "multi_turn": MULTI_TURN_CATEGORIES,
    "agentic": AGENTIC_CATEGORIES,
}
#: Every category the overall score averages.
SCORED_CATEGORIES = tuple(c for cats in _GROUP_CATEGORIES.values() for c in cats)

#: Entries per category in BFCL v4 (bfcl-eval 2026.3.23): the count a category that was not
#: run is given, and the size a run is compared with to call it partial.
CATEGORY_SIZES: dict[str, int] = {
    "simple_python": 400,
    "simple_java": 100,
    "simple_javascript": 50,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "irrelevance": 240,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "live_irrelevance": 884,
    "live_relevance": 16,
    "multi_turn_base": 200,
    "multi_turn_miss_func": 200,
    "multi_turn_miss_param": 200,
    "multi_turn_long_context": 200,
    "memory_kv": 155,
    "memory_vector": 155,
    "memory_rec_sum": 155,
    "web_search_base": 100,
    "web_search_no_snippet": 100,
}


@dataclass(frozen=True, kw_only=True)
class CategoryResult:
    """How many entries of one category were right, of how many run."""

    category: str
    correct: int
    total: int

    def __post_init__(self) -> None:
        if self.total < 0 or not 0 <= self.correct <= self.total:
            raise ValueError(
                f"category {self.category!r}: need 0 <= correct <= total, "
                f"got {self.correct}/{self.total}"
            )

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


@dataclass(frozen=True, kw_only=True)
class _Mean:
    """An accuracy with the entry count behind it (bfcl-eval carries both up the groups)."""

    accuracy: float
    count: int


def _unweighted(parts: Iterable[_Mean]) -> _Mean:
    items = list(parts)
    return _Mean(
        accuracy=sum(p.accuracy for p in items) / len(items), count=sum(p.count for p in items)
    )


def _weighted(parts: Iterable[_Mean]) -> _Mean:
    items = list(parts)
    count = sum(p.count for p in items)
    return _Mean(accuracy=sum(p.accuracy * p.count for p in items) / count, count=count)


@dataclass(frozen=True, kw_only=True)
class GroupScore:
    """One group of the overall score: its accuracy, weight, categories and the missing ones;
    ``parts`` holds the intermediate means (``simple`` of non_live; ``web_search`` and
    ``memory`` of agentic)."""

    name: str
    accuracy: float
    weight: int
    categories: tuple[str, ...]
    missing: tuple[str, ...]
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.missing

    def to_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "weight": self.weight,
            "categories": list(self.categories),
            "missing": list(self.missing),
            "parts": dict(self.parts),
        }


@dataclass(frozen=True, kw_only=True)
class BFCLScore:
    """BFCL v4's overall score of one results set, its groups, and what it lacks.

    ``missing``: scored categories with no result (each counted as 0, as bfcl-eval does);
    ``partial``: categories run on fewer entries than BFCL has; ``unscored``: categories given
    that the score does not use (``live_relevance`` is shown as ``relevance`` instead).
    """

    overall: float
    groups: tuple[GroupScore, ...]
    categories: dict[str, CategoryResult]
    missing: tuple[str, ...]
    partial: tuple[str, ...]
    unscored: tuple[str, ...]
    relevance: float | None

    @property
    def complete(self) -> bool:
        """Every scored category was run in full: the number is BFCL's overall score."""
        return not self.missing and not self.partial

    def group(self, name: str) -> GroupScore:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(f"no group {name!r}; groups: {', '.join(GROUP_WEIGHTS)}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall,
            "complete": self.complete,
            "groups": {g.name: g.to_dict() for g in self.groups},
            "relevance": self.relevance,
            "missing": list(self.missing),
            "partial": list(self.partial),
            "unscored": list(self.unscored),
        }


def _as_results(
    results: Iterable[CategoryResult] | Mapping[str, tuple[int, int]],
) -> dict[str, CategoryResult]:
    if isinstance(results, Mapping):
        items = [CategoryResult(category=k, correct=c, total=t) for k, (c, t) in results.items()]
    else:
        items = list(results)
    out: dict[str, CategoryResult] = {}
    for item in items:
        if item.category in out:
            raise ValueError(f"category {item.category!r} is given twice")
        if item.total:  # a category with no entries run is a missing one
            out[item.category] = item
    return out


def _groups(scores: dict[str, _Mean]) -> dict[str, tuple[_Mean, dict[str, float]]]:
    """Each group's mean and its intermediate means, by bfcl-eval's rules."""
    simple = _unweighted(scores[c] for c in SIMPLE_CATEGORIES)
    non_live = _unweighted([simple, *(scores[c] for c in NON_LIVE_CATEGORIES[3:])])
    web_search = _unweighted(scores[c] for c in WEB_SEARCH_CATEGORIES)
    memory = _unweighted(scores[c] for c in MEMORY_CATEGORIES)
    return {
        "non_live": (non_live, {"simple": simple.accuracy}),
        "live": (_weighted(scores[c] for c in LIVE_CATEGORIES), {}),
        "irrelevance": (_unweighted(scores[c] for c in IRRELEVANCE_CATEGORIES), {}),
        "multi_turn": (_unweighted(scores[c] for c in MULTI_TURN_CATEGORIES), {}),
        "agentic": (
            _unweighted([web_search, memory]),
            {"web_search": web_search.accuracy, "memory": memory.accuracy},
        ),
    }


def bfcl_score(
    results: Iterable[CategoryResult] | Mapping[str, tuple[int, int]],
) -> BFCLScore:
    """The overall score of per-category results (``CategoryResult``s or
    ``{category: (correct, total)}``), bfcl-eval's way (see the module)."""
    given = _as_results(results)
    scores = {
        c: _Mean(accuracy=given[c].accuracy, count=given[c].total)
        if c in given
        else _Mean(accuracy=0.0, count=CATEGORY_SIZES[c])
        for c in SCORED_CATEGORIES
    }
    means = _groups(scores)
    weight_sum = sum(GROUP_WEIGHTS.values())
    groups = tuple(
        GroupScore(
            name=name,
            accuracy=means[name][0].accuracy,
            weight=weight,
            categories=_GROUP_CATEGORIES[name],
            missing=tuple(c for c in _GROUP_CATEGORIES[name] if c not in given),
            parts=means[name][1],
        )
        for name, weight in GROUP_WEIGHTS.items()
    )
    overall = sum(g.accuracy * g.weight / weight_sum for g in groups)
    relevance = given.get(RELEVANCE_CATEGORY)
    return BFCLScore(
        overall=overall,
        groups=groups,
        categories=given,
        missing=tuple(c for c in SCORED_CATEGORIES if c not in given),
        partial=tuple(
            c for c, r in given.items() if c in CATEGORY_SIZES and r.total < CATEGORY_SIZES[c]
        ),
        unscored=tuple(c for c in given if c not in (*SCORED_CATEGORIES, *_SHOWN_APART)),
        relevance=relevance.accuracy if relevance is not None else None,
    )


def category_results(
    records: Iterable[Mapping[str, Any]], *, verdict: str = "valid"
) -> list[CategoryResult]:
    """Per-category counts of result records (``category`` and a true/false ``verdict``
    field; an entry that failed to run counts as wrong), in first-seen order."""
    counts: dict[str, list[int]] = {}
    for record in records:
        count = counts.setdefault(str(record.get("category", "")), [0, 0])
        count[0] += bool(record.get(verdict))
        count[1] += 1
    return [CategoryResult(category=c, correct=n[0], total=n[1]) for c, n in counts.items()]


def format_bfcl_score(score: Mapping[str, Any]) -> list[str]:
    """Lines of text for a score's :meth:`BFCLScore.to_dict` (a summary's ``bfcl_score``):
    the overall number, each group with its weight and missing categories, what is partial."""
    missing = list(score.get("missing") or ())
    if missing:
        note = f"{len(missing)} of {len(SCORED_CATEGORIES)} categories not run, counted as 0"
    elif score.get("partial"):
        note = "every category run, some on part of their entries"
    else:
        note = "every category run in full"
    lines = [f"BFCL v4 overall score: {score['overall']:.1%} ({note})"]
    for name, group in (score.get("groups") or {}).items():
        line = f"  {name:<12}({group['weight']:>2})  {group['accuracy']:>6.1%}"
        if group.get("missing"):
            gone = group["missing"]
            line += "  missing: " + (
                "all" if len(gone) == len(group["categories"]) else ", ".join(gone)
            )
        lines.append(line)
    if score.get("relevance") is not None:
        lines.append(f"  relevance (not in the score): {score['relevance']:.1%}")
    if score.get("partial"):
        lines.append("  run on part of their entries: " + ", ".join(score["partial"]))
    if score.get("unscored"):
        lines.append("  not BFCL v4 categories (not scored): " + ", ".join(score["unscored"]))
    return lines
