"""A server's open files: the limit raised at start, and connections refused before it runs out.

Every connection is a file descriptor, and so is whatever a session's env opens (a sandbox's
pipes, an MCP server's stdio, a lazily imported module's file). At the common soft limit of
1,024 a server used to accept connections until ``accept`` failed with ``EMFILE``: the event
loop then logged a traceback per attempt (hundreds of thousands a minute), the connections past
the limit waited in the backlog until their clients gave up, and a held session whose next step
needed a file failed with ``OSError: Too many open files``.

Now :func:`raise_open_file_limit` lifts the soft limit to the hard one when the server starts,
and :class:`OpenFiles` admits a new connection only while ``reserve`` descriptors (plus what one
session's env holds) stay free after it: the connection past that is answered ``503`` and
closed at once, one log line says so (then one a minute with the count), and held sessions
keep their reserve.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

_FD_FOLDERS = ("/proc/self/fd", "/dev/fd")


def raise_open_file_limit() -> tuple[int, int] | None:
    """Lift this process's soft ``RLIMIT_NOFILE`` to its hard limit; ``(before, after)``, or
    None where there is no such limit (not a Unix) or it cannot be changed."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == hard:  # Linux refuses an infinite NOFILE
        return soft, soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:
        logger.warning("could not raise the open-file limit from %d to %d: %s", soft, hard, exc)
        return soft, soft
    return soft, hard


def open_file_limit() -> int | None:
    """This process's soft ``RLIMIT_NOFILE`` (None: no limit known)."""
    try:
        import resource
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def count_open_files() -> int | None:
    """Descriptors this process holds now (None where the OS does not list them). At the
    limit the listing itself cannot open its folder: that counts as full."""
    for folder in _FD_FOLDERS:
        if os.path.isdir(folder):
            try:
                return len(os.listdir(folder)) - 1  # less the listing's own descriptor
            except OSError:
                return open_file_limit()
    return None


@dataclass
class OpenFiles:
    """Whether a server has room for one more connection, by its open-file limit.

    Counting descriptors reads a folder (``/proc/self/fd``: ~1 ms at 4,000 of them), so the
    count is kept for ``recount_after`` seconds and each connection admitted since adds one;
    a burst of refusals reuses the count that said "full".

    Attributes:
        reserve: Descriptors kept free for the sessions already held (their envs' files, a
            module a step imports, a log line).
        per_session: Descriptors one session's env holds besides its connection (measured on
            the server's warm-up episode).
        limit: The soft ``RLIMIT_NOFILE``, read again at each count (None: no limit, or
            descriptors cannot be counted here: every connection is admitted).
        refused: Connections refused for want of descriptors.
    """

    reserve: int = 64
    per_session: int = 0
    recount_after: float = 0.05
    limit: int | None = field(default_factory=open_file_limit)
    refused: int = 0
    _counted: int = field(default=0, init=False, repr=False)
    _counted_at: float = field(default=float("-inf"), init=False, repr=False)
    _added: int = field(default=0, init=False, repr=False)
    _full: bool = field(default=False, init=False, repr=False)
    _logged_at: float = field(default=float("-inf"), init=False, repr=False)

    def admit(self) -> bool:
        """Whether a connection just accepted (its socket already open) may stay: True while
        ``reserve`` descriptors, and what its session's env will open, stay free."""
        if self.limit is None:
            return True
        now = time.monotonic()
        need = self.per_session + self.reserve
        stale = now - self._counted_at >= self.recount_after
        # The estimate only grows (closes are not seen): when it says full, count again,
        # unless the last count said so too (a burst past the limit counts once per period).
        unsure = not self._full and self._counted + self._added + 1 + need > self.limit
        if stale or unsure:
            counted = count_open_files()  # this connection's socket included
            self.limit = open_file_limit()  # as it is now (``prlimit`` may have changed it)
            if counted is None or self.limit is None:
                self.limit = None
                return True
            self._counted, self._counted_at, self._added = counted, now, 0
            self._full = counted + need > self.limit
        else:
            self._added += 1
        if self._counted + self._added + need <= self.limit:
            return True
        self.refused += 1
        self._log_refusal(now)
        return False

    def refusal(self) -> bytes:
        """The 503 a refused connection gets: which limit, and what to do."""
        text = (
            f"this server holds all the connections its open-file limit allows ({self._counted} "
            f"of {self.limit} open, {self.reserve} kept for its sessions): try another server, "
            "or later; its operator can raise the limit (ulimit -n)\n"
        ).encode()
        return (
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"retry-after: 1\r\nconnection: close\r\ncontent-length: "
            + str(len(text)).encode()
            + b"\r\n\r\n"
            + text
        )

    def _log_refusal(self, now: float) -> None:
        """One line at the first refusal, then at most one a minute with the count."""
        if now - self._logged_at < 60:
            return
        logger.warning(
            "refusing connections: %d of %d open files in use, %d kept for the held sessions "
            "(%d refused so far; raise the open-file limit, ulimit -n, to hold more)",
            self._counted,
            self.limit,
            self.reserve,
            self.refused,
        )
        self._logged_at = now
