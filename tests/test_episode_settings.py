"""The one settings object of playing episodes (RolloutConfig), its one env_servers / env_kwargs
check, and the one env pool, as the recipes, the engines and ``tool-envs eval`` all use them."""

import dataclasses

import gymnasium as gym
import pytest

import tool_envs
from tool_envs.errors import EvalError
from tool_envs.eval.runner import EvalConfig, env_settings
from tool_envs.rollout.config import RolloutConfig
from tool_envs.rollout.env_pool import EnvPool
from tool_envs.serve.pool import EnvServerPool, check_env_servers

gym.register_envs(tool_envs)
CALCULATOR = "tool_envs/Calculator-v0"
PREFIXED = f"tool_envs:{CALCULATOR}"
RETAIL = "tool_envs/TauRetail-v0"


def test_every_setting_has_help_the_options_reuse():
    for f in dataclasses.fields(RolloutConfig):
        assert RolloutConfig.help(f.name) == f.metadata["help"] != ""


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"env_kwargs": {CALCULATOR: 5}}, r"RolloutConfig.env_kwargs .*'tool_envs/Calc.*int"),
        ({"env_servers": {CALCULATOR: ""}}, r"RolloutConfig.env_servers\['tool_envs/Calc"),
        ({"env_servers": {CALCULATOR: []}}, "non-empty list"),
        ({"max_turns": 0}, "RolloutConfig.max_turns must be >= 1"),
        ({"step_timeout": 0}, "RolloutConfig.step_timeout"),
        ({"max_void_fraction": 2}, "RolloutConfig.max_void_fraction"),
        ({"ray_env_servers": {CALCULATOR: 0}}, "servers must be >= 1"),
        ({"ray_env_servers": {CALCULATOR: {"replicas": 2}}}, "server count or an object"),
        (
            {"env_servers": {PREFIXED: "http://127.0.0.1:1"}, "ray_env_servers": {CALCULATOR: 1}},
            "serve each env one way",
        ),
    ],
)
def test_a_bad_setting_is_named(settings, named):
    with pytest.raises(ValueError, match=named):
        RolloutConfig(**settings)


def test_replace_checks_names_and_values_again():
    config = RolloutConfig()
    assert config.replace(max_turns=3).max_turns == 3
    with pytest.raises(TypeError, match=r"no fields \['max_turn'\]"):
        config.replace(max_turn=3)
    with pytest.raises(ValueError, match="max_turns"):
        config.replace(max_turns=-1)


def test_a_served_env_given_kwargs_is_refused_whichever_way_its_id_is_written():
    url = "http://127.0.0.1:1"
    for served, given in ((PREFIXED, CALCULATOR), (CALCULATOR, PREFIXED)):
        with pytest.raises(ValueError, match="tool-envs serve"):
            check_env_servers({served: url}, {given: {"parser": "hermes"}})
        config = EvalConfig(
            envs=[CALCULATOR], out="x", agent="gold", env_servers={served: url},
            env_kwargs={given: {}},
        )  # fmt: skip
        with pytest.raises(EvalError, match=r"served \(--env-servers\)"):
            config.validate()
    check_env_servers({CALCULATOR: EnvServerPool(url)}, {})  # a shared pool is a value too


def test_eval_refuses_what_the_engines_refuse():
    empty = EvalConfig(envs=[CALCULATOR], out="x", agent="gold", env_servers={CALCULATOR: [""]})
    with pytest.raises(EvalError, match=r"--env-servers\['tool_envs/Calculator-v0'\]"):
        empty.validate()
    shape = EvalConfig(envs=[CALCULATOR], out="x", agent="gold", env_kwargs={CALCULATOR: 1})
    with pytest.raises(EvalError, match="--env-kwargs maps env ids to objects"):
        shape.validate()


