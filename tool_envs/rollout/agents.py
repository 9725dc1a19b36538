"""Message-level agents: they play one episode of an env that has just been reset with a task.

An agent only chooses actions; the env decides what they mean, so every agent is measured by
exactly the reward a trained policy would get. ``openai`` asks a chat API (native tool calls, or
plain text parsed by the env's tool-call parser); ``gold`` replays the env's gold turns, which
checks that a task set is solvable; ``noop`` replies with nothing, the floor any model must beat.

Agents talk to envs in chat messages, with no tokenizer: they are played by the chat engine
(:class:`~tool_envs.rollout.chat_engine.ChatEngine`, ``Policy(agent=...)``), which is how
``tool-envs eval`` plays them.
"""

from __future__ import annotations

import abc
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from tool_envs.core.helper_models import ApiFailure, api_error_message, explain_api_failure
from tool_envs.errors import EpisodeInterrupted, EvalError

__all__ = [
    "Agent",
    "EpisodeInPlay",
    "EpisodeInterrupted",
    "EpisodeResult",
    "EvalError",
    "GoldAgent",
    "NoopAgent",
    "OpenAIAgent",
    "text_mode_messages",
]


@dataclass
class EpisodeResult:
    """How one episode went, beyond what the env's ``info`` already says.

    Attributes:
        reward: Final reward (0 for a truncated or failed episode).
        terminated: The task ended on its own.
        truncated: The turn limit ended it.
        info: The env's ``info`` from the last step (``turn``, ``stats``, ``reward_info``).
        raw_texts: For text actions, what the agent wrote in each assistant turn (before
            parsing), so reports can show exactly what the model said.
        usage: ``requests``, ``prompt_tokens``, ``completion_tokens`` the API billed.
        finish_reasons: The API's finish reason per request.
        error: Why the episode ended early (e.g. the API rejected the conversation), or None.
    """

    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    raw_texts: list[str | None] = field(default_factory=list)
    usage: dict[str, int | None] = field(
        default_factory=lambda: {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
    )
    finish_reasons: list[str | None] = field(default_factory=list)
    error: str | None = None


@dataclass
class EpisodeInPlay:
    """What an agent's :meth:`Agent.actions` sees of the episode it plays."""

    env: gym.Env
    task: dict[str, Any]
    stop: threading.Event | None
    result: EpisodeResult


class Agent(abc.ABC):
    """Plays an env (already reset with ``task``) until the episode ends.

    ``play`` records each step into ``result`` (a fresh one when None) as it goes and returns
    it, so a caller that passed one still has the turns and API usage of an episode that raised
    half-way. An agent writes :meth:`actions`, its turns one after the other; ``play`` steps the
    env with each until the episode is over.
    """

    name: str

    def play(
        self,
        env: gym.Env,
        task: dict[str, Any],
        stop: threading.Event | None = None,
        result: EpisodeResult | None = None,
    ) -> EpisodeResult:
        episode = EpisodeInPlay(env, task, stop, result if result is not None else EpisodeResult())
        for action in self.actions(episode):
            if _step(env, action, episode.result):
                break
        return episode.result

    @abc.abstractmethod
    def actions(self, episode: EpisodeInPlay) -> Iterator[Any]:
        """The agent's turns, each chosen once the env has taken the one before. An agent that
        gives up (its API rejected the conversation) stops, ``episode.result.error`` saying why."""


def _step(env: gym.Env, action: Any, result: EpisodeResult) -> bool:
    """One env step recorded into ``result``; True when the episode is over."""
    result.raw_texts.append(action if isinstance(action, str) else None)
    _, reward, terminated, truncated, info = env.step(action)
    result.reward, result.terminated, result.truncated, result.info = (
        float(reward),
        terminated,
        truncated,
        info,
    )
    return terminated or truncated


class _ScriptedAgent(Agent):
    """Plays a fixed list of turns (:meth:`turns`), then empty replies while the env wants more."""

    name = "scripted"

    def turns(self, env: gym.Env, task: dict[str, Any]) -> list[Any]:
        """The turns to play, in order."""
        return []

    def actions(self, episode: EpisodeInPlay) -> Iterator[Any]:
        yield from list(self.turns(episode.env, episode.task))
        while True:
            yield ""


class NoopAgent(_ScriptedAgent):
    """Replies with an empty message every turn: the score of doing nothing."""

    name = "noop"


class GoldAgent(_ScriptedAgent):
    """Replays ``env.unwrapped.gold_turns(task)``, then empty replies if the env wants more."""

    name = "gold"

    def turns(self, env: gym.Env, task: dict[str, Any]) -> list[Any]:
        turns = env.unwrapped.gold_turns(task)
        if turns is None:
            raise EvalError(f"{task['env_id']} has no gold turns, so the gold agent cannot play it")
        return list(turns)


# Our own wording of the Hermes convention most open models are trained on; the env's parser
# ("auto" by default) reads the calls back.
_TEXT_TOOLS_PROMPT = """\
# Tools

You may call the functions described below, as JSON schemas inside <tools></tools>:
<tools>
{tools}
</tools>

To call a function, write a JSON object with its name and arguments inside \
<tool_call></tool_call> tags, one block per call:
<tool_call>
{{"name": "<function name>", "arguments": {{"<argument>": <value>}}}}
</tool_call>
Results come back inside <tool_response></tool_response> tags."""

_CHAT_API_STATUS = "the chat API at {url} answered HTTP {status}: {detail}"
# What stops an OpenAI agent's whole run, with the eval CLI's flags that fix it.
_CHAT_API_FAILURES: dict[ApiFailure, str] = {
    "timeout": "the chat API at {url} timed out ({exc}); raise --timeout or check the server",
    "unreachable": "cannot reach the chat API at {url}: {cause}. "
    "Is the server running, and is --base-url right?",
    "not_found": "the chat API at {url} answered 404 ({detail}); check --model "
    "and that --base-url ends where the API lives (often '/v1')",
    "refused": _CHAT_API_STATUS,
    "status": _CHAT_API_STATUS,
    "other": "the chat API at {url} failed: {exc}",
}


def text_mode_messages(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], raw_texts: list[str | None]
) -> list[dict[str, Any]]:
    """The conversation as plain text, for a chat API that gets no ``tools=`` parameter.

    The tool schemas go into the system message; each assistant turn is the text the model wrote
    (markup included); tool results become one user message of ``<tool_response>`` blocks. Only
    system/user/assistant roles remain, so any chat endpoint accepts the history.
    """
    out: list[dict[str, Any]] = []
    tool_block = _TEXT_TOOLS_PROMPT.format(
        tools="\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    )
    assistant_turn = 0
    for message in messages:
        role = message["role"]
        content = message.get("content") or ""
        if role == "assistant":
            raw = raw_texts[assistant_turn] if assistant_turn < len(raw_texts) else None
            assistant_turn += 1
            out.append({"role": "assistant", "content": raw if raw is not None else content})
        elif role == "tool":
            block = f"<tool_response>\n{content}\n</tool_response>"
            if out and out[-1]["role"] == "user" and out[-1].get("_tool"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "_tool": True})
        else:
            out.append({"role": role, "content": content})
    for message in out:
        message.pop("_tool", None)
    if tools:
        if out and out[0]["role"] == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{tool_block}"
        else:
            out.insert(0, {"role": "system", "content": tool_block})
    return out


