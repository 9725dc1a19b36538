"""Values every env of a process shares are built once, however many threads ask at once."""

import copy
import threading

from tool_envs.calculator import tasks as calculator_tasks
from tool_envs.core import env as core_env

WAIT = 60.0  # seconds a thread may take before the test calls it stuck


def at_once(count: int, call) -> list:
    """``call()`` on ``count`` threads released together: what each returned."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(index: int) -> None:
        barrier.wait()
        results[index] = call()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=WAIT)
    return results


def test_concurrent_first_builds_of_a_task_set_build_it_once():
    """Eight envs' first resets at once share one build (``functools.lru_cache`` let each
    thread build and keep its own set, ~57 ms of CPU each under the GIL)."""
    calculator_tasks.default_splits.cache_clear()
    built = at_once(8, calculator_tasks.default_splits)
    assert len({id(splits) for splits in built}) == 1


def test_concurrent_first_validations_of_a_task_set_validate_it_once():
    rows = copy.deepcopy(calculator_tasks.default_splits()["train"])  # a list not seen yet
    validated = at_once(8, lambda: core_env._validated_default_tasks(rows))
    assert len({id(kept[0]) for kept in validated}) == 1  # the same validated rows, shared
    assert len(validated[0]) == len(rows)
