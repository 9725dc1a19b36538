"""An offline search provider: BM25 (via ``bm25s``) over a local document collection.

Documents are ``{"id", "title", "url", "text"}`` objects, given as a list or read from a
``.jsonl`` / ``.json`` file (optionally gzipped) or a folder holding ``corpus.jsonl``. ``title``
defaults to the id and ``url`` to ``corpus://<id>``; other keys are ignored. FlashRAG/Search-R1
corpora (``{"id", "contents"}`` with the title on the first line of ``contents``) are read too.

Ranking: title and text are tokenized the ``bm25s`` way (lowercase, words of two or more letters
or digits, English stop words removed) with a light plural-stripping stemmer (Harman's "S"
stemmer, so "rivers" finds "river"), and scored with BM25 (Lucene variant, k1=1.5, b=0.75).
Documents that share no term with the query are never returned; equal scores keep corpus order.

Snippets are the best-matching window of the text: of the windows of ``snippet_chars`` that
start at the text's start or at a sentence start, the one holding the most distinct query terms
(on ties, the one with the least text before its first match, then the earliest), cut at a word
boundary and marked with "..." where text was cut. A text that fits is its own snippet.

Costs: the index is built once per corpus content (sha256 of the documents) and shared by every
provider in the process; a provider made again from the same unchanged file skips even the
reading. With ``index_dir`` the built index is also saved there (one sub-folder per corpus
fingerprint) and loaded by later runs, so a 100k-document corpus is not re-indexed each run.
Measured in ``benchmarks/search.py``.
"""

from __future__ import annotations

import bisect
import functools
import gzip
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from tool_envs.errors import CorpusError
from tool_envs.search.base import SearchError, SearchProvider, SearchResult

__all__ = [
    "CorpusError",
    "CorpusProvider",
    "check_documents",
    "clear_index_cache",
    "read_corpus",
    "tokenize",
]

INDEX_VERSION = 1
"""Bumped whenever tokenization or scoring changes, so saved indexes and caches are not reused."""

_BM25_PARAMS = {"k1": 1.5, "b": 0.75, "method": "lucene"}
_TOKEN_PATTERN = r"(?u)\b\w\w+\b"  # the bm25s / scikit-learn default
_TOKEN_RE = re.compile(_TOKEN_PATTERN)
_SENTENCE_START = re.compile(r"(?<=[.!?])\s+(?=\S)")
_CACHE_SIZE = 4  # corpora whose index stays in memory
_PROGRESS_FROM = 20_000  # documents; show bm25s progress bars for corpora at least this big


# -- tokenization ------------------------------------------------------------------------------


def _s_stem(word: str) -> str:
    """Harman's S stemmer: strips English plurals only, so names are (almost) never mangled."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def _stem_words(words: list[str]) -> list[str]:
    return [_s_stem(word) for word in words]


@functools.lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def tokenize(texts: Sequence[str], *, show_progress: bool = False) -> list[list[str]]:
    """The index's tokens for each text (the same pipeline serves documents and queries)."""
    import bm25s

    return bm25s.tokenize(
        list(texts),
        token_pattern=_TOKEN_PATTERN,
        stopwords="en",
        stemmer=_stem_words,
        return_ids=False,
        show_progress=show_progress,
    )


# -- documents -----------------------------------------------------------------------------------


class _Doc(NamedTuple):  # a NamedTuple: 100k of them are built in a fraction of a second
    id: str
    title: str
    url: str
    text: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "title": self.title, "url": self.url, "text": self.text}


