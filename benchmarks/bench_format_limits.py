"""Every text format on large and many-call outputs: time, peak memory and scaling.

Figures (all measured in this run, per format; times are CPU time of this process):

- one call with a 1 MB and a 10 MB string argument, parsed whole: time, and peak memory
  (``tracemalloc``, a separate run) as a multiple of the output's size;
- scaling, the baseline being the same format on a ten times smaller input in this run:
  10x the calls (200 -> 2000, parsed whole and streamed in 256-character deltas), 10x the
  argument size (100 KB -> 1 MB) and 10x the parameters of one call (500 -> 5000). Linear
  time gives about 10x; anything that re-scans or copies the rest of the output per marker
  gives far more (before this benchmark existed: 16-42x in ten formats, and 170-200 MB for a
  1 MB argument in five).

The outputs are written by ``tests/formats/samples.py`` (the writers the tests use); formats it
has no writer for are listed as skipped.
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.formats.samples

from tests.formats.samples import TOOLS, WRITERS, render  # noqa: E402

from tooluse.formats import available_formats, get_parser  # noqa: E402

# A value with the characters readers treat specially: quotes, escapes, brackets, non-ASCII.
UNIT = 'lorem {ipsum} [dolor], "sit" \\ amet: (x) ünï €\n'
MB = 1_000_000
BASE_CALLS = [
    ("get_weather", {"city": "Paris", "days": 3}),
    ("search", {"query": "bakeries", "tags": ["x", "y"]}),
]


def _best(fn: Callable[[], Any], repeat: int) -> float:
    """Best CPU time of this process over ``repeat`` runs: other work on a shared machine
    does not count, so the ratios hold under load."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def _peak(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _size(text: str) -> int:
    """Bytes Python holds for the text (1, 2 or 4 per character)."""
    widest = max(map(ord, text), default=0)
    return len(text) * (1 if widest < 256 else 2 if widest < 65536 else 4)


def _big_argument(fmt: str, chars: int) -> str:
    return render(fmt, [("search", {"query": UNIT * (chars // len(UNIT))})])


def _streamed(fmt: str, text: str, delta: int = 256) -> Callable[[], Any]:
    parser = get_parser(fmt)
    pieces = [text[i : i + delta] for i in range(0, len(text), delta)]

    def run() -> None:
        stream = parser.stream(TOOLS)
        for piece in pieces:
            stream.feed(piece)
        stream.close()

    return run


def _ratio(fmt: str, small: str, large: str, streamed: bool = False) -> dict[str, float]:
    parser = get_parser(fmt)
    runs = (
        (_streamed(fmt, small), _streamed(fmt, large))
        if streamed
        else (lambda: parser.parse(small, TOOLS), lambda: parser.parse(large, TOOLS))
    )
    t_small = _best(runs[0], 3)
    t_large = _best(runs[1], 2)
    return {"small_ms": t_small * 1e3, "large_ms": t_large * 1e3, "ratio": t_large / t_small}


def _format_figures(fmt: str) -> dict[str, Any]:
    parser = get_parser(fmt)
    out: dict[str, Any] = {}
    for label, chars in (("1mb", MB), ("10mb", 10 * MB)):
        text = _big_argument(fmt, chars)
        results: list[Any] = []
        seconds = _best(lambda t=text: results.append(parser.parse(t, TOOLS)), 1)
        calls = results[0].tool_calls
        assert [c.name for c in calls] == ["search"], (fmt, results[0].errors[:1])
        results.clear()
        peak = _peak(lambda t=text: parser.parse(t, TOOLS))
        out[f"argument_{label}"] = {
            "ms": seconds * 1e3,
            "peak_mb": peak / MB,
            "peak_per_input_byte": peak / _size(text),
        }
    calls_small, calls_large = render(fmt, BASE_CALLS * 100), render(fmt, BASE_CALLS * 1000)
    assert len(parser.parse(calls_large, TOOLS).tool_calls) == 2000, fmt
    out["calls_x10"] = _ratio(fmt, calls_small, calls_large)
    out["calls_x10_streamed"] = _ratio(fmt, calls_small, calls_large, streamed=True)
    out["argument_x10"] = _ratio(fmt, _big_argument(fmt, 100_000), _big_argument(fmt, MB))
    params = [("search", {f"k{i}": f"v{i}" for i in range(n)}) for n in (500, 5000)]
    out["parameters_x10"] = _ratio(fmt, render(fmt, params[:1]), render(fmt, params[1:]))
    return out


def main() -> dict[str, Any]:
    figures: dict[str, Any] = {}
    skipped = sorted(set(available_formats()) - set(WRITERS))
    print("\nTime and peak memory per format (peak: tracemalloc, x = per byte of output)")
    print(
        f"{'format':<16}{'1 MB ms':>9}{'peak x':>8}{'10 MB ms':>10}{'peak x':>8}"
        f"{'calls x10':>11}{'streamed':>10}{'arg x10':>9}{'params x10':>12}"
    )
    worst = 0.0
    for fmt in sorted(WRITERS):
        row = _format_figures(fmt)
        figures[fmt] = row
        ratios = [row[k]["ratio"] for k in ("calls_x10", "calls_x10_streamed", "argument_x10")]
        ratios.append(row["parameters_x10"]["ratio"])
        worst = max(worst, *ratios)
        one, ten = row["argument_1mb"], row["argument_10mb"]
        print(
            f"{fmt:<16}{one['ms']:>9.0f}{one['peak_per_input_byte']:>8.1f}{ten['ms']:>10.0f}"
            f"{ten['peak_per_input_byte']:>8.1f}"
            + "".join(f"{r:>10.1f}x" for r in ratios[:1])
            + f"{ratios[1]:>9.1f}x{ratios[2]:>8.1f}x{ratios[3]:>11.1f}x",
            flush=True,
        )
    print(f"worst 10x ratio: {worst:.1f}x (linear is about 10x)")
    if skipped:
        print("no sample writer (not measured): " + ", ".join(skipped))
    return {"formats": figures, "worst_ratio": worst, "skipped": skipped}


if __name__ == "__main__":
    main()
