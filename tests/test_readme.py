"""The Python snippets of the README and of the docs pages (docs/**/*.md) run as written (those
that need no model, data set or GPU)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
_BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.DOTALL | re.MULTILINE)
# Snippets that are fragments of a larger program, by a line they contain, and where the whole
# program is tested instead.
NOT_STANDALONE = {
    "trainer = ToolEnvsGRPOTrainer(": "needs a model and a data set: tests/test_recipes.py",
    "# unitconv.py": "a module of its own: tests/test_own_env.py runs it as a file",
}


def _snippets() -> list[tuple[Path, str, str]]:
    found = []
    for page in PAGES:
        for match in _BLOCK.finditer(page.read_text(encoding="utf-8")):
            code = textwrap.dedent(match.group(2))
            found.append((page, code.strip().splitlines()[0], code))
    return found


SNIPPETS = [
    pytest.param(
        page,
        code,
        id=f"{page.relative_to(ROOT)}: {first}",
        marks=[pytest.mark.skip(reason=why) for key, why in NOT_STANDALONE.items() if key in code],
    )
    for page, first, code in _snippets()
]


def test_the_readme_and_the_docs_have_snippets_that_run():
    runnable = [p for p in SNIPPETS if not p.marks]
    assert any(
        page == README and 'gym.make("tool_envs/Calculator-v0")' in code
        for page, code in (p.values for p in runnable)
    )
    assert any("env.unwrapped.tools" in p.values[1] for p in runnable)
    assert {p.values[0] for p in runnable} > {README}, "no docs page has a snippet that runs"


@pytest.mark.parametrize(("page", "code"), SNIPPETS)
def test_snippet_runs_as_written(page, code):
    exec(compile(code, str(page), "exec"), {"__name__": "readme"})


def test_the_docs_state_the_calculator_task_set_as_the_code_builds_it():
    from collections import Counter

    from tool_envs.calculator.tasks import default_splits

    splits = default_splits()
    operations = Counter(task["extra_info"]["difficulty"] for task in splits["train"])
    text = " ".join((DOCS / "envs" / "calculator.md").read_text(encoding="utf-8").split())
    assert (
        f"the Calculator env's default task set holds {len(splits['train']):,} training tasks "
        f"({operations[1]} of one operation, {operations[2]} of two, {operations[3]} of three) "
        f"and {len(splits['test'])} test tasks"
    ) in text


def test_the_readme_names_the_commands_the_demo_runs():
    """Every ``tool-envs`` command of ``make demo`` is in the README, with what it does."""
    makefile = (README.parent / "Makefile").read_text(encoding="utf-8")
    demo = makefile.partition("\ndemo:")[2].partition("\n\n")[0]
    commands = re.findall(r"\$\(BIN\)/tool-envs ([\w-]+)", demo)
    assert commands == ["calculator-tasks", "tiny-model"]
    text = README.read_text(encoding="utf-8")
    for command in commands:
        assert f"`tool-envs {command} " in text, command


def test_the_train_extra_admits_only_the_transformers_the_tests_ran():
    """A newer transformers printed TRL 1.16's deprecation warnings into the training console:
    the range says what was tested, and it is the one installed here."""
    from importlib.metadata import version

    from packaging.requirements import Requirement

    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+")

    project = tomllib.loads((README.parent / "pyproject.toml").read_text(encoding="utf-8"))
    extra = [Requirement(r) for r in project["project"]["optional-dependencies"]["train"]]
    [transformers] = [r for r in extra if r.name == "transformers"]
    assert transformers.specifier.contains(version("transformers"))
    assert not transformers.specifier.contains("5.24.0")
