"""Record-shaped views of an :class:`~hermit_tui.core.records.table.AttemptTable`'s rows: one attempt's figures
read from the arrays (:class:`AttemptRow`), and the latest attempt of each (task, repeat) as a mapping
(:class:`KeyedRecords`) whose records are read back from the file on demand."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermit_tui.core.records.results import AttemptRecord
    from hermit_tui.core.records.table import AttemptTable


class AttemptRow:
    """One attempt's figures read from the table's arrays, shaped like an AttemptRecord's (``id``, ``repeat``,
    ``status``, ``error``, ``judge.score``, ``cost_usd``, ``tokens``, ``wall_s``, ``key``) without building one."""

    __slots__ = ("table", "row")

    def __init__(self, table: AttemptTable, row: int) -> None:
        self.table, self.row = table, row

    @property
    def id(self) -> str:
        return self.table.task_id(self.row)

    @property
    def repeat(self) -> int:
        return int(self.table._arrays()["repeat"][self.row])

    @property
    def key(self) -> tuple[str, int]:
        return self.id, self.repeat

    @property
    def status(self) -> str:
        return self.table.status_name(self.row)

    @property
    def error(self) -> str | None:
        return self.table.errors.get(self.row)

    @property
    def score(self) -> float:
        return float(self.table._arrays()["score"][self.row])

    @property
    def judge(self) -> AttemptRow:  # rec.judge.score
        return self

    @property
    def cost_usd(self) -> float | None:
        v = float(self.table._arrays()["cost"][self.row])
        return None if math.isnan(v) else v

    @property
    def tokens(self) -> Any:
        return self.table.token_value(self.row)

    @property
    def wall_s(self) -> float:
        return float(self.table._arrays()["wall"][self.row])

    def record(self) -> AttemptRecord:
        return self.table.record(self.row)


class KeyedRecords(Mapping[tuple[str, int], Any]):
    """(task id, repeat) -> the latest AttemptRecord of a table, built on first use and read on demand."""

    def __init__(self, table: AttemptTable, light: bool = False) -> None:
        self.table, self.light = table, light
        self._rows: dict[tuple[str, int], int] | None = None

    @property
    def rows(self) -> dict[tuple[str, int], int]:
        if self._rows is None:
            t = self.table
            ids, task, rep = t.ids, t.task, t.repeat
            self._rows = {(ids[task[r]], int(rep[r])): int(r) for r in t.latest().tolist()}
        return self._rows

    def __getitem__(self, key: tuple[str, int]) -> Any:
        row = self.rows[key]
        return AttemptRow(self.table, row) if self.light else self.table.record(row)

    def __contains__(self, key: object) -> bool:
        return key in self.rows

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


__all__ = ["AttemptRow", "KeyedRecords"]
