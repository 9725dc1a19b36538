"""Which code in a model's reply is its answer: the fenced block that defines the entry point.

Models often answer with the solution in one fenced block and a usage example in a second one
(``def add(a, b): ...`` in the first, ``print(add(1, 2))`` in the next). Grading the last block
would grade the example. The rule (:func:`submission_from_reply`):

1. Code blocks are fenced blocks tagged ``python``, ``python3``, ``py``, ``py3`` or untagged;
   blocks tagged with another language (``text``, ``bash``, ``console``) are skipped whole.
2. With an entry point, the submission is the **last block that defines it** at top level (a
   ``def``/``class``, an assignment or import binding the name, or a ``class Solution`` with
   that method), preceded by the definitions it needs from the other blocks: the imports,
   functions, classes and assignments that bind a name it uses (and, in turn, the names those
   use). Calls, prints and asserts of the other blocks are left out.
3. When no block defines the entry point (or the task has none: stdin/stdout tasks), the last
   code block is the submission, as before this rule existed.

So a correct solution followed by an example passes, while an example alone or a wrong solution
followed by a right-looking example still fails: what is graded is the code that defines the
function the tests call.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

__all__ = ["code_blocks", "extract_code", "submission_from_reply"]

_OPENING = re.compile(r"```[ \t]*([^\n`]*?)[ \t]*\n")
_PYTHON_TAGS = frozenset({"", "python", "python3", "py", "py3"})
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def code_blocks(text: str) -> list[str]:
    """The Python code blocks of ``text`` in order (see the module doc for which count)."""
    blocks, position = [], 0
    while True:
        start = text.find("```", position)
        if start < 0:
            return blocks
        opening = _OPENING.match(text, start)
        if opening is None:  # a run of backticks that opens no block (inline, or ``` at the end)
            position = start + 3
            continue
        end = text.find("```", opening.end())
        if end < 0:  # an unclosed block is not an answer
            return blocks
        tag = opening.group(1).split()[0].lower() if opening.group(1).strip() else ""
        if tag in _PYTHON_TAGS:
            blocks.append(text[opening.end() : end])
        position = end + 3


def extract_code(text: str) -> str | None:
    """The last code block in ``text`` (```python or bare ```), or None."""
    blocks = code_blocks(text)
    return blocks[-1] if blocks else None


def submission_from_reply(text: str, entry_point: str | None) -> str | None:
    """The code a reply submits for a task whose tests call ``entry_point`` (see module doc)."""
    blocks = code_blocks(text)
    if not blocks:
        return None
    if not entry_point:
        return blocks[-1]
    parsed = [_Block.parse(block) for block in blocks]
    defining = [i for i, block in enumerate(parsed) if block.defines(entry_point)]
    if not defining:
        return blocks[-1]
    chosen = defining[-1]
    helpers = _needed_definitions(parsed, chosen)
    if not helpers:
        return blocks[chosen]
    return "\n".join(helpers) + "\n\n" + blocks[chosen]


@dataclass(frozen=True)
class _Block:
    source: str
    body: tuple[ast.stmt, ...]  # empty when the block is not valid Python

    @classmethod
    def parse(cls, source: str) -> _Block:
        try:
            return cls(source, tuple(ast.parse(source).body))
        except (SyntaxError, ValueError):  # ValueError: a NUL byte
            return cls(source, ())

    def defines(self, name: str) -> bool:
        for node in self.body:
            if name in _bound_names(node):
                return True
            if isinstance(node, ast.ClassDef) and node.name == "Solution":
                methods = (n.name for n in node.body if isinstance(n, _DEFINITIONS[:2]))
                if name in methods:
                    return True
        return False

    def segment(self, node: ast.stmt) -> str:
        """The statement's own lines (decorators included)."""
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        lines = self.source.splitlines(keepends=True)[first - 1 : node.end_lineno]
        return "".join(lines).rstrip("\n")


def _bound_names(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds (definitions, assignments, imports)."""
    if isinstance(node, _DEFINITIONS):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {
            alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name != "*"
        }
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets = [node.target]
    names = set()
    for target in targets:
        names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _used_names(nodes: tuple[ast.stmt, ...] | list[ast.stmt]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _needed_definitions(parsed: list[_Block], chosen: int) -> list[str]:
    """The other blocks' statements that bind names the chosen block uses, transitively, in
    reply order. A name the chosen block binds itself is never taken from elsewhere."""
    own = set().union(*(_bound_names(node) for node in parsed[chosen].body))
    providers: dict[str, tuple[int, int]] = {}  # name -> (block, statement); the last one wins
    for b, block in enumerate(parsed):
        if b == chosen:
            continue
        for s, node in enumerate(block.body):
            for name in _bound_names(node) - own:
                providers[name] = (b, s)
    wanted, taken = list(_used_names(parsed[chosen].body)), set()
    while wanted:
        where = providers.get(wanted.pop())
        if where is None or where in taken:
            continue
        taken.add(where)
        wanted.extend(_used_names([parsed[where[0]].body[where[1]]]))
    return [parsed[b].segment(parsed[b].body[s]) for b, s in sorted(taken)]
