"""The group-sequential design with tasks clustered above the task (``eval --cluster-by`` / ``--cluster-file``
with ``--stop-when-decided``): :class:`ClusteredMonitor`, the cluster-robust information and the boundaries
recomputed from it at each look, and the method text it records (:func:`clustered_method`). Its looks' schedule and
order are :mod:`.schedule`'s."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from hermit_tui.core.stats.intervals import no_spread_share, t_quantile
from hermit_tui.core.stats.sequential.look import SequentialLook, decide
from hermit_tui.core.stats.sequential.monitor import SequentialMonitor
from hermit_tui.core.stats.sequential.schedule import cluster_schedule
from hermit_tui.core.stats.sequential.spending import ALPHA, design_spending, spending_at, spending_boundaries
from hermit_tui.core.stats.sequential.stopping import (
    FUTILITY_MIN_ATTEMPTS,
    conditional_power,
    futility_regions,
    ordered_inference,
    stagewise_inference,
)

_CLUSTERED_TEXT = (
    "group-sequential repeated confidence intervals clustered above the task: {looks}, the bias-reduced "
    "cluster-robust (CR2) standard error with Student t on the Bell-McCaffrey degrees of freedom, the boundaries "
    "recomputed at each look from the information observed (1 / the CR2 variance, counted as growing at least as "
    "the attempts), Lan-DeMets error spending by {spending} at the information fraction (the attempts' share "
    "in round 1; from round 2 the information observed over the maximum projected by the variance components) "
    "(Jennison & Turnbull 2000, ch. 7 and 9), alpha split over the candidates (Bonferroni) and 0.9 of each share "
    "spent"
)


def clustered_method(batches: int) -> str:
    """The method text of the clustered design with ``batches`` looks in the first round (recorded in the summary;
    it names the spending function as :data:`METHOD` and :data:`BATCH_METHOD` do)."""
    if batches > 1:
        looks = "looked at after whole clusters of the first round's tasks (in the order of the clusters' sha256) "
        return _CLUSTERED_TEXT.format(
            looks=looks + "and after each later round", spending="the Kim-DeMets power function (rho 0.6)"
        )
    return _CLUSTERED_TEXT.format(
        looks="looked at after each whole round", spending="the Hwang-Shih-DeCani function (gamma -2)"
    )


def _growth(diffs: np.ndarray, var: float) -> Callable[[int], float]:
    """From a look after ``r >= 2`` whole rounds (``diffs``: tasks x rounds; ``var``: the cluster-robust variance of
    the mean of the task means): the information after ``s`` rounds relative to this look's,
    ``(B + W) / (B + W r / s)``, where ``W = sum_i s_i^2 / (r N^2)`` is the run-to-run part of ``var`` (``s_i^2``:
    task i's variance over its rounds) and ``B = max(0, var - W)`` the rest (between tasks and clusters), which
    more rounds do not shrink."""
    g, r = diffs.shape
    within = float(np.sum(diffs.var(axis=1, ddof=1))) / (r * g * g)
    between = max(0.0, var - within)

    def grow(s: int) -> float:
        total = between + within
        return float(total / (between + within * r / s)) if total > 0 else s / r

    return grow


def _units(schedule: Sequence[tuple[int, int]], tasks: int) -> list[float]:
    """Each look's attempts per selector over the tasks (``n / G`` within round 1, ``r`` after round ``r``)."""
    return [n / tasks if r == 1 else float(r) for r, n in schedule]


class ClusteredMonitor(SequentialMonitor):
    """:class:`SequentialMonitor` for tasks clustered above the task (``eval --cluster-by`` / ``--cluster-file``
    with ``--stop-when-decided``). ``codes``: each test task's cluster, in the look order of
    :func:`cluster_look_order` (a cluster's tasks together); the first round is looked at after whole clusters
    (:func:`cluster_schedule`), then after each later round.

    At each look: the mean difference of the task differences (each task's mean over its rounds so far), its
    bias-reduced cluster-robust variance ``V`` over the clusters seen (CR2, ``core.stats.clusters.bias_reduced_var``:
    CR1 with equal cluster sizes) and the information observed ``1 / V``. The boundaries are recomputed at each
    look by Lan-DeMets error spending over the looks so far, at the information fraction ``I_k / I_max``, each past
    look's as it was at that look. Within round 1 nothing tells the run-to-run noise from the rest, so the maximum
    information is projected as the current information carried on with the attempts (the fraction is the
    attempts' share ``u_k / R``, as in the unclustered design); from round 2 on, by the variance components
    (:func:`_growth`: repeats shrink only the run-to-run part ``W``, so ``I_max = I_k (B + W) / (B + W r / R)``),
    so that where the clusters' differences dominate, the fraction reaches nearly 1 and the launch spends what is
    left, rather than on rounds that add little. The looks' correlations ``sqrt(I_j / I_k)`` are those of the
    information observed, except that the information used grows from look to look at least as the attempts do:
    less correlation than observed where the observed information grows more slowly (across rounds: repeats
    shrink only the run-to-run noise), which can only make crossings rarer.

    The interval at look k is ``mean -+ t(df_k) se`` at the nominal level of the normal boundary (the significance
    level approach, J&T 2000 sec. 3.8), ``df_k`` the Bell-McCaffrey degrees of freedom of the clusters seen
    (``core.stats.clusters.bell_mccaffrey_df``: ``C_k - 1`` with clusters of equal size, fewer with unequal ones).
    The futility rule and the adjusted inference at stopping use the same information (seen, then projected) and
    those t boundaries.

    Measured (``benchmarks/explore_clustered_sequential.py``, RESULTS.md): A/A false claims 1.5-3.6% on clusters of
    unequal sizes sharing a shift (the unclustered design on the same data: 14.7-22.5%). CR1 with t on ``C_k - 1``
    df (the fixed design's method before it moved to CR2 too) left them at 4.9-5.4%, where the fixed CR1 t test
    itself rejects 5.7-6.9%; hence CR2 and its df here."""

    def __init__(
        self,
        baseline: str,
        candidate: str,
        max_rounds: int,
        codes: Sequence[int] | np.ndarray,
        *,
        batches: int,
        alpha: float = ALPHA,
        spend: float | None = None,
        candidates: int = 1,
        margin: float | None = None,
        lo: float = 0.0,
        hi: float = 1.0,
        futility: float | None = None,
    ):
        self.codes = np.asarray(codes, dtype=np.int64)
        if len(set(self.codes.tolist())) < 2:
            raise ValueError("a clustered design needs at least 2 clusters")
        self._schedule = cluster_schedule(self.codes, max_rounds, max(1, batches))
        first = sum(1 for r, _ in self._schedule if r == 1)
        super().__init__(
            baseline,
            candidate,
            max_rounds,
            alpha=alpha,
            spend=spend,
            candidates=candidates,
            spending=design_spending(first),
            margin=margin,
            lo=lo,
            hi=hi,
            batches=first,
            total_tasks=len(self.codes),
            futility=futility,
        )
        self.units = _units(self._schedule, len(self.codes))
        from hermit_tui.core.stats.clusters import bell_mccaffrey_df

        ends = [n for _, n in self._schedule]
        self.look_clusters = [len(set(self.codes[:n].tolist())) for n in ends]
        self.look_df = [bell_mccaffrey_df(np.bincount(self.codes[:n])) for n in ends]
        self.observed: list[float | None] = []  # 1 / V at each look (None: no spread between clusters)
        self.used: list[float] = []  # the information the boundaries use (see the class docstring)
        self.times: list[float] = []  # the spending time of each look, as it was at that look
        self._projected: tuple[list[float], tuple[float, ...], list[float]] | None = None

    @property
    def schedule(self) -> tuple[tuple[int, int], ...]:
        return self._schedule

    def _applied(self, cs: Sequence[float]) -> list[float]:
        """The critical values on z that the looks' t intervals apply: Student t on each look's Bell-McCaffrey
        degrees of freedom at its nominal level."""
        from scipy.special import ndtr

        out = []
        for c, df in zip(cs, self.look_df):
            out.append(t_quantile(df, 2 * float(ndtr(c)) - 1) if math.isfinite(c) and df > 0 else math.inf)
        return out

    def _look(self, a_all: np.ndarray, b_all: np.ndarray) -> SequentialLook:
        from scipy.special import ndtr

        from hermit_tui.core.stats.clusters import bias_reduced_var

        k = self.looks - 1
        g, r = a_all.shape
        if (r, g) != self._schedule[k]:
            raise ValueError(f"{g} tasks x {r} rounds is not look {k + 1} of the clustered schedule")
        task_diffs = (b_all - a_all).mean(axis=1)
        codes = self.codes[:g]
        clusters = self.look_clusters[k]
        mean = float(task_diffs.mean())
        var = bias_reduced_var(task_diffs, codes)
        observed = 1 / var if var > 0 and math.isfinite(var) else None
        if not self.used:
            used = observed if observed is not None else 1.0
        else:
            growth, prev = self.units[k] / self.units[k - 1], self.observed[-1]
            if observed is not None and prev is not None:
                growth = max(growth, observed / prev)
            used = self.used[-1] * growth
        self.observed.append(observed)
        self.used.append(used)
        # how the information grows from here on, relative to this look's: by the variance components once two
        # rounds or more tell the run-to-run noise from the rest, else with the attempts
        grow = _growth(b_all - a_all, var) if r >= 2 and observed is not None else None
        last = len(self.units) - 1

        def later(j: int) -> float:
            return self.units[j] / self.units[k] if grow is None else grow(self._schedule[j][0])

        # the spending time: the information fraction, this look's information over the maximum projected
        top = later(last) if k < last else 1.0
        now = 1.0 if k == last else min(1.0, max(1.0 / top, self.times[-1] if self.times else 0.0))
        self.times.append(now)
        ahead, prev_t = [], now
        for j in range(k + 1, last + 1):
            prev_t = 1.0 if j == last else min(1.0, max(later(j) / top, prev_t))
            ahead.append(prev_t)
        times = tuple(self.times + ahead)
        # the information of every look: seen, then projected (rescaled to 1 / V at this look)
        scale = observed / used if observed is not None else 1.0
        info = [u * scale for u in self.used] + [used * scale * later(j) for j in range(k + 1, last + 1)]
        spend, spending = self.spend, self.spending
        cs = tuple(spending_boundaries(tuple(info), times, spend, spend=lambda t: spending_at(t, spend, spending)))
        self._projected = (info, cs, self._applied(cs))
        c = cs[k]
        width = self.hi - self.lo
        nominal = 2 * float(ndtr(c)) - 1 if math.isfinite(c) else 1.0
        low, high, method = -width, width, None
        if nominal < 1.0:
            if observed is None:  # no spread between the clusters: the no-spread bound over the clusters
                q = no_spread_share(clusters, nominal)
                low, high, method = mean - q * (mean + width), mean + q * (width - mean), "no-spread"
            else:
                crit = t_quantile(self.look_df[k], nominal)
                low, high, method = mean - crit * math.sqrt(var), mean + crit * math.sqrt(var), "t"
            low, high = max(-width, low), min(width, high)
        if observed is not None:
            z = mean / math.sqrt(var)
        else:
            z = 0.0 if mean == 0 else math.copysign(math.inf, mean)
        decision = decide(low, high, self.margin)
        t_k = now
        return SequentialLook(
            baseline=self.baseline,
            candidate=self.candidate,
            decision=decision,
            rounds=r,
            max_rounds=self.max_rounds,
            method=clustered_method(self.batches),
            alpha=self.alpha,
            spend=spend,
            candidates=self.candidates,
            spending=spending,
            margin=self.margin,
            decided_at=r if decision != "undecided" else None,
            decided_tasks=g if decision != "undecided" else None,
            mean_diff=mean,
            ci_low=low,
            ci_high=high,
            ci_method=method,
            boundary_z=c,
            nominal_level=nominal,
            spending_time=t_k,
            alpha_spent=spending_at(t_k, spend, spending),
            z=z,
            batches=self.batches,
            tasks=g,
            total_tasks=len(self.codes),
            look=k + 1,
            clusters=clusters,
            total_clusters=self.look_clusters[-1],
            information=observed,
            cluster_df=self.look_df[k],
            design_bounds=cs,
        )

    def _at_stopping(self, look: SequentialLook, diffs: np.ndarray, total_looks: int) -> SequentialLook:
        """As :meth:`SequentialMonitor._at_stopping`, on the clustered information and t boundaries."""
        z, mean = look.z, look.mean_diff
        if mean is None or look.look is None or z is None or not math.isfinite(z) or not self._projected:
            return look
        info, _, applied = self._projected
        k = look.look - 1
        total = len(self.codes)
        width = self.hi - self.lo
        seen = self.units[k] * total
        if (
            look.decision == "undecided"
            and self.futility is not None
            and k < total_looks - 1
            and seen >= FUTILITY_MIN_ATTEMPTS
        ):
            cp = conditional_power(info, applied, k, z)
            look = look.model_copy(update=dict(conditional_power=cp))
            if cp < self.futility:
                look = look.model_copy(update=dict(decision="futile", decided_at=look.rounds, decided_tasks=look.tasks))
        if look.decision == "undecided" and k < total_looks - 1:
            return look
        if self.futility is None:
            est, low, high, p = stagewise_inference(info[: k + 1], applied[:k], z, lo=-width, hi=width)
        else:
            first = next(
                j for j, u in enumerate(self.units) if u * total >= FUTILITY_MIN_ATTEMPTS or j == len(self.units) - 1
            )
            inner = futility_regions(info, applied, self.futility, first)
            est, low, high, p = ordered_inference(info, applied, inner, mean, lo=-width, hi=width)
        return look.model_copy(update=dict(adjusted_estimate=est, adjusted_low=low, adjusted_high=high, adjusted_p=p))


__all__ = ["ClusteredMonitor", "clustered_method"]
