"""The two ways env servers on Ray fail that a user must act on (the classes live in
:mod:`tool_envs.errors`; this module keeps their old import path) and the Ray versions the
``ray`` extra accepts."""

from __future__ import annotations

from tool_envs.errors import EnvServerLostError as EnvServerLostError
from tool_envs.errors import RayVersionError as RayVersionError

SUPPORTED_RANGE = ">=2.60,<2.61"
"""The Ray versions tool-envs' ``ray`` extra accepts (pyproject.toml says the same)."""