def _document(raw: Any, where: str) -> _Doc:
    """One validated document; ``where`` names it in errors ("line 7 of corpus.jsonl")."""
    if not isinstance(raw, Mapping):
        raise CorpusError(f"{where}: a document must be a JSON object, got {type(raw).__name__}")
    doc_id = raw.get("id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or str(doc_id).strip() == "":
        raise CorpusError(f"{where}: 'id' must be a non-empty string or integer, got {doc_id!r}")
    doc_id = str(doc_id)
    where = f"{where} (id {doc_id!r})"
    title, text = raw.get("title"), raw.get("text")
    if text is None and isinstance(raw.get("contents"), str):
        # FlashRAG / Search-R1 wiki corpora: '"Title"\ntext'.
        first, _, rest = raw["contents"].partition("\n")
        title = first.strip().strip('"') if title is None else title
        text = rest if rest.strip() else first
    if not isinstance(text, str) or not text.strip():
        raise CorpusError(f"{where}: 'text' is missing or empty; every document needs its text")
    if title is None:
        title = doc_id
    elif not isinstance(title, str):
        raise CorpusError(f"{where}: 'title' must be a string, got {type(title).__name__}")
    url = raw.get("url")
    if url is None:
        url = f"corpus://{doc_id}"
    elif not isinstance(url, str) or not url.strip():
        raise CorpusError(f"{where}: 'url' must be a non-empty string when given, got {url!r}")
    return _Doc(doc_id, title, url.strip(), text)


def _documents(items: Iterable[tuple[Any, str]], source: str) -> tuple[_Doc, ...]:
    """Validate ``(raw, where)`` pairs; ids and urls must be unique."""
    docs: list[_Doc] = []
    seen_ids: dict[str, str] = {}
    seen_urls: dict[str, str] = {}
    for raw, where in items:
        doc = _document(raw, where)
        if doc.id in seen_ids:
            raise CorpusError(
                f"{where}: duplicate document id {doc.id!r} (first at {seen_ids[doc.id]})"
            )
        if doc.url in seen_urls:
            raise CorpusError(
                f"{where}: duplicate url {doc.url!r} (first at {seen_urls[doc.url]}); "
                "open_page needs one document per url"
            )
        seen_ids[doc.id] = seen_urls[doc.url] = where
        docs.append(doc)
    if not docs:
        raise CorpusError(f"{source} holds no documents")
    return tuple(docs)


def check_documents(documents: Any) -> tuple[_Doc, ...]:
    """Validate a list of document dicts (CorpusError names the document and the key).

    Cheap next to indexing, so envs run it on every row that brings its own documents when the
    task set is loaded, before any episode.
    """
    if isinstance(documents, (str, bytes, Mapping)) or not isinstance(documents, Sequence):
        raise CorpusError(
            f"documents must be a list of document dicts, got {type(documents).__name__}"
        )
    return _documents(((raw, f"document {i}") for i, raw in enumerate(documents)), "documents")


def _corpus_file(path: Path) -> Path:
    if path.is_dir():
        for name in ("corpus.jsonl", "corpus.jsonl.gz", "corpus.json"):
            if (path / name).is_file():
                return path / name
        raise FileNotFoundError(f"corpus folder {str(path)!r} holds no corpus.jsonl")
    if not path.exists():
        raise FileNotFoundError(f"corpus file {str(path)!r} does not exist")
    return path


def _read_file(path: Path) -> tuple[_Doc, ...]:
    name = path.name.lower().removesuffix(".gz")
    if not name.endswith((".jsonl", ".json")):
        raise CorpusError(f"unsupported corpus file {str(path)!r}: expected .jsonl or .json")
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            if name.endswith(".json"):
                return _read_json(handle.read(), path)
            return _documents(_jsonl_items(handle, path), str(path))
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path} is not UTF-8 text ({exc.reason})") from None
    except (OSError, EOFError) as exc:
        raise CorpusError(f"cannot read corpus file {str(path)!r}: {exc}") from None


