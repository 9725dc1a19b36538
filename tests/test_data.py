"""Tests for tool_envs.data: the task-row schema, loading from every source, dataset folders."""

from __future__ import annotations

import json
import os

# Set before ``datasets`` is imported, which reads them once; the fixture below covers the case
# where another test module imported it first.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import copy
from pathlib import Path

import datasets
import pytest
import yaml

from tool_envs.data import (
    DatasetCardInfo,
    TaskRow,
    encode_row,
    load_tasks,
    validate_row,
    write_dataset,
)
from tool_envs.errors import TaskRowError

pytestmark = pytest.mark.usefixtures("offline_datasets")


def make_row(i: int = 0, **overrides):
    row = {
        "prompt": [
            {"role": "system", "content": "You are a careful calculator. Use the tools."},
            {"role": "user", "content": f"What is {i} + 2? Réponds en français."},
        ],
        "env_id": "tool_envs/Calculator-v0",
        "reward_spec": {"answer": i + 2, "tolerance": 0.0},
        "extra_info": {"task_id": f"calc-{i}", "difficulty": "easy"},
    }
    row.update(overrides)
    return row


CARD = DatasetCardInfo(
    pretty_name="Calculator tasks",
    description="Arithmetic questions answered with a calculator tool.",
    tags=["math", "tool-use"],
    how_built="Generated from a fixed seed by the test suite.",
)


# --------------------------------------------------------------------------- validation


def test_good_row_is_normalised_to_four_plain_keys():
    out = validate_row(make_row())
    assert out == make_row()
    assert list(out) == ["prompt", "env_id", "reward_spec", "extra_info"]
    assert all(type(message) is dict for message in out["prompt"])


def test_env_class_is_an_alias_of_env_id():
    row = make_row()
    row["env_class"] = row.pop("env_id")
    assert validate_row(row) == make_row()
    # Both given and equal is fine (rows converted from SkyRL sometimes keep both).
    assert validate_row({**make_row(), "env_class": "tool_envs/Calculator-v0"}) == make_row()


def test_json_string_fields_are_decoded_and_none_means_empty():
    row = make_row(reward_spec=json.dumps({"answer": 2}), extra_info=json.dumps({"task_id": "ü"}))
    out = validate_row(row)
    assert out["reward_spec"] == {"answer": 2}
    assert out["extra_info"] == {"task_id": "ü"}
    out = validate_row(make_row(reward_spec=None, extra_info=""))
    assert out["reward_spec"] == {} and out["extra_info"] == {}


def test_verl_style_top_level_keys_are_kept_in_extra_info():
    row = make_row(data_source="gsm8k", ability="math", index=7)
    out = validate_row(row)
    assert set(out) == {"prompt", "env_id", "reward_spec", "extra_info"}
    assert out["extra_info"] == {
        **make_row()["extra_info"],
        "data_source": "gsm8k",
        "ability": "math",
        "index": 7,
    }
    # Validating the normalised row again changes nothing.
    assert validate_row(out) == out


def test_task_row_model_has_descriptions_and_accepts_storage_form():
    schema = TaskRow.model_json_schema()
    for name, prop in schema["properties"].items():
        assert prop.get("description"), name
    model = TaskRow.model_validate(encode_row(make_row()))
    assert model.reward_spec == make_row()["reward_spec"]


