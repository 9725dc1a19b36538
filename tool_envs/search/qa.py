"""A seeded world of fictional entities, its encyclopedia-style corpus, and QA tasks over it.

Why fictional: every fact (who founded which company, which river a town lies on) is invented
here, so a model cannot answer from memory and must search the corpus. The world has people,
towns, rivers, lakes, provinces, companies and inventions; each entity has one document that
states its own attributes and its outgoing relations (a company's founder and headquarters
town, a person's birthplace, a town's river, province and mayor, ...). Documents never state
relations backwards (a person's page does not name the company they founded), so a question
that chains relations needs one document per hop.

Tasks for ``tool_envs/WebSearch-v0`` (see `search_task_row` for the row format):

- single-hop: one attribute or relation of one entity ("Who founded Tarnwick Glass Company?");
- multi-hop: a chain over two or three documents ("In which town was the founder of Tarnwick
  Glass Company born?"); ``extra_info.supporting_doc_ids`` lists the documents in hop order,
  the first naming the question's entity and the last holding the answer.

Gold answers are the canonical name or value plus shorter forms that the documents also use
("Orlen River" and "Orlen"; "214 km" and "214"). Splits share no question, and no fact
either: a test question uses no (entity, attribute) fact that any train question uses, so
answers memorised in training do not help at test time.

Everything is drawn from ``random.Random(seed)``; the same seed gives the same corpus and tasks.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tool_envs.core.once import built_once

__all__ = [
    "CORPUS_NAME",
    "ENV_ID",
    "FICTIONAL_NOTE",
    "SYSTEM_PROMPT",
    "default_corpus",
    "default_splits",
    "generate_corpus",
    "generate_splits",
    "generate_world",
    "search_task_row",
]

ENV_ID = "tool_envs/WebSearch-v0"
CORPUS_NAME = "search_qa"
DEFAULT_SIZES = {"train": 2000, "test": 400}
HOP_WEIGHTS = {1: 0.4, 2: 0.35, 3: 0.25}

SYSTEM_PROMPT = (
    "Answer the user's question by searching. You have two tools: search(query, max_results) "
    "returns the best-matching documents, each with a title, url and snippet; open_page(url) "
    "returns the full text of a document. Some questions need several searches: a first "
    "document names the person, place or company to look up next. When you know the answer, "
    "reply with it inside <answer>...</answer>, as short as possible (a name, a place, a year "
    "or a number), for example <answer>1887</answer>."
)
"""Instructions shared by every WebSearch-v0 task row."""

FICTIONAL_NOTE = (
    " The documents describe an invented world: answer from them, not from what you know."
)
"""Appended to `SYSTEM_PROMPT` for the tasks over the generated corpus."""


def search_task_row(
    question: str,
    answers: Sequence[str],
    extra_info: Mapping[str, Any],
    system_prompt: str = SYSTEM_PROMPT,
) -> dict[str, Any]:
    """One WebSearch-v0 task row: system instructions + the question; the gold answers."""
    return {
        "prompt": [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": question},
        ],
        "env_id": ENV_ID,
        "reward_spec": {"answers": list(answers)},
        "extra_info": dict(extra_info),
    }


def _words(text: str) -> list[str]:
    return text.split()


# -- names -----------------------------------------------------------------------------------------

_ONSETS = _words("b br c ch d dr f fl g gr h k l m n p pr qu r s sh sk st t th tr v w z")
_VOWELS = ["a", "e", "i", "o", "u", "a", "e", "o", "ae", "ei", "ia", "ou"]
_CODAS = ["", "", "", "n", "r", "l", "s", "th", "nd", "rk", "st", "m", "ll", "rn", "v"]
_FIRST_ENDINGS = {
    "she": ["a", "ia", "elle", "ine", "wyn", "ra", "ett", "is"],
    "he": ["o", "an", "ric", "en", "us", "ard", "ion", "as"],
}
_SURNAME_ENDINGS = _words(
    "march wick ley dell ton bury more vane holt gard well ridge by ford shaw"
)
_TOWN_ENDINGS = _words(
    "hallow mere ford wick stead brook haven moor gate thorpe cliff bridge field ham minster"
)

_OCCUPATIONS = [
    "glassblower",
    "clockmaker",
    "cartographer",
    "printer",
    "chemist",
    "engineer",
    "merchant",
    "weaver",
    "shipwright",
    "botanist",
    "surveyor",
    "architect",
    "composer",
    "physician",
    "apothecary",
    "bookbinder",
    "lens grinder",
    "metallurgist",
    "potter",
    "astronomer",
]
_INDUSTRIES = [
    ("glassmaking", "Glass"),
    ("textiles", "Textile"),
    ("shipbuilding", "Shipyards"),
    ("clockmaking", "Clock"),
    ("printing", "Press"),
    ("brewing", "Brewery"),
    ("milling", "Mills"),
    ("ironworking", "Iron"),
    ("ceramics", "Pottery"),
    ("optics", "Optical"),
    ("papermaking", "Paper"),
    ("instrument making", "Instrument"),
    ("lamp making", "Lamp"),
    ("tanning", "Leather"),
]
_COMPANY_SUFFIXES = ["Company", "Works", "Limited", "Corporation", "Guild"]
_DEVICES = [
    ("valve", "a valve that keeps steam pressure steady"),
    ("loom", "a loom that weaves two cloths at once"),
    ("compass", "a compass that corrects for nearby iron"),
    ("lamp", "a lamp that burns without smoke"),
    ("press", "a press for printing maps in colour"),
    ("kiln", "a kiln that fires pottery evenly"),
    ("pump", "a pump for draining flooded mines"),
    ("lens", "a lens that magnifies without colour fringes"),
    ("spindle", "a spindle that spins thread twice as fast"),
    ("scale", "a scale that weighs letters to the gram"),
    ("telescope", "a folding telescope for ship captains"),
    ("stove", "a stove that heats two rooms at once"),
    ("lock", "a lock with a rotating combination"),
    ("barometer", "a barometer that rings before storms"),
]
_SCHOOL_KINDS = ["Academy", "College", "Institute", "Conservatory"]
_HILL_KINDS = ["Hills", "Mountains", "Heights", "Fells"]

_TOWN_FEATURES = [
    "its stone bridges",
    "an autumn horse fair",
    "a leaning clock tower",
    "its covered market",
    "a lantern festival held each winter",
    "its walled gardens",
    "a ruined abbey",
    "narrow canals",
    "its salt warehouses",
    "a long pier",
]
_PERSON_FILLERS = [
    "{They} kept detailed notebooks, many of which survive in private collections.",
    "{They} corresponded with scholars across the provinces.",
    "{They} travelled widely in {their} youth.",
    "{They} was known for a quick temper and a generous purse.",
    "A portrait of {them} hangs in a provincial gallery.",
    "{They} rarely gave interviews and avoided public ceremonies.",
    "{They} wrote a short memoir late in life.",
    "{They} was an early member of a local debating society.",
]
_COMPANY_FILLERS = [
    "The company was known for its apprenticeship scheme.",
    "Its early ledgers were lost in a warehouse fire.",
    "The firm expanded rapidly after winning a government contract.",
    "It is one of the oldest employers in its region.",
    "The company's emblem is a heron holding a key.",
    "Its products were exhibited at several trade fairs.",
]
_RIVER_FILLERS = [
    "The river is known for its trout.",
    "Its lower course is navigable by barges.",
    "Floods along the river were common until weirs were built.",
    "Several water mills once stood on its banks.",
    "Its waters are noted for their dark colour.",
]
_INVENTION_FILLERS = [
    "Early models were made by hand.",
    "The design was widely copied within a decade.",
    "A working example is displayed in a technical museum.",
    "Its patent was contested in a long court case.",
    "It won a medal at an industrial exhibition.",
]


_AWKWARD = re.compile(r"(.)\1\1|[aeiouy]{3}|[^aeiouy]{4}|(.)\2.*(.)\3", re.IGNORECASE)


def _pronounceable(word: str) -> bool:
    """No tripled letters, three vowels or four consonants in a row, or two doubled letters."""
    return _AWKWARD.search(word) is None


class _Names:
    """Unique, pronounceable invented words; every entity name has its own root."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def root(self, syllables: tuple[int, int] = (2, 2), ending: str = "") -> str:
        for _ in range(10_000):
            count = self.rng.randint(*syllables)
            parts = [
                self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) + self.rng.choice(_CODAS)
                for _ in range(count)
            ]
            word = ("".join(parts) + ending).capitalize()
            if 5 <= len(word) <= 12 and word.lower() not in self.used and _pronounceable(word):
                self.used.add(word.lower())
                return word
        raise RuntimeError("ran out of unique names; lower the world's sizes")


