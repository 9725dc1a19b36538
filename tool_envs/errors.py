"""Exceptions raised by tool_envs: one tree, so ``except ToolEnvsError`` catches them all.

Only mistakes of the *caller*, and failures of what an episode depends on, raise. What a model
writes never raises out of ``env.step``: it becomes an error observation and a counter in
``info``. Every class keeps a built-in second base where callers catch by kind (``except
ValueError``). Classes declared beside the code that raises them (module in brackets) are
re-exported here, imported on first use so that this module stays light.

    ToolEnvsError
    ├── TaskRowError          (also ValueError)  a task row is malformed
    ├── ToolDefinitionError   (also TypeError)   a Python function cannot become a tool
    ├── EnvConfigError        (also ValueError)  an env was built with bad arguments
    │   ├── UnknownEnvError                        an env id is not registered
    │   └── CorpusError                            a search corpus cannot be used [search.corpus]
    ├── MissingDependencyError (also ImportError) an optional extra is not installed
    │   └── Tau2NotInstalledError                  tau2 or what its domains import [tau2.domains]
    ├── MCPCallError          (also ValueError)  an MCP request failed [mcp.client]; inside an
    │   │                                        env these become error observations, out of
    │   │                                        reset (a server that cannot start) they raise
    │   ├── MCPTimeoutError                        a call outlived its timeout
    │   ├── MCPConnectionError                     a server cannot be started or reached, or died
    │   ├── MCPToolError                           a tool reported failure
    │   └── MCPProtocolError                       a JSON-RPC error (unknown tool, ...)
    ├── InfrastructureError   (also RuntimeError) a helper the episode depends on failed (user
    │   │                                        simulator, judge, sandbox, env step); inside
    │   │                                        ``step`` it voids the episode instead of
    │   │                                        raising (see tool_envs.core.outcome)
    │   └── JudgeError                             a judge's reply has no verdicts [tau2.judge]
    ├── EnvServerUnavailableError (also ConnectionError) no env server of a remote env can be
    │                                        reached (tool_envs.serve); the message names every
    │                                        URL and why it failed
    ├── RemoteEnvError        (also RuntimeError) an env server answered a request with an error
    │                                        that has no local counterpart
    ├── RayVersionError       (also RuntimeError) the Ray cluster runs another Ray release
    │                                        [serve.cluster.errors]
    ├── EnvServerLostError    (also RuntimeError) an env server on Ray died past its restarts
    │                                        [serve.cluster.errors]
    ├── SearchError                            a web search failed; the WebSearch env shows it to
    │                                        the model [search.base]
    ├── SandboxUnavailable    (also RuntimeError) an isolation level cannot be had here
    │                                        [code.sandbox.pool]
    ├── WorkerDied            (also RuntimeError) a sandbox worker vanished or stopped answering
    │                                        [code.sandbox.pool]
    ├── TemplatePrefixError                    a chat template re-renders earlier turns
    │                                        differently [rollout.template]
    ├── RolloutVoidError      (also RuntimeError) too many episodes of a batch are void
    │                                        [rollout.engine]
    ├── GenerationServerError (also RuntimeError) a generation server failed or answered
    │                                        something unusable [rollout.backends.base]
    ├── VLLMStartError        (also RuntimeError) a vLLM server process did not become healthy
    │                                        [rollout.backends.vllm.launch]
    ├── WeightSyncError       (also RuntimeError) vLLM's weights cannot be kept in step with
    │                                        the policy [rollout.backends.vllm.weight_sync]
    ├── EvalError             (also RuntimeError) an evaluation cannot go on [eval.agents]
    └── EpisodeInterrupted                     an evaluation is stopping; the trial is dropped
                                             [eval.agents]

``tests/test_errors.py`` walks the package and fails on an exception class outside this tree.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from tool_envs._lazy import lazy_dir, lazy_exports

_LAZY = {
    "CorpusError": "tool_envs.search.corpus",
    "Tau2NotInstalledError": "tool_envs.tau2.domains",
    "MCPCallError": "tool_envs.mcp.client",
    "MCPConnectionError": "tool_envs.mcp.client",
    "MCPProtocolError": "tool_envs.mcp.client",
    "MCPTimeoutError": "tool_envs.mcp.client",
    "MCPToolError": "tool_envs.mcp.client",
    "JudgeError": "tool_envs.tau2.judge",
    "SearchError": "tool_envs.search.base",
    "SandboxUnavailable": "tool_envs.code.sandbox.pool",
    "WorkerDied": "tool_envs.code.sandbox.pool",
    "TemplatePrefixError": "tool_envs.rollout.template",
    "RolloutVoidError": "tool_envs.rollout.engine",
    "GenerationServerError": "tool_envs.rollout.backends.base",
    "VLLMStartError": "tool_envs.rollout.backends.vllm.launch",
    "WeightSyncError": "tool_envs.rollout.backends.vllm.weight_sync",
    "EvalError": "tool_envs.eval.agents",
    "EpisodeInterrupted": "tool_envs.eval.agents",
    "RayVersionError": "tool_envs.serve.cluster.errors",
    "EnvServerLostError": "tool_envs.serve.cluster.errors",
}

if TYPE_CHECKING:
    from tool_envs.code.sandbox.pool import SandboxUnavailable as SandboxUnavailable
    from tool_envs.code.sandbox.pool import WorkerDied as WorkerDied
    from tool_envs.eval.agents import EpisodeInterrupted as EpisodeInterrupted
    from tool_envs.eval.agents import EvalError as EvalError
    from tool_envs.mcp.client import MCPCallError as MCPCallError
    from tool_envs.mcp.client import MCPConnectionError as MCPConnectionError
    from tool_envs.mcp.client import MCPProtocolError as MCPProtocolError
    from tool_envs.mcp.client import MCPTimeoutError as MCPTimeoutError
    from tool_envs.mcp.client import MCPToolError as MCPToolError
    from tool_envs.rollout.backends.base import GenerationServerError as GenerationServerError
    from tool_envs.rollout.backends.vllm.launch import VLLMStartError as VLLMStartError
    from tool_envs.rollout.backends.vllm.weight_sync import WeightSyncError as WeightSyncError
    from tool_envs.rollout.engine import RolloutVoidError as RolloutVoidError
    from tool_envs.rollout.template import TemplatePrefixError as TemplatePrefixError
    from tool_envs.search.base import SearchError as SearchError
    from tool_envs.search.corpus import CorpusError as CorpusError
    from tool_envs.serve.cluster.errors import EnvServerLostError as EnvServerLostError
    from tool_envs.serve.cluster.errors import RayVersionError as RayVersionError
    from tool_envs.tau2.domains import Tau2NotInstalledError as Tau2NotInstalledError
    from tool_envs.tau2.judge import JudgeError as JudgeError

__all__ = [
    "EnvConfigError",
    "EnvServerUnavailableError",
    "InfrastructureError",
    "MissingDependencyError",
    "RemoteEnvError",
    "TaskRowError",
    "ToolDefinitionError",
    "ToolEnvsError",
    "UnknownEnvError",
    *_LAZY,
]


class ToolEnvsError(Exception):
    """Base class of every error this package raises on purpose."""


class TaskRowError(ToolEnvsError, ValueError):
    """Raised when a task row does not follow the row schema.

    The message names the row (index or id) and the field, so a bad row in a dataset of
    thousands can be found and fixed.
    """

    def __init__(self, message: str, *, index: int | None = None, field: str | None = None):
        self.index = index
        self.field = field
        self.detail = message  # without the "row N, field 'x': " prefix, to re-raise with more
        where = []
        if index is not None:
            where.append(f"row {index}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(prefix + message)

    def located(self, where: str) -> TaskRowError:
        """The same error with the source it came from in front (``"train.jsonl: row 3, ..."``),
        for readers that take rows from several sources; index and field are kept."""
        error = TaskRowError(f"{where}: {self}")
        error.index, error.field = self.index, self.field
        return error


class ToolDefinitionError(ToolEnvsError, TypeError):
    """Raised when a function cannot be turned into a tool (no type hints, no docstring, ...)."""


class EnvConfigError(ToolEnvsError, ValueError):
    """Raised when an environment is constructed or reset with arguments it cannot use."""


class UnknownEnvError(EnvConfigError):
    """Raised when an env id is not registered, or the module of a ``module:EnvId`` id cannot
    be imported; the message suggests the closest registered ids."""


class MissingDependencyError(ToolEnvsError, ImportError):
    """Raised when a feature needs an optional extra that is not installed.

    The message names the ``pip install`` command that fixes it.
    """

    def __init__(self, package: str, extra: str, feature: str):
        self.package = package
        self.extra = extra
        super().__init__(
            f"{feature} needs the '{package}' package. Install it with "
            f"`pip install 'tool-envs[{extra}]'`."
        )


class InfrastructureError(ToolEnvsError, RuntimeError):
    """A helper the episode depends on failed; the agent is not to blame.

    Raised inside an env by the parts that call out (an LLM user simulator or judge whose API
    failed after its retries, a sandbox that could not run at all). ``ToolEnv.step`` catches it
    and ends the episode as *void* (see :mod:`tool_envs.core.outcome`): never scored as the
    agent's failure, never trained on, replayed by ``tool-envs eval``.

    Attributes:
        cause: Which part failed, one of :data:`tool_envs.core.outcome.VOID_CAUSES`.
    """

    def __init__(self, message: str, *, cause: str):
        from tool_envs.core.outcome import VOID_CAUSES

        if cause not in VOID_CAUSES:
            raise ValueError(f"cause must be one of {VOID_CAUSES}, got {cause!r}")
        self.cause = cause
        super().__init__(message)


class EnvServerUnavailableError(ToolEnvsError, ConnectionError):
    """Raised when a remote env cannot start an episode on any of its servers.

    Raised by ``RemoteEnv.reset`` (and so by the rollout engines) when every server URL is dead
    (connection refused, handshake timed out) or full. Mid-episode failures do not raise: they
    void the episode (``void_cause="env_server"``). The fix named depends on why: a dead server
    is started (or its URL replaced), a full one is joined by more servers or given a larger
    ``--max-sessions``.

    Attributes:
        failures: URL -> why it could not be used.
        full: The URLs that answered that they are full.
    """

    def __init__(self, failures: dict[str, str], full: Iterable[str] = ()):
        self.failures = dict(failures)
        self.full = set(full) & set(self.failures)
        listed = "; ".join(f"{url}: {why}" for url, why in self.failures.items())
        fixes = []
        if self.full:
            fixes.append(
                "A full server takes no more sessions: start more servers and add their URLs, "
                "or restart them with a larger --max-sessions."
            )
        if set(self.failures) - self.full:
            where = "those URLs" if not self.full else "the other URLs"
            fixes.append(
                f"Start `tool-envs serve ENV_ID --port N` at {where}, or pass live ones "
                "(env_servers=...)."
            )
        super().__init__(f"no env server can take an episode ({listed}). {' '.join(fixes)}")


class RemoteEnvError(ToolEnvsError, RuntimeError):
    """Raised when an env server answers with an error that has no local exception class.

    Attributes:
        code: OpenEnv's error code (``EXECUTION_ERROR``, ``VALIDATION_ERROR``, ...).
        exception: Name of the exception the server-side env raised, if any.
    """

    def __init__(self, message: str, *, code: str, exception: str | None = None):
        self.code = code
        self.exception = exception
        super().__init__(message)


__getattr__ = lazy_exports(__name__, _LAZY)
__dir__ = lazy_dir(globals(), _LAZY)
