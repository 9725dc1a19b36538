"""Gymnasium spaces for chat messages (observations) and assistant turns (actions).

``gymnasium.spaces.Text`` only admits a fixed character set, which rejects ordinary model output,
so these spaces accept any unicode text and check the *structure* of messages instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Space

from tool_envs.core.messages import ROLES, Message

# Characters used when sampling: printable ASCII plus a few multi-byte ones, so that samples
# exercise unicode handling without being unreadable.
_SAMPLE_ALPHABET = np.array(
    list(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?'\"()[]{}<>/\\-_=+\n"
    )
    + list("éü中文😀")
)


def _sample_text(rng: np.random.Generator, max_length: int) -> str:
    length = int(rng.integers(0, max_length + 1))
    return "".join(rng.choice(_SAMPLE_ALPHABET, size=length).tolist())


def _is_tool_call(part: Any) -> bool:
    if not isinstance(part, dict):
        return False
    function = part.get("function")
    return (
        isinstance(part.get("id", ""), str)
        and isinstance(function, dict)
        and isinstance(function.get("name"), str)
        and isinstance(function.get("arguments"), (dict, str))
    )


def is_message(x: Any) -> bool:
    """Whether ``x`` is a chat message this package can produce or consume."""
    if not isinstance(x, dict) or x.get("role") not in ROLES:
        return False
    content = x.get("content")
    if not (isinstance(content, str) or (content is None and x["role"] == "assistant")):
        return False
    tool_calls = x.get("tool_calls")
    if tool_calls is not None and not (
        x["role"] == "assistant"
        and isinstance(tool_calls, list)
        and all(_is_tool_call(part) for part in tool_calls)
    ):
        return False
    return all(isinstance(x.get(key, ""), str) for key in ("tool_call_id", "name"))


class ChatMessages(Space[list[Message]]):
    """A list of chat messages: what an env adds to the conversation at reset or step.

    Members are lists of dicts with a ``role`` in system/user/assistant/tool and string
    ``content``; assistant messages may carry OpenAI-style ``tool_calls`` and tool messages a
    ``tool_call_id`` and ``name``. A step may add no message at all (the episode ended).
    """

    def __init__(self, max_messages: int = 4, max_length: int = 64, seed: int | None = None):
        self.max_messages = max_messages
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> list[Message]:
        if mask is not None or probability is not None:
            raise ValueError("ChatMessages.sample does not support masks or probabilities.")
        rng = self.np_random
        roles = ("system", "user", "tool")
        count = int(rng.integers(0, self.max_messages + 1))
        return [
            {
                "role": roles[int(rng.integers(len(roles)))],
                "content": _sample_text(rng, self.max_length),
            }
            for _ in range(count)
        ]

    def contains(self, x: Any) -> bool:
        return isinstance(x, list) and all(is_message(message) for message in x)

    def __repr__(self) -> str:
        return "ChatMessages()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChatMessages)

    __hash__ = None  # type: ignore[assignment]  # mutable settings, like gymnasium's spaces


class AssistantTurn(Space[Any]):
    """One assistant turn: the raw text the model wrote, or an assistant message dict.

    Raw text goes through the env's tool-call parser. A dict (``{"role": "assistant", "content":
    ..., "tool_calls": [...]}``) is what chat APIs with native tool calling return; its calls are
    used as given.
    """

    def __init__(self, max_length: int = 64, seed: int | None = None):
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> str:
        if mask is not None or probability is not None:
            raise ValueError("AssistantTurn.sample does not support masks or probabilities.")
        return _sample_text(self.np_random, self.max_length)

    def contains(self, x: Any) -> bool:
        if isinstance(x, str):
            return True
        return is_message(x) and x["role"] == "assistant"

    def __repr__(self) -> str:
        return "AssistantTurn()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AssistantTurn)

    __hash__ = None  # type: ignore[assignment]
