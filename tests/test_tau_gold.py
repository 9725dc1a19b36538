"""The gold conversation of every tau domain is one an agent could have had (tool_envs.tau.gold).

SFT learns from gold episodes, so a gold call may only use what the agent was told: a value the
user knows reaches a tool call only after the user (or a tool) said it. Each change comes right
after the user's yes, and the user speaks between the agent's turns, as in the episodes GRPO
plays.
"""

from __future__ import annotations

import json
from collections import defaultdict

import gymnasium as gym
import pytest
from json_helpers import string_leaves

import tool_envs
from tool_envs.tau.gold import ASK_PREFIX, CONFIRM_SUFFIX
from tool_envs.tau.task import parse_scenario
from tool_envs.tau.tools import write_tool_names
from tool_envs.tau.users.scripted import IDENTITY_FIELDS

gym.register_envs(tool_envs)

DOMAINS = ["TauRetail-v0", "TauAirline-v0", "TauTelecom-v0", "TauHealthcare-v0", "TauDoordash-v0"]


_TRANSCRIPTS: dict[tuple[str, str], list[dict]] = {}


def gold_transcript(env, task) -> list[dict]:
    """The messages of the task's gold episode, which must solve it (played once per task: two
    tests read them)."""
    key = (env.domain.name, task["extra_info"]["id"])
    if key not in _TRANSCRIPTS:
        _TRANSCRIPTS[key] = _play_gold(env, task)
    return _TRANSCRIPTS[key]


def _play_gold(env, task) -> list[dict]:
    env.reset(options={"task": task})
    for turn in env.gold_turns(task):
        _, reward, terminated, truncated, _ = env.step(turn)
    assert terminated and not truncated and reward == 1.0, task["extra_info"]["id"]
    return env.messages


@pytest.fixture(scope="module", params=DOMAINS)
def domain_env(request):
    env = gym.make(f"tool_envs/{request.param}").unwrapped
    yield env, env.task_splits()["test"]
    env.close()


def test_gold_calls_use_only_what_the_user_or_a_tool_said(domain_env):
    env, tasks = domain_env
    checked = 0
    for task in tasks:
        known = set(string_leaves(parse_scenario(task["extra_info"]).known_info))
        said = ""
        for message in gold_transcript(env, task):
            for tool_call in message.get("tool_calls") or []:
                arguments = tool_call["function"]["arguments"]
                if isinstance(arguments, str):
                    arguments = json.loads(arguments)
                for value in set(string_leaves(arguments)) & known:
                    assert value in said, (task["extra_info"]["id"], tool_call["function"])
                    checked += 1
            said += f"{message.get('content') or ''}\n"
    assert checked > len(tasks)  # identities at least: the check is not vacuous


def test_the_first_question_does_not_depend_on_which_identity_the_user_knows(domain_env):
    """Users of one category who know different identities (an email, or a name and zip code)
    open alike, so the gold must ask them alike; a question naming the hidden identity would
    teach a policy to guess (13 of 40 retail SFT checks departed from the gold there)."""
    env, _ = domain_env
    asked: dict[tuple, set[str]] = defaultdict(set)
    identities: dict[tuple, set[tuple]] = defaultdict(set)
    for tasks in env.task_splits().values():
        for task in tasks:
            known = parse_scenario(task["extra_info"]).known_info
            turns = env.gold_turns(task)
            if not turns or not turns[0].startswith(ASK_PREFIX):
                continue
            key = (task["extra_info"]["category"], *(f for f in known if f not in IDENTITY_FIELDS))
            asked[key].add(turns[0])
            identities[key].add(tuple(f for f in known if f in IDENTITY_FIELDS))
    if env.domain.name != "airline":  # airline's users always give their user id
        assert any(len(kinds) > 1 for kinds in identities.values())  # not vacuous
    for key, questions in asked.items():
        assert len(questions) == 1, (key, sorted(questions))


