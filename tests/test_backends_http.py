"""Generation backends over HTTP, and the vLLM backends' pure converters.

The vLLM server backend runs against the REAL vLLM server of tests/conftest.py (``vllm_server``),
through :class:`vllm_helpers.FaultProxy`, a reverse proxy that records requests and injects the
faults a healthy server never shows (HTTP 500/503, a body that is not JSON, a choice without
ids). What the real engine itself shows (multi-turn episodes, logprobs, stop tokens, context
length) is tested in tests/test_vllm_backends.py. The vLLM output converters are pure and are
unit-tested here with objects shaped like vLLM's ``RequestOutput`` / ``CompletionOutput`` /
``Logprob``. The OpenAI chat backend is tested against a small local chat server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import openai
import pytest
from extra_helpers import import_error_without
from http_helpers import QuietHandler, send_json, serving
from vllm_helpers import FaultProxy, vllm_test

from tool_envs.rollout.backends.base import (
    Generation,
    GenerationBackend,
    GenerationServerError,
    SamplingSettings,
)
from tool_envs.rollout.backends.openai_chat import ChatTurn, OpenAIChatBackend, to_api_messages
from tool_envs.rollout.backends.vllm.answers import (
    choice_to_generation,
    completion_choices_to_generations,
    pick_served_model,
)
from tool_envs.rollout.backends.vllm.colocate import (
    VLLMColocateBackend,
    request_output_to_generation,
)
from tool_envs.rollout.backends.vllm.server import VLLMServerBackend
from tool_envs.rollout.backends.vllm.stream import StreamedChoices

# --------------------------------------------------------------------------- a local chat server


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ChatHandler)
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Fresh state for the next test (the server itself lives for the module)."""
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ChatHandler(QuietHandler):
    """``/v1/chat/completions`` that checks the messages it gets as strictly as OpenAI does."""

    server: _Server

    def do_POST(self) -> None:
        body = self.read_json()
        with self.server.lock:
            self.server.requests.append({"path": self.path, "body": body})
            self.server.in_flight += 1
            self.server.max_in_flight = max(self.server.max_in_flight, self.server.in_flight)
        try:
            status, answer = self.answer(body)
            send_json(self, status, answer)
        finally:
            with self.server.lock:
                self.server.in_flight -= 1

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
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


@pytest.fixture(scope="module")
def _chat_server() -> Iterator[_Server]:
    server = _Server()
    with serving(server):
        yield server


@pytest.fixture
def chat_server(_chat_server: _Server) -> _Server:
    _chat_server.reset()
    return _chat_server


# --------------------------------------------------------------------------- vLLM server backend
# Real server behind a fault-injecting proxy.


@pytest.fixture(scope="module")
def _proxy(vllm_server) -> Iterator[FaultProxy]:
    proxy = FaultProxy(vllm_server.url)
    try:
        yield proxy
    finally:
        proxy.close()


@pytest.fixture
def proxy(_proxy: FaultProxy) -> FaultProxy:
    _proxy.reset()
    return _proxy


@pytest.fixture(scope="module")
def server_backend(_proxy: FaultProxy) -> Iterator[VLLMServerBackend]:
    with VLLMServerBackend(_proxy.url, max_retries=2, retry_backoff=0.01, timeout=120) as backend:
        yield backend


@pytest.fixture(scope="module")
def eos(vllm_tiny_model) -> int:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(vllm_tiny_model).eos_token_id


PROMPTS = [[1, 2, 3], [4, 5], [6, 7, 8, 9]]
LATE = 200  # tokens the long completion runs: many engine steps after the short one ends


@pytest.fixture(scope="module")
def early_and_late(server_backend: VLLMServerBackend):
    """Two prompts and greedy settings under which the first stops after one token (its first
    greedy token is made the stop token) and the second runs ``LATE`` tokens without it."""
    candidates = [[i, i + 1, i + 2] for i in range(1, 40)]
    greedy = SamplingSettings(temperature=0.0, generation_kwargs={"ignore_eos": True})
    runs = server_backend.generate(candidates, [LATE] * len(candidates), greedy)
    for early, run in zip(candidates, runs, strict=True):
        stop = run.token_ids[0]
        for late, other in zip(candidates, runs, strict=True):
            if stop not in other.token_ids:
                return early, late, dataclasses.replace(greedy, stop_token_ids=(stop,))
    raise AssertionError("no two prompts of the tiny model differ enough; try other candidates")


