"""Token-level generation backends for the rollout engines (transformers, vLLM, OpenAI chat).

``base`` holds both contracts and their error; ``hf``, ``vllm/`` and ``openai_chat`` implement
them.
"""

from tool_envs.rollout.backends.base import (
    LOGPROB_DEFINITION,
    AsyncGenerationBackend,
    Generation,
    GenerationBackend,
    GenerationServerError,
    SamplingSettings,
)

__all__ = [
    "LOGPROB_DEFINITION",
    "AsyncGenerationBackend",
    "Generation",
    "GenerationBackend",
    "GenerationServerError",
    "SamplingSettings",
]
