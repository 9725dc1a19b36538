"""Offline corpus search (CorpusProvider), the fictional QA generator, its shipped dataset, and
the Search-R1-format QA loader."""

import gzip
import itertools
import json
import re

import pandas as pd
import pytest
from dataset_helpers import check_committed_dataset

from tool_envs.data import validate_row
from tool_envs.errors import TaskRowError
from tool_envs.search.base import SearchError, SearchProvider
from tool_envs.search.corpus import CorpusError, CorpusProvider, clear_index_cache, read_corpus
from tool_envs.search.loaders import load_search_qa
from tool_envs.search.qa import (
    ENV_ID,
    default_corpus,
    default_splits,
    generate_corpus,
    generate_splits,
)

DOCS = [
    {
        "id": "dunhallow",
        "title": "Dunhallow",
        "text": "Dunhallow is a town on the Orlen River. It was founded in 1412 by fishermen.",
    },
    {
        "id": "orlen",
        "title": "Orlen River",
        "url": "https://example.org/orlen",
        "text": "The Orlen River is 214 km long. It rises in the Kessel Hills and flows into "
        "Lake Surrow.",
    },
    {
        "id": "kessel",
        "title": "Kessel Hills",
        "text": "The Kessel Hills are low hills covered in heather. Several rivers rise there.",
    },
    {"id": "cats", "title": "Cats", "text": "Cats are small animals that live near towns."},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# -- CorpusProvider ----------------------------------------------------------------------------


def test_search_ranks_the_document_with_the_rare_terms_first():
    provider = CorpusProvider(DOCS)
    assert isinstance(provider, SearchProvider) and len(provider) == 4
    # "heather" is in one document only; "town" and "river" are in several.
    results = provider.search("Which town by a river has hills with heather?", 4)
    assert results[0].title == "Kessel Hills" and len(results) == 4
    assert all(a.score >= b.score > 0 for a, b in itertools.pairwise(results))
    top = provider.search("Orlen 214 km", 5)[0]
    assert (top.title, top.url) == ("Orlen River", "https://example.org/orlen")
    assert top.content == DOCS[1]["text"] and top.snippet == DOCS[1]["text"]  # short: whole
    assert provider.search("Dunhallow", 5)[0].url == "corpus://dunhallow"  # default url
    assert len(provider.search("town", 1)) == 1  # max_results
    assert provider.search("zebra quasar", 5) == []  # no shared term, no result
    assert provider.search("the of and", 5) == []  # stop words only


def test_query_tokens_match_the_index_tokenizer_and_ties_keep_corpus_order():
    from tool_envs.search.corpus import _Query, _stopwords, tokenize

    for text in ["Where do the Rivers of Kessel rise?", "cities, boxes & buses 1870s", "Ça île"]:
        assert _Query.parse(text, _stopwords()).tokens == tokenize([text])[0]
    twins = [{"id": str(i), "text": "the same words again"} for i in range(6)]
    assert [r.url for r in CorpusProvider(twins).search("words", 4)] == [
        f"corpus://{i}" for i in range(4)
    ]


def test_open_page_and_document_lookup():
    provider = CorpusProvider(DOCS)
    assert provider.open_page("https://example.org/orlen") == DOCS[1]["text"]
    assert provider.open_page(" corpus://cats ") == DOCS[3]["text"]
    assert provider.open_page("corpus://nope") is None
    assert provider.document("dunhallow")["url"] == "corpus://dunhallow"
    assert provider.document("missing") is None


def test_bad_queries_are_search_errors_for_the_model():
    provider = CorpusProvider(DOCS)
    for query, max_results in [("", 5), ("   ", 5), (None, 5), ("town", 0), ("town", True)]:
        with pytest.raises(SearchError):
            provider.search(query, max_results)


def test_snippet_is_the_best_matching_window():
    filler = " ".join(f"Sentence {i} talks about weather and crops." for i in range(30))
    text = f"{filler} The Brennic lighthouse was built in 1777. {filler}"
    provider = CorpusProvider([{"id": "long", "text": text}], snippet_chars=120)
    result = provider.search("When was the Brennic lighthouse built?", 1)[0]
    assert result.snippet.startswith("... The Brennic lighthouse was built in 1777.")
    assert result.snippet.endswith(" ...") and len(result.snippet) <= 120 + 8
    assert result.content == text
    plain = provider.search("weather", 1)[0].snippet
    assert plain.startswith("Sentence 0") and plain.endswith(" ...")  # earliest best window
    # "İ" lowercases to two characters, so offsets come from the tokenizer instead.
    dotted = CorpusProvider([{"id": "x", "text": f"İzmir. {filler} Brennic lights. {filler}"}])
    assert "Brennic lights." in dotted.search("brennic", 1)[0].snippet


def test_fingerprint_tracks_content_and_files_match_lists(tmp_path):
    provider = CorpusProvider(DOCS)
    assert provider.cache_params()["corpus_sha256"] == provider.fingerprint
    assert CorpusProvider(list(DOCS)).fingerprint == provider.fingerprint
    changed = [*DOCS[:3], {**DOCS[3], "text": "Cats are large animals."}]
    assert CorpusProvider(changed).fingerprint != provider.fingerprint

    jsonl = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    (tmp_path / "docs.json").write_text(json.dumps(DOCS), encoding="utf-8")
    with gzip.open(tmp_path / "docs.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(jsonl.read_text())
    folder = tmp_path / "folder"
    folder.mkdir()
    write_jsonl(folder / "corpus.jsonl", DOCS)
    for path in ["docs.jsonl", "docs.json", "docs.jsonl.gz", "folder"]:
        from_file = CorpusProvider(path=tmp_path / path)
        assert from_file.fingerprint == provider.fingerprint, path
        assert from_file.search("Kessel", 1)[0].title == "Kessel Hills"
    assert read_corpus(jsonl)[0] == {**DOCS[0], "url": "corpus://dunhallow"}


def test_flashrag_contents_format(tmp_path):
    path = write_jsonl(
        tmp_path / "wiki.jsonl",
        [
            {"id": "0", "contents": '"Aaron"\nAaron is a prophet in the Hebrew Bible.'},
            {"id": 1, "contents": '"Ziggurat"\nA ziggurat is a terraced structure.'},
        ],
    )
    result = CorpusProvider(path=path).search("terraced structure", 1)[0]
    assert (result.title, result.url) == ("Ziggurat", "corpus://1")
    assert result.content == "A ziggurat is a terraced structure."


def test_index_dir_saves_once_and_later_runs_load_it(tmp_path, monkeypatch):
    from tool_envs.search import corpus

    expected = [r.to_json() for r in CorpusProvider(DOCS).search("Orlen river hills", 4)]
    clear_index_cache()
    CorpusProvider(DOCS, index_dir=tmp_path)
    saved = list(tmp_path.iterdir())
    assert len(saved) == 1 and (saved[0] / "tool_envs.json").is_file()

    clear_index_cache()  # a new process: must load, not build
    monkeypatch.setattr(corpus, "_build_retriever", lambda docs: pytest.fail("rebuilt"))
    loaded = CorpusProvider(DOCS, index_dir=tmp_path)
    assert [r.to_json() for r in loaded.search("Orlen river hills", 4)] == expected
    monkeypatch.undo()

    (saved[0] / "vocab.index.json").write_text("{broken", encoding="utf-8")  # damaged: rebuild
    clear_index_cache()
    again = CorpusProvider(DOCS, index_dir=tmp_path)
    assert [r.to_json() for r in again.search("Orlen river hills", 4)] == expected
    assert json.loads((saved[0] / "vocab.index.json").read_text())  # rewritten whole


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"id": "a", "title": "A"}'], r"line 1 of .*\(id 'a'\): 'text' is missing"),
        (['{"id": "a", "text": "x"}', '{"id": "a", "text": "y"}'], r"line 2 .*duplicate.*line 1"),
        (['{"id": "a", "text": "x"}', "", "{oops"], r"line 3 of .*not valid JSON"),
        (['{"text": "x"}'], r"line 1 of .*'id' must be"),
        (['{"id": "a", "text": "x", "url": "u"}', '{"id": "b", "text": "y", "url": "u"}'], "url"),
        (["[1, 2]"], "must be a JSON object"),
        (["", "  "], "holds no documents"),
    ],
)
def test_bad_corpus_files_name_the_line(tmp_path, lines, message):
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=message):
        CorpusProvider(path=path)


