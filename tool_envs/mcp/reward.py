"""Rewards for MCP episodes: pure functions of the call log and the final answer.

The ground truth lives in ``reward_spec["ground_truth"]`` (a dict, or a JSON string as datasets
store it); every part is optional, but at least one must be given:

.. code-block:: json

    {"success": {"must_call_tool": "convert_time"},
     "tool_sequence": [
        {"step": 1, "server": "time", "tool": "get_current_time",
         "params": {"timezone": "Europe/Paris"}},
        {"step": 2, "server": "time", "tool": "convert_time", "params": {}, "match": "ignore"}],
     "param_match": "subset",
     "order": "ordered",
     "limits": {"max_servers": 1, "max_tools": 3, "max_calls": 6},
     "answers": ["13:00"],
     "answer_match": "substring"}

- ``success.must_call_tool``: a tool name, ``"server/tool"`` (or ``"server__tool"``), or a list
  of them: each must have been called successfully at least once.
- ``tool_sequence``: the expected calls. ``server`` is optional (any server); ``params`` are
  compared by ``param_match`` (or the step's own ``match``): ``"exact"`` (the arguments equal
  ``params``), ``"subset"`` (every given param has that value; nested objects compared the same
  way; the default) or ``"ignore"`` (tool and server only). ``order`` ``"ordered"`` (the steps
  must occur in this order, other calls in between allowed; the default) or ``"unordered"``.
  Its score is the fraction of steps matched (longest in-order match, or a maximum matching).
  A list may also be given as ``{"steps": [...], "order": ..., "param_match": ...}``.
- ``limits``: ``max_servers`` (distinct servers called), ``max_tools`` (distinct tools called),
  ``max_calls`` (calls made). Exceeding one fails the episode (``limit_mode="fail"``) or scales
  the reward by ``1 - limit_penalty`` (``"penalty"``).
- ``answer`` / ``answers``: gold final answer(s), compared after normalisation (lower case,
  punctuation and articles removed) by ``answer_match``: ``"exact"`` or ``"substring"`` (a gold
  answer appears in the final answer).

Only calls without an error count as made (``count_failed_calls=True`` changes that), except for
``limits``, which count every attempt. The reward is the weighted mean of the parts the ground
truth has (``RewardConfig.weights``; ``partial_credit=False`` makes it 1 or 0), and ``info``
names each part's score and what failed.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tool_envs.errors import EnvConfigError, TaskRowError

ParamMatch = Literal["exact", "subset", "ignore"]
Order = Literal["ordered", "unordered"]
AnswerMatch = Literal["exact", "substring"]
PARAM_MATCHES = ("exact", "subset", "ignore")
ORDERS = ("ordered", "unordered")
ANSWER_MATCHES = ("exact", "substring")
LIMIT_MODES = ("fail", "penalty")


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class CallRecord:
    """One tool call as the reward sees it (``info["mcp_calls"]`` entries have these keys)."""

    server: str | None
    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0

    @classmethod
    def coerce(cls, value: CallRecord | Mapping[str, Any]) -> CallRecord:
        if isinstance(value, CallRecord):
            return value
        return cls(
            server=value.get("server"),
            tool=value["tool"],
            arguments=value.get("arguments") or {},
            error=value.get("error"),
            seconds=float(value.get("seconds") or 0.0),
        )


@dataclass(frozen=True)
class RewardWeights:
    """Weights of the reward's parts (only parts present in the ground truth count)."""

    sequence: float = 1.0
    must_call: float = 1.0
    answer: float = 1.0