BAD_CASES = {
    "empty prompt": (dict(prompt=[]), "prompt"),
    "bad role": (
        dict(prompt=[{"role": "user", "content": "hi"}, {"role": "bot", "content": "x"}]),
        "prompt[1].role",
    ),
    "system not first": (
        dict(
            prompt=[
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "system", "content": "late policy"},
            ]
        ),
        "prompt[2].role",
    ),
    "no user message": (dict(prompt=[{"role": "system", "content": "policy"}]), "prompt"),
    "non-string content": (dict(prompt=[{"role": "user", "content": 5}]), "prompt[0].content"),
    "extra message key": (
        dict(prompt=[{"role": "user", "content": "hi", "name": "bob"}]),
        "prompt[0].name",
    ),
    "bad env_id form": (dict(env_id="Calculator"), "env_id"),
    "env_id without version": (dict(env_id="tool_envs/Calculator"), "env_id"),
    "reward_spec JSON list": (dict(reward_spec="[1, 2]"), "reward_spec"),
    "reward_spec invalid JSON": (dict(reward_spec="{answer: 2"), "reward_spec"),
    "extra_info wrong type": (dict(extra_info=3), "extra_info"),
    "unknown key": (dict(difficulty="hard"), "difficulty"),
    "alias disagrees": (dict(env_class="tool_envs/Other-v1"), "env_class"),
    "unserialisable reward_spec": (dict(reward_spec={"x": object()}), "reward_spec"),
}


@pytest.mark.parametrize("overrides, field", BAD_CASES.values(), ids=list(BAD_CASES))
def test_bad_rows_name_row_index_and_field(overrides, field):
    with pytest.raises(TaskRowError) as info:
        validate_row(make_row(**overrides), index=17)
    message = str(info.value)
    assert message.startswith(f"row 17, field '{field}': ")
    assert "\n" not in message  # one readable line, not pydantic's dump
    assert info.value.index == 17 and info.value.field == field
    assert isinstance(info.value, ValueError)


def test_missing_env_id_and_non_mapping_rows():
    row = make_row()
    del row["env_id"]
    with pytest.raises(TaskRowError, match=r"row 3, field 'env_id': is required"):
        validate_row(row, index=3)
    with pytest.raises(TaskRowError, match=r"row 4: a task row must be a mapping"):
        validate_row(["not", "a", "row"], index=4)  # type: ignore[arg-type]


def test_env_id_error_shows_expected_form():
    with pytest.raises(TaskRowError, match=r"namespace/Name-vN"):
        validate_row(make_row(env_id="calculator"))


def test_unknown_keys_are_all_named():
    with pytest.raises(TaskRowError) as info:
        validate_row(make_row(foo=1, bar=2), index=0)
    assert "'foo'" in str(info.value) and "'bar'" in str(info.value)


# --------------------------------------------------------------------------- encoding


def test_encode_then_validate_round_trips():
    row = make_row(extra_info={"z": 1, "a": "é"})
    encoded = encode_row(row)
    assert isinstance(encoded["reward_spec"], str) and isinstance(encoded["extra_info"], str)
    assert encoded["extra_info"] == '{"a": "é", "z": 1}'  # sorted keys, no \u escapes
    assert validate_row(encoded) == validate_row(row)
    assert encode_row(validate_row(encoded)) == encoded


def test_encode_rejects_bad_rows_with_index():
    with pytest.raises(TaskRowError, match=r"row 2, field 'prompt'"):
        encode_row(make_row(prompt=[]), index=2)


# --------------------------------------------------------------------------- builder


def _splits():
    return {"train": [make_row(i) for i in range(5)], "test": [make_row(i) for i in range(5, 8)]}


def test_write_dataset_loads_with_datasets_and_load_tasks(tmp_path):
    folder = tmp_path / "calculator"
    splits = _splits()
    assert write_dataset(folder, splits, card=CARD) == folder

    loaded = datasets.load_dataset(str(folder))
    assert set(loaded) == {"train", "test"}
    assert loaded["train"].num_rows == 5 and loaded["test"].num_rows == 3
    assert isinstance(loaded["train"][0]["reward_spec"], str)

    assert load_tasks(folder, split="test") == [validate_row(r) for r in splits["test"]]
    assert load_tasks(str(folder)) == splits["train"]


