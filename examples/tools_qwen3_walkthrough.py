"""The Qwen3 tool-calling walkthrough's tools: ``today``, ``get_weekday`` and ``Movie``.

Plain functions with docstrings become tools. A scripted model stands in for Qwen3: it calls
``today``, then ``get_weekday`` with the date it got, then answers. ``Movie`` is a function used
only for its signature (structured output): its schema goes to the model, and the arguments
that come back are validated into a dict.
"""

from __future__ import annotations

import datetime
import json
from pprint import pprint

from tooluse import ScriptedBackend, ToolCall, ToolDefinition, run


def today():
    """Get today's date in YYYY-MM-DD."""
    today_date = datetime.date(2025, 12, 25)  # fixed so the example prints the same every time
    ret = f"{today_date:%Y-%m-%d}"
    return ret


def get_weekday(date_str: str):
    """Get the weekday of a given date.

    Args:
      date_str: the date string in the format of YYYY-MM-DD.
    """
    date = datetime.datetime.strptime(date_str, "%Y-%m-%d")
    return f"{date:%A}"


def Movie(  # noqa: PLR0913 -- the signature is the record's ten fields
    title: str,
    rating_value: float,
    rating_count: str,
    desc: str,
    genre: str,
    duration: str,
    publish_date: str,
    stars: str,
    director: str,
    writer: str,
):
    """Extracted information for a movie.

    Args:
        title: the title of the movie.
        rating_value: the IMDb rating of the movie on the scale of 0~10.
        rating_count: the number of people for the IMDb rating.
        desc: the plot of the movie.
        genre: the genres of the movie, separated by comma if more than one.
        duration: the duration of the movie.
        publish_date: the release date of the movie.
        stars: the stars of the movie, separated by comma.
        director: the director of the movie, separated by comma if more than one.
        writer: the writer of the movie, separated by comma if more than one.
    """


# The schema a chat template would receive for `today`
print(json.dumps(ToolDefinition.from_callable(today).to_openai_schema()))

backend = ScriptedBackend(
    [
        [ToolCall(id="call_1", name="today", arguments={})],
        [ToolCall(id="call_2", name="get_weekday", arguments={"date_str": "2025-12-25"})],
        "Today is Thursday, December 25, 2025.",
    ]
)
result = run(backend, "What weekday is it today?", tools=[today, get_weekday])
for message in result.messages:
    if message.role == "assistant" and message.tool_calls:
        for call in message.tool_calls:
            print("call:", call.name, call.arguments)
    elif message.role == "tool":
        print("tool:", message.content)
print("final:", result.final_text)

# Structured output: Movie is offered as a tool, its arguments are the record
movie_tool = ToolDefinition.from_callable(Movie)
print("Movie required:", movie_tool.parameters_schema["required"])
model_arguments = (
    '{"title": "Avatar: Fire and Ash", "rating_value": "7.5", "rating_count": "46K", '
    '"desc": "Jake and Neytiri\'s family grapples with grief.", "genre": "Action, Adventure", '
    '"duration": "3h 17m", "publish_date": "December 19, 2025", "stars": "Sam Worthington", '
    '"director": "James Cameron", "writer": "James Cameron, Rick Jaffa, Amanda Silver"}'
)
report = movie_tool.validate_arguments_report(model_arguments)
pprint(report.arguments)
print("coercions:", [str(c) for c in report.coercions])
