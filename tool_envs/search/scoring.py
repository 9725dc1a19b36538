"""How a final answer is compared with the gold answers: normalised exact match or token F1.

Normalisation is the usual one for open-domain QA (SQuAD, Natural Questions, Search-R1): lower
case, punctuation and the articles a/an/the removed, whitespace collapsed.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from tool_envs.core.tagged import last_tagged

METRICS = ("em", "f1")

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise_answer(text: str) -> str:
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer, else 0.0."""
    predicted = normalise_answer(prediction)
    return float(any(predicted == normalise_answer(gold) for gold in golds))


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    """The best token-overlap F1 between the prediction and any gold answer."""
    predicted = normalise_answer(prediction).split()
    best = 0.0
    for gold in golds:
        expected = normalise_answer(gold).split()
        common = sum((Counter(predicted) & Counter(expected)).values())
        if not predicted or not expected:
            best = max(best, float(predicted == expected))
        elif common:
            precision, recall = common / len(predicted), common / len(expected)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def score(prediction: str, golds: Sequence[str], metric: str) -> float:
    if metric == "em":
        return exact_match(prediction, golds)
    if metric == "f1":
        return token_f1(prediction, golds)
    raise ValueError(f"metric={metric!r} is not one of {METRICS}")


def extract_answer(text: str) -> str | None:
    """The content of the last <answer>...</answer> block, or None (linear in the text)."""
    return last_tagged(text, "answer")
