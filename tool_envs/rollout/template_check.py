"""Check, before training, that a chat template fits how the rollout engine uses it.

The engine keeps the policy's generated tokens as they are and takes the env's tokens as the
difference between two renders (see :mod:`tool_envs.rollout.template`). That is only right when
the template is prefix-preserving, the tokenizer does not merge text across the split, the
assistant turn ends with the token the policy stops at, and tool calls and results are rendered
at all. Many shipped templates break one of these (Qwen3 strips earlier ``<think>`` blocks, some
drop ``tool_calls``, Llama 3.1 rejects two calls in a turn); the failure otherwise shows up only
as a model that learns from a transcript it never saw.

:func:`check_chat_template` renders a fixed set of probe conversations shaped like what the envs
produce and returns a :class:`TemplateReport` saying what fails, where, and how to fix it::

    report = check_chat_template(tokenizer)
    if not report.ok:
        print(report)
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from tool_envs.core.messages import Message, ToolCallMessagePart
from tool_envs.rollout.template import ChatTemplateRenderer

__all__ = ["TemplateProblem", "TemplateReport", "check_chat_template"]

# Check names, in the order they are run.
RENDER = "render"
PREFIX = "prefix"
TOKENS = "tokens"
STOP_TOKEN = "stop_token"
TOOL_CALLS = "tool_calls"
TOOL_RESULTS = "tool_results"

_SNIPPET = 40

# report(check, detail, fix) and render(messages, add_generation_prompt, what) inside a probe.
_Report = Callable[[str, str, str], None]
_Render = Callable[[Sequence[Message], bool, str], str]


@dataclass(frozen=True)
class TemplateProblem:
    """One failed check: which check, on which probe, what was seen, and what to do about it."""

    check: str
    probe: str
    detail: str
    fix: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.probe}: {self.detail}\n    fix: {self.fix}"


@dataclass
class TemplateReport:
    """Outcome of :func:`check_chat_template`; ``ok`` is True when no check failed."""

    ok: bool
    problems: list[TemplateProblem] = field(default_factory=list)
    probes: list[str] = field(default_factory=list)

    def by_check(self, check: str) -> list[TemplateProblem]:
        """The problems one check found (e.g. ``report.by_check("prefix")``)."""
        return [p for p in self.problems if p.check == check]

    def __str__(self) -> str:
        if self.ok:
            return f"chat template check: OK ({len(self.probes)} probes passed every check)"
        failed = {p.probe for p in self.problems} & set(self.probes)
        lines = [
            f"chat template check: FAILED ({len(self.problems)} problems; "
            f"{len(failed)} of {len(self.probes)} probes failed)"
        ]
        # The same cause usually fails many probes; show it once, with the probes it hit.
        groups: dict[tuple[str, str], list[TemplateProblem]] = {}
        for problem in self.problems:
            groups.setdefault((problem.check, problem.fix), []).append(problem)
        for (check, fix), problems in groups.items():
            lines.append(f"[{check}] in {', '.join(p.probe for p in problems)}")
            lines.append(f"    {problems[0].detail}")
            lines.append(f"    fix: {fix}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ProbeStep:
    """One point where env messages follow an assistant turn."""

    before: list[Message]
    added: list[Message]


@dataclass(frozen=True)
class Probe:
    """A conversation shaped like what an env produces, and what it exercises."""

    name: str
    messages: list[Message]
    tools: list[dict[str, Any]] | None
    feature: str

    def steps(self) -> list[ProbeStep]:
        """Every assistant message that env messages follow, with those messages."""
        steps = []
        for i, message in enumerate(self.messages):
            if message["role"] != "assistant":
                continue
            end = i + 1
            while end < len(self.messages) and self.messages[end]["role"] != "assistant":
                end += 1
            if end > i + 1:
                steps.append(ProbeStep(self.messages[: i + 1], self.messages[i + 1 : end]))
        return steps


# Probe content uses words that appear nowhere else in the probes, so finding them in a render
# proves the template rendered that message.
PROBE_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name."}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add_numbers",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    },
]


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> ToolCallMessagePart:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _tool(content: str, name: str, call_id: str) -> Message:
    return {"role": "tool", "content": content, "tool_call_id": call_id, "name": name}


def _conversations() -> list[tuple[str, str, list[Message]]]:
    system: Message = {"role": "system", "content": "You are a careful assistant."}
    ask: Message = {"role": "user", "content": "How warm is it in Quixotl?"}
    weather = _call("call_1", "get_weather", {"city": "Quixotl"})
    adding = _call("call_2", "add_numbers", {"a": 417, "b": 2903})
    weather_result = _tool("sunny and 23 degrees", "get_weather", "call_1")
    adding_result = _tool("3320", "add_numbers", "call_2")
    return [
        (
            "text",
            "a plain-text assistant turn followed by a user reply",
            [
                system,
                {"role": "user", "content": "Greet me briefly."},
                {"role": "assistant", "content": "Hello there."},
                {"role": "user", "content": "Thanks, again please."},
            ],
        ),
        (
            "one_call",
            "an assistant tool call (without a system message) and a tool message",
            [ask, {"role": "assistant", "content": "", "tool_calls": [weather]}, weather_result],
        ),
        (
            "two_calls",
            "two tool calls in one assistant turn and two tool messages",
            [
                system,
                ask,
                {"role": "assistant", "content": "", "tool_calls": [weather, adding]},
                weather_result,
                adding_result,
            ],
        ),
        (
            "second_round",
            "a tool round followed by an assistant answer and a user reply",
            [
                system,
                ask,
                {"role": "assistant", "content": "", "tool_calls": [weather]},
                weather_result,
                {"role": "assistant", "content": "It is sunny, 23 degrees."},
                {"role": "user", "content": "Is that warm for spring?"},
            ],
        ),
        (
            "think",
            "assistant turns with <think> blocks, a tool call and a user reply",
            [
                system,
                ask,
                {
                    "role": "assistant",
                    "content": "<think>\nThe weather tool knows this.\n</think>\n\n",
                    "tool_calls": [weather],
                },
                weather_result,
                {
                    "role": "assistant",
                    "content": "<think>\nThe tool answered.\n</think>\n\nSunny, 23 degrees.",
                },
                {"role": "user", "content": "Is that warm for spring?"},
            ],
        ),
    ]


def probe_set(tools: list[dict[str, Any]] | None = None) -> list[Probe]:
    """The probes: every conversation once without tools and once with ``tools``."""
    tools = tools if tools else PROBE_TOOLS
    probes = []
    for name, feature, messages in _conversations():
        probes.append(Probe(f"{name} (no tools)", messages, None, feature))
        probes.append(Probe(f"{name} (tools)", messages, tools, feature))
    return probes


def check_chat_template(
    tokenizer: Any,
    *,
    chat_template: str | None = None,
    template_kwargs: dict[str, Any] | None = None,
    tools: list[dict[str, Any]] | None = None,
    stop_token: str | None = None,
) -> TemplateReport:
    """Render the probe conversations and report what the rollout engine would get wrong.

    Args:
        tokenizer: A Hugging Face tokenizer (its own chat template is used unless
            ``chat_template`` is given).
        chat_template: Template text to check instead of the tokenizer's.
        template_kwargs: Extra template variables, as the engine would pass them.
        tools: Tool schemas for the "with tools" probes (default: two small example tools).
        stop_token: The token the policy's turns end with (default: ``tokenizer.eos_token``).
    """
    probes = probe_set(tools)
    names = [p.name for p in probes]
    template = (
        chat_template if chat_template is not None else getattr(tokenizer, "chat_template", None)
    )
    if not isinstance(template, str):
        fix = "set tokenizer.chat_template or pass chat_template=..."
        problem = TemplateProblem(RENDER, "*", "there is no chat template to check", fix)
        return TemplateReport(False, [problem], names)
    renderer = ChatTemplateRenderer(
        tokenizer, chat_template=chat_template, template_kwargs=template_kwargs
    )
    stop = stop_token if stop_token is not None else getattr(tokenizer, "eos_token", None)
    problems = _check_stop_token_itself(renderer, stop)
    for probe in probes:
        problems.extend(_check_probe(renderer, probe, stop, template))
    return TemplateReport(not problems, _explain_two_calls(problems), names)


def _check_stop_token_itself(
    renderer: ChatTemplateRenderer, stop: str | None
) -> list[TemplateProblem]:
    fix = (
        "pass stop_token= the token the policy's turns end with (for ChatML templates "
        "'<|im_end|>', for Llama 3 '<|eot_id|>'), or set tokenizer.eos_token to it"
    )
    if not stop:
        return [
            TemplateProblem(STOP_TOKEN, "*", "no stop token: the tokenizer has no eos_token", fix)
        ]
    ids = renderer.encode(stop)
    if len(ids) != 1:
        detail = f"stop token {stop!r} is not one token in this tokenizer (it encodes to {ids})"
        return [TemplateProblem(STOP_TOKEN, "*", detail, "add it as a special token, or " + fix)]
    return []


class _RenderFailed(Exception):
    def __init__(self, what: str, error: Exception):
        super().__init__(what)
        self.what = what
        self.error = error


def _check_probe(
    renderer: ChatTemplateRenderer, probe: Probe, stop: str | None, template: str
) -> list[TemplateProblem]:
    def render(messages: Sequence[Message], generation_prompt: bool, what: str) -> str:
        try:
            return renderer.render(messages, probe.tools, add_generation_prompt=generation_prompt)
        except Exception as error:  # a template may raise anything, by design
            raise _RenderFailed(what, error) from error

    found: dict[str, TemplateProblem] = {}

    def report(check: str, detail: str, fix: str) -> None:
        # The first failing step tells the cause; later steps of the same probe repeat it.
        found.setdefault(check, TemplateProblem(check, probe.name, detail, fix))

    try:
        full = render(probe.messages, True, "the whole conversation")
        for step in probe.steps():
            roles = [m["role"] for m in step.added]
            previous = render(step.before, False, "the conversation up to an assistant turn")
            following = render([*step.before, *step.added], True, f"it with {roles} added")
            header = render(step.before[:-1], True, "the conversation before an assistant turn")
            is_prefix = following.startswith(previous)
            if not is_prefix:
                report(
                    PREFIX,
                    _prefix_detail(previous, following, roles),
                    _prefix_fix(previous, following, template),
                )
            stop_end = _check_stop(previous, header, step.before[-1], stop, report)
            if is_prefix:
                _check_tokens(renderer, previous, following, stop_end, report)
        _check_tools_rendered(probe, full, render, report)
    except _RenderFailed as failed:
        error = failed.error
        detail = f"rendering {failed.what} ({probe.feature}) raised {type(error).__name__}: {error}"
        report(
            RENDER,
            detail,
            "the template raises on this conversation; use one that renders assistant tool_calls "
            "and role 'tool' messages (e.g. TRL's qwen2_5.jinja or qwen3_training.jinja)",
        )
    return list(found.values())


def _first_difference(a: Sequence[Any], b: Sequence[Any]) -> int:
    pairs = enumerate(zip(a, b, strict=False))
    return next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))


def _prefix_detail(previous: str, following: str, roles: list[str]) -> str:
    at = _first_difference(previous, following)
    start = max(at - 10, 0)  # a little context: the difference may start inside a tag
    return (
        f"adding {roles} after the assistant turn changed the earlier render at character {at}: "
        f"{previous[start : at + _SNIPPET]!r} became {following[start : at + _SNIPPET]!r}"
    )


def _inside_think_block(text: str, at: int) -> bool:
    """Whether position ``at`` of ``text`` is within a ``<think>...</think>`` block (tags too)."""
    opening = text.rfind("<think>", 0, at + 1)
    if opening < 0:
        # The difference may start inside the tag itself ("<t" shared with "<tool_call>").
        opening = text.rfind("<think>", max(at - len("<think>"), 0), at + len("<think>"))
    if opening < 0:
        return False
    closing = text.find("</think>", opening)
    return closing < 0 or at <= closing + len("</think>")


def _prefix_fix(previous: str, following: str, template: str) -> str:
    at = _first_difference(previous, following)
    if _inside_think_block(previous, at):
        variant = _trl_training_variant(template) or "qwen3_training"
        fix = (
            "the template renders a <think> block differently once messages follow its turn "
            "(drops earlier reasoning, or adds an empty block to the latest turn only); use a "
            f"template that keeps reasoning in earlier turns, e.g. TRL's {variant}.jinja "
            f"(tool_envs.tiny_models.trl_chat_template({variant!r}))"
        )
        if "preserve_thinking" in template:
            fix += ", or pass template_kwargs={'preserve_thinking': True}"
        return fix
    return (
        "the template renders earlier turns differently once messages follow them (a turn "
        "counter, a date, a special case for the last message); use a prefix-preserving template, "
        "in which each message renders the same whatever comes after it"
    )


@lru_cache(maxsize=1)
def _trl_templates() -> dict[str, str]:
    """TRL's shipped chat templates by name (empty without TRL), read once."""
    try:
        import trl
    except ImportError:
        return {}
    folder = Path(trl.__file__).parent / "chat_templates"
    return {path.stem: path.read_text(encoding="utf-8") for path in folder.glob("*.jinja")}