def test_eval_plays_envs_from_the_engines_pool_with_max_turns_winning():
    config = EvalConfig(
        envs=[CALCULATOR, RETAIL], out="x", agent="gold", user="scripted", parser="hermes",
        max_turns=2, env_kwargs={CALCULATOR: {"max_episode_steps": 7}},
    )  # fmt: skip
    settings = env_settings(config, [CALCULATOR, RETAIL])
    assert settings.max_turns == 2
    assert settings.env_kwargs[CALCULATOR] == {"max_episode_steps": 7, "parser": "hermes"}
    assert settings.env_kwargs[RETAIL]["user"] == "scripted"
    assert "user" not in settings.env_kwargs[CALCULATOR]  # the calculator has no user
    pool = EnvPool(settings)
    try:
        env = pool.acquire(CALCULATOR)
        assert env.spec.max_episode_steps == 2  # --max-turns over env_kwargs' own limit
        pool.release(CALCULATOR, env)
        assert pool.acquire(CALCULATOR) is env  # reused, not made again
    finally:
        pool.close()


def test_the_recipes_build_the_whole_config_once_and_name_a_bad_field():
    from tool_envs.errors import EnvConfigError
    from tool_envs.integrations.trl.recipes import EpisodeArguments

    arguments = EpisodeArguments(max_turns=3, max_void_fraction=0.25, env_kwargs='{"a": {}}')
    config = arguments.rollout_config(512, chat_template="{{ x }}")
    assert (config.max_completion_length, config.max_turns) == (512, 3)
    assert (config.max_void_fraction, config.chat_template) == (0.25, "{{ x }}")
    assert config.env_kwargs == {"a": {}}
    with pytest.raises(EnvConfigError, match=r"RolloutConfig\.max_void_fraction"):
        EpisodeArguments(max_void_fraction=1.5).rollout_config(512)
    options = {f.name: f.metadata["help"] for f in dataclasses.fields(EpisodeArguments)}
    assert options["step_timeout"] == RolloutConfig.help("step_timeout")
    assert options["env_servers"].endswith(RolloutConfig.help("env_servers"))
    assert options["ray_env_servers"] == "JSON: " + RolloutConfig.help("ray_env_servers")
    ray = EpisodeArguments(ray_env_servers=f'{{"{CALCULATOR}": {{"servers": 2}}}}')
    assert ray.rollout_config(512).ray_env_servers == {CALCULATOR: {"servers": 2}}


def test_ray_env_servers_are_played_only_once_started():
    from tool_envs.errors import EnvConfigError
    from tool_envs.rollout.config import ray_servers_started

    config = RolloutConfig(ray_env_servers={CALCULATOR: 1})
    with pytest.raises(EnvConfigError, match=r"ray_env_servers \['tool_envs/Calc.*not started"):
        EnvPool(config)
    plain = RolloutConfig(max_turns=2)
    with ray_servers_started(plain) as started:
        assert started is plain  # nothing to start: nothing imported, nothing changed


def test_eval_reads_ray_env_servers_as_the_recipes_do():
    both = EvalConfig(
        envs=[CALCULATOR], out="x", agent="gold", env_servers={CALCULATOR: "http://127.0.0.1:1"},
        ray_env_servers={PREFIXED: 1},
    )  # fmt: skip
    with pytest.raises(EvalError, match="serve each env one way"):
        both.validate()
    zero = EvalConfig(envs=[CALCULATOR], out="x", agent="gold", ray_env_servers={CALCULATOR: 0})
    with pytest.raises(EvalError, match="servers must be >= 1"):
        zero.validate()


def test_the_eval_command_describes_its_env_options_with_the_fields_help():
    import argparse

    from tool_envs.commands import eval as eval_command

    parser = eval_command.add_parser(argparse.ArgumentParser().add_subparsers())
    helps = {a.dest: a.help for a in parser._actions}
    for name in ("env_kwargs", "env_servers", "ray_env_servers", "max_turns"):
        assert helps[name] == RolloutConfig.help(name)


def test_make_rollout_func_merges_settings_through_the_config():
    from tool_envs.integrations.trl import make_rollout_func

    func = make_rollout_func(RolloutConfig(max_turns=2), max_tokens_per_turn=16)
    assert func.state == {}
    with pytest.raises(TypeError, match="the trainer's caps"):
        make_rollout_func(max_completion_length=10)
    with pytest.raises(TypeError, match=r"no fields \['max_turn'\]"):
        make_rollout_func(max_turn=2)
