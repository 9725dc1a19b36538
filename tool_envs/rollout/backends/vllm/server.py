"""Generation through a vLLM server's ``/v1/completions`` over HTTP: retries, coalescing, streams.

:meth:`VLLMServerBackend.generate` serves the lockstep engine (a turn's prompts as batched
requests), :meth:`VLLMServerBackend.agenerate` the asynchronous one (one prompt per call,
coalesced into shared streamed requests). The contract is kept on the server's answers by
:mod:`~tool_envs.rollout.backends.vllm.contract`; its JSON is read by
:mod:`~tool_envs.rollout.backends.vllm.answers`.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from tool_envs._httpx import aiter_sse, httpx, is_event_stream
from tool_envs.core.closing import ClosedOnExit
from tool_envs.rollout.backends.base import (
    LOGPROB_DEFINITION,
    Generation,
    GenerationServerError,
    SamplingSettings,
)
from tool_envs.rollout.backends.vllm.answers import (
    choice_to_generation,
    completion_choices_to_generations,
    pick_served_model,
)
from tool_envs.rollout.backends.vllm.contract import (
    RESERVED_PARAMS,
    check_logprobs_mode,
    check_request,
    empty_generation,
    sampling_fields,
)
from tool_envs.rollout.backends.vllm.stream import StreamedChoices

T = TypeVar("T")

__all__ = ["VLLMServerBackend"]

# Errors of a connection the server closed under us (a kept-alive connection it timed out just
# as we sent on it): the request never ran, and sending it again is safe (generation changes
# nothing on the server).
_RESENT = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
# Statuses worth repeating a request for: overload and transient server failures.
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Request fields the server backend sets itself.
_RESERVED_BODY = RESERVED_PARAMS | {
    "model",
    "prompt",
    "stream",
    "stream_interval",
    "echo",
    "return_tokens_as_token_ids",
    "return_token_ids",
}


class _SendAgain(Exception):
    """A request that a retry may cure (a dropped connection, HTTP 429/5xx); carries the error
    to raise when no retry is left."""

    def __init__(self, error: GenerationServerError):
        self.error = error
        super().__init__(str(error))


def _api_base(base_url: str) -> str:
    """Accept ``http://host:8000`` or ``http://host:8000/v1``; return the ``/v1`` URL."""
    base = base_url.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


