"""The noise budget of a paired comparison: where the variance of a task's difference comes from, and what it would
take (in tasks or repeats, in attempts and in dollars) to detect a difference of a given size.

The variance of one task's difference ``b - a`` splits into a part *between tasks* (tasks differ in how much the
adapter changes them) and a *run-to-run* part (the repeats of one task disagree), the latter shrinking with more
repeats: ``Var(task diff) = between + within / k`` (:class:`~hermit_tui.core.stats.figures.PairStats` holds both,
estimated from the repeats). More tasks shrink both parts; more repeats shrink only the second, so when the between
part alone is too large no number of repeats suffices.

The two levers come from the pair's own power figures (``PairStats.tasks_needed`` and ``repeats_needed``: the same
interval and critical values as its minimum detectable difference), so the advice and the interval agree. What each
costs is the attempts it adds times the known cost per attempt of the two selectors; when no attempt reported a cost
the cost stays unknown (never $0).

A judge is run once per attempt, so its own noise is not separable here: it is part of the run-to-run variance.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel

from hermit_tui.core.errors import InputError
from hermit_tui.core.present import cost_text
from hermit_tui.core.stats.figures import ALPHA, PairStats
from hermit_tui.core.stats.power import MAX_REPEATS, POWER

DEFAULT_DELTA = 0.05  # the difference a budget is computed for when the user names none
JUDGE_NOTE = "the judge's own noise is not separable (it ran once per attempt): it is inside the run-to-run part"
FIXED_SPLIT_NOTE = "more tasks means a larger test split: a new protocol, with every selector evaluated again on it"


def check_delta(delta: object, option: str = "--noise-at") -> float:
    """``delta`` as the difference a budget is computed for (a finite number above 0), or an InputError naming
    ``option``."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not math.isfinite(delta) or delta <= 0:
        raise InputError(f"{option} must be a difference above 0, got {delta!r}")
    return float(delta)


class CostRate(BaseModel):
    """What the selectors' attempts cost so far: the known sum over the attempts that reported a cost."""

    known_usd: float = 0.0
    known_attempts: int = 0
    unknown_attempts: int = 0

    @property
    def per_attempt(self) -> float | None:
        return self.known_usd / self.known_attempts if self.known_attempts else None

    def __add__(self, other: CostRate) -> CostRate:
        return CostRate(
            known_usd=self.known_usd + other.known_usd,
            known_attempts=self.known_attempts + other.known_attempts,
            unknown_attempts=self.unknown_attempts + other.unknown_attempts,
        )


class Lever(BaseModel):
    """One way to reach the target: more paired tasks (at the current repeats) or more repeats (on these tasks)."""

    lever: Literal["tasks", "repeats"]
    needed: int | None  # paired tasks in all, or repeats per task; None: cannot be projected or cannot suffice
    enough_already: bool = False  # the current figure already reaches the target
    attempts_added: int | None = None  # over both selectors
    cost_added_usd: float | None = None  # None: unknown (no attempt reported a cost) or nothing to add
    why_not: str | None = None  # when ``needed`` is None: why
    cannot_suffice: bool = False  # ``needed`` is None because no number suffices (known), not because it is unknown
    power_at_most: float | None = None  # repeats that cannot suffice, simulated: the power with MAX_REPEATS repeats


class NoiseBudget(BaseModel):
    a: str
    b: str
    delta: float  # the difference to detect (its size; either direction)
    alpha: float = ALPHA
    power: float = POWER
    n_paired: int
    repeats_a: int
    repeats_b: int
    total_var: float | None  # Var(task diff): the paired differences' variance
    between_var: float | None
    noise_var: float | None  # the run-to-run part at the current repeats
    within_var: float | None  # the run-to-run variance of one attempt (both selectors together)
    between_share: float | None  # between_var / total_var
    judge: str = JUDGE_NOTE
    cost_per_attempt_usd: float | None
    cost_unknown_attempts: int
    tasks: Lever
    repeats: Lever
    advice: str  # in words, with the caveats


