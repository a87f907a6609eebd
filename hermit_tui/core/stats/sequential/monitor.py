"""One candidate against the baseline over a launch (:class:`SequentialMonitor`): each look's figures
(:mod:`.repeated`), the memory of the looks before it, the futility rule and the inference at stopping
(:mod:`.stopping`).

The intervals of all rounds hold the true difference together with probability at least ``1 - a``, so any
rule that stops on what they show keeps its error rates:

- **improvement** when the interval lies above 0, **regression** when below 0 (improvement and regression take
  precedence), **equivalent** (with a margin ``M``) when it lies inside ``(-M, M)``; otherwise **undecided**;
- the first decision is kept (the candidate stopped there), and the interval reported is the intersection of the
  intervals of every round so far (still a valid interval, Jennison & Turnbull 2000, sec. 9.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hermit_tui.core.stats.sequential.look import SequentialLook, boundaries_of, decide
from hermit_tui.core.stats.sequential.repeated import applied_bounds, sequential_look
from hermit_tui.core.stats.sequential.schedule import design_units, look_schedule
from hermit_tui.core.stats.sequential.spending import ALPHA, Spending, candidate_spend
from hermit_tui.core.stats.sequential.stopping import (
    FUTILITY_MIN_ATTEMPTS,
    conditional_power,
    futility_regions,
    ordered_inference,
    stagewise_inference,
)

ADJUSTED_KEYS = ("adjusted_estimate", "adjusted_low", "adjusted_high", "adjusted_p")


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
            cs = applied_bounds(boundaries_of(look), schedule, design, width, start=k + 1)
            cp = conditional_power(design, cs, k, z)
            look = look.model_copy(update=dict(conditional_power=cp))
            if cp < self.futility:
                look = look.model_copy(update=dict(decision="futile", decided_at=look.rounds, decided_tasks=g))
        if look.decision == "undecided" and k < total_looks - 1:
            return look
        se = sd / math.sqrt(g)
        if self.futility is None:  # the stagewise ordering of the looks run (their continuation regions: intervals)
            info = _information(look, units[: k + 1], total, self.max_rounds, self.batches, se)
            cs = applied_bounds(boundaries_of(look)[:k], schedule, info, width)
            est, low, high, p = stagewise_inference(info, cs, z, lo=-width, hi=width)
        else:  # futility stops are outcomes too: the sample-mean ordering over the whole design, as the launch runs it
            info = _information(look, units, total, self.max_rounds, self.batches, se, at=k)
            cs = applied_bounds(boundaries_of(look), schedule, info, width)
            design = [u / units[k] / se**2 for u in units]  # what the rule assumed (see the futility rule above)
            first = next(j for j, u in enumerate(units) if u * total >= FUTILITY_MIN_ATTEMPTS or j == len(units) - 1)
            rule = applied_bounds(boundaries_of(look), schedule, design, width, start=first + 1)
            inner = futility_regions(design, rule, self.futility, first)
            est, low, high, p = ordered_inference(info, cs, inner, z * se, lo=-width, hi=width)
        return look.model_copy(update=dict(adjusted_estimate=est, adjusted_low=low, adjusted_high=high, adjusted_p=p))


__all__ = ["SequentialMonitor"]
