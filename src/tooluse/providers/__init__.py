"""Model backends: the Backend contract and BaseBackend, wire adapters per API, HTTP backends,
TextToolsBackend for text-format models, and the scripted test model."""

from tooluse.providers.anthropic_backend import AnthropicBackend
from tooluse.providers.base import (
    Backend,
    BaseBackend,
    GenerationDone,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    StreamingBackend,
    ToolChoice,
    as_backend,
)
from tooluse.providers.bedrock_backend import BedrockBackend
from tooluse.providers.fallback import FallbackBackend, FallbackError
from tooluse.providers.gemini_backend import GeminiBackend
from tooluse.providers.history import validate_history
from tooluse.providers.http_transport import RetryPolicy
from tooluse.providers.model_registry import (
    load_model,
    register_model_prefix,
    registered_model_prefixes,
)
from tooluse.providers.openai_backend import OpenAIBackend
from tooluse.providers.scripted import ScriptedBackend
from tooluse.providers.text_tools import TextToolsBackend

__all__ = [
    "AnthropicBackend",
    "Backend",
    "BaseBackend",
    "BedrockBackend",
    "FallbackBackend",
    "FallbackError",
    "GeminiBackend",
    "GenerationDone",
    "GenerationResult",
    "ModelCapabilities",
    "OpenAIBackend",
    "RetryPolicy",
    "SamplingParams",
    "ScriptedBackend",
    "StreamingBackend",
    "TextToolsBackend",
    "ToolChoice",
    "as_backend",
    "load_model",
    "register_model_prefix",
    "registered_model_prefixes",
    "validate_history",
]