def noise_budget(
    pair: PairStats, repeats_a: int, repeats_b: int, cost: CostRate, delta: float = DEFAULT_DELTA
) -> NoiseBudget:
    """The budget of ``pair`` for detecting a difference of ``delta`` (two-sided α 0.05, power 0.8).

    ``repeats_a``/``repeats_b``: each selector's repeats per task (the attempts a new task costs); ``cost``: the two
    selectors' costs so far, for the dollars of each lever."""
    if not (isinstance(delta, (int, float)) and math.isfinite(delta) and delta > 0):
        raise ValueError(f"delta must be a finite number above 0, got {delta!r}")
    ra, rb = max(1, int(repeats_a)), max(1, int(repeats_b))
    rate = cost.per_attempt
    total = pair.sd_diff**2 if pair.sd_diff is not None else None
    share = pair.between_var / total if pair.between_var is not None and total else None

    def priced(added: int) -> float | None:
        return added * rate if rate is not None else None

    clustered = (
        f"clustered by {pair.cluster_by}: the need is in clusters, whose sizes a projection would have to guess"
        if pair.n_clusters is not None
        else None
    )
    model = pair.power_model
    beyond = (
        f"a difference of {delta:g} is more than the scores allow on that side of {pair.a}'s mean "
        f"(at most {model.room():.3g})"
        if model is not None and delta > model.room() + 1e-12
        else None
    )
    need_t = pair.tasks_needed(delta)
    if need_t is None:
        why = (
            clustered
            or beyond
            or ("no spread to project from" if pair.sd_diff == 0 else "needs at least 2 paired tasks")
        )
        tasks = Lever(lever="tasks", needed=None, why_not=why)
    else:
        added = max(need_t - pair.n_paired, 0) * (ra + rb)
        tasks = Lever(
            lever="tasks",
            needed=need_t,
            enough_already=need_t <= pair.n_paired,
            attempts_added=added,
            cost_added_usd=priced(added),
        )
    need_r = pair.repeats_needed(delta)
    if need_r is not None:
        added = pair.n_paired * (max(need_r - ra, 0) + max(need_r - rb, 0))
        repeats = Lever(
            lever="repeats",
            needed=need_r,
            enough_already=need_r <= min(ra, rb),
            attempts_added=added,
            cost_added_usd=priced(added),
        )
    elif clustered is not None or beyond is not None:
        repeats = Lever(lever="repeats", needed=None, why_not=clustered or beyond)
    elif pair.within_var is None or pair.between_var is None or pair.sd_diff in (None, 0):
        repeats = Lever(
            lever="repeats",
            needed=None,
            why_not=(
                "no spread to project from"
                if pair.sd_diff == 0
                else "the run-to-run variance needs 2+ repeats per task"
            ),
        )
    elif model is not None:  # simulated: even MAX_REPEATS repeats fall short, by how much is known
        at_most = model.power(model.side * abs(delta), repeats=MAX_REPEATS)
        repeats = Lever(
            lever="repeats",
            needed=None,
            why_not=(
                f"even {MAX_REPEATS:,} repeats per task give {at_most:.0%} power on {pair.n_paired} tasks: the "
                "interval's width there comes from how few tasks there are, not from the run-to-run noise"
            ),
            cannot_suffice=True,
            power_at_most=at_most,
        )
    else:
        repeats = Lever(
            lever="repeats",
            needed=None,
            why_not=f"the between-task variance alone is too large for {pair.n_paired} tasks, whatever the repeats",
            cannot_suffice=True,
        )
    budget = NoiseBudget(
        a=pair.a,
        b=pair.b,
        delta=float(delta),
        n_paired=pair.n_paired,
        repeats_a=ra,
        repeats_b=rb,
        total_var=total,
        between_var=pair.between_var,
        noise_var=pair.noise_var,
        within_var=pair.within_var,
        between_share=share,
        cost_per_attempt_usd=rate,
        cost_unknown_attempts=cost.unknown_attempts,
        tasks=tasks,
        repeats=repeats,
        advice="",
    )
    budget.advice = advice_text(budget)
    return budget


