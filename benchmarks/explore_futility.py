"""Futility rules for the sequential design at 50 tasks and an effect of 0.05 (issue 25, item 4): the trials behind
RESULTS.md's note "A futility rule from the design instead of a threshold". Not a benchmark of run_all.py. Its
figures are written in the note by hand.

- ``--model``: a normal model of the design's looks. It is Brownian motion at each look's information,
  ``n / (between + within / r)`` with the simulation's variance components. It shows the expected rounds, the power
  and the attempts over the fixed design of equal power (``Phi(theta sqrt(I) - 1.96)``, continuous in the rounds)
  for main's rule, CP thresholds by start, the beta-spending rule and other efficacy spending functions.
- ``--later``: the same normal model with looks within the later rounds (after batches of the tasks of round
  ``r >= 2`` in the sha256 order): main's design against 2, 4 and 8 looks per later round, for both stops, the
  futility rule or efficacy only, and against main's own futility thresholds. RESULTS.md's note "Looks within the
  later rounds".
- ``--later-launches``: real launches (pass/fail scores, ``sequential_launch``'s model) of main's design and of 2
  and 4 looks per later round through a prototype of the monitor's decisions (:class:`LaterLaunch`), the same
  scores for each variant.
- ``--launches``: real launches through ``bench_stats.sequential_launch``, decisions only: the adjusted estimate is
  stubbed out because it does not change a decision. It runs main's rule (conditional power under the current
  estimate below 0.02 from 50 attempts), the non-binding beta-spending rule at the design alternative, and CP 0.1
  from 100 attempts, all on the same seed.

``nice -n 10 python benchmarks/explore_futility.py --model --launches``: about 2 + 4 minutes on 2 shared CPUs;
``--later`` about 40 s, ``--later-launches`` about 4 minutes.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_stats as bs

from hermit_tui.core.stats.sequential import monitor, stopping
from hermit_tui.core.stats.sequential.look import SequentialLook
from hermit_tui.core.stats.sequential.monitor import SequentialMonitor
from hermit_tui.core.stats.sequential.repeated import _repeated_interval, applied_bounds
from hermit_tui.core.stats.sequential.schedule import design_units, first_round_batches, look_schedule
from hermit_tui.core.stats.sequential.spending import (
    candidate_spend,
    design_spending,
    hsd_spending,
    power_spending,
    spending_at,
    spending_boundaries,
)
from hermit_tui.core.stats.sequential.stopping import (
    FUTILITY_CP,
    FUTILITY_MIN_ATTEMPTS,
    conditional_power,
    futility_regions,
)

R = 8
Spend = Callable[[float, float], float]
Vec = Sequence[float] | np.ndarray


def components(effect: float, sims: int = 400_000) -> tuple[float, float]:
    """(between, within) per round of a task's paired difference in the launches' model: p ~ Beta(1, 1), the
    candidate's p + 2 effect (1 - p)."""
    rng = np.random.default_rng(1)
    p = rng.beta(1, 1, sims)
    q = p + 2 * effect * (1 - p)
    return float(np.var(q - p)), float(np.mean(p * (1 - p) + q * (1 - q)))


def first_look(units: Vec, tasks: int, start: int) -> int:
    return next(j for j, u in enumerate(units) if u * tasks >= start or j == len(units) - 1)