def test_bad_corpus_arguments(tmp_path):
    with pytest.raises(CorpusError, match="exactly one"):
        CorpusProvider()
    with pytest.raises(CorpusError, match="exactly one"):
        CorpusProvider(DOCS, path=tmp_path)
    with pytest.raises(CorpusError, match="holds no documents"):
        CorpusProvider([])
    with pytest.raises(CorpusError, match=r"document 1 .*'text'"):
        CorpusProvider([DOCS[0], {"id": "x", "text": "  "}])
    with pytest.raises(CorpusError, match="list of document dicts"):
        CorpusProvider("not a list")
    with pytest.raises(CorpusError, match="snippet_chars"):
        CorpusProvider(DOCS, snippet_chars=5)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        CorpusProvider(path=tmp_path / "missing.jsonl")
    with pytest.raises(FileNotFoundError, match=r"no corpus\.jsonl"):
        CorpusProvider(path=tmp_path)
    (tmp_path / "bad.jsonl.gz").write_bytes(b"not gzip at all")
    with pytest.raises(CorpusError, match="cannot read"):
        CorpusProvider(path=tmp_path / "bad.jsonl.gz")
    (tmp_path / "latin.jsonl").write_bytes(b'{"id": "a", "text": "caf\xe9"}\n')
    with pytest.raises(CorpusError, match="not UTF-8"):
        CorpusProvider(path=tmp_path / "latin.jsonl")
    (tmp_path / "docs.csv").write_text("id,text\n")
    with pytest.raises(CorpusError, match="unsupported"):
        CorpusProvider(path=tmp_path / "docs.csv")
    (tmp_path / "list.json").write_text('{"docs": []}')
    with pytest.raises(CorpusError, match="expected a JSON list"):
        CorpusProvider(path=tmp_path / "list.json")


