"""Tasks written by an LLM behind any OpenAI-compatible endpoint, validated against tool schemas.

:func:`generate_llm_tasks` shows the model the servers' tools and asks for one task per request
(a question, the gold tool sequence, the answer) in JSON. Every task is checked: each step must
name a known server and tool, give every required parameter, no unknown parameter, and values of
the schema's JSON type; sequences longer than ``max_tools`` are refused. Rejected tasks come back
with their reasons. Knobs, as arguments or environment variables: ``N_SAMPLES`` (requests, default
10), ``OPENAI_MODEL`` (default ``gpt-4o-mini``), ``MAX_TOOLS`` (steps per task, default 3),
``MAX_TURNS`` (a hint to the model, default 5), ``DOMAINS`` and ``COMPLEXITIES`` (comma-separated,
cycled over the requests). The endpoint is ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` unless a
client is passed in.

A failing request costs only its own sample. Transient errors (unreachable, timed out, 429, 5xx,
a garbled body) are retried with the ``openai`` client's exponential backoff (``max_retries``,
``timeout``); a request that still fails is reported in :attr:`GeneratedTasks.failed` and the
other samples go on. Generation stops early, keeping every task written so far and saying why in
:attr:`GeneratedTasks.stopped`, on an error every request would meet (a wrong model name, a
refused key) or after ``max_consecutive_failures`` failed requests in a row (a dead server).
``max_tokens`` caps each reply.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tool_envs.core.helper_models import (
    DEFAULT_MAX_TOKENS,
    HelperFailure,
    make_client,
    request_chat,
    require_api_key,
)
from tool_envs.mcp.convert import DEFAULT_SYSTEM, ENV_ID

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


WHO = "LLM task writer"


@dataclass
class GeneratedTasks:
    """What one generation run produced.

    Attributes:
        rows: Tasks that passed validation, as task rows.
        rejected: ``(sample number, reason)`` for each task written but refused by validation.
        failed: ``(sample number, reason)`` for each request that failed after its retries.
        stopped: Why generation stopped before ``n_samples`` requests, or None.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)
    stopped: str | None = None


def _schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    for key in ("input_schema", "inputSchema", "parameters"):
        if isinstance(tool.get(key), Mapping):
            return dict(tool[key])
    return {"type": "object", "properties": {}}


def _type_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return any(_type_ok(value, option) for option in options)
    kinds = schema.get("type")
    if kinds is None:
        return True
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    for kind in kinds:
        allowed = _JSON_TYPES.get(kind)
        if allowed is None:
            return True
        if kind in ("integer", "number") and isinstance(value, bool):
            continue
        if isinstance(value, allowed):
            return True
    return False


def validate_sequence(
    steps: Any, tools: Mapping[str, Sequence[Mapping[str, Any]]], max_tools: int
) -> str | None:
    """Why a tool sequence is invalid for these servers' tools, or None when it is valid."""
    if not isinstance(steps, list) or not steps:
        return "tool_sequence must be a non-empty list"
    if len(steps) > max_tools:
        return f"tool_sequence has {len(steps)} steps; at most {max_tools} are allowed"
    for number, step in enumerate(steps, 1):
        if not isinstance(step, Mapping):
            return f"step {number} is not an object"
        server, name = step.get("server"), step.get("tool")
        if server not in tools:
            return f"step {number}: unknown server {server!r}; the servers are {sorted(tools)}"
        by_name = {tool["name"]: tool for tool in tools[server]}
        if name not in by_name:
            return (
                f"step {number}: server {server!r} has no tool {name!r}; it has {sorted(by_name)}"
            )
        params = step.get("params", {})
        if not isinstance(params, Mapping):
            return f"step {number}: params must be an object"
        schema = _schema(by_name[name])
        properties = schema.get("properties", {})
        missing = [p for p in schema.get("required", []) if p not in params]
        if missing:
            return f"step {number}: {server}/{name} is missing required parameter(s) {missing}"
        unknown = [p for p in params if p not in properties]
        if unknown:
            return f"step {number}: {server}/{name} has no parameter(s) {unknown}"
        for key, value in params.items():
            if not _type_ok(value, properties[key]):
                expected = properties[key].get("type", "another type")
                return f"step {number}: {server}/{name} parameter {key!r} must be {expected}"
    return None


