"""Structured extraction: forced tool call, validation into an instance or dict, bounded retries."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, field_validator

from tooluse import (
    ExtractionError,
    GenerationResult,
    ModelCapabilities,
    ScriptedBackend,
    ToolCall,
    aextract,
    extract,
)

PAGE = """Avatar: Fire and Ash (2025) - IMDb
Rating 7.5/10 from 46K users. Directed by James Cameron. 3h 17m. Action, Adventure.
"""


class Film(BaseModel):
    """A film record."""

    title: str
    year: int
    rating: float = Field(ge=0, le=10)

    @field_validator("title")
    @classmethod
    def no_imdb_suffix(cls, value: str) -> str:
        if value.endswith("IMDb"):
            raise ValueError("drop the ' - IMDb' suffix from the title")
        return value


def Movie(title: str, rating_value: float, director: str):
    """Extracted information for a movie.

    Args:
        title: the title of the movie.
        rating_value: the IMDb rating of the movie on the scale of 0~10.
        director: the director of the movie.
    """


def call(name: str, **arguments) -> list[ToolCall]:
    return [ToolCall(name=name, arguments=arguments)]


def test_pydantic_model_is_extracted_with_a_forced_call():
    backend = ScriptedBackend([call("Film", title="Avatar: Fire and Ash", year=2025, rating=7.5)])
    film = extract(backend, PAGE, Film)
    assert isinstance(film, Film)
    assert film == Film(title="Avatar: Fire and Ash", year=2025, rating=7.5)
    request = backend.requests[0]
    assert request.tool_choice == "Film"
    assert [t.name for t in request.tools] == ["Film"]
    assert "Avatar: Fire and Ash (2025) - IMDb" in request.messages[0].content
    assert "Film" in request.messages[0].content


def test_function_signature_gives_a_dict_and_the_function_is_not_called():
    backend = ScriptedBackend(
        [call("Movie", title="Avatar: Fire and Ash", rating_value="7.5", director="James Cameron")]
    )
    movie = extract(backend, PAGE, Movie)
    assert movie == {
        "title": "Avatar: Fire and Ash",
        "rating_value": 7.5,
        "director": "James Cameron",
    }
    schema = backend.requests[0].tools[0].parameters_schema
    assert schema["properties"]["rating_value"]["type"] == "number"


def test_validation_errors_go_back_and_the_model_retries():
    backend = ScriptedBackend(
        [
            call("Film", title="Avatar: Fire and Ash (2025) - IMDb", year=2025, rating=7.5),
            call("Film", title="Avatar: Fire and Ash", year="twenty", rating=75),
            call("Film", title="Avatar: Fire and Ash", year=2025, rating=7.5),
        ]
    )
    film = extract(backend, PAGE, Film, max_retries=2)
    assert film.title == "Avatar: Fire and Ash"
    second = backend.requests[1].messages
    assert second[-1].role == "tool" and second[-1].result.is_error
    assert "IMDb" in second[-1].content
    third = backend.requests[2].messages[-1].content
    assert "year" in third and "rating" in third
    assert [r.tool_choice for r in backend.requests] == ["Film", "Film", "Film"]


def test_retries_are_bounded_and_the_error_keeps_the_run():
    bad = call("Film", title="x", year=2025, rating=99)
    backend = ScriptedBackend([bad, bad, bad, bad])
    with pytest.raises(ExtractionError) as info:
        extract(backend, PAGE, Film, max_retries=1)
    assert info.value.attempts == 2
    assert "rating" in info.value.last_error
    assert len(backend.requests) == 2
    assert backend.remaining == 2


def test_a_plain_answer_instead_of_the_call_is_an_error():
    backend = ScriptedBackend(["I think it is Avatar."])
    with pytest.raises(ExtractionError, match="never called 'Film'"):
        extract(backend, PAGE, Film)


def test_extra_validate_check_rejects_and_explains():
    def must_be_recent(arguments):
        if arguments["year"] < 2000:
            raise ValueError("the page says 2025")

    backend = ScriptedBackend(
        [call("Film", title="A", year=1999, rating=5), call("Film", title="A", year=2025, rating=5)]
    )
    film = extract(backend, PAGE, Film, validate=must_be_recent)
    assert film.year == 2025
    assert "the page says 2025" in backend.requests[1].messages[-1].content


def test_backend_without_forced_choice_is_asked_with_auto():
    backend = ScriptedBackend(
        [call("Film", title="A", year=2025, rating=5)],
        capabilities=ModelCapabilities(supports_tool_choice_required=False),
    )
    extract(backend, PAGE, Film)
    assert backend.requests[0].tool_choice == "auto"


async def test_aextract_matches_extract():
    turns = [call("Film", title="A", year=2025, rating=5)]
    assert await aextract(ScriptedBackend(turns), PAGE, Film) == extract(
        ScriptedBackend(turns), PAGE, Film
    )


def test_messages_are_sent_as_given_and_usage_is_kept_on_failure():
    from tooluse import ChatMessage

    backend = ScriptedBackend([GenerationResult(text="no")])
    with pytest.raises(ExtractionError) as info:
        extract(backend, [ChatMessage.user("Film: Heat, 1995, 8.3")], Film, max_retries=0)
    assert backend.requests[0].messages[0].content == "Film: Heat, 1995, 8.3"
    assert info.value.result.messages[-1].content == "no"


def test_bad_targets_are_refused():
    with pytest.raises(TypeError, match="pydantic model class or a function"):
        extract(ScriptedBackend([]), "x", 42)
    with pytest.raises(ValueError, match="max_retries"):
        extract(ScriptedBackend([]), "x", Film, max_retries=-1)


def test_extraction_with_a_text_format_model():
    from tooluse.formats import HermesToolCallParser

    reply = '<tool_call>\n{"name": "Film", "arguments": {"title": "Heat", "year": 1995, "rating": 8.3}}\n</tool_call>'
    backend = ScriptedBackend(
        [reply], capabilities=ModelCapabilities(supports_function_calling=False)
    )
    film = extract(backend, "Heat (1995), rated 8.3", Film, tool_call_parser=HermesToolCallParser())
    assert film == Film(title="Heat", year=1995, rating=8.3)
    system = backend.requests[0].messages[0].content
    assert "<tools>" in system and "You must call the tool 'Film' now." in system


class Person(BaseModel):
    name: str


class Cast(BaseModel):
    """A film with its cast."""

    title: str
    cast: list[Person]
    year_: int = Field(alias="year")


def test_nested_models_and_aliases_are_built():
    backend = ScriptedBackend(
        [
            call(
                "Cast",
                title="Heat",
                cast=[{"name": "Al Pacino"}, {"name": "Robert De Niro"}],
                year=1995,
            )
        ]
    )
    record = extract(backend, "Heat (1995) with Al Pacino and Robert De Niro", Cast)
    assert record == Cast(
        title="Heat", cast=[Person(name="Al Pacino"), Person(name="Robert De Niro")], year=1995
    )