class TestServerBackendOverTheRealServer:
    """Request shapes, batching and fault handling, with vLLM's own answers."""

    pytestmark = vllm_test

    def test_is_a_generation_backend(self, server_backend: VLLMServerBackend) -> None:
        assert isinstance(server_backend, GenerationBackend)

    def test_one_request_per_turn_asks_only_for_what_is_used(
        self, proxy: FaultProxy, server_backend: VLLMServerBackend, eos: int
    ) -> None:
        settings = SamplingSettings(
            temperature=0.7, top_p=0.9, min_p=0.05, repetition_penalty=1.1, stop_token_ids=(eos,)
        )
        out = server_backend.generate(PROMPTS, [6, 6, 6], settings)

        assert len(proxy.requests) == 1  # one request carries the whole turn
        body = proxy.requests[0]
        assert body["model"] == "tiny" and body["prompt"] == PROMPTS
        assert body["stop_token_ids"] == [eos] and body["top_k"] == -1 and "seed" not in body
        assert (body["temperature"], body["top_p"], body["min_p"]) == (0.7, 0.9, 0.05)
        assert body["repetition_penalty"] == 1.1
        assert body["logprobs"] == 0 and body["return_tokens_as_token_ids"] is True
        assert "return_token_ids" not in body  # it would echo every prompt's ids back
        for generation in out:
            assert 0 < len(generation.token_ids) <= 6
            assert len(generation.logprobs or []) == len(generation.token_ids)
            assert (generation.finish_reason == "stop") == (generation.token_ids[-1] == eos)

    def test_budgets_group_requests_and_a_zero_budget_is_not_sent(
        self, proxy: FaultProxy, server_backend: VLLMServerBackend
    ) -> None:
        out = server_backend.generate(
            [*PROMPTS, [10]], [3, 1, 3, 0], SamplingSettings(temperature=0, logprobs=False)
        )
        assert [len(g.token_ids) <= m for g, m in zip(out, [3, 1, 3], strict=False)] == [True] * 3
        assert all(g.logprobs is None for g in out)
        assert out[3] == Generation([], None, "length")
        sent = sorted((r["max_tokens"], r["prompt"]) for r in proxy.requests)
        assert sent == [(1, [PROMPTS[1]]), (3, [PROMPTS[0], PROMPTS[2]])]

    def test_a_seed_gives_each_prompt_its_own_request_and_seed(
        self, proxy: FaultProxy, server_backend: VLLMServerBackend
    ) -> None:
        settings = SamplingSettings(seed=100, generation_kwargs={"top_k": 20})
        out = server_backend.generate([[1, 2]] * 3, [4] * 3, settings)
        assert len(out) == 3
        assert sorted(r["seed"] for r in proxy.requests) == [100, 101, 102]
        assert all(r["top_k"] == 20 for r in proxy.requests)

    def test_max_batch_splits_requests(self, proxy: FaultProxy) -> None:
        with VLLMServerBackend(proxy.url + "/v1/", max_batch=2, timeout=120) as backend:
            proxy.reset()
            out = backend.generate([[i + 1] for i in range(5)], [2] * 5, SamplingSettings())
        assert len(out) == 5
        assert sorted(len(r["prompt"]) for r in proxy.requests) == [1, 2, 2]

    def test_reserved_generation_kwargs_are_refused(
        self, server_backend: VLLMServerBackend
    ) -> None:
        settings = SamplingSettings(generation_kwargs={"stream": True, "n": 2})
        with pytest.raises(ValueError, match=r"\['n', 'stream'\] cannot be set for the vLLM"):
            server_backend.generate([[1]], [2], settings)

    def test_retries_500_and_503(
        self, proxy: FaultProxy, server_backend: VLLMServerBackend
    ) -> None:
        proxy.faults.extend(["500", "503"])
        out = server_backend.generate([[1, 2]], [2], SamplingSettings())
        assert 0 < len(out[0].token_ids) <= 2
        assert len(proxy.requests) == 3  # two failures, then the server's answer

    @pytest.mark.parametrize("fault", ["disconnect", "reset"])
    def test_a_connection_closed_without_an_answer_is_sent_again(
        self, proxy: FaultProxy, fault: str
    ) -> None:
        async def one(backend: VLLMServerBackend):
            try:
                return await backend.agenerate([1, 2], 2, SamplingSettings())
            finally:
                await backend.aclose()

        with VLLMServerBackend(proxy.url, max_retries=1, retry_backoff=0.01) as backend:
            proxy.reset()
            proxy.faults.append(fault)
            assert backend.generate([[1, 2]], [2], SamplingSettings())[0].token_ids
            proxy.faults.append(fault)
            assert asyncio.run(one(backend)).token_ids
            assert len(proxy.requests) == 4
            proxy.faults.extend([fault, fault])
            # A reset reads as ReadError or RemoteProtocolError, as the timing falls.
            with pytest.raises(GenerationServerError, match="no response from the vLLM server"):
                backend.generate([[1]], [2], SamplingSettings())

    def test_gives_up_after_max_retries(self, proxy: FaultProxy) -> None:
        with VLLMServerBackend(proxy.url, max_retries=1, retry_backoff=0.01) as backend:
            proxy.reset()
            proxy.faults.extend(["503", "503", "503"])
            with pytest.raises(GenerationServerError, match="HTTP 503 after 1 retries") as err:
                backend.generate([[1]], [2], SamplingSettings())
        assert err.value.status == 503 and err.value.url == f"{proxy.url}/v1/completions"
        assert len(proxy.requests) == 2

    def test_malformed_json_is_a_clear_error(
        self, proxy: FaultProxy, server_backend: VLLMServerBackend
    ) -> None:
        proxy.faults.append("malformed")
        with pytest.raises(GenerationServerError, match="not JSON") as err:
            server_backend.generate([[1]], [2], SamplingSettings())
        assert proxy.url in str(err.value)

    def test_a_choice_without_ids_is_a_clear_error(
        self, proxy: FaultProxy, server_backend: VLLMServerBackend
    ) -> None:
        proxy.faults.append("no_ids")
        with pytest.raises(
            GenerationServerError, match=r"neither 'token_ids' nor 'logprobs\.tokens'"
        ):
            server_backend.generate([[1]], [2], SamplingSettings())

    def test_a_server_with_other_logprobs_is_refused(self, proxy: FaultProxy) -> None:
        proxy.logprobs_mode = "raw_logprobs"
        with pytest.raises(ValueError, match="logprobs_mode='raw_logprobs', but rollouts need"):
            VLLMServerBackend(proxy.url)
        proxy.logprobs_mode = "absent"  # a server without VLLM_SERVER_DEV_MODE
        with pytest.warns(UserWarning, match="cannot read the logprobs mode"):
            VLLMServerBackend(proxy.url).close()

    def test_a_finished_completion_is_handed_over_before_its_request_ends(
        self, proxy: FaultProxy, early_and_late
    ) -> None:
        """Prompts sent together share one streamed request, but each episode gets its turn
        the moment its own completion finishes: the short one does not wait for the long one.

        Proved by the stream, not by a race on wall time: the proxy sends the stream up to the
        event that finishes the short completion and holds the rest (the long one's finish
        included) until the test releases it. A backend that waited for the request's end
        would hand over both only after the hold (``hold_seconds``) ran out, and at once.
        """
        early, late, settings = early_and_late
        sent_before = len(proxy.requests)
        proxy.faults.append("hold")

        async def together():
            with VLLMServerBackend(proxy.url, timeout=120) as backend:
                try:
                    short = asyncio.ensure_future(backend.agenerate(early, LATE, settings))
                    long = asyncio.ensure_future(backend.agenerate(late, LATE, settings))
                    try:
                        done, _ = await asyncio.wait(
                            {short, long}, return_when=asyncio.FIRST_COMPLETED
                        )
                        held = proxy.holding.is_set()  # the stream is still open
                    finally:
                        proxy.release.set()
                    return done == {short}, held, await short, await long
                finally:
                    await backend.aclose()

        short_alone, held, first, second = asyncio.run(together())
        assert (len(first.token_ids), first.finish_reason) == (1, "stop")
        assert (len(second.token_ids), second.finish_reason) == (LATE, "length")
        assert short_alone and held, "the short completion waited for the long one's stream"
        assert [body["prompt"] for body in proxy.requests[sent_before:]] == [[early, late]]

    @pytest.mark.parametrize(
        ("fault", "error"),
        [
            ("cut_stream", None),  # a dropped connection: the unfinished prompt is sent again
            ("error_event", "the server reported an error mid-stream: injected by FaultProxy"),
            ("end_stream", r"ended before choices \[1\] finished"),
        ],
    )
    def test_a_stream_that_breaks_keeps_the_finished_completions(
        self, proxy: FaultProxy, early_and_late, fault: str, error: str | None
    ) -> None:
        early, late, settings = early_and_late
        proxy.faults.append(fault)

        async def together():
            with VLLMServerBackend(proxy.url, timeout=120, retry_backoff=0.01) as backend:
                try:
                    return await asyncio.gather(
                        backend.agenerate(early, LATE, settings),
                        backend.agenerate(late, LATE, settings),
                        return_exceptions=True,
                    )
                finally:
                    await backend.aclose()

        first, second = asyncio.run(together())
        assert (len(first.token_ids), first.finish_reason) == (1, "stop")
        posts = [body["prompt"] for body in proxy.requests if "prompt" in body]
        if error is None:
            assert len(second.token_ids) == LATE
            assert posts == [[early, late], [late]]  # only the unfinished prompt again
        else:
            assert isinstance(second, GenerationServerError), second
            assert re.search(error, str(second)), second
            assert posts == [[early, late]]

    def test_rejects_mismatched_lengths(self, server_backend: VLLMServerBackend) -> None:
        with pytest.raises(ValueError, match="one per prompt"):
            server_backend.generate([[1], [2]], [3], SamplingSettings())


