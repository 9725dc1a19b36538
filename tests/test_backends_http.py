"""Generation backends against real local HTTP servers speaking the vLLM / OpenAI wire protocols.

The vLLM colocate backend is tested without vLLM: its output conversion with objects shaped like
vLLM's documented ``RequestOutput`` / ``CompletionOutput`` / ``Logprob``, and its sampling
parameters through an injected factory.
"""

from __future__ import annotations

import importlib.util
import json
import math
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest

from tool_envs.errors import MissingDependencyError
from tool_envs.rollout.backends.base import Generation, GenerationBackend, SamplingSettings
from tool_envs.rollout.backends.openai_chat import ChatTurn, OpenAIChatBackend, to_api_messages
from tool_envs.rollout.backends.vllm import (
    GenerationServerError,
    VLLMColocateBackend,
    VLLMServerBackend,
    request_output_to_generation,
)

# --------------------------------------------------------------------------- fake generation rule


def fake_continuation(prompt: list[int], max_tokens: int, stop: set[int]) -> tuple[list[int], str]:
    """The fake model counts up from the prompt's last id: [5] -> 6, 7, 8, ..."""
    ids: list[int] = []
    for k in range(1, max_tokens + 1):
        token = prompt[-1] + k
        ids.append(token)
        if token in stop:
            return ids, "stop"
    return ids, "length"


def fake_logprob(token: int) -> float:
    return -token / 1000


# --------------------------------------------------------------------------- servers


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        super().__init__(("127.0.0.1", 0), handler)
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Fresh state for the next test (the server itself lives for the module)."""
        self.requests: list[dict[str, Any]] = []
        self.faults: deque[str] = deque()  # "500", "503", "malformed", "no_tokens"
        self.token_ids_field = True  # answer return_token_ids with choices[i].token_ids
        self.sloppy = False  # ignore max_tokens / stop_token_ids, like a misconfigured server
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:  # keep pytest output clean
        pass

    def _send(self, status: int, body: Any) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests.append({"path": self.path, "body": body})
            fault = self.server.faults.popleft() if self.server.faults else None
            self.server.in_flight += 1
            self.server.max_in_flight = max(self.server.max_in_flight, self.server.in_flight)
        try:
            if fault in ("500", "503"):
                self._send(int(fault), {"error": {"message": f"injected {fault}"}})
            elif fault == "malformed":
                self._send(200, b'{"choices": [ this is not json')
            else:
                status, answer = self.answer(body, fault)
                self._send(status, answer)
        finally:
            with self.server.lock:
                self.server.in_flight -= 1

    def answer(self, body: dict[str, Any], fault: str | None) -> tuple[int, Any]:
        raise NotImplementedError


class _VLLMHandler(_Handler):
    """``/v1/completions`` with token-id prompts, as vLLM's OpenAI-compatible server answers."""

    def answer(self, body: dict[str, Any], fault: str | None) -> tuple[int, Any]:
        if self.path != "/v1/completions":
            return 404, {"error": {"message": f"no route {self.path}"}}
        prompts = body["prompt"]
        if not (isinstance(prompts, list) and all(isinstance(p, list) for p in prompts)):
            return 400, {"error": {"message": "prompt must be a list of token-id lists"}}
        if body["max_tokens"] < 1:
            return 400, {"error": {"message": "max_tokens must be at least 1"}}
        sloppy = self.server.sloppy
        max_tokens = body["max_tokens"] + 3 if sloppy else body["max_tokens"]
        stop = set() if sloppy else set(body.get("stop_token_ids") or [])
        choices = []
        for index, prompt in enumerate(prompts):
            ids, reason = fake_continuation(prompt, max_tokens, stop)
            choice: dict[str, Any] = {"index": index, "text": "", "finish_reason": reason}
            if body.get("logprobs") is not None and fault != "no_tokens":
                as_ids = body.get("return_tokens_as_token_ids")
                choice["logprobs"] = {
                    "tokens": [f"token_id:{t}" if as_ids else f"tok{t}" for t in ids],
                    "token_logprobs": [fake_logprob(t) for t in ids],
                    "top_logprobs": [None] * len(ids),
                    "text_offset": [0] * len(ids),
                }
            if body.get("return_token_ids") and self.server.token_ids_field and not fault:
                choice["token_ids"] = ids
            choices.append(choice)
        # A real server may list choices in any order; reversing proves we sort by index.
        return 200, {"id": "cmpl-1", "object": "text_completion", "choices": choices[::-1]}


