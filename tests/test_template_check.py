"""check_chat_template on TRL's real templates and on hand-written broken ones.

Every template is paired with a tiny locally trained tokenizer that knows the template's special
tokens, so the token checks are run for real and no model is downloaded.
"""

from __future__ import annotations

import copy

import pytest

from tool_envs.rollout.template import ChatTemplateRenderer
from tool_envs.rollout.template_check import (
    TemplateProblem,
    TemplateReport,
    check_chat_template,
    probe_set,
)
from tool_envs.tiny_models import build_tokenizer, trl_chat_template

LLAMA_SPECIAL_TOKENS = [
    "<|begin_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
]


def _texts() -> list[str]:
    words = ["weather", "assistant", "user", "tool", "sunny", "degrees", "hello", "spring"]
    return [
        f"the {words[i % 8]} asked the {words[(i * 3) % 8]} user about {words[(i * 5) % 8]} {i}"
        for i in range(300)
    ]


@pytest.fixture(scope="module")
def chatml_tokenizer():
    return build_tokenizer(_texts(), vocab_size=400)


@pytest.fixture(scope="module")
def llama_tokenizer(chatml_tokenizer):
    tokenizer = copy.deepcopy(chatml_tokenizer)
    tokenizer.add_special_tokens({"additional_special_tokens": LLAMA_SPECIAL_TOKENS})
    tokenizer.bos_token = "<|begin_of_text|>"
    tokenizer.eos_token = "<|eot_id|>"  # the end-of-turn token Llama 3 instruct models stop at
    return tokenizer


def _checks(report: TemplateReport) -> set[str]:
    return {p.check for p in report.problems}


def _probes(report: TemplateReport, check: str) -> set[str]:
    return {p.probe for p in report.by_check(check)}


# -- TRL's templates ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["qwen2_5", "qwen2_5_training", "qwen3_training", "qwen3_instruct_2507"]
)
def test_prefix_preserving_chatml_templates_pass(chatml_tokenizer, name):
    report = check_chat_template(chatml_tokenizer, chat_template=trl_chat_template(name))
    assert report.ok, str(report)
    assert report.problems == []
    assert len(report.probes) == 10
    assert str(report).startswith("chat template check: OK")


def test_qwen3_strips_earlier_think_blocks_and_the_fix_names_qwen3_training(chatml_tokenizer):
    report = check_chat_template(chatml_tokenizer, chat_template=trl_chat_template("qwen3"))
    # Qwen3 renders an assistant turn's <think> block only while no user message follows it (an
    # empty one is even added to the latest turn), so *every* probe changes its earlier render.
    assert not report.ok
    assert _checks(report) == {"prefix"}
    assert _probes(report, "prefix") == set(report.probes)
    think = next(p for p in report.problems if p.probe == "think (tools)")
    assert "<think>" in think.detail
    assert "qwen3_training" in think.fix
    assert "preserve_thinking" not in think.fix  # qwen3.jinja has no such switch
    text = str(report)
    assert "FAILED" in text and "qwen3_training" in text
    assert text.count("fix:") == 1  # one cause, reported once with every probe it hit


def test_qwen3_6_is_fixed_by_the_preserve_thinking_switch(chatml_tokenizer):
    template = trl_chat_template("qwen3_6")
    report = check_chat_template(chatml_tokenizer, chat_template=template)
    assert _checks(report) == {"prefix"}
    # The fix names the model's own training variant when TRL ships one, and the switch.
    assert all("qwen3_6_training" in p.fix for p in report.problems)
    assert all("preserve_thinking" in p.fix for p in report.problems)
    fixed = check_chat_template(
        chatml_tokenizer, chat_template=template, template_kwargs={"preserve_thinking": True}
    )
    assert fixed.ok, str(fixed)


@pytest.mark.parametrize("name", ["llama3_1", "llama3_2"])
def test_llama3_1_and_3_2_fail_only_on_two_calls_in_one_turn(llama_tokenizer, name):
    # Both templates raise_exception() when an assistant turn holds more than one tool call.
    # Everything else passes: the date in the system header is fixed ("26 Jul 2024") in 3.1 and
    # today's date in 3.2, the same in both renders of a step; tool results are rendered as an
    # `ipython` turn (strings JSON-quoted) and calls as {"name": ..., "parameters": ...}, which
    # still contain the call and the result; every turn ends with the special <|eot_id|>.
    report = check_chat_template(llama_tokenizer, chat_template=trl_chat_template(name))
    assert not report.ok
    assert _checks(report) == {"render"}
    assert _probes(report, "render") == {"two_calls (no tools)", "two_calls (tools)"}
    problem = report.problems[0]
    assert "single tool-calls" in problem.detail
    assert "one call per turn" in problem.fix