def test_server_connection_refused_names_the_url() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(GenerationServerError, match="no response from") as err:
        VLLMServerBackend(url, "m", max_retries=1)
    assert f"{url}/v1/models" in str(err.value)


# --------------------------------------------------------------------------- pure converters


def test_pick_served_model() -> None:
    body = {"object": "list", "data": [{"id": "a", "max_model_len": 512}]}
    assert pick_served_model(body, None, "u") == ("a", 512)
    assert pick_served_model(body, "a", "u") == ("a", 512)
    two = {"data": [{"id": "a"}, {"id": "b"}]}
    assert pick_served_model(two, "b", "u") == ("b", None)
    with pytest.raises(GenerationServerError, match=r"serves 2 models \(\['a', 'b'\]\); pass"):
        pick_served_model(two, None, "u")
    with pytest.raises(GenerationServerError, match="returned no model list"):
        pick_served_model({"detail": "x"}, None, "u")


def _choice(index: int, ids: list[int], reason: str, *, as_ids: bool = True) -> dict[str, Any]:
    return {
        "index": index,
        "text": "",
        "finish_reason": reason,
        "logprobs": {
            "tokens": [f"token_id:{t}" if as_ids else f"tok{t}" for t in ids],
            "token_logprobs": [-t / 1000 for t in ids],
        },
    }