# -- the world ---------------------------------------------------------------------------------


@dataclass
class Entity:
    """One entity of the world: its name, attributes and relations (target entity ids)."""

    id: str
    kind: str
    name: str
    fields: dict[str, Any] = field(default_factory=dict)
    # Answer strings per attribute (the value as the document writes it, and shorter forms).
    answers: dict[str, list[str]] = field(default_factory=dict)
    aliases: list[str] = field(default_factory=list)  # shorter forms of the name
    pronoun: str = "it"

    def answer_names(self) -> list[str]:
        return [self.name, *self.aliases]


@dataclass
class World:
    """All entities by id, and ids by kind."""

    entities: dict[str, Entity]
    by_kind: dict[str, list[str]]

    def get(self, entity_id: str) -> Entity:
        return self.entities[entity_id]


_SIZES = {
    "province": 12,
    "lake": 20,
    "river": 80,
    "town": 300,
    "company": 400,
    "invention": 400,
    "person": 1500,
}


def generate_world(seed: int = 0) -> World:
    """The entities and their relations (documents are rendered by `generate_corpus`)."""
    rng = random.Random(seed)
    names = _Names(rng)
    entities: dict[str, Entity] = {}
    by_kind: dict[str, list[str]] = {kind: [] for kind in _SIZES}

    def add(kind: str, name: str, **kwargs: Any) -> Entity:
        entity = Entity(id=f"{kind}-{len(by_kind[kind]):04d}", kind=kind, name=name, **kwargs)
        entities[entity.id] = entity
        by_kind[kind].append(entity.id)
        return entity

    schools = [f"{names.root()} {rng.choice(_SCHOOL_KINDS)}" for _ in range(40)]
    hills = [f"{names.root()} {rng.choice(_HILL_KINDS)}" for _ in range(25)]

    for _ in range(_SIZES["province"]):
        root = names.root((2, 3))
        add("province", f"{root} Province", aliases=[root])
    provinces = by_kind["province"]
    for _ in range(_SIZES["lake"]):
        root = names.root()
        lake = add("lake", f"Lake {root}", aliases=[root])
        lake.fields["province"] = rng.choice(provinces)
        area = rng.randint(4, 160)
        lake.fields["area"] = area
        lake.answers["area"] = [f"{area} km2", str(area)]
    for number in range(_SIZES["river"]):
        root = names.root()
        river = add("river", f"{root} River", aliases=[root])
        length = rng.randint(18, 640)
        source = rng.choice(hills)
        river.fields.update(length=length, source=source)
        river.answers["length"] = [f"{length} km", str(length)]
        river.answers["source"] = [source, source.rsplit(" ", 1)[0]]
        # Rivers flow into a lake or an earlier river, so there are no cycles.
        if number < 10 or rng.random() < 0.4:
            river.fields["mouth"] = rng.choice(by_kind["lake"])
        else:
            river.fields["mouth"] = rng.choice(by_kind["river"][:number])

    for _ in range(_SIZES["town"]):
        town = add("town", names.root((1, 2), rng.choice(_TOWN_ENDINGS)))
        founded = rng.randint(1050, 1780)
        town.fields.update(
            province=rng.choice(provinces),
            river=rng.choice(by_kind["river"]),
            founded=founded,
            population=rng.randint(800, 240_000),
            feature=rng.choice(_TOWN_FEATURES),
        )
        town.answers["founded"] = [str(founded)]
    towns = by_kind["town"]
    for province_id in provinces:  # a capital among the province's own towns
        own = [t for t in towns if entities[t].fields["province"] == province_id]
        entities[province_id].fields["capital"] = rng.choice(own or towns)
    for town_id in towns:  # twin towns: noise that mentions other towns by name
        if rng.random() < 0.3:
            entities[town_id].fields["twin"] = rng.choice([t for t in towns if t != town_id])

    def person(born: tuple[int, int], alive: bool = False) -> Entity:
        pronoun = rng.choice(["she", "he"])
        first = names.root((1, 2), rng.choice(_FIRST_ENDINGS[pronoun]))
        surname = names.root((1, 2), rng.choice(_SURNAME_ENDINGS))
        entity = add("person", f"{first} {surname}", pronoun=pronoun)
        birth_year = rng.randint(*born)
        school = rng.choice(schools)
        entity.fields.update(
            birth_year=birth_year,
            birth_town=rng.choice(towns),
            occupation=rng.choice(_OCCUPATIONS),
            school=school,
            surname=surname,
        )
        entity.answers.update(
            birth_year=[str(birth_year)],
            occupation=[entity.fields["occupation"]],
            school=[school],
        )
        if not alive and (birth_year < 1925 or rng.random() < 0.2):
            death = min(birth_year + rng.randint(38, 92), 2023)
            entity.fields["death_year"] = death
            entity.answers["death_year"] = [str(death)]
        return entity

    for town_id in towns:  # mayors are alive today
        entities[town_id].fields["mayor"] = person((1940, 1990), alive=True).id
    for _ in range(_SIZES["company"]):
        founder = person((1760, 1950))
        industry, word = rng.choice(_INDUSTRIES)
        root = names.root()
        suffix = rng.choice(_COMPANY_SUFFIXES)
        company = add("company", f"{root} {word} {suffix}", aliases=[f"{root} {word}"])
        founded = founder.fields["birth_year"] + rng.randint(22, 50)
        company.fields.update(
            founder=founder.id, founded=founded, hq=rng.choice(towns), industry=industry
        )
        company.answers.update(founded=[str(founded)], industry=[industry])
    for _ in range(_SIZES["invention"]):
        inventor = person((1760, 1950))
        device, purpose = rng.choice(_DEVICES)
        invention = add("invention", f"{names.root()} {device}")
        year = inventor.fields["birth_year"] + rng.randint(20, 55)
        invention.fields.update(
            inventor=inventor.id,
            year=year,
            purpose=purpose,
            manufacturer=rng.choice(by_kind["company"]),
        )
        invention.answers["year"] = [str(year)]
    while len(by_kind["person"]) < _SIZES["person"]:  # people nothing points to: distractors
        person((1760, 1990))
    return World(entities, by_kind)


