"""A fake vLLM server on 127.0.0.1 that answers at once with each episode's scripted turns.

    python benchmarks/fake_vllm_server.py SPEC.json [PORT]

It speaks the routes and fields :class:`~tool_envs.rollout.backends.vllm.VLLMServerBackend`
uses with a real vLLM server (``GET /v1/models`` with ``max_model_len``, ``GET /server_info``
with the logprobs mode, ``POST /v1/completions`` with token-id prompts, answered streamed as
server-sent events or as one JSON body, the ids as ``token_id:N`` logprob tokens), so the async
engine plays through its real HTTP backend with no generation cost: what is left is the
trainer's own work. SPEC.json holds ``tokenizer`` (a folder with ``tokenizer.json``, the
engine's tokenizer saved) and ``scripts`` (first user message -> the policy turns' texts). A
prompt's episode is found by its user message in the decoded prompt, its turn by the number of
assistant headers (ChatML templates); each turn is answered with its ids and the request's
first stop id (``finish_reason`` ``length`` when ``max_tokens`` cuts it). An unknown prompt is
answered HTTP 400, as vLLM answers a bad request. Runs in its own process, so neither its
threads nor its CPU count as the trainer's.

:class:`FakeVLLMServer` starts it from a tokenizer and the scripts (the tests and
``env_scale.py --client`` use it).
"""

from __future__ import annotations

import json
import re
import socket
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MODEL = "fake-policy"
MAX_MODEL_LEN = 32768
USER = re.compile(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", re.DOTALL)
ASSISTANT = "<|im_start|>assistant"


class Scripts:
    """The answers: the scripted turns' ids per first user message, and how to find them."""

    def __init__(self, tokenizer_dir: str, scripts: Mapping[str, Sequence[str]]):
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(Path(tokenizer_dir, "tokenizer.json")))
        self.turns = {
            question: [self.tokenizer.encode(t, add_special_tokens=False).ids for t in turns]
            for question, turns in scripts.items()
        }
        self.answered = 0

    def answer(self, prompt: list[int], max_tokens: int, stop: list[int]) -> dict[str, Any]:
        """One choice (without its index) for ``prompt``; KeyError when it is not scripted."""
        text = self.tokenizer.decode(prompt, skip_special_tokens=False)
        question = next((q for q in USER.findall(text) if q in self.turns), None)
        if question is None:
            raise KeyError(f"no script for a prompt ending {text[-200:]!r}")
        turns = self.turns[question]
        turn = text.count(ASSISTANT) - 1
        if not 0 <= turn < len(turns):
            raise KeyError(f"the script for {question!r} has no turn {turn}")
        ids = [*turns[turn], *stop[:1]]
        reason = "stop" if len(ids) <= max_tokens else "length"
        ids = ids[:max_tokens]
        self.answered += 1
        return {
            "text": "",
            "logprobs": {
                "tokens": [f"token_id:{i}" for i in ids],
                "token_logprobs": [-0.5] * len(ids),
                "top_logprobs": [{f"token_id:{i}": -0.5} for i in ids],
                "text_offset": [0] * len(ids),
            },
            "finish_reason": reason,
            "stop_reason": ids[-1] if reason == "stop" and stop else None,
        }


def app(scripts: Scripts) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    async def models(request: Request) -> Response:
        card = {"id": MODEL, "object": "model", "owned_by": "fake", "max_model_len": MAX_MODEL_LEN}
        return JSONResponse({"object": "list", "data": [card]})

    async def server_info(request: Request) -> Response:
        config = {"model_config": {"logprobs_mode": "processed_logprobs"}}
        return JSONResponse({"vllm_config": config})

    async def health(request: Request) -> Response:
        return Response(status_code=200)

    async def completions(request: Request) -> Response:
        body = await request.json()
        if body.get("model") != MODEL:
            message = f"The model `{body.get('model')}` does not exist."
            return JSONResponse({"error": {"message": message, "code": 404}}, status_code=404)
        prompts = body["prompt"]
        if prompts and isinstance(prompts[0], int):
            prompts = [prompts]
        try:
            choices = [
                {"index": i, **scripts.answer(p, body["max_tokens"], body["stop_token_ids"])}
                for i, p in enumerate(prompts)
            ]
        except KeyError as exc:
            return JSONResponse({"error": {"message": str(exc), "code": 400}}, status_code=400)
        head = {"id": f"cmpl-{scripts.answered}", "created": int(time.time()), "model": MODEL}
        if not body.get("stream"):
            return JSONResponse({**head, "object": "text_completion", "choices": choices})
        chunks = [
            "data: "
            + json.dumps({**head, "object": "text_completion", "choices": [choice]})
            + "\n\n"
            for choice in choices
        ]
        return StreamingResponse(
            iter([*chunks, "data: [DONE]\n\n"]), media_type="text/event-stream"
        )

    return Starlette(
        routes=[
            Route("/v1/models", models),
            Route("/server_info", server_info),
            Route("/health", health),
            Route("/v1/completions", completions, methods=["POST"]),
        ]
    )


class FakeVLLMServer:
    """This script in a child process, for ``tokenizer`` and ``scripts`` (first user message ->
    turn texts): ``url``, ``pid``; stopped on leaving the ``with`` block."""

    def __init__(self, tokenizer: Any, scripts: Mapping[str, Sequence[str]]):
        from tool_envs.serve import EnvServerProcess

        self._folder = tempfile.TemporaryDirectory(prefix="fake-vllm-")
        tokenizer.save_pretrained(self._folder.name)
        spec = Path(self._folder.name, "spec.json")
        spec.write_text(json.dumps({"tokenizer": self._folder.name, "scripts": dict(scripts)}))
        # -P: benchmarks/ (its mcp.py) is not put first on the path
        command = [sys.executable, "-P", __file__, str(spec), "0"]
        try:
            self._process = EnvServerProcess(MODEL, command=command, startup_timeout=60)
        except BaseException:
            self._folder.cleanup()
            raise
        self.url, self.pid = self._process.url, self._process.pid

    def close(self) -> None:
        self._process.stop()
        self._folder.cleanup()

    def __enter__(self) -> FakeVLLMServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def main() -> None:
    import uvicorn

    spec = json.loads(Path(sys.argv[1]).read_text())
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    scripts = Scripts(spec["tokenizer"], spec["scripts"])
    sock = socket.create_server(("127.0.0.1", port), backlog=2048)
    print(f"serving {MODEL} on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app(scripts), log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
