"""What the per-task table says about the store, without widgets: the pair its regression and improvement filters
compare, a task's text, a cell's error marks, an attempt's output on one line, the sortable columns, the label
filter's name, and a task's attempts in triage order."""

from __future__ import annotations

from hermit_tui.dashboard.state.store import LABEL_FILTER_NAMES, Cell, EvalStore
from hermit_tui.dashboard.widgets.attempt_grid import ERROR, JUDGE_ERROR


def compare_pair(store: EvalStore) -> tuple[str, str] | None:
    """(baseline, candidate) for the regression/improvement filters: the baseline against the last other column."""
    keys = store.keys
    if len(keys) < 2:
        return None
    base = store.baseline if store.baseline in store.columns else keys[0]
    return base, keys[-1] if keys[-1] != base else keys[0]


def task_text(store: EvalStore, task_id: str) -> str:
    """The task's fields other than its id, on one line."""
    row = store.tasks.get(task_id) or {}
    return " · ".join(str(v) for k, v in row.items() if k != "id" and v != task_id)


def error_marks(cell: Cell) -> str:
    """The grid's marks for a cell's failed attempts: ✗ (pipeline error), J (judge error), both, or ""."""
    return (ERROR if cell.errors else "") + (JUDGE_ERROR if cell.judge_errors else "")


def one_line(text: str) -> str:
    return " ⏎ ".join(line.strip() for line in text.strip().splitlines()) if "\n" in text else text.strip()


def output_of(rec) -> str:
    """An attempt's output on one line (its error when it has no output)."""
    if rec is None:
        return ""
    from hermit_tui.dashboard.widgets.attempt_card import output_text

    return one_line(output_text(rec))


def sort_keys(store: EvalStore) -> list[str]:
    """Every sortable column, in table order."""
    out = ["id"]
    for key in store.keys:
        out += [f"mean:{key}", f"solved:{key}"] + ([f"delta:{key}"] if key != store.baseline else [])
    return out


def label_filter_name(label: str | None) -> str:
    return "" if label is None else LABEL_FILTER_NAMES.get(label, f"label: {label}")


def row_attempts(store: EvalStore, task_id: str) -> list[tuple[str, str, int]]:
    """Every attempt of a task, (column, task, repeat): the failures first, then the others, each by column and
    repeat. The per-task table's target attempt cycles through them (a). Read by key: a cursor move stays cheap on
    a large store."""
    repeats = range(1, max(store.repeats, 1) + 1)
    found = [
        (key, r, col.index.failed_row(row))
        for key, col in store.columns.items()
        for r in repeats
        if (row := col.index.row_of(task_id, r)) >= 0
    ]
    return [(key, task_id, r) for key, r, failed in found if failed] + [
        (key, task_id, r) for key, r, failed in found if not failed
    ]


__all__ = [
    "compare_pair",
    "error_marks",
    "label_filter_name",
    "one_line",
    "output_of",
    "row_attempts",
    "sort_keys",
    "task_text",
]
