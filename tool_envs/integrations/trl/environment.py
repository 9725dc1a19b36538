"""The bridge that tells a ``rollout_func`` which dataset row each rollout belongs to.

TRL passes a ``rollout_func`` only the prompts, and rows with equal prompts (common: tau tasks
share a system prompt and an opening line) cannot be told apart by prompt. Given as
``environment_factory``, this class makes TRL call ``reset(**row)`` with each full row before
generation and expose the instances, aligned with the rollouts, as ``trainer.environments``.
It has no public method but ``reset``, so TRL registers no tools and keeps our ``env_mask``.
"""

from __future__ import annotations

from typing import Any


class TaskRowEnvironment:
    """Holds the dataset row of one rollout (``environment_factory=TaskRowEnvironment``)."""

    def __init__(self) -> None:
        self.row: dict[str, Any] | None = None

    def reset(self, **row: Any) -> None:
        """Remember the row; return None so TRL leaves the prompt unchanged."""
        self.row = row
        return None