# -- documents ---------------------------------------------------------------------------------


def _pronouns(entity: Entity) -> dict[str, str]:
    she = entity.pronoun == "she"
    return {
        "They": "She" if she else "He",
        "them": "her" if she else "him",
        "their": "her" if she else "his",
    }


def _render(world: World, entity: Entity, rng: random.Random) -> str:
    """The document text: own attributes and outgoing relations, by name."""
    f = entity.fields

    def name(key: str) -> str:
        return world.get(f[key]).name

    if entity.kind == "person":
        words = _pronouns(entity)
        years = (
            f"{f['birth_year']}–{f['death_year']}"
            if "death_year" in f
            else f"born {f['birth_year']}"
        )
        article = "an" if f["occupation"][0] in "aeiou" else "a"
        parts = [
            f"{entity.name} ({years}) {'was' if 'death_year' in f else 'is'} {article} "
            f"{f['occupation']}.",
            f"{words['They']} was born in {name('birth_town')} in {f['birth_year']} and "
            f"studied at the {f['school']}.",
        ]
        if "death_year" in f:
            parts.append(f"{f['surname']} died in {f['death_year']}.")
        parts += [s.format(**words) for s in rng.sample(_PERSON_FILLERS, 2)]
    elif entity.kind == "town":
        parts = [
            f"{entity.name} is a town in {name('province')}, on the {name('river')}.",
            f"It was founded in {f['founded']} and has a population of {f['population']:,}.",
            f"The current mayor of {entity.name} is {name('mayor')}.",
            f"The town is known for {f['feature']}.",
        ]
        if "twin" in f:
            parts.append(f"{entity.name} is twinned with {name('twin')}.")
    elif entity.kind == "river":
        mouth = world.get(f["mouth"])
        parts = [
            f"The {entity.name} is a river {f['length']} km long.",
            f"It rises in the {f['source']} and flows into "
            f"{'the ' if mouth.kind == 'river' else ''}{mouth.name}.",
            rng.choice(_RIVER_FILLERS),
        ]
    elif entity.kind == "lake":
        parts = [
            f"{entity.name} is a lake in {name('province')} with an area of {f['area']} km2.",
            "Its shores are popular with anglers and walkers.",
        ]
    elif entity.kind == "province":
        parts = [
            f"{entity.name} is a province whose capital is {name('capital')}.",
            "The province is governed by an elected council that meets four times a year.",
        ]
    elif entity.kind == "company":
        industry = f["industry"]
        parts = [
            f"{entity.name} is a {industry} company founded in {f['founded']} by "
            f"{name('founder')}.",
            f"Its headquarters are in {name('hq')}.",
            rng.choice(_COMPANY_FILLERS),
        ]
    elif entity.kind == "invention":
        parts = [
            f"The {entity.name} is {f['purpose']}, invented by {name('inventor')} in {f['year']}.",
            f"It is manufactured by {name('manufacturer')}.",
            rng.choice(_INVENTION_FILLERS),
        ]
    else:  # pragma: no cover - every kind is rendered above
        raise ValueError(entity.kind)
    return " ".join(parts)


