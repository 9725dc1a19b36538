"""benchmarks/async_rollout.py's own machinery (no vLLM): what its run does on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "async_rollout.py"

# Loads the benchmark as a module and waits inside the block main() runs in; its cleanup sends
# itself a second SIGTERM (a second `timeout`, an impatient scheduler) before it reports.
RUN = """
import importlib.util, os, signal, sys, time
from contextlib import ExitStack
spec = importlib.util.spec_from_file_location("async_rollout", sys.argv[1])
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

def cleanup():
    os.kill(os.getpid(), signal.SIGTERM)
    print("cleaned up", flush=True)

with bench.sigterm_unwinds(), ExitStack() as stack:
    stack.callback(cleanup)
    print("ready", flush=True)
    time.sleep(600)
"""


def test_sigterm_unwinds_the_benchmarks_cleanup_once():
    """``timeout`` stops the benchmark with SIGTERM: its ExitStack (which owns the vLLM server)
    must still close, and a second SIGTERM must not cut that short."""
    process = subprocess.Popen(
        [sys.executable, "-c", RUN, str(BENCHMARK)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline() == "ready\n"
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
    finally:
        process.kill()
        process.communicate()
    assert out == "cleaned up\n"
    assert process.returncode == 128 + signal.SIGTERM
