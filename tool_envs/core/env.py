"""The base class of every tool_envs environment."""

from __future__ import annotations

import abc
import copy
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.error import ResetNeeded

from tool_envs.core import messages
from tool_envs.core.actions import InterpretedAction, interpret_action
from tool_envs.core.chat_env import step_info, void_step
from tool_envs.core.messages import Message
from tool_envs.core.outcome import outcome_of, void_info
from tool_envs.core.parsers import ToolCallParser, get_parser
from tool_envs.core.parsers.base import ToolCall
from tool_envs.core.spaces import AssistantTurn, ChatMessages
from tool_envs.core.tools import ToolOutcome, Toolset
from tool_envs.data import load_tasks, validate_row
from tool_envs.errors import EnvConfigError, InfrastructureError, TaskRowError
from tool_envs.registration import registered_id

TaskSource = str | Sequence[Mapping[str, Any]]


# The rows of recently used default task sets, validated, by the list ``default_tasks()``
# returned. Most envs return their module's cached ``default_splits()`` list, so a new instance
# reuses the rows instead of validating them again: an env server makes one env per session,
# and validating Calculator's 1,000 default rows took 0.1 s of each.
_DEFAULT_TASKS: OrderedDict[int, tuple[Sequence[Any], list[dict[str, Any]]]] = OrderedDict()
_DEFAULT_TASK_SETS_KEPT = 8
_DEFAULT_TASKS_LOCK = threading.Lock()  # an env server makes envs on several threads
# A lock per list being validated: a cold server's first sessions all ask at once, and one
# validates while the others wait for its rows (not each validating under the GIL).
_VALIDATING: dict[int, threading.Lock] = {}
# The same rows once an env checked them (``check_task``): by the list, the env's class, id and
# constructor arguments, which are all a check may depend on. A server's sessions are made alike,
# and checking Calculator's 1,000 rows again was 0.9 ms of each session's 1 ms first reset.
_CHECKED_TASKS: OrderedDict[tuple[Any, ...], tuple[Sequence[Any], list[Any]]] = OrderedDict()