def test_completion_choices_are_ordered_cut_and_read_from_either_field() -> None:
    settings = SamplingSettings(stop_token_ids=(9,))
    overrun = _choice(0, [6, 7, 8, 9, 10], "length")  # ran past its stop token
    with_field = {**_choice(1, [51, 52, 53], "length"), "token_ids": [51, 52, 53]}
    out = completion_choices_to_generations(
        {"choices": [with_field, overrun]}, 2 + 2, settings, 2, "test"
    )
    assert out[0] == Generation([6, 7, 8, 9], [-0.006, -0.007, -0.008, -0.009], "stop")
    assert out[1].token_ids == [51, 52, 53] and out[1].finish_reason == "length"
    with pytest.raises(ValueError, match="not in 'token_id:N' form"):
        completion_choices_to_generations(
            {"choices": [_choice(0, [1], "stop", as_ids=False)]}, 4, settings, 1, "test"
        )
    with pytest.raises(ValueError, match="expected 2 choices, got 1"):
        completion_choices_to_generations({"choices": [overrun]}, 4, settings, 2, "test")


def _chunk(index: int, ids: list[int], finish: str | None = None) -> str:
    """One streamed event's data, as vLLM writes it (``token_id:N`` tokens, their logprobs)."""
    logprobs = {
        "tokens": [f"token_id:{t}" for t in ids],
        "token_logprobs": [-t / 1000 for t in ids],
    }
    return json.dumps(
        {"choices": [{"index": index, "text": "", "logprobs": logprobs, "finish_reason": finish}]}
    )


