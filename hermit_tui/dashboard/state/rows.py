"""The per-task table of the store (``EvalStore.rows``), computed on arrays: filters are masks, sorts are numpy
argsorts, and a row (:class:`TaskRow`, with its :class:`~hermit_tui.dashboard.state.column.Cell` per column) is built
only when the table paints it. 111,112 tasks x 3 columns filter and sort in tens of milliseconds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from hermit_tui.dashboard.state.column import Cell, Column, cell_at

if TYPE_CHECKING:
    from hermit_tui.dashboard.state.store import Filter

TOL = 1e-9


@dataclass(slots=True)
class TaskRow:
    """A row of the per-task table."""

    task_id: str
    cells: list[Cell | None]
    deltas: list[float | None]  # each column's mean minus the baseline column's mean

    def value(self, sort_key: str, columns: list[str]) -> tuple:
        """A sort key: missing values sort last whatever the direction."""
        if sort_key == "id":
            return (0, self.task_id)
        kind, _, name = sort_key.partition(":")
        if name not in columns:
            return (1, 0.0)
        i = columns.index(name)
        cell = self.cells[i]
        if kind == "mean":
            v = cell.mean if cell else None
        elif kind == "solved":
            v = float(cell.solved_once) if cell and cell.n else None
        else:
            v = self.deltas[i]
        return (1, 0.0) if v is None else (0, v)


#: Ids looked up per C call where a worker thread maps a million-attempt store's ids: a single call over 111,112 ids
#: holds the interpreter lock 10-20 ms, and the event loop waits that long for it.
LOOKUP_SLICE = 8192


def local_index(col: Column, ids: list[str], pause: Callable[[], None] | None = None) -> np.ndarray:
    """For each of the store's task ids, its index in the column's table (-1: none), cached until either grows."""
    table = col.table
    stamp = (len(ids), len(table.ids), id(table))
    cached = getattr(col, "_g2l", None)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    loc = np.empty(len(ids), dtype=np.int64)
    get = table.index.get
    for start in range(0, len(ids), LOOKUP_SLICE):  # one C call per slice: the lock changes hands between them
        part = ids[start : start + LOOKUP_SLICE]
        loc[start : start + len(part)] = np.fromiter(map(get, part, repeat(-1)), dtype=np.int64, count=len(part))
        if pause is not None:
            pause()
    col._g2l = (stamp, loc)  # type: ignore[attr-defined]
    return loc


class Grid:
    """One column's per-task figures over the store's task ids (NaN / 0 where the column has no attempt)."""

    def __init__(self, col: Column, ids: list[str], pause: Callable[[], None] | None = None):
        self.col = col
        loc = local_index(col, ids, pause)
        ix = col.index
        tasks = len(ix.ids)
        n_local = ix.cell("n")
        valid = (loc >= 0) & (loc < min(tasks, len(n_local)))
        self.loc = np.where(valid, loc, -1)
        at = self.loc[valid]

        def gather(name: str, fill: Any) -> np.ndarray:
            values = ix.cell(name)
            out = np.full(len(ids), fill, dtype=values.dtype)
            out[valid] = values[at]
            return out

        self.n = gather("n", 0)
        self.present = self.n > 0
        self.loc[~self.present] = -1
        with np.errstate(invalid="ignore", divide="ignore"):
            self.mean = np.where(self.present, gather("total", 0.0) / np.maximum(self.n, 1), np.nan)
        self._gather = gather

    def figure(self, name: str, fill: Any = 0) -> np.ndarray:
        return self._gather(name, fill)

    def flaky(self) -> np.ndarray:
        solved = self.figure("solved")
        spread = self.figure("hi", -np.inf) - self.figure("lo", np.inf)
        with np.errstate(invalid="ignore"):
            return (self.n > 1) & (((solved > 0) & (solved < self.n)) | (spread > TOL))


class TaskRows(Sequence):
    """The rows of the per-task table in the order shown: task positions (into the store's ids) and the columns'
    arrays; ``rows[i]`` builds the :class:`TaskRow`."""

    def __init__(
        self,
        ids: list[str],
        order: np.ndarray,
        grids: list[Grid],
        base: Grid | None,
        positions: dict[str, int] | None = None,
    ):
        self.ids, self.order, self.grids, self.base = ids, order, grids, base
        self._positions = positions  # task id -> position in ids (the store's; may know ids added since)

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._row(int(g)) for g in self.order[i].tolist()]
        return self._row(int(self.order[i]))

    def _row(self, g: int) -> TaskRow:
        cells: list[Cell | None] = []
        for grid in self.grids:
            local = int(grid.loc[g])
            cells.append(cell_at(grid.col.index, local) if local >= 0 else None)
        base = None
        if self.base is not None and self.base.present[g]:
            base = float(self.base.mean[g])
        deltas = [None if c is None or c.mean is None or base is None else c.mean - base for c in cells]
        return TaskRow(self.ids[g], cells, deltas)

    def position(self, task_id: str) -> int | None:
        """Where the task's row is (None: filtered out)."""
        if self._positions is None:
            self._positions = dict(zip(self.ids, range(len(self.ids))))
        g = self._positions.get(task_id)
        if g is None or g >= len(self.ids):
            return None
        found = np.flatnonzero(self.order == g)
        return int(found[0]) if len(found) else None

    def id_width(self) -> int:
        """The longest task id among the rows (4 when there are none)."""
        ids = self.ids
        return max(map(len, map(ids.__getitem__, self.order.tolist())), default=4)

    @property
    def task_ids(self) -> list[str]:
        return [self.ids[g] for g in self.order.tolist()]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, TaskRows)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def compute_rows(
    ids: list[str],
    cols: list[Column],
    base: Column | None,
    compare: tuple[Column | None, Column | None] | None,
    filter: Filter,
    search_mask: np.ndarray | None,
    label_mask: np.ndarray | None,
    sort: str,
    reverse: bool,
    positions: dict[str, int] | None = None,
    pause: Callable[[], None] | None = None,
) -> TaskRows:
    """The table's rows over the task ids ``ids`` (see ``EvalStore.rows``); ``pause``: called between steps by a
    worker thread, to give way to the interface."""
    grids = [Grid(c, ids, pause) for c in cols]
    by_col = {id(g.col): g for g in grids}

    def grid_of(col: Column | None) -> Grid | None:
        if col is None:
            return None
        return by_col.get(id(col)) or by_col.setdefault(id(col), Grid(col, ids))

    base_grid = grid_of(base)
    keep = np.ones(len(ids), dtype=bool)
    if label_mask is not None:
        keep &= label_mask
    if search_mask is not None:
        keep &= search_mask
    if filter != "all":
        keep &= _filter(filter, grids, compare, grid_of, len(ids))
    order = np.flatnonzero(keep)
    if sort == "id":
        if reverse:
            order = np.array(sorted(order.tolist(), key=ids.__getitem__, reverse=True), dtype=np.int64)
    else:
        order = _sorted(order, sort, reverse, grids, base_grid)
    return TaskRows(ids, order, grids, base_grid, positions)


