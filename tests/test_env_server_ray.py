"""Env servers on a real Ray cluster (two "nodes" on 127.0.0.1, one module-wide): placement by
resources, an actor killed mid-batch, the CLI under a signal, and the GRPO recipe with
``ray_env_servers``. Nothing Ray started may outlive the module."""

import os
import signal
import socket
import subprocess
import sys

import pytest

# Ray puts its own processes on this machine's address unless told it is a one-machine setup;
# the tests keep everything on 127.0.0.1 (read when ray is imported, so set before).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray", reason="the ray extra is not installed")
pytest.importorskip("uvicorn", reason="the serve extra (uvicorn) is not installed")

import gymnasium as gym  # noqa: E402
from rollout_helpers import tiny_tokenizer_and_model  # noqa: E402
from serve_helpers import ROOT, child_pids, wait_for  # noqa: E402
from test_async_engine import family_tasks  # noqa: E402
from test_env_server_faults import TriggerBackend  # noqa: E402

import tool_envs  # noqa: E402
from tool_envs.errors import EnvConfigError  # noqa: E402
from tool_envs.rollout import RolloutConfig, RolloutEngine  # noqa: E402
from tool_envs.serve import RemoteEnv  # noqa: E402
from tool_envs.serve.cluster import (  # noqa: E402
    EnvServerLostError,
    RayEnvServers,
    RayVersionError,
    ServerSpec,
    check_ray_version,
    cluster_ray_version,
)
from tool_envs.serve.pool import is_healthy  # noqa: E402

gym.register_envs(tool_envs)
CALCULATOR = "tool_envs/Calculator-v0"
CODE = "tool_envs/CodeExec-v0"
SMALL_STORE = 80 * 2**20  # Ray's object store carries nothing here (env steps go over ws)


@pytest.fixture(scope="module")
def cluster():
    """A head (2 CPUs) and a "sandbox" node (1 CPU, resource sandbox=2), both on 127.0.0.1."""
    from ray.cluster_utils import Cluster

    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), path]))  # for workers
    node = {"include_dashboard": False, "object_store_memory": SMALL_STORE}
    before = set(child_pids(os.getpid()))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, **node})
    try:
        sandbox_node = cluster.add_node(num_cpus=1, resources={"sandbox": 2}, **node)
        ray.init(address=cluster.address, log_to_driver=False, logging_level="warning")
        cluster.sandbox_node_id = sandbox_node.node_id
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        if path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = path
    assert wait_for(lambda: set(child_pids(os.getpid())) <= before, timeout=30)


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer_and_model()[0]


def infos(servers):
    return ray.get([actor.info.remote() for actor in servers.actors()])


def test_the_version_check_reads_the_cluster_and_names_both_versions(cluster):
    version = cluster_ray_version(cluster.address)
    assert version == ray.__version__
    check_ray_version(version)  # the real cluster's own: passes
    with pytest.raises(RayVersionError) as raised:
        check_ray_version("2.59.0", installed=version, address=cluster.address)
    message = str(raised.value)
    assert "Ray 2.59.0" in message and f"Ray {version}" in message
    assert cluster.address in message and "ray==2.59.0" in message


def test_servers_land_where_their_resources_are_and_play_episodes(cluster):
    """Sandbox servers ask for the "sandbox" resource: only the second node has it. Plain
    servers spread over the nodes. A resource no node has is refused at once."""
    specs = [
        ServerSpec(CODE, servers=1, num_cpus=0, resources={"sandbox": 1}),
        ServerSpec(CALCULATOR, servers=2, num_cpus=1),
    ]
    with RayEnvServers(specs) as servers:
        placed = infos(servers)
        code, calculator = placed[:1], placed[1:]
        assert {i["node_id"] for i in code} == {cluster.sandbox_node_id}
        assert len({i["node_id"] for i in calculator}) == 2  # one on each node
        assert servers.urls == {
            CODE: [i["url"] for i in code],
            CALCULATOR: [i["url"] for i in calculator],
        }
        urls = [url for listed in servers.urls.values() for url in listed]
        assert all(url.startswith("http://127.0.0.1:") for url in urls)
        # Not at the niceness 15 of Ray's workers, where a busy node starved them past the
        # WebSocket keepalive (the other worker of `make test` was enough).
        assert [os.getpriority(os.PRIO_PROCESS, i["pid"]) for i in placed] == [0, 0, 0]
        tasks, scripts = family_tasks(CODE, 1)
        remote = RemoteEnv(servers.urls[CODE])
        try:
            remote.reset(options={"task": tasks[0]})
            for turn in scripts[0]:
                *_, info = remote.step(turn)
            assert info["reward_info"]["outcome"] == "success"
        finally:
            remote.close()
        actors = servers.actors()
    assert not any(is_healthy(url) for url in urls)  # stopped: nothing listens
    for actor in actors:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.info.remote(), timeout=30)
    with pytest.raises(EnvConfigError, match="'gpu_box': 1"):
        RayEnvServers([ServerSpec(CALCULATOR, resources={"gpu_box": 1})]).start()