def beta_regions(units: Vec, cs: Vec, beta: float, spend: Spend, first: int) -> np.ndarray:
    """The futility regions ``|z| < f_j`` that spend ``beta`` by ``spend`` under the design alternative ``theta_1``,
    where ``theta_1 sqrt(I_K) = c_K + z_(1 - beta)``: the difference the full design detects with power 1 - beta. The
    regions are found on 10^6 normal paths (seed 5), from look ``first`` on, never at the last look."""
    u = np.asarray(units, dtype=float)
    k_looks, paths = len(u), 1_000_000
    drift = float(cs[-1]) + float(norm.ppf(1 - beta))
    info = u / u[-1]
    rng = np.random.default_rng(5)
    z = np.cumsum(rng.standard_normal((paths, k_looks)) * np.sqrt(np.diff(info, prepend=0.0)), axis=1) + drift * info
    z /= np.sqrt(info)
    alive, f, spent = np.ones(paths, bool), np.zeros(k_looks), 0.0
    for j in range(k_looks):
        cross = alive & (np.abs(z[:, j]) >= cs[j])
        if first <= j < k_looks - 1:
            going = alive & ~cross
            ranked = np.sort(np.abs(z[going, j]))
            m = int(round(max(0.0, spend(u[j] / u[-1], beta) - spent) * paths))
            f[j] = min(float(ranked[m - 1]) if 0 < m <= len(ranked) else (0.0 if m <= 0 else float(cs[j])), cs[j])
            spent += float(np.mean(going & (np.abs(z[:, j]) < f[j])))
        alive &= ~cross & ~(np.abs(z[:, j]) < f[j])
    return f


def design(tasks: int, spend: Spend | None = None) -> tuple[np.ndarray, np.ndarray, Spend]:
    """The looks' information in attempts, their critical values and the spending function (main's by default)."""
    batches = first_round_batches(tasks)
    units = np.array(design_units(tasks, R, batches))
    a = candidate_spend()
    kind = design_spending(batches)
    fn: Spend = spend or (lambda t, level: spending_at(t, level, kind))
    cs = np.array(spending_boundaries(tuple(units), tuple(units / R), a, spend=lambda t: fn(t, a)))
    return units, cs, fn


def model_cell(tasks: int, effect: float, regions: Callable[[np.ndarray, np.ndarray, Spend], np.ndarray],
               spend: Spend | None = None, paths: int = 200_000) -> dict[str, float]:  # fmt: skip
    """Expected rounds, power and attempts over the fixed design of equal power in the normal model."""
    units, cs, fn = design(tasks, spend)
    b, w = components(effect)
    info = np.array([n / (b + w / r) for r, n in look_schedule(tasks, R, first_round_batches(tasks))])
    f = regions(units, cs, fn)
    rng = np.random.default_rng(0)
    z = np.cumsum(rng.standard_normal((paths, len(info))) * np.sqrt(np.diff(info, prepend=0.0)), axis=1)
    z = (z + effect * info) / np.sqrt(info)
    alive, up, used = np.ones(paths, bool), np.zeros(paths, bool), np.full(paths, units[-1])
    for j in range(len(info)):
        cross = alive & (np.abs(z[:, j]) >= cs[j])
        up |= cross & (z[:, j] > 0)
        stop = cross | (alive & (np.abs(z[:, j]) < f[j]))
        used[stop] = units[j]
        alive &= ~stop
    power, rounds = float(up.mean()), float(used.mean())

    return dict(rounds=rounds, power=power, ratio=rounds / equal_power_rounds(effect, tasks, b, w, power, 1.0))


def fixed_power(effect: float, tasks: int, b: float, w: float, rounds: float) -> float:
    """The normal model's power of the fixed design of ``rounds`` (continuous) at two-sided 0.05."""
    return float(norm.cdf(effect * math.sqrt(tasks / (b + w / rounds)) - 1.96))


def equal_power_rounds(effect: float, tasks: int, b: float, w: float, power: float, lo: float) -> float:
    """The rounds (continuous, at least ``lo``) of the fixed design whose power is ``power``, by bisection."""
    hi = 60.0
    if fixed_power(effect, tasks, b, w, lo) < power:
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if fixed_power(effect, tasks, b, w, mid) < power else (lo, mid)
    return lo


def cp_rule(tasks: int, threshold: float, start: int) -> Callable[[np.ndarray, np.ndarray, Spend], np.ndarray]:
    def regions(units: np.ndarray, cs: np.ndarray, fn: Spend) -> np.ndarray:
        f = futility_regions(
            [float(u) for u in units], [float(c) for c in cs], threshold, first_look(units, tasks, start)
        )
        return np.asarray(f, dtype=float)

    return regions


def beta_rule(tasks: int, beta: float = 0.1) -> Callable[[np.ndarray, np.ndarray, Spend], np.ndarray]:
    def regions(units: np.ndarray, cs: np.ndarray, fn: Spend) -> np.ndarray:
        return beta_regions(units, cs, beta, fn, first_look(units, tasks, FUTILITY_MIN_ATTEMPTS))

    return regions


