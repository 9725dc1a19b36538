"""Which act an agent message asks of the user, learned from labelled agent messages.

The rules of :mod:`~tool_envs.tau.users.reading` find the fields a message names, but whether it
asks, asks for approval, reports, holds on or asks the user to act on their phone is worded in
more ways than rules can list: scored on files of agent messages they were never tuned on, the
rules read 89-95% of the acts right. A linear classifier over word and character n-grams,
trained on the labelled wordings shipped in ``wordings/`` (5,840 agent messages over the
five tau domains and tau2's, each labelled with its act), reads 98.3-100% of each file it was
not trained on right (``benchmarks/user_wordings.py`` leaves each file out in turn), and 94.6%
of a file in five voices none of them has (``heldback_m``). So the act is the classifier's and
the fields are the rules': :func:`read_turn`. Where the classifier reads an ask and the rules
find no field's words, per-field models over the same n-grams pick the likeliest field
(:func:`likeliest_field`).

The models are trained on first use in each process (about 3 s on one core each) and kept;
training is deterministic for one scikit-learn release. Scoring a message goes through
:class:`TextFeatures`, the fitted n-gram vectorizers' numbers computed for one message at a time.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tool_envs.core.once import built_once
from tool_envs.tau.users.reading import Reading, Vocabulary, read_message

Act = Literal["ask", "confirm", "anything_else", "end", "open", "device"]
ACTS: tuple[Act, ...] = ("ask", "confirm", "anything_else", "end", "open", "device")

WORDINGS = Path(__file__).parent / "wordings"
"""The labelled agent messages the classifier learns from (one JSON object a line: ``message``,
``act``, and for an ask its ``fields``); ``tests/data/user_wordings/README.md`` says how each
file was written."""


def load_wordings(paths: Iterable[Path] | None = None) -> list[dict[str, Any]]:
    """The labelled messages of ``paths`` (default: every file of :data:`WORDINGS`)."""
    paths = sorted(WORDINGS.glob("*.jsonl")) if paths is None else list(paths)
    cases = []
    for path in paths:
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                case = json.loads(line)
                if case.get("act") not in ACTS or not isinstance(case.get("message"), str):
                    raise ValueError(
                        f"{path}:{number}: a wording needs a 'message' string and an 'act' in "
                        f"{ACTS}, got act {case.get('act')!r}"
                    )
                cases.append(case)
    return cases


def train_act_classifier(cases: Sequence[Mapping[str, Any]]) -> Any:
    """A scikit-learn pipeline that maps an agent message to its act, fitted on ``cases``.

    Word unigrams and bigrams catch the request's words ("could you", "shall I", "anything
    else"); character n-grams within words catch spellings and shorthand ("pls", "u", "acct").
    """
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    if not cases:
        raise ValueError("train_act_classifier needs labelled wordings, got none")
    model = make_pipeline(_ngrams(), LinearSVC(C=1.0, random_state=0))
    return model.fit([case["message"] for case in cases], [case["act"] for case in cases])


def _ngrams() -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import make_union

    return make_union(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
        TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True),
    )


@dataclasses.dataclass(frozen=True)
class TextFeatures:
    """The features of a fitted union of ``_ngrams()``'s vectorizers (sublinear tf times idf,
    each vectorizer's part scaled to unit length, the parts side by side), for one message.

    scikit-learn's ``transform`` of a single message spent ~0.8 ms a vectorizer validating and
    building sparse matrices, on every user turn of every tau episode; the same numbers cost
    ~0.1 ms here.
    """

    analyzers: tuple[Any, ...]
    vocabularies: tuple[Mapping[str, int], ...]
    idfs: tuple[np.ndarray, ...]
    offsets: tuple[int, ...]  # where each vectorizer's columns start

    @classmethod
    def from_union(cls, union: Any) -> TextFeatures:
        vectorizers = [vectorizer for _, vectorizer in union.transformer_list]
        offsets, start = [], 0
        for vectorizer in vectorizers:
            offsets.append(start)
            start += len(vectorizer.vocabulary_)
        return cls(
            analyzers=tuple(v.build_analyzer() for v in vectorizers),
            vocabularies=tuple(v.vocabulary_ for v in vectorizers),
            idfs=tuple(np.asarray(v.idf_) for v in vectorizers),
            offsets=tuple(offsets),
        )

    def of(self, message: str) -> tuple[np.ndarray, np.ndarray]:
        """(column indices, values) of ``message``'s non-zero features."""
        columns: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for analyze, vocabulary, idf, offset in zip(
            self.analyzers, self.vocabularies, self.idfs, self.offsets, strict=True
        ):
            counts = Counter(vocabulary[gram] for gram in analyze(message) if gram in vocabulary)
            if not counts:
                continue
            index = np.fromiter(counts, dtype=np.intp, count=len(counts))
            tf = np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts))) + 1.0
            weight = tf * idf[index]
            columns.append(index + offset)
            values.append(weight / np.sqrt(weight @ weight))
        if not columns:
            return np.zeros(0, dtype=np.intp), np.zeros(0)
        return np.concatenate(columns), np.concatenate(values)


@dataclasses.dataclass(frozen=True)
class LinearTextModel:
    """Linear models over :class:`TextFeatures`, one row of ``weights`` a name (an act, or a
    field), scored with one product."""

    features: TextFeatures
    weights: np.ndarray
    biases: np.ndarray
    names: tuple[str, ...]

    def decision(self, message: str) -> np.ndarray:
        """Each name's score for ``message`` (for a field: above 0, the model reads it asked)."""
        columns, values = self.features.of(message)
        return self.weights[:, columns] @ values + self.biases