def _dollars(b: NoiseBudget, usd: float | None) -> str:
    if usd is None:
        return "cost unknown"
    return f"≈ ${usd:.2f}"


def _lever_text(b: NoiseBudget, lever: Lever) -> str:
    if lever.needed is None and lever.cannot_suffice:  # known not to suffice: said as such
        return f"more {lever.lever} would not do it: {lever.why_not}"
    if lever.needed is None:
        return f"more {lever.lever}: cannot say ({lever.why_not})"
    if lever.enough_already:
        have = b.n_paired if lever.lever == "tasks" else min(b.repeats_a, b.repeats_b)
        what = "paired tasks" if lever.lever == "tasks" else "repeats per task"
        return f"{lever.needed} {what} would do: {have} already"
    added = f"+{lever.attempts_added:,} attempts, {_dollars(b, lever.cost_added_usd)}"
    if lever.lever == "tasks":
        k = f"{b.repeats_a}" if b.repeats_a == b.repeats_b else f"{b.repeats_a} and {b.repeats_b}"
        return f"{lever.needed:,} paired tasks at {k} repeats ({added})"
    return f"{lever.needed} repeats per task on the {b.n_paired} tasks ({added})"


def between_text(between_var: float) -> str:
    """The between-task variance as printed: the method-of-moments estimate is truncated at 0 when run-to-run noise
    explains all the spread of the task differences, and a bare "0.0000" read as a measured zero."""
    return f"{between_var:.4f}" if between_var > 1e-15 else "0 (estimated at 0: run-to-run noise explains the spread)"


def variance_text(b: NoiseBudget) -> str:
    """Where the variance of a task's difference comes from, in words."""
    if b.total_var is None:
        return "variance of a task's difference: needs at least 2 paired tasks"
    if b.between_var is None or b.noise_var is None:
        return (
            f"variance of a task's difference {b.total_var:.4f} (not split: the run-to-run part needs 2+ repeats "
            "per task)"
        )
    share = f" ({b.between_share:.0%} between tasks)" if b.between_share is not None else ""
    return (
        f"variance of a task's difference {b.total_var:.4f}{share}: between tasks {between_text(b.between_var)}, "
        f"run-to-run {b.noise_var:.4f} at the current repeats; {b.judge}"
    )


def advice_text(b: NoiseBudget) -> str:
    """To detect ``delta`` at 80% power: the two levers with their attempts and cost, and the caveats."""
    head = f"To detect a difference of {b.delta:g} ({b.power:.0%} power, two-sided α {b.alpha:g}): "
    levers = f"{_lever_text(b, b.tasks)}; or {_lever_text(b, b.repeats)}"
    notes = []
    if b.cost_per_attempt_usd is not None:
        notes.append(
            f"priced at {cost_text(b.cost_per_attempt_usd)} per attempt (the known mean"
            + (f"; {b.cost_unknown_attempts} attempts reported no cost" if b.cost_unknown_attempts else "")
            + ")"
        )
    elif b.cost_unknown_attempts:
        notes.append("no attempt reported a cost, so the cost stays unknown")
    if b.tasks.needed is not None and not b.tasks.enough_already:
        notes.append(FIXED_SPLIT_NOTE)
    tail = "; ".join(notes)
    return head + levers + (f". {tail[0].upper()}{tail[1:]}" if notes else "") + "."


# ------------------------------------------------------------------------------------------ a sequential launch


