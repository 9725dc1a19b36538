"""The base classes of a domain's tools: database access, record lookup, cached JSON answers.

Every domain's tools read records by key and answer with JSON text; those two jobs live here so
a domain's ``tools.py`` holds only its tools. Which tools write is said once, with
``@tool(writes=True)``; :func:`write_tool_names` reads it back for task generators and tests.
"""

from __future__ import annotations

import ast
import json
import operator
import weakref
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from tool_envs.core.tools import Toolset, tool
from tool_envs.tau.db import BaseTables, Database, Record

TextKey = Any
"""Names one cached answer, e.g. ``("orders", order_id)``; any hashable value."""


class DatabaseTools:
    """Tools over an episode's database: methods marked with ``@tool`` that use ``self.db``.

    One instance serves every episode of an env; the env points ``db`` at the episode's
    :class:`Database` on reset. Tools raise ``ValueError`` with a message for the caller on bad
    requests (it becomes an ``Error: ...`` tool message); they must only change the DB through
    ``self.db.edit / insert / delete``. Subclass :class:`DomainTools` for the agent's tools and
    this class directly for the tools a user has on their own device (dual control).
    """

    ensure_ascii: ClassVar[bool] = False
    """JSON escaping of answers; True keeps non-ASCII as escapes (the C encoder's fastest path)."""
    quote_keys: ClassVar[bool] = False
    """Not-found errors quote the key ("user 'x' not found"), as airline and healthcare say it."""
    texts_per_process: ClassVar[bool] = False
    """Cached answers are shared by every instance over the same base tables (every env of the
    process), not kept per instance: for domains whose answers many envs read again."""

    def __init__(self, db: Database | None = None):
        self._db = db
        self._texts: dict[TextKey, str] = {}
        self._texts_base: BaseTables | None = None

    @property
    def db(self) -> Database:
        if self._db is None:
            raise RuntimeError("tools used outside an episode (no database attached)")
        return self._db

    @db.setter
    def db(self, value: Database) -> None:
        self._db = value

    # -- records -------------------------------------------------------------------------------
    def _record(self, table: str, key: str, what: str, example: str = "", hint: str = "") -> Record:
        """The record, or a ValueError that names what was not found.

        ``example`` is an id in the right format ('#W1234567'); a key that does not start like
        it gets "(<what> ids look like '<example>')". ``hint`` is said in any case.
        """
        record = self.db.get(table, key) if isinstance(key, str) else None
        if record is None:
            prefix = example.rstrip("0123456789")
            if example and not str(key).startswith(prefix):
                hint = f" ({what} ids look like '{example}')"
            shown = f"'{key}'" if self.quote_keys else key
            raise ValueError(f"{what} {shown} not found{hint}")
        return record

    def _find(
        self, table: str, index: str, key_of: Callable[[Record], Any], key: Any, missing: str
    ) -> str:
        """The key of the (first) record whose ``key_of(record)`` is ``key``, found through the
        index ``index``; a ValueError saying ``missing`` if there is none."""
        found = self.db.lookup(table, index, key_of, key)
        if not found:
            raise ValueError(missing)
        return found[0]

    # -- answers -------------------------------------------------------------------------------
    def _dumps(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=self.ensure_ascii)

    def _cached(
        self, key: TextKey, records: Iterable[tuple[str, str, Record]], build: Callable[[], Any]
    ) -> str:
        """``build()`` as JSON, cached while every record it reads is an unchanged base record.

        ``records`` are the (table, key, record) it reads; most answers are a few base records
        the episode never changed, so each is serialised once per process, not once per call.
        """
        tables = self.db.base.tables
        if any(tables[table].get(k) is not record for table, k, record in records):
            return self._dumps(build())
        texts = self._text_store()
        text = texts.get(key)
        if text is None:
            text = texts[key] = self._dumps(build())
        return text

    def _text_store(self) -> dict[TextKey, str]:
        """Where :meth:`_cached` keeps texts: this instance's, emptied when the base changes, or
        with :attr:`texts_per_process` one store per base tables, begun by :meth:`_first_texts`."""
        base = self.db.base
        if self.texts_per_process:
            texts = _PROCESS_TEXTS.get(base)
            if texts is None:
                texts = _PROCESS_TEXTS[base] = self._first_texts(base)
            return texts
        if self._texts_base is not base:
            self._texts = {}
            self._texts_base = base
        return self._texts

    def _first_texts(self, base: BaseTables) -> dict[TextKey, str]:
        """What a per-process text store starts with (override to render hot answers once)."""
        return {}

    def _record_text(self, table: str, key: str, record: Record) -> str:
        """One record as JSON, cached while it is the unchanged base record."""
        return self._cached((table, key), [(table, key, record)], lambda: record)


_PROCESS_TEXTS: weakref.WeakKeyDictionary[BaseTables, dict[TextKey, str]] = (
    weakref.WeakKeyDictionary()
)


class DomainTools(DatabaseTools):
    """Base class of a domain's agent tools; every domain gets calculate, think and transfer."""

    @tool
    def calculate(self, expression: str) -> str:
        """Calculate the result of an arithmetic expression (numbers, + - * / and parentheses).

        Args:
            expression: The expression, such as '2 * (3.5 + 4)'.
        """
        value = _evaluate(ast.parse(expression, mode="eval").body)
        return str(round(value, 2))

    @tool
    def think(self, thought: str) -> str:
        """Think out loud about something; it changes nothing and fetches no information.

        Args:
            thought: The thought.
        """
        return ""

    @tool(terminates=True)
    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the user to a human agent, with a summary of their issue. Use only when the
        user explicitly asks for a human or the request cannot be handled within the policy.

        Args:
            summary: A summary of the user's issue.
        """
        return "Transfer successful"


def write_tool_names(*classes: type[DatabaseTools]) -> tuple[str, ...]:
    """Names of the tools marked ``@tool(writes=True)`` on these classes, in definition order."""
    names: list[str] = []
    for klass in classes:
        toolset = Toolset.from_object(klass())
        names += [name for name in toolset.names if toolset[name].writes]
    return tuple(dict.fromkeys(names))


_OPERATORS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _evaluate(node: ast.AST) -> float:
    """Arithmetic only: an allow-list over the syntax tree, never ``eval``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))
    raise ValueError("only numbers, + - * / and parentheses are allowed")
