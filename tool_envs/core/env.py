"""The base class of every tool_envs environment."""

from __future__ import annotations

import abc
import copy
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.error import ResetNeeded

from tool_envs.core import messages
from tool_envs.core.actions import interpret_action
from tool_envs.core.messages import Message
from tool_envs.core.outcome import outcome_of, void_info
from tool_envs.core.parsers import ToolCallParser, get_parser
from tool_envs.core.parsers.base import ToolCall
from tool_envs.core.spaces import AssistantTurn, ChatMessages
from tool_envs.core.tools import ToolOutcome, Toolset
from tool_envs.data import load_tasks, validate_row
from tool_envs.errors import EnvConfigError, InfrastructureError

TaskSource = str | Sequence[Mapping[str, Any]]


class ToolEnv(gym.Env[list[Message], Any], abc.ABC):
    """A multi-turn conversation in which an LLM agent calls tools to solve one task.

    **Episodes.** ``reset(seed=None, options={"task": row})`` starts the task ``row`` (a task row:
    ``prompt``, ``env_id``, ``reward_spec``, ``extra_info``; see :mod:`tool_envs.data`). Without a
    row, the env draws one from its task set with its seeded RNG, so the same seed gives the same
    task. One ``step`` is one assistant turn.

    **Observations** are lists of chat messages: what the env adds to the conversation at that
    point. After reset: the task's prompt (system + first user message). After a step: tool
    results (``role="tool"``, with ``tool_call_id`` and ``name``), a simulated user's reply, an
    error message for a malformed call, or nothing when the episode ended. ``env.messages`` is the
    whole conversation so far and ``env.tools`` the tool schemas in OpenAI function format, ready
    for ``tokenizer.apply_chat_template(env.messages, tools=env.tools)``.

    **Actions** are the assistant's raw text, parsed by the env's tool-call parser
    (``parser="auto"`` by default; see :mod:`tool_envs.core.parsers`), or an assistant message dict
    with OpenAI-style ``tool_calls`` from a chat API. A turn with well-formed calls runs them all,
    in order. A turn without calls is a message to the user: envs with a simulated user answer it,
    others take it as the final answer and end the episode.

    **Nothing a model writes raises.** Bad syntax, unknown tools, wrong arguments and exceptions
    inside tools become tool messages starting with ``"Error: "`` and counters in ``info``. Only
    caller mistakes raise: stepping before reset or after the end (``ResetNeeded``), an action of
    the wrong Python type (``InvalidAction``), a malformed task row (``TaskRowError``).

    **Rewards** are 0 on every step but the last; the final step carries the task reward, and
    ``info["reward_info"]`` says how it was computed and why it is what it is.

    **Void episodes.** When a part the episode depends on fails (a simulated user's or judge's
    API after its retries, a sandbox that cannot run; they raise ``InfrastructureError``), the
    turn is rolled back and the episode ends ``truncated`` with ``reward_info["outcome"] ==
    "void"``, a ``void_cause`` and a ``reason``: not the agent's failure (see
    :mod:`tool_envs.core.outcome`). A judge failing while scoring a finished conversation gives a
    ``terminated`` step with the same void ``reward_info``.

    **terminated vs truncated.** ``terminated`` is True when the task ended on its own (final
    answer, user stop, terminating tool). The turn limit is Gymnasium's: each env is registered
    with ``max_episode_steps`` and the ``TimeLimit`` wrapper sets ``truncated``
    (``gymnasium.make(id, max_episode_steps=N)`` changes it). A truncated episode earns 0.

    **info** (fresh dicts on every call):

    - ``turn``: assistant turns taken so far;
    - ``tool_calls``: this turn's well-formed calls, ``[{"id", "name", "arguments"}]``;
    - ``parse_error``: why a call attempt in this turn could not be parsed, or None;
    - ``tool_errors``: this turn's tool failures, ``["<tool>: <kind>", ...]``;
    - ``stats``: episode counters ``tool_calls``, ``tool_errors``, ``parse_errors``,
      ``empty_responses``;
    - ``reward_info``: None until the episode terminates (or is voided), then a dict with at
      least ``reward``, ``reason`` and ``outcome`` (``"success"``, ``"failure"`` or ``"void"``);
    - after reset: ``task_id`` and ``task_index`` (None for a task given in ``options``).

    **Subclasses** implement :meth:`default_tasks`, :meth:`_start_episode` (set up per-task state
    and return the toolset), :meth:`_on_reply` (what happens when the assistant talks to the user)
    and :meth:`_compute_reward`; they may override :meth:`_end_episode` to release per-episode
    resources. ``close()`` must leave no process, socket or temp dir behind.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012 - gymnasium's convention

    def __init__(
        self,
        *,
        tasks: TaskSource | None = None,
        parser: str | ToolCallParser = "auto",
        render_mode: str | None = None,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise EnvConfigError(
                f"render_mode={render_mode!r} is not supported; choose one of "
                f"{self.metadata['render_modes']} or None"
            )
        self.render_mode = render_mode
        self.observation_space = ChatMessages()
        self.action_space = AssistantTurn()
        self.parser = get_parser(parser)
        self._task_source = tasks
        self._tasks: list[dict[str, Any]] | None = None
        self._toolset = Toolset()
        self._task: dict[str, Any] | None = None
        self._messages: list[Message] = []
        self._call_log: list[tuple[ToolCall, ToolOutcome]] = []
        self._turn = 0
        self._stats = _new_stats()
        self._checkpoint: tuple[int, int, dict[str, int], int] = (0, 0, self._stats, 0)
        self._needs_reset = True

    # ----------------------------------------------------------------------- subclass API

    @abc.abstractmethod
    def default_tasks(self) -> Sequence[Mapping[str, Any]]:
        """Task rows drawn from when ``reset`` gets no task and no ``tasks=`` was given."""

    @abc.abstractmethod
    def _start_episode(self, task: dict[str, Any]) -> Toolset:
        """Set up the state of a new episode for ``task`` (validated) and return its tools."""

    @abc.abstractmethod
    def _on_reply(self, content: str) -> tuple[list[Message], bool]:
        """React to a turn without tool calls; return (new messages, episode terminated)."""

    @abc.abstractmethod
    def _compute_reward(self) -> tuple[float, dict[str, Any]]:
        """Final reward and its explanation (``reward_info``), called once when terminated."""

    def _end_episode(self) -> None:
        """Release per-episode resources; called before each reset and on close."""

    def _step_info(self) -> dict[str, Any]:
        """Env-specific keys added to every step's ``info`` (e.g. a search history)."""
        return {}

    def task_splits(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        """Named splits of the env's own task set; by default one ``train`` split."""
        return {"train": self.tasks}

    def gold_turns(self, task: Mapping[str, Any]) -> list[str] | None:
        """Assistant turns (raw text) that solve ``task``, or None if the env has no gold.

        Played through the env by the rollout engine, they export SFT warm-start data in exactly
        the token layout RL uses, and check that a task set is solvable.
        """
        return None

    # ----------------------------------------------------------------------- public API

    @property
    def messages(self) -> list[Message]:
        """The whole conversation so far (a copy: changing it does not change the env)."""
        return copy.deepcopy(self._messages)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """Tool schemas in OpenAI function format for the current episode."""
        return self._toolset.schemas

    @property
    def task(self) -> dict[str, Any] | None:
        """The current task row (validated), or None before the first reset."""
        return copy.deepcopy(self._task)

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """The task set ``reset`` draws from (loaded and validated on first use)."""
        if self._tasks is None:
            source = self._task_source if self._task_source is not None else self.default_tasks()
            tasks = load_tasks(source)
            if not tasks:
                raise EnvConfigError(f"{type(self).__name__} has an empty task set")
            for task in tasks:
                self._check_env_id(task)
            self._tasks = tasks
        return self._tasks

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        row = options.pop("task", None)
        if options:
            raise EnvConfigError(
                f"unknown reset options {sorted(options)}; the only option is 'task'"
            )
        self._end_episode()
        if row is None:
            index: int | None = int(self.np_random.integers(len(self.tasks)))
            task = copy.deepcopy(self.tasks[index])
        else:
            index, task = None, validate_row(row)
            self._check_env_id(task)
        self._task = task
        self._toolset = self._start_episode(copy.deepcopy(task))
        self._messages = copy.deepcopy(task["prompt"])
        self._call_log = []
        self._turn = 0
        self._stats = _new_stats()
        self._needs_reset = False
        info = {"turn": 0, "task_id": task["extra_info"].get("id"), "task_index": index}
        return copy.deepcopy(self._messages), info

    def step(self, action: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        if self._needs_reset:
            raise ResetNeeded(
                "step() was called before reset() or after the episode ended; call reset() first"
            )
        try:
            return self._play_turn(action)
        except InfrastructureError as exc:
            return self._void_turn(exc)

    def _play_turn(self, action: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        self._checkpoint = (self._turn, len(self._messages), dict(self._stats), len(self._call_log))
        self._turn += 1
        interpreted = interpret_action(action, self.parser, self._toolset.name_set, self._turn)
        self._messages.append(interpreted.message)

        observation: list[Message] = []
        tool_errors: list[str] = []
        terminated = False
        for failure in interpreted.failures:
            self._stats["parse_errors"] += 1
            observation.append(
                messages.tool_result(
                    f"Error: {failure.message}", name=failure.name, call_id=failure.call_id
                )
            )
        for call in interpreted.calls:
            outcome = self._toolset.call(call)
            self._call_log.append((call, outcome))
            self._stats["tool_calls"] += 1
            if outcome.error is not None:
                self._stats["tool_errors"] += 1
                tool_errors.append(f"{call.name}: {outcome.error}")
            terminated = terminated or outcome.terminates
            observation.append(
                messages.tool_result(outcome.content, name=call.name, call_id=call.id)
            )
        if interpreted.is_reply:
            if not interpreted.content.strip():
                self._stats["empty_responses"] += 1
            reply, terminated = self._on_reply(interpreted.content)
            observation.extend(reply)
        self._messages.extend(observation)

        reward, reward_info = 0.0, None
        if terminated:
            self._needs_reset = True
            try:
                reward, reward_info = self._compute_reward()
            except InfrastructureError as exc:  # e.g. the judge: the conversation itself is whole
                reward, reward_info = 0.0, void_info(exc.cause, str(exc))
            reward_info.setdefault("outcome", outcome_of(reward, reward_info))
        parse_error = "; ".join(f.message for f in interpreted.failures) or None
        info = {
            "turn": self._turn,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": messages.copy_json(c.arguments)}
                for c in interpreted.calls
            ],
            "parse_error": parse_error,
            "tool_errors": tool_errors,
            "stats": dict(self._stats),
            "reward_info": reward_info,
            **self._step_info(),
        }
        return [_copy_message(m) for m in observation], float(reward), terminated, False, info

    def _void_turn(
        self, exc: InfrastructureError
    ) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """End the episode as void, the conversation as it was before this turn.

        Gymnasium's ``truncated`` fits: the episode stopped for a reason outside the task.
        Rolling the turn back keeps ``messages``, the turn counter and the stats consistent (no
        assistant message without the reply it was waiting for).
        """
        turn, length, stats, calls = self._checkpoint
        self._turn, self._stats = turn, stats
        del self._messages[length:]
        del self._call_log[calls:]
        self._needs_reset = True
        info = {
            "turn": self._turn,
            "tool_calls": [],
            "parse_error": None,
            "tool_errors": [],
            "stats": dict(self._stats),
            "reward_info": void_info(exc.cause, str(exc)),
            **self._step_info(),
        }
        return [], 0.0, False, True, info

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return messages.render_transcript(self._messages)
        return None

    def close(self) -> None:
        self._end_episode()
        self._needs_reset = True

    # ----------------------------------------------------------------------- helpers

    def _check_env_id(self, task: dict[str, Any]) -> None:
        spec = self.unwrapped.spec
        if spec is not None and task["env_id"] != spec.id:
            raise EnvConfigError(
                f"the task row is for '{task['env_id']}' but this env is '{spec.id}'; "
                "route rows by their env_id (gymnasium.make(row['env_id']))"
            )


def _copy_message(message: Message) -> Message:
    """A copy the caller may change freely; flat messages (the usual case) need no deep copy."""
    if all(type(value) is str for value in message.values()):
        return message.copy()
    return messages.copy_json(message)


def _new_stats() -> dict[str, int]:
    return {"tool_calls": 0, "tool_errors": 0, "parse_errors": 0, "empty_responses": 0}