def _trl_training_variant(template: str) -> str | None:
    """The name of TRL's prefix-preserving training variant of ``template``, if TRL ships one."""
    templates = _trl_templates()
    for name, text in templates.items():
        if text == template and f"{name}_training" in templates:
            return f"{name}_training"
    return None


def _check_stop(
    previous: str, header: str, turn: Message, stop: str | None, report: _Report
) -> int | None:
    """Where the stop token ends in the last assistant turn of ``previous`` (None: not there)."""
    if not stop:
        return None
    if previous.startswith(header):
        start = len(header)
    else:  # the header is not a prefix either; find the turn by its text instead
        markers = [(turn.get("content") or "").strip(), *_call_needles(turn)]
        marker = next((m for m in markers if m), None)
        start = max(previous.rfind(marker), 0) if marker else 0
    stop_at = previous.rfind(stop, start)
    fix = (
        "pass stop_token= the token the policy's turns end with (for ChatML templates "
        "'<|im_end|>', for Llama 3 '<|eot_id|>'), or use a template that ends every assistant "
        "turn with it"
    )
    if stop_at < 0:
        turn_text = previous[start:]
        report(
            STOP_TOKEN,
            f"the rendered assistant turn does not contain the stop token {stop!r}; it ends with "
            f"{turn_text[-_SNIPPET:]!r}, so the env's tokens cannot be told from the policy's",
            fix,
        )
        return None
    tail = previous[stop_at + len(stop) :]
    if tail.strip():
        report(
            STOP_TOKEN,
            f"the assistant turn goes on after the stop token {stop!r} with {tail[:_SNIPPET]!r}; "
            "the policy stops before writing it, so the env would be credited with it",
            fix,
        )
    return stop_at + len(stop)


