"""Model backends: the backend interface, wire adapters per API, HTTP backends, scripted model."""

from tooluse.providers.base import (
    Backend,
    GenerationDone,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    ToolChoice,
)
from tooluse.providers.scripted import ScriptedBackend

__all__ = [
    "Backend",
    "GenerationDone",
    "GenerationResult",
    "ModelCapabilities",
    "SamplingParams",
    "ScriptedBackend",
    "ToolChoice",
]