@dataclass(frozen=True)
class RewardConfig:
    """How ground truth becomes a reward.

    Attributes:
        weights: Weight of each part in the weighted mean.
        partial_credit: If False, the reward is 1.0 when every part passes, else 0.0.
        answer_match: Default answer comparison, ``"exact"`` or ``"substring"``.
        param_match, order: Defaults for ``tool_sequence`` when the ground truth gives none.
        limit_mode: ``"fail"`` (reward 0) or ``"penalty"`` when a limit is exceeded.
        limit_penalty: Fraction of the reward taken away in ``"penalty"`` mode.
        count_failed_calls: Calls that ended in an error count as made.
    """

    weights: RewardWeights = field(default_factory=RewardWeights)
    partial_credit: bool = True
    answer_match: AnswerMatch = "exact"
    param_match: ParamMatch = "subset"
    order: Order = "ordered"
    limit_mode: Literal["fail", "penalty"] = "fail"
    limit_penalty: float = 0.5
    count_failed_calls: bool = False

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("answer_match", self.answer_match, ANSWER_MATCHES),
            ("param_match", self.param_match, PARAM_MATCHES),
            ("order", self.order, ORDERS),
            ("limit_mode", self.limit_mode, LIMIT_MODES),
        ):
            if value not in allowed:
                raise EnvConfigError(f"{name}={value!r} is not one of {allowed}")
        if not 0.0 <= self.limit_penalty <= 1.0:
            raise EnvConfigError(f"limit_penalty={self.limit_penalty} must be within [0, 1]")
        weights = asdict(self.weights)
        if any(w < 0 for w in weights.values()) or not any(weights.values()):
            raise EnvConfigError(f"reward weights {weights} must be >= 0 and not all 0")


# --------------------------------------------------------------------------- ground truth


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolStep(_Model):
    """One expected call of ``tool_sequence``."""

    step: int | None = Field(default=None, description="Position; steps are sorted by it.")
    server: str | None = Field(default=None, description="Server name; None matches any.")
    tool: str = Field(min_length=1, description="The MCP tool's own (not namespaced) name.")
    params: dict[str, Any] = Field(default_factory=dict, description="Expected arguments.")
    match: ParamMatch | None = Field(default=None, description="Overrides param_match.")


class Limits(_Model):
    max_servers: int | None = Field(default=None, ge=0)
    max_tools: int | None = Field(default=None, ge=0)
    max_calls: int | None = Field(default=None, ge=0)


class Success(_Model):
    must_call_tool: list[str] | None = None

    @field_validator("must_call_tool", mode="before")
    @classmethod
    def _as_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class GroundTruth(_Model):
    """The validated ``reward_spec["ground_truth"]`` (see the module docstring)."""

    success: Success | None = None
    tool_sequence: list[ToolStep] | None = None
    param_match: ParamMatch | None = None
    order: Order | None = None
    limits: Limits | None = None
    answer: str | None = None
    answers: list[str] | None = None
    answer_match: AnswerMatch | None = None

    @property
    def gold_answers(self) -> list[str]:
        return [*([self.answer] if self.answer is not None else []), *(self.answers or [])]

    @property
    def must_call(self) -> list[str]:
        return list(self.success.must_call_tool or []) if self.success else []

    @property
    def steps(self) -> list[ToolStep]:
        steps = list(self.tool_sequence or [])
        if any(s.step is not None for s in steps):
            steps.sort(key=lambda s: (s.step is None, s.step or 0))
        return steps


def parse_ground_truth(reward_spec: Mapping[str, Any]) -> GroundTruth:
    """Validate ``reward_spec["ground_truth"]``; TaskRowError names the field at fault.

    ``answer``/``answers`` directly in ``reward_spec`` are accepted too (the suite's other envs
    keep answers there).
    """
    field = "reward_spec.ground_truth"
    raw: Any = reward_spec.get("ground_truth")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise TaskRowError(f"is not valid JSON: {exc}", field=field) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise TaskRowError(
            f"must be an object (or a JSON string of one), got {type(raw).__name__}", field=field
        )
    raw = dict(raw)
    # Where each key came from, so an error names the field the row author wrote.
    origin = {key: f"{field}.{key}" for key in raw}
    for key in ("answer", "answers"):
        if key in reward_spec and key not in raw:
            raw[key] = reward_spec[key]
            origin[key] = f"reward_spec.{key}"
    sequence = raw.get("tool_sequence")
    if isinstance(sequence, Mapping):  # {"steps": [...], "order": ..., "param_match": ...}
        sequence = dict(sequence)
        raw["tool_sequence"] = sequence.pop("steps", None)
        origin["tool_sequence"] = f"{field}.tool_sequence.steps"
        for key in ("order", "param_match"):
            if key in sequence:
                raw.setdefault(key, sequence.pop(key))
                origin.setdefault(key, f"{field}.tool_sequence.{key}")
        if sequence:
            raise TaskRowError(f"unknown keys {sorted(sequence)}", field=f"{field}.tool_sequence")
    try:
        truth = GroundTruth.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = [str(part) for part in error["loc"]]
        where = origin.get(loc[0], f"{field}.{loc[0]}") if loc else field
        where = ".".join([where, *loc[1:]])
        raise TaskRowError(
            f"{error['msg']} (got {_short(error.get('input'))})", field=where
        ) from None
    if not (truth.must_call or truth.tool_sequence or truth.gold_answers):
        raise TaskRowError(
            "an MCP task needs something to check: success.must_call_tool, tool_sequence, "
            "or answer/answers",
            field="reward_spec.ground_truth",
        )
    return truth