def _check_tokens(
    renderer: ChatTemplateRenderer,
    previous: str,
    following: str,
    stop_end: int | None,
    report: _Report,
) -> None:
    whole = renderer.encode(following)
    splits = [("the end of the assistant turn's render", len(previous))]
    if stop_end is not None and stop_end != len(previous):
        splits.append(("the stop token", stop_end))
    for where, cut in splits:
        pieces = renderer.encode(following[:cut]) + renderer.encode(following[cut:])
        if pieces == whole:
            continue
        at = _first_difference(pieces, whole)
        tokens = renderer.tokenizer.convert_ids_to_tokens
        report(
            TOKENS,
            f"split at {where}, the pieces tokenize to {tokens(pieces[at : at + 3])} but the whole "
            f"render to {tokens(whole[at : at + 3])} (token {at}), around "
            f"{following[max(cut - 15, 0) : cut + 15]!r}",
            "the tokenizer merges text across the point where the env's part begins; end every "
            "assistant turn with a special token and start the next message with one (as "
            "ChatML's '<|im_end|>\\n<|im_start|>' does)",
        )
        return


def _call_needles(message: Message) -> list[str]:
    """Text that any render of the message's tool calls must contain: names and argument values."""
    needles = []
    for call in message.get("tool_calls", []):
        function = call["function"]
        needles.append(function["name"])
        arguments = function["arguments"]
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        needles.extend(v if isinstance(v, str) else json.dumps(v) for v in arguments.values())
    return needles