def test_streamed_chunks_become_whole_choices_as_each_finishes() -> None:
    books = StreamedChoices(2, "test")
    assert books.feed(_chunk(1, [5])) == []
    assert books.feed(_chunk(0, [7, 8], "stop")) == [
        {
            "index": 0,
            "finish_reason": "stop",
            "logprobs": {
                "tokens": ["token_id:7", "token_id:8"],
                "token_logprobs": [-0.007, -0.008],
            },
        }
    ]
    assert books.unfinished == [1]
    [last] = books.feed(_chunk(1, [6, 9], "length"))
    assert books.unfinished == []
    generation = choice_to_generation(last, 3, SamplingSettings(), "test")  # as unstreamed
    assert generation == Generation([5, 6, 9], [-0.005, -0.006, -0.009], "length")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"error": {"message": "engine died"}}', "error mid-stream: engine died"),
        ("not json", "is not JSON"),
        ('{"object": "text_completion"}', "has no choices"),
        (_chunk(2, [1]), "choice index 2"),
    ],
)
def test_a_bad_streamed_event_names_what_was_wrong(data: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StreamedChoices(2, "test").feed(data)


def test_chunks_after_a_choice_finished_are_refused() -> None:
    books = StreamedChoices(1, "test")
    books.feed(_chunk(0, [1], "stop"))
    with pytest.raises(ValueError, match="chunks for choice 0 after it finished"):
        books.feed(_chunk(0, [2]))


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


def fake_logprob(token: int) -> float:
    return -token / 1000


def _request_output(
    prompt: list[int], ids: list[int], reason: str, logprobs: bool
) -> RequestOutput:
    lps = [{t: Logprob(fake_logprob(t), rank=1)} for t in ids] if logprobs else None
    completion = CompletionOutput(0, "", ids, None, lps, reason)
    return RequestOutput("r", None, prompt, None, [completion])


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


def test_settings_reject_bad_values_by_name() -> None:
    with pytest.raises(ValueError, match="min_p must be in"):
        SamplingSettings(min_p=1.5)
    with pytest.raises(ValueError, match="repetition_penalty must be > 0"):
        SamplingSettings(repetition_penalty=0)
    with pytest.raises(ValueError, match="top_k must be"):
        SamplingSettings(top_k=-2)
    with pytest.raises(ValueError, match="top_p must be in"):
        SamplingSettings(generation_kwargs={"top_p": 0}).resolve(frozenset(), "x")


def test_colocate_refuses_an_llm_with_other_logprobs() -> None:
    config = SimpleNamespace(max_model_len=64, logprobs_mode="raw_logprobs")
    llm = SimpleNamespace(llm_engine=SimpleNamespace(model_config=config))
    with pytest.raises(ValueError, match=r"logprobs_mode='raw_logprobs'.*build the LLM with"):
        VLLMColocateBackend(llm)
    config.logprobs_mode = "processed_logprobs"
    assert VLLMColocateBackend(llm).max_model_len == 64


def test_colocate_without_vllm_names_the_extra() -> None:
    # A process where `import vllm` fails, as on a machine without the extra.
    said = import_error_without(
        "vllm",
        "from types import SimpleNamespace\n"
        "from tool_envs.rollout.backends.base import SamplingSettings\n"
        "from tool_envs.rollout.backends.vllm.colocate import VLLMColocateBackend\n"
        "config = SimpleNamespace(max_model_len=64, logprobs_mode='processed_logprobs')\n"
        "llm = SimpleNamespace(llm_engine=SimpleNamespace(model_config=config))\n",
        "VLLMColocateBackend(llm).generate([[1]], [2], SamplingSettings())",
    )
    assert said.startswith("MissingDependencyError"), said
    assert "pip install 'tool-envs[vllm" in said


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