MODEL_CELLS = [(50, 0.05), (50, 0.1), (50, 0.2), (200, 0.2), (200, 0.1), (16, 0.2)]


Regions = Callable[[np.ndarray, np.ndarray, Spend], np.ndarray]


def kim_demets(rho: float) -> Spend:
    return lambda t, a: power_spending(t, a, rho)


def hsd(gamma: float) -> Spend:
    return lambda t, a: hsd_spending(t, a, gamma)


def model(quick: bool) -> None:
    def show(name: str, rule: Callable[[int], Regions], spend: Spend | None = None) -> None:
        got = [model_cell(g, e, rule(g), spend, paths=20_000 if quick else 200_000) for g, e in MODEL_CELLS]
        cells = " | ".join(f"{r['rounds']:.2f} r, p {r['power']:.3f}, {r['ratio']:.0%}" for r in got)
        print(f"| {name} | {cells} |", flush=True)

    print("| rule (normal model) | " + " | ".join(f"{g} tasks, {e:g}" for g, e in MODEL_CELLS) + " |")
    print("|---" * (len(MODEL_CELLS) + 1) + "|")
    show("no futility", partial(cp_rule, threshold=1e-12, start=10**9))
    for threshold in (0.01, 0.02, 0.05, 0.1, 0.2):
        for start in (25, 50, 100, 150) if not quick else (50,):
            show(f"CP < {threshold:g} from {start} attempts", partial(cp_rule, threshold=threshold, start=start))
    show("beta-spending, beta 0.1, at theta_1", beta_rule)
    for rho in (1.0, 2.0):
        show(f"CP < 0.02, Kim-DeMets rho {rho:g}", partial(cp_rule, threshold=0.02, start=50), kim_demets(rho))
    show("CP < 0.02, HSD gamma -2", partial(cp_rule, threshold=0.02, start=50), hsd(-2.0))


def _no_adjusted(*args: Any, **kwargs: Any) -> tuple[float, float, float, float]:
    return 0.0, 0.0, 0.0, 1.0  # decisions only: the adjusted estimate does not change one


def beta_at_stopping(beta: float) -> Callable[..., SequentialLook]:
    cache: dict[int, np.ndarray] = {}

    def at_stopping(self: SequentialMonitor, look: SequentialLook, diffs: np.ndarray, total_looks: int):
        g = diffs.shape[0]
        total = self.total_tasks or g
        if total not in cache:
            units, cs, fn = design(total)
            cache[total] = beta_regions(units, cs, beta, fn, first_look(units, total, stopping.FUTILITY_MIN_ATTEMPTS))
        k = (look.look or 1) - 1
        seen = design_units(total, self.max_rounds, self.batches)[k] * total
        z = look.z
        if (
            look.decision == "undecided"
            and k < total_looks - 1
            and seen >= stopping.FUTILITY_MIN_ATTEMPTS
            and z is not None
            and math.isfinite(z)
            and abs(z) < cache[total][k]
        ):
            return look.model_copy(update=dict(decision="futile", decided_at=look.rounds, decided_tasks=g))
        return look

    return at_stopping