def test_write_dataset_files_and_card(tmp_path):
    folder = tmp_path / "calculator"
    write_dataset(folder, _splits(), card=CARD)
    lines = (folder / "data" / "train.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5
    assert json.loads(lines[0]) == encode_row(make_row(0))
    assert "Réponds" in lines[0]  # UTF-8, not escaped

    readme = (folder / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(readme.split("---\n")[1])
    assert front["configs"] == [
        {
            "config_name": "default",
            "data_files": [
                {"split": "train", "path": "data/train.jsonl"},
                {"split": "test", "path": "data/test.jsonl"},
            ],
        }
    ]
    assert front["license"] == "apache-2.0"
    assert front["pretty_name"] == "Calculator tasks"
    assert front["size_categories"] == ["n<1K"]
    assert {"math", "tool-use", "tool-envs"} <= set(front["tags"])
    assert front["task_categories"]
    body = readme.split("---\n", 2)[2]
    assert "# Calculator tasks" in body
    assert "| `train` | 5 |" in body and "| `test` | 3 |" in body
    for name in ("prompt", "env_id", "reward_spec", "extra_info"):
        assert f"| `{name}` |" in body
    assert f'load_dataset("{folder.name}")' in body
    assert f'load_tasks("{folder.name}", split="train")' in body
    assert "Generated from a fixed seed" in body


def test_write_dataset_is_deterministic_and_drops_stale_splits(tmp_path):
    folder = tmp_path / "ds"
    write_dataset(folder, _splits(), card=CARD)
    first = {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    write_dataset(folder, _splits(), card=CARD)
    second = {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    assert first == second
    write_dataset(folder, {"train": _splits()["train"]}, card=CARD)
    assert sorted(p.name for p in (folder / "data").iterdir()) == ["train.jsonl"]
    assert set(datasets.load_dataset(str(folder))) == {"train"}


def test_load_tasks_sees_a_rewritten_folder(tmp_path):
    # datasets caches README-configured folders by file pattern, so a same-size rewrite would
    # come back stale from a shared cache; load_tasks must return the new rows.
    folder = tmp_path / "ds"
    write_dataset(folder, {"train": [make_row(1)]}, card=CARD)
    assert load_tasks(folder)[0]["reward_spec"]["answer"] == 3
    write_dataset(folder, {"train": [make_row(2)]}, card=CARD)
    assert load_tasks(folder)[0]["reward_spec"]["answer"] == 4


def test_write_dataset_bad_row_names_split_and_index_and_writes_nothing(tmp_path):
    splits = _splits()
    splits["test"] = copy.deepcopy(splits["test"])
    splits["test"][1]["prompt"][1]["role"] = "robot"
    folder = tmp_path / "ds"
    with pytest.raises(TaskRowError) as info:
        write_dataset(folder, splits, card=CARD)
    assert "split 'test'" in str(info.value)
    assert "row 1, field 'prompt[1].role'" in str(info.value)
    assert info.value.index == 1
    assert not folder.exists()


def test_write_dataset_rejects_bad_split_names_and_empty_splits(tmp_path):
    with pytest.raises(ValueError, match="split name"):
        write_dataset(tmp_path / "a", {"my split": [make_row()]}, card=CARD)
    with pytest.raises(ValueError, match="no rows"):
        write_dataset(tmp_path / "b", {"train": []}, card=CARD)
    with pytest.raises(ValueError, match="at least one split"):
        write_dataset(tmp_path / "c", {}, card=CARD)


# --------------------------------------------------------------------------- loading


def _write_jsonl(path: Path, rows) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(encode_row(row), ensure_ascii=False) + "\n")
    return path


def test_load_single_jsonl_file_ignores_split(tmp_path):
    rows = [make_row(i) for i in range(3)]
    path = _write_jsonl(tmp_path / "tasks.jsonl", rows)
    assert load_tasks(path) == rows
    assert load_tasks(str(path), split="whatever") == rows
    assert load_tasks([path, str(path)], limit=4) == (rows + rows)[:4]


def test_load_parquet_file(tmp_path):
    rows = [make_row(i) for i in range(4)]
    path = tmp_path / "tasks.parquet"
    datasets.Dataset.from_list([encode_row(r) for r in rows]).to_parquet(str(path))
    assert load_tasks(path) == rows


def test_load_save_to_disk_folders(tmp_path):
    rows = _splits()
    dataset_dict = datasets.DatasetDict(
        {
            name: datasets.Dataset.from_list([encode_row(r) for r in split])
            for name, split in rows.items()
        }
    )
    dataset_dict.save_to_disk(str(tmp_path / "dict"))
    assert load_tasks(tmp_path / "dict", split="test") == rows["test"]
    with pytest.raises(ValueError, match=r"available splits: train, test"):
        load_tasks(tmp_path / "dict", split="validation")

    dataset_dict["train"].save_to_disk(str(tmp_path / "single"))
    assert load_tasks(tmp_path / "single") == rows["train"]


def test_load_from_list_of_dicts_and_datasets_objects():
    rows = [make_row(i) for i in range(3)]
    aliased = [{**encode_row(r), "env_class": r["env_id"]} for r in rows]
    for row in aliased:
        del row["env_id"]
    assert load_tasks(aliased) == rows
    assert load_tasks([]) == []

    dataset = datasets.Dataset.from_list([encode_row(r) for r in rows])
    assert load_tasks(dataset) == rows
    assert load_tasks(dataset, limit=2) == rows[:2]
    assert load_tasks(datasets.DatasetDict({"train": dataset}), split="train") == rows


def test_validate_false_only_decodes():
    row = {**encode_row(make_row()), "env_class": "tool_envs/Calculator-v0"}
    del row["env_id"]
    assert load_tasks([row], validate=False) == [make_row()]


def test_missing_path_raises_file_not_found(tmp_path):
    for missing in (
        tmp_path / "nope",
        str(tmp_path / "nope.jsonl"),
        "./relative/folder",
        "tasks.parquet",
    ):
        with pytest.raises(FileNotFoundError, match=str(missing).replace(".", r"\.")):
            load_tasks(missing)
    with pytest.raises(FileNotFoundError, match=r"gone\.jsonl"):
        load_tasks([tmp_path / "gone.jsonl"])


def test_unknown_split_lists_available_splits(tmp_path):
    write_dataset(tmp_path / "ds", _splits(), card=CARD)
    with pytest.raises(ValueError, match=r"'validation'.*available splits: train, test"):
        load_tasks(tmp_path / "ds", split="validation")


def test_unsupported_extension_lists_supported_ones(tmp_path):
    path = tmp_path / "tasks.csv"
    path.write_text("prompt,env_id\n")
    with pytest.raises(ValueError, match=r"\.jsonl, \.json, \.parquet"):
        load_tasks(path)


def test_bad_row_in_file_names_its_index_and_the_file(tmp_path):
    rows = [encode_row(make_row(i)) for i in range(4)]
    rows[2]["env_id"] = "not-an-id"
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(TaskRowError) as info:
        load_tasks(path)
    assert "row 2, field 'env_id'" in str(info.value)
    assert str(path) in str(info.value)
    assert info.value.index == 2 and info.value.field == "env_id"
    # limit stops before the bad row, so it is never looked at.
    assert len(load_tasks(path, limit=2)) == 2


def test_hub_ids_go_to_load_dataset(monkeypatch):
    calls = []
    dataset = datasets.Dataset.from_list([encode_row(make_row())])

    def fake_load_dataset(path, **kwargs):
        calls.append((path, kwargs))
        return dataset

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    assert load_tasks("some-org/calculator-tasks", split="test") == [make_row()]
    [(path, kwargs)] = calls
    assert path == "some-org/calculator-tasks"
    assert kwargs["split"] == "test"
    assert kwargs.get("cache_dir") is None  # Hub downloads keep the shared cache


def test_bad_source_types_and_limit():
    with pytest.raises(TypeError):
        load_tasks(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="only row dicts or only file paths"):
        load_tasks([make_row(), "file.jsonl"])
    with pytest.raises(ValueError, match="limit"):
        load_tasks([make_row()], limit=-1)
