"""The chat-message observation space and the assistant-turn action space."""

import pytest

from tool_envs.core.spaces import AssistantTurn, ChatMessages


def test_chat_messages_accepts_ordinary_conversation():
    space = ChatMessages()
    conversation = [
        {"role": "system", "content": "Règles: soyez poli 😀"},
        {"role": "user", "content": "What is 2 + 2?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": {"a": 2}}}
            ],
        },
        {"role": "tool", "content": "4", "tool_call_id": "c1", "name": "add"},
        {"role": "assistant", "content": None, "tool_calls": []},
    ]
    assert conversation in space
    assert [] in space


@pytest.mark.parametrize(
    "bad",
    [
        "text",
        [{"role": "robot", "content": "x"}],
        [{"role": "user", "content": 3}],
        [{"role": "user", "content": None}],
        [{"role": "user", "content": "x", "tool_calls": []}],
        [{"role": "assistant", "content": "x", "tool_calls": [{"function": {"name": 1}}]}],
        [{"role": "tool", "content": "x", "tool_call_id": 7}],
    ],
)
def test_chat_messages_rejects_malformed(bad):
    assert bad not in ChatMessages()


def test_samples_are_members_and_seeded():
    a, b = ChatMessages(seed=3), ChatMessages(seed=3)
    for _ in range(20):
        sample = a.sample()
        assert sample in a
        assert sample == b.sample()
    turn = AssistantTurn(seed=1)
    assert all(turn.sample() in turn for _ in range(20))


def test_assistant_turn_accepts_text_and_assistant_messages_only():
    space = AssistantTurn()
    assert "any text at all \x00 ☃" in space
    assert {"role": "assistant", "content": "hi"} in space
    assert {"role": "user", "content": "hi"} not in space
    assert 42 not in space


def test_masks_are_refused():
    with pytest.raises(ValueError, match="masks"):
        AssistantTurn().sample(mask=1)
