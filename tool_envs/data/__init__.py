"""Task rows: the shared schema, loading from any source (env ids included), and writing
dataset folders."""

from tool_envs.data.builder import DatasetCardInfo, builder_main, write_dataset
from tool_envs.data.loading import load_tasks
from tool_envs.data.schema import TaskRow, encode_row, validate_row
from tool_envs.data.sources import load_task_sources

__all__ = [
    "DatasetCardInfo",
    "TaskRow",
    "builder_main",
    "encode_row",
    "load_task_sources",
    "load_tasks",
    "validate_row",
    "write_dataset",
]
