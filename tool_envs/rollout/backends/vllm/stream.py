"""Read a streamed ``/v1/completions`` answer for a batch of prompts, one completion at a time.

A batched request answered in one body comes back when its LONGEST completion ends, so every
episode in it waits for the slowest one, and the server runs short of work exactly when those
episodes could be generating their next turn. Streamed (``"stream": true``), each choice's chunks
carry its ``index``; a choice is finished when a chunk gives its ``finish_reason``, and it can be
handed to its episode then. The chunks of one choice concatenate to what the unstreamed answer
would have held (vLLM merges chunks when the reader is slower than the engine, which keeps the
cost per token small).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["StreamedChoices"]


class StreamedChoices:
    """Collects the chunks of one streamed batch into whole choices, by ``index``.

    :meth:`feed` takes each event's data; the choices it reports as finished have the shape of
    an unstreamed answer's choice (``index``, ``token_ids`` or ``logprobs.tokens``,
    ``logprobs.token_logprobs``, ``finish_reason``), so the same conversion applies to both.

    Args:
        n_choices: Prompts in the request (one choice each).
        where: Names the request in errors.
    """

    def __init__(self, n_choices: int, where: str):
        self.where = where
        self._ids: list[list[int] | None] = [None] * n_choices
        self._tokens: list[list[str]] = [[] for _ in range(n_choices)]
        self._logprobs: list[list[float | None]] = [[] for _ in range(n_choices)]
        self._has_logprobs = [False] * n_choices
        self.finished: set[int] = set()

    @property
    def unfinished(self) -> list[int]:
        """Indices of the choices whose ``finish_reason`` has not come yet."""
        return [i for i in range(len(self._tokens)) if i not in self.finished]

    def feed(self, data: str) -> list[dict[str, Any]]:
        """Take one event's ``data`` text; return the choices it finished.

        Raises ValueError (naming the request) for an event that is not JSON or not a completion
        chunk, an error event, an unknown index, or chunks for a choice that already finished.
        """
        try:
            event = json.loads(data)
        except ValueError as exc:
            raise ValueError(f"{self.where}: a streamed event is not JSON: {data[:200]!r}") from exc
        if isinstance(event, dict) and "error" in event:
            error = event["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ValueError(f"{self.where}: the server reported an error mid-stream: {message}")
        choices = event.get("choices") if isinstance(event, dict) else None
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise ValueError(f"{self.where}: a streamed event has no choices: {data[:200]!r}")
        done = []
        for chunk in choices:
            index = chunk.get("index")
            if not isinstance(index, int) or not 0 <= index < len(self._tokens):
                raise ValueError(f"{self.where}: a streamed chunk has choice index {index!r}")
            if index in self.finished:
                raise ValueError(f"{self.where}: chunks for choice {index} after it finished")
            self._add(index, chunk)
            if chunk.get("finish_reason") is not None:
                self.finished.add(index)
                done.append(self._choice(index, chunk["finish_reason"]))
        return done

    def _add(self, index: int, chunk: dict[str, Any]) -> None:
        if chunk.get("token_ids") is not None:
            ids = self._ids[index] or []
            ids.extend(int(t) for t in chunk["token_ids"])
            self._ids[index] = ids
        logprobs = chunk.get("logprobs")
        if isinstance(logprobs, dict):
            self._has_logprobs[index] = True
            self._tokens[index].extend(logprobs.get("tokens") or [])
            self._logprobs[index].extend(logprobs.get("token_logprobs") or [])

    def _choice(self, index: int, finish_reason: str) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": index, "finish_reason": finish_reason}
        if self._ids[index] is not None:
            choice["token_ids"] = self._ids[index]
        if self._has_logprobs[index]:
            choice["logprobs"] = {
                "tokens": self._tokens[index],
                "token_logprobs": self._logprobs[index],
            }
        return choice
