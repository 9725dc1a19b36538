"""Turn open-domain QA sets (NQ, HotpotQA, TriviaQA, ... as Search-R1 uses them) into
WebSearch-v0 task rows.

Accepted columns (the first present wins):

- question: ``question``;
- gold answers: ``golden_answers`` (Search-R1 / FlashRAG: a list of strings),
  ``reward_model.ground_truth.target`` (Search-R1's processed parquet), ``answers`` or
  ``answer`` (plain NQ-open / HotpotQA dumps: a string or a list of strings; TriviaQA's
  ``{"value", "aliases"}`` object too);
- id: ``id`` or ``_id`` (else ``<source name>-<row number>``); ``data_source``, ``type`` and
  ``level`` (HotpotQA) are kept in ``extra_info``.

Questions are stripped and get a final "?" when they lack one, as Search-R1 does. Answers are
stripped and de-duplicated, order kept. A row without a question or without any answer raises
`TaskRowError` naming the source, row and field.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tool_envs.data.loading import _dataset_rows, _looks_like_path, _read_rows
from tool_envs.errors import TaskRowError
from tool_envs.search.qa import SYSTEM_PROMPT, search_task_row

__all__ = ["convert_qa_row", "load_search_qa"]

_ANSWER_FIELDS = ("golden_answers", "reward_model.ground_truth.target", "answers", "answer")
_KEPT_FIELDS = ("data_source", "type", "level")


def load_search_qa(
    source: Any,
    split: str | None = None,
    limit: int | None = None,
    *,
    config: str | None = None,
    system_prompt: str = SYSTEM_PROMPT,
) -> list[dict[str, Any]]:
    """WebSearch-v0 task rows from a QA set.

    ``source``: a Hub dataset id (e.g. ``"PeterJinGo/nq_hotpotqa_train"``; ``config`` names a
    configuration such as FlashRAG's ``"nq"``), a local dataset folder, a ``.jsonl`` /
    ``.json`` / ``.parquet`` file or a list of them, a ``datasets.Dataset``, or a list of row
    dicts. ``split`` picks the split of a Hub id or folder (default ``"train"``) and is recorded
    in ``extra_info.split`` (else the row's own ``extra_info.split`` when it has one).
    ``limit`` keeps the first rows only.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be None or a non-negative int, got {limit!r}")
    raws, where = _read(source, split or "train", limit, config)
    if limit is not None:
        raws = raws[:limit]
    name = _source_name(source)
    rows = []
    for index, raw in enumerate(raws):
        try:
            rows.append(convert_qa_row(raw, index, name, split, system_prompt))
        except TaskRowError as exc:
            if where is None:
                raise
            raise exc.located(where) from None
    return rows


def convert_qa_row(
    raw: Mapping[str, Any],
    index: int,
    source: str = "qa",
    split: str | None = None,
    system_prompt: str = SYSTEM_PROMPT,
) -> dict[str, Any]:
    """One QA row (see the module docstring for its columns) as a WebSearch-v0 task row."""
    if not isinstance(raw, Mapping):
        raise TaskRowError(f"expected a row object, got {type(raw).__name__}", index=index)
    question = raw.get("question")
    if not isinstance(question, str) or not question.strip():
        problem = (
            "is missing"
            if question is None
            else f"must be a non-empty string, got {question!r:.60}"
        )
        raise TaskRowError(problem, index=index, field="question")
    question = question.strip()
    if not question.endswith("?"):
        question += "?"

    answers, field = _answers(raw, index)
    if not answers:
        raise TaskRowError("has no non-empty answer", index=index, field=field)

    row_id = raw.get("id", raw.get("_id"))
    extra: dict[str, Any] = {"id": f"{source}-{index}" if row_id in (None, "") else str(row_id)}
    row_extra = raw.get("extra_info") if isinstance(raw.get("extra_info"), Mapping) else {}
    row_split = split or row_extra.get("split")
    if row_split:
        extra["split"] = str(row_split)
    extra["source"] = source
    for key in _KEPT_FIELDS:
        if raw.get(key) not in (None, ""):
            extra[key] = raw[key]
    return search_task_row(question, answers, extra, system_prompt)


def _answers(raw: Mapping[str, Any], index: int) -> tuple[list[str], str]:
    """The first answer field present, as a clean list; and that field's name."""
    for field in _ANSWER_FIELDS:
        value = _lookup(raw, field)
        if value is None:
            continue
        if isinstance(value, Mapping) and ("aliases" in value or "value" in value):
            value = [value.get("value"), *(value.get("aliases") or [])]  # TriviaQA
            value = [item for item in value if item is not None]
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            value = [value]
        elif not isinstance(value, Sequence) or isinstance(value, bytes):
            raise TaskRowError(
                f"must be a string or a list of strings, got {type(value).__name__}",
                index=index,
                field=field,
            )
        answers: list[str] = []
        for position, item in enumerate(value):
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                item = str(item)  # some dumps store numeric answers as numbers
            if not isinstance(item, str):
                raise TaskRowError(
                    f"answer {position} must be a string, got {type(item).__name__}",
                    index=index,
                    field=field,
                )
            if item.strip() and item.strip() not in answers:
                answers.append(item.strip())
        return answers, field
    raise TaskRowError(
        "is missing: a row needs one of " + ", ".join(_ANSWER_FIELDS),
        index=index,
        field="golden_answers",
    )


def _lookup(raw: Mapping[str, Any], dotted: str) -> Any:
    value: Any = raw
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _read(
    source: Any, split: str, limit: int | None, config: str | None
) -> tuple[list[Mapping[str, Any]], str | None]:
    if config is not None:
        if not isinstance(source, str) or _looks_like_path(source) or Path(source).exists():
            raise ValueError("config= applies to Hub dataset ids only")
        import datasets

        dataset = datasets.load_dataset(source, config, split=split)
        return _dataset_rows(dataset, limit), f"{source}/{config} (split {split!r})"
    rows, where = _read_rows(source, split, limit)
    return list(rows), where


def _source_name(source: Any) -> str:
    """A short name for generated ids: the file or folder name, or the Hub id's last part."""
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source).rstrip("/")
        name = Path(text).name
        for suffix in (".jsonl", ".json", ".parquet"):
            name = name.removesuffix(suffix)
        return name or "qa"
    return "qa"
