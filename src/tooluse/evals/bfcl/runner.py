"""Run a backend on BFCL-format entries and score it: accuracy per category.

::

    from tooluse.evals import load_sample, run_bfcl
    report = run_bfcl(backend, load_sample(), limit=5)
    print(report.format_table())

Each entry is one model turn through ``tooluse.run`` with no tool round allowed
(``max_tool_iters=0``): the calls the model makes are recorded, not executed. Native function
calling is used when the backend has it, else ``tool_call_parser`` reads calls from text (the
loop's priority). The calls are mapped back to BFCL's function names and scored by the AST
checker; an entry whose model request fails is scored wrong with ``error_type`` ``"backend_error"``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tooluse.evals.bfcl.checker import CheckResult
from tooluse.evals.bfcl.data import BFCLEntry
from tooluse.evals.bfcl.overall import BFCLScore, CategoryResult, bfcl_score, format_bfcl_score
from tooluse.evals.bfcl.scorer import score_bfcl_entry_with_usage
from tooluse.messages import ToolCall, Usage
from tooluse.providers.base import Backend, SamplingParams

if TYPE_CHECKING:
    from tooluse.formats.base import ToolCallParser

__all__ = [
    "BFCLReport",
    "CategoryScore",
    "EntryOutcome",
    "decode_calls",
    "run_bfcl",
    "score_entry",
]


@dataclass(frozen=True, kw_only=True)
class EntryOutcome:
    """One scored entry: the decoded calls, the verdict and the raw reply."""

    id: str
    category: str
    decoded: tuple[dict[str, dict[str, Any]], ...]
    check: CheckResult
    raw_text: str = ""
    duration: float = 0.0
    usage: Usage = field(default_factory=Usage)

    @property
    def passed(self) -> bool:
        return self.check.valid

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "category": self.category,
            "passed": self.passed,
            "error_type": self.check.error_type,
            "errors": list(self.check.errors),
            "decoded": [dict(c) for c in self.decoded],
            "raw_text": self.raw_text,
            "duration": round(self.duration, 4),
        }


@dataclass(frozen=True, kw_only=True)
class CategoryScore:
    category: str
    correct: int
    total: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


@dataclass(frozen=True, kw_only=True)
class BFCLReport:
    """Every entry's outcome, with accuracy per category.

    ``ast_accuracy`` is the unweighted mean over the call-making categories (everything but
    irrelevance), which is how BFCL summarises its AST categories; irrelevance is reported on
    its own. ``bfcl_score`` is BFCL v4's overall score of the categories run
    (:mod:`tooluse.evals.bfcl.overall`).
    """

    model: str
    outcomes: tuple[EntryOutcome, ...]

    @property
    def categories(self) -> tuple[CategoryScore, ...]:
        order: list[str] = []
        for outcome in self.outcomes:
            if outcome.category not in order:
                order.append(outcome.category)
        return tuple(
            CategoryScore(
                category=name,
                correct=sum(1 for o in self.outcomes if o.category == name and o.passed),
                total=sum(1 for o in self.outcomes if o.category == name),
            )
            for name in order
        )

    @property
    def correct(self) -> int:
        return sum(1 for o in self.outcomes if o.passed)

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def accuracy(self) -> float:
        """Share of all entries passed (micro average)."""
        return self.correct / self.total if self.total else 0.0

    @property
    def ast_accuracy(self) -> float | None:
        scores = [c.accuracy for c in self.categories if "irrelevance" not in c.category]
        return sum(scores) / len(scores) if scores else None

    @property
    def bfcl_score(self) -> BFCLScore:
        """BFCL v4's overall score of these categories (missing ones named, counted as 0)."""
        return bfcl_score(
            CategoryResult(category=c.category, correct=c.correct, total=c.total)
            for c in self.categories
        )

    @property
    def error_types(self) -> dict[str, int]:
        return dict(Counter(o.check.error_type for o in self.outcomes if not o.passed))

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "correct": self.correct,
            "total": self.total,
            "accuracy": self.accuracy,
            "ast_accuracy": self.ast_accuracy,
            "categories": {
                c.category: {"correct": c.correct, "total": c.total, "accuracy": c.accuracy}
                for c in self.categories
            },
            "bfcl_score": self.bfcl_score.to_dict(),
            "error_types": self.error_types,
            "entries": [o.to_dict() for o in self.outcomes],
        }

    def format_table(self) -> str:
        """A plain-text table: one row per category, then the summaries."""
        lines = [
            f"BFCL-style evaluation of {self.model}",
            f"{'category':<20}{'correct':>9}{'accuracy':>10}",
        ]
        for score in self.categories:
            lines.append(
                f"{score.category:<20}{f'{score.correct}/{score.total}':>9}{score.accuracy:>10.1%}"
            )
        lines.append(
            f"{'all entries':<20}{f'{self.correct}/{self.total}':>9}{self.accuracy:>10.1%}"
        )
        if self.ast_accuracy is not None:
            lines.append(f"{'AST mean (no irr.)':<20}{'':>9}{self.ast_accuracy:>10.1%}")
        lines.extend(format_bfcl_score(self.bfcl_score.to_dict()))
        for name, count in sorted(self.error_types.items()):
            lines.append(f"  error {name}: {count}")
        return "\n".join(lines)