def test_an_actor_killed_mid_batch_voids_its_episodes_and_comes_back(cluster, tokenizer):
    """Killed mid-batch: its episodes void, the batch finishes, Ray restarts it at its address
    and the pool readmits it; restarted at a new address, the pool follows; past
    ``max_restarts``, a clear error."""
    tasks, scripts = family_tasks(CALCULATOR, 4)
    spec = ServerSpec(CALCULATOR, servers=2, num_cpus=0, max_restarts=2)
    with RayEnvServers([spec]) as servers:
        victim = servers.actors()[0]
        victim_url = servers.urls[CALCULATOR][0]
        victim_pid = ray.get(victim.info.remote())["pid"]
        config = RolloutConfig(
            max_completion_length=4096, env_servers=servers.pools(),
            max_void_fraction=1.0, step_timeout=20,
        )  # fmt: skip

        def kill():
            ray.kill(victim, no_restart=False)  # a crash: Ray may restart it
            assert wait_for(lambda: not os.path.exists(f"/proc/{victim_pid}"), timeout=30)

        backend = TriggerBackend(tokenizer, tasks, scripts, 2, kill)
        with RolloutEngine(tokenizer, backend, config=config) as engine:
            first = engine.run(tasks, seeds=[0, 1, 2, 3])
            void = [r for r in first if r.void]
            assert 1 <= len(void) <= 2 and sum(r.success for r in first) >= 2
            assert {r.reward_info["void_cause"] for r in void} == {"env_server"}
            assert all(victim_url in r.reward_info["reason"] for r in void)
            # Ray restarts it at the same address; the watcher says so.
            assert wait_for(lambda: bool(servers.check()), timeout=120, every=0.5)
            assert servers.urls[CALCULATOR][0] == victim_url and is_healthy(victim_url)
            # The engine's pool readmits it once /health answers (recheck now, not in 5 s).
            engine.pool._servers[CALCULATOR].recheck_after = 0
            backend.fired, backend.calls = True, 0
            second = engine.run(tasks, seeds=[0, 1, 2, 3])
            assert all(r.success for r in second)
            assert ray.get(victim.info.remote())["active_sessions"] >= 1
            # Restarted where its port is taken (as on another node): a new address, which
            # check() reports and records in servers.moves, and the engine's pool (one of
            # servers.pools()) follows.
            pid = ray.get(victim.info.remote())["pid"]
            ray.kill(victim, no_restart=False)
            assert wait_for(lambda: not os.path.exists(f"/proc/{pid}"), timeout=30)
            changes = []
            port = int(victim_url.rsplit(":", 1)[1])
            with socket.create_server(("127.0.0.1", port)):
                assert wait_for(
                    lambda: changes.extend(servers.check()) or bool(changes), timeout=120, every=0.5
                )
            moved_url = servers.urls[CALCULATOR][0]
            assert changes == [f"{CALCULATOR} server 0 restarted at {moved_url} (was {victim_url})"]
            third = engine.run(tasks, seeds=[0, 1, 2, 3])
            assert all(r.success for r in third)
            assert moved_url in engine.pool._servers[CALCULATOR].urls
            assert ray.get(victim.info.remote())["active_sessions"] >= 1
        # Killed once more: past max_restarts, a clear error names the server.
        ray.kill(victim, no_restart=False)
        with pytest.raises(EnvServerLostError, match=f"server 0 of {CALCULATOR}"):
            wait_for(lambda: bool(servers.check()) and False, timeout=60, every=0.5)


