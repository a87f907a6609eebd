"""Where it helps and where it hurts: the test split cut into slices (by a field of the task rows, each value of a
list field its own slice, or a file of task id → slice), and per slice the figures the whole split has (each
selector's mean with its interval; per pair the paired difference with its interval and p-value, wins, losses,
ties and transitions), adjusted for looking at every slice at once.

Two adjustments, named beside the raw values (``core.stats.multiplicity``):

- the slice's p-value of "no difference" (the one that belongs to the pair interval, as on the whole split),
  adjusted by Benjamini–Hochberg: a screening list (which slices differ at all);
- "this slice is hurt": the one-sided test that the slice's mean difference lies below −M (the margin; 0 by
  default) that belongs to the same interval (one-sided 0.025: the 95% interval lies below −M), adjusted by Holm
  over the slices. A slice is named as hurt only when its Holm-adjusted p is at most :data:`HURT_ALPHA`: the chance that
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
from hermit_tui.core.stats.figures import TIE_TOL, TRANSITIONS, _t_power, _transitions
from hermit_tui.core.stats.intervals import (
    PairSummary,
    attempts_cap,
    pair_interval,
    pair_summary,
    stack_summaries,
    summary_p_values,
    task_mean_interval,
)
from hermit_tui.core.stats.multiplicity import BH, HOLM, benjamini_hochberg, holm

HURT_ALPHA = 0.025  # one-sided, the lower half of a two-sided 95% interval
MIN_TASKS = 3
NO_VALUE = "(no value)"
HURT_TEST = "one-sided test of the pair interval: H0 the difference is at least −M"


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
    p_value: float | None  # the p-value of "no difference" that belongs to the pair interval, as on the whole split
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


def restrict(table: TaskTable, ids: Sequence[str], positions: Mapping[str, int] | None = None) -> TaskTable:
    """``table`` (one selector's scores by task) restricted to ``ids``, a subsequence of its ids in their order
    (``positions``: each id's position in ``table.ids``, when the caller has it)."""
    pos = positions if positions is not None else {t: i for i, t in enumerate(table.ids)}
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


def _p_hurt(p_two_sided: float | None, mean: float | None, margin: float) -> float | None:
    """One-sided p for H0: difference ≥ −margin, from the two-sided p of "the difference is −margin" that belongs to
    the pair interval (``core.stats.intervals.pair_p_value``): a slice is hurt at one-sided 0.025 exactly when its
    95% interval lies below −margin."""
    if p_two_sided is None or mean is None:
        return None
    return p_two_sided / 2 if mean < -margin else 1 - p_two_sided / 2


class _Columns:
    """One selector's TaskTable read once for every slice: each test position's row (−1: no attempt), and per row
    the lowest and highest score and whether every score is 0 or 1 (what a slice's range and pass/fail test need,
    without cutting a table per slice)."""

    def __init__(self, table: TaskTable, n_ids: int) -> None:
        self.table = table
        rows = len(table.index)
        self.row_of = np.full(n_ids, -1, dtype=np.int64)
        self.row_of[table.index] = np.arange(rows)
        starts, ends = table.offsets[:-1], table.offsets[1:]
        self.low, self.high = np.full(rows, np.inf), np.full(rows, -np.inf)
        filled = ends > starts
        if filled.any():
            self.low[filled] = np.minimum.reduceat(table.scores, starts[filled])
            self.high[filled] = np.maximum.reduceat(table.scores, starts[filled])
        other = np.concatenate([[0], np.cumsum(~((table.scores == 0.0) | (table.scores == 1.0)))])
        self.unit_binary = other[ends] == other[starts]

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """The rows of the attempted tasks among ``positions`` (ascending), in their order."""
        rows = self.row_of[positions]
        out: np.ndarray = rows[rows >= 0]
        return out

    def extent(self, rows: np.ndarray) -> tuple[float, float]:
        """(lowest, highest) score of these rows (``inf, -inf`` without one)."""
        if not len(rows):
            return math.inf, -math.inf
        return float(self.low[rows].min()), float(self.high[rows].max())

    def binary(self, rows: np.ndarray, lo: float, hi: float) -> bool:
        """Every score of these rows at ``lo`` or ``hi`` (as ``np.all((scores == lo) | (scores == hi))``)."""
        if lo == 0.0 and hi == 1.0:
            return bool(self.unit_binary[rows].all())
        t = self.table
        lengths = t.offsets[rows + 1] - t.offsets[rows]
        at = np.repeat(t.offsets[rows] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        scores = t.scores[at + np.arange(int(lengths.sum()))]
        return bool(np.all((scores == lo) | (scores == hi)))


def _scale(*extents: tuple[float, float]) -> tuple[float, float]:
    """``score_range`` of the slice tables with these extents."""
    lo, hi = 0.0, 1.0
    for low, high in extents:
        if low <= high:
            lo, hi = min(lo, low), max(hi, high)
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else (0.0, 1.0)


def _slice_selector(label: str, cols: _Columns, rows: np.ndarray) -> SliceSelector:
    """A selector's figures on one slice, as ``selector_stats`` on the slice's table gives them."""
    if not len(rows):
        return SliceSelector(label=label, n_tasks=0, mean=None, ci_low=None, ci_high=None)
    t = cols.table
    means = t.mean[rows]
    lo, hi = _scale(cols.extent(rows))
    iv = task_mean_interval(means, t.n[rows], cols.binary(rows, lo, hi), lo, hi)
    return SliceSelector(
        label=label,
        n_tasks=len(rows),
        mean=float(means.mean()),
        ci_low=iv.low if iv is not None else None,
        ci_high=iv.high if iv is not None else None,
    )


class _PValues:
    """The p-values every slice and pair asks for, computed in one vectorised bisection at the end
    (``core.stats.intervals.summary_p_values``: the values of one ``pair_p_value`` call each)."""

    def __init__(self) -> None:
        self.summaries: list[PairSummary] = []
        self.caps: list[tuple[float, float]] = []
        self.nulls: list[float] = []
        self.values: np.ndarray = np.zeros(0)

    def ask(self, summary: PairSummary, cap_a: float, cap_b: float, null: float) -> int:
        self.summaries.append(summary)
        self.caps.append((cap_a, cap_b))
        self.nulls.append(null)
        return len(self.nulls) - 1

    def compute(self) -> None:
        if self.nulls:
            caps = np.array(self.caps)
            s = stack_summaries(self.summaries)
            self.values = summary_p_values(s, caps[:, 0], caps[:, 1], np.array(self.nulls))

    def get(self, ticket: int | None) -> float | None:
        return None if ticket is None else float(self.values[ticket])


def _slice_pair(
    a: str, ca: _Columns, b: str, cb: _Columns, positions: np.ndarray, margin: float, pvals: _PValues
) -> tuple[SlicePair, int | None, int | None]:
    """A pair's figures on one slice, as the whole split's (the pair interval and the p-value that belongs to it,
    the counts and the minimum detectable difference); the exact randomisation test, a secondary figure of the whole
    split, is not run per slice. The p-values are asked of ``pvals``: (the pair, its tickets for p and hurt p)."""
    ta, tb = ca.table, cb.table
    ra, rb = ca.row_of[positions], cb.row_of[positions]
    both = (ra >= 0) & (rb >= 0)
    ia, ib = ra[both], rb[both]
    own_a, own_b = ra[ra >= 0], rb[rb >= 0]
    lo, hi = _scale(ca.extent(own_a), cb.extent(own_b))
    n = len(ia)
    ma, mb, ka, kb = ta.mean[ia], tb.mean[ib], ta.n[ia], tb.n[ib]
    diffs = mb - ma
    mean = float(diffs.mean()) if n else None
    se = float(diffs.std(ddof=1)) / math.sqrt(n) if n > 1 else None
    bin_a, bin_b = ca.binary(own_a, lo, hi), cb.binary(own_b, lo, hi)
    iv = pair_interval(ma, mb, ka, kb, bin_a, bin_b, lo, hi)
    mde = None
    if se is not None and se > 0 and iv is not None and mean is not None:
        below, above = mean - iv.low, iv.high - mean
        half = below if mean > 0 else above if mean < 0 else max(below, above)
        mde = half + _t_power(n - 1) * se
    too_small = n < MIN_TASKS or mde is None
    p_ticket = hurt_ticket = None
    if n >= 2 and hi > lo:  # where pair_p_value gives a value
        width = hi - lo
        summary = pair_summary((ma - lo) / width, (mb - lo) / width)
        cap_a = float(attempts_cap(ka)) if bin_a else math.inf
        cap_b = float(attempts_cap(kb)) if bin_b else math.inf
        p_ticket = pvals.ask(summary, cap_a, cap_b, 0.0)
        if not too_small:
            hurt_ticket = pvals.ask(summary, cap_a, cap_b, -margin / width)
    codes = _transitions(ta.solved[ia], ka, tb.solved[ib], kb)
    wins, losses = int((diffs > TIE_TOL).sum()), int((diffs < -TIE_TOL).sum())
    pair = SlicePair(
        a=a,
        b=b,
        n_paired=n,
        mean_diff=mean,
        ci_low=iv.low if iv is not None else None,
        ci_high=iv.high if iv is not None else None,
        p_value=None,
        wins=wins,
        losses=losses,
        ties=n - wins - losses,
        transition_counts={t: int((codes == k).sum()) for k, t in enumerate(TRANSITIONS)},
        mde=mde,
        too_small=too_small,
        reading="",
    )
    return pair, p_ticket, hurt_ticket


def _reading(p: SlicePair, margin: float) -> str:
    if p.too_small:
        tasks = f"{p.n_paired} paired task{'s' * (p.n_paired != 1)}"
        if p.mde is None or not math.isfinite(p.mde) or p.mde <= 0:
            why = "its tasks show no spread to project a detectable difference from"
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
    cols = {label: _Columns(t, len(test_ids)) for label, t in tables.items()}
    pvals = _PValues()
    slices: list[Slice] = []
    tickets: list[tuple[SlicePair, int | None, int | None]] = []
    for name, ids in groups.items():
        positions = np.array(sorted({order[t] for t in ids if t in order}), dtype=np.int64)
        if not len(positions):
            continue
        sels = [_slice_selector(label, c, c.rows(positions)) for label, c in cols.items()]
        asked = [_slice_pair(a, cols[a], b, cols[b], positions, margin, pvals) for a, b in pairs]
        tickets += asked
        task_ids = [test_ids[i] for i in positions.tolist()]
        slices.append(Slice(name=name, task_ids=task_ids, selectors=sels, pairs=[p for p, _, _ in asked]))
    pvals.compute()
    for p, p_ticket, hurt_ticket in tickets:
        p.p_value = pvals.get(p_ticket)
        p.p_hurt = _p_hurt(pvals.get(hurt_ticket), p.mean_diff, margin)
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
