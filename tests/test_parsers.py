"""Golden tests for the tool-call parsers: each format, its edge cases, and auto-detection."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

from tool_envs.core.parsers import (
    PARSERS,
    AutoParser,
    HermesParser,
    JSONCallParser,
    OpenAIJSONParser,
    ParseError,
    ParseResult,
    PythonCallParser,
    ReActParser,
    ToolCall,
    ToolCallParser,
    available_parsers,
    get_parser,
)
from tool_envs.errors import EnvConfigError

TOOLS = frozenset({"add", "search", "get_time"})


def calls(result: ParseResult) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for c in result.tool_calls]


# --------------------------------------------------------------------------------------------
# Hermes


class TestHermes:
    p = HermesParser()

    def test_single_call(self):
        r = self.p.parse('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>')
        assert calls(r) == [("add", {"a": 1, "b": 2})]
        assert r.content == ""
        assert r.error is None
        assert not r.is_respond

    def test_several_calls_multiline_and_content(self):
        text = (
            "Let me compute both.\n"
            "<tool_call>\n"
            '{"name": "add",\n "arguments": {"a": 1,\n   "b": 2}}\n'
            "</tool_call>\n"
            "<tool_call>\n"
            '{"name": "search", "arguments": {"query": "x"}}\n'
            "</tool_call>\n"
            "Done."
        )
        r = self.p.parse(text)
        assert calls(r) == [("add", {"a": 1, "b": 2}), ("search", {"query": "x"})]
        assert r.content == "Let me compute both.\n\n\nDone."
        assert r.error is None

    def test_nested_escaped_unicode(self):
        args = {"filter": {"tags": ["a", {"deep": [1, 2.5, None, True]}]}, "q": 'say "hi" \\ ok'}
        args["city"] = "Zürich 東京 🚀"
        text = f'<tool_call>{{"name": "search", "arguments": {json.dumps(args)}}}</tool_call>'
        r = self.p.parse(text)
        assert calls(r) == [("search", args)]

    def test_raw_unicode_not_ascii_escaped(self):
        text = '<tool_call>{"name": "search", "arguments": {"q": "café ☕"}}</tool_call>'
        assert calls(self.p.parse(text)) == [("search", {"q": "café ☕"})]

    def test_closing_tag_inside_string_value(self):
        text = (
            '<tool_call>{"name": "echo", "arguments": {"text": "a </tool_call> b <tool_call>"}}'
            "</tool_call> after"
        )
        r = self.p.parse(text)
        assert calls(r) == [("echo", {"text": "a </tool_call> b <tool_call>"})]
        assert r.content == "after"
        assert r.error is None

    def test_unclosed_complete_json(self):
        r = self.p.parse('I will add.\n<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n')
        assert calls(r) == [("add", {"a": 1})]
        assert r.content == "I will add."
        assert r.error is None

    def test_unclosed_followed_by_next_call(self):
        text = (
            '<tool_call>{"name": "add", "arguments": {"a": 1}}\n'
            '<tool_call>{"name": "add", "arguments": {"a": 2}}</tool_call>'
        )
        assert calls(self.p.parse(text)) == [("add", {"a": 1}), ("add", {"a": 2})]

    def test_unclosed_broken_json(self):
        r = self.p.parse('<tool_call>{"name": "add", "arguments": {"a": 1')
        assert r.tool_calls == ()
        assert isinstance(r.error, ParseError)
        assert r.error.format == "hermes"
        assert "Invalid JSON" in r.error.message
        assert "no closing" in r.error.message
        assert r.error.snippet.startswith("<tool_call>")

    def test_broken_json_with_trailing_comma(self):
        r = self.p.parse('<tool_call>{"name": "add", "arguments": {"a": 1,}}</tool_call>')
        assert r.tool_calls == ()
        assert r.error is not None and "Invalid JSON" in r.error.message
        assert "line 1 column" in r.error.message

    def test_good_call_kept_next_to_broken_one(self):
        text = (
            '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>\n'
            "<tool_call>{oops}</tool_call>"
        )
        r = self.p.parse(text)
        assert calls(r) == [("add", {"a": 1})]
        assert r.error is not None
        assert r.error.snippet == "<tool_call>{oops}</tool_call>"

    def test_arguments_as_json_string(self):
        text = '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": [2]}"}</tool_call>'
        assert calls(self.p.parse(text)) == [("add", {"a": 1, "b": [2]})]

    def test_parameters_alias(self):
        text = '<tool_call>{"name": "add", "parameters": {"a": 1}}</tool_call>'
        assert calls(self.p.parse(text)) == [("add", {"a": 1})]

    def test_missing_arguments_means_no_arguments(self):
        r = self.p.parse('<tool_call>{"name": "get_time"}</tool_call>')
        assert calls(r) == [("get_time", {})]

    def test_arguments_list_is_error_with_shape(self):
        r = self.p.parse('<tool_call>{"name": "add", "arguments": [1, 2]}</tool_call>')
        assert r.tool_calls == ()
        assert r.error is not None
        assert r.error.message == (
            'Tool call must be {"name": <tool name>, "arguments": {...}}; "arguments" was a list'
        )

    @pytest.mark.parametrize(
        ("payload", "problem"),
        [
            ('{"arguments": {}}', '"name" was missing'),
            ('{"name": "", "arguments": {}}', '"name" was an empty string'),
            ('{"name": 3, "arguments": {}}', '"name" was a number'),
            ('{"name": "add", "arguments": "[1]"}', "decodes to a list"),
            ('{"name": "add", "arguments": "{bad"}', "not valid JSON"),
            ("[1, 2]", "got a number"),
            ('"add"', "got a string"),
        ],
    )
    def test_bad_call_objects(self, payload, problem):
        r = self.p.parse(f"<tool_call>{payload}</tool_call>")
        assert r.tool_calls == ()
        assert r.error is not None and problem in r.error.message

    def test_empty_block(self):
        r = self.p.parse("<tool_call></tool_call>")
        assert r.error is not None and "Empty" in r.error.message

    def test_text_after_json_before_close_is_error(self):
        r = self.p.parse('<tool_call>{"name": "add", "arguments": {}}}</tool_call>')
        assert r.tool_calls == ()
        assert r.error is not None and "Unexpected text" in r.error.message

    def test_fenced_json_inside_tag(self):
        text = '<tool_call>\n```json\n{"name": "add", "arguments": {"a": 1}}\n```\n</tool_call>'
        assert calls(self.p.parse(text)) == [("add", {"a": 1})]

    def test_no_tag_is_respond(self):
        r = self.p.parse("  Just text.  ")
        assert r.is_respond
        assert r.content == "Just text."

    def test_long_snippet_truncated(self):
        r = self.p.parse("<tool_call>{" + "x" * 1000 + "</tool_call>")
        assert r.error is not None
        assert len(r.error.snippet) <= 210


# --------------------------------------------------------------------------------------------
# OpenAI JSON


class TestOpenAI:
    p = OpenAIJSONParser()

    def test_whole_message_with_ids_and_string_arguments(self):
        obj = {
            "content": "Working on it.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
                },
                {"id": "call_2", "function": {"name": "search", "arguments": {"q": 'é"x'}}},
                {"function": {"name": "get_time", "arguments": ""}},
            ],
        }
        r = self.p.parse(json.dumps(obj))
        assert [(c.name, c.arguments, c.id) for c in r.tool_calls] == [
            ("add", {"a": 1, "b": 2}, "call_1"),
            ("search", {"q": 'é"x'}, "call_2"),
            ("get_time", {}, None),
        ]
        assert r.content == "Working on it."
        assert r.error is None

    def test_fenced_with_text_around(self):
        text = (
            "Here you go:\n```json\n"
            '{"tool_calls": [{"id": "c9", "function": {"name": "add", "arguments": {"a": 1}}}]}'
            "\n```\nThanks."
        )
        r = self.p.parse(text)
        assert [(c.name, c.arguments, c.id) for c in r.tool_calls] == [("add", {"a": 1}, "c9")]
        assert r.content == "Here you go:\n\nThanks."

    def test_fenced_without_language(self):
        text = '```\n{"tool_calls": [{"function": {"name": "add", "arguments": {}}}]}\n```'
        assert calls(self.p.parse(text)) == [("add", {})]

    def test_numeric_id_becomes_string(self):
        text = '{"tool_calls": [{"id": 7, "function": {"name": "add", "arguments": {}}}]}'
        assert self.p.parse(text).tool_calls[0].id == "7"

    def test_broken_json_is_error(self):
        r = self.p.parse('{"tool_calls": [{"function": {"name": "add", "arguments": {"a": 1,}}}]}')
        assert r.tool_calls == ()
        assert r.error is not None and r.error.format == "openai"
        assert "Invalid JSON" in r.error.message

    def test_tool_calls_not_a_list(self):
        r = self.p.parse('{"tool_calls": "add"}')
        assert r.error is not None and '"tool_calls" must be a list' in r.error.message

    def test_function_not_an_object(self):
        r = self.p.parse('{"tool_calls": [{"function": "add"}]}')
        assert r.error is not None and '"function" was a string' in r.error.message

    def test_arguments_bad_type(self):
        r = self.p.parse('{"tool_calls": [{"function": {"name": "add", "arguments": 5}}]}')
        assert r.error is not None and '"arguments" was a number' in r.error.message

    def test_empty_tool_calls_is_respond(self):
        r = self.p.parse('{"content": "Hello!", "tool_calls": []}')
        assert r.is_respond
        assert r.content == "Hello!"

    def test_other_json_is_plain_text(self):
        r = self.p.parse('{"answer": 42}')
        assert r.is_respond
        assert r.content == '{"answer": 42}'


# --------------------------------------------------------------------------------------------
# Bare JSON


class TestJSONCall:
    p = JSONCallParser()

    def test_single_object(self):
        r = self.p.parse('{"name": "add", "arguments": {"a": 1, "b": {"c": [1, 2]}}}')
        assert calls(r) == [("add", {"a": 1, "b": {"c": [1, 2]}})]
        assert r.content == ""

    def test_llama_parameters(self):
        r = self.p.parse('{"name": "search", "parameters": {"query": "llama \\"3\\" ☃"}}')
        assert calls(r) == [("search", {"query": 'llama "3" ☃'})]

    def test_python_tag_prefix(self):
        r = self.p.parse('<|python_tag|>{"name": "add", "parameters": {"a": 1}}')
        assert calls(r) == [("add", {"a": 1})]

    def test_list_of_calls(self):
        text = '[{"name": "add", "arguments": {"a": 1}}, {"name": "add", "parameters": {"a": 2}}]'
        assert calls(self.p.parse(text)) == [("add", {"a": 1}), ("add", {"a": 2})]

    def test_fenced_json_with_text_around(self):
        text = (
            'I\'ll search.\n```json\n{"name": "search", "arguments": "{\\"q\\": \\"x\\"}"}\n```\n'
            "Then answer."
        )
        r = self.p.parse(text)
        assert calls(r) == [("search", {"q": "x"})]
        assert r.content == "I'll search.\n\nThen answer."

    def test_plain_fence(self):
        text = 'Call:\n```\n{"name": "add", "arguments": {"a": 1}}\n```'
        r = self.p.parse(text)
        assert calls(r) == [("add", {"a": 1})]
        assert r.content == "Call:"

    def test_several_fences(self):
        text = (
            '```json\n{"name": "add", "arguments": {"a": 1}}\n```\nand\n'
            '```json\n{"name": "add", "arguments": {"a": 2}}\n```'
        )
        r = self.p.parse(text)
        assert calls(r) == [("add", {"a": 1}), ("add", {"a": 2})]
        assert r.content == "and"

    def test_text_after_bare_object_is_content(self):
        r = self.p.parse('{"name": "add", "arguments": {"a": 1}}\nWaiting for the result.')
        assert calls(r) == [("add", {"a": 1})]
        assert r.content == "Waiting for the result."

    def test_json_data_is_not_a_call(self):
        r = self.p.parse('{"name": "Alice", "age": 3}')
        assert r.is_respond

    def test_name_only_call_needs_known_name(self):
        assert self.p.parse('{"name": "get_time"}').is_respond
        r = self.p.parse('{"name": "get_time"}', tool_names=TOOLS)
        assert calls(r) == [("get_time", {})]

    def test_broken_fenced_json_is_error(self):
        r = self.p.parse('```json\n{"name": "add", "arguments": {"a": 1\n```')
        assert r.tool_calls == ()
        assert r.error is not None and r.error.format == "json"
        assert "Invalid JSON" in r.error.message

    def test_bad_arguments_type(self):
        r = self.p.parse('{"name": "add", "arguments": [1, 2]}')
        assert r.error is not None
        assert r.error.message.endswith('"arguments" was a list')

    def test_list_with_non_object_item(self):
        r = self.p.parse('[{"name": "add", "arguments": {}}, 5]')
        assert calls(r) == [("add", {})]
        assert r.error is not None and "got a number" in r.error.message

    def test_openai_style_item_in_list(self):
        text = '[{"id": "x1", "type": "function", "function": {"name": "add", "arguments": {}}}]'
        r = self.p.parse(text)
        assert [(c.name, c.id) for c in r.tool_calls] == [("add", "x1")]


# --------------------------------------------------------------------------------------------
# Python


class TestPython:
    p = PythonCallParser()

    def test_single_call_literal_types(self):
        text = (
            'add(i=1, f=-2.5, s="x\\"y", u="ü✓", t=True, n=None, l=[1, (2, 3)], '
            'd={"k": {"n": [1]}}, tup=(1, "a"))'
        )
        r = self.p.parse(text)
        assert calls(r) == [
            (
                "add",
                {
                    "i": 1,
                    "f": -2.5,
                    "s": 'x"y',
                    "u": "ü✓",
                    "t": True,
                    "n": None,
                    "l": [1, [2, 3]],
                    "d": {"k": {"n": [1]}},
                    "tup": [1, "a"],
                },
            )
        ]
        assert isinstance(r.tool_calls[0].arguments["tup"], list)

    def test_several_lines(self):
        r = self.p.parse('add(a=1, b=2)\nsearch(query="cats")\n')
        assert calls(r) == [("add", {"a": 1, "b": 2}), ("search", {"query": "cats"})]
        assert r.content == ""

    def test_list_of_calls(self):
        r = self.p.parse("[add(a=1), functions.get_time()]")
        assert calls(r) == [("add", {"a": 1}), ("get_time", {})]

    def test_dotted_name(self):
        assert calls(self.p.parse("functions.add(a=1)")) == [("add", {"a": 1})]

    @pytest.mark.parametrize("lang", ["python", "py", ""])
    def test_code_block(self, lang):
        text = f"Let me add.\n```{lang}\nadd(a=1,\n    b=2)\n```\nOK?"
        r = self.p.parse(text)
        assert calls(r) == [("add", {"a": 1, "b": 2})]
        assert r.content == "Let me add.\n\nOK?"

    def test_positional_args_error(self):
        r = self.p.parse("add(1, 2)")
        assert r.tool_calls == ()
        assert r.error is not None and r.error.format == "python"
        assert "keyword arguments" in r.error.message
        assert r.error.snippet == "add(1, 2)"

    def test_non_literal_argument(self):
        r = self.p.parse("add(a=x + 1)")
        assert r.error is not None and "must be a literal" in r.error.message

    @pytest.mark.parametrize("value", ["{1, 2}", "b'x'", "1j", "...", "{1: 2}"])
    def test_non_json_literals_rejected(self, value):
        r = self.p.parse(f"add(a={value})")
        assert r.tool_calls == ()
        assert r.error is not None

    def test_kwargs_and_repeats(self):
        assert "**kwargs" in self.p.parse("add(**d)").error.message
        assert "repeats" in self.p.parse("add(a=1, a=2)").error.message

    def test_prose_is_not_a_call(self):
        for text in ["I think f(x) is nice.", "Paris (France)", "Hello!", "42", "print"]:
            r = self.p.parse(text)
            assert r.is_respond, text
            assert r.content == text

    def test_tool_names_filter_bare_text(self):
        r = self.p.parse("print(x=1)", tool_names=TOOLS)
        assert r.is_respond
        assert r.content == "print(x=1)"
        assert calls(self.p.parse("add(a=1)", tool_names=TOOLS)) == [("add", {"a": 1})]

    def test_tool_names_not_applied_inside_code_block_of_calls(self):
        r = self.p.parse("```python\nunknown_tool(x=1)\n```", tool_names=TOOLS)
        assert calls(r) == [("unknown_tool", {"x": 1})]

    def test_code_block_of_example_calls_is_content_when_no_tool_is_named(self):
        # A usage example after a solution (issue 30): code, not a malformed tool call.
        for text in ["```python\nprint(add2(1, 2))\n```", "```\nsolve([1, 2], k=3)\n```"]:
            r = self.p.parse("Example:\n" + text, tool_names=TOOLS)
            assert r.is_respond and r.content == "Example:\n" + text, text
            assert self.p.parse(text).error is not None  # without tool names: an attempt
        r = self.p.parse("```python\nadd(1, 2)\n```", tool_names=TOOLS)  # a tool: an attempt
        assert r.error is not None and "keyword arguments" in r.error.message

    def test_code_block_with_other_code_is_content(self):
        text = "Example:\n```python\nx = add(a=1)\nprint(x)\n```"
        r = self.p.parse(text)
        assert r.is_respond
        assert r.content == text

    def test_broken_call_of_known_tool_is_error(self):
        r = self.p.parse("add(a=1, b=", tool_names=TOOLS)
        assert r.error is not None and "Invalid Python call syntax" in r.error.message
        assert self.p.parse("add(a=1, b=").is_respond

    def test_compiler_warnings_do_not_leak(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = self.p.parse('add(a="\\d")')
            assert calls(r) == [("add", {"a": "\\d"})]
            assert self.p.parse("add(a=1if 2)").is_respond

    def test_broken_call_in_code_block_is_error(self):
        r = self.p.parse("```python\nadd(a=1, b=\n```")
        assert r.error is not None and r.error.format == "python"


# --------------------------------------------------------------------------------------------
# ReAct


class TestReAct:
    p = ReActParser()

    def test_single_action(self):
        text = 'Thought: I need to add.\nAction: add\nAction Input: {"a": 1, "b": {"c": "é"}}'
        r = self.p.parse(text)
        assert calls(r) == [("add", {"a": 1, "b": {"c": "é"}})]
        assert r.content == "I need to add."
        assert r.error is None

    def test_text_before_action_without_thought_label(self):
        r = self.p.parse("Let me check the time.\nAction: get_time\nAction Input:")
        assert calls(r) == [("get_time", {})]
        assert r.content == "Let me check the time."

    def test_final_answer(self):
        r = self.p.parse("Thought: I know it.\nFinal Answer: The sum is 3.\nIt is small.")
        assert r.is_respond
        assert r.content == "The sum is 3.\nIt is small."

    def test_multiple_actions(self):
        text = (
            "Thought: two things.\n"
            'Action: add\nAction Input: {"a": 1}\n'
            "Observation: 1\n"
            "Thought: now search\n"
            "Action: search\nAction Input: ```json\n"
            '{"q": "x"}\n```\n'
        )
        r = self.p.parse(text)
        assert calls(r) == [("add", {"a": 1}), ("search", {"q": "x"})]
        assert r.content == "two things."

    def test_bare_string_input(self):
        r = self.p.parse("Action: search\nAction Input: weather in Paris")
        assert calls(r) == [("search", {"input": "weather in Paris"})]

    def test_json_string_of_object(self):
        r = self.p.parse('Action: add\nAction Input: "{\\"a\\": 1}"')
        assert calls(r) == [("add", {"a": 1})]

    @pytest.mark.parametrize("value", ["[1, 2]", "42", '"Paris"', "null", "true"])
    def test_non_object_json_is_error(self, value):
        r = self.p.parse(f"Action: add\nAction Input: {value}")
        assert r.tool_calls == ()
        assert r.error is not None and r.error.format == "react"
        assert "JSON object" in r.error.message

    def test_broken_json_input_is_error(self):
        r = self.p.parse('Action: add\nAction Input: {"a": 1,')
        assert r.error is not None and "not valid JSON" in r.error.message

    def test_empty_action_name(self):
        r = self.p.parse("Action:\nAction Input: {}")
        assert r.error is not None and "no tool name" in r.error.message

    def test_no_labels_is_respond(self):
        r = self.p.parse("Thought: hmm\nI am not sure.")
        assert r.is_respond
        assert r.content == "Thought: hmm\nI am not sure."


# --------------------------------------------------------------------------------------------
# Auto


class TestAuto:
    p = AutoParser()

    def test_hermes(self):
        r = self.p.parse('Hi <tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>')
        assert calls(r) == [("add", {"a": 1})]
        assert r.content == "Hi"

    def test_openai(self):
        r = self.p.parse(
            '{"tool_calls": [{"id": "a", "function": {"name": "add", "arguments": {}}}]}'
        )
        assert [(c.name, c.id) for c in r.tool_calls] == [("add", "a")]

    def test_json(self):
        assert calls(self.p.parse('{"name": "add", "parameters": {"a": 1}}')) == [("add", {"a": 1})]
        r = self.p.parse('Sure.\n```json\n[{"name": "add", "arguments": {"a": 1}}]\n```')
        assert calls(r) == [("add", {"a": 1})]
        assert r.content == "Sure."

    def test_react(self):
        r = self.p.parse('Thought: go\nAction: add\nAction Input: {"a": 1}')
        assert calls(r) == [("add", {"a": 1})]
        assert r.content == "go"

    def test_react_final_answer(self):
        r = self.p.parse("Thought: done\nFinal Answer: 3")
        assert r.is_respond and r.content == "3"

    def test_python(self):
        assert calls(self.p.parse("add(a=1)", tool_names=TOOLS)) == [("add", {"a": 1})]
        assert calls(self.p.parse("```python\nadd(a=1)\n```")) == [("add", {"a": 1})]

    def test_plain_text(self):
        r = self.p.parse("  The answer is 3 (three).\n")
        assert r.is_respond
        assert r.content == "The answer is 3 (three)."

    def test_prose_with_call_syntax_stays_content(self):
        r = self.p.parse("I think f(x) is nice.", tool_names=TOOLS)
        assert r.is_respond and r.content == "I think f(x) is nice."

    def test_action_without_input_is_text(self):
        r = self.p.parse("Action: nothing to do here.")
        assert r.is_respond

    def test_empty_string(self):
        r = self.p.parse("")
        assert r == ParseResult(content="")
        assert r.is_respond

    def test_malformed_hermes_attempt(self):
        r = self.p.parse('<tool_call>{"name": "add", "arguments": {"a": 1,}}</tool_call>')
        assert r.tool_calls == ()
        assert r.error is not None and r.error.format == "hermes"

    def test_malformed_fenced_json_attempt(self):
        r = self.p.parse('Calling:\n```json\n{"name": "add", "arguments": {"a": 1,}}\n```')
        assert r.error is not None and r.error.format == "json"

    def test_malformed_openai_attempt(self):
        r = self.p.parse('{"tool_calls": [{"function": {"name": "add"}}')
        assert r.error is not None and r.error.format == "openai"

    def test_malformed_react_attempt(self):
        r = self.p.parse("Action: add\nAction Input: {a: 1}")
        assert r.error is not None and r.error.format == "react"

    def test_python_positional_attempt(self):
        r = self.p.parse("add(1, 2)", tool_names=TOOLS)
        assert r.error is not None and r.error.format == "python"

    def test_hermes_wins_over_embedded_json(self):
        text = '<tool_call>{"tool_calls": 1, "name": "add", "arguments": {}}</tool_call>'
        r = self.p.parse(text)
        assert calls(r) == [("add", {})]

    def test_openai_wins_over_json(self):
        text = '{"name": "x", "arguments": {}, "tool_calls": [{"function": {"name": "add"}}]}'
        assert calls(self.p.parse(text)) == [("add", {})]

    def test_json_data_message_is_text(self):
        r = self.p.parse('{"result": [1, 2, 3]}')
        assert r.is_respond and r.content == '{"result": [1, 2, 3]}'

    def test_python_list_with_name_key_is_python(self):
        r = self.p.parse('[add(a={"name": 1})]', tool_names=TOOLS)
        assert calls(r) == [("add", {"a": {"name": 1}})]


# --------------------------------------------------------------------------------------------
# Types, registry and get_parser


def test_results_are_immutable():
    r = AutoParser().parse("add(a=1)")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.content = "x"  # type: ignore[misc]
    assert isinstance(r.tool_calls, tuple)
    assert type(r.tool_calls[0].arguments) is dict


def test_registry_names():
    assert available_parsers() == sorted(["auto", "hermes", "openai", "json", "python", "react"])
    for name, cls in PARSERS.items():
        parser = get_parser(name)
        assert isinstance(parser, cls)
        assert parser.name == name
        assert isinstance(parser, ToolCallParser)


def test_get_parser_default_and_case():
    assert isinstance(get_parser(), AutoParser)
    assert isinstance(get_parser(" Hermes "), HermesParser)


def test_get_parser_passes_objects_through():
    class Custom:
        name = "custom"

        def parse(self, text, tool_names=None):
            return ParseResult(content=text, tool_calls=(ToolCall("x"),))

    custom = Custom()
    assert get_parser(custom) is custom
    parser = HermesParser()
    assert get_parser(parser) is parser
    assert isinstance(get_parser(JSONCallParser), JSONCallParser)


def test_get_parser_unknown_name():
    with pytest.raises(EnvConfigError) as info:
        get_parser("hermess")
    message = str(info.value)
    assert "hermess" in message
    assert "Did you mean 'hermes'?" in message
    for name in available_parsers():
        assert name in message


def test_get_parser_rejects_other_objects():
    with pytest.raises(EnvConfigError):
        get_parser(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(PARSERS))
@pytest.mark.parametrize("text", ["", "   ", "Hello there.", "\x00", "```", "<tool_call>"])
def test_every_parser_handles_trivial_input(name, text):
    r = get_parser(name).parse(text)
    assert isinstance(r, ParseResult)
    if "<tool_call>" not in text and "```" not in text:
        assert r.is_respond
        assert r.content == text.strip()
