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
from hermit_tui.core.stats.figures import TIE_TOL, TRANSITIONS, _transitions, closed_form_mde
from hermit_tui.core.stats.intervals import (
    PairSummary,
    attempts_cap,
    mean_bounds,
    pair_summary,
    stack_summaries,
    summary_bounds,
    summary_p_values,
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


class _Pair:
    """A pair on one slice before the intervals: the paired figures, and the summary its interval and tests are
    made from (None where ``pair_interval`` gives none: fewer than 2 paired tasks)."""

    def __init__(self, a: str, ca: _Columns, b: str, cb: _Columns, positions: np.ndarray) -> None:
        ta, tb = ca.table, cb.table
        ra, rb = ca.row_of[positions], cb.row_of[positions]
        both = (ra >= 0) & (rb >= 0)
        ia, ib = ra[both], rb[both]
        own_a, own_b = ra[ra >= 0], rb[rb >= 0]
        lo, hi = _scale(ca.extent(own_a), cb.extent(own_b))
        self.a, self.b, self.width = a, b, hi - lo
        self.n = n = len(ia)
        ma, mb, ka, kb = ta.mean[ia], tb.mean[ib], ta.n[ia], tb.n[ib]
        diffs = mb - ma
        self.mean = float(diffs.mean()) if n else None
        self.se = float(diffs.std(ddof=1)) / math.sqrt(n) if n > 1 else None
        self.summary: PairSummary | None = None
        self.caps = (math.inf, math.inf)
        if n >= 2 and hi > lo:  # where pair_interval and pair_p_value give a value
            self.summary = pair_summary((ma - lo) / self.width, (mb - lo) / self.width)
            bin_a, bin_b = ca.binary(own_a, lo, hi), cb.binary(own_b, lo, hi)
            self.caps = (float(attempts_cap(ka)) if bin_a else math.inf, float(attempts_cap(kb)) if bin_b else math.inf)
        codes = _transitions(ta.solved[ia], ka, tb.solved[ib], kb)
        self.wins, self.losses = int((diffs > TIE_TOL).sum()), int((diffs < -TIE_TOL).sum())
        self.transitions = {t: int((codes == k).sum()) for k, t in enumerate(TRANSITIONS)}


def _selectors(cols: Mapping[str, _Columns], slices: Sequence[np.ndarray]) -> list[list[SliceSelector]]:
    """Each selector's figures on each slice (its test positions), as ``selector_stats`` on the slice's table gives
    them, the intervals in one vectorised call (``core.stats.intervals.mean_bounds``)."""
    keys, args = [], []
    for k, positions in enumerate(slices):
        for label, c in cols.items():
            rows = c.rows(positions)
            keys.append((k, label, len(rows)))
            if not len(rows):
                args.append((0.0, math.nan, math.nan, 0.0, 1.0, math.inf))
                continue
            t = c.table
            means = t.mean[rows]
            lo, hi = _scale(c.extent(rows))
            cap = float(attempts_cap(t.n[rows])) if c.binary(rows, lo, hi) else math.inf
            sd = float(means.std(ddof=1)) if len(rows) > 1 else math.nan
            args.append((float(len(rows)), float(means.mean()), sd, lo, hi, cap))
    out: list[list[SliceSelector]] = [[] for _ in slices]
    if not args:
        return out
    table = np.array(args, dtype=float)  # per slice and selector: tasks, mean, sd, lo, hi, cap
    mean = table[:, 1]
    low, high = mean_bounds(mean, table[:, 2], table[:, 0], table[:, 3], table[:, 4], table[:, 5])
    for j, (k, label, n_tasks) in enumerate(keys):
        out[k].append(
            SliceSelector(
                label=label,
                n_tasks=n_tasks,
                mean=float(mean[j]) if n_tasks else None,
                ci_low=None if math.isnan(low[j]) else float(low[j]),
                ci_high=None if math.isnan(high[j]) else float(high[j]),
            )
        )
    return out


def _slice_pairs(work: Sequence[_Pair], margin: float) -> list[SlicePair]:
    """Each pair's figures on each slice, as the whole split's (the pair interval and the p-value that belongs to
    it, the counts and the minimum detectable difference), every interval and p-value of every slice computed in
    vectorised calls (``core.stats.intervals.summary_bounds``, ``summary_p_values``: the values of one
    ``pair_interval`` and ``pair_p_value`` call each). The exact randomisation test, a secondary figure of the whole
    split, is not run per slice."""
    asked = [(j, w.summary) for j, w in enumerate(work) if w.summary is not None]
    at = {j: i for i, (j, _) in enumerate(asked)}
    ci_low: list[float] = []
    ci_high: list[float] = []
    if asked:
        s = stack_summaries([summary for _, summary in asked])
        caps = np.array([work[j].caps for j, _ in asked])
        widths = np.array([work[j].width for j, _ in asked])
        unit_low, unit_high, _ = summary_bounds(s, caps[:, 0], caps[:, 1])
        ci_low, ci_high = (widths * unit_low).tolist(), (widths * unit_high).tolist()
    out, tickets = [], []
    for j, w in enumerate(work):
        i = at.get(j)
        low, high = (ci_low[i], ci_high[i]) if i is not None else (None, None)
        mde = None
        if w.se is not None and w.se > 0 and low is not None and high is not None and w.mean is not None:
            mde = closed_form_mde(
                w.mean, low, high, w.se, w.n - 1
            )  # the closed form for every slice: docs/statistics.md
        too_small = w.n < MIN_TASKS or mde is None
        if i is not None:
            tickets.append((j, i, 0.0, False))  # "no difference"
            if not too_small:
                tickets.append((j, i, -margin / w.width, True))  # "this slice is hurt"
        out.append(
            SlicePair(
                a=w.a,
                b=w.b,
                n_paired=w.n,
                mean_diff=w.mean,
                ci_low=low,
                ci_high=high,
                p_value=None,
                wins=w.wins,
                losses=w.losses,
                ties=w.n - w.wins - w.losses,
                transition_counts=w.transitions,
                mde=mde,
                too_small=too_small,
                reading="",
            )
        )
    if tickets:
        which = np.array([i for _, i, _, _ in tickets])
        sub = PairSummary(*(np.asarray(field)[which] for field in s))
        nulls = np.array([null for _, _, null, _ in tickets])
        pvals = summary_p_values(sub, caps[which, 0], caps[which, 1], nulls).tolist()
        for (j, _, _, hurt), p in zip(tickets, pvals):
            if hurt:
                out[j].p_hurt = _p_hurt(p, out[j].mean_diff, margin)
            else:
                out[j].p_value = p
    return out


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
    named: list[tuple[str, np.ndarray]] = []
    sliced = np.zeros(len(test_ids), dtype=bool)
    for name, ids in groups.items():
        found = np.fromiter((order.get(t, -1) for t in ids), dtype=np.int64, count=len(ids))
        positions = np.unique(found[found >= 0])  # the slice's test tasks, once each, in test order
        if len(positions):
            named.append((name, positions))
            sliced[positions] = True
    selectors = _selectors(cols, [positions for _, positions in named])
    work = [_Pair(a, cols[a], b, cols[b], positions) for _, positions in named for a, b in pairs]
    figures = _slice_pairs(work, margin)
    slices = [
        Slice(
            name=name,
            task_ids=list(map(test_ids.__getitem__, positions.tolist())),
            selectors=selectors[k],
            pairs=figures[k * len(pairs) : (k + 1) * len(pairs)],
        )
        for k, (name, positions) in enumerate(named)
    ]
    for k in range(len(pairs)):
        row = [s.pairs[k] for s in slices]
        for p, bh in zip(row, benjamini_hochberg([p.p_value for p in row])):
            p.p_bh = bh
        for p, hp in zip(row, holm([p.p_hurt for p in row])):
            p.p_hurt_holm = hp
            p.hurt = hp is not None and hp <= HURT_ALPHA and p.mean_diff is not None and p.mean_diff < -margin
            p.reading = _reading(p, margin)
    return SliceReport(by=by, margin=margin, slices=slices, unsliced=int((~sliced).sum()))


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
