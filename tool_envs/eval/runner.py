"""Run tasks x trials with an agent, writing each finished trial at once, resuming earlier runs.

The trials are played by :meth:`Player.stream <tool_envs.rollout.player.Player.stream>` (the
chat engine: ``concurrency`` whole episodes at once, so the API always has ``concurrency``
requests in flight), each reset with the seed ``derive_seed(seed, task index, trial)``; this
module keeps what is eval's: which trials are missing, the run's identity, the files, when to
stop, the summary and reports. The main thread owns the trajectories file and writes each trial
as the stream yields it. On Ctrl-C or a fatal API error the run stops scheduling, episodes in
flight end at their next turn, and every trial already written stays written; rerunning the
same command plays only what is missing.

A *void* trial (its episode ended because infrastructure failed: the simulated user's or the
judge's API, an env that raised; see :mod:`tool_envs.core.outcome`) says nothing about the agent.
It is not written as a finished trial, so a rerun replays it; it is logged to ``void.jsonl``,
counted in the summary, and ``void_limit`` void trials in a row stop the run with the reason, as
a failing agent API does.

A trial the simulated user spoiled (it broke its scenario: ``reward_info["user_fault"]``, see
:mod:`tool_envs.tau.users.faults`) is void too, but it is no outage that a rerun would mend: the
same user would likely spoil it again. It is written as a finished trial, scored in no metric,
and counted in the summary's user-fault rate per env and user strategy.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import gymnasium as gym

from tool_envs.core.outcome import VOID, outcome_of
from tool_envs.errors import EvalError, ToolEnvsError
from tool_envs.eval.metrics import is_success, summarize, user_fault_of
from tool_envs.eval.report import write_reports
from tool_envs.eval.result import EvalResult as EvalResult
from tool_envs.eval.store import TrajectoryStore, trial_key
from tool_envs.eval.tasks import EvalTask, derive_seed, load_eval_tasks
from tool_envs.registration import (
    check_env_kwargs,
    env_kwargs_for,
    for_env,
    registered_id,
    resolve_env_id,
)
from tool_envs.rollout.agents import Agent, GoldAgent, NoopAgent, OpenAIAgent
from tool_envs.rollout.chat_engine import ChatEpisode, acquire_env
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.env_pool import EnvPool
from tool_envs.rollout.player import Finished, Player, Policy
from tool_envs.serve.pool import check_env_servers

__all__ = ["AGENTS", "EvalConfig", "EvalResult", "run_eval"]

AGENTS = ("openai", "gold", "noop")
MODES = ("native", "text")
TRAJECTORIES = "trajectories.jsonl"
VOID_LOG = "void.jsonl"
RUN_FILE = "run.json"
_GRACE_SECONDS = 10.0  # how long Ctrl-C waits for requests already in flight

# Settings that change what a trial means: a rerun into the same folder must keep them (the base
# URL may change: the same model can move to another host or port).
_IDENTITY = (
    "agent",
    "model",
    "mode",
    "split",
    "env_kwargs",
    "user",
    "parser",
    "max_turns",
    "temperature",
    "max_tokens",
    "seed",
    "success_threshold",
)


@dataclass
class EvalConfig:
    """Everything one evaluation run needs (the CLI's flags, one to one).

    Attributes:
        envs: Env ids (their own tasks of ``split``) or task sources routed by ``env_id``.
        out: Folder for ``trajectories.jsonl``, ``summary.json``, the plot and the HTML report.
        agent: ``openai`` (a chat API), ``gold`` (replays gold turns) or ``noop``.
        model: Model name for the API (``openai`` agent only).
        base_url: OpenAI-compatible endpoint, e.g. ``http://localhost:8000/v1`` for vLLM;
            None uses the ``openai`` client's default (``OPENAI_BASE_URL`` or OpenAI).
        api_key: None reads ``OPENAI_API_KEY``; a local server without auth gets a dummy key.
        mode: ``native`` (tools sent as ``tools=``, structured calls) or ``text`` (tools in the
            system prompt, calls parsed from the reply's text by the env's parser).
        trials: Trials per task (the n of pass@k / pass^k).
        concurrency: Episodes played at once.
        limit: First tasks of each source; None for all.
        where: Keep tasks whose ``extra_info`` has these values.
        env_kwargs: Per env id, extra ``gymnasium.make`` arguments.
        env_servers: Per env id, ``tool-envs serve`` URL(s): those envs are played on the
            servers, whose constructor arguments they have (``env_kwargs``, ``user`` or
            ``parser`` for a served env that takes them are refused); a dead server voids its
            trials, which a rerun replays. The gold agent asks the servers for gold turns.
        ray_env_servers: Per env id, servers started on Ray for the run
            (:attr:`RolloutConfig.ray_env_servers
            <tool_envs.rollout.config.RolloutConfig.ray_env_servers>`, read the same way);
            they join ``env_servers`` and stop when the run ends.
        user: Passed as ``user=`` to the envs that have a simulated user (the others are made
            without it).
        parser: Passed as ``parser=`` to every env (the tool-call parser in text mode).
        max_turns: Overrides each env's ``max_episode_steps``.
        temperature, max_tokens: Sampling settings sent to the API (None: server default).
        seed: Base of the per-trial reset seeds.
        timeout, max_retries: The ``openai`` client's own request timeout and retries.
        price_per_million: (input, output) price per million tokens, for the cost column.
        success_threshold: Reward at which a trial counts as a success.
        void_limit: Void trials in a row (infrastructure failures: a simulated user's or judge's
            API, an env that raised) that stop the run; 0 never stops. Void trials are never
            saved as finished, so a rerun replays them.
        progress: Show a progress bar.
    """

    envs: list[str]
    out: str | os.PathLike[str]
    agent: str = "openai"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    mode: str = "native"
    split: str = "test"
    trials: int = 1
    concurrency: int = 8
    limit: int | None = None
    where: dict[str, Any] = field(default_factory=dict)
    env_kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)
    env_servers: dict[str, Any] = field(default_factory=dict)
    ray_env_servers: dict[str, Any] = field(default_factory=dict)
    user: str | None = None
    parser: str | None = None
    max_turns: int | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int = 0
    timeout: float = 120.0
    max_retries: int = 2
    price_per_million: tuple[float, float] | None = None
    success_threshold: float = 1.0
    void_limit: int = 3
    progress: bool = True

    def validate(self) -> None:
        """Raise :class:`EvalError` for settings that cannot work, before anything runs."""
        if not self.envs:
            raise EvalError("give at least one env (--env tool_envs/Calculator-v0)")
        if self.trials < 1:
            raise EvalError(f"--trials must be at least 1, got {self.trials}")
        if self.concurrency < 1:
            raise EvalError(f"--concurrency must be at least 1, got {self.concurrency}")
        if self.agent not in AGENTS:
            raise EvalError(f"--agent must be one of {list(AGENTS)}, got {self.agent!r}")
        if self.mode not in MODES:
            raise EvalError(f"--mode must be one of {list(MODES)}, got {self.mode!r}")
        if self.agent == "openai" and not self.model:
            raise EvalError("the openai agent needs --model (the name the API serves)")
        if self.max_turns is not None and self.max_turns < 1:
            raise EvalError(f"--max-turns must be at least 1, got {self.max_turns}")
        if self.seed < 0:
            raise EvalError(f"--seed must be >= 0, got {self.seed}")
        if self.void_limit < 0:
            raise EvalError(f"--void-limit must be >= 0 (0: never stop), got {self.void_limit}")
        if self.price_per_million is not None and min(self.price_per_million) < 0:
            raise EvalError("--price-per-million takes two non-negative numbers: IN OUT")
        try:
            check_env_kwargs(self.env_kwargs, "--env-kwargs")
            check_env_servers(self.env_servers, self.env_kwargs, option="--env-servers")
            if self.ray_env_servers:  # Ray's launcher is imported only by runs that use it
                from tool_envs.serve.cluster.launcher import check_ray_env_servers

                check_ray_env_servers(self.ray_env_servers, self.env_servers)
        except ValueError as exc:
            raise EvalError(str(exc)) from exc

    def identity(self) -> dict[str, Any]:
        """The settings a resumed run must share with the run it continues."""
        # Read field by field: asdict would deep-copy the env_servers' pools (and their locks).
        identity = {name: getattr(self, name) for name in _IDENTITY}
        if self.agent != "openai":  # API settings mean nothing to the scripted agents
            for name in ("model", "mode", "temperature", "max_tokens"):
                identity[name] = None
        return identity


def _check_run_file(out: Path, config: EvalConfig, has_trials: bool) -> None:
    """Refuse to mix trials of different settings in one folder.

    Only finished trials bind a folder to its settings: a run that stopped before finishing
    any (a typo in ``--model`` answered by a 404) leaves nothing to mix with, so the corrected
    command may use the folder.
    """
    path = out / RUN_FILE
    identity = json.loads(json.dumps(config.identity(), default=str))
    if path.exists() and has_trials:
        previous = json.loads(path.read_text(encoding="utf-8")).get("identity", {})
        changed = {k: (previous.get(k), v) for k, v in identity.items() if previous.get(k) != v}
        if changed:
            details = "; ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in changed.items())
            raise EvalError(
                f"{out} holds trials of a run with other settings ({details}); "
                "use another --out, or the same settings to resume it"
            )


def _write_run_file(out: Path, config: EvalConfig) -> None:
    """Remember the settings, once the run is known to start, for the next rerun to compare."""
    identity = json.loads(json.dumps(config.identity(), default=str))
    record = {"identity": identity, "trials": config.trials, "envs": list(config.envs)}
    (out / RUN_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def make_agent(config: EvalConfig) -> tuple[Agent, Any]:
    """The agent, and the API client to close afterwards (None for scripted agents)."""
    if config.agent == "gold":
        return GoldAgent(), None
    if config.agent == "noop":
        return NoopAgent(), None
    import openai

    from tool_envs.rollout.backends.openai_chat import OpenAIChatBackend

    api_key = config.api_key or os.environ.get("OPENAI_API_KEY")
    if not api_key:
        if config.base_url is None:
            raise EvalError("set OPENAI_API_KEY (or --api-key), or give --base-url of a server")
        api_key = "EMPTY"  # local servers (vllm serve) accept any key
    client = openai.OpenAI(
        base_url=config.base_url,
        api_key=api_key,
        timeout=config.timeout,
        max_retries=config.max_retries,
    )
    backend = OpenAIChatBackend(
        client,
        str(config.model),
        native_tools=config.mode == "native",
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        concurrency=config.concurrency,
    )
    return OpenAIAgent(backend), client


def env_settings(config: EvalConfig, env_ids: list[str]) -> RolloutConfig:
    """The run's env settings as the engines take them: ``--env-kwargs`` per env id, with
    ``--user`` and ``--parser`` for the in-process envs whose constructors take them, and
    ``--max-turns`` and ``--env-servers`` (validated as in :meth:`EvalConfig.validate`); the
    chat engine plays ``--concurrency`` trials at once (one at a time for the scripted agents),
    and never refuses a run for its void trials (``--void-limit`` stops it instead)."""
    env_kwargs = {}
    for env_id in env_ids:
        if for_env(config.env_servers, env_id) is not None:
            continue  # a served env's constructor arguments are its server's
        kwargs = env_kwargs_for(config.env_kwargs, env_id)
        for option, value in (("user", config.user), ("parser", config.parser)):
            if value is not None and env_takes(env_id, option):
                kwargs.setdefault(option, value)
        env_kwargs[env_id] = kwargs
    try:
        return RolloutConfig(
            max_turns=config.max_turns,
            env_kwargs=env_kwargs,
            env_servers=config.env_servers,
            max_concurrent_requests=config.concurrency if config.agent == "openai" else 1,
            max_void_fraction=1.0,
        )
    except ValueError as exc:
        raise EvalError(str(exc)) from exc


@contextlib.contextmanager
def _env_of(pool: EnvPool, env_id: str) -> Iterator[gym.Env]:
    """An env of ``env_id`` from the pool, returned to it afterwards."""
    env = acquire_env(pool, env_id)
    try:
        yield env
    finally:
        pool.release(env_id, env)


def env_takes(env_id: str, argument: str) -> bool:
    """Whether ``gymnasium.make(env_id, **{argument: ...})`` is accepted by the env's constructor
    (e.g. ``user=`` only by envs with a simulated user)."""
    from gymnasium.envs.registration import load_env_creator

    entry_point = gym.spec(env_id).entry_point
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    try:
        parameters = inspect.signature(creator).parameters.values()
    except (TypeError, ValueError):  # no signature to read: let make() decide
        return True
    return any(p.name == argument or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _check_user_applies(config: EvalConfig, env_ids: list[str]) -> None:
    """``--user`` for a run where no env has a simulated user is a mistake worth naming."""
    if config.user is not None and not any(env_takes(e, "user") for e in env_ids):
        raise EvalError(
            f"--user {config.user} applies to envs with a simulated user, and none of "
            f"{env_ids} has one; leave --user out"
        )


def _check_served_options(config: EvalConfig, env_ids: list[str]) -> None:
    """``--user`` and ``--parser`` become constructor arguments, which a served env takes from its
    server only: refused for the served envs that take them, rather than recorded in
    ``run.json`` as if they had been used."""
    served = {**config.env_servers, **config.ray_env_servers}
    for env_id in env_ids:
        if for_env(served, env_id) is None:
            continue
        on_ray = for_env(config.ray_env_servers, env_id) is not None
        flag = "--ray-env-servers" if on_ray else "--env-servers"
        for option, value in (("user", config.user), ("parser", config.parser)):
            if value is not None and env_takes(env_id, option):
                kwargs = json.dumps({option: value})
                raise EvalError(
                    f"--{option} {value} cannot reach {env_id}: it is served ({flag}), "
                    "so its constructor arguments are the server's; start it with `tool-envs "
                    f"serve {env_id} --env-kwargs '{kwargs}'` and leave --{option} out"
                )


def _preflight(config: EvalConfig, tasks: dict[str, list[EvalTask]]) -> None:
    """Make each env once, so bad kwargs fail before any API call, with a clear message."""
    pool = EnvPool(env_settings(config, list(tasks)))
    try:
        for env_id, env_tasks in tasks.items():
            with _env_of(pool, env_id) as env:
                if config.agent != "gold" or for_env(config.env_servers, env_id) is None:
                    continue
                try:  # a server that cannot give gold turns fails here, not every trial
                    env.unwrapped.gold_turns(env_tasks[0].row)
                except ToolEnvsError as exc:
                    raise EvalError(f"--agent gold cannot play {env_id}: {exc}") from exc
    finally:
        pool.close()


def _record(episode: ChatEpisode, task: EvalTask, trial: int, config: EvalConfig) -> dict[str, Any]:
    """The trial's line in ``trajectories.jsonl`` (or ``void.jsonl``)."""
    result = episode.result
    messages = episode.messages
    texts = iter(result.raw_texts)
    for message in messages:
        if message["role"] == "assistant":
            raw = next(texts, None)
            if raw is not None and raw != message.get("content"):
                message["raw"] = raw  # text mode: what the model wrote, markup included
    info = result.info
    reward_info = info.get("reward_info")
    helpers = {name: info.get(f"{name}_usage") for name in ("user", "judge")}
    return {
        "env_id": task.env_id,
        "task_id": task.task_id,
        "task_index": task.index,
        "trial": trial,
        "seed": episode.seed,
        "agent": config.agent,
        "model": config.model if config.agent == "openai" else None,
        "reward": result.reward,
        "success": is_success({"reward": result.reward}, config.success_threshold),
        "outcome": outcome_of(result.reward, reward_info),
        "terminated": result.terminated,
        "truncated": result.truncated,
        "turns": len(result.raw_texts),  # steps the agent took, a voided last one included
        "stats": info.get("stats", {}),
        "reward_info": reward_info,
        "usage": result.usage if config.agent == "openai" else None,
        "helper_usage": {k: v for k, v in helpers.items() if v is not None} or None,
        "finish_reasons": result.finish_reasons or None,
        "error": result.error,
        "seconds": round(episode.seconds, 3),
        "messages": messages,
    }


@contextlib.contextmanager
def _ctrl_c_sets(
    ctrl_c: threading.Event, stop: threading.Event, abandon: threading.Event
) -> Iterator[None]:
    """While running, Ctrl-C asks for a clean stop instead of raising at a random line.

    A KeyboardInterrupt raised inside the executor's bookkeeping could leave a future's lock
    held and hang the workers; the flags are checked at safe points instead: ``stop`` at once
    (no trial starts; those in flight end at their next turn and are kept if they finish), and
    ``abandon`` ``_GRACE_SECONDS`` later (stop waiting for them). A second Ctrl-C raises as
    usual. Signal handlers exist only in the main thread; elsewhere nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    grace = threading.Timer(_GRACE_SECONDS, abandon.set)
    grace.daemon = True

    def handler(signum: int, frame: Any) -> None:
        if ctrl_c.is_set():
            raise KeyboardInterrupt
        ctrl_c.set()
        stop.set()
        grace.start()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        grace.cancel()


def _progress(config: EvalConfig, total: int, done: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=done, unit="trial", desc="eval", disable=not config.progress)


def run_eval(config: EvalConfig) -> EvalResult:
    """Play every missing (task, trial), then write the summary, plot and HTML report.

    Returns the result even when interrupted (``interrupted=True``) or stopped by a fatal API
    error (``error`` set): reports then cover the trials finished so far.
    """
    config.validate()
    for env_id in [*config.env_kwargs, *config.env_servers, *config.ray_env_servers]:
        resolve_env_id(env_id)
    tasks = load_eval_tasks(config.envs, config.split, config.limit, config.where)
    for option, by_env in (
        ("--env-kwargs", config.env_kwargs),
        ("--env-servers", config.env_servers),
        ("--ray-env-servers", config.ray_env_servers),
    ):
        unknown = {registered_id(env_id) for env_id in by_env} - set(tasks)
        if unknown:
            raise EvalError(f"{option} names {sorted(unknown)}, which this run does not evaluate")
    _check_user_applies(config, list(tasks))
    _check_served_options(config, list(tasks))
    if not config.ray_env_servers:
        return _play_all(config, tasks)
    from tool_envs.serve.cluster.launcher import started_on_ray

    with started_on_ray(config.ray_env_servers, config.env_servers) as env_servers:
        return _play_all(replace(config, env_servers=env_servers, ray_env_servers={}), tasks)


def _play_all(config: EvalConfig, tasks: dict[str, list[EvalTask]]) -> EvalResult:
    """:func:`run_eval` once its settings are checked (and its Ray servers started)."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    store = TrajectoryStore(out / TRAJECTORIES)
    done = {trial_key(record) for record in store.load()}
    _check_run_file(out, config, has_trials=bool(done))
    jobs = [  # trial-major, so an interrupted run has whole rounds over the task set
        (task, trial)
        for trial in range(config.trials)
        for env_tasks in tasks.values()
        for task in env_tasks
        if (task.env_id, task.task_id, trial) not in done
    ]
    total = config.trials * sum(len(t) for t in tasks.values())
    if jobs:
        _preflight(config, tasks)
    agent, client = make_agent(config) if jobs else (None, None)
    _write_run_file(out, config)
    bar = _progress(config, total, total - len(jobs))
    state: dict[str, Any] = {"written": 0, "successes": 0, "error": None, "void_streak": 0}
    void_records: list[dict[str, Any]] = []
    void_log = TrajectoryStore(out / VOID_LOG)
    stop, ctrl_c, abandon = threading.Event(), threading.Event(), threading.Event()

    def collect(finished: Finished) -> None:
        task, trial = jobs[finished.index]
        if finished.episode is None:  # EvalError, or a bug: stop cleanly either way
            if state["error"] is None:
                exc = finished.error
                state["error"] = str(exc) if isinstance(exc, EvalError) else repr(exc)
                stop.set()
            return
        record = _record(finished.episode, task, trial, config)
        if record["outcome"] == VOID and not user_fault_of(record):  # an outage: replay it
            void_log.append(record)
            void_records.append(record)
            state["void_streak"] += 1
            if state["void_streak"] == config.void_limit and state["error"] is None:
                state["error"] = _void_stop_message(record, config.void_limit, out)
                stop.set()
            return
        state["void_streak"] = 0
        store.append(record)
        state["written"] += 1
        state["successes"] += record["success"] and record["outcome"] != VOID
        bar.update(1)
        bar.set_postfix(success=f"{state['successes'] / state['written']:.2f}", refresh=False)

    player = Player(Policy(agent=agent), env_settings(config, list(tasks))) if jobs else None
    try:
        with _ctrl_c_sets(ctrl_c, stop, abandon):
            if player is not None:
                rows = [task.row for task, _ in jobs]
                seeds = [derive_seed(config.seed, task.index, trial) for task, trial in jobs]
                # Episodes in flight after a stop end at their next turn; the ones that finish
                # meanwhile are kept. After Ctrl-C, abandon ends the wait for them.
                trials = player.stream(rows, seeds, stop=stop, abandon=abandon)
                with contextlib.closing(trials):
                    for finished in trials:
                        collect(finished)
    except KeyboardInterrupt:  # a second Ctrl-C: stop waiting
        ctrl_c.set()
        stop.set()
    finally:
        bar.close()
        playing = player is not None and player.engine.playing
        if player is not None:
            player.close()  # the pool stays open for episodes still playing
        if client is not None and not playing:
            client.close()
    interrupted = ctrl_c.is_set()
    error = state["error"]

    keys = {(t.env_id, t.task_id) for env_tasks in tasks.values() for t in env_tasks}
    order = {(t.env_id, t.task_id): i for i, t in enumerate(_flat(tasks))}
    records = [
        r
        for r in store.load()
        if (r["env_id"], r["task_id"]) in keys and int(r["trial"]) < config.trials
    ]
    records.sort(key=lambda r: (order[(r["env_id"], r["task_id"])], int(r["trial"])))
    summary = summarize(
        records,
        threshold=config.success_threshold,
        prices=config.price_per_million,
        void=void_records,
    )
    summary["run"] = {
        **config.identity(),
        "base_url": config.base_url if config.agent == "openai" else None,
        "envs": list(config.envs),
        "trials": config.trials,
        "limit": config.limit,
        "expected_trials": total,
        "finished_trials": len(records),
        "complete": len(records) == total,
        "void_trials": len(void_records),  # this run's, replayed by the next one
        "price_per_million": config.price_per_million,
    }
    result = EvalResult(
        records=records,
        summary=summary,
        out=out,
        new_trials=len(records) - (total - len(jobs)),  # counted from the file: exact
        skipped_trials=total - len(jobs),
        interrupted=interrupted,
        error=error,
    )
    categories = {}
    for task in _flat(tasks):
        info = task.row.get("extra_info") or {}
        category = info.get("category") or info.get("domain")
        if category:
            categories[(task.env_id, task.task_id)] = str(category)
    result.files = write_reports(result, [t.task_id for t in _flat(tasks)], categories)
    return result


def _void_stop_message(record: dict[str, Any], streak: int, out: Path) -> str:
    """Why the run stopped on void trials: the cause, the last reason, and what to do."""
    info = record.get("reward_info") or {}
    cause = info.get("void_cause", "infrastructure")
    reason = info.get("reason") or record.get("error") or "no reason given"
    return (
        f"{streak} trials in a row were void; the last one: {reason}. Void trials are not saved "
        f"as finished (they are logged in {out / VOID_LOG}): fix the {cause.replace('_', ' ')} "
        "and run the same command again to replay them"
    )


def _flat(tasks: dict[str, list[EvalTask]]) -> list[EvalTask]:
    return [task for env_tasks in tasks.values() for task in env_tasks]
