"""Task rows (``data.tasks``, JSONL) and the train/val/test split files (one task id per line), read as hermit does.

Ids come from ``id`` or else ``task_id`` (an integer id becomes its string); each row gets ``id`` set when it has
none. Every fault is an InputError naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from hermit_tui.core.errors import InputError
from hermit_tui.core.workspace.config import Config
from hermit_tui.core.workspace.files import MAX_DEPTH, read_bytes, too_deep

SPLITS = ("train", "val", "test")


def _lines(path: Path, what: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of `path`, decoded as UTF-8 line by line so a bad byte names its line."""
    try:
        raw = read_bytes(path)
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    for number, chunk in enumerate(raw.split(b"\n"), 1):
        try:
            text = chunk.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{path}:{number}: not UTF-8 text") from None
        yield number, text.rstrip("\r")


def _task_id(row: dict[str, Any]) -> Any:
    return row["id"] if "id" in row else row.get("task_id")


def read_tasks(path: Path) -> dict[str, dict[str, Any]]:
    """id -> row of a JSONL task file, in file order."""
    tasks: dict[str, dict[str, Any]] = {}
    first_line: dict[str, int] = {}
    for number, text in _lines(path, "task file"):
        if not text.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise InputError(f"{where}: nested too deeply to read (more than {MAX_DEPTH} levels)") from None
        if not isinstance(row, dict):
            raise InputError(f"{where}: a task must be a JSON object, got {type(row).__name__}")
        # a row cannot nest deeper than the brackets its line opens (strings may hold more): only a line with
        # more than MAX_DEPTH of them is walked (the walk was most of reading 1,112 rows, issue 30)
        if text.count("{") + text.count("[") > MAX_DEPTH and too_deep(row):
            raise InputError(f"{where}: the task nests more than {MAX_DEPTH} levels deep")
        raw = _task_id(row)
        if isinstance(raw, bool) or not isinstance(raw, (str, int)) or str(raw).strip() == "":
            raise InputError(f"{where}: the task has no usable 'id' or 'task_id' (got {raw!r})")
        tid = str(raw)
        if tid in tasks:
            raise InputError(f"{where}: duplicate task id {tid!r} (first on line {first_line[tid]})")
        row.setdefault("id", tid)
        tasks[tid] = row
        first_line[tid] = number
    return tasks


def read_split(path: Path, known: Mapping[str, Any]) -> list[str]:
    """The task ids of a split file, in order: one per line; blank lines and lines starting with '#' are skipped."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    for number, text in _lines(Path(path), "split file"):
        tid = text.strip()
        if not tid or tid.startswith("#"):
            continue
        if tid not in known:
            raise InputError(f"{path}:{number}: unknown task id {tid!r} (not in the task file)")
        if tid in seen:
            raise InputError(f"{path}:{number}: duplicate task id {tid!r} (first on line {seen[tid]})")
        seen[tid] = number
        ids.append(tid)
    return ids


def _flatten(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _flatten(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _flatten(item)
    elif value is not None:
        yield str(value)


class TaskSet(BaseModel):
    """All task rows of a config and its splits (ids in file order; an unset split is empty)."""

    tasks: dict[str, dict[str, Any]]
    splits: dict[str, list[str]]
    source: Path

    def rows(self, split: str) -> list[dict[str, Any]]:
        return [self.tasks[i] for i in self.splits[split]]

    @property
    def test_ids(self) -> list[str]:
        return list(self.splits.get("test", []))

    def overlaps(self) -> list[str]:
        """One line per pair of splits sharing tasks (a protocol violation when test is one of them)."""
        out = []
        for a, b in (("test", "train"), ("test", "val"), ("val", "train")):
            other = set(self.splits.get(b, []))
            common = [i for i in self.splits.get(a, []) if i in other]
            if common:
                shown = ", ".join(common[:5]) + (", …" if len(common) > 5 else "")
                noun = "task" if len(common) == 1 else "tasks"
                out.append(f"{a} overlaps {b}: {len(common)} {noun} ({shown})")
        return out

    def text_of(self, task_id: str) -> str:
        """Every value of the row, nested ones included, joined into one lowercase string for searching."""
        return " ".join(_flatten(self.tasks[task_id])).lower()


def load_tasks(config: Config, *, require_test: bool = True) -> TaskSet:
    """The tasks and splits `config` names; with `require_test`, data.test must be set and hold some task."""
    source = config.tasks_path
    if source is None:
        raise InputError(f"{config.shown}: data.tasks is not set")
    if require_test and config.test_path is None:
        raise InputError(f"{config.shown}: data.test is not set (evaluation needs a test split)")
    tasks = read_tasks(source)
    paths = {"train": config.train_path, "val": config.val_path, "test": config.test_path}
    splits = {name: read_split(p, tasks) if p is not None else [] for name, p in paths.items()}
    if require_test and not splits["test"]:
        raise InputError(f"{paths['test']}: the test split is empty")
    return TaskSet(tasks=tasks, splits=splits, source=source)