@pytest.mark.parametrize("name", ["llama3", "llama3_training"])
def test_llama3_drops_tool_calls(llama_tokenizer, name):
    # The original Llama 3 template renders `content` only, so calls vanish; tool messages still
    # render (as a `tool` turn), and the template is otherwise prefix-preserving.
    report = check_chat_template(llama_tokenizer, chat_template=trl_chat_template(name))
    assert _checks(report) == {"tool_calls"}
    assert _probes(report, "tool_calls") == {p for p in report.probes if "text" not in p}
    assert all("cannot render tool calls" in p.fix for p in report.problems)


def test_llama_template_with_the_chatml_stop_token_is_flagged(llama_tokenizer):
    report = check_chat_template(
        llama_tokenizer, chat_template=trl_chat_template("llama3_1"), stop_token="<|im_end|>"
    )
    stop = report.by_check("stop_token")
    assert stop and "does not contain the stop token '<|im_end|>'" in stop[0].detail
    assert "<|eot_id|>" in stop[0].fix


# -- hand-written templates ------------------------------------------------------------------

# A minimal ChatML template that renders tool calls and passes every check; the broken variants
# below each change one piece of it.
CALLS = (
    "{%- for c in m.tool_calls or [] %}"
    "{{- '<tool_call>' + (c.function | tojson) + '</tool_call>' }}"
    "{%- endfor %}"
)
TOOL_CHECK = ""
HEADER = "{{- '<|im_start|>' + m.role + '\\n' + m.content }}"
END = "{{- '<|im_end|>\\n' }}"
PROMPT = "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"


def _template(
    *, preamble="", tool_check=TOOL_CHECK, header=HEADER, calls=CALLS, end=END, prompt=PROMPT
):
    body = f"{tool_check}{header}{calls}{end}"
    return f"{preamble}{{%- for m in messages %}}{body}{{%- endfor %}}{prompt}"


def test_the_minimal_chatml_template_passes(chatml_tokenizer):
    report = check_chat_template(chatml_tokenizer, chat_template=_template())
    assert report.ok, str(report)


def test_template_that_drops_tool_calls_is_flagged(chatml_tokenizer):
    report = check_chat_template(chatml_tokenizer, chat_template=_template(calls=""))
    assert _checks(report) == {"tool_calls"}
    problem = report.by_check("tool_calls")[0]
    assert "get_weather" in problem.detail
    assert problem.fix.startswith("this template cannot render tool calls")


def test_template_that_drops_tool_results_is_flagged(chatml_tokenizer):
    skip_tool = "{%- if m.role != 'tool' %}" + HEADER
    end = END + "{%- endif %}"
    report = check_chat_template(
        chatml_tokenizer, chat_template=_template(header=skip_tool, end=end)
    )
    assert "tool_results" in _checks(report)
    assert "sunny and 23 degrees" in report.by_check("tool_results")[0].detail


@pytest.mark.parametrize(
    ("kwargs", "before", "after"),
    [
        # A turn counter in the system header changes with every message added.
        (
            {"preamble": "{{- '<|im_start|>system\\nturns=' + (messages | length | string) }}"},
            "turns=3",
            "turns=4",
        ),
        # The last message ends differently from the earlier ones.
        (
            {"end": "{{- '<|im_end|><|endoftext|>' if loop.last else '<|im_end|>\\n' }}"},
            "<|endoftext|>",
            "<|im_start|>",
        ),
    ],
)
def test_template_that_is_not_prefix_preserving_is_flagged_with_a_snippet(
    chatml_tokenizer, kwargs, before, after
):
    report = check_chat_template(chatml_tokenizer, chat_template=_template(**kwargs))
    problems = report.by_check("prefix")
    assert {p.probe for p in problems} == set(report.probes)
    text = next(p for p in problems if p.probe == "text (no tools)")
    assert "changed the earlier render" in text.detail
    assert before in text.detail and after in text.detail
    assert "prefix-preserving" in text.fix


