"""The embedded local model: speed, grammar cost, tool-call validity and the auto-mode decision.

All baselines are measured in the same run:

- generation tokens/s through ``LlamaCppBackend`` vs ``llama_cpp.Llama.create_completion`` on the
  same prompt (overhead target <= 5 %);
- constrained vs unconstrained generation on the same tool prompt, for tooluse's lazy grammar
  check and for llama.cpp's own grammar sampler (target <= 15 % slower);
- tool-call validity on 32 questions over 4 tools, constrained vs unconstrained;
- calls with four long strings under a short ``max_tokens``: the call budget and closing
  reserve vs the caller's ``max_tokens`` alone;
- the final answer after a tool result: share holding the tool's key value, with the answer
  instruction vs the results appended plainly;
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
from tooluse.local.threads import llama_thread_options

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


# Calls with several long strings, asked with a short max_tokens: the call budget and closing
# reserve against the caller's max_tokens alone (the first version), same run.
LETTER = ToolDefinition(
    name="write_letter",
    description="Write and send a long formal letter",
    parameters=(
        ToolParameter("recipient", description="Full name and postal address of the recipient"),
        ToolParameter("subject", description="Subject line"),
        ToolParameter("body", description="The whole letter, several paragraphs"),
        ToolParameter("closing", description="Closing formula and signature"),
    ),
)
LONG_STRING_REQUESTS = [
    "Write a long letter to Mr. John Smith, 12 Long Road, Springfield, about his noisy dog.",
    "Send a formal complaint letter to the city council about the potholes on Main Street.",
    "Write to my landlord Mrs. Ana Lopez, 4 Oak Avenue, Denver, that the heating is broken.",
    "Draft a long thank-you letter to Professor Maria Rossi for her lectures this year.",
    "Write a letter to the bank asking them to close my savings account and send the money.",
    "Write a resignation letter to my manager Tom Baker, explaining all my reasons in detail.",
]
LONG_STRING_MAX_TOKENS = 48

# Final answers after tool results: (question, tool, arguments, tool output, key values). The
# answer counts when it contains one of the key values (thousands separators ignored).
ANSWER_SET: list[tuple[str, str, dict[str, Any], str, tuple[str, ...]]] = [
    (
        "What's the weather in Paris?",
        "get_weather",
        {"city": "Paris"},
        '{"city": "Paris", "temperature": 17, "unit": "celsius", "conditions": "foggy"}',
        ("17",),
    ),
    ("What is 12 * (3 + 4)?", "calculate", {"expression": "12 * (3 + 4)"}, "84", ("84",)),
    (
        "What time is it in Tokyo?",
        "get_time",
        {"timezone": "Asia/Tokyo"},
        "2026-11-29 23:02 (Asia/Tokyo)",
        ("23:02", "11:02"),
    ),
    (
        "Convert 100 US dollars to euros.",
        "convert_currency",
        {"amount": 100, "from_currency": "USD", "to_currency": "EUR"},
        '{"amount": 92.31, "currency": "EUR"}',
        ("92.31",),
    ),
    (
        "Is it cold in Moscow now?",
        "get_weather",
        {"city": "Moscow"},
        '{"city": "Moscow", "temperature": -8, "unit": "celsius", "conditions": "snowy"}',
        ("-8", "snow"),
    ),
    ("What is 1234 * 5678?", "calculate", {"expression": "1234 * 5678"}, "7006652", ("7006652",)),
    ("Add 345 and 789.", "calculate", {"expression": "345 + 789"}, "1134", ("1134",)),
    (
        "Current time in New York?",
        "get_time",
        {"timezone": "America/New_York"},
        "2026-11-29 09:02 (America/New_York)",
        ("9:02",),
    ),
    (
        "How many yen is 50 pounds?",
        "convert_currency",
        {"amount": 50, "from_currency": "GBP", "to_currency": "JPY"},
        '{"amount": 9412.5, "currency": "JPY"}',
        ("9412.5",),
    ),
    (
        "Tell me the temperature in Berlin.",
        "get_weather",
        {"city": "Berlin"},
        '{"city": "Berlin", "temperature": 4, "unit": "celsius", "conditions": "cloudy"}',
        ("4",),
    ),
    ("How much is 81 divided by 9?", "calculate", {"expression": "81 / 9"}, "9.0", ("9",)),
    (
        "Should I bring an umbrella in Seattle today?",
        "get_weather",
        {"city": "Seattle"},
        '{"city": "Seattle", "temperature": 11, "unit": "celsius", "conditions": "rainy"}',
        ("rain",),
    ),
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
        **llama_thread_options(backend._threads),
        verbose=False,
    )
    params = SamplingParams(max_tokens=128, temperature=0.0)
    ours: list[float] = []
    theirs: list[float] = []
    for round_ in range(4):
        started = time.perf_counter()
        result = backend.generate(messages, params=params)
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
    from tooluse.local.sampling import DecodeSettings

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


def bench_long_strings(backend: Any) -> dict[str, Any]:
    """Valid-call share for long-string calls under a short max_tokens: with the call budget and
    closing reserve (default) vs the caller's max_tokens as the only limit (first version)."""
    schema = LETTER.parameters_schema
    out: dict[str, Any] = {}
    for label, override in (("caller max_tokens only", True), ("call budget (default)", False)):
        if override:  # no call budget, no closing reserve
            backend.call_budget = lambda tools, parallel=False: (0, 0)
        valid = tokens = 0
        started = time.perf_counter()
        for request in LONG_STRING_REQUESTS:
            result = backend.generate_with_tools(
                [ChatMessage.user(request)],
                [LETTER],
                SamplingParams(max_tokens=LONG_STRING_MAX_TOKENS),
                "required",
            )
            tokens += result.usage.output_tokens
            if result.tool_calls and result.tool_calls[0].raw_arguments is None:
                try:
                    jsonschema.validate(result.tool_calls[0].arguments, schema)
                    valid += 1
                except jsonschema.ValidationError:
                    pass
        if override:
            del backend.call_budget
        n = len(LONG_STRING_REQUESTS)
        out[label] = {
            "questions": n,
            "valid_share": round(valid / n, 3),
            "mean_tokens": round(tokens / n, 1),
            "seconds_per_question": round((time.perf_counter() - started) / n, 2),
        }
    return out


