"""From a domain's task categories to its task splits, the same way for every domain.

A domain declares a :class:`TaskSource`: its categories and their shares, the
:class:`TaskContext` they draw from, and how a draft is finished. :meth:`TaskSource.generate`
deals the categories into splits, drops a task already drawn, replays the gold calls of every
candidate on a fresh database and keeps only those that succeed.

For training sets it can also hold customers out: with ``heldout_splits``, a stable share of the
customers (by hash of their id and the seed) appear only in those splits, so a held-out split
measures a policy on people and orders no training task used.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from tool_envs.core.once import built_once
from tool_envs.tau.db import BaseTables, Database, Tables
from tool_envs.tau.domain import Domain, seeded_generator
from tool_envs.tau.drafts import Action, Finished
from tool_envs.tau.task import tau_task_row
from tool_envs.tau.tools import DatabaseTools, DomainTools

__all__ = ["Finished", "TaskContext", "TaskSource", "category_quotas", "same_gold"]


def category_quotas(weights: Mapping[str, float], size: int) -> dict[str, int]:
    """Tasks per category for a split of ``size``: proportional to ``weights``, rounded by the
    largest remainder (ties in table order), so every split has exactly ``size`` tasks and the
    same mix of categories."""
    total = sum(weights.values())
    exact = {category: size * weight / total for category, weight in weights.items()}
    counts = {category: int(value) for category, value in exact.items()}
    order = list(exact)
    by_remainder = sorted(exact, key=lambda c: (counts[c] - exact[c], order.index(c)))
    for category in by_remainder[: size - sum(counts.values())]:
        counts[category] += 1
    return counts


def same_gold(category: str, finished: Finished) -> str:
    """Two tasks are the same task when their gold actions and required outputs are."""
    _, actions, outputs, _ = finished
    return json.dumps([actions, outputs], sort_keys=True)


class TaskContext:
    """The database a domain's categories draw from, and a replay of gold calls on it.

    Subclasses set ``tools_class`` (and ``user_tools_class`` for dual control) and add their
    own indexes; one context serves a whole generation.
    """

    tools_class: ClassVar[type[DatabaseTools]]
    user_tools_class: ClassVar[type[DatabaseTools] | None] = None
    writes_must_change: ClassVar[frozenset[str]] = frozenset()
    """Write tools whose gold call must change the database (else the task is rejected)."""

    def __init__(self, tables: Tables):
        self.tables = tables
        self.base = BaseTables(tables)
        self.tools = self.tools_class(Database(self.base))
        self.user_tools = self.user_tools_class() if self.user_tools_class else None

    def replay(self, actions: list[Action]) -> list[str] | None:
        """Each action's result, run in order on a fresh database; None if one fails.

        The tool methods are called directly on JSON-decoded arguments (the env's toolset adds
        schema checks; the tests replay every task through the env itself).
        """
        db = Database(self.base)
        self.tools.db = db
        if self.user_tools is not None:
            self.user_tools.db = db
        results = []
        for action in actions:
            user = action.get("requestor") == "user"
            tools = self.user_tools if user and self.user_tools else self.tools
            before = db.hash() if action["name"] in self.writes_must_change else None
            try:
                arguments = json.loads(json.dumps(action["arguments"]))
                results.append(getattr(tools, action["name"])(**arguments))
            except ValueError:
                return None
            if before is not None and db.hash() == before:
                return None
        return results

    def accept(self, rng: random.Random, finished: Finished) -> Finished | None:
        """The task to keep if its gold replays, else None.

        Called once per new task (after the duplicate check), so an override may also complete
        it: fill in ids the replay created, or draw what only kept tasks need.
        """
        return finished if self.replay(finished[1]) is not None else None


C = TypeVar("C", bound=TaskContext)


@dataclass(frozen=True, eq=False)
class TaskSource(Generic[C]):
    """A domain's task generator: categories drawn in fixed shares, finished, replayed.

    Attributes:
        domain: The domain's short name (row ids are ``<domain>-<split>-<number>``).
        env_id: The env id the rows name.
        policy: The policy text (the rows' system prompt).
        context: Builds the generation context from the domain's tables.
        load_tables: The domain's tables.
        weights: Share of each category in a split (normalised).
        categories: ``category -> draw(rng, ctx)``, a draft or None to draw again.
        finish: ``(rng, ctx, draft, category)`` to a finished task, or None to draw again.
        key: What makes two tasks the same (no task is in two splits, or twice in one).
        tags_field: The ``extra_info`` field that holds a finished task's tags.
        sizes: Default split sizes.
        attempts_per_task: Draws allowed per task before a category is declared impossible.
        subject_of: The id of the customer a draft is about (None: the domain cannot hold
            customers out of splits).
    """

    domain: str
    env_id: str
    policy: str
    context: Callable[[Tables], C]
    load_tables: Callable[[], Tables]
    weights: Mapping[str, float]
    categories: Mapping[str, Callable[[random.Random, C], Any]]
    finish: Callable[[random.Random, C, Any, str], Finished | None]
    key: Callable[[str, Finished], str] = same_gold
    tags_field: str = "tags"
    sizes: Mapping[str, int] = field(default_factory=lambda: {"train": 600, "test": 120})
    attempts_per_task: int = 200
    subject_of: Callable[[Any], str] | None = None

    def generate(
        self,
        sizes: Mapping[str, int] | None = None,
        seed: int = 0,
        *,
        categories: Sequence[str] | None = None,
        heldout_splits: Collection[str] = (),
        heldout_share: float = 0.2,
        policy: str | None = None,
        databases: int = 1,
    ) -> dict[str, list[dict[str, Any]]]:
        """Task rows per split (default :attr:`sizes`); no task is in two splits.

        Each split holds the categories (all, or ``categories``) in the proportions of
        :attr:`weights`; the rows of a split are shuffled; a task's ``extra_info`` names its
        split, category and tags. With ``heldout_splits``, customers whose hashed id falls in
        ``heldout_share`` are the only ones in those splits and never appear in the others.
        ``policy`` replaces :attr:`policy` as the rows' system prompt (a shorter wording of the
        same rules: the env's tools, rules and reward do not depend on it).

        ``databases`` > 1 draws each task from one of that many generated databases (seed 0 is
        the shipped one; the others have the same shape and other customers, orders and ids);
        a row on database k > 0 says so in ``extra_info['db_seed']`` and the env builds that
        database on reset. One database holds a few thousand distinct tasks of a category;
        many hold as many as a training run needs.
        """
        if databases < 1:
            raise ValueError(f"databases must be at least 1, got {databases}")
        weights = self._weights(categories)
        pools = self._pools(sizes or self.sizes, heldout_splits, heldout_share)
        rng = random.Random(seed)
        contexts = [self.context(self._tables(db_seed)) for db_seed in range(databases)]
        seen: set[str] = set()
        splits: dict[str, list[dict[str, Any]]] = {}
        for split, size in dict(sizes or self.sizes).items():
            drawn: list[tuple[str, Finished, int]] = []
            in_pool = None if pools is None else _in_share(heldout_share, seed, pools[split])
            for category, quota in category_quotas(weights, size).items():
                drawn += self._draw(rng, contexts, category, quota, seen, in_pool)
            rng.shuffle(drawn)
            splits[split] = [
                self._row(split, number, category, finished, policy or self.policy, db_seed)
                for number, (category, finished, db_seed) in enumerate(drawn)
            ]
        return splits

    def _tables(self, db_seed: int) -> Tables:
        if db_seed == 0:
            return self.load_tables()
        return seeded_generator(self.load_tables, self.domain)(db_seed)

    def default_splits(self) -> dict[str, list[dict[str, Any]]]:
        """The task set shipped with the env, generated once per process."""
        return _default_splits(self)

    def make_domain(
        self,
        tools: type[DomainTools],
        *,
        user_tools: type[DatabaseTools] | None = None,
        user_keywords: Mapping[str, tuple[str, ...]] | None = None,
        identity_ask: tuple[str, ...] = (),
    ) -> Domain:
        """The :class:`Domain` whose name, env id, policy, tables and tasks are these."""
        return Domain(
            name=self.domain,
            env_id=self.env_id,
            policy=self.policy,
            tools=tools,
            load_tables=self.load_tables,
            load_splits=self.default_splits,
            user_keywords=dict(user_keywords or {}),
            user_tools=user_tools,
            identity_ask=identity_ask,
        )

    def _weights(self, categories: Sequence[str] | None) -> Mapping[str, float]:
        if categories is None:
            return self.weights
        unknown = sorted(set(categories) - set(self.weights))
        if unknown or not categories:
            raise ValueError(
                f"{self.domain} has no task categories {unknown or list(categories)}; "
                f"choose from {sorted(self.weights)}"
            )
        return {name: weight for name, weight in self.weights.items() if name in categories}

    def _pools(
        self, sizes: Mapping[str, int], heldout_splits: Collection[str], share: float
    ) -> dict[str, bool] | None:
        """Per split, whether it draws the held-out customers (None: no customer is held out)."""
        if not heldout_splits:
            return None
        if self.subject_of is None:
            raise ValueError(f"{self.domain}'s tasks cannot hold customers out of splits")
        missing = sorted(set(heldout_splits) - set(sizes))
        if missing:
            raise ValueError(f"held-out splits {missing} are not among the splits {list(sizes)}")
        if not 0.0 < share < 1.0:
            raise ValueError(f"heldout_share must be between 0 and 1, got {share}")
        return {split: split in heldout_splits for split in sizes}

    def _draw(
        self,
        rng: random.Random,
        contexts: Sequence[C],
        category: str,
        quota: int,
        seen: set[str],
        in_pool: Callable[[str], bool] | None = None,
    ) -> list[tuple[str, Finished, int]]:
        """``quota`` new tasks of ``category``, each with the database it was drawn from."""
        drawn: list[tuple[str, Finished, int]] = []
        attempts = 0
        while len(drawn) < quota:
            attempts += 1
            if attempts > self.attempts_per_task * (quota + 1):
                raise RuntimeError(
                    f"cannot generate {quota} distinct '{category}' tasks for one split: "
                    f"{len(drawn)} found in {attempts - 1} draws; ask for fewer tasks or more "
                    "categories"
                )
            # One database draws nothing extra from rng: single-database sets stay as they were.
            db_seed = rng.randrange(len(contexts)) if len(contexts) > 1 else 0
            ctx = contexts[db_seed]
            draft = self.categories[category](rng, ctx)
            if draft is not None and in_pool is not None and not in_pool(self.subject_of(draft)):
                continue
            finished = None if draft is None else self.finish(rng, ctx, draft, category)
            if finished is None:
                continue
            key = self.key(category, finished)
            key = f"db{db_seed}:{key}" if db_seed else key
            if key in seen:
                continue
            accepted = ctx.accept(rng, finished)
            if accepted is None:
                continue
            seen.add(key)
            drawn.append((category, accepted, db_seed))
        return drawn

    def _row(
        self,
        split: str,
        number: int,
        category: str,
        finished: Finished,
        policy: str,
        db_seed: int = 0,
    ) -> dict[str, Any]:
        scenario, actions, outputs, tags = finished
        extra_info: dict[str, Any] = {"split": split, "category": category}
        extra_info[self.tags_field] = tags
        if db_seed:
            extra_info["db_seed"] = db_seed
        return tau_task_row(
            env_id=self.env_id,
            domain=self.domain,
            task_id=f"{self.domain}-{split}-{number:04d}",
            policy=policy,
            scenario=scenario,
            actions=actions,
            outputs=outputs,
            extra_info=extra_info,
        )


def _in_share(share: float, seed: int, inside: bool) -> Callable[[str], bool]:
    """Whether a customer id belongs to a split's pool: the held-out share, or the rest."""

    def held(subject: str) -> bool:
        digest = hashlib.sha256(f"{seed}:{subject}".encode()).digest()
        return (int.from_bytes(digest[:8], "big") / 2**64 < share) == inside

    return held


@built_once
def _default_splits(source: TaskSource) -> dict[str, list[dict[str, Any]]]:
    return source.generate()
