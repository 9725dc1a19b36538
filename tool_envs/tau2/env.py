"""The official tau2-bench domains as Gymnasium envs, graded exactly as tau2 grades them.

``gymnasium.make("tool_envs/Tau2Airline-v0")`` (also ``Tau2Retail-v0``, ``Tau2Telecom-v0``)
plays one of tau2's official tasks: tau2's policy in the system prompt, tau2's tool schemas,
tool calls executed by tau2's own environment objects, and a user from our simulators
(scripted by default; ``user="llm"`` for any OpenAI-compatible model). In telecom the user has
tau2's phone tools. The reward is tau2's (see :mod:`tool_envs.tau2.reward`), computed in
milliseconds instead of tau2's 0.4-1.0 s, and ``tests/test_tau2_parity.py`` checks it against
tau2's ``evaluate_simulation`` on every official task.
"""

from __future__ import annotations

import json
import threading
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, ClassVar

from gymnasium.error import ResetNeeded

from tool_envs.core import options
from tool_envs.core.env import TaskSource, ToolEnv
from tool_envs.core.messages import Message
from tool_envs.core.messages import user as user_message
from tool_envs.core.parsers import ToolCallParser
from tool_envs.core.parsers.base import ToolCall
from tool_envs.core.pickling import state_without
from tool_envs.core.tools import Toolset
from tool_envs.errors import EnvConfigError
from tool_envs.tau.checked_user import CheckedUser, StateOf
from tool_envs.tau.env import make_user
from tool_envs.tau.task import parse_scenario
from tool_envs.tau.users.base import STOP, DeviceTools, UserSimulator
from tool_envs.tau.users.faults import (
    FAULT_KINDS,
    TaskState,
    UserFault,
    UserFaultCheck,
    fault_reward_info,
    stored_calls,
)
from tool_envs.tau2.domains import (
    READ_ONLY_TYPES,
    SPLITS,
    Tau2Domain,
    import_tau2,
    load_domain,
)
from tool_envs.tau2.episode import EpisodeState, gold_deltas, prepare
from tool_envs.tau2.judge import OpenAIJudge
from tool_envs.tau2.reward import NLJudge, compute_reward, resolve_basis
from tool_envs.tau2.rows import USER_KEYWORDS, load_tau2_tasks, tau2_task, user_action_instruction
from tool_envs.tau2.state import WriteGate
from tool_envs.tau2.tools import Executed, Tau2Toolset, execute
from tool_envs.tau2.trajectory import to_tau2_messages

USER_STOPS = (STOP, "###TRANSFER###", "###OUT-OF-SCOPE###")
# tau2's scenarios are free text: whether the user accepts a change is not a field of theirs.
TAU2_FAULT_KINDS = tuple(kind for kind in FAULT_KINDS if kind != "contradiction")