def bench_answers(backend: Any) -> dict[str, Any]:
    """Share of final answers (after a tool result) that contain the tool's key value: the
    results appended as they are (the first version) vs with the answer instruction."""
    from dataclasses import replace

    from tooluse import ToolCall, ToolResult

    instructed = backend.profile
    out: dict[str, Any] = {}
    for label, profile in (
        ("plain results", replace(instructed, results_prompt="plain")),
        ("instructed (default)", replace(instructed, results_prompt="instructed")),
    ):
        backend.profile = profile
        hits = tokens = 0
        started = time.perf_counter()
        for question, tool, arguments, output, keys in ANSWER_SET:
            call = ToolCall(name=tool, arguments=arguments)
            messages = [
                ChatMessage.user(question),
                ChatMessage.assistant(tool_calls=[call]),
                ChatMessage.tool_result(ToolResult(call_id=call.id, tool_name=tool, output=output)),
            ]
            result = backend.generate_with_tools(
                messages, TOOLS, SamplingParams(max_tokens=96), "auto"
            )
            text = result.text.replace(",", "").lower()
            hits += any(key.lower() in text for key in keys)
            tokens += result.usage.output_tokens
        n = len(ANSWER_SET)
        out[label] = {
            "questions": n,
            "key_value_share": round(hits / n, 3),
            "mean_answer_tokens": round(tokens / n, 1),
            "seconds_per_answer": round((time.perf_counter() - started) / n, 2),
        }
    backend.profile = instructed
    return out


def main() -> dict[str, Any]:
    from tooluse.local import LlamaCppBackend
    from tooluse.local.runtime import import_llama_cpp

    llama_cpp = import_llama_cpp()
    started = time.perf_counter()
    backend = LlamaCppBackend.default()  # the machine's usable CPUs, as a user gets
    load_s = time.perf_counter() - started
    figures: dict[str, Any] = {"load_seconds": round(load_s, 2), "threads": backend._threads}
    figures["speed"] = bench_speed(backend, llama_cpp)
    figures["grammar"] = bench_grammar(backend, llama_cpp)
    figures["validity"] = bench_validity(backend)
    figures["long_strings"] = bench_long_strings(backend)
    figures["answers"] = bench_answers(backend)
    figures["auto"] = bench_auto(backend)
    backend.close()
    _print(figures)
    return figures


def _print(figures: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    s, g = figures["speed"], figures["grammar"]
    threads = figures.get("threads", 2)
    table = Table(title=f"local model speed (SmolLM2-135M Q4_1, {threads} threads)")
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
    table = Table(
        title=f"long-string calls, max_tokens={LONG_STRING_MAX_TOKENS} "
        f"({len(LONG_STRING_REQUESTS)} requests, 4 string arguments)"
    )
    for col in ("token limit", "valid", "mean tokens", "s/question"):
        table.add_column(col)
    for mode, row in figures["long_strings"].items():
        table.add_row(
            mode,
            f"{row['valid_share']:.0%}",
            str(row["mean_tokens"]),
            str(row["seconds_per_question"]),
        )
    console.print(table)
    table = Table(title=f"final answer after a tool result ({len(ANSWER_SET)} questions)")
    for col in ("prompt", "answer holds the key value", "mean tokens", "s/answer"):
        table.add_column(col)
    for mode, row in figures["answers"].items():
        table.add_row(
            mode,
            f"{row['key_value_share']:.0%}",
            str(row["mean_answer_tokens"]),
            str(row["seconds_per_answer"]),
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