def _setting(value: Any, name: str, default: Any) -> Any:
    if value is not None:
        return value
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, tuple):
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    return raw


def _request(
    tools: Mapping[str, Sequence[Mapping[str, Any]]], domain: str, complexity: str, limits: dict
) -> list[dict[str, str]]:
    listing = {
        server: [
            {"name": t["name"], "description": t.get("description", ""), "input_schema": _schema(t)}
            for t in server_tools
        ]
        for server, server_tools in tools.items()
    }
    system = (
        "You write evaluation tasks for an AI agent that can call tools on MCP servers. Reply "
        'with one JSON object only: {"question": str, "answer": str, "tool_sequence": '
        '[{"server": str, "tool": str, "params": {...}}]}. Use only the tools listed, with '
        "parameters from their input schemas. The answer must follow from the tool results."
    )
    user = (
        f"Servers and tools:\n{json.dumps(listing, indent=1)}\n\nWrite one {complexity} task "
        f"about {domain}, solvable in at most {limits['max_turns']} turns with at most "
        f"{limits['max_tools']} tool calls."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _parse(text: str) -> Any:
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`")
        text = text[text.find("{") :] if "{" in text else text
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ValueError("the reply holds no JSON object")
    return json.loads(text[start : end + 1])


def generate_llm_tasks(
    tools: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    client: Any = None,
    n_samples: int | None = None,
    model: str | None = None,
    max_tools: int | None = None,
    max_turns: int | None = None,
    domains: Sequence[str] | None = None,
    complexities: Sequence[str] | None = None,
    temperature: float | None = None,
    split: str = "train",
    max_tokens: int = DEFAULT_MAX_TOKENS,
    timeout: float = 60.0,
    max_retries: int = 3,
    max_consecutive_failures: int = 3,
) -> GeneratedTasks:
    """Ask the model for ``n_samples`` tasks over ``tools`` (server -> tool schemas).

    Tool schemas are MCP ``Tool`` dicts (``name``, ``description``, ``input_schema``) or OpenAI
    function dicts (``parameters``). ``client`` is an ``openai.OpenAI`` (default: one built from
    the ``OPENAI_*`` environment variables with ``timeout`` seconds per request and
    ``max_retries`` retries; a client passed in keeps its own). Failed requests never lose the
    tasks already written: see :class:`GeneratedTasks`.
    """
    if not tools or not all(isinstance(v, Sequence) for v in tools.values()):
        raise ValueError("tools must map each server name to a list of tool schemas")
    n_samples = _setting(n_samples, "N_SAMPLES", 10)
    model = _setting(model, "OPENAI_MODEL", "gpt-4o-mini")
    max_tools = _setting(max_tools, "MAX_TOOLS", 3)
    max_turns = _setting(max_turns, "MAX_TURNS", 5)
    domains = tuple(_setting(domains, "DOMAINS", ("everyday questions",)))
    complexities = tuple(_setting(complexities, "COMPLEXITIES", ("simple", "multi-step")))
    if n_samples < 1 or max_tools < 1 or not domains or not complexities:
        raise ValueError("n_samples and max_tools must be >= 1; domains and complexities non-empty")
    if max_tokens < 1 or max_consecutive_failures < 1:
        raise ValueError("max_tokens and max_consecutive_failures must be >= 1")
    if client is None:
        client = make_client(
            api_key=require_api_key(
                os.environ.get("OPENAI_API_KEY"), WHO, "set OPENAI_API_KEY or pass client="
            ),
            base_url=os.environ.get("OPENAI_BASE_URL"),
            timeout=timeout,
            max_retries=max_retries,
        )
    limits = {"max_tools": max_tools, "max_turns": max_turns}
    result = GeneratedTasks()
    failures_in_a_row = 0
    for sample in range(n_samples):
        domain = domains[sample % len(domains)]
        complexity = complexities[sample % len(complexities)]
        kwargs = {} if temperature is None else {"temperature": temperature}
        reply = request_chat(
            client,
            who=WHO,
            model=model,
            messages=_request(tools, domain, complexity, limits),
            max_completion_tokens=max_tokens,
            **kwargs,
        )
        if isinstance(reply, HelperFailure):
            result.failed.append((sample, reply.message))
            failures_in_a_row += 1
            if not reply.transient or failures_in_a_row >= max_consecutive_failures:
                result.stopped = _stop_reason(reply, failures_in_a_row, sample, n_samples)
                break
            continue
        failures_in_a_row = 0
        _accept(
            reply.message.content or "", sample, tools, limits, domain, complexity, split, result
        )
    return result


def _stop_reason(failure: HelperFailure, in_a_row: int, sample: int, n_samples: int) -> str:
    why = f"{in_a_row} requests failed in a row"
    if not failure.transient:
        why = "an error every request would meet"
    return (
        f"stopped after request {sample + 1} of {n_samples}: {why} ({failure.message}); "
        "the tasks written so far are kept"
    )


def _accept(
    text: str,
    sample: int,
    tools: Mapping[str, Sequence[Mapping[str, Any]]],
    limits: dict[str, Any],
    domain: str,
    complexity: str,
    split: str,
    result: GeneratedTasks,
) -> None:
    """Validate one reply into a row of ``result``, or a rejection with its reason."""
    try:
        task = _parse(text)
    except (ValueError, json.JSONDecodeError) as exc:
        result.rejected.append((sample, f"reply is not a JSON task: {exc}"))
        return
    if not isinstance(task, dict):
        result.rejected.append((sample, "reply is not a JSON object"))
        return
    question, answer = task.get("question"), task.get("answer")
    if not isinstance(question, str) or not question.strip():
        result.rejected.append((sample, "question is missing or empty"))
        return
    if not isinstance(answer, (str, int, float)) or str(answer).strip() == "":
        result.rejected.append((sample, "answer is missing or empty"))
        return
    steps = task.get("tool_sequence")
    reason = validate_sequence(steps, tools, limits["max_tools"])
    if reason is not None:
        result.rejected.append((sample, reason))
        return
    result.rows.append(
        _row(question, str(answer).strip(), steps, domain, complexity, split, len(result.rows))
    )


def _row(
    question: str, answer: str, steps: list, domain: str, complexity: str, split: str, n: int
) -> dict[str, Any]:
    sequence = [
        {"step": i, "server": s["server"], "tool": s["tool"], "params": dict(s.get("params", {}))}
        for i, s in enumerate(steps, 1)
    ]
    servers = sorted({s["server"] for s in sequence})
    tools = sorted({f"{s['server']}/{s['tool']}" for s in sequence})
    return {
        "prompt": [
            {"role": "system", "content": DEFAULT_SYSTEM},
            {"role": "user", "content": question},
        ],
        "env_id": ENV_ID,
        "reward_spec": {
            "ground_truth": {
                "success": {"must_call_tool": tools[0] if len(tools) == 1 else tools},
                "tool_sequence": sequence,
                "limits": {"max_servers": len(servers), "max_tools": len(tools)},
                "answer": answer,
                "param_match": "subset",
                "order": "ordered",
            }
        },
        "extra_info": {
            "id": f"mcp-llm-{split}-{n:05d}",
            "servers": servers,
            "category": f"llm_{complexity}",
            "domain": domain,
            "split": split,
        },
    }


__all__ = ["GeneratedTasks", "generate_llm_tasks", "validate_sequence"]
