"""The embedded local model: speed, grammar cost, tool-call validity and the auto-mode decision.

All baselines are measured in the same run:

- generation tokens/s through ``LlamaCppBackend`` vs ``llama_cpp.Llama.create_completion`` on the
  same prompt (overhead target <= 5 %);
- constrained vs unconstrained generation on the same tool prompt, for tooluse's lazy grammar
  check and for llama.cpp's own grammar sampler (target <= 15 % slower);
- tool-call validity on 32 questions over 4 tools, constrained vs unconstrained;
- auto mode: right call/no-call share on a mixed set of 36 questions, for each decider; the
  thresholds were picked on a separate tuning set (other tools, other questions), whose figures
  are reported too.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import jsonschema

from tooluse import ChatMessage, SamplingParams, ToolDefinition, ToolParameter

WEATHER = ToolDefinition(
    name="get_weather",
    description="Get the current weather for a city",
    parameters=(
        ToolParameter("city", description="City name"),
        ToolParameter(
            "unit", enum=("celsius", "fahrenheit"), required=False, description="Temperature unit"
        ),
    ),
)
TIME = ToolDefinition(
    name="get_time",
    description="Get the current local time in a timezone",
    parameters=(ToolParameter("timezone", description="IANA timezone name, e.g. Europe/Paris"),),
)
CALC = ToolDefinition(
    name="calculate",
    description="Evaluate an arithmetic expression",
    parameters=(ToolParameter("expression", description="e.g. 2 * (3 + 4)"),),
)
CURRENCY = ToolDefinition(
    name="convert_currency",
    description="Convert an amount of money between currencies",
    parameters=(
        ToolParameter("amount", type="number", description="Amount to convert"),
        ToolParameter("from_currency", description="ISO code, e.g. USD"),
        ToolParameter("to_currency", description="ISO code, e.g. EUR"),
    ),
)
TOOLS = [WEATHER, TIME, CALC, CURRENCY]


def has(key: str, *words: str) -> Callable[[dict[str, Any]], bool]:
    """A check that argument ``key`` mentions one of ``words`` (case-insensitive)."""

    def check(args: dict[str, Any]) -> bool:
        value = str(args.get(key, "")).lower()
        return any(w.lower() in value for w in words)

    return check


def amount(value: float) -> Callable[[dict[str, Any]], bool]:
    return lambda args: isinstance(args.get("amount"), (int, float)) and args["amount"] == value


# (question, expected tool, argument check)
TOOL_QUESTIONS: list[tuple[str, str, Callable[[dict[str, Any]], bool]]] = [
    ("What's the weather in Paris?", "get_weather", has("city", "paris")),
    ("Is it raining in London right now?", "get_weather", has("city", "london")),
    ("How hot is it in Phoenix in fahrenheit?", "get_weather", has("city", "phoenix")),
    ("Tell me the temperature in Berlin.", "get_weather", has("city", "berlin")),
    ("Weather forecast for Madrid please.", "get_weather", has("city", "madrid")),
    ("Is it cold in Moscow now?", "get_weather", has("city", "moscow")),
    ("Should I bring an umbrella in Seattle today?", "get_weather", has("city", "seattle")),
    ("Wetter in München bitte, in Celsius", "get_weather", has("city", "münchen", "munich")),
    ("What time is it in Tokyo?", "get_time", has("timezone", "tokyo")),
    ("Current time in New York?", "get_time", has("timezone", "new_york", "new york")),
    ("What's the local time in Sydney?", "get_time", has("timezone", "sydney")),
    ("What time is it in Europe/Berlin?", "get_time", has("timezone", "berlin")),
    ("Is it evening in Los Angeles yet?", "get_time", has("timezone", "los_angeles", "angeles")),
    ("Give me the current time in London.", "get_time", has("timezone", "london")),
    ("What hour is it in Asia/Kolkata?", "get_time", has("timezone", "kolkata")),
    ("Time in Paris now?", "get_time", has("timezone", "paris")),
    ("What is 1234 * 5678?", "calculate", has("expression", "1234")),
    ("Calculate 15% of 240.", "calculate", has("expression", "240")),
    ("What is the square root of 144 plus 7?", "calculate", has("expression", "144")),
    ("Compute (17 + 25) / 6.", "calculate", has("expression", "17")),
    ("Add 345 and 789.", "calculate", has("expression", "345")),
    ("What is 2 to the power of 10?", "calculate", has("expression", "2")),
    ("How much is 81 divided by 9?", "calculate", has("expression", "81")),
    ("Multiply 12 by 12.", "calculate", has("expression", "12")),
    ("Convert 100 US dollars to euros.", "convert_currency", amount(100)),
    ("How many yen is 50 pounds?", "convert_currency", amount(50)),
    ("How much is 20 euros in dollars?", "convert_currency", amount(20)),
    ("Exchange 300 CHF to USD.", "convert_currency", amount(300)),
    ("Convert 75 CAD into EUR.", "convert_currency", amount(75)),
    ("What is 1000 INR in GBP?", "convert_currency", amount(1000)),
    ("I have 60 dollars, how many euros is that?", "convert_currency", amount(60)),
    ("Change 250 euros to Swiss francs.", "convert_currency", amount(250)),
]
NO_TOOL_QUESTIONS = [
    "What is the capital of France?",
    "Write a haiku about autumn.",
    "Who wrote Romeo and Juliet?",
    "Hello, how are you?",
    "Tell me a joke.",
    "What is photosynthesis?",
    "Translate 'thank you' into Spanish.",
    "Give me three tips for better sleep.",
    "What does HTML stand for?",
    "Explain what a neural network is.",
    "Who painted the Mona Lisa?",
    "Summarize the plot of Cinderella.",
    "What is your name?",
    "Recommend a good book.",
    "Why is the sky blue?",
    "Thanks, that's all!",
]
# Mixed set for auto mode: 20 needing a tool (from above) + 16 not.
AUTO_SET = [(q, True) for i, (q, _, _) in enumerate(TOOL_QUESTIONS) if i % 8 < 5]
AUTO_SET += [(q, False) for q in NO_TOOL_QUESTIONS]

# Tuning set (thresholds were chosen here): other tools, other questions.
TUNING_TOOLS = [
    ToolDefinition(
        name="send_email",
        description="Send an email to a person",
        parameters=(ToolParameter("to"), ToolParameter("body")),
    ),
    ToolDefinition(
        name="get_stock_price",
        description="Get the latest price of a stock",
        parameters=(ToolParameter("symbol"),),
    ),
    ToolDefinition(
        name="search_flights",
        description="Search flights between two cities on a date",
        parameters=(ToolParameter("origin"), ToolParameter("destination"), ToolParameter("date")),
    ),
]
TUNING_SET = [
    ("Email Alice that the meeting moved to 3pm.", True),
    ("Send a message to bob@example.com saying hi.", True),
    ("What's Apple's stock price?", True),
    ("How is TSLA trading today?", True),
    ("Find me a flight from Paris to Rome on May 3.", True),
    ("Are there flights from Boston to Denver tomorrow?", True),
    ("Tell my boss by email that I'm sick.", True),
    ("Price of Microsoft shares?", True),
    ("What is the tallest mountain in the world?", False),
    ("Write a limerick about a cat.", False),
    ("How do I boil an egg?", False),
    ("Who discovered penicillin?", False),
    ("Good morning!", False),
    ("What is the meaning of life?", False),
    ("Explain gravity to a child.", False),
    ("List three primary colors.", False),
]


def _median_rate(samples: list[float]) -> float:
    return round(statistics.median(samples), 1)


def bench_speed(backend: Any, llama_cpp: Any) -> dict[str, Any]:
    """Generation tokens/s: backend vs llama-cpp-python directly, same prompt, greedy."""
    messages = [ChatMessage.user("Write a long story about a dragon who learns to read.")]
    prompt = backend.render(messages)
    direct = llama_cpp.Llama(
        model_path=str(backend.model_path),
        n_ctx=backend.n_ctx,
        n_threads=backend._threads,
        verbose=False,
    )
    params = SamplingParams(max_tokens=128, temperature=0.0)
    ours: list[float] = []
    theirs: list[float] = []
    for round_ in range(4):
        started = time.perf_counter()
        result = backend.generate(messages, params)
        ours_rate = result.usage.output_tokens / (time.perf_counter() - started)
        started = time.perf_counter()
        out = direct.create_completion(prompt, max_tokens=128, temperature=0.0)
        theirs_rate = out["usage"]["completion_tokens"] / (time.perf_counter() - started)
        if round_:  # the first round fills the prompt caches
            ours.append(ours_rate)
            theirs.append(theirs_rate)
    direct.close()
    a, b = _median_rate(ours), _median_rate(theirs)
    return {
        "backend_tokens_per_s": a,
        "llama_cpp_direct_tokens_per_s": b,
        "overhead_percent": round((b - a) / b * 100, 1),
    }


def bench_grammar(backend: Any, llama_cpp: Any) -> dict[str, Any]:
    """Same tool prompt: unconstrained vs tooluse's lazy grammar vs llama.cpp's grammar."""
    from tooluse.local.decoding import DecodeSettings

    messages = [ChatMessage.user("What's the weather in Paris in celsius?")]
    prompt_text = backend.render(messages, TOOLS)
    tokens = backend.loop.tokenize(prompt_text)
    gbnf = backend.call_grammar_text(TOOLS)
    ours = backend.grammar_for(TOOLS, False)
    native = llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)
    rates: dict[str, list[float]] = {"free": [], "lazy": [], "native": []}
    n_tokens = 0
    for round_ in range(4):
        started = time.perf_counter()
        steps = list(backend.loop.run(tokens, DecodeSettings(max_tokens=64), ours))
        lazy = len(steps) / (time.perf_counter() - started)
        n_tokens = len(steps)
        started = time.perf_counter()
        free = list(backend.loop.run(tokens, DecodeSettings(max_tokens=n_tokens), None))
        free_rate = len(free) / (time.perf_counter() - started)
        started = time.perf_counter()
        out = backend.llm.create_completion(
            prompt_text, max_tokens=n_tokens + 4, temperature=0.0, grammar=native
        )
        native_rate = out["usage"]["completion_tokens"] / (time.perf_counter() - started)
        if round_:
            rates["lazy"].append(lazy)
            rates["free"].append(free_rate)
            rates["native"].append(native_rate)
    free_m = _median_rate(rates["free"])
    started = time.perf_counter()
    unconstrained_cc = backend.llm.create_completion(
        prompt_text, max_tokens=n_tokens, temperature=0.0
    )
    cc_rate = unconstrained_cc["usage"]["completion_tokens"] / (time.perf_counter() - started)
    return {
        "call_tokens": n_tokens,
        "unconstrained_tokens_per_s": free_m,
        "lazy_grammar_tokens_per_s": _median_rate(rates["lazy"]),
        "llama_cpp_grammar_tokens_per_s": _median_rate(rates["native"]),
        "llama_cpp_unconstrained_tokens_per_s": round(cc_rate, 1),
        "lazy_grammar_slowdown_percent": round(
            (free_m - _median_rate(rates["lazy"])) / free_m * 100, 1
        ),
        "llama_cpp_grammar_slowdown_percent": round(
            (cc_rate - _median_rate(rates["native"])) / cc_rate * 100, 1
        ),
    }


def bench_validity(backend: Any) -> dict[str, Any]:
    """Share of valid calls, right tool and sensible arguments, constrained vs unconstrained."""
    schemas = {t.name: t.parameters_schema for t in TOOLS}
    out: dict[str, Any] = {}
    for label, constrain in (("constrained", True), ("unconstrained", False)):
        backend.constrain = constrain
        valid = right = sensible = emitted = 0
        started = time.perf_counter()
        for question, expected, check in TOOL_QUESTIONS:
            result = backend.generate_with_tools(
                [ChatMessage.user(question)], TOOLS, SamplingParams(max_tokens=96), "required"
            )
            if not result.tool_calls:
                continue
            emitted += 1
            call = result.tool_calls[0]
            ok = call.name in schemas and call.raw_arguments is None
            if ok:
                try:
                    jsonschema.validate(call.arguments, schemas[call.name])
                except jsonschema.ValidationError:
                    ok = False
            valid += ok
            right += ok and call.name == expected
            sensible += ok and call.name == expected and check(call.arguments)
        n = len(TOOL_QUESTIONS)
        out[label] = {
            "questions": n,
            "emitted_share": round(emitted / n, 3),
            "valid_share": round(valid / n, 3),
            "right_tool_share": round(right / n, 3),
            "sensible_args_share": round(sensible / n, 3),
            "seconds_per_question": round((time.perf_counter() - started) / n, 2),
        }
    backend.constrain = True
    return out


def bench_auto(backend: Any) -> dict[str, Any]:
    """Right call/no-call share of each decider on the mixed set (and on the tuning set)."""
    from tooluse.local.decision import (
        AlwaysCall,
        AnyDecider,
        MarkerDecider,
        NeverCall,
        RelevanceDecider,
        YesNoDecider,
    )

    deciders = {
        "marker or relevance (default)": AnyDecider(MarkerDecider(), RelevanceDecider()),
        "relevance": RelevanceDecider(),
        "yes-no": YesNoDecider(),
        "marker": MarkerDecider(),
        "always-call": AlwaysCall(),
        "never-call": NeverCall(),
    }
    out: dict[str, Any] = {}
    for name, decider in deciders.items():
        row: dict[str, Any] = {}
        for set_name, questions, tools in (
            ("mixed", AUTO_SET, TOOLS),
            ("tuning", TUNING_SET, TUNING_TOOLS),
        ):
            correct = 0
            scores = []
            started = time.perf_counter()
            for question, needs in questions:
                decision = decider.decide(backend, [ChatMessage.user(question)], tools)
                correct += decision.call == needs
                scores.append(round(decision.score, 2))
            row[f"{set_name}_accuracy"] = round(correct / len(questions), 3)
            row[f"{set_name}_seconds_per_decision"] = round(
                (time.perf_counter() - started) / len(questions), 3
            )
        out[name] = row
    out["mixed_set_size"] = {
        "need_tool": sum(1 for _, n in AUTO_SET if n),
        "no_tool": sum(1 for _, n in AUTO_SET if not n),
    }
    return out


def main() -> dict[str, Any]:
    from tooluse.local import LlamaCppBackend
    from tooluse.local.runtime import import_llama_cpp

    llama_cpp = import_llama_cpp()
    started = time.perf_counter()
    backend = LlamaCppBackend.default(n_threads=2)
    load_s = time.perf_counter() - started
    figures: dict[str, Any] = {"load_seconds": round(load_s, 2)}
    figures["speed"] = bench_speed(backend, llama_cpp)
    figures["grammar"] = bench_grammar(backend, llama_cpp)
    figures["validity"] = bench_validity(backend)
    figures["auto"] = bench_auto(backend)
    backend.close()
    _print(figures)
    return figures


def _print(figures: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    s, g = figures["speed"], figures["grammar"]
    table = Table(title="local model speed (SmolLM2-135M Q4_1, 2 threads)")
    for col in ("measure", "tokens/s", "baseline tokens/s", "ratio"):
        table.add_column(col)
    table.add_row(
        "generation: backend vs llama-cpp direct",
        str(s["backend_tokens_per_s"]),
        str(s["llama_cpp_direct_tokens_per_s"]),
        f"{s['backend_tokens_per_s'] / s['llama_cpp_direct_tokens_per_s']:.3f}",
    )
    table.add_row(
        "tool call: lazy grammar vs unconstrained",
        str(g["lazy_grammar_tokens_per_s"]),
        str(g["unconstrained_tokens_per_s"]),
        f"{g['lazy_grammar_tokens_per_s'] / g['unconstrained_tokens_per_s']:.3f}",
    )
    table.add_row(
        "tool call: llama.cpp grammar vs unconstrained",
        str(g["llama_cpp_grammar_tokens_per_s"]),
        str(g["llama_cpp_unconstrained_tokens_per_s"]),
        f"{g['llama_cpp_grammar_tokens_per_s'] / g['llama_cpp_unconstrained_tokens_per_s']:.3f}",
    )
    console.print(table)
    table = Table(title="tool-call validity (32 questions, 4 tools, tool_choice=required)")
    for col in ("mode", "emitted", "valid", "right tool", "sensible args", "s/question"):
        table.add_column(col)
    for mode, row in figures["validity"].items():
        table.add_row(
            mode,
            f"{row['emitted_share']:.0%}",
            f"{row['valid_share']:.0%}",
            f"{row['right_tool_share']:.0%}",
            f"{row['sensible_args_share']:.0%}",
            str(row["seconds_per_question"]),
        )
    console.print(table)
    table = Table(title="auto mode: right call/no-call decisions")
    for col in ("decider", "mixed set (36)", "tuning set (16)", "s/decision"):
        table.add_column(col)
    for name, row in figures["auto"].items():
        if name == "mixed_set_size":
            continue
        table.add_row(
            name,
            f"{row['mixed_accuracy']:.1%}",
            f"{row['tuning_accuracy']:.1%}",
            str(row["mixed_seconds_per_decision"]),
        )
    console.print(table)


if __name__ == "__main__":
    main()