def _corpus_of(world: World, seed: int) -> list[dict[str, str]]:
    rng = random.Random(f"{seed}-documents")
    return [
        {"id": entity.id, "title": entity.name, "text": _render(world, entity, rng)}
        for entity in world.entities.values()
    ]


def generate_corpus(seed: int = 0) -> list[dict[str, str]]:
    """The corpus of the world of ``seed``: one ``{"id", "title", "text"}`` per entity."""
    return _corpus_of(generate_world(seed), seed)


@built_once
def _default_corpus() -> tuple[dict[str, str], ...]:
    return tuple(generate_corpus(0))


def default_corpus() -> list[dict[str, str]]:
    """The corpus behind the shipped tasks (seed 0; also ``datasets/search_qa/corpus.jsonl``)."""
    return [dict(doc) for doc in _default_corpus()]


# -- questions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Template:
    """A chain of fields from an entity of ``kind``: relations, then the asked field."""

    kind: str
    path: tuple[str, ...]
    questions: tuple[str, ...]  # phrasings; ``{x}`` is the start entity's name
    when: Callable[[World, Entity], bool] | None = None

    @property
    def key(self) -> str:
        return ".".join((self.kind, *self.path))


def _mouth_is_lake(world: World, entity: Entity) -> bool:
    return world.get(entity.fields["mouth"]).kind == "lake"