class _ChatHandler(_Handler):
    """``/v1/chat/completions`` that checks the messages it gets as strictly as OpenAI does."""

    def answer(self, body: dict[str, Any], fault: str | None) -> tuple[int, Any]:
        if self.path != "/v1/chat/completions":
            return 404, {"error": {"message": f"no route {self.path}"}}
        problem = self.check_messages(body["messages"])
        if problem:
            return 400, {"error": {"message": problem, "type": "invalid_request_error"}}
        last = body["messages"][-1]["content"] or ""
        if last.startswith("delay="):  # lets the concurrency test finish requests out of order
            time.sleep(float(last.split("=")[1]))
        if body.get("tools"):
            name = body["tools"][0]["function"]["name"]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{len(body['messages'])}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps({"text": last})},
                    }
                ],
            }
            reason = "tool_calls"
        else:
            message = {"role": "assistant", "content": f"echo: {last}"}
            reason = "stop"
        return 200, {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": {
                "prompt_tokens": len(body["messages"]),
                "completion_tokens": 7,
                "total_tokens": len(body["messages"]) + 7,
            },
            "echo_request": {k: v for k, v in body.items() if k != "messages"},
        }

    @staticmethod
    def check_messages(messages: list[dict[str, Any]]) -> str | None:
        allowed = {"role", "content", "name", "tool_calls", "tool_call_id"}
        call_ids: set[str] = set()
        for i, message in enumerate(messages):
            extra = set(message) - allowed
            if extra:
                return f"messages[{i}]: unrecognized keys {sorted(extra)}"
            for call in message.get("tool_calls") or []:
                arguments = call["function"]["arguments"]
                if not isinstance(arguments, str):
                    return f"messages[{i}]: tool_calls arguments must be a JSON string"
                json.loads(arguments)
                call_ids.add(call["id"])
            if message["role"] == "tool" and message.get("tool_call_id") not in call_ids:
                return f"messages[{i}]: tool message needs the tool_call_id of a preceding call"
        return None