def test_the_cli_serves_on_ray_until_sigterm_and_leaves_nothing(tmp_path):
    """No RAY_ADDRESS: the CLI starts a local cluster, and stops it with its servers."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "tool_envs.cli", "serve", CALCULATOR, "--ray", "2"]
    command += ["--num-cpus", "0.5"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT
    ) as process:
        try:
            lines = []
            while not lines or "servers on Ray" not in lines[-1]:
                line = process.stdout.readline()
                assert line, "".join(lines)
                lines.append(line)
            urls = [line.split(" on ", 1)[1].split()[0] for line in lines if "serving" in line]
            assert len(urls) == 2 and "the local Ray cluster" in lines[-1]
            remote = RemoteEnv(urls)
            remote.reset(seed=0)
            remote.close()
            started = child_pids(process.pid)
            assert started  # the local cluster's processes
        finally:
            process.send_signal(signal.SIGTERM)
            rest = process.communicate(timeout=120)[0]
        assert process.returncode == 0, "".join(lines) + rest
    assert "stopped" in rest
    assert not any(is_healthy(url) for url in urls)
    assert wait_for(lambda: not any(os.path.exists(f"/proc/{p}") for p in started), timeout=30)


def test_the_grpo_recipe_with_ray_env_servers_trains_as_in_process(cluster, tmp_path, monkeypatch):
    """The CPU recipe (its config, two GRPO steps of a tiny model, the same seeds):
    ``ray_env_servers`` starts servers on the cluster, the rollouts (tokens, logprobs, masks,
    rewards) are those of in-process envs, and every actor is gone when the recipe returns.
    (Sampled at the config's temperature, seeded by the trainer: TRL's loss divides by the
    temperature, so 0 cannot run; a seeded sample is as reproducible as greedy here.)"""
    pytest.importorskip("trl", reason="the recipes need the 'train' extra (trl)")
    from recipe_helpers import REPO, load_recipe
    from test_trl_integration import recording
    from trl import GRPOConfig, ModelConfig, TrlParser

    import tool_envs.integrations.trl as trl_integration
    from tool_envs.calculator.task_set import write_task_set
    from tool_envs.tiny_models import build_tiny_model_for_env

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tasks = write_task_set(tmp_path / "tasks", {"train": 16}, difficulty=1)
    model = build_tiny_model_for_env(CALCULATOR, tmp_path / "tiny", num_layers=2, hidden_size=64)
    recipe = load_recipe("train_grpo")
    calls, made = [], []
    make = trl_integration.make_rollout_func

    def make_and_record(*config, **settings):
        made.append(make(*config, **settings))
        return recording(made[-1], calls)

    monkeypatch.setattr(trl_integration, "make_rollout_func", make_and_record)
    stop, held = RayEnvServers.stop, []

    def stop_and_record(self):
        held.append((self.actors(), [url for urls in self.urls.values() for url in urls]))
        stop(self)

    monkeypatch.setattr(RayEnvServers, "stop", stop_and_record)

    def train(out, *options):
        parser = TrlParser((recipe.EnvArguments, GRPOConfig, ModelConfig))
        env_args, training_args, model_args = parser.parse_args_and_config(
            [
                "--config", str(REPO / "recipes/configs/calculator_cpu_grpo.yaml"),
                "--tasks", str(tasks), "--model_name_or_path", str(model),
                "--output_dir", str(tmp_path / out), "--max_steps", "2",
                "--per_device_train_batch_size", "4", "--num_generations", "2",
                "--max_completion_length", "96", "--max_tokens_per_turn", "24", *options,
            ]
        )  # fmt: skip
        env_args.heldout_split = None  # the config scores held-out tasks; not under test here
        recipe.main(env_args, training_args, model_args)
        batches = [output for _, _, output in calls]
        calls.clear()
        return batches

    local = train("local")
    served = train("ray", "--ray_env_servers", '{"tool_envs/Calculator-v0": 1}')
    assert len(local) == len(served) == 2
    for a, b in zip(local, served, strict=True):
        assert a == b
    assert [CALCULATOR in f.state["engine"].pool._servers for f in made] == [False, True]
    [(actors, urls)] = [(a, u) for a, u in held if a]  # the run's servers, as it stopped them
    assert len(actors) == len(urls) == 1
    assert not is_healthy(urls[0])
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(actors[0].info.remote(), timeout=30)


def test_ray_env_servers_specs_are_checked_before_anything_starts():
    from tool_envs.integrations.trl.recipes import EpisodeArguments
    from tool_envs.serve.cluster import parse_server_specs

    assert parse_server_specs(
        {CALCULATOR: 2, CODE: {"servers": 3, "resources": {"sandbox": 1}}}
    ) == [
        ServerSpec(CALCULATOR, servers=2),
        ServerSpec(CODE, servers=3, resources={"sandbox": 1}),
    ]
    with pytest.raises(EnvConfigError, match="server count or an object with keys"):
        parse_server_specs({CALCULATOR: {"replicas": 2}})
    with pytest.raises(EnvConfigError, match="servers must be >= 1"):
        parse_server_specs({CALCULATOR: 0})
    both = EpisodeArguments(
        env_servers=f'{{"{CALCULATOR}": "http://127.0.0.1:1"}}',
        ray_env_servers=f'{{"{CALCULATOR}": 1}}',
    )
    with pytest.raises(EnvConfigError, match="serve each env one way"):
        both.rollout_config(512)


def test_the_cli_on_a_cluster_without_the_resource_fails_naming_it(cluster):
    env = {**os.environ, "RAY_ADDRESS": cluster.address, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tool_envs.cli", "serve", CALCULATOR, "--ray", "1"]
    command += ["--resources", '{"gpu_box": 1}']
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=180)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "tool-envs serve: error: no node of the Ray cluster" in result.stderr
    assert "'gpu_box': 1" in result.stderr