class RoundProjection(BaseModel):
    """Before a ``--stop-when-decided`` launch: from an earlier evaluation of the pair, the round by which a true
    difference of ``delta`` would be decided with 80% power, and the attempts and known cost up to it."""

    a: str
    b: str
    delta: float
    max_rounds: int
    n_tasks: int
    round: int | None  # None: not within max_rounds
    attempts: int | None  # of the pair up to that round (both selectors)
    cost_usd: float | None
    max_attempts: int  # of the pair if every round runs
    max_cost_usd: float | None
    text: str


def round_projection(
    pair: PairStats,
    n_tasks: int,
    max_rounds: int,
    spend: float,
    cost: CostRate,
    delta: float = DEFAULT_DELTA,
    batches: int = 1,
) -> RoundProjection | None:
    """The first round ``r`` whose boundary a true difference of ``delta`` clears with 80% power, using the earlier
    evaluation's variance split: ``(c_r + z_0.8) x sqrt((between + within / r) / T) <= delta``, ``c_r`` the
    design's critical value at round r (``core.stats.sequential.schedule.look_boundaries`` spending ``spend``; with
    ``batches`` looks within round 1, a look after ``n`` of its tasks clears when ``(c + z_0.8) x sqrt((between +
    within) / n) <= delta``, and the projection names that look). None when
    the earlier evaluation gives no split (one repeat, no spread, or clustered). A projection, not a promise: it
    takes the earlier figures as the truth."""
    from scipy.stats import norm

    from hermit_tui.core.stats.sequential.schedule import look_boundaries, look_schedule
    from hermit_tui.core.stats.sequential.spending import design_spending

    if pair.between_var is None or pair.within_var is None or pair.n_clusters is not None or n_tasks < 2:
        return None
    batches = max(1, min(batches, n_tasks))
    bounds = look_boundaries(n_tasks, max_rounds, batches, spend, design_spending(batches))
    z = float(norm.ppf(POWER))
    found = at_tasks = None
    for (r, n), c in zip(look_schedule(n_tasks, max_rounds, batches), bounds):
        se = math.sqrt(max(pair.between_var + pair.within_var / r, 0.0) / n)
        if math.isfinite(c) and (c + z) * se <= delta:
            found, at_tasks = r, n
            break
    rate = cost.per_attempt
    most = 2 * n_tasks * max_rounds
    attempts = 2 * (n_tasks * (found - 1) + (at_tasks or 0)) if found is not None else None
    cost_at = attempts * rate if attempts is not None and rate is not None else None
    when = (
        f"after about {at_tasks} of the {n_tasks} tasks of round 1 (of {max_rounds})"
        if at_tasks is not None and at_tasks < n_tasks
        else f"by about round {found} of {max_rounds}"
    )
    where = (
        f"be decided {when} ({attempts:,} attempts of the pair"
        + (f", ≈ ${cost_at:.2f}" if cost_at is not None else ", cost unknown")
        + ")"
        if found is not None
        else f"not be decided within the {max_rounds} rounds at 80% power"
    )
    text = (
        f"{pair.b} vs {pair.a}: a true difference of {delta:g} would {where}; all {max_rounds} rounds: "
        f"{most:,} attempts"
        + (f", ≈ ${most * rate:.2f}" if rate is not None else "")
        + " (projected from the earlier evaluations' variance: between tasks "
        f"{between_text(pair.between_var)}, run-to-run {pair.within_var:.4f} per attempt)"
    )
    return RoundProjection(
        a=pair.a,
        b=pair.b,
        delta=float(delta),
        max_rounds=max_rounds,
        n_tasks=n_tasks,
        round=found,
        attempts=attempts,
        cost_usd=cost_at,
        max_attempts=most,
        max_cost_usd=most * rate if rate is not None else None,
        text=text,
    )


__all__ = [
    "DEFAULT_DELTA",
    "FIXED_SPLIT_NOTE",
    "JUDGE_NOTE",
    "CostRate",
    "Lever",
    "NoiseBudget",
    "RoundProjection",
    "advice_text",
    "between_text",
    "check_delta",
    "noise_budget",
    "round_projection",
    "variance_text",
]
