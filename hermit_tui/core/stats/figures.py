"""Error bars for evaluations, a pair of selectors: paired comparisons, their variance split, power and the verdict.

The approach follows Miller (2024), "Adding Error Bars to Evals": the task is the unit of sampling, repeats are nested
inside tasks, two selectors are compared on paired per-task differences, the variance of a task's mean is split into
a between-task part and a run-to-run part (``Var(task mean) = between + within / k``), and power analysis gives the
smallest difference a sample can reliably detect.

One selector's figures (the task mean, the estimand :data:`~hermit_tui.core.stats.selector.ESTIMAND`, with its
interval, solved rates and variance split): ``core.stats.selector``. The pair compares task means throughout.

Intervals and the test that belongs to the pair interval: ``core.stats.intervals`` (bounded, small-sample methods;
the p-value is the interval inverted, so the two cannot disagree). The randomisation test of the sharp null (no task
changes), a secondary figure: ``core.stats.paired`` (valid with unequal repeats). Input: per selector,
``AttemptRecord`` objects, ``(task_id, repeat, score)`` tuples or
:class:`~hermit_tui.core.records.scores.AttemptColumns`, plus the test task ids (``core.records.scores``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any

import numpy as np
from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

from hermit_tui.core.present import (
    INTERVAL_INCLUDES_0,
    INTERVAL_TEST,
    NO_SPREAD_POWER,
    SHARP_TEST,
    p_text,
    short_interval,
    short_num,
)
from hermit_tui.core.records.results import SOLVED_THRESHOLD
from hermit_tui.core.records.scores import AttemptColumns, TaskTable, score_range, tabulate
from hermit_tui.core.stats.clusters import CLUSTER_PAIR_FLOOR, Clustering, cluster_df
from hermit_tui.core.stats.intervals import Method, pair_interval, pair_p_value
from hermit_tui.core.stats.paired import paired_randomisation_test
from hermit_tui.core.stats.power import POWER, SIMULATED_CLUSTERED, SIMULATED_MDE_METHOD, PowerModel, fit_power_model
from hermit_tui.core.stats.selector import Attempts, _clustered_se, _interval_fields, _method_text, exact_mean
from hermit_tui.core.stats.sequential.look import SequentialLook

ALPHA = 0.05
TIE_TOL = 1e-9
TRANSITIONS = ("fixed", "broken", "stable_pass", "stable_fail", "flaky")
VERDICT_RULE = (
    "'an improvement' (or 'a regression') when the 95% interval for the mean difference lies entirely "
    "above (below) 0, which is exactly when the test of that interval's null gives p < 0.05; anything "
    "else is 'no clear difference'"
)
MDE_CLUSTERED = "clustered: se the CR2 cluster-robust one, n - 1 the Bell-McCaffrey df"
# a pass/fail pair whose simulated power stays under 80% over the whole room on the observed side
MDE_UNREACHABLE = (
    "With {n}, not even a difference of {limit} (all the room the scores leave) is detected with 80% power."
)
MDE_METHOD = (
    "the interval's own half-width h (on the side the difference must clear) plus t(0.80, n-1) x se (for a t "
    "interval, (t(0.975, n-1) + t(0.80, n-1)) x se); "
    "not shown when the tasks show no spread"
)


class VerdictKind(StrEnum):
    """What a verdict decides, for screens, reports and exports to act on (never parse the verdict's sentence)."""

    IMPROVEMENT = "improvement"
    REGRESSION = "regression"
    UNCLEAR = "unclear"  # no clear difference (or, sequential, undecided so far)
    NOTHING = "nothing"  # no task has attempts from both
    EQUIVALENT = "equivalent"  # sequential only: within the margin


Decision = VerdictKind


class PairStats(BaseModel):
    """Selector ``b`` against selector ``a`` on the tasks both attempted; differences are ``b - a`` of task means."""

    a: str
    b: str
    threshold: float
    n_paired: int
    n_unpaired: int  # test tasks attempted by only one of the two: left out of every figure below
    unpaired: list[str]
    repeats_min: int
    repeats_max: int
    unequal_repeats: int = 0  # paired tasks where a and b have different numbers of repeats
    mean_diff: float | None
    sd_diff: float | None
    se: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: Method | None = None
    n_eff: float | None = None
    method: str = ""  # the interval, in words
    cluster_by: str | None = None  # --cluster-by: se, interval, test and power clustered by this field
    n_clusters: int | None = None  # the clusters of the paired tasks: the units
    cluster_df: float | None = None  # clustered: the t's degrees of freedom (Bell-McCaffrey, from the clusters' sizes)
    scale: tuple[float, float] = (-1.0, 1.0)  # the range of a difference
    p_value: float | None  # the test of the interval's null (mean difference 0): p < 0.05 iff the interval excludes 0
    test: str = ""  # that test, in words
    sharp_p_value: float | None = None  # secondary: the randomisation test of the sharp null (no task changes)
    sharp_test: str = ""  # that test, in words (exact or large-sample)
    sharp_test_exact: bool | None = None
    sign_test_p: float | None  # exact binomial sign test on wins vs losses; None with unequal repeats
    wins: int  # tasks where b's mean is higher
    losses: int
    ties: int
    transitions: dict[str, list[str]]
    transition_counts: dict[str, int]
    # Var(task diff) = between + within * mean(1/k), with within = within_a + within_b (per-attempt variances across
    # repeats), the within part capped at the observed sd_diff^2 and rescaled accordingly; None with one repeat.
    between_var: float | None
    within_var: float | None
    noise_var: float | None  # the within part at the current repeats; between_var + noise_var == sd_diff^2
    mde: float | None  # minimum detectable difference, alpha 0.05 two-sided, power 0.8 (see mde_method)
    mde_method: str = MDE_METHOD
    # pass/fail scores: the model the power figures simulate (core.stats.power), clustered when the pair is
    power_model: PowerModel | None = None
    # pass/fail scores (clustered or not): the room on the observed side when the simulated power stays under 80%
    # over all of it; mde is then None
    mde_limit: float | None = None
    decision: VerdictKind = VerdictKind.UNCLEAR
    verdict: str
    rule: str = VERDICT_RULE
    warnings: list[str] = []
    # --stop-when-decided: the candidate's last look against its baseline (read as b - a); when set, the interval,
    # decision, verdict and rule above are the sequential test's (core.stats.looks.sequential_pair)
    sequential: SequentialLook | None = None

    @model_serializer(mode="wrap")
    def _cluster_df_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``cluster_df`` is dumped only when clustered, ``power_model`` and ``mde_limit`` only when set: a pair
        without them is dumped as before."""
        out: dict[str, Any] = handler(self)
        for key in ("cluster_df", "power_model", "mde_limit"):
            if key in out and out[key] is None:
                del out[key]
        return out

    def _ratio(self, sign: float = 0.0) -> float | None:
        """The interval's half-width over the standard error (t(0.975, n-1) for a t interval) on the side a difference
        of ``sign`` must clear (the lower side for a gain; 0: the observed difference's side, the larger at a tie);
        None without a spread (no power figure is shown from zero spread)."""
        if self.sd_diff is None or self.se is None or self.se <= 0 or self.ci_low is None or self.ci_high is None:
            return None
        diff = self.mean_diff or 0.0
        below, above = diff - self.ci_low, self.ci_high - diff
        side = sign or diff
        return (below if side > 0 else above if side < 0 else max(below, above)) / self.se

    def power_at(self, delta: float) -> float | None:
        """The power this sample implies for a true difference ``delta``: the chance the interval lands beyond 0.
        Simulated by :attr:`power_model` when there is one (``core.stats.power``), else ``T_df((|delta| - h) /
        se)``, h the interval's half-width, ``df`` :attr:`df`. None without a spread."""
        ratio = self._ratio(delta)
        if ratio is None or self.se is None:
            return None
        if self.power_model is not None:
            return self.power_model.power(delta)
        from hermit_tui.core.stats.special import stdtr

        return float(stdtr(self.df, abs(delta) / self.se - ratio))

    def mde_figure(self, fmt: Callable[[float], str]) -> str | None:
        """The minimum detectable difference as a figure (``fmt``), ``none up to <room>`` when not even the whole
        room is detected with 80% power, None without one."""
        if self.mde is not None:
            return fmt(self.mde)
        if self.mde_limit is not None:
            return f"none up to {fmt(self.mde_limit)}"
        return None

    @property
    def units(self) -> int:
        """The independent units behind the figures: the clusters when clustered, else the paired tasks."""
        return self.n_clusters if self.n_clusters is not None else self.n_paired

    @property
    def df(self) -> float:
        """The degrees of freedom of the t behind the figures: the Bell-McCaffrey df when clustered (a pair dumped
        before them: clusters - 1, as it was made), else tasks - 1."""
        return self.cluster_df if self.cluster_df is not None else self.units - 1

    def tasks_needed(self, delta: float) -> int | None:
        """Paired tasks needed to detect a difference of ``delta`` (at the current repeats), or None if unknown
        (also when the tasks show no spread: nothing to project from, and when clustered: the need is in clusters,
        whose sizes a projection would have to guess)."""
        ratio = self._ratio()
        if ratio is None or self.sd_diff is None or not delta or self.n_clusters is not None:
            return None
        if self.power_model is not None:  # on the side the model's power is about (the observed difference's)
            return self.power_model.tasks_needed(self.power_model.side * abs(delta))
        sd, target, n0 = self.sd_diff, abs(delta), self.n_paired
        crit0 = _t_crit(n0 - 1)

        def enough(n: int) -> bool:
            return (ratio * _t_crit(n - 1) / crit0 + _t_power(n - 1)) * sd / math.sqrt(n) <= target * (1 + 1e-9)

        lo = 2
        hi = lo
        while not enough(hi):
            hi *= 2
        while lo < hi:  # the smallest n that is enough
            mid = (lo + hi) // 2
            lo, hi = (mid + 1, hi) if not enough(mid) else (lo, mid)
        return lo

    def repeats_needed(self, delta: float) -> int | None:
        """Repeats per task needed to detect ``delta`` with the current paired tasks.

        Uses ``Var(task diff) = between + within / k``; None when the within-task variance is unknown or when no
        number of repeats suffices (the between-task part alone is too large).
        """
        ratio = self._ratio()
        if ratio is None or self.within_var is None or self.between_var is None or not delta or self.n_paired < 2:
            return None
        if self.n_clusters is not None:  # the variance split is per task; clustered, it does not give the se
            return None
        if self.power_model is not None:
            return self.power_model.repeats_needed(self.power_model.side * abs(delta))
        room = self.n_paired * delta**2 / (ratio + _t_power(self.n_paired - 1)) ** 2 - self.between_var
        if room <= 0:
            return None
        return max(1, math.ceil(self.within_var / room * (1 - 1e-9)))


def default_pairs(labels: Sequence[str]) -> list[tuple[str, str]]:
    """(none, final), (root, final), (none, root) where both are present, in that order; else consecutive pairs."""
    present = set(labels)
    pairs = [p for p in (("none", "final"), ("root", "final"), ("none", "root")) if set(p) <= present]
    return pairs or list(zip(labels, labels[1:]))


def _t_crit(df: int) -> float:
    from hermit_tui.core.stats.special import stdtrit

    return float(stdtrit(df, 1 - ALPHA / 2))


def _t_power(df: float) -> float:
    from hermit_tui.core.stats.special import stdtrit

    return float(stdtrit(df, POWER))


def closed_form_mde(mean_diff: float, low: float, high: float, se: float, df: float) -> float:
    """The closed-form minimum detectable difference (:data:`MDE_METHOD`): the interval's half-width on the side the
    difference must clear (the observed difference's; at a tie, the wider) plus ``t(0.80, df) x se``."""
    below, above = mean_diff - low, high - mean_diff
    half = below if mean_diff > 0 else above if mean_diff < 0 else max(below, above)
    return half + _t_power(df) * se


def sign_test_p(wins: int, losses: int) -> float:
    """The exact two-sided binomial sign test of ``wins`` against ``losses`` (probability 1/2 each)."""
    from hermit_tui.core.stats.special import bdtr

    n = wins + losses
    return float(min(1.0, 2 * bdtr(min(wins, losses), n, 0.5)))


def _repeats_text(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


# ---------------------------------------------------------------------------------------------------- pairs


def _transitions(sa: np.ndarray, na: np.ndarray, sb: np.ndarray, nb: np.ndarray) -> np.ndarray:
    """Per paired task, the index into TRANSITIONS (solved counts ``s`` of ``n`` repeats)."""
    a_all, a_none, b_all, b_none = sa == na, sa == 0, sb == nb, sb == 0
    out = np.full(len(sa), 4, dtype=np.int64)  # flaky
    out[a_none & b_none] = 3
    out[a_all & b_all] = 2
    out[a_all & b_none] = 1
    out[a_none & b_all] = 0
    return out


def pair_transitions(
    a_records: Attempts, b_records: Attempts, task_ids: Sequence[str], threshold: float = SOLVED_THRESHOLD
) -> dict[str, list[str]]:
    """``pair_stats(...).transitions`` alone (the paired tasks by TRANSITIONS, in task order), without the
    intervals, tests and power figures: what the report's "why it changed" needs of a pair."""
    ta, tb = tabulate(a_records, task_ids, threshold), tabulate(b_records, task_ids, threshold)
    common_ids, ia, ib = np.intersect1d(ta.index, tb.index, assume_unique=True, return_indices=True)
    codes = _transitions(ta.solved[ia], ta.n[ia], tb.solved[ib], tb.n[ib])
    transitions: dict[str, list[str]] = {k: [] for k in TRANSITIONS}
    for i, code in zip(common_ids.tolist(), codes.tolist()):
        transitions[TRANSITIONS[code]].append(ta.ids[i])
    return transitions


def pair_stats(
    a_label: str,
    a_records: Attempts,
    b_label: str,
    b_records: Attempts,
    task_ids: Sequence[str] | None,
    threshold: float = SOLVED_THRESHOLD,
    scale: tuple[float, float] | None = None,
    clusters: Clustering | None = None,
    simulate_power: bool = True,
) -> PairStats:
    """Paired comparison of ``b`` against ``a`` over the test tasks both attempted (differences are b - a).
    ``simulate_power``: False for a caller that reads only the interval and the verdict (the power figures of a
    pass/fail pair are then the closed form's, MDE_METHOD, not the simulated ones: ``core.stats.power``).
    ``clusters``: the standard error, interval, its test and the power figures are clustered by it
    (``core.stats.clusters``: CR2 cluster-robust, Bell-McCaffrey df); the sharp-null test stays within tasks.

    ``scale``: the range of a score (default: [0, 1] widened to the scores of both); differences lie in
    ``[lo - hi, hi - lo]``.
    """
    if (
        task_ids is None
        and not isinstance(a_records, (AttemptColumns, TaskTable))
        and not isinstance(b_records, (AttemptColumns, TaskTable))
    ):
        a_records, b_records = list(a_records), list(b_records)
        seen = [str(r[0]) if isinstance(r, tuple) else r.id for r in (*a_records, *b_records)]
        task_ids = list(dict.fromkeys(seen))
    ta, tb = tabulate(a_records, task_ids, threshold), tabulate(b_records, task_ids, threshold)
    lo, hi = scale if scale is not None else score_range(ta, tb)
    ids = ta.ids
    common_ids, ia, ib = np.intersect1d(ta.index, tb.index, assume_unique=True, return_indices=True)
    only = np.setxor1d(ta.index, tb.index, assume_unique=True)
    unpaired = [ids[i] for i in only.tolist()]
    n = len(common_ids)
    ka, kb = ta.n[ia], tb.n[ib]
    ma, mb = ta.mean[ia], tb.mean[ib]
    diffs = mb - ma
    counts = np.concatenate([ka, kb])

    codes = _transitions(ta.solved[ia], ka, tb.solved[ib], kb)
    paired_ids = [ids[i] for i in common_ids.tolist()]
    transitions: dict[str, list[str]] = {k: [] for k in TRANSITIONS}
    for tid, code in zip(paired_ids, codes.tolist()):
        transitions[TRANSITIONS[code]].append(tid)

    cl_codes = clusters.codes(paired_ids) if clusters is not None else None
    units = len(set(cl_codes.tolist())) if cl_codes is not None else n
    df = cluster_df(cl_codes) if cl_codes is not None else None
    mean_diff = exact_mean(diffs) if n else None
    sd = float(diffs.std(ddof=1)) if n > 1 else None
    se = _clustered_se(diffs, cl_codes, sd)
    width = hi - lo
    bin_a = bool(np.all((ta.scores == lo) | (ta.scores == hi)))
    bin_b = bool(np.all((tb.scores == lo) | (tb.scores == hi)))
    interval = pair_interval(ma, mb, ka, kb, bin_a, bin_b, lo, hi, clusters=cl_codes)
    p_value = pair_p_value(ma, mb, ka, kb, bin_a, bin_b, lo, hi, clusters=cl_codes)
    wins, losses = int((diffs > TIE_TOL).sum()), int((diffs < -TIE_TOL).sum())
    unequal = int((ka != kb).sum())
    sign_p = None
    if wins + losses and not unequal:
        sign_p = sign_test_p(wins, losses)

    between = within = noise = None
    if sd is not None:  # n > 1
        sda, sdb = ta.sd[ia], tb.sd[ib]
        between = sd**2
        if (~np.isnan(sda)).any() and (~np.isnan(sdb)).any():
            wa, wb = float(np.nanmean(np.square(sda))), float(np.nanmean(np.square(sdb)))
            raw = wa * float(np.mean(1.0 / ka)) + wb * float(np.mean(1.0 / kb))
            noise = min(raw, sd**2)
            within = (wa + wb) * (noise / raw if raw > 0 else 1.0)
            between = sd**2 - noise
    mde = mde_limit = model = None
    mde_method = MDE_METHOD if clusters is None else f"{MDE_METHOD}; {MDE_CLUSTERED}"
    if se is not None and se > 0 and interval is not None and mean_diff is not None:
        if simulate_power and bin_a and bin_b and width > 0:  # pass/fail: simulated (clustered or not)
            model = fit_power_model((ma - lo) / width, (mb - lo) / width, ka, kb, width, clusters=cl_codes)
        if model is not None:
            mde = model.mde()
            mde_method = SIMULATED_MDE_METHOD if cl_codes is None else f"{SIMULATED_MDE_METHOD}; {SIMULATED_CLUSTERED}"
            mde_limit = model.room() if mde is None else None
        else:
            mde = closed_form_mde(mean_diff, interval.low, interval.high, se, units - 1 if df is None else df)

    test = None
    if n:

        def scores_of(j: int) -> tuple[np.ndarray, np.ndarray]:
            return ta.task_scores(int(ia[j])), tb.task_scores(int(ib[j]))

        test = paired_randomisation_test(ka, ma, ta.sd[ia], kb, mb, tb.sd[ib], scores_of)

    warnings = []
    if unequal:
        warnings.append(
            f"{b_label} vs {a_label}: {unequal} of {n} paired tasks have unequal repeats: the figures "
            "compare task means (each task weighs the same), and the test re-deals those tasks' attempts "
            "instead of flipping signs"
        )
    if unpaired:
        warnings.append(
            f"{b_label} vs {a_label}: {len(unpaired)} test tasks attempted by only one of the two are left out"
        )
    if clusters is not None and n > 1 and units < 2:
        warnings.append(f"{b_label} vs {a_label}: the paired tasks fall in one cluster of {clusters.by}: no interval")
    fields = dict(
        a=a_label,
        b=b_label,
        threshold=threshold,
        n_paired=n,
        n_unpaired=len(unpaired),
        unpaired=unpaired,
        repeats_min=int(counts.min()) if n else 0,
        repeats_max=int(counts.max()) if n else 0,
        unequal_repeats=unequal,
        mean_diff=mean_diff,
        sd_diff=sd,
        se=se,
        **_interval_fields(interval),
        method=_method_text(
            interval,
            "differences of task means, b - a"
            + (f"; {CLUSTER_PAIR_FLOOR}" if clusters is not None and units < n else ""),
            clusters,
            units,
            df,
        ),
        cluster_by=clusters.by if clusters is not None else None,
        n_clusters=units if clusters is not None else None,
        cluster_df=df if df is not None and math.isfinite(df) else None,
        mde_method=mde_method,
        scale=(-width, width),
        p_value=p_value,
        test=INTERVAL_TEST if p_value is not None else "",
        sharp_p_value=test.p_value if test else None,
        sharp_test=f"{SHARP_TEST}: {test.description}" if test else "",
        sharp_test_exact=test.exact if test else None,
        sign_test_p=sign_p,
        wins=wins,
        losses=losses,
        ties=n - wins - losses,
        transitions=transitions,
        transition_counts={k: len(v) for k, v in transitions.items()},
        between_var=between,
        within_var=within,
        noise_var=noise,
        mde=mde,
        power_model=model,
        mde_limit=mde_limit,
        warnings=warnings,
    )
    decision, verdict = _verdict(fields)
    return PairStats(**fields, decision=decision, verdict=verdict)


# ---------------------------------------------------------------------------------------------------- the verdict


_num = short_num  # a difference in a sentence


def _verdict(f: dict[str, Any]) -> tuple[VerdictKind, str]:
    """The decision and one or two plain sentences, by :data:`VERDICT_RULE`."""
    a, b, n = f["a"], f["b"], f["n_paired"]
    if not n:
        return VerdictKind.NOTHING, f"No task has attempts from both {a} and {b}: nothing to compare."
    lo, hi, diff, mde, p = f["ci_low"], f["ci_high"], f["mean_diff"], f["mde"], f["p_value"]
    k = _repeats_text(f["repeats_min"], f["repeats_max"])
    sample = f"{n} task{'s' * (n != 1)} x {k} repeat{'s' * (k != '1')}"
    if f["n_unpaired"]:
        sample += f"; {f['n_unpaired']} unpaired left out"
    ci = None if lo is None else f"95% CI {short_interval(lo, hi)}"
    if f["sd_diff"] == 0 and abs(diff) <= TIE_TOL:
        return VerdictKind.UNCLEAR, (
            f"No clear difference: {b} and {a} have the same mean score on each of the "
            f"{sample}" + (f" ({ci}: tasks not in the sample may still differ)." if ci else ".")
        )
    figures = ", ".join(x for x in (ci, p_text(p), sample) if x)
    if abs(diff) > TIE_TOL:
        headline = f"{b} scores {_num(abs(diff))} {'higher' if diff > 0 else 'lower'} than {a} ({figures})"
    else:
        headline = f"{b} scores the same as {a} on average ({figures})"
    above, below = lo is not None and lo > 0, hi is not None and hi < 0
    if above:  # the interval lies above 0: its test's p is below 0.05 by construction
        return VerdictKind.IMPROVEMENT, f"{headline}: an improvement."
    if below:
        return VerdictKind.REGRESSION, f"{headline}: a regression."
    reason = "one paired task gives no interval" if lo is None else INTERVAL_INCLUDES_0
    clusters = f.get("n_clusters")
    tasks = f"{n} tasks" + (f" in {clusters} clusters" if clusters is not None else "")  # clustered: they decide
    text = f"No clear difference: {headline}; {reason}."
    if f["sd_diff"] == 0:
        text += f" {NO_SPREAD_POWER}"
    elif mde is None and f.get("mde_limit") is not None:
        text += f" {MDE_UNREACHABLE.format(n=tasks, limit=_num(f['mde_limit']))}"
    elif mde is None:
        text += " At least 2 paired tasks are needed for an interval and the power figures."
    elif mde > abs(diff):
        text += f" With {tasks}, the smallest difference this sample detects with 80% power is {_num(mde)}."
    return VerdictKind.UNCLEAR, text


__all__ = [
    "ALPHA",
    "closed_form_mde",
    "MDE_METHOD",
    "PairStats",
    "VERDICT_RULE",
    "VerdictKind",
    "default_pairs",
    "p_text",
    "pair_stats",
    "sign_test_p",
]