# --------------------------------------------------------------------------- matching


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise_answer(text: str) -> str:
    """Lower case, punctuation and articles removed, whitespace collapsed (SQuAD style)."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_matches(prediction: str, golds: Sequence[str], mode: AnswerMatch = "exact") -> bool:
    """Does the final answer match any gold answer (normalised ``exact`` or ``substring``)?"""
    predicted = normalise_answer(prediction)
    for gold in golds:
        expected = normalise_answer(gold)
        if mode == "exact" and predicted == expected:
            return True
        if mode == "substring" and expected and expected in predicted:
            return True
    return False


def params_match(arguments: Any, params: Any, mode: ParamMatch) -> bool:
    """Compare a call's arguments with expected params (``exact`` / ``subset`` / ``ignore``)."""
    if mode == "ignore":
        return True
    if mode == "exact":
        return _json_equal(arguments, params)
    if isinstance(params, Mapping):
        return isinstance(arguments, Mapping) and all(
            key in arguments and params_match(arguments[key], value, "subset")
            for key, value in params.items()
        )
    return _json_equal(arguments, params)


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _tool_ref(ref: str) -> tuple[str | None, str]:
    for separator in ("/", "__"):
        if separator in ref:
            server, _, tool = ref.partition(separator)
            return server, tool
    return None, ref


def _step_matches(call: CallRecord, step: ToolStep, default_mode: ParamMatch) -> bool:
    if call.tool != step.tool or (step.server is not None and call.server != step.server):
        return False
    return params_match(call.arguments, step.params, step.match or default_mode)


def sequence_score(
    calls: Sequence[CallRecord], steps: Sequence[ToolStep], order: Order, mode: ParamMatch
) -> tuple[int, list[int]]:
    """How many steps the calls match, and the indices of the steps left unmatched.

    ``ordered``: the longest in-order match (a longest common subsequence, so calls in between
    are allowed); ``unordered``: a maximum one-to-one matching of steps to calls.
    """
    fits = [[_step_matches(c, s, mode) for c in calls] for s in steps]
    if order == "ordered":
        rows, cols = len(steps), len(calls)
        best = [[0] * (cols + 1) for _ in range(rows + 1)]
        for i in range(rows - 1, -1, -1):
            for j in range(cols - 1, -1, -1):
                best[i][j] = max(
                    best[i + 1][j], best[i][j + 1], best[i + 1][j + 1] + 1 if fits[i][j] else 0
                )
        matched, i, j = [], 0, 0
        while i < rows and j < cols:
            if fits[i][j] and best[i][j] == best[i + 1][j + 1] + 1:
                matched.append(i)
                i, j = i + 1, j + 1
            elif best[i + 1][j] >= best[i][j + 1]:
                i += 1
            else:
                j += 1
        return len(matched), [k for k in range(rows) if k not in matched]
    owner: dict[int, int] = {}  # call index -> step index (Kuhn's augmenting paths)

    def assign(step: int, seen: set[int]) -> bool:
        for call, fit in enumerate(fits[step]):
            if fit and call not in seen:
                seen.add(call)
                if call not in owner or assign(owner[call], seen):
                    owner[call] = step
                    return True
        return False

    count = sum(assign(step, set()) for step in range(len(steps)))
    used = set(owner.values())
    return count, [k for k in range(len(steps)) if k not in used]


# --------------------------------------------------------------------------- the reward