def _not_own_capital(world: World, town: Entity) -> bool:
    return world.get(town.fields["province"]).fields["capital"] != town.id


_TEMPLATES = (
    # one hop
    _Template("person", ("birth_year",), ("In what year was {x} born?", "When was {x} born?")),
    _Template("person", ("birth_town",), ("Where was {x} born?", "In which town was {x} born?")),
    _Template("person", ("occupation",), ("What was {x}'s occupation?",)),
    _Template("person", ("school",), ("Where did {x} study?", "Which school did {x} attend?")),
    _Template("person", ("death_year",), ("In which year did {x} die?",)),
    _Template(
        "town", ("river",), ("On which river does {x} lie?", "Which river flows through {x}?")
    ),
    _Template("town", ("province",), ("In which province is {x}?",)),
    _Template("town", ("founded",), ("When was {x} founded?", "In what year was {x} founded?")),
    _Template("town", ("mayor",), ("Who is the mayor of {x}?",)),
    _Template("river", ("length",), ("How long is the {x}?",)),
    _Template("river", ("source",), ("Where does the {x} rise?",)),
    _Template("river", ("mouth",), ("Into what does the {x} flow?",)),
    _Template("lake", ("province",), ("In which province is {x}?",)),
    _Template("province", ("capital",), ("What is the capital of {x}?",)),
    _Template("company", ("founder",), ("Who founded {x}?", "Who was the founder of {x}?")),
    _Template("company", ("founded",), ("In what year was {x} founded?",)),
    _Template("company", ("hq",), ("Where is {x} headquartered?", "In which town is {x} based?")),
    _Template("company", ("industry",), ("What industry is {x} in?",)),
    _Template("invention", ("inventor",), ("Who invented the {x}?",)),
    _Template("invention", ("year",), ("In which year was the {x} invented?",)),
    _Template("invention", ("manufacturer",), ("Which company manufactures the {x}?",)),
    # two hops
    _Template(
        "company",
        ("founder", "birth_town"),
        ("In which town was the founder of {x} born?", "Where was the founder of {x} born?"),
    ),
    _Template("company", ("founder", "birth_year"), ("In what year was the founder of {x} born?",)),
    _Template("company", ("founder", "school"), ("Where did the person who founded {x} study?",)),
    _Template(
        "company",
        ("hq", "river"),
        ("On which river lies the town where {x} has its headquarters?",),
    ),
    _Template("company", ("hq", "province"), ("In which province is {x} headquartered?",)),
    _Template("company", ("hq", "mayor"), ("Who is the mayor of the town where {x} is based?",)),
    _Template(
        "invention", ("inventor", "birth_town"), ("Where was the inventor of the {x} born?",)
    ),
    _Template(
        "invention",
        ("inventor", "birth_year"),
        ("In what year was the inventor of the {x} born?",),
    ),
    _Template(
        "invention",
        ("inventor", "occupation"),
        ("What was the occupation of the inventor of the {x}?",),
    ),
    _Template(
        "invention",
        ("manufacturer", "founder"),
        ("Who founded the company that manufactures the {x}?",),
    ),
    _Template(
        "invention",
        ("manufacturer", "hq"),
        ("Where is the manufacturer of the {x} headquartered?",),
    ),
    _Template(
        "invention",
        ("manufacturer", "founded"),
        ("In what year was the company that makes the {x} founded?",),
    ),
    _Template(
        "person",
        ("birth_town", "river"),
        ("Which river flows through the town where {x} was born?",),
    ),
    _Template("person", ("birth_town", "province"), ("In which province was {x} born?",)),
    _Template(
        "person", ("birth_town", "mayor"), ("Who is the mayor of the town where {x} was born?",)
    ),
    _Template("town", ("river", "length"), ("How long is the river on which {x} lies?",)),
    _Template("town", ("river", "source"), ("Where does the river that flows through {x} rise?",)),
    _Template("town", ("river", "mouth"), ("Into what does the river through {x} flow?",)),
    _Template(
        "town",
        ("province", "capital"),
        ("What is the capital of the province that {x} belongs to?",),
        _not_own_capital,
    ),
    _Template("town", ("mayor", "birth_town"), ("Where was the mayor of {x} born?",)),
    _Template("town", ("mayor", "birth_year"), ("In what year was the mayor of {x} born?",)),
    _Template("province", ("capital", "river"), ("On which river lies the capital of {x}?",)),
    _Template(
        "lake", ("province", "capital"), ("What is the capital of the province where {x} lies?",)
    ),
    _Template(
        "river",
        ("mouth", "province"),
        ("In which province is the lake that the {x} flows into?",),
        _mouth_is_lake,
    ),
    # three hops
    _Template(
        "company",
        ("founder", "birth_town", "river"),
        ("Which river flows through the birthplace of the founder of {x}?",),
    ),
    _Template(
        "company",
        ("founder", "birth_town", "province"),
        ("In which province was the founder of {x} born?",),
    ),
    _Template(
        "company",
        ("hq", "mayor", "birth_year"),
        ("In what year was the mayor of the town where {x} is headquartered born?",),
    ),
    _Template(
        "company",
        ("hq", "river", "length"),
        ("How long is the river that flows through the town where {x} is headquartered?",),
    ),
    _Template(
        "invention",
        ("inventor", "birth_town", "river"),
        ("On which river lies the birthplace of the inventor of the {x}?",),
    ),
    _Template(
        "invention",
        ("inventor", "birth_town", "province"),
        ("In which province was the inventor of the {x} born?",),
    ),
    _Template(
        "invention",
        ("manufacturer", "founder", "birth_town"),
        ("In which town was the founder of the company that makes the {x} born?",),
    ),
    _Template(
        "invention",
        ("manufacturer", "hq", "province"),
        ("In which province is the manufacturer of the {x} headquartered?",),
    ),
    _Template(
        "person",
        ("birth_town", "river", "length"),
        ("How long is the river that flows through the town where {x} was born?",),
    ),
    _Template(
        "person",
        ("birth_town", "mayor", "birth_year"),
        ("In what year was the mayor of {x}'s birthplace born?",),
    ),
    _Template(
        "town",
        ("mayor", "birth_town", "river"),
        ("Which river flows through the town where the mayor of {x} was born?",),
    ),
    _Template(
        "province",
        ("capital", "mayor", "birth_year"),
        ("In what year was the mayor of the capital of {x} born?",),
    ),
)