class VLLMServerBackend(ClosedOnExit):
    """Generates through a vLLM server's OpenAI-compatible ``/v1/completions`` with token prompts.

    At construction it asks the server ``GET /v1/models`` for the model name and its
    ``max_model_len``, and, where the server runs in dev mode (``VLLM_SERVER_DEV_MODE=1``),
    ``GET /server_info`` for its ``logprobs_mode``: another mode than ``processed_logprobs`` is
    an error (a server without that endpoint is trusted, with a warning).

    Requests ask only for what is used: the sampled tokens' logprobs, with the tokens written as
    ``token_id:N`` (the ids), and no echo of the prompt's ids.

    Each rank talks to the server on its own (TRL's server client is a collective call, which
    deadlocks when ranks run different numbers of turns). A turn's prompts go out as batched
    requests, one per distinct ``max_tokens`` value (a request has a single ``max_tokens``, and
    the largest could overflow the context of a long prompt), split at ``max_batch`` prompts,
    and sent concurrently; with a seed each prompt is its own request, seeded ``seed + index``.

    Retries: connection failures are retried by the httpx transport (``retries``); HTTP 429 and
    5xx, and a server that closes or resets the connection without answering (a kept-alive
    connection it had just timed out), are retried here up to ``max_retries`` times, waiting
    ``retry_backoff * 2**attempt`` seconds. Timeouts are not retried (the server may still be
    generating).

    Attributes:
        model: The served model name requests carry.
        max_model_len: The server's context length, from ``/v1/models`` (None if it omits it).

    Args:
        base_url: ``http://host:port`` or ``http://host:port/v1``.
        model: The served model name; None takes the server's only model.
        api_key: Sent as a bearer token when given.
        timeout: Seconds to wait for a response (generation can be slow); connecting gets 10 s.
        max_retries: Repeats for connection errors and for 429/5xx answers.
        retry_backoff: Base delay of the 429/5xx retries, in seconds.
        http_client: Use this client instead (its transport then decides connection retries).
        max_batch: Most prompts in one request.
        max_concurrent_requests: Most requests in flight at once.
        extra_body: Further request fields for every request; ``generation_kwargs`` of the
            sampling settings override them.
        check_logprobs_mode: Ask ``/server_info`` for the server's logprobs mode.
        coalesce_window: :meth:`agenerate` only: seconds to wait for other prompts that can
            share a request (0: only those issued in the same event-loop turn). Each request
            costs the server's API process a few milliseconds of CPU; for 2,048 instant-env
            episodes on a CPU server, 20 ms sent a third fewer requests than 2 ms and played
            the episodes faster (benchmarks/README.md), for at most 20 ms more per turn.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 600.0,
        max_retries: int = 3,
        retry_backoff: float = 0.5,
        http_client: httpx.Client | None = None,
        max_batch: int = 256,
        max_concurrent_requests: int = 16,
        extra_body: dict[str, Any] | None = None,
        check_logprobs_mode: bool = True,
        coalesce_window: float = 0.02,
    ):
        if max_batch < 1 or max_concurrent_requests < 1 or max_retries < 0:
            raise ValueError("max_batch and max_concurrent_requests must be >= 1, retries >= 0")
        self.api_base = _api_base(base_url)
        self.url = self.api_base + "/completions"
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self.max_batch = max_batch
        self.max_concurrent_requests = max_concurrent_requests
        self.extra_body = dict(extra_body or {})
        self.timeout = timeout
        self.coalesce_window = coalesce_window
        self._coalescing: dict[asyncio.AbstractEventLoop, dict[tuple, list]] = {}
        self._sending: set[asyncio.Task] = set()
        self._async_clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._owns_client = http_client is None
        self._client = http_client or httpx.Client(
            transport=httpx.HTTPTransport(retries=max_retries),
            timeout=httpx.Timeout(timeout, connect=10.0),
        )
        try:
            models_url = self.api_base + "/models"
            self.model, self.max_model_len = pick_served_model(
                self._get(models_url), model, models_url
            )
            if check_logprobs_mode:
                self._check_server_logprobs_mode()
        except BaseException:
            self.close()
            raise

    def _get(self, url: str, params: dict[str, str] | None = None, timeout: float = 60.0) -> Any:
        """GET a JSON answer; errors name the URL and status."""
        try:
            response = self._client.get(url, params=params, headers=self._headers, timeout=timeout)
        except httpx.TransportError as exc:
            raise GenerationServerError(
                f"no response from the vLLM server at {url} ({type(exc).__name__}: {exc})", url=url
            ) from exc
        if response.status_code != 200:
            raise GenerationServerError(
                f"GET {url} failed with HTTP {response.status_code}: {response.text[:300]}",
                url=url,
                status=response.status_code,
            )
        try:
            return response.json()
        except ValueError as exc:
            raise GenerationServerError(
                f"GET {url} returned a body that is not JSON: {response.text[:200]!r}",
                url=url,
                status=200,
            ) from exc

    def _check_server_logprobs_mode(self) -> None:
        """Refuse a server whose logprobs are not processed; warn when it cannot tell.

        A server's first ``/server_info`` takes a few seconds (it collects its environment, then
        caches it); later backends on the same server get it in milliseconds.
        """
        url = self.api_base.removesuffix("/v1") + "/server_info"
        try:
            info = self._get(url, {"config_format": "json"})
            mode = info["vllm_config"]["model_config"]["logprobs_mode"]
        except (GenerationServerError, KeyError, TypeError):
            warnings.warn(
                f"cannot read the logprobs mode of the vLLM server at {self.api_base} (its "
                "/server_info exists only with VLLM_SERVER_DEV_MODE=1); make sure it runs with "
                f"--logprobs-mode {LOGPROB_DEFINITION}, or rollout logprobs will not match "
                "the trainer's. Silence with check_logprobs_mode=False.",
                stacklevel=3,
            )
            return
        check_logprobs_mode(mode, f"the vLLM server at {self.api_base}")

    def close(self) -> None:
        """Close the HTTP client if this backend created it."""
        if self._owns_client:
            self._client.close()

    def payload(
        self,
        prompts: list[list[int]],
        max_tokens: int,
        settings: SamplingSettings,
        seed: int | None,
    ) -> dict[str, Any]:
        """The JSON body of one request (vLLM extensions: top_k, min_p, stop_token_ids, ...).

        The ids come from the logprob tokens (``token_id:N``); ``return_token_ids`` is not asked
        for, because with it the server also echoes the whole prompt's ids in every choice.
        """
        settings, native = settings.resolve(_RESERVED_BODY, "vLLM server")
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": [list(p) for p in prompts],
            **sampling_fields(settings, max_tokens, seed),
            "logprobs": 0,
            "return_tokens_as_token_ids": True,
        }
        body.update(self.extra_body)
        body.update(native)
        return body

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], settings: SamplingSettings
    ) -> list[Generation]:
        check_request(prompts, max_tokens)
        seed_base = settings.resolve(_RESERVED_BODY, "vLLM server")[0].seed
        results: list[Generation] = [empty_generation(settings) for _ in prompts]
        groups: dict[int, list[int]] = {}
        for i, m in enumerate(max_tokens):
            if m > 0:
                groups.setdefault(m, []).append(i)
        step = 1 if seed_base is not None else self.max_batch
        requests = [
            (m, indices[k : k + step])
            for m, indices in groups.items()
            for k in range(0, len(indices), step)
        ]

        def run(request: tuple[int, list[int]]) -> list[Generation]:
            m, indices = request
            seed = None if seed_base is None else seed_base + indices[0]
            body = self._post(self.payload([prompts[i] for i in indices], m, settings, seed))
            try:
                return completion_choices_to_generations(
                    body, m, settings, len(indices), f"response from {self.url}"
                )
            except ValueError as exc:
                raise GenerationServerError(str(exc), url=self.url, status=200) from exc

        if len(requests) == 1:
            answers = [run(requests[0])]
        else:
            workers = min(len(requests), self.max_concurrent_requests)
            with ThreadPoolExecutor(max_workers=workers) as pool:
                answers = list(pool.map(run, requests))
        for (_, indices), generations in zip(requests, answers, strict=True):
            for i, generation in zip(indices, generations, strict=True):
                results[i] = generation
        return results

    def _post(self, body: dict[str, Any]) -> Any:
        """POST with the small 429/5xx retry loop; errors name the URL and status."""
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client.post(self.url, json=body, headers=self._headers)
            except _RESENT as exc:
                if attempt == self.max_retries:
                    raise self._no_response(exc) from exc
                time.sleep(self.retry_backoff * 2**attempt)
                continue  # a kept-alive connection the server had just closed: send again
            except httpx.TransportError as exc:
                raise self._no_response(exc) from exc
            if response.status_code not in _RETRY_STATUSES or attempt == self.max_retries:
                break
            time.sleep(self.retry_backoff * 2**attempt)
        return self._read_answer(response, attempt)

    # ------------------------------------------------------------------ asynchronous requests

    async def agenerate(
        self,
        prompt: list[int],
        max_tokens: int,
        settings: SamplingSettings,
        *,
        seed: int | None = None,
    ) -> Generation:
        """Continue ONE prompt, for the asynchronous engine; returns as soon as it is done.

        An episode can send its turn the moment its env step returns. Prompts that arrive
        within ``coalesce_window`` seconds of each other, with the same ``max_tokens``, settings
        and seed, share one request (up to ``max_batch``): when many env steps return at once
        (fast envs) that saves the per-request cost, which on a small model outweighs the
        generation itself. The request is streamed, so each prompt's call returns when its own
        completion finishes, not when the longest one of its request does (the server is asked
        for its first token and its last chunk only, vLLM's ``stream_interval``). Same
        contract, retries and errors as :meth:`generate`; ``seed`` overrides the settings' seed.
        """
        check_request([prompt], [max_tokens])
        if max_tokens == 0:
            return empty_generation(settings)
        resolved = settings.resolve(_RESERVED_BODY, "vLLM server")[0]
        key = (max_tokens, settings, seed if seed is not None else resolved.seed)
        loop = asyncio.get_running_loop()
        waiting = loop.create_future()
        queue = self._coalescing.setdefault(loop, {})
        if not queue:
            loop.call_later(self.coalesce_window, self._flush_coalesced, loop)
        queue.setdefault(key, []).append((list(prompt), waiting))
        return await waiting

    def _flush_coalesced(self, loop: asyncio.AbstractEventLoop) -> None:
        """Send what arrived in the window: one request per key, split at ``max_batch``."""
        queue = self._coalescing.pop(loop, {})
        for (max_tokens, settings, seed), entries in queue.items():
            for start in range(0, len(entries), self.max_batch):
                chunk = entries[start : start + self.max_batch]
                task = loop.create_task(self._send_batch(chunk, max_tokens, settings, seed))
                self._sending.add(task)
                task.add_done_callback(self._sending.discard)

    async def _send_batch(
        self,
        chunk: list[tuple[list[int], asyncio.Future]],
        max_tokens: int,
        settings: SamplingSettings,
        seed: int | None,
    ) -> None:
        """One streamed request for the coalesced prompts; each prompt's episode gets its
        generation the moment that completion finishes, not when the whole request does.

        A connection the server closed or reset (before or during the answer), and HTTP 429/5xx,
        are retried up to ``max_retries`` times for the prompts not yet answered; any other
        failure is given to every prompt still waiting.
        """
        waiting = dict(enumerate(chunk))  # position in the chunk -> (prompt, future)
        attempt = 0
        try:
            while waiting:
                positions = list(waiting)
                prompts = [waiting[p][0] for p in positions]
                try:
                    async for index, generation in self._stream(
                        prompts, max_tokens, settings, seed, attempt
                    ):
                        _, future = waiting.pop(positions[index])
                        if not future.done():
                            future.set_result(generation)
                except _SendAgain as again:
                    if attempt == self.max_retries:
                        raise again.error from again.__cause__
                    await asyncio.sleep(self.retry_backoff * 2**attempt)
                    attempt += 1
        except Exception as exc:  # every prompt still waiting gets the failure
            for _, future in waiting.values():
                if not future.done():
                    future.set_exception(exc)

    async def _stream(
        self,
        prompts: list[list[int]],
        max_tokens: int,
        settings: SamplingSettings,
        seed: int | None,
        attempt: int,
    ) -> AsyncIterator[tuple[int, Generation]]:
        """POST one streamed request; yield ``(prompt index, Generation)`` as each finishes.

        A server that ignores ``"stream"`` and answers one JSON body is read as such. Raises
        :class:`_SendAgain` for what a retry may cure, :class:`GenerationServerError` otherwise.
        """
        body = {
            **self.payload(prompts, max_tokens, settings, seed),
            "stream": True,
            "stream_interval": max_tokens,
        }
        where = f"response from {self.url}"
        try:
            async with self._async_client().stream(
                "POST", self.url, json=body, headers=self._headers
            ) as response:
                if response.status_code != 200 or not is_event_stream(response):
                    await response.aread()
                    if response.status_code in _RETRY_STATUSES:
                        raise _SendAgain(self._refused(response, attempt))
                    answer = self._read_answer(response, attempt)
                    generations = self._converted(
                        completion_choices_to_generations,
                        answer,
                        max_tokens,
                        settings,
                        len(prompts),
                        where,
                    )
                    for index, generation in enumerate(generations):
                        yield index, generation
                    return
                books = StreamedChoices(len(prompts), where)
                async for event in aiter_sse(response):
                    if event.data.strip() == "[DONE]":
                        break
                    for choice in self._converted(books.feed, event.data):
                        yield (
                            choice["index"],
                            self._converted(
                                choice_to_generation, choice, max_tokens, settings, where
                            ),
                        )
                if books.unfinished:
                    raise GenerationServerError(
                        f"the stream from {self.url} ended before choices {books.unfinished} "
                        "finished",
                        url=self.url,
                        status=200,
                    )
        except _RESENT as exc:  # the server closed or reset the connection: send again
            raise _SendAgain(self._no_response(exc)) from exc
        except httpx.TransportError as exc:
            raise self._no_response(exc) from exc

    def _converted(self, convert: Callable[..., T], *args: Any) -> T:
        """Run a conversion of the server's answer; its ValueError names this server."""
        try:
            return convert(*args)
        except ValueError as exc:
            raise GenerationServerError(str(exc), url=self.url, status=200) from exc

    async def aclose(self) -> None:
        """Close the asynchronous client of the running event loop, if one was made."""
        client = self._async_clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    def _async_client(self) -> httpx.AsyncClient:
        """One client per event loop (an httpx AsyncClient belongs to the loop that made it)."""
        loop = asyncio.get_running_loop()
        client = self._async_clients.get(loop)
        if client is None:
            client = httpx.AsyncClient(
                transport=httpx.AsyncHTTPTransport(
                    retries=self.max_retries,
                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
                ),
                timeout=httpx.Timeout(self.timeout, connect=10.0),
            )
            self._async_clients[loop] = client
        return client

    # ------------------------------------------------------------------ answers

    def _no_response(self, exc: Exception) -> GenerationServerError:
        return GenerationServerError(
            f"no response from the vLLM server at {self.url} ({type(exc).__name__}: {exc})",
            url=self.url,
        )

    def _refused(self, response: httpx.Response, attempt: int) -> GenerationServerError:
        return GenerationServerError(
            f"POST {self.url} failed with HTTP {response.status_code}"
            + (f" after {attempt} retries" if attempt else "")
            + f": {response.text[:500]}",
            url=self.url,
            status=response.status_code,
        )

    def _read_answer(self, response: httpx.Response, attempt: int) -> Any:
        """The JSON body of a 200 answer; errors name the URL, status and retries."""
        if response.status_code != 200:
            raise self._refused(response, attempt)
        try:
            return response.json()
        except ValueError as exc:  # json.JSONDecodeError
            raise GenerationServerError(
                f"POST {self.url} returned a body that is not JSON: {response.text[:200]!r}",
                url=self.url,
                status=response.status_code,
            ) from exc
