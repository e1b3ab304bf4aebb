"""A tool loop with two tools called in parallel, then a final answer.

Runs offline with a scripted model that behaves like a function-calling model would: it asks
for the weather and the time in one turn, reads the results, and answers. Swap the backend for
``tooluse.load_model("openai:gpt-4o-mini")`` or a local model to run it for real.
"""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import tooluse
from tooluse import ScriptedBackend, ToolCall

WEATHER = {"paris": (18, "sunny"), "london": (12, "rain"), "tokyo": (24, "clouds")}


def get_weather(city: str, units: str = "celsius") -> dict:
    """Get the current weather for a city.

    Args:
        city: The city name.
        units: Temperature units, celsius or fahrenheit.
    """
    try:
        degrees, sky = WEATHER[city.lower()]
    except KeyError:
        raise ValueError(f"no weather station in {city}") from None
    if units == "fahrenheit":
        degrees = round(degrees * 9 / 5 + 32)
    return {"city": city, "temperature": degrees, "units": units, "sky": sky}


def get_time(tz: str) -> str:
    """Get the current local time in a timezone.

    Args:
        tz: An IANA timezone name such as Europe/Paris.
    """
    # A fixed instant keeps the example's output reproducible.
    now = datetime(2026, 11, 29, 13, 5, tzinfo=timezone.utc)
    return now.astimezone(ZoneInfo(tz)).strftime("%H:%M")


def scripted_model() -> ScriptedBackend:
    return ScriptedBackend(
        [
            [
                ToolCall(name="get_weather", arguments={"city": "Paris"}),
                ToolCall(name="get_time", arguments={"tz": "Europe/Paris"}),
                ToolCall(name="get_weather", arguments={"city": "Atlantis"}),
            ],
            "In Paris it is 14:05 and 18 °C with sunshine. I have no weather data for Atlantis.",
        ]
    )


def main() -> tooluse.RunResult:
    result = tooluse.run(
        scripted_model(),
        "What's the weather and local time in Paris? And in Atlantis?",
        tools=[get_weather, get_time],
        system_prompt="You are a concise assistant. Use the tools.",
        max_tool_iters=4,
    )
    for step in result.trail:
        status = "error" if step.is_error else "ok"
        print(f"[{status}] {step.name}({step.arguments}) -> {step.output}")
    print(f"stop: {result.stop_reason.value}, model requests: {result.usage.requests}")
    print(result.final_text)
    return result


if __name__ == "__main__":
    main()