def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[_Server]:
    server = _Server(handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def _vllm_server() -> Iterator[_Server]:
    yield from _serve(_VLLMHandler)


@pytest.fixture(scope="module")
def _chat_server() -> Iterator[_Server]:
    yield from _serve(_ChatHandler)


@pytest.fixture
def vllm_server(_vllm_server: _Server) -> _Server:
    _vllm_server.reset()
    return _vllm_server


@pytest.fixture
def chat_server(_chat_server: _Server) -> _Server:
    _chat_server.reset()
    return _chat_server


@pytest.fixture
def server_backend(vllm_server: _Server) -> Iterator[VLLMServerBackend]:
    with VLLMServerBackend(
        vllm_server.url, "fake-model", max_retries=2, retry_backoff=0.01, timeout=5
    ) as backend:
        yield backend


STOP = SamplingSettings(temperature=0.7, top_p=0.9, stop_token_ids=(9, 99))


# --------------------------------------------------------------------------- vLLM server backend


def test_server_backend_is_a_generation_backend(server_backend: VLLMServerBackend) -> None:
    assert isinstance(server_backend, GenerationBackend)


def test_server_batch_order_stop_and_logprobs(
    vllm_server: _Server, server_backend: VLLMServerBackend
) -> None:
    prompts = [[1, 5], [50], [95], [7]]
    out = server_backend.generate(prompts, [8, 8, 8, 8], STOP)

    assert len(vllm_server.requests) == 1  # one request carries the whole turn
    assert [g.token_ids for g in out] == [
        [6, 7, 8, 9],  # stop token 9, kept
        [51, 52, 53, 54, 55, 56, 57, 58],  # no stop: max_tokens
        [96, 97, 98, 99],
        [8, 9],
    ]
    assert [g.finish_reason for g in out] == ["stop", "length", "stop", "stop"]
    for g in out:
        assert g.logprobs is not None and len(g.logprobs) == len(g.token_ids)
        assert g.logprobs == pytest.approx([fake_logprob(t) for t in g.token_ids])

    body = vllm_server.requests[0]["body"]
    assert body["prompt"] == prompts
    assert body["stop_token_ids"] == [9, 99]
    assert body["top_k"] == -1 and body["temperature"] == 0.7 and body["top_p"] == 0.9
    assert body["logprobs"] == 0 and body["return_tokens_as_token_ids"] is True
    assert "seed" not in body


def test_server_max_tokens_per_prompt(
    vllm_server: _Server, server_backend: VLLMServerBackend
) -> None:
    prompts = [[10], [20], [30], [40]]
    out = server_backend.generate(prompts, [3, 1, 3, 0], SamplingSettings(logprobs=False))

    assert [g.token_ids for g in out] == [[11, 12, 13], [21], [31, 32, 33], []]
    assert all(g.finish_reason == "length" and g.logprobs is None for g in out)
    # One request per distinct budget; the empty budget never reaches the server.
    sent = sorted((r["body"]["max_tokens"], r["body"]["prompt"]) for r in vllm_server.requests)
    assert sent == [(1, [[20]]), (3, [[10], [30]])]


def test_server_parses_logprob_tokens_without_token_ids_field(
    vllm_server: _Server, server_backend: VLLMServerBackend
) -> None:
    vllm_server.token_ids_field = False  # an older vLLM: ids only as "token_id:N" logprob tokens
    out = server_backend.generate([[1, 5], [3]], [6, 2], STOP)
    assert [g.token_ids for g in out] == [[6, 7, 8, 9], [4, 5]]
    assert [len(g.logprobs or []) for g in out] == [4, 2]


def test_server_output_is_cut_when_the_server_overruns(
    vllm_server: _Server, server_backend: VLLMServerBackend
) -> None:
    vllm_server.sloppy = True  # returns 3 tokens too many and ignores stop ids
    out = server_backend.generate([[5], [50]], [6, 2], STOP)
    assert out[0] == Generation([6, 7, 8, 9], [fake_logprob(t) for t in (6, 7, 8, 9)], "stop")
    assert out[1].token_ids == [51, 52] and out[1].finish_reason == "length"
    assert out[1].logprobs is not None and len(out[1].logprobs) == 2


def test_server_seed_gives_each_prompt_its_own_seed(
    vllm_server: _Server, server_backend: VLLMServerBackend
) -> None:
    settings = SamplingSettings(seed=100, top_k=20)
    out = server_backend.generate([[1], [1], [1]], [2, 2, 2], settings)
    assert [g.token_ids for g in out] == [[2, 3]] * 3
    seeds = sorted(r["body"]["seed"] for r in vllm_server.requests)
    assert seeds == [100, 101, 102]
    assert all(r["body"]["top_k"] == 20 for r in vllm_server.requests)


def test_server_max_batch_splits_requests(vllm_server: _Server) -> None:
    with VLLMServerBackend(vllm_server.url + "/v1/", "m", max_batch=2, timeout=5) as backend:
        out = backend.generate([[i * 10] for i in range(5)], [2] * 5, SamplingSettings())
    assert [g.token_ids for g in out] == [[i * 10 + 1, i * 10 + 2] for i in range(5)]
    assert sorted(len(r["body"]["prompt"]) for r in vllm_server.requests) == [1, 2, 2]


def test_server_retries_500_and_503(
    vllm_server: _Server, server_backend: VLLMServerBackend
) -> None:
    vllm_server.faults.extend(["500", "503"])
    out = server_backend.generate([[1]], [2], SamplingSettings())
    assert out[0].token_ids == [2, 3]
    assert len(vllm_server.requests) == 3  # two failures, then success


def test_server_gives_up_after_max_retries(vllm_server: _Server) -> None:
    vllm_server.faults.extend(["503", "503", "503"])
    with (
        VLLMServerBackend(vllm_server.url, "m", max_retries=1, retry_backoff=0.01) as backend,
        pytest.raises(GenerationServerError, match="HTTP 503 after 1 retries") as err,
    ):
        backend.generate([[1]], [2], SamplingSettings())
    assert err.value.status == 503 and err.value.url == f"{vllm_server.url}/v1/completions"
    assert len(vllm_server.requests) == 2


def test_server_malformed_json_is_a_clear_error(
    vllm_server: _Server, server_backend: VLLMServerBackend
) -> None:
    vllm_server.faults.append("malformed")
    with pytest.raises(GenerationServerError, match="not JSON") as err:
        server_backend.generate([[1]], [2], SamplingSettings())
    assert vllm_server.url in str(err.value)


def test_server_response_without_token_ids_is_a_clear_error(
    vllm_server: _Server, server_backend: VLLMServerBackend
) -> None:
    vllm_server.faults.append("no_tokens")
    with pytest.raises(GenerationServerError, match=r"neither 'token_ids' nor 'logprobs\.tokens'"):
        server_backend.generate([[1]], [2], SamplingSettings())


def test_server_connection_refused_names_the_url() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with (
        VLLMServerBackend(url, "m", max_retries=1) as backend,
        pytest.raises(GenerationServerError, match="no response from") as err,
    ):
        backend.generate([[1]], [2], SamplingSettings())
    assert f"{url}/v1/completions" in str(err.value)


def test_server_rejects_mismatched_lengths(server_backend: VLLMServerBackend) -> None:
    with pytest.raises(ValueError, match="one per prompt"):
        server_backend.generate([[1], [2]], [3], SamplingSettings())


# --------------------------------------------------------------------------- vLLM colocate backend


@dataclass
class Logprob:
    """Mirrors ``vllm.logprobs.Logprob``."""

    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    """Mirrors ``vllm.outputs.CompletionOutput``."""

    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    """Mirrors ``vllm.outputs.RequestOutput``."""

    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    prompt_logprobs: None
    outputs: list[CompletionOutput]
    finished: bool = True


def _request_output(
    prompt: list[int], ids: list[int], reason: str, logprobs: bool
) -> RequestOutput:
    lps = [{t: Logprob(fake_logprob(t), rank=1)} for t in ids] if logprobs else None
    completion = CompletionOutput(0, "", ids, None, lps, reason)
    return RequestOutput("r", None, prompt, None, [completion])


@dataclass
class FakeLLM:
    """Answers ``generate`` like ``vllm.LLM`` with the fake rule; records what it was given."""

    calls: list[tuple[list[dict[str, Any]], list[dict[str, Any]], bool]] = field(
        default_factory=list
    )

    def generate(
        self, prompts: list[dict[str, Any]], sampling_params: Any = None, use_tqdm: bool = True
    ) -> list[RequestOutput]:
        self.calls.append((prompts, sampling_params, use_tqdm))
        outputs = []
        for prompt, params in zip(prompts, sampling_params, strict=True):
            ids = prompt["prompt_token_ids"]
            new, reason = fake_continuation(
                ids, params["max_tokens"], set(params["stop_token_ids"])
            )
            outputs.append(_request_output(ids, new, reason, params["logprobs"] is not None))
        return outputs


def _kwargs_factory(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def test_colocate_one_generate_call_with_per_prompt_params() -> None:
    llm = FakeLLM()
    backend = VLLMColocateBackend(llm, sampling_params_factory=_kwargs_factory)
    settings = SamplingSettings(temperature=0.0, stop_token_ids=(9,), seed=7)
    out = backend.generate([[1, 5], [20], [3]], [8, 2, 0], settings)

    assert isinstance(backend, GenerationBackend)
    assert len(llm.calls) == 1
    prompts, params, use_tqdm = llm.calls[0]
    assert prompts == [{"prompt_token_ids": [1, 5]}, {"prompt_token_ids": [20]}]
    assert use_tqdm is False
    common = {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "stop_token_ids": [9], "logprobs": 0}
    assert params == [
        {"max_tokens": 8, "seed": 7, **common},
        {"max_tokens": 2, "seed": 8, **common},
    ]
    assert out[0] == Generation([6, 7, 8, 9], [fake_logprob(t) for t in (6, 7, 8, 9)], "stop")
    assert out[1].token_ids == [21, 22] and out[1].finish_reason == "length"
    assert out[2] == Generation([], [], "length")  # no budget: not sent to vLLM


def test_colocate_sampling_kwargs_top_k_logprobs_off_and_extra() -> None:
    backend = VLLMColocateBackend(
        FakeLLM(),
        sampling_params_factory=_kwargs_factory,
        extra_sampling_kwargs={"repetition_penalty": 1.1},
    )
    settings = SamplingSettings(temperature=1.0, top_p=0.95, top_k=50, logprobs=False)
    assert backend.sampling_kwargs(16, settings, 3) == {
        "max_tokens": 16,
        "temperature": 1.0,
        "top_p": 0.95,
        "top_k": 50,
        "stop_token_ids": [],
        "logprobs": None,
        "seed": None,
        "repetition_penalty": 1.1,
    }
    out = backend.generate([[1]], [2], settings)
    assert out[0] == Generation([2, 3], None, "length")


def test_request_output_conversion_cuts_overruns() -> None:
    settings = SamplingSettings(stop_token_ids=(8,))
    # An engine that ran past the stop token and past max_tokens.
    overrun = _request_output([5], [6, 7, 8, 9, 10], "length", logprobs=True)
    assert request_output_to_generation(overrun, 4, settings) == Generation(
        [6, 7, 8], [fake_logprob(t) for t in (6, 7, 8)], "stop"
    )
    long = _request_output([5], [16, 17, 18], "length", logprobs=True)
    generation = request_output_to_generation(long, 2, settings)
    assert generation.token_ids == [16, 17] and generation.finish_reason == "length"


def test_request_output_conversion_errors() -> None:
    settings = SamplingSettings()
    with pytest.raises(ValueError, match="logprobs were requested"):
        request_output_to_generation(_request_output([1], [2], "stop", False), 4, settings)
    with pytest.raises(ValueError, match="finish_reason 'abort'"):
        request_output_to_generation(_request_output([1], [2], "abort", True), 4, settings)
    nan = _request_output([1], [2], "stop", True)
    nan.outputs[0].logprobs = [{2: Logprob(math.nan)}]
    assert math.isnan((request_output_to_generation(nan, 4, settings).logprobs or [0.0])[0])


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_colocate_without_vllm_names_the_extra() -> None:
    backend = VLLMColocateBackend(FakeLLM())
    with pytest.raises(MissingDependencyError, match=r"tool-envs\[vllm\]"):
        backend.generate([[1]], [2], SamplingSettings())


# --------------------------------------------------------------------------- OpenAI chat backend

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look something up.",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
    }
]

