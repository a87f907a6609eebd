"""The group-sequential design's error spending: how much of a candidate's alpha each look may spend, and the
critical values that spend it, by recursive numerical integration.

After each round, each candidate's difference from the baseline, ``d = mean over tasks of (candidate's task mean -
baseline's task mean)`` (the estimand of ``core.stats.selector``), gets a **repeated confidence interval** (Jennison &
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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np

ALPHA = 0.05
SPEND_SHARE = 0.9  # of a candidate's alpha, the share its boundaries spend (the rest: the approximations' allowance)
HSD_GAMMA = -2.0


Spending = Literal["hsd", "obf", "power"]
POWER_RHO = 0.6  # Kim & DeMets' power family, for designs that look within the first round


def candidate_spend(alpha: float = ALPHA, candidates: int = 1) -> float:
    """The error one candidate's boundaries spend when ``candidates`` are compared with one baseline in a launch:
    Bonferroni's share ``alpha / candidates`` (the chance of any false claim over the candidates stays at most
    ``alpha``), of which :data:`SPEND_SHARE` is spent, the rest allowed for what the boundaries' normal theory leaves
    out (the t approximation, pass/fail scores, the score interval's shape): measured by simulation, the design
    spending the whole share sat at 4.9-5.0% rather than under 5%."""
    return SPEND_SHARE * alpha / max(1, candidates)


GRID = 161  # points of the numerical integration at each round


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


def simpson(lo: float, hi: float, m: int = GRID) -> tuple[np.ndarray, np.ndarray]:
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
            grid, weights = simpson(-lo_hi, lo_hi)
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
            new_grid, new_weights = simpson(-lo_hi, lo_hi)
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


__all__ = [
    "ALPHA",
    "SPEND_SHARE",
    "candidate_spend",
    "design_spending",
    "power_spending",
    "hsd_spending",
    "obf_spending",
    "spending_at",
    "spending_boundaries",
]
