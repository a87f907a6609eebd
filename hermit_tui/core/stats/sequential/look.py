"""One look of a stop-when-decided launch, of either design: the record (:class:`SequentialLook`, the keys of
summary.json's ``sequential`` entry and the figures behind the decision), the decision an interval gives
(:func:`decide`), the critical values of the look's design (:func:`boundaries_of`), and how the candidates'
decisions read once a launch stops (:func:`stopped_how`, :func:`stop_state`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

from hermit_tui.core.stats.sequential.schedule import look_boundaries, round_boundaries
from hermit_tui.core.stats.sequential.spending import ALPHA, Spending

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


OLD_METHOD = (  # summaries written before issue 25, item 4: the whole alpha spent by every candidate
    "group-sequential repeated confidence intervals, Lan-DeMets O'Brien-Fleming-type alpha spending over the "
    "planned rounds (Jennison & Turnbull 2000, ch. 7 and 9)"
)


Decision = Literal["improvement", "regression", "equivalent", "undecided", "futile"]


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


def boundaries_of(look: SequentialLook) -> tuple[float, ...]:
    """The critical values of every look of ``look``'s design (what a boundary plot draws; the clustered design's
    as projected at that look)."""
    if look.design_bounds is not None:
        return look.design_bounds
    total = look.total_tasks or 1
    if look.batches <= 1 or look.total_tasks is None:
        return round_boundaries(look.max_rounds, look.boundary_alpha, look.spending)
    return look_boundaries(total, look.max_rounds, look.batches, look.boundary_alpha, look.spending)


def decide(low: float, high: float, margin: float | None) -> Decision:
    """The decision an interval (or a confidence sequence) for b - a gives: above 0, below 0, within the margin."""
    if low > 0:
        return "improvement"
    if high < 0:
        return "regression"
    if margin is not None and -margin < low and high < margin:
        return "equivalent"
    return "undecided"


AT_STOPPING = "as observed at stopping, which stopping early tends to overstate"


def stopped_how(decisions: Iterable[str | None]) -> str:
    """How a launch that stopped before its end stopped, from its candidates' last decisions: "stopped for
    futility" when every one of them was futile, else "stopped when decided"."""
    seen = list(decisions)
    return "stopped for futility" if seen and all(d == "futile" for d in seen) else "stopped when decided"


def stop_state(candidates: int, futile: int) -> str:
    """What a launch that stopped says of its ``candidates``, ``futile`` of them stopped for futility (no decision
    in reach), the others decided."""
    if not futile:
        return "every candidate is decided"
    if futile < candidates:
        return f"every candidate is decided or stopped for futility ({futile} of {candidates})"
    return f"{'the candidate is' if candidates == 1 else 'every candidate is'} stopped for futility"


def entry_stopped_how(entry: Any) -> str:
    """:func:`stopped_how` of a recorded ``sequential`` entry: its candidates' decisions (a baseline's entry lists
    them), else its own."""
    return stopped_how(list(entry.candidates.values()) if entry.candidates else [entry.decision])


__all__ = [
    "BATCH_METHOD",
    "METHOD",
    "OLD_METHOD",
    "boundaries_of",
    "SequentialLook",
    "AT_STOPPING",
    "entry_stopped_how",
    "stop_state",
    "stopped_how",
]