class OpenAIAgent(Agent):
    """Asks an OpenAI-compatible chat API for every assistant turn.

    Args:
        backend: A :class:`tool_envs.rollout.backends.openai_chat.OpenAIChatBackend`; its
            ``native_tools`` picks the mode. Native: tools are sent as ``tools=`` and the
            structured ``tool_calls`` go to ``env.step``. Text: the tools are described in the
            system message and the reply's text goes to ``env.step`` for the env's parser.

    API errors: a rejected conversation (HTTP 400/422, e.g. too long for the context) ends the
    trial as a failure; anything else (unreachable server, auth, rate limit after the client's
    retries, 5xx, a body that is not a chat completion) raises :class:`EvalError` so the run
    stops and can be resumed.
    """

    name = "openai"

    def __init__(self, backend: Any):
        self.backend = backend

    def actions(self, episode: EpisodeInPlay) -> Iterator[Any]:
        import openai

        base, result, stop = episode.env.unwrapped, episode.result, episode.stop
        native = self.backend.native_tools
        while True:
            if stop is not None and stop.is_set():
                raise EpisodeInterrupted
            conversation = (
                base.messages
                if native
                else text_mode_messages(base.messages, base.tools, result.raw_texts)
            )
            try:
                turn = self.backend.complete_one(conversation, base.tools)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                result.error = f"the API rejected the conversation: {api_error_message(exc)}"
                result.reward, result.terminated = 0.0, False
                return
            except openai.APIError as exc:
                raise EvalError(self._fatal_message(exc)) from exc
            except (ValueError, AttributeError) as exc:  # a body that is not a chat completion
                url = self.backend.client.base_url
                raise EvalError(
                    f"the chat API at {url} answered something that is not a chat completion "
                    f"({type(exc).__name__}: {exc}); is --base-url an OpenAI-compatible endpoint?"
                ) from exc
            result.usage["requests"] = (result.usage["requests"] or 0) + 1
            for key in ("prompt_tokens", "completion_tokens"):
                value = getattr(turn, key)
                if value is None or result.usage[key] is None:
                    result.usage[key] = None  # the server did not report usage
                else:
                    result.usage[key] += value
            result.finish_reasons.append(turn.finish_reason)
            yield turn.action

    def _fatal_message(self, exc: Exception) -> str:
        return explain_api_failure(exc, self.backend.client.base_url, _CHAT_API_FAILURES)
