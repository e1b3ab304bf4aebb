"""Local model strings spell a model's settings and read them back, without loading a model:
``spell_local_model`` reads only the settings it names (``LocalModelSettings``), so any object
holding them is spelled like the backend that holds them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tooluse.local.decision import ModelDecider, YesNoDecider, default_decider
from tooluse.local.grounding import GroundingCheck
from tooluse.local.model_strings import parse_local_options, spell_local_model


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """A local model's settings with ``LlamaCppBackend``'s defaults, and no model."""

    model_path: Path
    lora_path: Path | None = None
    decider: object = None
    narrow_tools: bool | str | None = None
    grounding: GroundingCheck | None = GroundingCheck()
    judge: str = "model"
    text: str = "model"
    lora_scale: float = 1.0
    weights: str | None = None

    def __post_init__(self) -> None:
        adapted = self.lora_path is not None
        if self.decider is None:
            object.__setattr__(self, "decider", ModelDecider() if adapted else default_decider())
        if self.narrow_tools is None:
            object.__setattr__(self, "narrow_tools", not adapted)


def read_back(spelled: str) -> Settings:
    """The settings a spelled ``llama-cpp:PATH#...`` string loads."""
    options: dict = {}
    path = parse_local_options(spelled.removeprefix("llama-cpp:"), options)
    if "lora_path" in options:
        options["lora_path"] = Path(options["lora_path"])
    options.pop("n_ctx", None)
    return Settings(model_path=Path(path), **options)


@pytest.fixture
def model(tmp_path) -> Path:
    return tmp_path / "model.gguf"


def test_default_settings_spell_the_bare_model(model):
    assert spell_local_model(Settings(model_path=model)) == f"llama-cpp:{model}"


@pytest.mark.parametrize(
    ("changes", "suffixes"),
    [
        (
            {"decider": YesNoDecider(), "narrow_tools": "first", "grounding": None},
            "#decider=yes-no#narrow=first#grounding=off",
        ),
        ({"judge": "base", "grounding": GroundingCheck(after_results=True)}, None),
        ({"adapter": True, "lora_scale": 0.5, "text": "base"}, "#text=base#lora_scale=0.5"),
        ({"adapter": True, "narrow_tools": True, "judge": "base"}, "#narrow=on#judge=base"),
        ({"weights": "q8_0", "judge": "base"}, "#judge=base#weights=q8_0"),
    ],
)
def test_spelled_settings_read_back_as_the_same_settings(model, changes, suffixes):
    changes = dict(changes)
    lora = model.with_name("adapter.gguf") if changes.pop("adapter", False) else None
    settings = Settings(model_path=model, lora_path=lora, **changes)
    spelled = spell_local_model(settings)
    if suffixes is not None:
        assert spelled.endswith(suffixes)
    if lora is not None:
        assert f"#lora={lora}" in spelled
    again = read_back(spelled)
    assert spell_local_model(again) == spelled
    names = ("lora_path", "narrow_tools", "judge", "text", "lora_scale", "model_path", "weights")
    for name in names:
        assert getattr(again, name) == getattr(settings, name), name
    assert getattr(again.decider, "name", "") == getattr(settings.decider, "name", "")
    assert again.grounding == settings.grounding


def test_an_unknown_weights_format_is_refused_with_the_formats_named(model):
    with pytest.raises(ValueError, match=r"#weights=q8_0\|f16"):
        parse_local_options(f"{model}#weights=q4_0", {})