@dataclasses.dataclass(frozen=True)
class ActModel(LinearTextModel):
    """The act classifier (a fitted ``train_act_classifier`` pipeline) in scoring form."""

    @classmethod
    def from_pipeline(cls, pipeline: Any) -> ActModel:
        union, svc = pipeline[0], pipeline[-1]
        weights = np.asarray(svc.coef_, dtype=np.float64)
        biases = np.asarray(svc.intercept_, dtype=np.float64)
        names = tuple(str(name) for name in svc.classes_)
        if len(names) == 2:  # a binary LinearSVC keeps one row: the second class's side
            weights, biases = np.vstack([-weights, weights]), np.concatenate([-biases, biases])
        return cls(TextFeatures.from_union(union), weights, biases, names)

    def predict(self, messages: Sequence[str]) -> list[str]:
        """The likeliest act of each message, as the pipeline's ``predict``."""
        return [self.names[int(np.argmax(self.decision(message)))] for message in messages]


@dataclasses.dataclass(frozen=True)
class FieldModels(LinearTextModel):
    """One linear model per field over the act classifier's kind of n-grams, kept as one weight
    matrix so that scoring a message is one product (scikit-learn's one-vs-rest wrapper checks
    its input once per field, about 25 ms a message over sixty fields)."""

    def scores(self, message: str) -> dict[str, float]:
        """Each field's score for ``message`` (above 0: the model reads it as asked)."""
        return dict(zip(self.names, self.decision(message).tolist(), strict=True))


def train_field_classifier(cases: Sequence[Mapping[str, Any]]) -> FieldModels:
    """The field models, fitted on the asks of ``cases``."""
    from sklearn.svm import LinearSVC

    asks = [case for case in cases if case["act"] == "ask" and case.get("fields")]
    if not asks:
        raise ValueError("train_field_classifier needs labelled asks, got none")
    names = sorted({field for case in asks for field in case["fields"]})
    features = _ngrams().fit([case["message"] for case in asks])
    matrix = features.transform([case["message"] for case in asks])
    weights, biases = [], []
    for name in names:
        asked = [name in case["fields"] for case in asks]
        if all(asked):  # asked in every ask: no model to fit, always the likeliest
            weights.append(np.zeros(matrix.shape[1]))
            biases.append(1.0)
            continue
        model = LinearSVC(C=1.0, random_state=0).fit(matrix, asked)
        weights.append(model.coef_[0])
        biases.append(float(model.intercept_[0]))
    return FieldModels(
        TextFeatures.from_union(features), np.vstack(weights), np.array(biases), tuple(names)
    )


@built_once
def field_classifier() -> FieldModels:
    """The field models trained on :data:`WORDINGS` (once per process, on first need)."""
    return train_field_classifier(load_wordings())


def likeliest_field(message: str, fields: Iterable[str]) -> str | None:
    """Of ``fields``, the one the field models score highest for ``message`` (None when they
    know none of them, or the message has no words): the fallback for an ask the rules find no
    field in."""
    if not re.search(r"[^\W\d_]", message):
        return None
    scores = field_classifier().scores(message)
    known = [(scores[field], field) for field in fields if field in scores]
    return max(known)[1] if known else None


@built_once
def act_classifier() -> ActModel:
    """The classifier trained on :data:`WORDINGS`, trained once per process (env pools step
    envs from many threads: the first reader trains it, the others wait)."""
    return ActModel.from_pipeline(train_act_classifier(load_wordings()))


def classify_act(message: str, model: Any = None) -> Act:
    """The act ``message`` asks of the user, by ``model`` (default: :func:`act_classifier`)."""
    if model is None:
        return _default_act(message)
    return model.predict([message])[0]


@functools.lru_cache(maxsize=256)
def _default_act(message: str) -> Act:
    """:func:`act_classifier`'s act, kept for the last messages: a turn reads the agent's
    message twice, as the user and in the user's fault check."""
    return act_classifier().predict([message])[0]


def read_turn(
    message: str,
    vocabulary: Vocabulary,
    known: int | None = None,
    *,
    act: Act | None = None,
    device: bool = False,
) -> tuple[Act, Reading]:
    """The act ``message`` asks of a user (classified unless given) and the rules' reading of
    it settled on that act: fields only for an ask, nothing asked for the others.

    Where the classifier reads an ask the rules did not see, every sentence is read as a
    request for the fields it names. A ``device`` act for a user without a device (``device``
    False) is left to the rules.
    """
    act = act or classify_act(message)
    reading = read_message(message, vocabulary, known)
    if act == "device" and not device:
        return ("ask" if reading.asked or reading.identity else "open"), reading
    if act == "ask":
        if reading.confirmation or not (reading.asked or reading.identity):
            # an ask the rules took for an approval ("add travel insurance? y/n") or missed
            asking = read_message(message, vocabulary, known, asking=True)
            order = {words.field: index for index, words in enumerate(vocabulary)}
            asked = sorted({*reading.asked, *asking.asked}, key=order.__getitem__)
            if not (asked or asking.identity) and reading.confirmation:
                return "confirm", Reading(confirmation=True, request=True)  # nothing to give
            if not (asked or asking.identity):  # no field's words: the field models' pick
                likeliest = likeliest_field(message, order)
                asked = [likeliest] if likeliest is not None else []
            reading = dataclasses.replace(
                asking, asked=tuple(asked), identity=asking.identity and not asked
            )
        return act, dataclasses.replace(
            reading, confirmation=False, anything_else=False, ends=False, request=True
        )
    if act == "confirm":
        return act, Reading(confirmation=True, request=True)
    if act == "anything_else":
        return act, Reading(anything_else=True, ends=True)
    if act == "end":
        return act, Reading(ends=True)
    return act, Reading(request=reading.request)  # open, or a device request