def test_template_that_raises_on_tool_messages_is_reported_not_raised(chatml_tokenizer):
    raising = "{%- if m.role == 'tool' %}{{ raise_exception('no tool messages here') }}{%- endif %}"
    report = check_chat_template(chatml_tokenizer, chat_template=_template(tool_check=raising))
    assert _checks(report) == {"render"}
    assert _probes(report, "render") == {p for p in report.probes if "text" not in p}
    problem = report.by_check("render")[0]
    assert "no tool messages here" in problem.detail
    # One cause, one fix: not the single-call diagnosis, since one-call probes fail too.
    assert {p.fix for p in report.problems} == {problem.fix}
    assert "raises on this conversation" in problem.fix and "two tool calls" not in problem.fix
    assert "[render]" in str(report) and "no tool messages here" in str(report)


def test_text_merging_across_the_split_is_flagged_by_the_token_check(chatml_tokenizer):
    # Turns separated by a plain space: " user" is one pre-token in the whole render, but the
    # split leaves " " at the end of the assistant's part and "user" at the start of the env's.
    template = _template(
        header="{{- m.role + ': ' + m.content }}",
        end="{{- '<|im_end|> ' }}",
        prompt="{%- if add_generation_prompt %}{{- 'assistant:' }}{%- endif %}",
    )
    report = check_chat_template(chatml_tokenizer, chat_template=template)
    assert _checks(report) == {"tokens"}
    assert "pieces tokenize to" in report.problems[0].detail
    assert "special token" in report.problems[0].fix


def test_assistant_turn_without_the_stop_token_is_flagged(chatml_tokenizer):
    template = _template(header="{{- '### ' + m.role + '\\n' + m.content }}", end="{{- '\\n\\n' }}")
    report = check_chat_template(chatml_tokenizer, chat_template=template)
    assert "stop_token" in _checks(report)
    assert "does not contain the stop token '<|im_end|>'" in report.by_check("stop_token")[0].detail


def test_text_after_the_stop_token_in_the_assistant_turn_is_flagged(chatml_tokenizer):
    template = _template(end="{{- '<|im_end|>done\\n' }}")
    report = check_chat_template(chatml_tokenizer, chat_template=template)
    assert _checks(report) == {"stop_token"}
    assert "goes on after the stop token" in report.problems[0].detail


def test_stop_token_that_is_not_one_token_is_flagged(chatml_tokenizer):
    report = check_chat_template(
        chatml_tokenizer, chat_template=trl_chat_template("qwen2_5"), stop_token="[[stop]]"
    )
    assert report.problems[0] == TemplateProblem(
        "stop_token", "*", report.problems[0].detail, report.problems[0].fix
    )
    assert "is not one token" in report.problems[0].detail


def test_tokenizer_without_a_template_is_reported(chatml_tokenizer):
    tokenizer = copy.copy(chatml_tokenizer)
    tokenizer.chat_template = None
    report = check_chat_template(tokenizer)
    assert not report.ok and _checks(report) == {"render"}


# -- the engine's assumption -----------------------------------------------------------------


def test_env_text_is_the_render_difference_plus_the_post_stop_tail(chatml_tokenizer):
    template = trl_chat_template("qwen2_5")
    assert check_chat_template(chatml_tokenizer, chat_template=template).ok
    renderer = ChatTemplateRenderer(chatml_tokenizer, chat_template=template)
    stop = "<|im_end|>"
    checked = 0
    for probe in probe_set():
        for step in probe.steps():
            previous, following = (
                chatml_tokenizer.apply_chat_template(
                    messages,
                    tools=probe.tools,
                    chat_template=template,
                    add_generation_prompt=prompt,
                    tokenize=False,
                )
                for messages, prompt in ((step.before, False), ([*step.before, *step.added], True))
            )
            tail = previous[previous.rindex(stop) + len(stop) :]
            assert tail == "\n"  # what Qwen2.5 writes after <|im_end|> in the assistant turn
            env_text = renderer.env_text(step.before, step.added, probe.tools, stop)
            assert env_text == tail + following[len(previous) :]
            # What the policy generated (up to its stop token) + the env's ids = the whole render.
            policy_ids = renderer.encode(previous[: len(previous) - len(tail)])
            env_ids = renderer.env_ids(step.before, step.added, probe.tools, stop)
            assert policy_ids[-1] == chatml_tokenizer.convert_tokens_to_ids(stop)
            assert policy_ids + env_ids == renderer.encode(following)
            checked += 1
    assert checked == 14  # 7 steps, with and without tools