def _jsonl_items(lines: Iterable[str], path: Path) -> Iterable[tuple[Any, str]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {number} of {path}"
        try:
            yield json.loads(line), where
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{where}: not valid JSON ({exc.msg})") from None


def _read_json(text: str, path: Path) -> tuple[_Doc, ...]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if isinstance(data, Mapping) and isinstance(data.get("documents"), list):
        data = data["documents"]
    if not isinstance(data, list):
        raise CorpusError(f"{path}: expected a JSON list of documents (or {{'documents': [...]}})")
    return _documents(((raw, f"document {i} of {path}") for i, raw in enumerate(data)), str(path))


def read_corpus(path: str | os.PathLike[str]) -> list[dict[str, str]]:
    """The validated documents of a corpus file or folder, with defaults filled in."""
    return [doc.to_json() for doc in _read_file(_corpus_file(Path(path).expanduser()))]


def _fingerprint(docs: Sequence[_Doc]) -> str:
    """sha256 over each document's fields, each prefixed by its length (unambiguous)."""
    digest = hashlib.sha256()
    for doc in docs:
        lengths = ",".join(str(len(part)) for part in doc)
        digest.update(f"{lengths};{doc.id}{doc.title}{doc.url}{doc.text}".encode())
    return digest.hexdigest()


# -- the index -----------------------------------------------------------------------------------


class _Index:
    """Documents plus their BM25 index; immutable and shared by every provider of the corpus."""

    def __init__(self, docs: tuple[_Doc, ...], fingerprint: str, retriever: Any):
        self.docs = docs
        self.fingerprint = fingerprint
        self.retriever = retriever
        self.vocab: dict[str, int] = retriever.vocab_dict
        self.by_url = {doc.url: position for position, doc in enumerate(docs)}
        self.by_id = {doc.id: position for position, doc in enumerate(docs)}

    def top(self, tokens: list[str], k: int) -> list[tuple[int, float]]:
        """``(position, score)`` of the best ``k`` documents with a positive score, best first;
        equal scores in corpus order."""
        ids = [self.vocab[token] for token in tokens if token in self.vocab]
        if not ids:
            return []
        # bm25s scores; the top-k is ours: `BM25.retrieve` sets up progress bars on every call
        # and runs np.argpartition over all scores, which takes ~6 ms on 100k documents when
        # most scores are 0 (a query with rare terms). Only positive scores can be results.
        scores = self.retriever.get_scores_from_ids(ids)
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > k:
            values = scores[candidates]
            kth = values[np.argpartition(-values, k - 1)[:k]].min()
            candidates = candidates[values >= kth]  # ties with the k-th stay, for the order
        order = np.lexsort((candidates, -scores[candidates]))[:k]
        return [(int(candidates[i]), float(scores[candidates[i]])) for i in order]


_CACHE: OrderedDict[str, _Index] = OrderedDict()
_FILE_CACHE: dict[tuple[str, int, int], str] = {}  # (path, mtime_ns, size) -> fingerprint
_LOCK = threading.Lock()


def clear_index_cache() -> None:
    """Forget the indexes built in this process (the next provider reads and indexes again)."""
    with _LOCK:
        _CACHE.clear()
        _FILE_CACHE.clear()


def _remember(index: _Index) -> _Index:
    _CACHE[index.fingerprint] = index
    _CACHE.move_to_end(index.fingerprint)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return index


def _build_retriever(docs: Sequence[_Doc]) -> Any:
    import bm25s

    show = len(docs) >= _PROGRESS_FROM
    texts = [f"{doc.title}\n{doc.text}" for doc in docs]
    tokenized = bm25s.tokenize(
        texts,
        token_pattern=_TOKEN_PATTERN,
        stopwords="en",
        stemmer=_stem_words,
        return_ids=True,
        show_progress=show,
    )
    retriever = bm25s.BM25(**_BM25_PARAMS)
    retriever.index(tokenized, show_progress=show)
    return retriever


def _saved_index_dir(index_dir: Path, fingerprint: str) -> Path:
    return index_dir / f"bm25s-v{INDEX_VERSION}-{fingerprint[:32]}"


def _load_saved(folder: Path, fingerprint: str, num_docs: int) -> Any | None:
    """The saved retriever if ``folder`` holds a complete index of this corpus, else None."""
    import bm25s

    try:
        meta = json.loads((folder / "tool_envs.json").read_text(encoding="utf-8"))
        if meta.get("fingerprint") != fingerprint or meta.get("index_version") != INDEX_VERSION:
            return None
        retriever = bm25s.BM25.load(str(folder), load_corpus=False, show_progress=False)
    except Exception:  # missing, partial or foreign files: rebuild (and overwrite) instead
        return None
    if retriever.scores.get("num_docs") != num_docs:
        return None
    return retriever


def _save(retriever: Any, folder: Path, fingerprint: str, num_docs: int) -> None:
    """Write into a temporary sibling and rename, so readers never see half an index."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        retriever.save(str(tmp), show_progress=False)
        meta = {"fingerprint": fingerprint, "index_version": INDEX_VERSION, "num_docs": num_docs}
        (tmp / "tool_envs.json").write_text(json.dumps(meta), encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    except OSError:
        if folder.exists():  # another process won the race with a complete index
            return
        raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _index_for(docs: tuple[_Doc, ...], fingerprint: str, index_dir: Path | None) -> _Index:
    cached = _CACHE.get(fingerprint)
    if cached is not None:
        return _remember(cached)
    retriever = None
    if index_dir is not None:
        folder = _saved_index_dir(index_dir, fingerprint)
        retriever = _load_saved(folder, fingerprint, len(docs))
    if retriever is None:
        retriever = _build_retriever(docs)
        if index_dir is not None:
            _save(retriever, folder, fingerprint, len(docs))
    return _remember(_Index(docs, fingerprint, retriever))


# -- snippets ------------------------------------------------------------------------------------


def _surface_forms(terms: frozenset[str]) -> frozenset[str]:
    """Every lowercase word that `_s_stem` can map onto one of ``terms``."""
    forms = set(terms)
    for term in terms:
        forms.add(term + "s")
        if term.endswith("y"):
            forms.add(term[:-1] + "ies")
    return frozenset(forms)


@dataclass(frozen=True)
class _Query:
    """A query's index tokens, and the words that stem to its terms (to find them in text)."""

    tokens: list[str]
    terms: frozenset[str]
    forms: tuple[tuple[str, str], ...]  # (lowercase word, the term it stems to)

    @classmethod
    def parse(cls, text: str, stopwords: frozenset[str]) -> _Query:
        # Same steps as `tokenize` (lowercase, split, drop stop words, stem), without the
        # per-call set-up of bm25s.tokenize, which costs more than a whole search.
        tokens = [_s_stem(w) for w in _TOKEN_RE.findall(text.lower()) if w not in stopwords]
        terms = frozenset(tokens)
        forms = tuple(
            (form, _s_stem(form))
            for form in sorted(_surface_forms(terms))
            if form not in stopwords and _s_stem(form) in terms
        )
        return cls(tokens, terms, forms)


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _term_hits(text: str, query: _Query, stopwords: frozenset[str]) -> list[tuple[int, str]]:
    """``(offset, term)`` of every whole word in ``text`` that stems to a query term."""
    lower = text.lower()
    if len(lower) != len(text):  # lowercasing moved offsets (rare letters): tokenize instead
        return [
            (match.start(), term)
            for match in _TOKEN_RE.finditer(text)
            if (word := match.group().lower()) not in stopwords
            and (term := _s_stem(word)) in query.terms
        ]
    hits = []
    for form, term in query.forms:  # str.find is far cheaper than a regex compiled per query
        start = lower.find(form)
        while start != -1:
            end = start + len(form)
            if (start == 0 or not _is_word_char(lower[start - 1])) and (
                end == len(lower) or not _is_word_char(lower[end])
            ):
                hits.append((start, term))
            start = lower.find(form, end)
    hits.sort()
    return hits


def _snippet(text: str, query: _Query, chars: int, stopwords: frozenset[str]) -> str:
    """The window of ``chars`` characters holding the most distinct query terms (see module)."""
    if len(text) <= chars:
        return text
    best = 0
    if query.terms:
        hits = _term_hits(text, query, stopwords)
        if hits:
            starts = [0] + [match.end() for match in _SENTENCE_START.finditer(text)]
            offsets = [offset for offset, _ in hits]
            best_key = (0, 0)
            for start in starts:
                first = bisect.bisect_left(offsets, start)
                last = bisect.bisect_left(offsets, start + chars - 1)
                if first == last:
                    continue
                # Most distinct terms; then the least text before the first of them.
                key = (len({term for _, term in hits[first:last]}), start - offsets[first])
                if key > best_key:
                    best, best_key = start, key
    window = text[best : best + chars]
    if best + chars < len(text):
        cut = window.rfind(" ")
        window = (window[:cut] if cut > chars // 2 else window).rstrip() + " ..."
    return ("... " if best > 0 else "") + window.strip()


# -- the provider --------------------------------------------------------------------------------


class CorpusProvider(SearchProvider):
    """Offline search over a local corpus with BM25 (see the module docstring).

    Give exactly one of ``documents`` (a list of document dicts) or ``path`` (a ``.jsonl`` /
    ``.json`` file, optionally ``.gz``, or a folder with ``corpus.jsonl``). ``index_dir`` is a
    folder where built indexes are saved and found again (one sub-folder per corpus content).
    ``snippet_chars`` is the length of each result's snippet.

    ``search`` returns title, url, snippet, the document's full text as ``content``, and the
    BM25 score; ``open_page(url)`` returns a document's text (None for a url not in the
    corpus); ``cache_params()`` holds the corpus fingerprint, so a search cache never mixes
    answers from different corpora. Raises `CorpusError` for a bad corpus and
    ``FileNotFoundError`` for a missing path.
    """

    name = "corpus"

    def __init__(
        self,
        documents: Sequence[Mapping[str, Any]] | None = None,
        path: str | os.PathLike[str] | None = None,
        index_dir: str | os.PathLike[str] | None = None,
        snippet_chars: int = 300,
    ):
        if (documents is None) == (path is None):
            raise CorpusError("give exactly one of documents= (a list of dicts) or path=")
        if isinstance(snippet_chars, bool) or not isinstance(snippet_chars, int):
            raise CorpusError(f"snippet_chars must be an integer, got {snippet_chars!r}")
        if snippet_chars < 20:
            raise CorpusError(f"snippet_chars must be at least 20, got {snippet_chars}")
        self.snippet_chars = snippet_chars
        directory = None if index_dir is None else Path(index_dir).expanduser()
        with _LOCK:
            if path is not None:
                self._index = self._from_file(Path(path).expanduser(), directory)
            else:
                self._index = self._from_documents(documents, directory)
        self._stopwords = _stopwords()

    @staticmethod
    def _from_documents(documents: Any, index_dir: Path | None) -> _Index:
        docs = check_documents(documents)
        return _index_for(docs, _fingerprint(docs), index_dir)

    @staticmethod
    def _from_file(path: Path, index_dir: Path | None) -> _Index:
        file = _corpus_file(path)
        try:
            stat = file.stat()
        except OSError as exc:
            raise CorpusError(f"cannot read corpus file {str(file)!r}: {exc}") from None
        key = (str(file.resolve()), stat.st_mtime_ns, stat.st_size)
        fingerprint = _FILE_CACHE.get(key)
        if fingerprint is not None and fingerprint in _CACHE:
            return _remember(_CACHE[fingerprint])
        docs = _read_file(file)
        fingerprint = _fingerprint(docs)
        _FILE_CACHE[key] = fingerprint
        return _index_for(docs, fingerprint, index_dir)

    # -- public ----------------------------------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        """sha256 of the documents (ids, titles, urls, texts, in order)."""
        return self._index.fingerprint

    def __len__(self) -> int:
        return len(self._index.docs)

    def document(self, doc_id: str) -> dict[str, str] | None:
        """``{"id", "title", "url", "text"}`` of a document, or None if no such id."""
        position = self._index.by_id.get(str(doc_id))
        return None if position is None else self._index.docs[position].to_json()

    def search(self, query: str, max_results: int = 5) -> list[SearchResult]:
        if not isinstance(query, str) or not query.strip():
            raise SearchError("the search query is empty; write a few words to search for")
        if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 1:
            raise SearchError(f"max_results must be a positive integer, got {max_results!r}")
        parsed = _Query.parse(query, self._stopwords)
        results = []
        for position, score in self._index.top(parsed.tokens, max_results):
            doc = self._index.docs[position]
            snippet = _snippet(doc.text, parsed, self.snippet_chars, self._stopwords)
            results.append(SearchResult(doc.title, doc.url, snippet, doc.text, round(score, 4)))
        return results

    def open_page(self, url: str) -> str | None:
        if not isinstance(url, str):
            return None
        position = self._index.by_url.get(url.strip())
        return None if position is None else self._index.docs[position].text

    def cache_params(self) -> dict[str, Any]:
        return {
            "corpus_sha256": self._index.fingerprint,
            "index_version": INDEX_VERSION,
            "snippet_chars": self.snippet_chars,
        }