def decode_calls(
    calls: Sequence[ToolCall], names: dict[str, str]
) -> tuple[dict[str, dict[str, Any]], ...]:
    """Calls as BFCL's decoded form ``[{function_name: arguments}]`` with BFCL's names."""
    return tuple({names.get(c.name, c.name): dict(c.arguments)} for c in calls)


def _model_label(backend: Backend) -> str:
    for attribute in ("model_name", "model", "name"):
        value = getattr(backend, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(backend).__name__


def score_entry(
    backend: Backend,
    entry: BFCLEntry,
    *,
    tool_call_parser: ToolCallParser | None = None,
    params: SamplingParams | None = None,
) -> EntryOutcome:
    """Ask the backend once and score its calls (:func:`score_bfcl_entry`, as an outcome)."""
    record, usage = score_bfcl_entry_with_usage(
        backend, entry, parser=tool_call_parser, params=params
    )
    if record["decoded"] is None and record["error"]:
        check = CheckResult.fail(record["error_type"], record["error"])
    else:
        check = CheckResult(
            valid=record["valid"],
            error_type=record["error_type"],
            errors=tuple(record.get("reason", ())),
        )
    return EntryOutcome(
        id=entry.id,
        category=entry.category,
        decoded=tuple(record["decoded"] or ()),
        check=check,
        raw_text=record["raw"],
        duration=record["latency"],
        usage=usage,
    )


def run_bfcl(
    backend: Backend,
    entries: Sequence[BFCLEntry],
    *,
    limit: int | None = None,
    tool_call_parser: ToolCallParser | None = None,
    params: SamplingParams | None = None,
    model: str | None = None,
    on_outcome: Callable[[EntryOutcome], Any] | None = None,
) -> BFCLReport:
    """Score ``backend`` on ``entries`` (the first ``limit`` of each category when given)."""
    if limit is not None and limit < 1:
        raise ValueError("limit must be at least 1")
    chosen: list[BFCLEntry] = []
    taken: Counter[str] = Counter()
    for entry in entries:
        if limit is not None and taken[entry.category] >= limit:
            continue
        taken[entry.category] += 1
        chosen.append(entry)
    outcomes = []
    for entry in chosen:
        outcome = score_entry(backend, entry, tool_call_parser=tool_call_parser, params=params)
        if on_outcome is not None:
            on_outcome(outcome)
        outcomes.append(outcome)
    return BFCLReport(model=model or _model_label(backend), outcomes=tuple(outcomes))