@dataclass(frozen=True)
class _Question:
    template: _Template
    text: str
    answers: tuple[str, ...]
    doc_ids: tuple[str, ...]  # one per hop, in order
    facts: frozenset[tuple[str, str]]  # (entity id, field) pairs the chain reads


def _ask(world: World, template: _Template, start: Entity, rng: random.Random) -> _Question | None:
    """Walk the template's chain from ``start``; None when the chain does not apply."""
    if template.when is not None and not template.when(world, start):
        return None
    entity, doc_ids, facts = start, [], []
    for position, name in enumerate(template.path):
        if name not in entity.fields:
            return None
        doc_ids.append(entity.id)
        facts.append((entity.id, name))
        value = entity.fields[name]
        if position < len(template.path) - 1:
            entity = world.get(value)
        elif name in entity.answers:
            answers = entity.answers[name]
        else:
            answers = world.get(value).answer_names()
    if len(set(doc_ids)) != len(doc_ids):
        return None  # a chain that comes back to a document is not a real extra hop
    text = rng.choice(template.questions).format(x=start.name)
    return _Question(template, text, tuple(answers), tuple(doc_ids), frozenset(facts))


def _answer_before_last_hop(question: _Question, texts: Mapping[str, str]) -> bool:
    """True when an earlier hop's document already shows an answer (say, a company based in
    its founder's birthplace): such a question would not need its last hop."""
    patterns = [re.compile(rf"(?<!\w){re.escape(answer)}(?!\w)") for answer in question.answers]
    return any(p.search(texts[doc_id]) for doc_id in question.doc_ids[:-1] for p in patterns)


