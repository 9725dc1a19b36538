"""Running code in a fresh interpreter where an optional extra's package cannot be imported, as
on a machine without that extra, to see the error that names what to install."""

from __future__ import annotations

import subprocess
import sys


def import_error_without(package: str, setup: str, call: str) -> str:
    """``"ErrorClass message"`` of the ImportError that ``call`` raises once ``setup`` has run,
    in a fresh interpreter where ``import package`` fails ("" if ``call`` raised none). An
    ImportError of ``setup`` is not caught: the test fails on it, with the traceback."""
    script = (
        f"import sys; sys.modules[{package!r}] = None\n"
        f"{setup}"
        "try:\n"
        f"    {call}\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return result.stdout + result.stderr
