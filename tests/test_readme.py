"""The README's Python snippets run as written (those that need no model, data set or GPU)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.DOTALL | re.MULTILINE)
# Snippets that are fragments of a larger program, by a line they contain, and where the whole
# program is tested instead.
NOT_STANDALONE = {
    "trainer = ToolEnvsGRPOTrainer(": "needs a model and a data set: tests/test_recipes.py",
}


def _snippets() -> list[tuple[str, str]]:
    found = []
    for match in _BLOCK.finditer(README.read_text(encoding="utf-8")):
        code = textwrap.dedent(match.group(2))
        found.append((code.strip().splitlines()[0], code))
    return found


SNIPPETS = [
    pytest.param(
        code,
        id=first,
        marks=[pytest.mark.skip(reason=why) for key, why in NOT_STANDALONE.items() if key in code],
    )
    for first, code in _snippets()
]


def test_the_readme_has_snippets_that_run():
    runnable = [p for p in SNIPPETS if not p.marks]
    assert any("env.unwrapped.tools" in p.values[0] for p in runnable)
    assert any('gym.make("tool_envs/Calculator-v0")' in p.values[0] for p in runnable)


@pytest.mark.parametrize("code", SNIPPETS)
def test_readme_snippet_runs_as_written(code):
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})