class Tau2Env(CheckedUser, ToolEnv):
    """One official tau2-bench task per episode, rewarded exactly as tau2's evaluator does.

    The episode ends when the user stops (``###STOP###``, ``###TRANSFER###`` or
    ``###OUT-OF-SCOPE###``; reward computed), after ``max_errors`` failed tool calls (reward 0,
    as in tau2), or at the registered turn limit (truncated, reward 0).

    Args:
        tasks: Task rows or a source for :func:`tool_envs.data.load_tasks`; default: the
            official ``split`` of the domain.
        split: Which official split is the default task set (``train``, ``test``, ``base``;
            telecom also ``small`` and ``full``).
        parser: Tool-call parser name or instance.
        render_mode: None or ``"ansi"``.
        user: ``"scripted"`` (offline, deterministic), ``"llm"``, ``"human"`` or a
            :class:`~tool_envs.tau.users.base.UserSimulator`.
        user_kwargs: Arguments for the user simulator (``model``, ``base_url``, ``strategy``...).
        reward_basis: ``"task"`` (each task's own basis, tau2's default), ``"strict"`` (adds
            ``ACTION``, closing the do-nothing exploit) or a list of basis names.
        nl_judge: Judge of NL assertions: OpenAI-compatible settings (``{"model": ...,
            "base_url": ..., "api_key": ..., "max_tokens": ...}``, see
            :class:`~tool_envs.tau2.judge.OpenAIJudge`; checked here: a missing model or key or
            an unknown setting raises ``EnvConfigError``) or a callable ``(assertions,
            conversation) -> list[bool]``. Without one, NL_ASSERTION is reported as not scored.
            The judge is called only for tasks whose basis holds NL_ASSERTION: under the default
            ``reward_basis="task"`` no official airline or retail task does, so the env warns
            once when it is given but unused (pass a basis with ``"NL_ASSERTION"`` to use it).
            A judge that fails at run time voids the episode (cause ``"judge"``).
        max_errors: Failed tool calls that end the episode with reward 0 (tau2: 10).
        check_user: Check every user turn against its scenario (default): a user that stops
            before its task is done, invents an id or leaks its instructions ends the episode
            void with ``reward_info["user_fault"]`` (:mod:`tool_envs.tau.users.faults`; a
            contradiction of the scenario is not checked, tau2's scenarios being free text).

    Every step's ``info`` carries ``user_usage`` (the simulated user's calls, tokens and cost
    so far this episode) and, with an :class:`~tool_envs.tau2.judge.OpenAIJudge`,
    ``judge_usage``, so episodes that are truncated or voided report them too.
    """

    domain_name: ClassVar[str]
    user_stops = USER_STOPS
    user_fault_kinds = TAU2_FAULT_KINDS

    def __init__(
        self,
        *,
        tasks: TaskSource | None = None,
        split: str = "train",
        parser: str | ToolCallParser = "auto",
        render_mode: str | None = None,
        user: str | UserSimulator = "scripted",
        user_kwargs: Mapping[str, Any] | None = None,
        reward_basis: str | Sequence[str] = "task",
        nl_judge: NLJudge | Mapping[str, Any] | None = None,
        max_errors: int = 10,
        check_user: bool = True,
    ):
        super().__init__(tasks=tasks, parser=parser, render_mode=render_mode)
        resolve_basis(reward_basis, ())  # fail at construction on a bad option
        max_errors = options.integer("max_errors", max_errors, minimum=1)
        if not isinstance(split, str) or split not in SPLITS[self.domain_name]:
            raise EnvConfigError(
                f"tau2 {self.domain_name} has no split {split!r}; "
                f"choose one of {SPLITS[self.domain_name]}"
            )
        self.domain: Tau2Domain = load_domain(self.domain_name)
        self.split = split
        self.reward_basis = reward_basis
        if isinstance(nl_judge, Mapping):
            nl_judge = OpenAIJudge.from_settings(dict(nl_judge))
        elif nl_judge is not None and not callable(nl_judge):
            raise EnvConfigError(
                "nl_judge must be OpenAI-compatible settings (a dict with 'model', ...) or a "
                f"callable (assertions, conversation) -> list[bool]; got {type(nl_judge).__name__}"
            )
        self.nl_judge = nl_judge
        self.max_errors = max_errors
        if not isinstance(check_user, bool):
            raise EnvConfigError(f"check_user must be True or False, got {check_user!r}")
        self.check_user = check_user
        self._user_check: UserFaultCheck | None = None
        self._user_fault: UserFault | None = None
        user_kwargs = options.mapping("user_kwargs", user_kwargs)
        self.user = make_user(user, USER_KEYWORDS, **user_kwargs)
        self._environment = self.domain.new_environment()
        self._gate = WriteGate()
        self._toolset = self._agent_tools = Tau2Toolset(self.domain, "assistant", self._run)
        self._device: DeviceTools | None = None
        if self.domain.user_base is not None:
            self._device = DeviceTools(Tau2Toolset(self.domain, "user", self._run))
        self._tau2_task: Any = None
        self._state: EpisodeState | None = None
        # every call, agent's and user's, in order, with the index of the conversation
        # message it came before (a user's device call is not in the agent's conversation)
        self._calls: list[tuple[int, Executed]] = []
        self._errors = 0
        self._termination: str | None = None
        self._judge_start: dict[str, int] = {}
        self._judge_unused_warned = False

    # ----------------------------------------------------------------------- ToolEnv hooks

    def default_tasks(self) -> Sequence[Mapping[str, Any]]:
        return load_tau2_tasks(self.domain_name, self.split)

    def task_splits(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        return _LazySplits(self.domain)

    def gold_turns(self, task: Mapping[str, Any]) -> list[str] | None:
        """Each gold action as one turn (a user-side action as a request to the user), then a
        message with everything the task requires the agent to communicate."""
        criteria = task["reward_spec"].get("evaluation_criteria") or {}
        turns = []
        for action in criteria.get("actions") or []:
            if action.get("requestor", "assistant") == "user":
                ask = user_action_instruction(action["name"], action.get("arguments") or {})
                turns.append(f"Please {ask} now, then tell me what you see.")
            else:
                call = {"name": action["name"], "arguments": action.get("arguments") or {}}
                turns.append("<tool_call>\n" + json.dumps(call) + "\n</tool_call>")
        said = criteria.get("communicate_info") or []
        turns.append("All done." + (" For your information: " + "; ".join(said) if said else ""))
        return turns

    def check_task(self, task: dict[str, Any]) -> None:
        tau2_task(self.domain_name, task)
        parse_scenario(task["extra_info"])

    def _start_episode(self, task: dict[str, Any]) -> Toolset:
        self._tau2_task = tau2_task(self.domain_name, task)
        scenario = parse_scenario(task["extra_info"])
        self._state = prepare(self.domain, self._tau2_task, self._environment, self._gate)
        self._calls = []
        self._errors = 0
        self._termination = None
        if self._device is not None:
            self._device.calls.clear()
        self._start_user(task, scenario, self._device)
        self._judge_start = dict(getattr(self.nl_judge, "usage", None) or {})
        self._warn_if_judge_unused()
        return self._agent_tools

    def _warn_if_judge_unused(self) -> None:
        """Say once that a judge was given for nothing: it is easy to miss (defaults hide it)."""
        if self.nl_judge is None or self._judge_unused_warned:
            return
        criteria = self._tau2_task.evaluation_criteria
        task_basis = [b.value for b in criteria.reward_basis] if criteria is not None else []
        if "NL_ASSERTION" in resolve_basis(self.reward_basis, task_basis):
            return
        self._judge_unused_warned = True
        warnings.warn(
            "nl_judge is set but NL_ASSERTION is not in the reward basis, so the judge is never "
            "called (reward_basis='task' uses each task's own basis, and no official airline or "
            "retail task has NL_ASSERTION in it); to score NL assertions pass e.g. "
            "reward_basis=['DB', 'COMMUNICATE', 'NL_ASSERTION']",
            UserWarning,
            stacklevel=2,
        )

    def _step_info(self) -> dict[str, Any]:
        """Helper usage so far this episode, on every step (a void or truncated end keeps it)."""
        info: dict[str, Any] = {"user_usage": self.user.usage.as_dict()}
        if isinstance(self.nl_judge, OpenAIJudge):
            info["judge_usage"] = {
                k: v - self._judge_start.get(k, 0) for k, v in self.nl_judge.usage.items()
            }
        return info

    def _run(self, call: ToolCall, requestor: str) -> tuple[Executed, bool]:
        """Execute a call of the agent or the user; True when it ends the episode (tau2 stops
        a run once ``max_errors`` tool calls have failed)."""
        content, error = execute(
            self._environment, self._gate, self.domain.tool_types[requestor], call, requestor
        )
        call_id = call.id or f"{requestor}_call_{len(self._calls)}"
        executed = Executed(requestor, call_id, call.name, call.arguments, content, error)
        self._calls.append((len(self._messages), executed))
        self._errors += error
        if self._errors >= self.max_errors and self._termination is None:
            self._termination = "too_many_errors"
        return executed, self._termination == "too_many_errors"

    def _on_reply(self, content: str) -> tuple[list[Message], bool]:
        answer = self.user.reply(content)
        stopped = self._ends_conversation(answer)
        if self._termination is None and stopped:
            self._termination = "user_stop"
        faulted = self._check_reply(content, answer, stopped)
        return [user_message(answer)], self._termination is not None or faulted

    def _device_outputs(self) -> list[str]:
        return [c.content for _, c in self._calls if c.requestor == "user"]

    def _task_state(self) -> TaskState:
        calls = [(c.requestor, c.name, c.arguments) for _, c in self._calls]
        return self._state_of(self._tau2_task, calls, self._messages)

    def _state_of(
        self, task: Any, calls: Sequence[tuple[str, str, dict[str, Any]]], conversation: Any
    ) -> TaskState:
        """How far ``task`` is after ``calls`` (requestor, name, arguments): tau2's gold actions
        made (by name and compared arguments) and the facts it must communicate said."""
        criteria = task.evaluation_criteria
        actions = list(criteria.actions or []) if criteria is not None else []
        made = [_made(action, calls) for action in actions]
        said = (
            " ".join((m.get("content") or "") for m in conversation if m["role"] == "assistant")
            .lower()
            .replace(",", "")
        )
        facts = list(criteria.communicate_info or []) if criteria is not None else []
        missing = [fact for fact in facts if fact.lower().replace(",", "") not in said]
        pending = [
            action.arguments
            for action, done in zip(actions, made, strict=True)
            if not done
            and self.domain.tool_types.get(action.requestor, {}).get(action.name)
            not in READ_ONLY_TYPES
        ]
        return TaskState.of(made, missing, pending, (action.arguments for action in actions))

    def _user_keywords(self) -> Mapping[str, tuple[str, ...]]:
        return USER_KEYWORDS

    def _stored_state(
        self, task: Mapping[str, Any], device_calls: Sequence[Mapping[str, Any]]
    ) -> StateOf:
        tau2 = tau2_task(self.domain_name, task)
        device = [("user", c["name"], c.get("arguments") or {}) for c in device_calls]

        def state_of(before: Sequence[Message]) -> TaskState:
            made = [("assistant", name, arguments) for name, arguments in stored_calls(before)]
            return self._state_of(tau2, [*made, *device], before)

        return state_of

    def _compute_reward(self) -> tuple[float, dict[str, Any]]:
        if self._user_fault is not None:
            info = fault_reward_info(self._user_fault)
            info.update(self._step_info(), user_strategy=self.user.strategy)
            return 0.0, info
        assert self._state is not None and self._termination is not None
        task = self._tau2_task
        reward, info = compute_reward(
            task=task,
            basis_option=self.reward_basis,
            termination=self._termination,
            state=self._state,
            gold=gold_deltas(self.domain, task),
            environment=self._environment,
            gate=self._gate,
            tau2_messages=self.tau2_messages(),
            conversation=self._messages,
            nl_judge=self.nl_judge,
        )
        info.update(self._step_info())  # this episode's user and judge calls and tokens
        info.update(
            user_strategy=self.user.strategy,
            user_checks=self._user_checks(),
        )
        if self._device is not None:
            info["user_device_calls"] = [
                {"name": c.name, "arguments": c.arguments, "error": c.error, "content": c.content}
                for _, c in self._calls
                if c.requestor == "user"
            ]
        return reward, info

    @property
    def steps_wait(self) -> bool:
        return self.user.waits or self.nl_judge is not None

    def close(self) -> None:
        super().close()
        self.user.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the shared domain and databases: a clone rebuilds its episode by
        replaying the calls made so far on fresh databases (as tau2's ``set_state`` does)."""
        return state_without(self, dropped=("domain", "_environment", "_gate", "_state"))

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.domain = load_domain(self.domain_name)
        self._environment = self.domain.new_environment()
        self._gate = WriteGate()
        self._state = None
        if self._tau2_task is not None:
            self._state = prepare(self.domain, self._tau2_task, self._environment, self._gate)
            for _, done in self._calls:
                call = ToolCall(name=done.name, arguments=dict(done.arguments), id=done.call_id)
                types = self.domain.tool_types[done.requestor]
                execute(self._environment, self._gate, types, call, done.requestor)

    # ----------------------------------------------------------------------- tau2 interop

    @property
    def tau2_task(self) -> Any:
        """The tau2 ``Task`` of the current episode."""
        return self._tau2_task

    @property
    def termination(self) -> str | None:
        """``user_stop``, ``too_many_errors`` or None while the episode runs (or was truncated)."""
        return self._termination

    def tau2_messages(self) -> list[Any]:
        """The episode so far as tau2 messages, user device calls included."""
        return to_tau2_messages(self._messages, self._calls)

    def tau2_simulation(self) -> Any:
        """The episode as a tau2 ``SimulationRun``: save it with tau2's tools or grade it with
        ``tau2.evaluator.evaluator.evaluate_simulation``. An episode still running (or cut by
        the turn limit) counts as ``max_steps``."""
        if self._tau2_task is None:
            raise ResetNeeded("tau2_simulation() needs an episode; call reset() first")
        simulation = import_tau2("tau2.data_model.simulation")
        now = datetime.now(timezone.utc).isoformat()
        return simulation.SimulationRun(
            id=f"{self._tau2_task.id}-{uuid.uuid4().hex[:8]}",
            task_id=self._tau2_task.id,
            start_time=now,
            end_time=now,
            duration=0.0,
            termination_reason=self._termination or "max_steps",
            messages=self.tau2_messages(),
        )


def _made(action: Any, calls: Sequence[tuple[str, str, dict[str, Any]]]) -> bool:
    """Some call matches the gold action (tau2 compares ``compare_args``)."""
    keys = action.compare_args if action.compare_args is not None else action.arguments
    wanted = {key: action.arguments.get(key) for key in keys}
    return any(
        requestor == action.requestor
        and name == action.name
        and {key: arguments.get(key) for key in keys} == wanted
        for requestor, name, arguments in calls
    )


class _LazySplits(Mapping[str, Sequence[Mapping[str, Any]]]):
    """Splits are converted only when asked for (telecom's ``full`` has 2,285 tasks)."""

    def __init__(self, domain: Tau2Domain):
        self._domain = domain
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def __getitem__(self, split: str) -> Sequence[Mapping[str, Any]]:
        with self._lock:
            if split not in self._rows:
                self._rows[split] = load_tau2_tasks(self._domain.name, split)
            return self._rows[split]

    def __iter__(self) -> Iterator[str]:
        return iter(SPLITS[self._domain.name])

    def __len__(self) -> int:
        return len(SPLITS[self._domain.name])


class Tau2AirlineEnv(Tau2Env):
    domain_name = "airline"


class Tau2RetailEnv(Tau2Env):
    domain_name = "retail"


class Tau2TelecomEnv(Tau2Env):
    domain_name = "telecom"
