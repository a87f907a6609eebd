"""Bounds under errors: does a paired comparison survive the attempts that failed for reasons other than the
adapter (a pipeline or a judge error)?

Every figure elsewhere counts an errored attempt as the failure it was scored as. Here the pair is computed three
ways, on the latest attempt of each task and repeat:

- **as failures**: as recorded (today's figures);
- **as successes**: every errored attempt scored 1, the top of the range;
- **left out**: errored attempts dropped (a task left with no attempt drops out of the pair).

The reading holds when the three decisions agree; otherwise it depends on how the errors are counted, and says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from hermit_tui.core.records.scores import AttemptColumns, tabulate
from hermit_tui.core.stats.figures import pair_stats

READINGS = ("as failures", "as successes", "left out")


class BoundReading(BaseModel):
    reading: str
    n_paired: int
    mean_diff: float | None
    ci_low: float | None
    ci_high: float | None
    decision: str


class ErrorBounds(BaseModel):
    a: str
    b: str
    errors_a: int  # errored latest attempts on the test tasks
    errors_b: int
    readings: list[BoundReading]
    holds: bool  # the three decisions agree
    sentence: str


def _latest(cols: AttemptColumns, errored: np.ndarray) -> tuple[AttemptColumns, np.ndarray]:
    """The last attempt of each (task, repeat) on the test tasks, with its error flag."""
    n = len(cols.task)
    order = np.lexsort((np.arange(n), cols.repeat, cols.task))
    t, r = cols.task[order], cols.repeat[order]
    last = np.ones(n, dtype=bool)
    if n > 1:
        last[:-1] = (t[1:] != t[:-1]) | (r[1:] != r[:-1])
    keep = np.sort(order[last & (t >= 0)])
    return AttemptColumns(task=cols.task[keep], repeat=cols.repeat[keep], score=cols.score[keep]), errored[keep]


def _variant(cols: AttemptColumns, errored: np.ndarray, reading: str) -> AttemptColumns:
    if reading == "as successes":
        return AttemptColumns(task=cols.task, repeat=cols.repeat, score=np.where(errored, 1.0, cols.score))
    if reading == "left out":
        ok = ~errored
        return AttemptColumns(task=cols.task[ok], repeat=cols.repeat[ok], score=cols.score[ok])
    return cols


def error_bounds(
    a: str,
    cols_a: AttemptColumns,
    errored_a: np.ndarray,
    b: str,
    cols_b: AttemptColumns,
    errored_b: np.ndarray,
    test_ids: Sequence[str],
    threshold: float,
) -> ErrorBounds:
    """The pair b − a under the three readings (``errored_*``: per row of ``cols_*``, whether the attempt ended in
    a pipeline or judge error)."""
    la, ea = _latest(cols_a, np.asarray(errored_a, dtype=bool))
    lb, eb = _latest(cols_b, np.asarray(errored_b, dtype=bool))
    readings = []
    for reading in READINGS:
        ta = tabulate(_variant(la, ea, reading), test_ids, threshold)
        tb = tabulate(_variant(lb, eb, reading), test_ids, threshold)
        p = pair_stats(a, ta, b, tb, test_ids, threshold, simulate_power=False)  # the interval and verdict only
        readings.append(
            BoundReading(
                reading=reading,
                n_paired=p.n_paired,
                mean_diff=p.mean_diff,
                ci_low=p.ci_low,
                ci_high=p.ci_high,
                decision=str(p.decision.value),
            )
        )
    n_err = int(ea.sum() + eb.sum())
    decisions = {r.decision for r in readings}
    holds = len(decisions) == 1
    noun = f"{n_err} errored attempt{'s' * (n_err != 1)}"
    if n_err == 0:
        sentence = "no attempt ended in an error: nothing to bound"
    elif holds:
        sentence = f"the reading ({readings[0].decision}) holds however the {noun} are counted"
    else:
        each = ", ".join(f"{r.decision} {r.reading}" for r in readings)
        sentence = f"the reading depends on how the {noun} are counted: {each}"
    return ErrorBounds(
        a=a, b=b, errors_a=int(ea.sum()), errors_b=int(eb.sum()), readings=readings, holds=holds, sentence=sentence
    )


__all__ = ["READINGS", "BoundReading", "ErrorBounds", "error_bounds"]