def compute_reward(
    truth: GroundTruth,
    calls: Sequence[CallRecord | Mapping[str, Any]],
    answer: str | None,
    config: RewardConfig | None = None,
) -> tuple[float, dict[str, Any]]:
    """The episode reward and ``reward_info`` (``reward``, ``reason``, ``passed``, ``parts``,
    ``failed``, ``limits``)."""
    config = config or RewardConfig()
    records = [CallRecord.coerce(c) for c in calls]
    made = [c for c in records if config.count_failed_calls or c.error is None]
    parts: dict[str, dict[str, Any]] = {}
    weights: dict[str, float] = {}

    if truth.tool_sequence:
        steps = truth.steps
        order = truth.order or config.order
        mode = truth.param_match or config.param_match
        matched, missing = sequence_score(made, steps, order, mode)
        parts["tool_sequence"] = {
            "score": matched / len(steps),
            "passed": matched == len(steps),
            "matched": matched,
            "expected": len(steps),
            "order": order,
            "param_match": mode,
            "missing": [_describe_step(steps[k]) for k in missing],
        }
        weights["tool_sequence"] = config.weights.sequence

    if truth.must_call:
        missing_tools = []
        for ref in truth.must_call:
            server, tool = _tool_ref(ref)
            if not any(c.tool == tool and server in (None, c.server) for c in made):
                missing_tools.append(ref)
        passed = not missing_tools
        parts["must_call_tool"] = {
            "score": float(passed),
            "passed": passed,
            "required": list(truth.must_call),
            "missing": missing_tools,
        }
        weights["must_call_tool"] = config.weights.must_call

    golds = truth.gold_answers
    if golds:
        mode_a = truth.answer_match or config.answer_match
        passed = answer is not None and answer_matches(answer, golds, mode_a)
        parts["answer"] = {
            "score": float(passed),
            "passed": passed,
            "answer": answer,
            "gold_answers": golds,
            "answer_match": mode_a,
        }
        weights["answer"] = config.weights.answer

    total = sum(weights.values())
    if total > 0:
        reward = sum(parts[name]["score"] * w for name, w in weights.items()) / total
    else:  # every present part has weight 0: fall back to all-or-nothing
        reward = float(all(p["passed"] for p in parts.values()))
    failed = [name for name, part in parts.items() if not part["passed"]]
    if not config.partial_credit:
        reward = float(not failed)

    exceeded = _exceeded_limits(truth.limits, records)
    if exceeded:
        failed.append("limits")
        reward = 0.0 if config.limit_mode == "fail" else reward * (1.0 - config.limit_penalty)
    parts["limits"] = {"passed": not exceeded, "exceeded": exceeded, "mode": config.limit_mode}

    if not failed:
        reason = "all checks passed"
    else:
        reason = "failed: " + "; ".join(_explain(name, parts[name]) for name in failed)
    return reward, {
        "reward": reward,
        "reason": reason,
        "passed": not failed,
        "failed": failed,
        "parts": parts,
        "calls": len(records),
        "failed_calls": sum(c.error is not None for c in records),
    }


def _exceeded_limits(limits: Limits | None, calls: Sequence[CallRecord]) -> list[str]:
    if limits is None:
        return []
    used = {
        "max_servers": len({c.server for c in calls}),
        "max_tools": len({(c.server, c.tool) for c in calls}),
        "max_calls": len(calls),
    }
    exceeded = []
    for name, count in used.items():
        limit = getattr(limits, name)
        if limit is not None and count > limit:
            exceeded.append(f"{name}={limit} (used {count})")
    return exceeded


def _describe_step(step: ToolStep) -> str:
    where = f"{step.server}/" if step.server else ""
    params = json.dumps(step.params, sort_keys=True) if step.params else ""
    return f"{where}{step.tool}{params}"


def _explain(name: str, part: dict[str, Any]) -> str:
    if name == "tool_sequence":
        return (
            f"tool_sequence ({part['matched']}/{part['expected']} steps matched; missing: "
            f"{', '.join(part['missing'])})"
        )
    if name == "must_call_tool":
        return f"must_call_tool (never called: {', '.join(part['missing'])})"
    if name == "answer":
        return f"answer ({part['answer']!r} does not match {part['gold_answers']})"
    return f"limits exceeded: {', '.join(part['exceeded'])}"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
