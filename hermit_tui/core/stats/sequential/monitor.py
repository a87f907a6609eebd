"""Stop when decided: a group-sequential comparison of a candidate with a baseline, look by look.

A launch runs rounds (every test task once per selector). It looks after each whole round and, with 50 tasks or
more, also within the first round, after batches of its tasks taken in a fixed order (:func:`look_schedule`,
:func:`look_order`): rounds are repeats and shrink only the run-to-run noise, while the variance that matters
shrinks with tasks, so where one round of many tasks already decides, only looks within it can stop earlier. Such
a design counts information in attempts (:func:`look_boundaries`) and spends by Kim & DeMets' power family
(``a t^0.6``; Kim & DeMets 1987, Biometrika 74:149), which spends enough at the first looks to stop there; the
paragraphs below describe the design that looks after whole rounds only.

After each round, each candidate's difference from the baseline, ``d = mean over tasks of (candidate's task mean -
baseline's task mean)`` (the estimand of ``core.stats.figures``), gets a **repeated confidence interval** (Jennison &
Turnbull 1989, "Interim analyses: the repeated confidence interval approach", JRSS B 51:305; Jennison & Turnbull 2000,
*Group Sequential Methods with Applications to Clinical Trials*, ch. 9) whose critical values come from an
**error-spending** boundary (Lan & DeMets 1983, "Discrete sequential boundaries for clinical trials", Biometrika 70:659;
J&T 2000 ch. 7), symmetric, spending by the Hwang-Shih-DeCani function with ``gamma = -2`` (Hwang, Shih & DeCani 1990,
Statistics in Medicine 9:1439), ``alpha(t) = a (1 - exp(2 t)) / (1 - exp(2))`` of the candidate's share ``a``: between
Pocock's and O'Brien-Fleming's (with 8 rounds and ``a = 0.045``, 3.09, 2.97, 2.84, 2.71, 2.58, 2.45, 2.32, 2.19). It
spends enough at the first rounds to stop there when one round of the tasks already decides, which the
O'Brien-Fleming-type function (6.35 at the first of 8 rounds) never allowed: measured against the fixed design of equal
power, that one used 70% of its attempts at 50 tasks and an effect of 0.2 (200% at 200 tasks, where one round decides),
this design 49-61% (106%).

**Family-wise, with a margin** (:func:`candidate_spend`): the launch's ``alpha`` is split over its candidates
(Bonferroni: the chance of any false claim over them stays at most ``alpha``), and each candidate's boundaries spend
:data:`SPEND_SHARE` of its share. The boundaries are exact for normal data of known variance; what they leave out
(the estimated variance, pass/fail scores, the score interval's shape) added about 0.2 points to the false-claim
rate, which spending the whole share left at 4.9-5.2% instead of under 5%.

The intervals of all rounds hold the true difference together with probability at least ``1 - a``, so any
rule that stops on what they show keeps its error rates:

- **improvement** when the interval lies above 0, **regression** when below 0 (improvement and regression take
  precedence), **equivalent** (with a margin ``M``) when it lies inside ``(-M, M)``; otherwise **undecided**;
- the first decision is kept (the candidate stopped there), and the interval reported is the intersection of the
  intervals of every round so far (still a valid interval, Jennison & Turnbull 2000, sec. 9.1).

Information and the spending time. With ``r`` rounds on ``G`` tasks, ``Var(d) = (between + within / r) / G``:
repeats shrink only the run-to-run part, so the information ``I_r = G / (between + within / r)`` grows more slowly
than the rounds when tasks differ in how much the candidate helps (``between > 0``). The boundaries use the
spending time ``t_r = r / R`` (the share of the planned rounds, ``R`` = ``eval.repeats``; the last round spends what
is left) and the correlation ``sqrt(r / s)`` between rounds ``r < s``, which is what ``between = 0`` gives and the
smallest correlation any ``between >= 0`` gives (``sqrt(I_r / I_s) >= sqrt(r / s)``). Assuming less correlation
than there is can only make the rounds' crossings rarer than planned, so the error rates stay at or below
``alpha``, and the boundaries depend on ``R`` and ``alpha`` alone (no estimate enters them: an estimated
``between``, biased upwards by its truncation at 0, would make them too lenient). They are computed on the score
scale by the recursive numerical integration of Armitage, McPherson & Rowe (1969) (J&T 2000 ch. 19). The variance
components (method of moments on the per-round paired differences) are reported beside the decision.

Small samples: the normal boundary ``c_r`` is turned into a nominal two-sided level ``p_r = 2 (1 - Phi(c_r))``, and
the interval at round ``r`` is :func:`_repeated_interval` on the task differences at confidence ``1 - p_r`` (Student
t with G - 1 df, or the bounded score interval / no-spread bound: the fixed design's methods before issue 25, kept
here because the selector interval's no-spread floor would make the extreme early levels uninformative), which keeps
it within the range of a difference (the "significance level approach" to group-sequential t-tests, J&T 2000 sec.
3.8). Its error rates are measured by simulation in ``benchmarks/bench_stats.py``.

At stopping (issue 25, item 4): **a non-binding futility rule** (:data:`FUTILITY_CP`, :func:`conditional_power`;
the boundaries ignore it, so it can only remove claims) stops an undecided candidate whose conditional power under
the current estimate is below 0.02, at looks of :data:`FUTILITY_MIN_ATTEMPTS` attempts per selector or more; and
the estimate, interval and p-value at the candidate's stop are **adjusted for the stopping rule**: by the
sample-mean ordering of the whole design with its futility regions when the rule is on (:func:`ordered_inference`,
:func:`futility_regions`; the stagewise ordering is not defined once a look continues on two intervals), by the
stagewise ordering of the looks run without it (:func:`stagewise_inference`; Jennison & Turnbull 2000, ch. 8), both
computed by the same recursive integration with a drift.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

from hermit_tui.core.stats.intervals import CONFIDENCE, Interval, no_spread_share, t_quantile, wilson_bounds

ALPHA = 0.05
SPEND_SHARE = 0.9  # of a candidate's alpha, the share its boundaries spend (the rest: the approximations' allowance)
HSD_GAMMA = -2.0
METHOD = (
    "group-sequential repeated confidence intervals, Lan-DeMets error spending by the Hwang-Shih-DeCani function "
    "(gamma -2) over the planned rounds (Jennison & Turnbull 2000, ch. 7 and 9), alpha split over the candidates "
    "(Bonferroni) and 0.9 of each share spent"
)
BATCH_METHOD = (
    "group-sequential repeated confidence intervals, looked at after batches of the first round's tasks (in the "
    "order of their ids' sha256) and after each later round, information counted in attempts, Lan-DeMets error "
    "spending by the Kim-DeMets power function (rho 0.6) (Jennison & Turnbull 2000, ch. 7 and 9), alpha split over "
    "the candidates (Bonferroni) and 0.9 of each share spent"
)
Spending = Literal["hsd", "obf", "power"]
POWER_RHO = 0.6  # Kim & DeMets' power family, for designs that look within the first round
MIN_BATCH = 25  # tasks at the first look within the first round (and the step between its looks)
MAX_BATCHES = 8  # looks within the first round at most
ORDER = "sha256 of the task id"  # the protocol-determined order in which the first round's looks take the tasks
OLD_METHOD = (  # summaries written before issue 25, item 4: the whole alpha spent by every candidate
    "group-sequential repeated confidence intervals, Lan-DeMets O'Brien-Fleming-type alpha spending over the "
    "planned rounds (Jennison & Turnbull 2000, ch. 7 and 9)"
)


def candidate_spend(alpha: float = ALPHA, candidates: int = 1) -> float:
    """The error one candidate's boundaries spend when ``candidates`` are compared with one baseline in a launch:
    Bonferroni's share ``alpha / candidates`` (the chance of any false claim over the candidates stays at most
    ``alpha``), of which :data:`SPEND_SHARE` is spent, the rest allowed for what the boundaries' normal theory leaves
    out (the t approximation, pass/fail scores, the score interval's shape): measured by simulation, the design
    spending the whole share sat at 4.9-5.0% rather than under 5%."""
    return SPEND_SHARE * alpha / max(1, candidates)


GRID = 161  # points of the numerical integration at each round
Decision = Literal["improvement", "regression", "equivalent", "undecided", "futile"]
FUTILITY_CP = 0.02  # stop for futility when the conditional power under the current estimate is below this
FUTILITY_MIN_ATTEMPTS = 50  # ... at looks that have seen this many attempts per selector (tasks x rounds) or more
ADJUSTED_METHOD = (
    "stagewise (Armitage-Tsiatis) ordering of the looks: median-unbiased estimate, exact 95% confidence interval "
    "and two-sided p-value for the stopping rule followed, by recursive numerical integration over the looks run "
    "(Jennison & Turnbull 2000, ch. 8)"
)
ORDERED_METHOD = (
    "sample-mean ordering of the design's outcomes, the futility stops included (Emerson & Fleming 1990; Jennison & "
    "Turnbull 2000, sec. 8.4): median-unbiased estimate, exact 95% confidence interval and two-sided p-value for the "
    "stopping rule followed, by recursive numerical integration over the design's looks"
)
FUTILITY_METHOD = (
    "non-binding futility: stop when the conditional power under the current estimate of crossing a later efficacy "
    "boundary is below {cp:g}, at looks of 50 attempts per selector or more (Jennison & Turnbull 2000, sec. 10.2); "
    "the efficacy boundaries ignore it"
)


CLUSTERED_LOOK_KEYS = frozenset({"clusters", "total_clusters", "information", "cluster_df", "design_bounds"})


class SequentialLook(BaseModel):
    """A candidate against the baseline after ``rounds`` whole rounds; the keys of summary.json's ``sequential``
    (:meth:`summary`) plus the figures behind the decision."""

    baseline: str
    candidate: str
    decision: Decision
    rounds: int
    max_rounds: int
    method: str = METHOD
    alpha: float = ALPHA  # the launch's family-wise level
    spend: float | None = None  # what this candidate's boundaries spend in total (None: alpha, before issue 25)
    candidates: int = 1  # the candidates alpha was split over
    spending: Spending = "hsd"  # the spending function ("obf": summaries written before issue 25, item 4)
    margin: float | None = None
    decided_at: int | None = None  # the round of the decision (None while undecided)
    decided_tasks: int | None = None  # the paired tasks the deciding look saw (fewer than the test tasks: in round 1)
    mean_diff: float | None
    ci_low: float | None  # the repeated confidence interval (intersected over the rounds so far)
    ci_high: float | None
    ci_method: str | None = None  # of this round's interval: "t", "score" or "no-spread"
    boundary_z: float | None = None  # this round's normal critical value (inf: nothing spent at this round)
    nominal_level: float | None = None  # 1 - this round's nominal two-sided significance level
    spending_time: float | None = None  # t_r = r / R
    alpha_spent: float | None = None  # alpha(t_r)
    between_var: float | None = None
    within_var: float | None = None
    z: float | None = None  # the observed mean difference over its standard error (sd of task differences / sqrt G)
    batches: int = 1  # looks within the first round (1: a look after each whole round only, as before issue 25 item 1)
    tasks: int | None = None  # the paired tasks this look saw (fewer than the test tasks at a look within round 1)
    total_tasks: int | None = None  # the test tasks a round has
    look: int | None = None  # this look's number, from 1, of the schedule (:func:`look_schedule`)
    futility: float | None = None  # the futility rule's conditional-power threshold (None: no futility rule)
    conditional_power: float | None = None  # of crossing a later boundary, under the current estimate
    # inference at stopping adjusted for the stopping rule (:func:`stagewise_inference`; None until it stopped)
    adjusted_estimate: float | None = None
    adjusted_low: float | None = None
    adjusted_high: float | None = None
    adjusted_p: float | None = None
    # the clustered design (:class:`ClusteredMonitor`; None: tasks taken as independent)
    clusters: int | None = None  # the clusters this look saw
    total_clusters: int | None = None  # the clusters of the test tasks
    information: float | None = None  # 1 / the cluster-robust variance of the mean difference at this look
    cluster_df: float | None = None  # the t interval's degrees of freedom (Bell-McCaffrey, from the clusters' sizes)
    design_bounds: tuple[float, ...] | None = None  # every look's critical value, as projected at this look

    @model_serializer(mode="wrap")
    def _clustered_keys_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The clustered design's keys are dumped only with a value: an unclustered look is dumped as before."""
        return {k: v for k, v in handler(self).items() if v is not None or k not in CLUSTERED_LOOK_KEYS}

    @property
    def within_first_round(self) -> bool:
        """A look after part of the first round's tasks (the launch stopped there when it is the last)."""
        return self.tasks is not None and self.total_tasks is not None and self.tasks < self.total_tasks

    @property
    def stopped_early(self) -> bool:
        return self.rounds < self.max_rounds or self.within_first_round

    @property
    def adjusted(self) -> bool:
        """The inference at stopping, adjusted for the stopping rule, is there."""
        return self.adjusted_estimate is not None and self.adjusted_low is not None and self.adjusted_high is not None

    @property
    def boundary_alpha(self) -> float:
        """The error the boundaries of this candidate spend in total."""
        return self.spend if self.spend is not None else self.alpha

    def summary(self) -> dict[str, Any]:
        """summary.json's ``sequential`` object: hermit-tui's key, beside hermit's."""
        return {
            "baseline": self.baseline,
            "decision": self.decision,
            "rounds": self.rounds,
            "max_rounds": self.max_rounds,
            "method": self.method,
            "alpha": self.alpha,
            "spend": self.boundary_alpha,
            "split_over": self.candidates,
            "margin": self.margin,
            "decided_at": self.decided_at,
            "interval": None if self.ci_low is None else [self.ci_low, self.ci_high],
            "batches": self.batches,
            "tasks_looked": self.tasks,
            "total_tasks": self.total_tasks,
        } | {  # new keys only where they have a value (issue 25, item 4: futility and the adjusted inference)
            key: value
            for key, value in (
                ("futility", self.futility),
                ("conditional_power", self.conditional_power),
                ("estimate", self.adjusted_estimate),
                ("estimate_interval", [self.adjusted_low, self.adjusted_high] if self.adjusted else None),
                ("p_value", self.adjusted_p),
                ("clusters_looked", self.clusters),
            )
            if value is not None
        }


def obf_spending(t: float, alpha: float = ALPHA) -> float:
    """The two-sided type I error spent by spending time ``t``: each side spends ``alpha / 2`` by Lan & DeMets'
    O'Brien-Fleming-type function ``2 - 2 Phi(z(1 - alpha/4) / sqrt(t))`` (the symmetric design of ldbounds and
    gsDesign)."""
    from scipy.special import ndtr, ndtri

    if t <= 0:
        return 0.0
    return float(2 * (2 - 2 * ndtr(ndtri(1 - alpha / 4) / math.sqrt(min(t, 1.0)))))


def hsd_spending(t: float, alpha: float = ALPHA, gamma: float = HSD_GAMMA) -> float:
    """The two-sided type I error spent by spending time ``t`` by Hwang, Shih & DeCani's (1990) function
    ``alpha (1 - exp(-gamma t)) / (1 - exp(-gamma))`` (``gamma = -4`` is close to O'Brien-Fleming's, ``1`` to
    Pocock's; gsDesign's ``sfHSD``)."""
    if t <= 0:
        return 0.0
    t = min(t, 1.0)
    return float(alpha * math.expm1(-gamma * t) / math.expm1(-gamma)) if gamma else float(alpha * t)


def power_spending(t: float, alpha: float = ALPHA, rho: float = POWER_RHO) -> float:
    """The two-sided type I error spent by time ``t`` by Kim & DeMets' (1987) power family ``alpha t^rho``
    (``rho = 1``: linear, ``3``: close to O'Brien-Fleming's; below 1 it spends more early, as Pocock's does)."""
    return float(alpha * min(max(t, 0.0), 1.0) ** rho)


def spending_at(t: float, alpha: float, spending: Spending = "hsd") -> float:
    """The error spent by time ``t`` by the named function (``obf``: :func:`obf_spending`, ``power``:
    :func:`power_spending`)."""
    if spending == "power":
        return power_spending(t, alpha)
    return hsd_spending(t, alpha) if spending == "hsd" else obf_spending(t, alpha)


def design_spending(batches: int) -> Spending:
    """The spending function of a design with ``batches`` looks in the first round: Hwang-Shih-DeCani's (gamma -2)
    for looks after whole rounds only, Kim-DeMets' power family (:data:`POWER_RHO`) when the first round is looked
    at batch by batch. The number of batches is fixed by the number of tasks before any attempt, so the choice is
    the protocol's. Where a fraction of one round can decide (many tasks), the power family spends enough there to
    stop; with few tasks, rounds are what decides and the HSD function keeps more for the later rounds."""
    return "power" if batches > 1 else "hsd"


def _simpson(lo: float, hi: float, m: int = GRID) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(lo, hi, m)
    w = np.ones(m)
    w[1:-1:2], w[2:-1:2] = 4, 2
    return x, w * (hi - lo) / (3 * (m - 1))


def spending_boundaries(
    information: tuple[float, ...],
    times: tuple[float, ...] | None,
    alpha: float = ALPHA,
    spend: Callable[[float], float] | None = None,
) -> list[float]:
    """Critical values ``c_j`` such that, under no difference, the first crossing of ``|Z_j| >= c_j`` happens at look
    ``j`` with probability ``alpha(t_j) - alpha(t_{j-1})``. ``information``: increasing information levels (the
    correlation of ``Z_i`` and ``Z_j`` is ``sqrt(I_i / I_j)``); ``times``: the spending times (default
    ``I_j / I_last``); ``spend``: the two-sided spending function of the time (default :func:`obf_spending` at
    ``alpha``). Recursive numerical integration on the score scale ``S_j = Z_j sqrt(I_j)`` (Armitage, McPherson &
    Rowe 1969), Simpson's rule on :data:`GRID` points. A look that is to spend nothing gets ``inf``."""
    from scipy.optimize import brentq
    from scipy.special import ndtri

    info = [float(i) for i in information]
    times = times or tuple(i / info[-1] for i in info)
    spent = [spend(t) if spend is not None else obf_spending(t, alpha) for t in times]
    out: list[float] = []
    grid = weights = dens = np.empty(0)  # the continuation density of S_{j-1} on its grid (set at j = 0)
    prev_spent = 0.0
    for j, (ij, target_total) in enumerate(zip(info, spent)):
        target = max(0.0, target_total - prev_spent)
        if j == 0:
            sd = math.sqrt(ij)
            c = float(ndtri(1 - target / 2)) if target > 0 else math.inf
            b = c * sd
            lo_hi = b if math.isfinite(b) else 10 * sd
            grid, weights = _simpson(-lo_hi, lo_hi)
            dens = np.exp(-0.5 * (grid / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
        else:
            step = math.sqrt(max(ij - info[j - 1], 1e-12))
            mass = dens * weights
            if target <= 0:
                b = math.inf
            else:
                hi = float(np.max(np.abs(grid))) + 12 * step
                if _exit_prob(1e-9, mass, grid, step) <= target:  # cannot spend that much: stop at any value
                    b = 1e-9
                else:
                    b = brentq(
                        lambda x, m=mass, g=grid, s=step, t=target: _exit_prob(x, m, g, s) - t, 1e-9, hi, xtol=1e-10
                    )
            reach = float(np.max(np.abs(grid))) + 8 * step
            lo_hi = min(b, reach) if math.isfinite(b) else reach
            new_grid, new_weights = _simpson(-lo_hi, lo_hi)
            kernel = np.exp(-0.5 * ((new_grid[:, None] - grid[None, :]) / step) ** 2) / (step * math.sqrt(2 * math.pi))
            dens = kernel @ mass
            grid, weights = new_grid, new_weights
            c = b / math.sqrt(ij)
        out.append(c)
        prev_spent = max(prev_spent, target_total)
    return out


def _exit_prob(bound: float, mass: np.ndarray, grid: np.ndarray, step: float) -> float:
    """The probability of leaving ``(-bound, bound)`` in the next step, from the density ``mass`` on ``grid``."""
    from scipy.special import ndtr

    return float(np.sum(mass * (ndtr((-bound - grid) / step) + ndtr((grid - bound) / step))))


def _walk(
    info: Sequence[float],
    bounds: Sequence[float],
    theta: float,
    start: tuple[float, float] = (0.0, 0.0),
    last: float | None = None,
    m: int = GRID,
) -> tuple[list[float], list[float]]:
    """The score process ``S_j = S_{j-1} + N(theta (I_j - I_{j-1}), I_j - I_{j-1})`` started at ``S = start[1]`` at
    information ``start[0]``, with the looks at ``info`` and their critical values ``bounds`` (on the z scale:
    ``|S_j| >= bounds[j] sqrt(I_j)`` stops): for each look, the probability of stopping there upwards and downwards
    (first exits). ``last``: at the last look, instead, the probability of reaching it with ``Z >= last`` (up) and
    ``Z < last`` (down). Recursive numerical integration on Simpson grids over the continuation regions (Armitage,
    McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19)."""
    from scipy.special import ndtr

    grid, mass, prev = np.array([float(start[1])]), np.array([1.0]), float(start[0])
    ups: list[float] = []
    downs: list[float] = []
    for j, (ij, c) in enumerate(zip(info, bounds)):
        d = max(float(ij) - prev, 1e-12)
        step = math.sqrt(d)
        centre = grid + theta * d
        if last is not None and j == len(info) - 1:
            up = float(np.sum(mass * ndtr((centre - last * math.sqrt(ij)) / step)))
            ups.append(up)
            downs.append(max(0.0, float(np.sum(mass)) - up))
            break
        b = c * math.sqrt(ij) if math.isfinite(c) else math.inf
        ups.append(float(np.sum(mass * ndtr((centre - b) / step))) if math.isfinite(b) else 0.0)
        downs.append(float(np.sum(mass * ndtr((-b - centre) / step))) if math.isfinite(b) else 0.0)
        lo, hi = max(-b, float(centre.min()) - 8 * step), min(b, float(centre.max()) + 8 * step)
        if j == len(info) - 1 or lo >= hi:
            ups += [0.0] * (len(info) - j - 1)
            downs += [0.0] * (len(info) - j - 1)
            break
        new_grid, weights = _simpson(lo, hi, m)
        kernel = np.exp(-0.5 * ((new_grid[:, None] - centre[None, :]) / step) ** 2) / (step * math.sqrt(2 * math.pi))
        grid, mass, prev = new_grid, (kernel @ mass) * weights, float(ij)
    return ups, downs


INFERENCE_GRID = 81  # points of the numerical integration of the inference at stopping (errors under 1e-5)


def _invert(
    upper: Callable[[float], float], centre: float, reach: float, level: float, lo: float, hi: float, *, xtol: float
) -> tuple[float, float, float, float]:
    """(estimate, low, high, p) from ``upper`` = P(theta), the probability of an outcome more extreme upwards than
    the one observed (increasing in theta): the median-unbiased ``P = 1/2``, the interval ``P = (1 -+ level) / 2``
    (each bracketed from ``centre`` in steps of ``reach``, then solved by Brent's method to ``xtol``) and p =
    ``2 min(P(0), 1 - P(0))``; all clipped to ``[lo, hi]``. Shared by the stagewise and the sample-mean orderings."""
    from scipy.optimize import brentq

    def solve(q: float) -> float:
        a, b = centre - reach, centre + reach
        while upper(a) > q and a > lo - 10 * reach:
            a -= reach
        while upper(b) < q and b < hi + 10 * reach:
            b += reach
        fa, fb = upper(a) - q, upper(b) - q
        if fa > 0:
            return a
        if fb < 0:
            return b
        return float(brentq(lambda t: upper(t) - q, a, b, xtol=xtol))

    tail = (1 - level) / 2
    est, low, high = solve(0.5), solve(tail), solve(1 - tail)
    p0 = upper(0.0)
    p = min(1.0, 2 * min(p0, 1 - p0))

    def clip(x: float) -> float:
        return min(max(x, lo), hi)

    return clip(est), clip(low), clip(high), p


def stagewise_inference(
    info: Sequence[float],
    bounds: Sequence[float],
    z: float,
    *,
    level: float = CONFIDENCE,
    lo: float = -1.0,
    hi: float = 1.0,
) -> tuple[float, float, float, float]:
    """(estimate, low, high, p) at a stop at the last of the looks ``info`` with observed ``z`` (the mean
    difference over its standard error ``1 / sqrt(info[-1])``), ``bounds`` the critical values of the looks before
    it: the **stagewise ordering** (Armitage 1957, Tsiatis, Rosner & Mehta 1984; Jennison & Turnbull 2000, sec.
    8.4): an outcome is more extreme upwards than (look k, z) when it stopped upwards at an earlier look, or reached
    look k with a larger z. With ``P(theta)`` the probability of that under a true difference ``theta`` (increasing
    in theta), the estimate is the median-unbiased ``P(theta) = 1/2``, the interval ``P = (1 - level) / 2`` and
    ``(1 + level) / 2``, and p is ``2 min(P(0), 1 - P(0))``; all clipped to ``[lo, hi]``, the difference's range."""
    info = [float(i) for i in info]
    cs = [float(c) for c in bounds[: len(info) - 1]] + [math.inf]

    def upper(theta: float) -> float:
        ups, _ = _walk(info, cs, theta, last=z, m=INFERENCE_GRID)
        return sum(ups)

    return _invert(upper, z / math.sqrt(info[-1]), 12 / math.sqrt(info[0]), level, lo, hi, xtol=1e-6)


def _ordered_upper(
    info: Sequence[float], bounds: Sequence[float], inner: Sequence[float], theta: float, estimate: float, m: int
) -> float:
    """``P(theta)`` of the sample-mean ordering: the probability, under a true difference ``theta``, that the design
    stops (at any of the looks ``info``) with a mean difference at least ``estimate``. A look stops when ``|Z| >=
    bounds[j]`` (efficacy) or ``|Z| < inner[j]`` (futility; 0: none), the last look always. Recursive numerical
    integration on the score scale, the continuation region of a look with a futility region being two intervals."""
    from scipy.special import ndtr

    grid, mass, prev = np.array([0.0]), np.array([1.0]), 0.0
    total, last = 0.0, len(info) - 1
    for j, (ij, c, f) in enumerate(zip(info, bounds, inner)):
        d = max(float(ij) - prev, 1e-12)
        step, root = math.sqrt(d), math.sqrt(float(ij))
        centre = grid + theta * d
        s_star = estimate * float(ij)  # a mean difference of ``estimate`` on the score scale

        def above(x: float, mass: np.ndarray = mass, centre: np.ndarray = centre, step: float = step) -> float:
            return float(np.sum(mass * ndtr((centre - x) / step)))  # P(S_j >= x), from the continuation density

        if j == last:
            return total + above(s_star)
        b = c * root if math.isfinite(c) else math.inf
        a = min(max(f, 0.0) * root, b)
        if math.isfinite(b):
            total += above(max(b, s_star))
            if s_star < -b:
                total += above(s_star) - above(-b)
        if a > 0 and s_star < a:
            total += above(max(s_star, -a)) - above(a)
        reach_lo, reach_hi = float(centre.min()) - 8 * step, float(centre.max()) + 8 * step
        pieces = [(max(-b, reach_lo), min(b, reach_hi))] if a <= 0 else [
            (max(-b, reach_lo), min(-a, reach_hi)),
            (max(a, reach_lo), min(b, reach_hi)),
        ]  # fmt: skip
        grids = [_simpson(lo, hi, m if len(pieces) == 1 else m // 2 + 1) for lo, hi in pieces if lo < hi]
        if not grids:
            return total
        new_grid = np.concatenate([g for g, _ in grids])
        weights = np.concatenate([w for _, w in grids])
        kernel = np.exp(-0.5 * ((new_grid[:, None] - centre[None, :]) / step) ** 2) / (step * math.sqrt(2 * math.pi))
        grid, mass, prev = new_grid, (kernel @ mass) * weights, float(ij)
        if float(np.sum(mass)) < 1e-9:  # (nothing left to stop later)
            break
    return total


def ordered_inference(
    info: Sequence[float],
    bounds: Sequence[float],
    inner: Sequence[float],
    estimate: float,
    *,
    level: float = CONFIDENCE,
    lo: float = -1.0,
    hi: float = 1.0,
) -> tuple[float, float, float, float]:
    """(estimate, low, high, p) at a stop with the mean difference ``estimate``, by the **sample-mean ordering**
    (Emerson & Fleming 1990, Biometrika 77:875; Jennison & Turnbull 2000, sec. 8.4) over the whole design: the
    looks ``info`` (information: 1 / variance of the mean difference), their efficacy critical values ``bounds``
    and futility regions ``|z| < inner``. An outcome is more extreme upwards when its mean difference at its stop is
    larger, whatever the look. Unlike the stagewise ordering it is defined when a look's continuation region is two
    intervals (a futility region inside the boundaries), at the price of depending on the looks not reached. With
    ``P(theta)`` the probability of a more extreme outcome, the estimate solves ``P = 1/2`` (median-unbiased), the
    interval ``P = (1 -+ level) / 2``, p is ``2 min(P(0), 1 - P(0))``; all clipped to ``[lo, hi]``."""
    info = [float(i) for i in info]
    cs = [float(c) for c in bounds]
    fs = [float(f) for f in inner]

    def upper(theta: float) -> float:
        return _ordered_upper(info, cs, fs, theta, estimate, INFERENCE_GRID)

    return _invert(upper, estimate, 12 / math.sqrt(info[0]), level, lo, hi, xtol=1e-5)


def futility_regions(
    info: Sequence[float], bounds: Sequence[float], threshold: float, first: int, tol: float = 1e-3
) -> list[float]:
    """The futility region ``|z| < f_j`` of each look: where the conditional power under the current estimate
    (:func:`conditional_power` with the looks ``info`` and critical values ``bounds``) is below ``threshold``; 0
    before look ``first`` (an index) and at the last look. The conditional power grows with ``|z|``, so ``f_j`` is
    found by bisection (to ``tol`` on the z scale). It depends on the ratios of the information only, so the
    regions are cached on those ratios and the critical values rounded to 1e-4."""
    last = float(info[-1])
    return list(
        _futility_regions(
            tuple(round(float(i) / last, 6) for i in info),
            tuple(round(float(c), 4) if math.isfinite(c) else math.inf for c in bounds),
            threshold,
            first,
            tol,
        )
    )


@lru_cache(maxsize=4096)
def _futility_regions(
    info: tuple[float, ...], bounds: tuple[float, ...], threshold: float, first: int, tol: float
) -> tuple[float, ...]:
    out = []
    for j in range(len(info)):
        c = float(bounds[j])
        top = c if math.isfinite(c) else 8.0
        if j < first or j == len(info) - 1 or conditional_power(info, bounds, j, 0.0) >= threshold:
            out.append(0.0)
            continue
        if conditional_power(info, bounds, j, top) < threshold:
            out.append(top)
            continue
        lo, hi = 0.0, top
        while hi - lo > tol:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if conditional_power(info, bounds, j, mid) < threshold else (lo, mid)
        out.append((lo + hi) / 2)
    return tuple(out)


def conditional_power(info: Sequence[float], bounds: Sequence[float], now: int, z: float) -> float:
    """The probability, under the current estimate ``theta = z / sqrt(info[now])``, that a look after look ``now``
    (an index of ``info``) crosses its efficacy boundary on either side, given ``z`` at look ``now`` (ignoring any
    futility rule; the later looks' information as ``info`` says)."""
    i_now = float(info[now])
    later = [float(i) for i in info[now + 1 :]]
    if not later:
        return 0.0
    s = z * math.sqrt(i_now)
    ups, downs = _walk(later, bounds[now + 1 :], s / i_now, start=(i_now, s), m=INFERENCE_GRID)
    return min(1.0, sum(ups) + sum(downs))


def design_units(tasks: int, max_rounds: int, batches: int = 1) -> tuple[float, ...]:
    """The information of each look of :func:`look_schedule` in attempts (``n / G`` within round 1, ``r`` after
    round ``r``): what the boundaries assume (``between = 0``)."""
    if batches <= 1:
        return tuple(float(r) for r in range(1, max_rounds + 1))
    return tuple(n / tasks if r == 1 else float(r) for r, n in look_schedule(tasks, max_rounds, batches))


@lru_cache(maxsize=256)
def round_boundaries(max_rounds: int, alpha: float = ALPHA, spending: Spending = "hsd") -> tuple[float, ...]:
    """The critical values of rounds 1..``max_rounds`` spending ``alpha`` in total by ``spending`` (the
    Hwang-Shih-DeCani function, or ``obf`` for summaries written before issue 25, item 4): spending time ``r / R``,
    looks correlated as ``sqrt(r / s)`` (information proportional to the rounds)."""
    info = tuple(float(r) for r in range(1, max_rounds + 1))
    times = tuple(r / max_rounds for r in info)
    return tuple(spending_boundaries(info, times, alpha, spend=lambda t: spending_at(t, alpha, spending)))


def first_round_batches(tasks: int) -> int:
    """The looks within the first round a launch on ``tasks`` test tasks plans: one per :data:`MIN_BATCH` tasks, at
    most :data:`MAX_BATCHES` (1: a look after the whole round only)."""
    return max(1, min(MAX_BATCHES, tasks // MIN_BATCH))


def look_schedule(tasks: int, max_rounds: int, batches: int = 1) -> tuple[tuple[int, int], ...]:
    """(round, paired tasks) of each look: after the first ``round(k tasks / batches)`` tasks of round 1 in the
    look order (:func:`look_order`), k = 1..batches, then after each whole round 2..``max_rounds``."""
    if tasks < 1 or max_rounds < 1 or not 1 <= batches <= max(1, tasks):
        raise ValueError(f"no look schedule for {tasks} tasks, {max_rounds} rounds, {batches} looks in round 1")
    first = [(1, max(1, round(tasks * k / batches))) for k in range(1, batches + 1)]
    return tuple(first + [(r, tasks) for r in range(2, max_rounds + 1)])


def look_order(task_ids: Sequence[str]) -> list[str]:
    """The order in which the first round's looks take the tasks: by the sha256 of each task id (:data:`ORDER`),
    fixed by the protocol before any attempt and unrelated to the tasks' content or to which attempt finishes
    first (a prefix of a file's order could be its easiest tasks: the ordered-stream caveat)."""
    import hashlib

    return sorted(task_ids, key=lambda t: (hashlib.sha256(str(t).encode()).hexdigest(), str(t)))


@lru_cache(maxsize=256)
def look_boundaries(
    tasks: int, max_rounds: int, batches: int = 1, alpha: float = ALPHA, spending: Spending = "hsd"
) -> tuple[float, ...]:
    """The critical values of the looks of :func:`look_schedule`. The information of a look is counted in
    attempts, ``u = n / G`` at a look after ``n`` of the ``G`` tasks of round 1 and ``u = r`` after round ``r``:
    the spending time is ``u / R`` and two looks are correlated as ``sqrt(u / v)``. That is exact within round 1
    (``sqrt(n / n')`` whatever the tasks' spread) and, across rounds, the least correlation any split of the
    variance gives (``between = 0``; see the module's docstring). With ``batches = 1`` these are
    :func:`round_boundaries`."""
    if batches <= 1:
        return round_boundaries(max_rounds, alpha, spending)
    units = tuple(n / tasks if r == 1 else float(r) for r, n in look_schedule(tasks, max_rounds, batches))
    times = tuple(u / max_rounds for u in units)
    return tuple(spending_boundaries(units, times, alpha, spend=lambda t: spending_at(t, alpha, spending)))


def variance_components(diffs: np.ndarray) -> tuple[float, float | None]:
    """(between, within) of the per-task, per-round paired differences ``diffs`` (G x r): ``within`` = mean over tasks
    of the variance across rounds (None with one round), ``between = max(0, Var(task means) - within / r)``."""
    g, r = diffs.shape
    task_means = diffs.mean(axis=1)
    var_means = float(task_means.var(ddof=1)) if g > 1 else 0.0
    if r < 2:
        return 0.0, None
    within = float(np.mean(diffs.var(axis=1, ddof=1)))
    return max(0.0, var_means - within / r), within


def sequential_look(
    baseline: str,
    candidate: str,
    a: np.ndarray,
    b: np.ndarray,
    max_rounds: int,
    *,
    alpha: float = ALPHA,
    spend: float | None = None,
    candidates: int = 1,
    spending: Spending = "hsd",
    margin: float | None = None,
    lo: float = 0.0,
    hi: float = 1.0,
    batches: int = 1,
    total_tasks: int | None = None,
) -> SequentialLook:
    """The decision after the looks so far, from this look's interval alone (no memory of earlier looks: see
    :class:`SequentialMonitor`). ``a`` and ``b``: scores, n tasks x r rounds, in ``[lo, hi]``: the whole rounds so
    far, or (``batches`` > 1, one round) the first n of the ``total_tasks`` tasks in the look order, n being one of
    :func:`look_schedule`'s. ``alpha``: the launch's family-wise level; ``spend``: what this candidate's boundaries
    spend (default :func:`candidate_spend` of ``alpha`` over ``candidates``)."""
    spend = candidate_spend(alpha, candidates) if spend is None else spend
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError("baseline and candidate scores must both be tasks x rounds")
    g, r = a.shape
    if not 1 <= r <= max_rounds:
        raise ValueError(f"{r} rounds for a maximum of {max_rounds}")
    total = g if total_tasks is None else total_tasks
    batches = max(1, batches)
    schedule = look_schedule(max(total, 1), max_rounds, batches) if total >= batches else ((1, total),)
    index = batches + r - 2 if r > 1 else next((j for j, (_, n) in enumerate(schedule[:batches]) if n == g), None)
    if index is None or (r > 1 and g != total):
        raise ValueError(f"{g} tasks x {r} rounds is not a look of the schedule ({total} tasks, {batches} in round 1)")
    diffs = b - a
    task_diffs = diffs.mean(axis=1)
    mean_diff = float(task_diffs.mean()) if g else None
    base = dict(
        method={"power": BATCH_METHOD, "obf": OLD_METHOD}.get(spending, METHOD),
        batches=batches,
        tasks=g,
        total_tasks=total,
        look=index + 1,
        baseline=baseline,
        candidate=candidate,
        rounds=r,
        max_rounds=max_rounds,
        alpha=alpha,
        spend=spend,
        candidates=candidates,
        spending=spending,
        margin=margin,
        mean_diff=mean_diff,
    )
    if g < 2 or mean_diff is None:
        return SequentialLook(**base, decision="undecided", ci_low=None, ci_high=None)
    between, within = variance_components(diffs)
    c = look_boundaries(total, max_rounds, batches, spend, spending)[index]
    t_r = (g / total if r == 1 else r) / max_rounds
    from scipy.special import ndtr

    nominal = 1.0 - 2 * (1 - float(ndtr(c))) if math.isfinite(c) else 1.0
    width = hi - lo
    interval = None
    if math.isfinite(c) and nominal < 1.0:
        interval = _repeated_interval(mean_diff, float(task_diffs.std(ddof=1)), g, -width, width, level=nominal)
    low, high = (interval.low, interval.high) if interval else (-width, width)
    sd = float(task_diffs.std(ddof=1))
    z = mean_diff / (sd / math.sqrt(g)) if sd > 0 else (0.0 if mean_diff == 0 else math.copysign(math.inf, mean_diff))
    decision = decide(low, high, margin)
    return SequentialLook(
        **base,
        decision=decision,
        decided_at=r if decision != "undecided" else None,
        decided_tasks=g if decision != "undecided" else None,
        ci_low=low,
        ci_high=high,
        ci_method=interval.method if interval else None,
        boundary_z=c,
        nominal_level=nominal,
        spending_time=t_r,
        alpha_spent=spending_at(t_r, spend, spending),
        between_var=between,
        within_var=within,
        z=z,
    )


def boundaries_of(look: SequentialLook) -> tuple[float, ...]:
    """The critical values of every look of ``look``'s design (what a boundary plot draws; the clustered design's
    as projected at that look)."""
    if look.design_bounds is not None:
        return look.design_bounds
    total = look.total_tasks or 1
    if look.batches <= 1 or look.total_tasks is None:
        return round_boundaries(look.max_rounds, look.boundary_alpha, look.spending)
    return look_boundaries(total, look.max_rounds, look.batches, look.boundary_alpha, look.spending)


ADJUSTED_KEYS = ("adjusted_estimate", "adjusted_low", "adjusted_high", "adjusted_p")


def _applied_bounds(
    cs: Sequence[float], schedule: Sequence[tuple[int, int]], info: Sequence[float], width: float, start: int = 0
) -> list[float]:
    """The critical values on the observed z (mean over its standard error) that the looks' repeated intervals
    (:func:`_repeated_interval` at each look's nominal level) applied: the smallest z whose interval excludes 0, with
    a look's sd of task differences ``sqrt(n / I)`` from its information (looks before ``start``: inf, not computed).
    On few tasks they lie above the normal
    boundary (Student's t, the score interval's pull towards the middle: 3.06 against 2.63 at 25 tasks)."""
    from scipy.special import ndtr

    out = []
    for j, (c, (_, n), i) in enumerate(zip(cs, schedule, info)):
        if j < start or not math.isfinite(c) or n < 2 or i <= 0:  # (before ``start``: not needed, left out)
            out.append(math.inf)
            continue
        level, se = 2 * float(ndtr(c)) - 1, 1 / math.sqrt(i)
        sd, crit = se * math.sqrt(n), t_quantile(n - 1, level)

        def excludes(m: float, sd: float = sd, n: int = n, level: float = level, crit: float = crit) -> bool:
            got = _repeated_interval(m, sd, n, -width, width, level=level, crit=crit)
            return got is not None and got.low > 0

        lo, hi = 0.0, min(width, 12 * se)
        if not excludes(hi):
            out.append(math.inf)
            continue
        for _ in range(24):  # to 12 se / 2^24
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if excludes(mid) else (mid, hi)
        out.append(hi / se)
    return out


def _information(
    look: SequentialLook,
    units: Sequence[float],
    tasks: int,
    max_rounds: int,
    batches: int,
    se: float,
    at: int | None = None,
) -> list[float]:
    """The information (1 / variance of the mean difference) of each look of ``units``, the look ``at`` (default:
    the last of them) being ``look``, whose standard error is ``se``: after two rounds or more, by the variance
    components it estimates (``n / (between + within / r)`` at a look of n tasks, r rounds: repeats shrink only the
    run-to-run part); before that, proportional to the attempts (exact within round 1)."""
    schedule = look_schedule(tasks, max_rounds, batches)[: len(units)]
    b, w = look.between_var, look.within_var
    if w is not None and b is not None and b + w > 0:
        shape = [n / (b + w / r) for r, n in schedule]
    else:
        shape = list(units)
    return [x / shape[-1 if at is None else at] / se**2 for x in shape]


def decide(low: float, high: float, margin: float | None) -> Decision:
    """The decision an interval (or a confidence sequence) for b - a gives: above 0, below 0, within the margin."""
    if low > 0:
        return "improvement"
    if high < 0:
        return "regression"
    if margin is not None and -margin < low and high < margin:
        return "equivalent"
    return "undecided"


class SequentialMonitor:
    """One candidate against the baseline over a launch: feed each look's scores in the look order; the first
    decision is kept and the interval is the intersection of every look's interval.

    ``batches`` > 1 (with ``total_tasks``): the first round is looked at after each of its batches of tasks
    (:func:`look_schedule`); :meth:`add_look` takes a batch's scores, then each later whole round's. With
    ``batches = 1`` a look is a whole round (:meth:`add_round`)."""

    def __init__(
        self,
        baseline: str,
        candidate: str,
        max_rounds: int,
        *,
        alpha: float = ALPHA,
        spend: float | None = None,
        candidates: int = 1,
        spending: Spending = "hsd",
        margin: float | None = None,
        lo: float = 0.0,
        hi: float = 1.0,
        batches: int = 1,
        total_tasks: int | None = None,
        futility: float | None = None,
    ):
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        if margin is not None and not margin > 0:
            raise ValueError("the equivalence margin must be positive")
        if batches > 1 and total_tasks is None:
            raise ValueError("looks within the first round need the number of test tasks")
        self.baseline, self.candidate, self.max_rounds = baseline, candidate, max_rounds
        self.alpha, self.margin, self.lo, self.hi = alpha, margin, lo, hi
        self.candidates, self.spending = candidates, spending
        self.batches, self.total_tasks = max(1, batches), total_tasks
        self.spend = candidate_spend(alpha, candidates) if spend is None else spend
        if futility is not None and not 0 < futility < 1:
            raise ValueError("the futility rule's conditional power must be between 0 and 1")
        self.futility = futility  # non-binding: the boundaries ignore it (None: no futility rule)
        self._first_a: list[np.ndarray] = []  # round 1, batch by batch
        self._first_b: list[np.ndarray] = []
        self._a: list[np.ndarray] = []  # whole rounds
        self._b: list[np.ndarray] = []
        self.looks = 0
        self.last: SequentialLook | None = None

    @property
    def decided(self) -> bool:
        return self.last is not None and self.last.decision != "undecided"

    @property
    def schedule(self) -> tuple[tuple[int, int], ...] | None:
        """(round, tasks) of each look, when the number of tasks is known."""
        if self.total_tasks is None:
            return None
        return look_schedule(self.total_tasks, self.max_rounds, self.batches)

    def add_round(
        self, a_scores: Sequence[float] | np.ndarray, b_scores: Sequence[float] | np.ndarray
    ) -> SequentialLook:
        """A whole round's scores (every task, in order): the next look (``batches = 1``), or round 1's last batch
        and every later round."""
        if self.batches > 1 and self.looks < self.batches:
            done = sum(len(x) for x in self._first_a)
            return self.add_look(np.asarray(a_scores)[done:], np.asarray(b_scores)[done:])
        return self.add_look(a_scores, b_scores)

    def add_look(
        self, a_scores: Sequence[float] | np.ndarray, b_scores: Sequence[float] | np.ndarray
    ) -> SequentialLook:
        """The next look: within round 1 (``batches`` > 1), the scores of the tasks it adds in the look order; after
        that, a whole round's."""
        total_looks = self.batches + self.max_rounds - 1
        if self.looks >= total_looks:
            raise ValueError(f"all {total_looks} looks were already added")
        a_new, b_new = np.asarray(a_scores, dtype=float), np.asarray(b_scores, dtype=float)
        if self.looks < self.batches and self.batches > 1:
            self._first_a.append(a_new)
            self._first_b.append(b_new)
            if self.looks == self.batches - 1:
                self._a.append(np.concatenate(self._first_a))
                self._b.append(np.concatenate(self._first_b))
            a_all = np.concatenate(self._first_a)[:, None]
            b_all = np.concatenate(self._first_b)[:, None]
        else:
            self._a.append(a_new)
            self._b.append(b_new)
            a_all, b_all = np.column_stack(self._a), np.column_stack(self._b)
        self.looks += 1
        look = self._look(a_all, b_all).model_copy(update=dict(futility=self.futility))
        prev = self.last
        if (
            prev is not None
            and prev.ci_low is not None
            and prev.ci_high is not None
            and look.ci_low is not None
            and look.ci_high is not None
        ):
            low, high = max(prev.ci_low, look.ci_low), min(prev.ci_high, look.ci_high)
            if low > high:  # disjoint intervals: possible only by chance (probability < alpha); keep the latest
                low, high = look.ci_low, look.ci_high
            look = look.model_copy(update=dict(ci_low=low, ci_high=high))
        if prev is not None and prev.decision != "undecided":
            kept = ("decision", "decided_at", "decided_tasks", "conditional_power", *ADJUSTED_KEYS)
            look = look.model_copy(update={key: getattr(prev, key) for key in kept})
        else:
            if look.ci_low is not None and look.ci_high is not None:
                decision = decide(look.ci_low, look.ci_high, self.margin)
                done = decision != "undecided"
                look = look.model_copy(
                    update=dict(
                        decision=decision,
                        decided_at=look.rounds if done else None,
                        decided_tasks=look.tasks if done else None,
                    )
                )
            look = self._at_stopping(look, b_all - a_all, total_looks)
        self.last = look
        return look

    def _look(self, a_all: np.ndarray, b_all: np.ndarray) -> SequentialLook:
        """This look's figures from the scores so far (tasks x rounds), before the memory of earlier looks."""
        return sequential_look(
            self.baseline,
            self.candidate,
            a_all,
            b_all,
            self.max_rounds,
            alpha=self.alpha,
            spend=self.spend,
            candidates=self.candidates,
            spending=self.spending,
            margin=self.margin,
            lo=self.lo,
            hi=self.hi,
            batches=self.batches,
            total_tasks=self.total_tasks,
        )

    def _at_stopping(self, look: SequentialLook, diffs: np.ndarray, total_looks: int) -> SequentialLook:
        """``look`` with the futility rule applied (still undecided, not the last look) and, where the candidate
        stops (decided, futile or the last look), the inference adjusted for the stopping rule."""
        g = diffs.shape[0]
        sd = float(diffs.mean(axis=1).std(ddof=1)) if g > 1 else 0.0
        z = look.z
        if look.mean_diff is None or look.look is None or not sd > 0 or z is None or not math.isfinite(z):
            return look
        k = look.look - 1
        total = self.total_tasks if self.total_tasks is not None else g
        units = design_units(total, self.max_rounds, self.batches)
        schedule = look_schedule(total, self.max_rounds, self.batches)
        width = self.hi - self.lo
        seen = units[k] * total  # attempts per selector so far
        if (
            look.decision == "undecided"
            and self.futility is not None
            and k < total_looks - 1
            and seen >= FUTILITY_MIN_ATTEMPTS
        ):
            design = [u / units[k] * g / sd**2 for u in units]  # the most information the later looks can have
            cs = _applied_bounds(boundaries_of(look), schedule, design, width, start=k + 1)
            cp = conditional_power(design, cs, k, z)
            look = look.model_copy(update=dict(conditional_power=cp))
            if cp < self.futility:
                look = look.model_copy(update=dict(decision="futile", decided_at=look.rounds, decided_tasks=g))
        if look.decision == "undecided" and k < total_looks - 1:
            return look
        se = sd / math.sqrt(g)
        if self.futility is None:  # the stagewise ordering of the looks run (their continuation regions: intervals)
            info = _information(look, units[: k + 1], total, self.max_rounds, self.batches, se)
            cs = _applied_bounds(boundaries_of(look)[:k], schedule, info, width)
            est, low, high, p = stagewise_inference(info, cs, z, lo=-width, hi=width)
        else:  # futility stops are outcomes too: the sample-mean ordering over the whole design, as the launch runs it
            info = _information(look, units, total, self.max_rounds, self.batches, se, at=k)
            cs = _applied_bounds(boundaries_of(look), schedule, info, width)
            design = [u / units[k] / se**2 for u in units]  # what the rule assumed (see the futility rule above)
            first = next(j for j, u in enumerate(units) if u * total >= FUTILITY_MIN_ATTEMPTS or j == len(units) - 1)
            rule = _applied_bounds(boundaries_of(look), schedule, design, width, start=first + 1)
            inner = futility_regions(design, rule, self.futility, first)
            est, low, high, p = ordered_inference(info, cs, inner, z * se, lo=-width, hi=width)
        return look.model_copy(update=dict(adjusted_estimate=est, adjusted_low=low, adjusted_high=high, adjusted_p=p))


# ---------------------------------------------------------------------------------- the clustered design

CLUSTER_ORDER = "sha256 of the cluster, then of the task id within it"
MIN_CLUSTERS_PER_LOOK = 4  # a look within round 1 adds this many clusters or more (and leaves as many for later)
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


def cluster_key(task_id: str, cluster_of: Mapping[str, str]) -> str:
    """The cluster of ``task_id`` (a task the mapping does not name: a cluster of its own, as in
    ``core.stats.clusters``)."""
    from hermit_tui.core.stats.clusters import OWN

    return cluster_of.get(task_id, OWN + task_id)


def cluster_look_order(task_ids: Sequence[str], cluster_of: Mapping[str, str]) -> list[str]:
    """The clustered design's look order (:data:`CLUSTER_ORDER`): the clusters by the sha256 of their name, each
    cluster's tasks together, by the sha256 of their ids. Fixed by the protocol (the tasks and their clusters)
    before any attempt, so a prefix of whole clusters is a draw of clusters unrelated to their content."""
    import hashlib

    def h(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    keyed = [(cluster_key(str(t), cluster_of), str(t)) for t in task_ids]
    return [t for _, t in sorted(keyed, key=lambda kt: (h(kt[0]), kt[0], h(kt[1]), kt[1]))]


def cluster_codes(ordered_ids: Sequence[str], cluster_of: Mapping[str, str]) -> np.ndarray:
    """Integer codes of the tasks' clusters, ``0..C-1`` in order of first appearance."""
    seen: dict[str, int] = {}
    return np.array([seen.setdefault(cluster_key(str(t), cluster_of), len(seen)) for t in ordered_ids], np.int64)


def clustered_batches(tasks: int, clusters: int) -> int:
    """The looks within the first round the clustered design plans by default: :func:`first_round_batches`, at most
    one per :data:`MIN_CLUSTERS_PER_LOOK` clusters (:func:`cluster_schedule` may make fewer)."""
    return max(1, min(first_round_batches(tasks), clusters // MIN_CLUSTERS_PER_LOOK))


def _cluster_ends(codes: np.ndarray) -> list[int]:
    """The tasks seen (a count) at the end of each cluster of ``codes`` (in the look order: a cluster's tasks are
    together)."""
    n = len(codes)
    return [i + 1 for i in range(n) if i == n - 1 or codes[i + 1] != codes[i]]


def cluster_schedule(codes: Sequence[int] | np.ndarray, max_rounds: int, batches: int) -> tuple[tuple[int, int], ...]:
    """(round, paired tasks) of each look of the clustered design: round 1 is looked at after whole clusters (a
    look never splits one), at the end of the cluster nearest to ``k / batches`` of the tasks (k = 1..batches - 1),
    each look adding :data:`MIN_CLUSTERS_PER_LOOK` clusters or more and leaving as many for the rest of the round,
    then after the whole round and each later round. Where the clusters allow fewer looks than ``batches``, the
    schedule of the looks they allow (a fixed point: the schedule of its own number of looks is itself)."""
    codes = np.asarray(codes, dtype=np.int64)
    ends = _cluster_ends(codes)
    g, c = len(codes), len(ends)
    if g < 1 or max_rounds < 1 or batches < 1:
        raise ValueError(f"no look schedule for {g} tasks, {max_rounds} rounds, {batches} looks in round 1")
    want = batches
    while True:
        first, prev = [], -1
        for k in range(1, want):
            options = range(prev + MIN_CLUSTERS_PER_LOOK, c - MIN_CLUSTERS_PER_LOOK)
            if not options:
                break
            j = min(options, key=lambda i: (abs(ends[i] - g * k / want), i))
            first.append(ends[j])
            prev = j
        first.append(g)
        if len(first) == want:
            break
        want = len(first)
    return tuple([(1, n) for n in first] + [(r, g) for r in range(2, max_rounds + 1)])


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
    df, the fixed design's method, left them at 4.9-5.4%, where the fixed CR1 t test itself rejects 5.7-6.9%;
    hence CR2 and its df here."""

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


# ---------------------------------------------------------------------------------- the repeated intervals

T_MIN_TASKS = 30
T_MIN_COUNT = 10.0
FEW = 3.0  # effective observations on the far side of the mean below which an end gets Clopper-Pearson's bound
NEAR = 0.2  # ... when the mean is this close to that end (a fifth of the range)
Z95 = 1.959963984540054


def _repeated_interval(
    mean: float,
    sd: float,
    n_tasks: int,
    lo: float,
    hi: float,
    *,
    max_n_eff: float | None = None,
    level: float = CONFIDENCE,
    crit: float | None = None,
) -> Interval | None:
    """Round r's interval for the mean of ``n_tasks`` task differences in ``[lo, hi]`` with sample sd ``sd``: the
    fixed design's method before issue 25 (Student t from 30 tasks and 10 effective observations on each side, else
    the effective-sample-size score interval with Clopper-Pearson next to an end, or the no-spread bound), kept for
    the repeated intervals, whose extreme early levels the selector interval's no-spread floor would make
    uninformative.

    ``max_n_eff``: an upper bound on the effective sample size (the attempts' worth, for pass/fail scores).
    None with fewer than 2 tasks. The bounds are clipped to ``[lo, hi]`` against rounding only.
    """
    if n_tasks < 2 or not (math.isfinite(mean) and math.isfinite(sd)):
        return None
    width = hi - lo
    if width <= 0:
        return Interval(low=lo, high=hi, method="no-spread")
    mean = min(max(mean, lo), hi)
    if sd <= 1e-12 * width:
        q = no_spread_share(n_tasks, level)
        return Interval(low=max(lo, mean - q * (mean - lo)), high=min(hi, mean + q * (hi - mean)), method="no-spread")
    crit = t_quantile(n_tasks - 1, level) if crit is None else crit  # (given: the caller computed it)
    se = sd / math.sqrt(n_tasks)
    p, se_p = (mean - lo) / width, se / width
    n_raw = p * (1 - p) / (se_p * se_p)
    if n_tasks >= T_MIN_TASKS and n_raw * p >= T_MIN_COUNT and n_raw * (1 - p) >= T_MIN_COUNT:
        return Interval(low=max(lo, mean - crit * se), high=min(hi, mean + crit * se), method="t")
    n_eff = max(n_raw, float(n_tasks))
    if max_n_eff is not None:
        n_eff = min(n_eff, max(max_n_eff, float(n_tasks)))
    low, high = wilson_bounds(p, n_eff, crit)
    low, high = _near_the_ends(p, n_eff, crit, low, high, level)
    return Interval(low=lo + width * low, high=lo + width * high, method="score", n_eff=n_eff)


def _near_the_ends(p: float, n_eff: float, crit: float, low: float, high: float, level: float) -> tuple[float, float]:
    """Wilson's bounds widened to Clopper-Pearson's on the effective counts where few fall beyond the mean."""
    from scipy.special import betaincinv

    n = n_eff * (Z95 / crit) ** 2  # the degrees-of-freedom adjustment of Korn & Graubard
    x = n * p
    tail = (1 - level) / 2
    if n_eff * (1 - p) <= FEW and 1 - p <= NEAR:
        high = max(high, float(betaincinv(x + 1, n - x, 1 - tail)) if n - x > 0 else 1.0)
    if n_eff * p <= FEW and p <= NEAR:
        low = min(low, float(betaincinv(x, n - x + 1, tail)) if x > 0 else 0.0)
    return max(0.0, low), min(1.0, high)


__all__ = [
    "CLUSTER_ORDER",
    "ClusteredMonitor",
    "MIN_CLUSTERS_PER_LOOK",
    "cluster_codes",
    "cluster_key",
    "cluster_look_order",
    "cluster_schedule",
    "clustered_batches",
    "clustered_method",
    "ADJUSTED_METHOD",
    "ALPHA",
    "FUTILITY_CP",
    "FUTILITY_METHOD",
    "ORDERED_METHOD",
    "FUTILITY_MIN_ATTEMPTS",
    "conditional_power",
    "design_units",
    "futility_regions",
    "ordered_inference",
    "stagewise_inference",
    "BATCH_METHOD",
    "METHOD",
    "OLD_METHOD",
    "SPEND_SHARE",
    "boundaries_of",
    "candidate_spend",
    "design_spending",
    "first_round_batches",
    "power_spending",
    "look_boundaries",
    "look_order",
    "look_schedule",
    "MAX_BATCHES",
    "MIN_BATCH",
    "ORDER",
    "SequentialLook",
    "SequentialMonitor",
    "hsd_spending",
    "obf_spending",
    "spending_at",
    "round_boundaries",
    "sequential_look",
    "spending_boundaries",
    "variance_components",
]
