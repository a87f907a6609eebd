"""Where it helps and where it hurts: the test split cut into slices (by a field of the task rows, each value of a
list field its own slice, or a file of task id → slice), and per slice the figures the whole split has (each
selector's mean with its interval; per pair the paired difference with its interval and p-value, wins, losses,
ties and transitions), adjusted for looking at every slice at once.

Two adjustments, named beside the raw values (``core.stats.multiplicity``):

- the pair's p-value, adjusted by Benjamini–Hochberg: a screening list (which slices differ at all);
- "this slice is hurt": a one-sided test that the slice's mean difference lies below −M (the margin; 0 by
  default), on the slice's per-task differences (Student t with n − 1 degrees of freedom), adjusted by Holm over
  the slices. A slice is named as hurt only when its Holm-adjusted p is at most :data:`HURT_ALPHA`: the chance that
  any slice is wrongly named stays at most that.

A slice too small to show anything (fewer than :data:`MIN_TASKS` paired tasks, or no spread to measure) says so
with its minimum detectable difference instead of a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel

from hermit_tui.core.errors import InputError
from hermit_tui.core.records.scores import TaskTable
from hermit_tui.core.stats.figures import PairStats, pair_stats, selector_stats
from hermit_tui.core.stats.multiplicity import BH, HOLM, benjamini_hochberg, holm

HURT_ALPHA = 0.025  # one-sided, the lower half of a two-sided 95% interval
MIN_TASKS = 3
NO_VALUE = "(no value)"
HURT_TEST = "one-sided t test on the slice's per-task differences: H0 the difference is at least −M"


class SliceSelector(BaseModel):
    label: str
    n_tasks: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None


class SlicePair(BaseModel):
    a: str
    b: str
    n_paired: int
    mean_diff: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None  # the pair's own test, as on the whole split
    p_bh: float | None = None  # adjusted over the slices (screening)
    p_hurt: float | None = None  # one-sided: the difference lies below -margin
    p_hurt_holm: float | None = None  # adjusted over the slices (the claim "this slice is hurt")
    hurt: bool = False
    wins: int
    losses: int
    ties: int
    transition_counts: dict[str, int]
    mde: float | None
    too_small: bool
    reading: str  # in words: hurt, not shown to be hurt, too small to show anything


class Slice(BaseModel):
    name: str
    task_ids: list[str]
    selectors: list[SliceSelector]
    pairs: list[SlicePair]


class SliceReport(BaseModel):
    by: str  # the field, or the file the slices came from
    margin: float
    hurt_alpha: float = HURT_ALPHA
    fwer_method: str = HOLM
    fdr_method: str = BH
    hurt_test: str = HURT_TEST
    slices: list[Slice]
    unsliced: int  # test tasks in no slice

    def hurt(self) -> list[tuple[Slice, SlicePair]]:
        return [(s, p) for s in self.slices for p in s.pairs if p.hurt]


# ---------------------------------------------------------------------------------------------------- the groups


def _values(value: object) -> list[str]:
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, (list, tuple, set)):
        return [str(v) for v in value if v is not None and v != ""]
    if isinstance(value, dict):
        raise InputError("a slice field must hold a value or a list of values, not a mapping")
    return [str(value)]


def groups_by_field(
    tasks: Mapping[str, Mapping[str, object]], test_ids: Sequence[str], field: str
) -> dict[str, list[str]]:
    """Slice name → test task ids (test order) by ``field`` of the task rows: each value its slice, each value of a
    list its slice (a task can then sit in several). Tasks without the field go to :data:`NO_VALUE`. A field no
    test task has is an InputError naming the fields they do have."""
    if not any(field in tasks.get(t, {}) for t in test_ids):
        known = sorted({k for t in test_ids for k in tasks.get(t, {}) if k != "id"})
        raise InputError(f"--slice-by {field[:60]!r}: no test task has that field (they have: {', '.join(known)})")
    out: dict[str, list[str]] = {}
    for tid in test_ids:
        row = tasks.get(tid, {})
        try:
            values = _values(row.get(field))
        except InputError as exc:
            raise InputError(f"--slice-by {field}: task {tid}: {exc}") from None
        for v in values or [NO_VALUE]:
            out.setdefault(v, []).append(tid)
    return out


def groups_from_mapping(mapping: Mapping[str, str | Sequence[str]], test_ids: Sequence[str]) -> dict[str, list[str]]:
    """Slice name → test task ids from a task id → slice (or list of slices) mapping; test tasks it does not name
    are left out (counted as unsliced)."""
    out: dict[str, list[str]] = {}
    for tid in test_ids:
        if tid in mapping:
            for v in _values(mapping[tid]):
                out.setdefault(v, []).append(tid)
    return out


# ---------------------------------------------------------------------------------------------------- the figures


def restrict(table: TaskTable, ids: Sequence[str]) -> TaskTable:
    """``table`` (one selector's scores by task) restricted to ``ids``, a subsequence of its ids in their order."""
    pos = {t: i for i, t in enumerate(table.ids)}
    wanted = np.array([pos[t] for t in ids], dtype=np.int64)
    if len(wanted) > 1 and not bool(np.all(np.diff(wanted) > 0)):
        raise ValueError("the slice's ids must follow the table's order")
    new_pos = np.full(len(table.ids), -1, dtype=np.int64)
    new_pos[wanted] = np.arange(len(wanted))
    keep = new_pos[table.index] >= 0
    lengths = np.diff(table.offsets)
    scores = table.scores[np.repeat(keep, lengths)]
    offsets = np.concatenate([[0], np.cumsum(lengths[keep])]).astype(table.offsets.dtype)
    return TaskTable(
        ids=list(ids),
        index=new_pos[table.index[keep]],
        n=table.n[keep],
        mean=table.mean[keep],
        sd=table.sd[keep],
        solved=table.solved[keep],
        scores=scores,
        offsets=offsets,
        n_ignored=0,
        nonfinite=0,
        threshold=table.threshold,
    )


def _p_below(pair: PairStats, margin: float) -> float | None:
    """One-sided p for H0: difference ≥ −margin (small when the slice is clearly worse by more than the margin)."""
    if pair.mean_diff is None or pair.se is None or pair.n_paired < 2:
        return None
    from scipy.special import stdtr

    if pair.se <= 0:
        return 0.0 if pair.mean_diff < -margin else 1.0
    t = (pair.mean_diff + margin) / pair.se
    return float(stdtr(pair.n_paired - 1, t))


def _slice_pair(pair: PairStats, margin: float) -> SlicePair:
    too_small = pair.n_paired < MIN_TASKS or pair.mde is None
    return SlicePair(
        a=pair.a,
        b=pair.b,
        n_paired=pair.n_paired,
        mean_diff=pair.mean_diff,
        ci_low=pair.ci_low,
        ci_high=pair.ci_high,
        p_value=pair.p_value,
        p_hurt=None if too_small else _p_below(pair, margin),
        wins=pair.wins,
        losses=pair.losses,
        ties=pair.ties,
        transition_counts=dict(pair.transition_counts),
        mde=pair.mde,
        too_small=too_small,
        reading="",
    )


def _reading(p: SlicePair, margin: float) -> str:
    if p.too_small:
        tasks = f"{p.n_paired} paired task{'s' * (p.n_paired != 1)}"
        if p.mde is None or not math.isfinite(p.mde) or p.mde <= 0:
            why = "no spread between its tasks to measure a difference by"
        elif p.mde >= 2:
            why = "no difference the scores allow could be shown"
        else:
            why = f"it could only show a difference of {p.mde:.2f} or more"
        return f"too small to show anything: {tasks}; {why}"
    below = f"below −{margin:g}" if margin else "below 0"
    if p.hurt:
        return f"hurt: the difference lies {below} (Holm-adjusted p {p.p_hurt_holm:.3g} ≤ {HURT_ALPHA:g})"
    return (
        f"not shown to be hurt: Holm-adjusted p {p.p_hurt_holm:.3g} for a difference {below}"
        if (p.p_hurt_holm is not None)
        else "not shown to be hurt"
    )


def slice_report(
    groups: Mapping[str, Sequence[str]],
    tables: Mapping[str, TaskTable],
    pairs: Sequence[tuple[str, str]],
    test_ids: Sequence[str],
    *,
    by: str,
    margin: float = 0.0,
) -> SliceReport:
    """Per slice (in the order of ``groups``), each selector's figures and each pair's (a = baseline, b = candidate),
    adjusted over the slices per pair. ``tables``: each selector's TaskTable over ``test_ids``."""
    if not (math.isfinite(margin) and margin >= 0):
        raise InputError(f"--margin must be a number, 0 or more, got {margin}")
    order = {t: i for i, t in enumerate(test_ids)}
    slices: list[Slice] = []
    for name, ids in groups.items():
        ids = sorted(dict.fromkeys(t for t in ids if t in order), key=order.__getitem__)
        if not ids:
            continue
        sub = {label: restrict(t, ids) for label, t in tables.items()}
        sels = []
        for label, t in sub.items():
            st = selector_stats(label, t, ids, t.threshold)
            sels.append(
                SliceSelector(label=label, n_tasks=st.n_tasks, mean=st.mean, ci_low=st.ci_low, ci_high=st.ci_high)
            )
        slice_pairs = [_slice_pair(pair_stats(a, sub[a], b, sub[b], ids, sub[a].threshold), margin) for a, b in pairs]
        slices.append(Slice(name=name, task_ids=ids, selectors=sels, pairs=slice_pairs))
    for k in range(len(pairs)):
        row = [s.pairs[k] for s in slices]
        for p, bh in zip(row, benjamini_hochberg([p.p_value for p in row])):
            p.p_bh = bh
        for p, hp in zip(row, holm([p.p_hurt for p in row])):
            p.p_hurt_holm = hp
            p.hurt = hp is not None and hp <= HURT_ALPHA and p.mean_diff is not None and p.mean_diff < -margin
            p.reading = _reading(p, margin)
    sliced = {t for s in slices for t in s.task_ids}
    return SliceReport(by=by, margin=margin, slices=slices, unsliced=sum(t not in sliced for t in test_ids))


__all__ = [
    "HURT_ALPHA",
    "HURT_TEST",
    "MIN_TASKS",
    "NO_VALUE",
    "Slice",
    "SlicePair",
    "SliceReport",
    "SliceSelector",
    "groups_by_field",
    "groups_from_mapping",
    "restrict",
    "slice_report",
]
