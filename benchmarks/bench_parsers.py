"""Streaming tool-call parsing: tooluse's single pass against re-parsing on every delta.

Figures (all measured in this run):

- one Hermes call with a 16 KB and a 64 KB string argument, fed in 4-character deltas: total
  time (best of 5, sizes interleaved), time per delta (p50/p99), and the ratio to the baseline that re-parses the accumulated
  call text with ``partial-json-parser`` on every delta and diffs the re-serialised arguments
  (the legacy vLLM/SGLang method; at 16 KB only, it needs over a minute at 64 KB), plus the same
  method with ``jiter`` partial mode as a faster re-parse;
- 16 KB -> 64 KB scaling of tooluse (linear means about 4x);
- a complete 2 KB response with 3 calls: microseconds per ``parse``, against the regex +
  ``json.loads`` parse of the Qwen3 walkthrough;
- work growth on hostile input (markers, huge arguments, deep nesting): size ratio vs time ratio.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

from tooluse.events import ArgumentsDelta, ToolCallFinished
from tooluse.formats import get_parser
from tooluse.tools.definition import ToolDefinition, ToolParameter

DELTA = 4
TOOLS = (
    ToolDefinition(name="write_file", parameters=(ToolParameter("path"), ToolParameter("content"))),
)


def _call_text(size: int) -> str:
    body = ('lorem ipsum dolor sit amet, \\"quoted\\" {braces} [x] ünï\\n' * (size // 40 + 1))[
        :size
    ]
    body = body.rstrip("\\")
    return (
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "notes.txt", "content": "'
        + body
        + '"}}\n</tool_call>'
    )


def _deltas(text: str) -> list[str]:
    return [text[i : i + DELTA] for i in range(0, len(text), DELTA)]


def _tooluse_stream(deltas: list[str], per_delta: list[float] | None = None) -> dict[str, Any]:
    stream = get_parser("hermes").stream(TOOLS)
    args: list[str] = []
    finished: list[ToolCallFinished] = []
    clock = time.perf_counter
    for delta in [*deltas, None]:
        start = clock()
        events = stream.feed(delta) if delta is not None else stream.close()
        if per_delta is not None and delta is not None:
            per_delta.append(clock() - start)
        for event in events:
            if isinstance(event, ArgumentsDelta):
                args.append(event.text)
            elif isinstance(event, ToolCallFinished):
                finished.append(event)
    return {"arguments": "".join(args), "finished": finished}


def _reparse_baseline(deltas: list[str], loads: Callable[[str], Any]) -> str:
    """Re-parse the accumulated call on every delta and stream the new suffix of the
    re-serialised arguments (holding back the closers, as the legacy parsers do)."""
    accumulated = ""
    sent = ""
    for delta in deltas:
        accumulated += delta
        start = accumulated.rfind("<tool_call>")
        if start < 0:
            continue
        body = accumulated[start + len("<tool_call>") :].split("</tool_call>")[0].strip()
        if not body:
            continue
        try:
            obj = loads(body)
        except Exception:
            continue
        if not isinstance(obj, dict) or "arguments" not in obj:
            continue
        current = json.dumps(obj["arguments"], ensure_ascii=False)
        stable = current[:-2] if current.endswith('"}') else current[:-1]
        if len(stable) > len(sent) and stable.startswith(sent):
            sent = stable
    return sent


def _median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _streaming_figures() -> dict[str, Any]:
    out: dict[str, Any] = {}
    sizes = (16_384, 65_536)
    deltas_of = {size: _deltas(_call_text(size)) for size in sizes}
    # The machine is shared: runs of both sizes are interleaved and the best of 5 is kept, so a
    # burst of load elsewhere does not land on one size only.
    best = {size: float("inf") for size in sizes}
    for _ in range(5):
        for size in sizes:
            start = time.perf_counter()
            result = _tooluse_stream(deltas_of[size])
            best[size] = min(best[size], time.perf_counter() - start)
            text = _call_text(size)
            expected = json.loads(text.split("<tool_call>\n")[1].split("\n</tool_call>")[0])
            assert json.loads(result["arguments"]) == expected["arguments"], (
                "streamed arguments differ"
            )
            assert result["finished"][0].call.arguments == expected["arguments"]
    for size in sizes:
        per_delta: list[float] = []
        _tooluse_stream(deltas_of[size], per_delta)
        out[f"tooluse_{size // 1024}k"] = {
            "total_ms": best[size] * 1e3,
            "deltas": len(deltas_of[size]),
            "p50_us": _percentile(per_delta, 0.50) * 1e6,
            "p99_us": _percentile(per_delta, 0.99) * 1e6,
        }
    out["scaling_16k_to_64k"] = out["tooluse_64k"]["total_ms"] / out["tooluse_16k"]["total_ms"]

    deltas16 = _deltas(_call_text(16_384))
    try:
        from partial_json_parser import Allow
        from partial_json_parser import loads as pjp_loads

        seconds, sent = _median_time(
            lambda: _reparse_baseline(deltas16, lambda s: pjp_loads(s, Allow.ALL)), repeat=1
        )
        out["baseline_partial_json_parser_16k_ms"] = seconds * 1e3
        out["speedup_vs_partial_json_parser_16k"] = seconds * 1e3 / out["tooluse_16k"]["total_ms"]
    except ImportError:
        out["baseline_partial_json_parser_16k_ms"] = None
        print("partial-json-parser is not installed (make bench installs it); baseline skipped")
    import jiter

    def jiter_loads(s: str) -> Any:
        return jiter.from_json(s.encode(), partial_mode="trailing-strings")

    for size in (16_384, 65_536):
        deltas = _deltas(_call_text(size))
        seconds, _ = _median_time(lambda d=deltas: _reparse_baseline(d, jiter_loads), repeat=1)
        key = f"{size // 1024}k"
        out[f"baseline_jiter_{key}_ms"] = seconds * 1e3
        out[f"speedup_vs_jiter_{key}"] = seconds * 1e3 / out[f"tooluse_{key}"]["total_ms"]
    return out


def _three_call_response() -> str:
    calls = [
        {"name": "get_weather", "arguments": {"city": "Paris", "days": 3, "units": "metric"}},
        {"name": "search", "arguments": {"query": "best bakeries " * 40, "limit": 5}},
        {"name": "write_file", "arguments": {"path": "plan.md", "content": "- item\n" * 100}},
    ]
    # pad the last call so the response is 2 KB
    calls[2]["arguments"]["content"] += "x" * (2048 - len(_render_calls(calls)))
    return _render_calls(calls)


def _render_calls(calls: list[dict[str, Any]]) -> str:
    text = "I'll look these up.\n"
    for call in calls:
        text += "<tool_call>\n" + json.dumps(call) + "\n</tool_call>\n"
    return text


_SEED_REGEX = re.compile("<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)


def _regex_parse(text: str) -> list[Any]:
    return [json.loads(a or b) for a, b in _SEED_REGEX.findall(text)]


def _complete_parse_figures() -> dict[str, Any]:
    text = _three_call_response()
    parser = get_parser("hermes")
    assert len(parser.parse(text).tool_calls) == 3
    n = 2000
    seconds, _ = _median_time(lambda: [parser.parse(text) for _ in range(n)], repeat=3)
    base, _ = _median_time(lambda: [_regex_parse(text) for _ in range(n)], repeat=3)
    return {
        "response_bytes": len(text.encode()),
        "tooluse_parse_us": seconds / n * 1e6,
        "regex_json_loads_us": base / n * 1e6,
        "ratio_to_regex": seconds / base,
    }


def _growth(
    make: Callable[[int], str], sizes: tuple[int, int], fmt: str, delta: int, repeat: int = 3
) -> dict[str, Any]:
    parser = get_parser(fmt)
    times = []
    for size in sizes:
        text = make(size)
        pieces = [text[i : i + delta] for i in range(0, len(text), delta)]

        def run(pieces: list[str] = pieces) -> None:
            stream = parser.stream(())
            for piece in pieces:
                stream.feed(piece)
            stream.close()

        seconds, _ = _median_time(run, repeat=repeat)
        times.append(seconds)
    size_ratio = sizes[1] / sizes[0]
    time_ratio = times[1] / times[0]
    return {
        "sizes": list(sizes),
        "ms": [t * 1e3 for t in times],
        "size_ratio": size_ratio,
        "time_ratio": time_ratio,
        "linear": time_ratio < size_ratio * 2,
    }


def _hostile_figures() -> dict[str, Any]:
    return {
        "hermes_markers": _growth(
            lambda n: "<tool_call>" * n, (100_000, 1_000_000), "hermes", 4096, repeat=1
        ),
        "hermes_1mb_argument": _growth(
            lambda n: '<tool_call>{"name": "f", "arguments": {"a": "' + "x" * n + '"}}</tool_call>',
            (262_144, 1_048_576),
            "hermes",
            64,
        ),
        "hermes_deep_nesting": _growth(
            lambda n: (
                '<tool_call>{"name": "f", "arguments": {"a": '
                + "[" * n
                + "]" * n
                + "}}</tool_call>"
            ),
            (25_000, 100_000),
            "hermes",
            64,
        ),
        "qwen3_coder_large_value": _growth(
            lambda n: (
                "<tool_call>\n<function=f>\n<parameter=a>\n"
                + "y</parameter" * n
                + "\n</parameter>\n</function>\n</tool_call>"
            ),
            (10_000, 40_000),
            "qwen3_coder",
            16,
        ),
        "pythonic_large_list": _growth(
            lambda n: "[" + ", ".join(f"f(a={i}, b='x')" for i in range(n)) + "]",
            (2_000, 8_000),
            "pythonic",
            16,
        ),
    }


def main() -> dict[str, Any]:
    streaming = _streaming_figures()
    complete = _complete_parse_figures()
    hostile = _hostile_figures()

    print(f"\nStreaming one call, string argument, {DELTA}-character deltas")
    print(f"{'case':<34}{'total ms':>12}{'p50 us':>10}{'p99 us':>10}")
    for key in ("tooluse_16k", "tooluse_64k"):
        row = streaming[key]
        print(f"{key:<34}{row['total_ms']:>12.1f}{row['p50_us']:>10.2f}{row['p99_us']:>10.2f}")
    pjp = streaming.get("baseline_partial_json_parser_16k_ms")
    if pjp is not None:
        print(f"{'partial-json-parser re-parse 16k':<34}{pjp:>12.1f}")
    print(f"{'jiter re-parse 16k':<34}{streaming['baseline_jiter_16k_ms']:>12.1f}")
    print(f"{'jiter re-parse 64k':<34}{streaming['baseline_jiter_64k_ms']:>12.1f}")
    if pjp is not None:
        print(
            f"speed-up vs partial-json-parser at 16 KB: {streaming['speedup_vs_partial_json_parser_16k']:.0f}x (target >= 50x)"
        )
    print(
        f"speed-up vs jiter re-parse: 16 KB {streaming['speedup_vs_jiter_16k']:.1f}x, 64 KB {streaming['speedup_vs_jiter_64k']:.1f}x"
    )
    print(
        f"tooluse 16 KB -> 64 KB: {streaming['scaling_16k_to_64k']:.2f}x (linear is 4x; target <= 5x)"
    )

    print(f"\nComplete {complete['response_bytes']}-byte response with 3 calls")
    print(
        f"tooluse parse: {complete['tooluse_parse_us']:.1f} us; regex + json.loads: {complete['regex_json_loads_us']:.1f} us (ratio {complete['ratio_to_regex']:.1f}x)"
    )

    print("\nHostile input growth (time ratio should stay near the size ratio)")
    print(f"{'case':<28}{'sizes':>20}{'ms':>22}{'size x':>8}{'time x':>8}")
    for name, row in hostile.items():
        sizes = f"{row['sizes'][0]}->{row['sizes'][1]}"
        ms = f"{row['ms'][0]:.1f}->{row['ms'][1]:.1f}"
        print(f"{name:<28}{sizes:>20}{ms:>22}{row['size_ratio']:>8.1f}{row['time_ratio']:>8.1f}")
    return {"streaming": streaming, "complete_parse": complete, "hostile_growth": hostile}


if __name__ == "__main__":
    main()
