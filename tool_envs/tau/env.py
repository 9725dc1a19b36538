"""The env every tau-style domain runs in: policy, tools over a DB, a simulated user, DB reward.

A domain env is one line: ``class TauRetailEnv(TauEnv): domain = RETAIL``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from tool_envs.core import options
from tool_envs.core.env import TaskSource, ToolEnv
from tool_envs.core.messages import Message
from tool_envs.core.messages import user as user_message
from tool_envs.core.parsers import ToolCallParser
from tool_envs.core.parsers.base import ToolCall
from tool_envs.core.tools import Toolset
from tool_envs.errors import EnvConfigError
from tool_envs.tau.checked_user import CheckedUser, StateOf
from tool_envs.tau.db import Database
from tool_envs.tau.domain import DatabaseTools, Domain, DomainTools
from tool_envs.tau.gold import gold_conversation
from tool_envs.tau.task import (
    TauRewardSpec,
    UserScenario,
    action_key,
    db_seed_of,
    parse_reward_spec,
    parse_scenario,
)
from tool_envs.tau.users.base import DeviceTools, UserSimulator
from tool_envs.tau.users.faults import (
    TaskState,
    UserFault,
    UserFaultCheck,
    fault_reward_info,
    stored_calls,
)

REWARD_BASES = ("db", "outputs", "actions")
_NOT_COMPARED = frozenset({"think", "calculate"})


def normalise_text(text: str) -> str:
    """What output matching compares: lower case, commas removed (so 1,234.5 matches 1234.5)."""
    return text.lower().replace(",", "")


def _outputs_said(spec: TauRewardSpec, conversation: Sequence[Message]) -> dict[str, bool]:
    """Each required output, and whether some agent message said it."""
    said = [
        normalise_text(m.get("content") or "") for m in conversation if m["role"] == "assistant"
    ]
    return {out: any(normalise_text(out) in text for text in said) for out in spec.outputs}


def make_user(
    user: str | UserSimulator,
    keywords: Mapping[str, tuple[str, ...]] | None = None,
    **kwargs: Any,
) -> UserSimulator:
    """A user simulator from its name (``scripted``, ``llm``, ``human``) or an instance.

    ``keywords`` are the domain's words for ``known_info`` fields (scripted users only).
    """
    if isinstance(user, UserSimulator):
        if kwargs:
            raise EnvConfigError("user_kwargs only apply when user is given by name")
        return user
    if user == "scripted":
        from tool_envs.tau.users.scripted import ScriptedUser

        return ScriptedUser(keywords={**(keywords or {}), **kwargs.pop("keywords", {})})
    if user == "llm":
        from tool_envs.tau.users.llm import LLMUser

        return LLMUser(**kwargs)
    if user == "human":
        from tool_envs.tau.users.human import HumanUser

        return HumanUser(**kwargs)
    raise EnvConfigError(
        f"user={user!r} is not one of 'scripted', 'llm', 'human' or a UserSimulator"
    )


class TauEnv(CheckedUser, ToolEnv):
    """A customer-service conversation under a written policy, graded on the final database.

    The agent sees the domain policy (system prompt) and the user's first message; it calls the
    domain's tools and talks to a simulated user, who answers each message without tool calls.
    The episode ends when the user says ``###STOP###`` or a terminating tool
    (``transfer_to_human_agents``) is called; the registered turn limit truncates it (reward 0).

    Reward (tau-bench semantics), the product of the bases in ``reward_basis``:

    - ``db``: the final database hash equals the hash after replaying the gold actions on a
      fresh database (cached per task);
    - ``outputs``: every required output appears in some agent message (case-insensitive,
      commas removed);
    - ``actions`` (opt-in): every gold action was called with the same name and arguments, so a
      do-nothing agent cannot pass tasks whose gold is read-only.

    Whatever the basis, every step's ``info["progress"]`` is the share of the gold actions the
    agent has made so far: partial progress, for analysis and for shaping a training reward
    (:func:`tool_envs.integrations.trl.env_progress`); it never changes the reward.

    Args:
        tasks: Task rows or a source for :func:`tool_envs.data.load_tasks`; default: the
            domain's train split.
        parser: Tool-call parser name or instance.
        render_mode: None or ``"ansi"``.
        user: ``"scripted"`` (deterministic, offline; default), ``"llm"`` (any
            OpenAI-compatible endpoint), ``"human"`` (stdin) or a :class:`UserSimulator`.
        user_kwargs: Arguments for the user simulator (e.g. ``model``, ``base_url``,
            ``strategy`` for ``llm``).
        reward_basis: Which checks the reward multiplies; default ``("db", "outputs")``.
        check_user: Check every user turn against its scenario (default). A user that breaks
            it (stops before its task is done, invents an id, leaks its instructions, answers
            a confirmation against its scenario) ends the episode void with
            ``reward_info["user_fault"]``: see :mod:`tool_envs.tau.users.faults`.

    Every step's ``info`` carries ``user_usage`` (the simulated user's calls, tokens and cost so
    far this episode), so truncated and voided episodes report it too. A user simulator that
    fails (an LLM user's API after its retries) raises ``InfrastructureError`` and the episode
    is void, not the agent's failure (see :mod:`tool_envs.core.outcome`).
    """

    domain: ClassVar[Domain]
    _gold_hashes: ClassVar[dict[tuple[str, str], str]] = {}

    def __init__(
        self,
        *,
        tasks: TaskSource | None = None,
        parser: str | ToolCallParser = "auto",
        render_mode: str | None = None,
        user: str | UserSimulator = "scripted",
        user_kwargs: Mapping[str, Any] | None = None,
        reward_basis: Sequence[str] = ("db", "outputs"),
        check_user: bool = True,
    ):
        super().__init__(tasks=tasks, parser=parser, render_mode=render_mode)
        if not isinstance(check_user, bool):
            raise EnvConfigError(f"check_user must be True or False, got {check_user!r}")
        self.check_user = check_user
        if isinstance(reward_basis, str) or not isinstance(reward_basis, (list, tuple)):
            raise EnvConfigError(
                f"reward_basis={reward_basis!r} must be a non-empty list drawn from {REWARD_BASES}"
            )
        unknown = [basis for basis in reward_basis if basis not in REWARD_BASES]
        if unknown or not reward_basis:
            raise EnvConfigError(
                f"reward_basis={reward_basis!r} must be a non-empty list drawn from {REWARD_BASES}"
            )
        self.reward_basis = tuple(reward_basis)
        user_kwargs = options.mapping("user_kwargs", user_kwargs)
        self.user = make_user(user, self.domain.user_keywords, **user_kwargs)
        self._domain_tools: DomainTools = self.domain.tools()
        self._toolset = self._tools = Toolset.from_object(self._domain_tools)
        # Dual control: the user's own device tools, acting on the same episode database.
        self._user_tools: DatabaseTools | None = None
        self._device: DeviceTools | None = None
        if self.domain.user_tools is not None:
            self._user_tools = self.domain.user_tools()
            self._device = DeviceTools(Toolset.from_object(self._user_tools))
        self._db: Database | None = None
        self._db_seed = 0
        self._spec = TauRewardSpec()
        self._gold_keys: dict[str, str] = {}  # compared gold action's label -> its action key
        self._made_keys: set[str] = set()
        self._keyed: tuple[int, int] | None = None  # call-log lengths _made_keys covers
        self._scenario: UserScenario | None = None
        self._user_stopped = False
        self._user_check: UserFaultCheck | None = None
        self._user_fault: UserFault | None = None

    # ----------------------------------------------------------------------- ToolEnv hooks

    def default_tasks(self) -> Sequence[Mapping[str, Any]]:
        return self.domain.load_splits()["train"]

    def task_splits(self) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        return self.domain.load_splits()

    def gold_turns(self, task: Mapping[str, Any]) -> list[str] | None:
        """The gold conversation: ask for what the user knows, confirm each change, report.

        See :mod:`tool_envs.tau.gold`. A user (device) action is a message asking the user to do
        it, in the words of the scenario's matching ``user_actions`` entry.
        """
        return gold_conversation(
            parse_reward_spec(task["reward_spec"]),
            parse_scenario(task["extra_info"]),
            writes=lambda name: name in self._toolset.names and self._toolset[name].writes,
            identity_ask=self.domain.identity_ask,
        )

    def check_task(self, task: dict[str, Any]) -> None:
        parse_reward_spec(task["reward_spec"])
        parse_scenario(task["extra_info"])
        self.domain.base(db_seed_of(task["extra_info"]))

    def _start_episode(self, task: dict[str, Any]) -> Toolset:
        self._spec = parse_reward_spec(task["reward_spec"])
        self._gold_keys = {
            f"{a.name}({json.dumps(a.arguments, sort_keys=True)})": action_key(a.name, a.arguments)
            for a in self._spec.actions
            if a.name not in _NOT_COMPARED
        }
        self._scenario = parse_scenario(task["extra_info"])
        self._db_seed = db_seed_of(task["extra_info"])
        self._db = self.domain.new_database(self._db_seed)
        self._domain_tools.db = self._db
        if self._user_tools is not None and self._device is not None:
            self._user_tools.db = self._db
            self._device.calls.clear()
        self._user_stopped = False
        self._keyed = None  # no call of this episode has an action key yet
        self._start_user(task, self._scenario, self._device)
        return self._tools

    def _on_reply(self, content: str) -> tuple[list[Message], bool]:
        answer = self.user.reply(content)
        self._user_stopped = self._ends_conversation(answer)
        faulted = self._check_reply(content, answer, self._user_stopped)
        return [user_message(answer)], self._user_stopped or faulted

    def _task_state(self) -> TaskState:
        """How far the task is, for the user check (see :class:`TaskState`)."""
        return self._state_of(self._spec, self._made_action_keys(), self._messages)

    def _state_of(
        self, spec: TauRewardSpec, made_keys: set[str], conversation: Sequence[Message]
    ) -> TaskState:
        """The state of ``spec``'s task after the calls ``made_keys`` and ``conversation``."""
        compared = [a for a in spec.actions if a.name not in _NOT_COMPARED]
        made = [action_key(a.name, a.arguments) in made_keys for a in compared]
        missing = [out for out, said in _outputs_said(spec, conversation).items() if not said]
        pending = [
            action.arguments
            for action, done in zip(compared, made, strict=True)
            if not done and action.name in self._tools.names and self._tools[action.name].writes
        ]
        return TaskState.of(made, missing, pending, (action.arguments for action in spec.actions))

    def _user_keywords(self) -> Mapping[str, tuple[str, ...]]:
        return self.domain.user_keywords

    def _stored_state(
        self, task: Mapping[str, Any], device_calls: Sequence[Mapping[str, Any]]
    ) -> StateOf:
        spec = parse_reward_spec(task["reward_spec"])
        device = {action_key(c["name"], c.get("arguments") or {}) for c in device_calls}

        def state_of(before: Sequence[Message]) -> TaskState:
            made = {action_key(name, arguments) for name, arguments in stored_calls(before)}
            return self._state_of(spec, made | device, before)

        return state_of

    def _device_outputs(self) -> list[str]:
        return [outcome.content for _, outcome in self._device.calls] if self._device else []

    def _step_info(self) -> dict[str, Any]:
        return {"user_usage": self.user.usage.as_dict(), "progress": self._gold_action_share()}

    def _compute_reward(self) -> tuple[float, dict[str, Any]]:
        assert self._db is not None
        if self._user_fault is not None:
            info = fault_reward_info(self._user_fault)
            info.update(user_strategy=self.user.strategy, user_usage=self.user.usage.as_dict())
            return 0.0, info
        info: dict[str, Any] = {"basis": list(self.reward_basis)}
        passed: list[bool] = []
        if "db" in self.reward_basis:
            info["db_match"] = self._db.hash() == self.gold_hash(self._spec, self._db_seed)
            passed.append(info["db_match"])
        if "outputs" in self.reward_basis:
            info["outputs"] = _outputs_said(self._spec, self._messages)
            passed.append(all(info["outputs"].values()))
        actions = self._gold_actions_made()
        if "actions" in self.reward_basis:
            info["actions"] = actions
            passed.append(all(actions.values()))
        reward = 1.0 if all(passed) else 0.0
        failed = [
            name
            for name, ok in (
                ("database differs from the gold replay", info.get("db_match", True)),
                ("a required output was not said", all(info.get("outputs", {}).values())),
                ("a gold action was not taken", all(info.get("actions", {}).values())),
            )
            if not ok
        ]
        ended = "user stopped" if self._user_stopped else "terminating tool"
        if self._device is not None:
            info["user_device_calls"] = [
                {"name": c.name, "arguments": c.arguments, "error": o.error, "content": o.content}
                for c, o in self._device.calls
            ]
        info.update(
            reward=reward,
            reason="; ".join(failed) if failed else f"all checks passed ({ended})",
            user_usage=self.user.usage.as_dict(),
            user_strategy=self.user.strategy,
            user_checks=self._user_checks(),
        )
        return reward, info

    def _gold_action_share(self) -> float | None:
        """Share of the compared gold actions made so far (None: the task has none)."""
        actions = self._gold_actions_made()
        return sum(actions.values()) / len(actions) if actions else None

    def _gold_actions_made(self) -> dict[str, bool]:
        """Each compared gold action (``name({arguments})``) and whether the agent or the
        user's device made it, with the same name and arguments."""
        made = self._made_action_keys()
        return {label: key in made for label, key in self._gold_keys.items()}

    def _made_action_keys(self) -> set[str]:
        """Action keys of the agent's and the user device's calls so far, extended rather than
        rebuilt on each step (progress is reported every step; an episode may make hundreds of
        calls)."""
        logs = (self._call_log, self._device.calls if self._device is not None else [])
        seen = self._keyed
        if seen is None or any(len(log) < count for log, count in zip(logs, seen, strict=True)):
            self._made_keys = set()  # a new episode, or a rolled-back turn
            seen = (0, 0)
        for log, count in zip(logs, seen, strict=True):
            self._made_keys.update(action_key(c.name, c.arguments) for c, _ in log[count:])
        self._keyed = (len(logs[0]), len(logs[1]))
        return self._made_keys

    @property
    def steps_wait(self) -> bool:
        return self.user.waits

    def close(self) -> None:
        super().close()
        self.user.close()

    # ----------------------------------------------------------------------- gold replay

    def gold_hash(self, spec: TauRewardSpec, db_seed: int = 0) -> str:
        """Hash of a fresh database ``db_seed`` after the gold actions, computed once per
        distinct gold."""
        key = (
            f"{self.domain.name}:{db_seed}",
            json.dumps(spec.model_dump(mode="json")["actions"], sort_keys=True),
        )
        cached = self._gold_hashes.get(key)
        if cached is None:
            db, _ = self.replay(spec, db_seed)
            cached = self._gold_hashes[key] = db.hash()
        return cached

    def replay(self, spec: TauRewardSpec, db_seed: int = 0) -> tuple[Database, list[str]]:
        """Run the gold actions on a fresh database ``db_seed``; returns it and each call's
        result text."""
        episode_db = self._db
        db = self.domain.new_database(db_seed)
        self._bind(db)
        results = []
        try:
            for action in spec.actions:
                call = ToolCall(name=action.name, arguments=dict(action.arguments))
                if action.requestor == "user":
                    if self._device is None:
                        results.append(f"Error: {self.domain.name} has no user-side tools")
                        continue
                    results.append(self._device.toolset.call(call).content)
                else:
                    results.append(self._tools.call(call).content)
        finally:
            if episode_db is not None:
                self._bind(episode_db)
        return db, results

    def _bind(self, db: Database) -> None:
        self._domain_tools.db = db
        if self._user_tools is not None:
            self._user_tools.db = db