def _check_tools_rendered(probe: Probe, full: str, render: _Render, report: _Report) -> None:
    needed = Counter(n for m in probe.messages for n in _call_needles(m))
    if needed:
        # Names also appear in the tool schemas: count what the calls add to a render without them.
        stripped = [
            {k: v for k, v in m.items() if k != "tool_calls"} if m["role"] == "assistant" else m
            for m in probe.messages
        ]
        try:
            baseline = render(stripped, True, "the conversation without tool calls")
        except Exception:
            baseline = ""
        missing = [n for n, k in needed.items() if full.count(n) - baseline.count(n) < k]
        if missing:
            report(
                TOOL_CALLS,
                f"the render does not contain the assistant's tool calls (missing {missing})",
                "this template cannot render tool calls; use one that does (e.g. TRL's "
                "qwen2_5.jinja or qwen3_training.jinja, or llama3_1.jinja for one call per turn)",
            )
    missing_results = [
        m["content"] for m in probe.messages if m["role"] == "tool" and m["content"] not in full
    ]
    if missing_results:
        report(
            TOOL_RESULTS,
            f"the render does not contain the tool results {missing_results}",
            "this template drops role 'tool' messages; use one that renders them (e.g. TRL's "
            "qwen2_5.jinja or qwen3_training.jinja)",
        )


def _explain_two_calls(problems: list[TemplateProblem]) -> list[TemplateProblem]:
    """Name the cause when only the two-call probes fail to render: a single-call template."""
    failed = {p.probe.split(" ")[0] for p in problems if p.check == RENDER}
    if failed != {"two_calls"}:
        return problems
    fix = (
        "the template cannot render two tool calls in one assistant turn; let the env accept at "
        "most one call per turn (Llama 3.1/3.2 are trained for single calls), or use a template "
        "that renders several (e.g. TRL's qwen2_5.jinja)"
    )
    return [replace(p, fix=fix) if p.check == RENDER else p for p in problems]