# -- the fictional QA generator ---------------------------------------------------------------


def _facts(row):
    """(document id, field) pairs a question reads, from its template and supporting docs."""
    fields = row["extra_info"]["template"].split(".")[1:]
    return set(zip(row["extra_info"]["supporting_doc_ids"], fields, strict=True))


def test_generator_is_deterministic_and_seeded():
    assert generate_corpus(3) == generate_corpus(3)
    assert generate_corpus(3) != generate_corpus(4)
    sizes = {"train": 150, "test": 50}
    splits = generate_splits(sizes, seed=3)
    assert splits == generate_splits(sizes, seed=3)
    assert splits != generate_splits(sizes, seed=4)
    assert [len(rows) for rows in splits.values()] == [150, 50]


def test_shipped_splits_have_sizes_hop_mix_and_share_no_question_or_fact():
    splits = default_splits()
    assert list(splits) == ["train", "test"]
    expected = {"train": {1: 800, 2: 700, 3: 500}, "test": {1: 160, 2: 140, 3: 100}}
    questions, facts = {}, {}
    for split, rows in splits.items():
        hops = [row["extra_info"]["hops"] for row in rows]
        assert {h: hops.count(h) for h in (1, 2, 3)} == expected[split]
        questions[split] = {row["prompt"][-1]["content"] for row in rows}
        assert len(questions[split]) == len(rows)  # no duplicate question within a split
        facts[split] = set().union(*(_facts(row) for row in rows))
        assert len({row["extra_info"]["id"] for row in rows}) == len(rows)
    assert not questions["train"] & questions["test"]
    assert not facts["train"] & facts["test"]


def test_answers_are_in_the_supporting_documents_and_chains_link_up():
    documents = {doc["id"]: doc for doc in default_corpus()}
    for rows in default_splits().values():
        for row in rows:
            assert validate_row(row)["env_id"] == ENV_ID
            info, question = row["extra_info"], row["prompt"][-1]["content"]
            docs = [documents[doc_id] for doc_id in info["supporting_doc_ids"]]
            assert len(docs) == info["hops"] and info["corpus"] == "search_qa"
            answers = row["reward_spec"]["answers"]
            assert answers and all(isinstance(a, str) and a for a in answers)
            for answer in answers:
                assert answer in docs[-1]["text"], (question, answer, docs[-1])
            # The question names the first hop's entity, and that document names it too.
            assert docs[0]["title"] in question and docs[0]["title"] in docs[0]["text"]
            # Each document names the entity whose document is the next hop.
            for here, after in itertools.pairwise(docs):
                assert after["title"] in here["text"], (question, here, after)


def test_multi_hop_needs_every_document():
    """Documents state relations forwards only, and no earlier hop shows the answer."""
    documents = {doc["id"]: doc for doc in default_corpus()}
    for rows in default_splits().values():
        for row in rows:
            doc_ids = row["extra_info"]["supporting_doc_ids"]
            for doc_id, answer in itertools.product(doc_ids[:-1], row["reward_spec"]["answers"]):
                assert not re.search(
                    rf"(?<!\w){re.escape(answer)}(?!\w)", documents[doc_id]["text"]
                )


def test_bm25_finds_each_hop_of_the_shipped_questions():
    provider = CorpusProvider(default_corpus())
    documents = {doc["id"]: doc for doc in default_corpus()}
    rows = default_splits()["test"]
    first_hits = sum(
        f"corpus://{row['extra_info']['supporting_doc_ids'][0]}"
        in {r.url for r in provider.search(row["prompt"][-1]["content"], 5)}
        for row in rows
    )
    assert first_hits >= 0.95 * len(rows)
    for row in rows[:100]:  # every bridge entity is found by its name
        for doc_id in row["extra_info"]["supporting_doc_ids"][1:]:
            assert provider.search(documents[doc_id]["title"], 1)[0].url == f"corpus://{doc_id}"


def test_committed_dataset_matches_its_builder_and_loads(tmp_path):
    rows = default_splits()["test"]
    committed = check_committed_dataset(tmp_path, "search_qa", rows, ("corpus.jsonl",))
    shipped = CorpusProvider(path=committed)
    assert shipped.fingerprint == CorpusProvider(default_corpus()).fingerprint
    assert (committed / "corpus.jsonl").stat().st_size < 5_000_000