# A conversation as an env stores it: arguments as dicts, tool names, our own extra keys.
HISTORY = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "find cats"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": {"q": 1}}}
        ],
        "reasoning_content": "internal",
    },
    {"role": "tool", "content": "3 cats", "tool_call_id": "c1", "name": "lookup"},
    {"role": "user", "content": "and dogs?"},
]


@pytest.fixture(scope="module")
def client(_chat_server: _Server) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=_chat_server.url + "/v1", api_key="test", max_retries=0, timeout=5
    ) as c:
        yield c


def test_to_api_messages_shapes_history() -> None:
    converted = to_api_messages(HISTORY)
    assistant = converted[2]
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"q": 1}'
    assert "reasoning_content" not in assistant
    assert converted[3] == {
        "role": "tool",
        "content": "3 cats",
        "tool_call_id": "c1",
        "name": "lookup",
    }
    assert HISTORY[2]["tool_calls"][0]["function"]["arguments"] == {"q": 1}  # input untouched
    assert (
        "tool_calls"
        not in to_api_messages([{"role": "assistant", "content": "x", "tool_calls": []}])[0]
    )


def test_chat_server_rejects_unconverted_history(client: openai.OpenAI) -> None:
    # The fake server is as strict as OpenAI: sending the env's own shape fails.
    unconverted = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in HISTORY]
    with pytest.raises(openai.BadRequestError, match="JSON string"):
        client.chat.completions.create(model="m", messages=unconverted)
    with pytest.raises(openai.BadRequestError, match="unrecognized keys"):
        client.chat.completions.create(model="m", messages=HISTORY[:3])


