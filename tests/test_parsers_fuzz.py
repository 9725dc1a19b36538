"""Fuzz tests: no parser raises on any string, and results always have the documented types."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tool_envs.core.parsers import PARSERS, ParseError, ParseResult, ToolCall, get_parser
from tool_envs.core.parsers.hermes import HermesParser

FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<|python_tag|>",
    "{",
    "}",
    "[",
    "]",
    '"name"',
    '"arguments"',
    '"parameters"',
    '"tool_calls"',
    '"function"',
    '"id"',
    ":",
    ",",
    '"add"',
    "1",
    "-2.5e3",
    "null",
    "true",
    "Thought:",
    "Action:",
    "Action Input:",
    "Observation:",
    "Final Answer:",
    "```json",
    "```python",
    "```",
    "add",
    "functions.",
    "(",
    ")",
    "=",
    "a",
    "**",
    "...",
    '"',
    "'",
    "\\",
    '\\"',
    "\n",
    " ",
    "\t",
    "é",
    "\x00",
    "\ud7ff",
]

fragment_text = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
call_text = st.builds(
    lambda pre, name, args, post: f'{pre}<tool_call>{{"name": {name}, "arguments": {args}}}{post}',
    fragment_text,
    st.sampled_from(['"add"', '""', "1", "null", '"a\\"b"']),
    st.sampled_from(["{}", '{"a": 1}', '"{\\"a\\": 1}"', "[1]", '"x"', "{"]),
    fragment_text,
)
TOOL_NAMES = st.none() | st.just(frozenset({"add", "a", "search"}))
PARSER_NAMES = sorted(PARSERS)
INTERNAL_ERROR = "could not be parsed ("  # BaseParser's catch-all: reaching it means a bug


def check(result: object, where: str) -> None:
    assert isinstance(result, ParseResult), where
    assert isinstance(result.content, str), where
    assert isinstance(result.tool_calls, tuple), where
    for call in result.tool_calls:
        assert isinstance(call, ToolCall), where
        assert isinstance(call.name, str) and call.name, where
        assert isinstance(call.arguments, dict), where
        assert call.id is None or isinstance(call.id, str), where
    if result.error is not None:
        assert isinstance(result.error, ParseError), where
        assert isinstance(result.error.message, str) and result.error.message, where
        assert INTERNAL_ERROR not in result.error.message, (where, result.error)
        assert len(result.error.snippet) <= 210, where


def check_all(text: str, tool_names: frozenset[str] | None = None) -> None:
    """Run every registered parser on one input; one example exercises all of them."""
    for name in PARSER_NAMES:
        check(get_parser(name).parse(text, tool_names=tool_names), f"parser {name!r}")


@settings(max_examples=300, deadline=None)
@given(text=st.text(), tool_names=TOOL_NAMES)
def test_arbitrary_unicode_never_raises(text, tool_names):
    check_all(text, tool_names)


@settings(max_examples=300, deadline=None)
@given(text=fragment_text, tool_names=TOOL_NAMES)
def test_stress_fragments_never_raise(text, tool_names):
    check_all(text, tool_names)


@settings(max_examples=150, deadline=None)
@given(text=call_text, tool_names=TOOL_NAMES)
def test_near_miss_calls_never_raise(text, tool_names):
    check_all(text, tool_names)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 5000,
        "{" * 5000,
        '<tool_call>{"name": "a", "arguments": ' + "[" * 5000 + "]" * 5000 + "}</tool_call>",
        "add(a=" + "[" * 2000 + "]" * 2000 + ")",
        "add(a=" + "9" * 5000 + ")",
        '{"name": "a", "arguments": {"x": ' + "9" * 5000 + "}}",
        "```python\n" + "(" * 500 + ")" * 500 + "\n```",
        "Action: add\nAction Input: " + "[" * 5000,
    ],
    ids=[
        "deep-list",
        "deep-obj",
        "deep-hermes",
        "deep-python",
        "bigint-py",
        "bigint-json",
        "parens",
        "deep-react",
    ],
)
@pytest.mark.parametrize("tool_names", [None, frozenset({"add"})])
def test_pathological_inputs_never_raise(text, tool_names):
    check_all(text, tool_names)


single_call_text = st.builds(
    lambda before, call, after: f"{before}<tool_call>{call}</tool_call>{after}",
    st.sampled_from(["", " ", "\n", "\u2003", "x"]),
    st.builds(
        lambda name, arguments, indent: json.dumps(
            {"name": name, "arguments": arguments}, indent=indent
        ),
        st.sampled_from(["add", "search", "", "a b"]),
        st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=8), max_size=3)
        | st.just("{}")
        | st.none(),
        st.none() | st.just(2),
    )
    | fragment_text,
    st.sampled_from(["", " ", "\n", "x", "<tool_call>"]),
)


@settings(max_examples=400, deadline=None)
@given(text=single_call_text | call_text)
def test_hermes_single_call_fast_path_agrees_with_the_full_scan(text):
    parser = HermesParser()
    fast = parser._single_call(text)
    if fast is not None:
        assert fast == parser._scan(text)


# -- linear time (issue 18) ---------------------------------------------------------------------
# Inputs on which the parsers used to take quadratic time (measured before the fix on 2 cores:
# 33 s, 13 s, 14 s, 14 s and 14 s); linear parsers read each in well under a second.
SLOW_BEFORE = {
    "python-calls": ("python", "\n".join(f"add(a={i}, b=2)" for i in range(3000))),
    "unclosed-hermes": ("hermes", '<tool_call>{"name":"a","arguments":{}}' * 40_000),
    "hermes-strings": ("hermes", '<tool_call>["</tool_call>' * 60_000),
    "json-fences": ("json", '```json\n{"name":"a","arguments":{}}\n```\n' * 20_000),
    "answer-tags": ("answer", "<answer>" * 20_000),
}
LINEAR_BOUND_S = 4.0


@pytest.mark.parametrize("case", list(SLOW_BEFORE))
def test_parsers_and_extractors_take_linear_time(case):
    import time

    from tool_envs.search.scoring import extract_answer

    kind, text = SLOW_BEFORE[case]
    names = [kind, "auto"] if kind != "answer" else []
    # CPU time of this thread, not wall time: other load on the machine does not count.
    started = time.thread_time()
    for name in names:
        check(get_parser(name).parse(text), name)
    if kind == "answer":
        assert extract_answer(text) is None
    assert time.thread_time() - started < LINEAR_BOUND_S


def test_text_past_the_cap_is_not_read_for_calls():
    from tool_envs.core.parsers._common import MAX_PARSE_CHARS

    text = '<tool_call>{"name": "add", "arguments": {}}</tool_call>' + " " * MAX_PARSE_CHARS
    for name in PARSER_NAMES:
        result = get_parser(name).parse(text)
        assert result.tool_calls == () and "at most 1,000,000 characters" in result.error.message
