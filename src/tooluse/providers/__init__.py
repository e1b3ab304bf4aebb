"""Model backends: the backend interface, wire adapters per API, HTTP backends, scripted model."""

from tooluse.providers.anthropic_backend import AnthropicBackend
from tooluse.providers.base import (
    Backend,
    GenerationDone,
    GenerationResult,
    ModelCapabilities,
    SamplingParams,
    StreamingBackend,
    ToolChoice,
)
from tooluse.providers.bedrock_backend import BedrockBackend
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

__all__ = [
    "AnthropicBackend",
    "Backend",
    "BedrockBackend",
    "GeminiBackend",
    "GenerationDone",
    "GenerationResult",
    "ModelCapabilities",
    "OpenAIBackend",
    "RetryPolicy",
    "SamplingParams",
    "ScriptedBackend",
    "StreamingBackend",
    "ToolChoice",
    "load_model",
    "register_model_prefix",
    "registered_model_prefixes",
    "validate_history",
]
