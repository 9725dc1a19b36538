"""Render conversations with the model's own chat template, and the tokens the env adds.

The rollout engine never re-tokenizes what the policy generated. What the environment adds after
a policy turn (the end of the assistant turn as the template writes it, tool results, a user's
reply, the next assistant header) is the difference between two renders of the conversation:

    before = render(conversation up to and including the assistant turn)
    after  = render(conversation + new env messages, add_generation_prompt=True)
    env    = (template text after the policy's stop token in `before`) + after[len(before):]

This is exact when the template is *prefix-preserving* (``after`` starts with ``before``);
:func:`tool_envs.rollout.check_chat_template` reports templates that are not, with the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tool_envs.core.messages import Message
from tool_envs.errors import TemplatePrefixError as TemplatePrefixError


class ChatTemplateRenderer:
    """Renders messages with a tokenizer's chat template and encodes the result.

    Args:
        tokenizer: A Hugging Face tokenizer with a chat template.
        chat_template: Template to use instead of the tokenizer's own.
        template_kwargs: Extra variables for the template (e.g. ``{"enable_thinking": False}``).
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        chat_template: str | None = None,
        template_kwargs: dict[str, Any] | None = None,
    ):
        if chat_template is None and getattr(tokenizer, "chat_template", None) is None:
            raise ValueError(
                "the tokenizer has no chat template; set tokenizer.chat_template or pass "
                "chat_template=..."
            )
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.template_kwargs = dict(template_kwargs or {})

    def render(
        self,
        messages: Sequence[Message],
        tools: list[dict[str, Any]] | None,
        *,
        add_generation_prompt: bool,
    ) -> str:
        return self.tokenizer.apply_chat_template(
            list(messages),
            tools=tools or None,
            chat_template=self.chat_template,
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
            **self.template_kwargs,
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of rendered text (special tokens in the text are parsed, none are added)."""
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def prompt_ids(
        self, messages: Sequence[Message], tools: list[dict[str, Any]] | None
    ) -> list[int]:
        """The tokens the policy continues from at the start of an episode."""
        return self.encode(self.render(messages, tools, add_generation_prompt=True))

    def env_text(
        self,
        before: Sequence[Message],
        added: Sequence[Message],
        tools: list[dict[str, Any]] | None,
        stop_text: str,
    ) -> str:
        """Template text the env adds after a policy turn that ended with ``stop_text``."""
        previous = self.render(before, tools, add_generation_prompt=False)
        following = self.render([*before, *added], tools, add_generation_prompt=True)
        if not following.startswith(previous):
            at = next(
                (i for i, (a, b) in enumerate(zip(previous, following, strict=False)) if a != b),
                min(len(previous), len(following)),
            )
            raise TemplatePrefixError(
                "the chat template is not prefix-preserving: adding "
                f"{[m['role'] for m in added]} messages changed the earlier render at "
                f"character {at} "
                f"({previous[at : at + 40]!r} became {following[at : at + 40]!r}). "
                + (TemplatePrefixError.__doc__ or "").split("\n\n")[1].strip()
            )
        stop_at = previous.rfind(stop_text) if stop_text else -1
        tail = previous[stop_at + len(stop_text) :] if stop_at >= 0 else ""
        return tail + following[len(previous) :]

    def env_ids(
        self,
        before: Sequence[Message],
        added: Sequence[Message],
        tools: list[dict[str, Any]] | None,
        stop_text: str,
    ) -> list[int]:
        """Token ids of :meth:`env_text`."""
        return self.encode(self.env_text(before, added, tools, stop_text))