def test_each_change_follows_the_users_yes_and_the_user_speaks_between_turns(domain_env):
    env, tasks = domain_env
    writes = set(write_tool_names(env.domain.tools))
    multi_turn = 0
    for task in tasks:
        scenario = parse_scenario(task["extra_info"])
        messages = gold_transcript(env, task)[1:]  # after the system prompt
        if scenario.known_info:
            assert messages[1]["role"] == "assistant"
            assert messages[1]["content"].startswith(ASK_PREFIX)
            assert messages[2]["role"] == "user"
        for at, message in enumerate(messages):
            names = [c["function"]["name"] for c in message.get("tool_calls") or []]
            if writes & set(names) and scenario.confirm:
                ask, answer = messages[at - 2], messages[at - 1]
                assert ask["content"].endswith(CONFIRM_SUFFIX), task["extra_info"]["id"]
                assert answer == {"role": "user", "content": "Yes, please go ahead."}
        roles = [m["role"] for m in messages]
        policy_turns = roles.count("assistant")
        first, last = roles.index("assistant"), len(roles) - 1 - roles[::-1].index("assistant")
        if policy_turns >= 3 and "user" in roles[first:last]:
            multi_turn += 1
    assert multi_turn >= 0.9 * len(tasks)


def test_episode_masks_cover_the_policys_turns_and_never_the_users(tmp_path):
    """The tokens GRPO and SFT train on are the agent's turns: over user replies and tool
    results between them the mask is 0, so a multi-turn tau episode teaches no user lines."""
    from tool_envs.rollout.engine import RolloutConfig, RolloutEngine
    from tool_envs.rollout.sft import gold_scripts
    from tool_envs.tiny_models import build_tokenizer, env_texts

    tokenizer = build_tokenizer(env_texts("tool_envs/TauRetail-v0", limit=100))
    tasks = gym.make("tool_envs/TauRetail-v0").unwrapped.task_splits()["test"][:12]
    scripts = gold_scripts(tasks)
    config = RolloutConfig(max_completion_length=16384, max_tokens_per_turn=4096)
    with RolloutEngine(tokenizer, None, config=config) as engine:
        rollouts = engine.run(tasks, scripts=scripts)
    for rollout, turns in zip(rollouts, scripts, strict=True):
        assert rollout.success
        runs: list[tuple[int, list[int]]] = []  # (mask, tokens) of each stretch
        for token, mask in zip(rollout.completion_ids, rollout.env_mask, strict=True):
            if runs and runs[-1][0] == mask:
                runs[-1][1].append(token)
            else:
                runs.append((mask, [token]))
        policy = [tokenizer.decode(ids) for mask, ids in runs if mask == 1]
        others = "".join(tokenizer.decode(ids) for mask, ids in runs if mask == 0)
        assert [text.removesuffix("<|im_end|>").strip() for text in policy] == turns
        # The user's replies between the agent's turns (the goodbye ends the episode: untokenized)
        users = [m["content"] for m in rollout.messages[2:-1] if m["role"] == "user"]
        assert users  # the answer to the first question at least
        for line in users:
            assert line in others and not any(line in text for text in policy)


def test_gold_rows_played_in_processes_are_the_rows_played_in_one():
    from tool_envs.rollout import RolloutConfig, gold_sft_rows
    from tool_envs.rollout.sft import gold_sft_rows_in_processes
    from tool_envs.tau.domains.retail.tasks import default_splits
    from tool_envs.tiny_models import build_tokenizer, env_texts

    tokenizer = build_tokenizer(env_texts("tool_envs/TauRetail-v0", limit=100))
    tasks = default_splits()["train"][:9]
    config = RolloutConfig(max_completion_length=8192, max_tokens_per_turn=4096)
    serial = gold_sft_rows(tokenizer, tasks, config)
    parallel = gold_sft_rows_in_processes(tokenizer, tasks, config, workers=2, min_per_worker=1)
    assert parallel == serial
    with pytest.raises(ValueError, match="workers must be at least 1, got 0"):
        gold_sft_rows_in_processes(tokenizer, tasks, config, workers=0)