def test_chat_native_tools(chat_server: _Server, client: openai.OpenAI) -> None:
    backend = OpenAIChatBackend(client, "m", temperature=0.2, max_tokens=64)
    (turn,) = backend.complete([HISTORY], [TOOLS])

    assert isinstance(turn, ChatTurn)
    assert turn.finish_reason == "tool_calls"
    assert turn.message == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_5",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"text": "and dogs?"}'},
            }
        ],
    }
    assert turn.action is turn.message
    assert (turn.prompt_tokens, turn.completion_tokens) == (5, 7)
    sent = chat_server.requests[0]["body"]
    assert sent["tools"] == TOOLS
    assert sent["temperature"] == 0.2 and sent["max_completion_tokens"] == 64


def test_chat_text_mode_sends_no_tools(chat_server: _Server, client: openai.OpenAI) -> None:
    backend = OpenAIChatBackend(client, "m", native_tools=False, extra_body={"top_k": 5})
    (turn,) = backend.complete([HISTORY], [TOOLS])

    assert turn.message == {"role": "assistant", "content": "echo: and dogs?"}
    assert turn.action == "echo: and dogs?"  # raw text, for the env's parser
    assert turn.finish_reason == "stop"
    sent = chat_server.requests[0]["body"]
    assert "tools" not in sent and sent["top_k"] == 5


def test_chat_concurrent_results_in_order(chat_server: _Server, client: openai.OpenAI) -> None:
    backend = OpenAIChatBackend(client, "m", native_tools=False, concurrency=4)
    delays = [0.12, 0.09, 0.06, 0.03, 0.0]  # earlier conversations finish later
    conversations = [[{"role": "user", "content": f"delay={d}"}] for d in delays]
    turns = backend.complete(conversations)

    assert [t.text for t in turns] == [f"echo: delay={d}" for d in delays]
    assert chat_server.max_in_flight > 1


def test_chat_rejects_mismatched_tools(client: openai.OpenAI) -> None:
    with pytest.raises(ValueError, match="tool lists"):
        OpenAIChatBackend(client, "m").complete([HISTORY, HISTORY], [TOOLS])