def _hop_quota(size: int) -> list[int]:
    """Hop counts for ``size`` questions in the `HOP_WEIGHTS` mix (largest remainders)."""
    exact = {hops: weight * size for hops, weight in HOP_WEIGHTS.items()}
    counts = {hops: int(value) for hops, value in exact.items()}
    by_remainder = sorted(exact, key=lambda hops: (counts[hops] - exact[hops], hops))
    for hops in by_remainder[: size - sum(counts.values())]:
        counts[hops] += 1
    return [hops for hops, count in counts.items() for _ in range(count)]


def generate_splits(
    sizes: Mapping[str, int] | None = None, seed: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """Task rows per split over the corpus of `generate_corpus(seed)`.

    Each split has the `HOP_WEIGHTS` mix of 1/2/3-hop questions (40/35/25%). For each question
    a template of that many hops and a start entity are drawn; a question whose (template,
    entity) was asked before, that reads a fact a question of another split read, or whose
    answer an earlier hop's document already shows, is drawn again. Splits are drawn smallest
    first (test before train), so the large split gives way.
    """
    sizes = dict(DEFAULT_SIZES if sizes is None else sizes)
    for split, size in sizes.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"size of split {split!r} must be a non-negative int, got {size!r}")
    world = generate_world(seed)
    texts = {doc["id"]: doc["text"] for doc in _corpus_of(world, seed)}
    rng = random.Random(f"{seed}-questions")
    templates_by_hops: dict[int, list[_Template]] = {}
    for template in _TEMPLATES:
        templates_by_hops.setdefault(len(template.path), []).append(template)
    system_prompt = SYSTEM_PROMPT + FICTIONAL_NOTE

    asked: set[tuple[str, str]] = set()
    other_facts: set[tuple[str, str]] = set()
    splits: dict[str, list[dict[str, Any]]] = {}
    for split in sorted(sizes, key=lambda name: sizes[name]):  # stable: ties keep their order
        quota = _hop_quota(sizes[split])
        rng.shuffle(quota)
        rows: list[dict[str, Any]] = []
        facts_here: set[tuple[str, str]] = set()
        for hops in quota:
            for _ in range(100_000):
                template = rng.choice(templates_by_hops[hops])
                start = world.get(rng.choice(world.by_kind[template.kind]))
                if (template.key, start.id) in asked:
                    continue
                question = _ask(world, template, start, rng)
                if (
                    question is not None
                    and not question.facts & other_facts
                    and not _answer_before_last_hop(question, texts)
                ):
                    break
            else:
                raise ValueError(
                    f"could not draw {sizes[split]} questions for split {split!r} "
                    f"(stuck at {len(rows)}); the world is too small for these sizes"
                )
            asked.add((template.key, start.id))
            facts_here |= question.facts
            number = len(rows)
            extra_info = {
                "id": f"{CORPUS_NAME}-{split}-{number:05d}",
                "hops": hops,
                "split": split,
                "supporting_doc_ids": list(question.doc_ids),
                "corpus": CORPUS_NAME,
                "corpus_seed": seed,
                "template": template.key,
            }
            rows.append(search_task_row(question.text, question.answers, extra_info, system_prompt))
        other_facts |= facts_here
        splits[split] = rows
    return {split: splits[split] for split in sizes}


@built_once
def _default_splits() -> dict[str, tuple[dict[str, Any], ...]]:
    return {name: tuple(rows) for name, rows in generate_splits().items()}


def default_splits() -> dict[str, list[dict[str, Any]]]:
    """The shipped task set (seed 0; also written to ``datasets/search_qa``)."""
    import copy

    return {name: copy.deepcopy(list(rows)) for name, rows in _default_splits().items()}
