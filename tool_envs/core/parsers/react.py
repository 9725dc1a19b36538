"""ReAct text: ``Thought:`` / ``Action: tool`` / ``Action Input: {json}`` / ``Final Answer:``.

Labels count only at the start of a line. A message whose first Action/Final Answer label is
``Final Answer:`` is an answer for the user; otherwise every ``Action:`` is a call (a model that
hallucinates ``Observation:`` and goes on acting yields several calls). ``Action Input`` may be a
JSON object, empty (no arguments), or a bare string, which becomes ``{"input": <string>}`` since
the parameter name is unknown here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tool_envs.core.parsers._common import (
    BaseParser,
    coerce_arguments,
    decode_prefix,
    decode_whole,
    describe,
    finish,
    snippet,
)
from tool_envs.core.parsers.base import ParseError, ParseResult, ToolCall

REACT_SHAPE = 'Action: <tool name>\nAction Input: {"arg": value, ...}'
BARE_INPUT_KEY = "input"
"""Argument name given to a bare-string ``Action Input``."""

_LABEL = re.compile(
    r"^[ \t]*(?P<label>Thought|Action[ \t]*\d*[ \t]*(?i:input)|Action|Observation"
    r"|Final[ \t]+(?i:answer))[ \t]*\d*[ \t]*:",
    re.MULTILINE,
)


@dataclass(frozen=True)
class _Section:
    kind: str  # "thought", "action", "input", "observation" or "final"
    start: int  # where the label starts
    end: int  # where the next label starts
    value: str  # text after the colon up to the next label


def _kind(label: str) -> str:
    if label.startswith("Action"):
        return "input" if label[-5:].lower() == "input" else "action"
    return {"Thought": "thought", "Observation": "observation"}.get(label, "final")


def _sections(text: str) -> list[_Section]:
    matches = list(_LABEL.finditer(text))
    sections = []
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        kind = _kind(match.group("label"))
        sections.append(_Section(kind, match.start(), end, text[match.end() : end]))
    return sections


def looks_like_react(text: str) -> bool:
    """Strict check used by auto-detection: an ``Action:`` line followed by ``Action Input:``,
    or a ``Final Answer:`` line before any action."""
    seen_action = False
    for section in _sections(text):
        if section.kind == "final" and not seen_action:
            return True
        if section.kind == "action":
            seen_action = True
        elif section.kind == "input" and seen_action:
            return True
    return False


def _strip_fence(value: str) -> str:
    value = value.strip()
    if value.startswith("```"):
        newline = value.find("\n")
        value = "" if newline < 0 else value[newline + 1 :]
        value = value.strip()
        if value.endswith("```"):
            value = value[:-3]
    return value.strip()


def _action_name(value: str) -> str:
    lines = value.strip().splitlines()
    return lines[0].strip().strip("`'\"*").strip() if lines else ""


def _arguments(raw: str) -> dict[str, Any] | str:
    """Decode an Action Input, or describe what is wrong with it."""
    value = _strip_fence(raw)
    if not value:
        return {}
    if value[0] in "{[":
        decoded = decode_prefix(value)
        if not decoded.ok:
            return f"Action Input is not valid JSON ({decoded.message})"
    else:
        decoded = decode_whole(value)
        if not decoded.ok:
            return {BARE_INPUT_KEY: value}
    if isinstance(decoded.value, dict):
        return decoded.value
    if isinstance(decoded.value, str):
        arguments = coerce_arguments(decoded.value, "Action Input")
        if isinstance(arguments, dict) and arguments:
            return arguments
    return f"Action Input must be a JSON object; it was {describe(decoded.value)}"


class ReActParser(BaseParser):
    """Parses ReAct-formatted messages (LangChain-style agents, zero-shot ReAct prompts)."""

    name = "react"

    def detect(self, text: str, tool_names: frozenset[str] | None) -> ParseResult | None:
        sections = _sections(text)
        first = next((s for s in sections if s.kind in ("action", "final")), None)
        if first is None:
            return None
        if first.kind == "final":
            return ParseResult(content=first.value.strip())
        calls: list[ToolCall] = []
        errors: list[ParseError] = []
        for index, section in enumerate(sections):
            if section.kind != "action":
                continue
            following = sections[index + 1] if index + 1 < len(sections) else None
            if following is not None and following.kind != "input":
                following = None
            source = text[section.start : section.end if following is None else following.end]
            name = _action_name(section.value)
            if not name:
                errors.append(
                    ParseError(
                        self.name,
                        f"Action has no tool name. Write {REACT_SHAPE}",
                        snippet(source),
                    )
                )
                continue
            arguments = {} if following is None else _arguments(following.value)
            if isinstance(arguments, str):
                errors.append(
                    ParseError(self.name, f"{arguments}. Write {REACT_SHAPE}", snippet(source))
                )
                continue
            calls.append(ToolCall(name=name, arguments=arguments))
        thought = _LABEL.sub("", text[: first.start])
        return finish(thought.strip(), calls, errors)