def _filter(filter: Filter, grids: list[Grid], compare, grid_of, size: int) -> np.ndarray:
    if filter == "errors":
        return _any(size, [(g.figure("errors") + g.figure("judge_errors")) > 0 for g in grids])
    if filter == "flaky":
        return _any(size, [g.flaky() for g in grids])
    if filter == "unknown_cost":
        return _any(size, [g.figure("unknown_cost") > 0 for g in grids])
    if compare is None:
        return np.zeros(size, dtype=bool)
    a, b = grid_of(compare[0]), grid_of(compare[1])
    if a is None or b is None:
        return np.zeros(size, dtype=bool)
    with np.errstate(invalid="ignore"):
        d = b.mean - a.mean  # NaN where either has no attempt: never kept
        return d < -TOL if filter == "regressions" else d > TOL


def _any(size: int, masks: list[np.ndarray]) -> np.ndarray:
    out = np.zeros(size, dtype=bool)
    for m in masks:
        out |= m
    return out


def _sorted(order: np.ndarray, sort: str, reverse: bool, grids: list[Grid], base: Grid | None) -> np.ndarray:
    """``order`` by a column's figure (stable; tasks without one last, whatever the direction)."""
    kind, _, name = sort.partition(":")
    grid = next((g for g in grids if g.col.key == name), None)
    if grid is None:
        return order
    if kind == "mean":
        v = grid.mean
    elif kind == "solved":
        v = np.where(grid.present, (grid.figure("solved") > 0).astype(float), np.nan)
    else:
        base_mean = base.mean if base is not None else np.full(len(grid.mean), np.nan)
        v = grid.mean - base_mean
    values = v[order]
    have = ~np.isnan(values)
    present, missing = order[have], order[~have]
    key = values[have]
    return np.concatenate([present[np.argsort(-key if reverse else key, kind="stable")], missing])


__all__ = ["Grid", "TaskRow", "TaskRows", "compute_rows", "local_index"]
