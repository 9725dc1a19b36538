"""Running one piece of work on several threads at once, as the thread-safety tests do."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_in_threads(work: Callable[[int], object], count: int, timeout: float | None = None) -> None:
    """Call ``work(0)`` ... ``work(count - 1)``, each on its own thread, all started before any
    is waited for; return once each has returned (or ``timeout`` seconds passed for it)."""
    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