def launches(quick: bool) -> None:
    cells = [(50, 0.05, 4000), (50, 0.2, 1000), (200, 0.2, 500), (200, 0.1, 500), (16, 0.2, 500), (50, 0.0, 2000)]
    if quick:
        cells = [(50, 0.05, 40), (50, 0.0, 40)]
    rules: list[tuple[str, float, int, float | None]] = [
        ("main's rule: CP < 0.02 from 50 attempts", 0.02, 50, None),
        ("beta-spending, beta 0.1, at theta_1", 0.02, 50, 0.1),
        ("CP < 0.1 from 100 attempts", 0.1, 100, None),
    ]
    print("\n| rule | tasks | effect | launches | improvement | futile | rounds (se) | fixed, equal power | vs fixed |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, threshold, start, beta in rules:
        patches: list[Any] = [
            mock.patch.object(monitor, "FUTILITY_MIN_ATTEMPTS", start),  # what SequentialMonitor reads
            mock.patch.object(stopping, "FUTILITY_MIN_ATTEMPTS", start),  # what beta_at_stopping reads
            mock.patch.object(monitor, "ordered_inference", _no_adjusted),
            mock.patch.object(monitor, "stagewise_inference", _no_adjusted),
        ]
        if beta is not None:
            patches.append(mock.patch.object(SequentialMonitor, "_at_stopping", beta_at_stopping(beta)))
        for p in patches:
            p.start()
        try:
            rng, frng = np.random.default_rng(11), np.random.default_rng(12)
            for g, effect, n in cells:
                out = [bs.sequential_launch(rng, g, R, [effect], futility=threshold) for _ in range(n)]
                looks = [lk[0] for lk, _ in out]
                rounds = np.array([u for _, u in out])
                imp = float(np.mean([lk.decision == "improvement" for lk in looks]))
                claims = float(np.mean([lk.decision in ("improvement", "regression") for lk in looks]))
                futile = float(np.mean([lk.decision == "futile" for lk in looks]))
                fixed, versus = "—", f"false claims {claims:.4f}"
                if effect > 0:
                    curve = bs.fixed_power_curve(frng, g, effect, 2000 if quick else 20_000, R)
                    f0 = bs.equal_power_fixed(curve, imp)
                    lo, hi = bs.wilson(imp, n)
                    f_lo, f_hi = bs.equal_power_fixed(curve, lo), bs.equal_power_fixed(curve, hi)
                    fixed = f"{f0:.2f}" if f0 else "> R"
                    band = (rounds.mean() / f_hi if f_hi else None, rounds.mean() / f_lo if f_lo else None)
                    versus = f"{rounds.mean() / f0:.0%} ({bs.band_text(band)})" if f0 else "—"
                se = rounds.std(ddof=1) / math.sqrt(n)
                print(f"| {name} | {g} | {effect:g} | {n} | {imp:.4f} | {futile:.3f} | {rounds.mean():.2f} ({se:.2f})"
                      f" | {fixed} | {versus} |", flush=True)  # fmt: skip
        finally:
            for p in reversed(patches):
                p.stop()


def later_schedule(tasks: int, later: int) -> list[tuple[int, int]]:
    """(round, tasks) of each look when round 1 is looked at as in main and each round ``r >= 2`` after ``later``
    batches of its tasks in the same order (``later = 1``: main's design, whole rounds only)."""
    first = [lk for lk in look_schedule(tasks, R, first_round_batches(tasks)) if lk[0] == 1]
    rest = [(r, max(1, round(tasks * k / later))) for r in range(2, R + 1) for k in range(1, later + 1)]
    return first + rest


def later_info(tasks: int, r: int, n: int, between: float, within: float) -> float:
    """The information of the task-mean estimate at a look after ``n`` tasks of round ``r``: round 1 holds ``n``
    tasks of one attempt; from round 2 on, all ``tasks`` have ``r - 1`` rounds and the first ``n`` one more, so
    ``I = G^2 / (n (b + w / r) + (G - n) (b + w / (r - 1)))``. Its looks have independent increments (the
    covariance of an earlier look's estimate with a later one's is the later one's variance)."""
    if r == 1:
        return n / (between + within)
    return tasks**2 / (n * (between + within / r) + (tasks - n) * (between + within / (r - 1)))


def later_cell(
    tasks: int,
    effect: float,
    later: int,
    count: str = "harmonic",
    paths: int = 200_000,
    seed: int = 0,
    use: str = "both",
    threshold: float = FUTILITY_CP,
    start: int = FUTILITY_MIN_ATTEMPTS,
) -> dict[str, float]:
    """Main's design (Kim-DeMets rho 0.6 over the spending time ``u / R``, CP < 0.02 from 50 attempts per selector,
    non-binding) with the later rounds looked at ``later`` times each, in the normal model. ``count``: how the
    design counts a look's information in rounds (``between = 0``): ``harmonic`` (exact: the harmonic mean of the
    tasks' repeats) or ``attempts`` (``r - 1 + n / G``). ``use``: what the looks within the later rounds may stop
    for: ``both``, ``futility`` only (they spend no error: infinite boundaries) or ``efficacy`` only. ``threshold``,
    ``start``: the futility rule's conditional power and first attempts per selector. Returns the expected rounds,
    the power, the false claims (the same design at effect 0: no spread between tasks) and the attempts over the
    fixed design of equal power (continuous in the rounds; against one round where the sequential power is above
    the one-round design's and that design's is 0.997 or more: RESULTS.md's goal figure at 200 tasks and 0.2)."""
    looks = later_schedule(tasks, later)
    attempts = np.array([n / tasks if r == 1 else r - 1 + n / tasks for r, n in looks])
    if count == "harmonic":
        units = np.array([n / tasks if r == 1 else tasks / (n / r + (tasks - n) / (r - 1)) for r, n in looks])
    else:
        units = attempts.copy()
    a = candidate_spend()
    partial_look = np.array([r > 1 and n < tasks for r, n in looks])
    times = units / R
    if use == "futility":  # a partial look's spending time is the last whole round's: it spends nothing
        times = np.array([float(r - 1) / R if p else t for (r, _), p, t in zip(looks, partial_look, times)])
    cs = np.array(spending_boundaries(tuple(units), tuple(times), a, spend=lambda t: power_spending(t, a)))
    first = next(j for j, u in enumerate(attempts) if u * tasks >= start)
    f = np.asarray(futility_regions([float(u) for u in units], [float(c) for c in cs], threshold, first))
    if use == "efficacy":
        f[partial_look] = 0.0
    out: dict[str, float] = {}
    for label, theta in (("null", 0.0), ("alt", effect)):
        b, w = components(theta)
        info = np.array([later_info(tasks, r, n, b, w) for r, n in looks])
        rng = np.random.default_rng(seed)
        z = np.cumsum(rng.standard_normal((paths, len(info))) * np.sqrt(np.diff(info, prepend=0.0)), axis=1)
        z = (z + theta * info) / np.sqrt(info)
        alive, up, down = np.ones(paths, bool), np.zeros(paths, bool), np.zeros(paths, bool)
        used = np.full(paths, attempts[-1])
        for j in range(len(info)):
            cross = alive & (np.abs(z[:, j]) >= cs[j])
            up |= cross & (z[:, j] > 0)
            down |= cross & (z[:, j] < 0)
            stop = cross | (alive & (np.abs(z[:, j]) < f[j]))
            used[stop] = attempts[j]
            alive &= ~stop
        if label == "null":
            out["false"] = float((up | down).mean())
            out["null_rounds"] = float(used.mean())
            continue
        power, rounds = float(up.mean()), float(used.mean())

        lo = equal_power_rounds(effect, tasks, b, w, power, 0.05)
        # where the sequential power is above the one-round fixed design's 0.997 (200 tasks, 0.2), the goal is
        # measured against that one round, as RESULTS.md's goal figure is
        lo = min(lo, 1.0) if fixed_power(effect, tasks, b, w, 1.0) >= min(power, 0.997) else lo
        se = float(used.std() / math.sqrt(paths))
        out.update(rounds=rounds, power=power, fixed=lo, ratio=rounds / lo, se=se / lo, looks=len(looks))
    return out


LATER_CELLS = [(50, 0.05), (50, 0.1), (50, 0.2), (200, 0.1), (200, 0.2)]


def later(quick: bool) -> None:
    """The screen of looks within the later rounds (RESULTS.md's note "Looks within the later rounds")."""
    paths = 20_000 if quick else 200_000
    cols = " | ".join(f"{g} tasks, {e:g}" for g, e in LATER_CELLS)
    print(f"| looks per later round | count | {cols} | false claims at 50 / 200 tasks |")
    print("|---" * (len(LATER_CELLS) + 3) + "|")
    options = [(1, "harmonic", "both"), (2, "harmonic", "both"), (2, "attempts", "both")]
    options += [(k, "harmonic", use) for k in (4, 8) for use in ("both", "futility", "efficacy")]
    options += [(2, "harmonic", "futility"), (2, "harmonic", "efficacy")]
    rules = [(k, count, use, FUTILITY_CP, FUTILITY_MIN_ATTEMPTS) for k, count, use in options]
    # the frontier main's design reaches by its futility threshold alone (RESULTS.md: CP 0.1 from 100 attempts)
    rules += [(1, "harmonic", "both", cp, st) for cp, st in ((0.05, 50), (0.1, 100), (0.1, 50))]
    rules += [(k, "harmonic", "both", 0.02, 100) for k in (2, 4, 8)]
    for n_later, count, use, threshold, start in rules[:2] if quick else rules:
        got = [
            later_cell(g, e, n_later, count, paths, use=use, threshold=threshold, start=start) for g, e in LATER_CELLS
        ]
        cells = " | ".join(f"{r['rounds']:.2f} r, p {r['power']:.3f}, {r['ratio']:.1%} (se {r['se']:.1%})" for r in got)
        false = f"{got[0]['false']:.4f} / {got[3]['false']:.4f}"
        name = f"{n_later} ({got[0]['looks']:.0f} / {got[3]['looks']:.0f} looks)" + (
            "" if use == "both" else f", {use} only"
        )
        if (threshold, start) != (FUTILITY_CP, FUTILITY_MIN_ATTEMPTS):
            name += f", CP < {threshold:g} from {start} attempts"
        print(f"| {name} | {count} | {cells} | {false} |",
              flush=True)  # fmt: skip


class LaterLaunch:
    """A prototype of one candidate's launch with ``later`` looks per round r >= 2, the way
    ``SequentialMonitor`` decides (decisions only): each look's repeated interval (``_repeated_interval`` on
    the task means at the look's nominal level), the running intersection, and the futility rule (conditional power
    under the current estimate below 0.02 from 50 attempts per selector, with the critical values the intervals
    apply, ``applied_bounds``). At a look within round r >= 2 the task means mix r - 1 and r repeats and every
    task counts. The design is main's with the harmonic-rounds information of :func:`later_cell`. ``later = 1``
    is main's design (the check that the prototype reproduces ``sequential_launch``)."""

    def __init__(self, tasks: int, later: int):
        self.tasks, self.looks = tasks, later_schedule(tasks, later)
        g = tasks
        self.attempts = [n / g if r == 1 else r - 1 + n / g for r, n in self.looks]
        self.units = [n / g if r == 1 else g / (n / r + (g - n) / (r - 1)) for r, n in self.looks]
        a = candidate_spend()
        times = tuple(u / R for u in self.units)
        self.cs = spending_boundaries(tuple(self.units), times, a, spend=lambda t: power_spending(t, a))
        self.schedule = [(r, n if r == 1 else g) for r, n in self.looks]  # the tasks in each look's estimate
        self.first = next(j for j, u in enumerate(self.attempts) if u * g >= FUTILITY_MIN_ATTEMPTS)
        self._bounds: dict[tuple[int, float], list[float]] = {}

    def applied(self, k: int, se: float) -> list[float]:
        key = (k, round(se, 4))  # the applied critical values depend on the standard error only (cached)
        if key not in self._bounds:
            design = [u / self.units[k] / se**2 for u in self.units]
            self._bounds[key] = applied_bounds(self.cs, self.schedule, design, 1.0, start=k + 1)
        return self._bounds[key]

    def run(self, a: np.ndarray, b: np.ndarray) -> tuple[str, float]:
        """(decision, attempts per selector and task) of a launch on the scores ``a``, ``b`` (tasks x R)."""
        from scipy.special import ndtr

        g, low, high = self.tasks, -1.0, 1.0
        for k, (r, n) in enumerate(self.looks):
            if r == 1:
                d = b[:n, 0] - a[:n, 0]
            else:
                reps = np.where(np.arange(g) < n, r, r - 1)
                cum = np.cumsum(b - a, axis=1)
                d = cum[np.arange(g), reps - 1] / reps
            m, sd, c = float(d.mean()), float(d.std(ddof=1)), self.cs[k]
            level = 1.0 - 2 * (1 - float(ndtr(c))) if math.isfinite(c) else 1.0
            got = _repeated_interval(m, sd, len(d), -1.0, 1.0, level=level) if level < 1.0 else None
            lo_k, hi_k = (got.low, got.high) if got else (-1.0, 1.0)
            lo_i, hi_i = max(low, lo_k), min(high, hi_k)
            low, high = (lo_k, hi_k) if lo_i > hi_i else (lo_i, hi_i)
            if low > 0 or high < 0:
                return ("improvement" if low > 0 else "regression"), self.attempts[k]
            last = k == len(self.looks) - 1
            if last:
                return "undecided", self.attempts[k]
            if k >= self.first and sd > 0:
                se = sd / math.sqrt(len(d))
                design = [u / self.units[k] / se**2 for u in self.units]
                if conditional_power(design, self.applied(k, se), k, m / se) < FUTILITY_CP:
                    return "futile", self.attempts[k]
        return "undecided", self.attempts[-1]


def later_launches(quick: bool) -> None:
    """Real launches (pass/fail scores, the launches' model of ``bench_stats.sequential_launch``) of main's design
    and of 2 and 4 looks per later round, through :class:`LaterLaunch`, the same scores for every variant."""
    cells = [(50, 0.05, 4000), (50, 0.2, 1000), (200, 0.1, 400), (200, 0.2, 300), (50, 0.0, 2000)]
    if quick:
        cells = [(50, 0.05, 40), (50, 0.0, 40)]
    variants = (1, 2, 4)
    print("\n| tasks | effect | launches | looks per later round | improvement | futile | rounds (se) | vs fixed |")
    print("|---|---|---|---|---|---|---|---|")
    frng = np.random.default_rng(12)
    for g, effect, n in cells:
        rng = np.random.default_rng(11)
        data = []
        for _ in range(n):
            p = rng.beta(1.0, 1.0, size=g)
            pb = p + 2 * effect * (1 - p)
            data.append(((rng.random((g, R)) < p[:, None]) * 1.0, (rng.random((g, R)) < pb[:, None]) * 1.0))
        curve = bs.fixed_power_curve(frng, g, effect, 2000 if quick else 20_000, R) if effect > 0 else None
        for later_n in variants:
            launch = LaterLaunch(g, later_n)
            out = [launch.run(a, b) for a, b in data]
            rounds = np.array([u for _, u in out])
            imp = float(np.mean([d == "improvement" for d, _ in out]))
            claims = float(np.mean([d in ("improvement", "regression") for d, _ in out]))
            futile = float(np.mean([d == "futile" for d, _ in out]))
            versus = f"false claims {claims:.4f}"
            if curve is not None:
                f0 = bs.equal_power_fixed(curve, imp)
                lo, hi = bs.wilson(imp, n)
                f_lo, f_hi = bs.equal_power_fixed(curve, lo), bs.equal_power_fixed(curve, hi)
                band = (rounds.mean() / f_hi if f_hi else None, rounds.mean() / f_lo if f_lo else None)
                versus = f"{rounds.mean() / f0:.0%} ({bs.band_text(band)})" if f0 else "—"
            se = rounds.std(ddof=1) / math.sqrt(n)
            print(f"| {g} | {effect:g} | {n} | {later_n} | {imp:.4f} | {futile:.3f} | {rounds.mean():.2f} ({se:.2f})"
                  f" | {versus} |", flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", action="store_true", help="the normal model's screen of rules")
    parser.add_argument("--launches", action="store_true", help="real launches of three rules")
    parser.add_argument("--later", action="store_true", help="the normal model of looks within the later rounds")
    parser.add_argument("--later-launches", action="store_true", help="prototype launches with later-round looks")
    parser.add_argument("--quick", action="store_true", help="tiny runs: a smoke test")
    args = parser.parse_args(argv)
    if not (args.model or args.launches or args.later or args.later_launches):
        parser.error("say --model, --launches, --later or several")
    if args.model:
        model(args.quick)
    if args.launches:
        launches(args.quick)
    if args.later:
        later(args.quick)
    if args.later_launches:
        later_launches(args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
