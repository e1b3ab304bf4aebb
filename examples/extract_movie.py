"""Structured extraction: a movie record from a page of text, with a forced tool call.

As in the Qwen3 walkthrough, ``Movie`` is a function used only for its signature and
docstring; ``tooluse.extract`` offers it as the one tool, forces the call, validates the
arguments (``rating_value`` must be a number) and returns them as a dict. A pydantic model
works the same way and gives an instance. The scripted model first sends a bad rating, gets
the validation error back, and corrects itself.
"""

from __future__ import annotations

from pprint import pprint

import tooluse
from tooluse import ScriptedBackend, ToolCall

PAGE = """Avatar: Fire and Ash (2025) - IMDb
IMDb RATING 7.5/10 46K
Jake and Neytiri's family grapples with grief, encountering a new, aggressive Na'vi tribe,
the Ash People, who are led by the fiery Varang, as the conflict on Pandora escalates.
Action Epic, Adventure Epic, Fantasy Epic, Sci-Fi Epic. 3h 17m. Release date December 19, 2025.
Director James Cameron. Writers James Cameron, Rick Jaffa, Amanda Silver.
Stars Sam Worthington, Zoe Saldaña, Sigourney Weaver.
"""


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


RECORD = {
    "title": "Avatar: Fire and Ash",
    "rating_value": 7.5,
    "rating_count": "46K",
    "desc": "Jake and Neytiri's family grapples with grief, encountering a new, aggressive "
    "Na'vi tribe, the Ash People, led by the fiery Varang.",
    "genre": "Action Epic, Adventure Epic, Fantasy Epic, Sci-Fi Epic",
    "duration": "3h 17m",
    "publish_date": "December 19, 2025",
    "stars": "Sam Worthington, Zoe Saldaña, Sigourney Weaver",
    "director": "James Cameron",
    "writer": "James Cameron, Rick Jaffa, Amanda Silver",
}


def scripted_model() -> ScriptedBackend:
    first_try = {**RECORD, "rating_value": "seven and a half"}
    return ScriptedBackend(
        [[ToolCall(name="Movie", arguments=first_try)], [ToolCall(name="Movie", arguments=RECORD)]]
    )


def main() -> dict:
    backend = scripted_model()
    movie = tooluse.extract(backend, PAGE, Movie, max_retries=2)
    feedback = backend.requests[1].messages[-1].content
    print("validation feedback after the first try:")
    print(feedback)
    print("extracted record:")
    pprint(movie, sort_dicts=False)
    return movie


if __name__ == "__main__":
    main()
