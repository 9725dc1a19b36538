"""Copy-on-write episode databases: shared until written, and equal exactly when tau2's hash is.

Runs without tau2: the databases here are small pydantic models shaped like tau2's (top-level
dicts of records, plus a list field).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import random

import pytest
from pydantic import BaseModel

from tool_envs.tau2.state import BaseSnapshot, CopyOnWriteTable, DatabaseDelta, WriteGate


class Seat(BaseModel):
    cabin: str
    left: int


class Flight(BaseModel):
    number: str
    seats: dict[str, Seat]
    tags: list[str]


class ToyDB(BaseModel):
    flights: dict[str, Flight]
    notes: list[str]


def toy_db(n: int = 30) -> ToyDB:
    return ToyDB(
        flights={
            f"F{i}": Flight(
                number=f"F{i}",
                seats={"eco": Seat(cabin="eco", left=i), "biz": Seat(cabin="biz", left=2)},
                tags=["a"],
            )
            for i in range(n)
        },
        notes=["n0"],
    )


def tau2_hash(db: BaseModel) -> str:
    """tau2's DB hash: sha256 of json.dumps(model_dump(), sort_keys=True, default=str)."""
    return hashlib.sha256(
        json.dumps(db.model_dump(), sort_keys=True, default=str).encode()
    ).hexdigest()


def test_reads_share_records_and_writes_copy_them_first():
    base = BaseSnapshot.of(toy_db())
    assert base.tables == {"flights"}
    gate = WriteGate()
    episode = base.episode(gate)
    assert isinstance(episode.flights, CopyOnWriteTable)
    assert episode.flights["F1"] is base.db.flights["F1"]  # gate closed: shared
    gate.open = True
    flight = episode.flights["F1"]
    flight.seats["eco"].left -= 1
    assert flight is not base.db.flights["F1"]
    assert base.db.flights["F1"].seats["eco"].left == 1
    assert episode.flights.dirty == {"F1"}
    assert episode.notes is not base.db.notes  # non-table fields are copied whole


def test_iterating_with_the_gate_open_copies_every_record():
    base = BaseSnapshot.of(toy_db(5))
    gate = WriteGate()
    episode = base.episode(gate)
    gate.open = True
    for flight in episode.flights.values():
        flight.tags.append("x")
    assert all(f.tags == ["a"] for f in base.db.flights.values())
    assert episode.flights.dirty == {f"F{i}" for i in range(5)}


def mutate(db: ToyDB, gate: WriteGate, rng: random.Random) -> None:
    """A random write, the way tau2 tools write: look up, then change in place, add or drop."""
    gate.open = True
    kind = rng.choice(["seat", "tag", "add", "pop", "note", "same"])
    key = f"F{rng.randrange(6)}"
    if kind == "seat" and key in db.flights:
        db.flights[key].seats["eco"].left += rng.choice([-1, 1])
    elif kind == "tag" and key in db.flights:
        db.flights[key].tags.append(rng.choice("ab"))
    elif kind == "add":
        db.flights[f"N{rng.randrange(3)}"] = Flight(number="N", seats={}, tags=[])
    elif kind == "pop":
        db.flights.pop(key, None)
    elif kind == "note":
        db.notes.append("n")
    elif kind == "same" and key in db.flights:
        _ = db.flights[key]  # looked up with the gate open, not changed
    gate.open = False


@pytest.mark.parametrize("seed", range(40))
def test_delta_equality_is_tau2_hash_equality(seed):
    rng = random.Random(seed)
    base = BaseSnapshot.of(toy_db(6))
    gates = WriteGate(), WriteGate()
    left, right = base.episode(gates[0]), base.episode(gates[1])
    for _ in range(rng.randrange(4)):
        mutate(left, gates[0], rng)
    # the other side often makes the same writes, so both equal and unequal pairs occur
    rng_same = random.Random(seed) if seed % 2 else rng
    for _ in range(rng_same.randrange(4)):
        mutate(right, gates[1], rng_same)
    same = DatabaseDelta.of(left, base).same_as(DatabaseDelta.of(right, base), base)
    assert same == (tau2_hash(left) == tau2_hash(right))
    assert tau2_hash(base.db) == tau2_hash(toy_db(6))  # the base never changed


def test_a_write_undone_by_hand_still_equals_the_base():
    base = BaseSnapshot.of(toy_db(3))
    gate = WriteGate()
    episode = base.episode(gate)
    gate.open = True
    episode.flights["F2"].seats["eco"].left += 1
    episode.flights["F2"].seats["eco"].left -= 1
    untouched = base.episode(WriteGate())
    assert DatabaseDelta.of(episode, base).same_as(DatabaseDelta.of(untouched, base), base)


def test_a_table_pickles_as_a_plain_dict():
    table = CopyOnWriteTable({"a": Seat(cabin="eco", left=1)}, WriteGate())
    clone = pickle.loads(pickle.dumps(table))
    assert type(clone) is dict and clone["a"] == table["a"]