def _validated_default_tasks(source: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``load_tasks(source)``, reusing the rows of an earlier call on the same list."""
    if not isinstance(source, list):  # a dataset or a file path may change under the same object
        return list(load_tasks(source))
    kept = _kept(_DEFAULT_TASKS, id(source), source)
    if kept is not None:
        return kept
    with _DEFAULT_TASKS_LOCK:
        validating = _VALIDATING.setdefault(id(source), threading.Lock())
    with validating:
        kept = _kept(_DEFAULT_TASKS, id(source), source)  # validated by the caller it waited for
        if kept is None:
            kept = _keep(_DEFAULT_TASKS, id(source), source, load_tasks(source))
        with _DEFAULT_TASKS_LOCK:
            _VALIDATING.pop(id(source), None)
    return kept


def _kept(table: OrderedDict[Any, Any], key: Any, source: list[Any]) -> list[Any] | None:
    """A new list of the rows ``table`` keeps for ``source`` under ``key``, if it keeps them."""
    with _DEFAULT_TASKS_LOCK:
        kept = table.get(key)
        if kept is not None and kept[0] is source and len(source) == len(kept[1]):
            table.move_to_end(key)
            return list(kept[1])
    return None


def _keep(table: OrderedDict[Any, Any], key: Any, source: list[Any], rows: list[Any]) -> list[Any]:
    """Keep ``rows`` for ``source`` under ``key`` (the last few sets); a new list of them."""
    with _DEFAULT_TASKS_LOCK:
        table[key] = (source, rows)  # holding source keeps its id unique
        while len(table) > _DEFAULT_TASK_SETS_KEPT:
            table.popitem(last=False)
    return list(rows)


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
    inside tools become tool messages starting with ``"Error: "`` and counters in ``info``. That
    includes hostile input (checked by ``tests/test_env_fuzz.py`` on every env): call arguments
    must be plain JSON objects nested at most 64 deep with integers short enough to print
    (:mod:`tool_envs.core.json_values`), ``tool_calls`` that is not a list is an error message,
    call ids are made strings, at most 64 calls of a turn run
    (:data:`~tool_envs.core.actions.MAX_TOOL_CALLS`), and text longer than a million characters
    is not read for calls (every parser is linear in the text).

    Only caller mistakes raise: an action of the wrong Python type (``InvalidAction``; the turn
    does not count and nothing changes), stepping before a successful reset or after the end
    (``ResetNeeded``; a reset whose row was rejected leaves no episode to step in), a malformed
    task row (``TaskRowError``, naming the row index and the field) and bad constructor arguments
    (``EnvConfigError``, at ``gymnasium.make`` time). Rows are checked when the task set loads
    and when ``reset`` gets one, with :meth:`check_task` for what an env needs beyond the
    schema. A bug that raises inside a step rolls the turn back and ends the episode.

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
    - after reset: ``task_id`` and ``task_index`` (None for a task given in ``options``);
    - optionally ``progress``: how far the episode has got towards the task, in [0, 1], on every
      step, so episodes cut short by a limit have one too. For analysis and shaping a training
      reward (:func:`tool_envs.integrations.trl.env_progress`); never part of the reward.

    **Subclasses** implement :meth:`default_tasks`, :meth:`_start_episode` (set up per-task state
    and return the toolset), :meth:`_on_reply` (what happens when the assistant talks to the user)
    and :meth:`_compute_reward`; they override :meth:`check_task` to reject rows they cannot run
    (naming the field) and may override :meth:`_end_episode` to release per-episode resources.
    ``close()`` must leave no process, socket or temp dir behind, and so must an env that is
    garbage collected without ``close()`` (use :func:`weakref.finalize`).
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
        self._reset_failure: str | None = None

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

    def check_task(self, task: dict[str, Any]) -> None:
        """Raise :class:`~tool_envs.errors.TaskRowError` naming the field if ``task`` (a row that
        passed the schema) lacks what this env needs, e.g. a numeric ``reward_spec.answer``.

        Called for every row of the task set when it is loaded (the error then names the row
        index) and for a row given to ``reset``, so a bad row fails before any episode starts
        rather than in the middle of one. The default accepts every row.
        """

    def _step_info(self) -> dict[str, Any]:
        """Env-specific keys added to every step's ``info`` (e.g. a search history)."""
        return {}

    def task_splits(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        """Named splits of the env's own task set; by default one ``train`` split."""
        return {"train": self.tasks}

    def own_task_splits(self) -> dict[str, list[Mapping[str, Any]]]:
        """:meth:`task_splits` with every row's ``env_id`` the id this env was made under.

        A class's own tasks belong to it whatever id it is registered under: registering
        ``CalculatorEnv`` as ``my/Calc-v0`` (to change its defaults) gives rows for
        ``my/Calc-v0``, which route back to it. Read these, not :meth:`task_splits`, wherever
        the env's own tasks are handed on (servers, eval, the recipes).
        """
        return {name: self._own_rows(rows) for name, rows in self.task_splits().items()}

    def _own_rows(self, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """``rows`` of the env's own task set, each naming the id this env was made under
        (unchanged when it was made without ``gymnasium.make``, or already names it)."""
        spec = self.unwrapped.spec
        if spec is None:
            return list(rows)
        own = []
        for row in rows:
            named = row.get("env_id") or row.get("env_class")
            if isinstance(named, str) and registered_id(named) == spec.id:
                own.append(row)
            else:
                kept = {key: value for key, value in row.items() if key != "env_class"}
                own.append({**kept, "env_id": spec.id})
        return own

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
    def message_count(self) -> int:
        """How many messages the conversation has (cheaper than ``len(env.messages)``)."""
        return len(self._messages)

    def messages_since(self, start: int) -> list[Message]:
        """Copies of the messages from index ``start`` on: what a step added, without copying
        the whole conversation (an env server sends only this)."""
        return [_copy_message(m) for m in self._messages[start:]]

    @property
    def steps_wait(self) -> bool:
        """Whether a reset or step may wait on something outside this process: a sandbox, a
        server, a model's API, a person.

        ``tool-envs serve`` runs the calls of an env that never waits on its event loop, with no
        hand-off to a thread (under the GIL a thread buys a short pure-Python step nothing and
        costs more than the step); an env that may wait gets a thread per call in flight, so it
        stalls no other session. True, the safe answer, unless a subclass knows better.
        """
        return True

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
        """The task set ``reset`` draws from (loaded and validated on first use).

        Rows of a default task set are shared with the env's other instances: read them, and
        copy one before changing it (``reset`` plays a copy).
        """
        if self._tasks is None:
            if self._task_source is not None:
                self._tasks = self._checked(load_tasks(self._task_source))  # route by env_id
            else:  # the class's own: its rows, whatever id it was registered under
                self._tasks = self._checked_default_tasks()
        return self._tasks

    def _checked(self, tasks: list[Any]) -> list[Any]:
        if not tasks:
            raise EnvConfigError(f"{type(self).__name__} has an empty task set")
        for index, task in enumerate(tasks):
            self._check_row(task, index)
        return tasks

    def _checked_default_tasks(self) -> list[Any]:
        source = self.default_tasks()
        key = self._check_key(source)
        kept = None if key is None else _kept(_CHECKED_TASKS, key, source)
        if kept is not None:
            return kept
        tasks = self._checked(self._own_rows(_validated_default_tasks(source)))
        return tasks if key is None else _keep(_CHECKED_TASKS, key, source, tasks)

    def _check_key(self, source: Any) -> tuple[Any, ...] | None:
        """What the checks of ``source``'s rows depend on, or None when that is not known: a
        source that is not a list, an env made without ``gymnasium.make``, or constructor
        arguments that are not plain JSON (an object may differ between equal-looking envs)."""
        spec = self.unwrapped.spec
        if not isinstance(source, list) or spec is None:
            return None
        try:
            arguments = json.dumps(spec.kwargs, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            return None
        return (id(source), type(self), spec.id, arguments)

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
        # Until this reset succeeds there is no episode: a row rejected below must not leave
        # step() playing on the previous episode.
        self._needs_reset = True
        self._end_episode()
        self._clear_episode()
        try:
            index, task = self._pick_task(row)
            toolset = self._start_episode(messages.copy_json(task))
        except Exception as exc:
            self._reset_failure = f"{type(exc).__name__}: {exc}"
            raise
        self._task, self._toolset = task, toolset
        self._messages = messages.copy_json(task["prompt"])
        self._needs_reset, self._reset_failure = False, None
        info = {"turn": 0, "task_id": task["extra_info"].get("id"), "task_index": index}
        return messages.copy_json(self._messages), info

    def step(self, action: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        if self._needs_reset:
            raise ResetNeeded(self._reset_needed_message())
        # Interpreted before anything changes: an action rejected with InvalidAction (a caller's
        # mistake, not a model's) leaves the turn counter and the conversation as they were.
        interpreted = interpret_action(action, self.parser, self._toolset.name_set, self._turn + 1)
        self._checkpoint = (self._turn, len(self._messages), dict(self._stats), len(self._call_log))
        try:
            return self._play_turn(interpreted)
        except InfrastructureError as exc:
            return self._void_turn(exc)
        except BaseException:
            # A bug in an env or tool: undo the turn and end the episode, whose state can no
            # longer be trusted; the caller sees the exception.
            self._roll_back()
            self._needs_reset = True
            self._reset_failure = "the previous step() raised"
            raise

    def _play_turn(
        self, interpreted: InterpretedAction
    ) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        self._turn += 1
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
        info = step_info(
            self._turn,
            self._stats,
            reward_info,
            tool_calls=(
                {"id": c.id, "name": c.name, "arguments": messages.copy_json(c.arguments)}
                for c in interpreted.calls
            ),
            parse_error=parse_error,
            tool_errors=tool_errors,
            extra=self._step_info(),
        )
        return [_copy_message(m) for m in observation], float(reward), terminated, False, info

    def _void_turn(
        self, exc: InfrastructureError
    ) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """End the episode as void, the conversation as it was before this turn.

        Gymnasium's ``truncated`` fits: the episode stopped for a reason outside the task.
        Rolling the turn back keeps ``messages``, the turn counter and the stats consistent (no
        assistant message without the reply it was waiting for).
        """
        self._roll_back()
        self._needs_reset = True
        reward_info = void_info(exc.cause, str(exc))
        return void_step(self._turn, self._stats, reward_info, extra=self._step_info())

    def _roll_back(self) -> None:
        """Undo the turn in progress: turn counter, stats, conversation and call log."""
        turn, length, stats, calls = self._checkpoint
        self._turn, self._stats = turn, stats
        del self._messages[length:]
        del self._call_log[calls:]

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return messages.render_transcript(self._messages)
        return None

    def close(self) -> None:
        self._end_episode()
        self._needs_reset = True

    # ----------------------------------------------------------------------- helpers

    def _pick_task(self, row: Any) -> tuple[int | None, dict[str, Any]]:
        """The task of the next episode: ``row`` checked, or one drawn from the task set."""
        if row is None:
            index = int(self.np_random.integers(len(self.tasks)))
            return index, messages.copy_json(self.tasks[index])
        task = validate_row(row)
        self._check_row(task, None)
        return None, task

    def _check_row(self, task: dict[str, Any], index: int | None) -> None:
        """The env-level checks of a schema-valid row; errors name the row index and field."""
        spec = self.unwrapped.spec
        if spec is not None and registered_id(task["env_id"]) != spec.id:
            raise TaskRowError(
                f"the row is for '{task['env_id']}' but this env is '{spec.id}'; "
                "route rows by their env_id (gymnasium.make(row['env_id']))",
                index=index,
                field="env_id",
            )
        try:
            self.check_task(task)
        except TaskRowError as exc:
            if index is None or exc.index is not None:
                raise
            raise TaskRowError(exc.detail, index=index, field=exc.field) from None

    def _clear_episode(self) -> None:
        """Forget the previous episode (its resources were released by ``_end_episode``)."""
        self._task = None
        self._toolset = Toolset()
        self._messages = []
        self._call_log = []
        self._turn = 0
        self._stats = _new_stats()

    def _reset_needed_message(self) -> str:
        if self._reset_failure is not None:
            return (
                f"no episode is running: the last reset() failed ({self._reset_failure}); call "
                "reset() again with a valid task"
            )
        return "step() was called before reset() or after the episode ended; call reset() first"


def _copy_message(message: Message) -> Message:
    """A copy the caller may change freely; flat messages (the usual case) need no deep copy."""
    if all(type(value) is str for value in message.values()):
        return message.copy()
    return messages.copy_json(message)


def _new_stats() -> dict[str, int]:
    return {"tool_calls": 0, "tool_errors": 0, "parse_errors": 0, "empty_responses": 0}
