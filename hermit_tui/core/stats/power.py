"""The power of the pair interval, simulated: the minimum detectable difference, the tasks and the repeats needed.

A closed form (the interval's half-width plus ``t(0.80) x se``) takes the standard error and the interval's shape
from the sample at hand. For pass/fail scores both change at the alternative: the variance of a pass/fail mean moves
with the mean (a candidate that solves every task has none; one at 0.97 has some), and the pair's recombined score
interval widens as the two means part. Checked against its own claim (``benchmarks/bench_stats.py``,
``stats.grid.mde_power_gap``), the closed form's MDE had a median power of 0.57 at 8 tasks and down to 0.20 next to
an end, where it claims 0.80.

So for pass/fail scores without clusters the power is the pair interval's own (``core.stats.intervals.pair_bounds``)
on data simulated under a model of the tasks fitted to the sample (:class:`PowerModel`):

* the baseline ``a``'s task success ``p ~ Beta`` by moments: its mean is a's mean; its variance between tasks is
  ``(var(task means) - m (1 - m) mean(1/k)) / (1 - mean(1/k))`` (the task means' variance less the binomial part of
  the repeats), or with one repeat per task the covariance of a's and b's task means (what the pairing shares);
* a true difference ``delta`` moves each task in proportion to its room: ``p + delta (1 - p) / (1 - m)`` up,
  ``p (1 - |delta| / m)`` down, so the mean difference is ``delta`` and no rate leaves [0, 1] (the model of the
  benchmarks' grid); effects that vary by task beyond that are not modelled;
* :data:`SIMULATIONS` data sets of the sample's tasks and repeats, from a fixed seed, with common random numbers
  across differences (b's attempts are uniforms under its rates), so the power is a smooth curve in ``delta`` and
  the minimum detectable difference a bisection on it; the same data give the same figures.

Beyond :data:`MAX_SIMULATED` tasks the simulation runs on that many and the difference scales by ``1 / sqrt(tasks)``
(the power of a large sample depends on ``delta sqrt(n)``).

Clustered (``--cluster-by``): the model adds a shift shared by each cluster's tasks, normal with the variance the
clustered standard error shows beyond the tasks' own (:func:`shared_shift_var`), keeps the sample's clusters and
their sizes, and the power is the clustered interval's (CR2, Bell-McCaffrey df); every task is simulated (no
scaling: the power of clustered data depends on the clusters, not on ``sqrt(tasks)``). Scores that are not
pass/fail keep the closed form (``core.stats.figures.MDE_METHOD``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np
from pydantic import BaseModel, PrivateAttr

from hermit_tui.core.stats.intervals import attempts_cap, pair_bounds

POWER = 0.8  # the power every power figure is for (the MDE, tasks and repeats needed)
SIMULATIONS = 400  # data sets per power figure (Monte-Carlo error of a power near 0.8: +/-0.02)
MAX_SIMULATED = 1000  # tasks simulated at most; beyond, the difference scales by 1 / sqrt(tasks)
MAX_UNIFORMS = 4_000_000  # b's attempts drawn as uniforms at most (memory); fewer data sets beyond
STEPS = 11  # bisection steps on the difference: the room / 2048
MAX_REPEATS = 1024  # repeats_needed looks no further
SEED = 20261207

P = ParamSpec("P")
R = TypeVar("R")

SIMULATED_MDE_METHOD = (
    f"the pair interval's own power, simulated ({SIMULATIONS} data sets of these tasks and repeats) under a model "
    "fitted to the sample: the baseline's task success ~ Beta by moments, the difference moving each task in "
    "proportion to its room; not shown when the tasks show no spread"
)
SIMULATED_CLUSTERED = (
    "clustered: plus a shift shared by each cluster's tasks, normal with the variance the CR2 standard error shows "
    "beyond the tasks' own, on the sample's clusters, and the clustered interval's power"
)


def _releasing(method: Callable[Concatenate[PowerModel, P], R]) -> Callable[Concatenate[PowerModel, P], R]:
    """Let a public figure's simulated data sets go when it returns."""

    @functools.wraps(method)
    def wrapper(model: PowerModel, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(model, *args, **kwargs)
        finally:
            model._draws.clear()

    return wrapper


class PowerModel(BaseModel):
    """The model behind the simulated power figures of a pass/fail pair (module docstring). Differences are on the
    scores' scale (``width``: the range of a score); the model runs on the unit scale."""

    mean_a: float  # the baseline's mean, unit scale
    between: float  # the variance of its task success between tasks
    repeats: list[tuple[int, int, int]]  # (a's repeats, b's repeats, tasks): the sample's design
    side: int  # +1: the observed difference is a gain (or a tie with more room up); -1: a loss
    width: float = 1.0
    cluster_sizes: list[int] | None = None  # clustered: the sample's clusters' sizes (tasks simulated in blocks)
    shared_var: float = 0.0  # clustered: the variance of the shift a cluster's tasks share (unit scale)

    _draws: dict[tuple[int, int | None], Any] = PrivateAttr(default_factory=dict)

    @property
    def n_tasks(self) -> int:
        return sum(count for _, _, count in self.repeats)

    def room(self, side: int | None = None) -> float:
        """The largest difference the scores allow on ``side`` (default the model's), on the scores' scale."""
        side = self.side if side is None else side
        return (1 - self.mean_a if side > 0 else self.mean_a) * self.width

    # -- the simulation --------------------------------------------------------------------------------------------

    @property
    def codes(self) -> np.ndarray | None:
        """The simulated tasks' cluster codes (blocks of the sample's sizes), None unclustered."""
        if self.cluster_sizes is None:
            return None
        return np.repeat(np.arange(len(self.cluster_sizes)), self.cluster_sizes)

    @property
    def max_simulated(self) -> int:
        """Tasks simulated at most: clustered, all of them."""
        return self.n_tasks if self.cluster_sizes is not None else MAX_SIMULATED

    def _design(self, n: int, repeats: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Per-task repeats of ``n`` tasks: the sample's mix, spread evenly (or ``repeats`` on both sides)."""
        if repeats is not None:
            return np.full(n, repeats), np.full(n, repeats)
        ka = np.concatenate([np.full(c, a) for a, _, c in self.repeats])
        kb = np.concatenate([np.full(c, b) for _, b, c in self.repeats])
        pick = (np.arange(n) * len(ka)) // n
        return ka[pick], kb[pick]

    def _simulated(self, n: int, repeats: int | None) -> Any:
        """The simulated data sets of ``n`` tasks, kept for the calls of one figure (a bisection on the difference
        reuses them; each public method lets them go when it returns: they are up to 16 MB)."""
        key = (n, repeats)
        if key not in self._draws:
            self._draws.clear()
            rng = np.random.default_rng(SEED)
            ka, kb = self._design(n, repeats)
            sims = max(50, min(SIMULATIONS, MAX_UNIFORMS // max(1, n * int(kb.max()))))
            mu, var = self.mean_a, self.between
            if var > 0 and 0 < mu < 1:
                conc = mu * (1 - mu) / var - 1
                p = rng.beta(mu * conc, (1 - mu) * conc, size=(sims, n))
            else:
                p = np.full((sims, n), mu)
            a = rng.binomial(ka, p) / ka
            codes = self.codes if n == self.n_tasks else None
            shared = None
            if codes is not None and self.shared_var > 0:
                count = len(self.cluster_sizes or ())
                shared = rng.normal(0.0, math.sqrt(self.shared_var), size=(sims, count))[:, codes]
            if repeats is None:  # common random numbers across differences: b's attempts are uniforms
                kmax = int(kb.max())
                u = rng.random((sims, n, kmax), dtype=np.float32)
                u[:, np.arange(kmax)[None, :] >= kb[:, None]] = 2.0  # past a task's repeats: never a success
                b: Any = u
            else:  # repeats_needed asks at one difference: binomial draws, seeded afresh per difference
                b = None
            self._draws[key] = (p, a, b, ka, kb, attempts_cap(ka), attempts_cap(kb), codes, shared)
        return self._draws[key]

    def _power_unit(self, delta: float, n: int, repeats: int | None = None) -> float:
        """The power on the unit scale at ``delta`` (its sign: the side), ``n`` tasks simulated."""
        p, a, u, ka, kb, cap_a, cap_b, codes, shared = self._simulated(n, repeats)
        mu = self.mean_a
        if delta > 0:
            pb = p + delta * (1 - p) / (1 - mu) if mu < 1 else p
        else:
            pb = p * (1 + delta / mu) if mu > 0 else p
        pb = np.clip(pb if shared is None else pb + shared, 0.0, 1.0)
        if u is not None:
            b = (u < pb[:, :, None]).sum(-1) / kb
        else:
            b = np.random.default_rng(SEED + 1).binomial(kb, pb) / kb
        low, high, _ = pair_bounds(a, b, cap_a, cap_b, clusters=codes)
        return float(np.mean(low > 0) if delta > 0 else np.mean(high < 0))

    @_releasing
    def power(self, delta: float, n_tasks: int | None = None, repeats: int | None = None) -> float:
        """The chance the pair interval lands beyond 0 on ``delta``'s side if the true difference were ``delta``
        (scores' scale), with ``n_tasks`` paired tasks (default the sample's) at the sample's repeats, or
        ``repeats`` per task on both sides."""
        n = self.n_tasks if n_tasks is None else int(n_tasks)
        unit = delta / self.width
        if not unit or n < 2:
            return 0.0
        side = 1 if unit > 0 else -1
        unit, n = self._scaled(side, abs(unit), n)
        return self._power_unit(side * unit, n, repeats)

    def _scaled(self, side: int, unit: float, n: int) -> tuple[float, int]:
        """The difference (unit scale, at most the room) and the tasks to simulate for ``n`` tasks: beyond
        :attr:`max_simulated`, that many at the difference scaled by ``sqrt(n / max)`` (the power of a large sample
        depends on ``delta sqrt(n)``)."""
        room, top = self.room(side) / self.width, self.max_simulated
        return (min(unit * math.sqrt(n / top), room), top) if n > top else (min(unit, room), n)

    def _target(self, delta: float) -> tuple[int, float] | None:
        """``delta``'s side and size on the unit scale; None for 0 or beyond the room on its side."""
        side = 1 if delta > 0 else -1
        target = abs(delta) / self.width
        if not target or target > self.room(side) / self.width + 1e-12:
            return None
        return side, target

    @_releasing
    def mde(self, n_tasks: int | None = None) -> float | None:
        """The smallest difference on the model's side detected with 80% power (scores' scale), with ``n_tasks``
        (default the sample's); None when not even the whole room is."""
        n = self.n_tasks if n_tasks is None else int(n_tasks)
        if n < 2:
            return None
        top = self.max_simulated
        unit = self._mde_unit(self.side, min(n, top))
        if unit is None:
            return None
        return (unit * math.sqrt(top / n) if n > top else unit) * self.width

    @_releasing
    def tasks_needed(self, delta: float) -> int | None:
        """The fewest paired tasks (at the sample's repeats) whose power at ``delta`` is 80%; None when ``delta`` is
        beyond the room on its side."""
        found = self._target(delta)
        if found is None:
            return None
        side, target = found

        def enough(n: int) -> bool:
            return self._power_unit(side * target, n) >= POWER

        if not enough(MAX_SIMULATED):
            at_max = self._mde_unit(side, MAX_SIMULATED)
            if at_max is None:
                return None
            return max(MAX_SIMULATED + 1, math.ceil(MAX_SIMULATED * (at_max / target) ** 2))
        return _fewest(enough, 2, MAX_SIMULATED)

    def _mde_unit(self, side: int, n: int) -> float | None:
        room = self.room(side) / self.width
        if room <= 0 or self._power_unit(side * room, n) < POWER:
            return None
        lo, hi = 0.0, room
        for _ in range(STEPS):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if self._power_unit(side * mid, n) >= POWER else (mid, hi)
        return hi

    @_releasing
    def repeats_needed(self, delta: float) -> int | None:
        """The fewest repeats per task on both sides whose power at ``delta`` with the sample's tasks is 80%; None
        when no number up to :data:`MAX_REPEATS` is (the differences between tasks alone are too large)."""
        found = self._target(delta)
        if found is None or self.n_tasks < 2:
            return None
        side, target = found
        unit, sim_n = self._scaled(side, target, self.n_tasks)

        def enough(k: int) -> bool:
            return self._power_unit(side * unit, sim_n, k) >= POWER

        if not enough(MAX_REPEATS):
            return None
        return _fewest(enough, 1, MAX_REPEATS)


def _fewest(enough: Callable[[int], bool], start: int, cap: int) -> int:
    """The smallest integer from ``start`` up to ``cap`` for which ``enough`` holds (``enough(cap)`` does): doubling,
    then a bisection."""
    lo, hi = start, start
    while not enough(hi):
        lo, hi = hi + 1, min(hi * 2, cap)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid + 1, hi)
    return lo


def shared_shift_var(diffs: np.ndarray, codes: np.ndarray) -> float:
    """The variance of a shift shared by each cluster's tasks that the clustered variance of the mean difference shows
    beyond the tasks' own: with ``Var(mean) = sigma^2 / N + tau^2 sum(n_c^2) / N^2`` and the tasks' sample variance
    taking in both, ``tau^2 = (CR2 var - s^2 / N) / ((sum(n_c^2) - N) / N^2)``, at least 0 (0 when every task is its
    own cluster)."""
    from hermit_tui.core.stats.clusters import clustered_var

    n = len(diffs)
    sizes = np.bincount(np.unique(codes, return_inverse=True)[1])
    room = float(np.sum(sizes.astype(float) ** 2) - n) / n**2 if n else 0.0
    if n < 2 or room <= 0:
        return 0.0
    excess = float(clustered_var(diffs, codes)) - float(np.var(diffs, ddof=1)) / n
    return max(excess / room, 0.0)


def fit_power_model(
    ma: np.ndarray,
    mb: np.ndarray,
    ka: np.ndarray,
    kb: np.ndarray,
    width: float = 1.0,
    clusters: np.ndarray | None = None,
) -> PowerModel | None:
    """The model of a pass/fail pair from its task means on the unit scale (``ma``, ``mb``) and repeats (and the
    tasks' cluster codes when clustered); None with fewer than 2 tasks."""
    ma, mb = np.asarray(ma, dtype=float), np.asarray(mb, dtype=float)
    ka, kb = np.asarray(ka, dtype=int), np.asarray(kb, dtype=int)
    if len(ma) < 2:
        return None
    mu = float(np.clip(ma.mean(), 0.0, 1.0))
    inv_k = float(np.mean(1.0 / ka))
    if inv_k < 1:
        between = (float(ma.var(ddof=1)) - mu * (1 - mu) * inv_k) / (1 - inv_k)
    else:  # one repeat each: what the pairing shares
        between = float(np.cov(ma, mb)[0, 1])
    between = min(max(between, 0.0), mu * (1 - mu) * (1 - 1e-6))
    diff = float(mb.mean() - ma.mean())
    side = (1 if diff > 0 else -1) if abs(diff) > 1e-12 else (1 if mu <= 0.5 else -1)
    pairs: dict[tuple[int, int], int] = {}
    for x, y in zip(ka.tolist(), kb.tolist()):
        pairs[(x, y)] = pairs.get((x, y), 0) + 1
    sizes, shared = None, 0.0
    if clusters is not None:
        codes = np.unique(np.asarray(clusters), return_inverse=True)[1]
        sizes = np.bincount(codes).tolist()
        shared = shared_shift_var(mb - ma, codes)
    return PowerModel(
        mean_a=mu,
        between=between,
        repeats=[(x, y, c) for (x, y), c in sorted(pairs.items())],
        side=side,
        width=width,
        cluster_sizes=sizes,
        shared_var=shared,
    )


__all__ = [
    "SIMULATED_CLUSTERED",
    "shared_shift_var",
    "MAX_REPEATS",
    "MAX_SIMULATED",
    "POWER",
    "SIMULATED_MDE_METHOD",
    "SIMULATIONS",
    "PowerModel",
    "fit_power_model",
]
