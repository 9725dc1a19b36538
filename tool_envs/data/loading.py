"""Load task rows from wherever they live: memory, a local dataset, files, or the Hub.

Every source ends as a list of validated, decoded rows (see `tool_envs.data.schema`), so
environments never see the JSON-string storage form. ``datasets`` is imported lazily because
it takes over a second to import and rows given as Python lists do not need it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tool_envs.data.schema import validate_row
from tool_envs.errors import TaskRowError

if TYPE_CHECKING:
    from typing import TypeAlias

    from datasets import Dataset, DatasetDict

    TaskSource: TypeAlias = (
        str
        | os.PathLike[str]
        | Sequence[Mapping[str, Any]]
        | Sequence[str | os.PathLike[str]]
        | Dataset
        | DatasetDict
    )

__all__ = ["SUPPORTED_FILE_EXTENSIONS", "load_tasks"]

SUPPORTED_FILE_EXTENSIONS: dict[str, str] = {
    ".jsonl": "json",
    ".json": "json",
    ".parquet": "parquet",
    # Compressed JSON (HumanEval ships as HumanEval.jsonl.gz); datasets decompresses it.
    **{
        f"{ext}{zipped}": "json" for ext in (".jsonl", ".json") for zipped in (".gz", ".bz2", ".xz")
    },
}
"""File extension -> the packaged ``datasets`` builder that reads it."""

# Extensions that mark a string as a file path (so a typo gives FileNotFoundError rather than
# an attempt to reach the Hub), whether or not we can read that format.
_PATH_LIKE_EXTENSIONS = (
    *SUPPORTED_FILE_EXTENSIONS,
    ".csv",
    ".tsv",
    ".txt",
    ".arrow",
    ".gz",
    ".bz2",
    ".xz",
    ".zst",
    ".zip",
)


def load_tasks(
    source: TaskSource,
    split: str = "train",
    *,
    validate: bool = True,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Return the rows of ``source`` as validated, decoded task rows.

    ``source`` may be a list of row dicts, a ``datasets.Dataset`` / ``DatasetDict``, a local
    dataset folder (with a README dataset card or data files, or written by ``save_to_disk``),
    a ``.jsonl``/``.json``/``.parquet`` file or a list of them (``split`` is then ignored), or
    a Hub dataset id. ``limit`` keeps only the first rows, before validation, so a quick run
    does not pay for the whole set. With ``validate=False`` rows are only decoded (JSON fields,
    ``env_class`` alias), which is faster for data already checked when it was written.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be None or >= 0, got {limit}")
    rows, where = _read_rows(source, split, limit)
    if limit is not None:
        rows = rows[:limit]
    if not validate:
        return [_decode_only(row) for row in rows]
    return [_validate_at(row, index, where) for index, row in enumerate(rows)]


def _validate_at(row: Mapping[str, Any], index: int, where: str | None) -> dict[str, Any]:
    """Validate one row; say which source it came from, since a run may read several."""
    try:
        return validate_row(row, index=index)
    except TaskRowError as exc:
        if where is None:
            raise
        raise exc.located(where) from None


def _decode_only(row: Mapping[str, Any]) -> dict[str, Any]:
    """The cheap part of validation: what consumers rely on to find their fields."""
    decoded = dict(row)
    env_class = decoded.pop("env_class", None)
    if decoded.get("env_id") is None and env_class is not None:
        decoded["env_id"] = env_class
    for name in ("reward_spec", "extra_info"):
        value = decoded.get(name)
        if value is None:
            decoded[name] = {}
        elif isinstance(value, str):
            decoded[name] = json.loads(value) if value.strip() else {}
    return decoded


def _read_rows(
    source: Any, split: str, limit: int | None
) -> tuple[list[Mapping[str, Any]], str | None]:
    """Dispatch on the kind of source; returns raw rows and a description for error messages."""
    if isinstance(source, (str, os.PathLike)):
        return _read_path(source, split, limit)
    if isinstance(source, (list, tuple)):
        if all(isinstance(item, Mapping) for item in source):
            return list(source), None
        if all(isinstance(item, (str, os.PathLike)) for item in source):
            paths = [Path(os.fspath(item)).expanduser() for item in source]
            where = f"files {[str(p) for p in paths]}"
            return _read_files(paths, limit), where
        raise TypeError(
            "a list source must hold only row dicts or only file paths, got "
            f"{sorted({type(item).__name__ for item in source})}"
        )

    import datasets

    if isinstance(source, datasets.Dataset):
        return _dataset_rows(source, limit), None
    if isinstance(source, datasets.DatasetDict):
        return _dataset_rows(_pick_split(source, split, "the DatasetDict"), limit), None
    raise TypeError(
        "source must be a list of row dicts, a datasets.Dataset or DatasetDict, a path to a "
        "dataset folder or data file, a list of file paths, or a Hub dataset id; got "
        f"{type(source).__name__}"
    )


def _looks_like_path(text: str) -> bool:
    """Hub ids look like ``name`` or ``namespace/name``; anything else is meant as a path."""
    if text.startswith("hf://"):
        return False
    if text.startswith((".", "~", "/", os.sep)) or os.path.isabs(text):
        return True
    if os.sep != "/" and os.sep in text:
        return True
    if text.count("/") > 1:
        return True
    return text.lower().endswith(_PATH_LIKE_EXTENSIONS)


def _read_path(
    source: str | os.PathLike[str], split: str, limit: int | None
) -> tuple[list[Mapping[str, Any]], str]:
    text = os.fspath(source)
    path = Path(text).expanduser()
    if path.is_dir():
        return _read_folder(path, split, limit)
    if path.is_file():
        return _read_files([path], limit), str(path)
    if isinstance(source, os.PathLike) or _looks_like_path(text):
        raise FileNotFoundError(f"task source {text!r} does not exist (no such file or folder)")
    # A Hub dataset id. Kept as a real code path even where the Hub cannot be reached.
    dataset = _load_dataset_split(text, split)
    return _dataset_rows(dataset, limit), f"{text} (split {split!r})"


def _read_folder(path: Path, split: str, limit: int | None) -> tuple[list[Mapping[str, Any]], str]:
    """A ``save_to_disk`` folder needs ``load_from_disk``; anything else is a dataset repo."""
    import datasets

    where = f"{path} (split {split!r})"
    if (path / "dataset_dict.json").is_file():
        dataset_dict = datasets.load_from_disk(str(path))
        return _dataset_rows(_pick_split(dataset_dict, split, str(path)), limit), where
    if (path / "state.json").is_file() and (path / "dataset_info.json").is_file():
        # A single saved Dataset has no split names, so ``split`` cannot be checked.
        return _dataset_rows(datasets.load_from_disk(str(path)), limit), str(path)
    with _fresh_cache() as cache_dir:
        dataset = _load_dataset_split(str(path), split, cache_dir=cache_dir)
        return _dataset_rows(dataset, limit), where


def _read_files(paths: Sequence[Path], limit: int | None) -> list[Mapping[str, Any]]:
    """Read data files with the builder their extension names; one file list is one split."""
    import datasets

    if not paths:
        return []
    builders = set()
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"task file {str(path)!r} does not exist")
        builder = _builder_for(path)
        if builder is None:
            supported = ", ".join(SUPPORTED_FILE_EXTENSIONS)
            raise ValueError(f"unsupported task file {str(path)!r}: expected one of {supported}")
        builders.add(builder)
    if len(builders) > 1:
        raise ValueError(
            f"task files mix formats ({', '.join(sorted(builders))}); load them separately"
        )
    with _fresh_cache() as cache_dir:
        dataset = datasets.load_dataset(
            builders.pop(),
            data_files=[str(path) for path in paths],
            split="train",
            cache_dir=cache_dir,
        )
        return _dataset_rows(dataset, limit)


def _builder_for(path: Path) -> str | None:
    name = path.name.lower()
    for extension, builder in SUPPORTED_FILE_EXTENSIONS.items():
        if name.endswith(extension):
            return builder
    return None


@contextmanager
def _fresh_cache() -> Iterator[str]:
    """A throw-away ``datasets`` cache for local sources.

    ``datasets`` fingerprints a folder whose README declares ``configs`` by the file *patterns*,
    not the files' mtimes, so after a folder is rewritten ``load_dataset`` would return the old
    rows from its cache. Rows are turned into Python objects right away, so a per-call cache
    costs little, keeps local copies out of ``~/.cache``, and cannot race with other processes.
    """
    with tempfile.TemporaryDirectory(prefix="tool_envs-load-", ignore_cleanup_errors=True) as tmp:
        yield tmp


def _load_dataset_split(path: str, split: str, cache_dir: str | None = None) -> Dataset:
    """``load_dataset`` for one split, with an unknown split reported with the known ones."""
    import datasets

    try:
        return datasets.load_dataset(path, split=split, cache_dir=cache_dir)
    except ValueError as exc:
        if "Unknown split" not in str(exc):
            raise
        available = _available_splits(path, cache_dir)
        if not available:
            raise
        raise ValueError(
            f"split {split!r} not found in {path}; available splits: {', '.join(available)}"
        ) from exc


def _available_splits(path: str, cache_dir: str | None) -> list[str]:
    """Split names as declared by the data files (card configs or file names)."""
    import datasets

    builder = datasets.load_dataset_builder(path, cache_dir=cache_dir)
    if builder.config.data_files:
        return [str(name) for name in builder.config.data_files]
    if builder.info.splits:
        return [str(name) for name in builder.info.splits]
    return []


def _pick_split(dataset_dict: DatasetDict, split: str, where: str) -> Dataset:
    if split not in dataset_dict:
        raise ValueError(
            f"split {split!r} not found in {where}; available splits: {', '.join(dataset_dict)}"
        )
    return dataset_dict[split]


def _dataset_rows(dataset: Dataset, limit: int | None) -> list[Mapping[str, Any]]:
    """Select before converting, so ``limit`` also saves the Arrow -> Python conversion."""
    if limit is not None and limit < len(dataset):
        dataset = dataset.select(range(limit))
    return dataset.to_list()
