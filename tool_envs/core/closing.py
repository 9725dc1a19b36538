"""``with`` for the objects that hold a process, threads or a connection until ``close()``."""

from __future__ import annotations

import abc

from typing_extensions import Self

__all__ = ["ClosedOnExit"]


class ClosedOnExit(abc.ABC):
    """A context manager that returns itself and calls :meth:`close` on exit, error or not, so
    ``with Player(...) as player:`` never leaves an engine, a server process or a sandbox behind.
    """

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @abc.abstractmethod
    def close(self) -> None:
        """Release what the object holds; calling it again does nothing."""