# -- Search-R1 / NQ / HotpotQA loader ----------------------------------------------------------

SEARCH_R1_ROWS = [
    {
        "id": "train_0",
        "question": "total number of death row inmates in the us",
        "golden_answers": ["2,718"],
        "data_source": "nq",
        "ability": "fact-reasoning",
        "reward_model": {"style": "rule", "ground_truth": {"target": ["2,718"]}},
        "extra_info": {"split": "train", "index": 0},
    },
    {
        "id": "train_1",
        "question": "  big little lies season 2 how many episodes?",
        "golden_answers": ["seven", " seven", "7"],
        "data_source": "hotpotqa",
        "ability": "fact-reasoning",
        "reward_model": {"style": "rule", "ground_truth": {"target": ["seven", "7"]}},
        "extra_info": {"split": "train", "index": 1},
    },
]


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_loader_reads_search_r1_files(tmp_path, kind):
    path = tmp_path / f"nq_hotpotqa.{kind}"
    if kind == "jsonl":
        write_jsonl(path, SEARCH_R1_ROWS)
    else:
        pd.DataFrame(SEARCH_R1_ROWS).to_parquet(path)
    rows = load_search_qa(str(path))
    assert [validate_row(row) for row in rows] == rows
    first, second = rows
    assert first["env_id"] == ENV_ID
    assert (
        first["prompt"][0]["role"] == "system" and "search(query" in first["prompt"][0]["content"]
    )
    assert first["prompt"][1] == {
        "role": "user",
        "content": "total number of death row inmates in the us?",
    }
    assert first["reward_spec"] == {"answers": ["2,718"]}
    assert second["reward_spec"] == {"answers": ["seven", "7"]}
    assert second["prompt"][1]["content"] == "big little lies season 2 how many episodes?"
    assert second["extra_info"] == {
        "id": "train_1",
        "split": "train",
        "source": "nq_hotpotqa",
        "data_source": "hotpotqa",
    }
    assert load_search_qa(path, split="test", limit=1)[0]["extra_info"]["split"] == "test"


def test_loader_reads_plain_dumps_and_folders(tmp_path):
    folder = tmp_path / "hotpot"
    (folder / "data").mkdir(parents=True)
    write_jsonl(
        folder / "data" / "validation.jsonl",
        [{"id": "5a8b", "question": "Which is older?", "answer": "Ada", "level": "hard"}],
    )
    rows = load_search_qa(str(folder), split="validation")
    assert rows[0]["reward_spec"] == {"answers": ["Ada"]}
    assert rows[0]["extra_info"] == {
        "id": "5a8b",
        "split": "validation",
        "source": "hotpot",
        "level": "hard",
    }
    nq_open = [{"question": "where is x", "answer": ["A", "B"]}, {"question": "q2", "answers": 7}]
    converted = load_search_qa(nq_open)
    assert [row["reward_spec"]["answers"] for row in converted] == [["A", "B"], ["7"]]
    assert converted[1]["extra_info"]["id"] == "qa-1"
    trivia = [{"question": "q?", "answer": {"value": "Paris", "aliases": ["paris", "Paris"]}}]
    assert load_search_qa(trivia)[0]["reward_spec"]["answers"] == ["Paris", "paris"]


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({"golden_answers": ["a"]}, "question", "is missing"),
        ({"question": "  ", "golden_answers": ["a"]}, "question", "non-empty string"),
        ({"question": "q"}, "golden_answers", "needs one of"),
        ({"question": "q", "golden_answers": []}, "golden_answers", "no non-empty answer"),
        ({"question": "q", "golden_answers": ["", " "]}, "golden_answers", "no non-empty"),
        ({"question": "q", "answer": [["nested"]]}, "answer", "answer 0 must be a string"),
        ({"question": "q", "answers": {"x": 1}}, "answers", "string or a list"),
    ],
)
def test_loader_errors_name_row_and_field(tmp_path, row, field, message):
    good = {"question": "fine?", "golden_answers": ["yes"]}
    with pytest.raises(TaskRowError, match=message) as caught:
        load_search_qa([good, row])
    assert (caught.value.index, caught.value.field) == (1, field)
    path = write_jsonl(tmp_path / "bad.jsonl", [good, {"question": 5, "golden_answers": ["a"]}])
    with pytest.raises(TaskRowError, match=r"bad\.jsonl: row 1, field 'question'"):
        load_search_qa(path)
    with pytest.raises(FileNotFoundError):
        load_search_qa(str(tmp_path / "missing.parquet"))
    with pytest.raises(ValueError, match="limit"):
        load_search_qa([good], limit=-1)
