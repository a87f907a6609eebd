"""The compare screen's stop-when-decided panel: where the sequential test of a candidate against its baseline
stands (the last look's repeated interval against 0 and the margin, its boundary against the observed z, the round
in progress) and a plot of the boundary being approached round by round."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from hermit_tui.core.records.index import Snapshot
from hermit_tui.core.stats.sequential.anytime_looks import is_anytime
from hermit_tui.core.stats.sequential.look import SequentialLook, boundaries_of
from hermit_tui.core.stats.sequential.schedule import round_boundaries
from hermit_tui.core.stats.sequential.text import adjusted_text, boundary_text, decided_where, look_text
from hermit_tui.dashboard.widgets.plots import BoundaryPlot, BoundarySeries

#: a selector's attempts: records, or the store's columns (a snapshot)
Attempts = Sequence[Any] | Snapshot


@dataclass(frozen=True)
class SequentialView:
    """What the panel shows for the pair b - a: the looks so far (read as b - a) and the round in progress."""

    a: str
    b: str
    looks: tuple[SequentialLook, ...]
    max_rounds: int
    alpha: float
    live: bool = False  # the launch is running
    stopped: bool = False  # the launch stopped: every candidate decided
    next_done: int = 0  # attempts of the pair recorded in the round in progress
    next_total: int = 0  # ... of how many

    @property
    def last(self) -> SequentialLook | None:
        return self.looks[-1] if self.looks else None


def view_text(v: SequentialView) -> Text:
    text = Text()
    text.append("Stop when decided ", style="bold")
    look = v.last
    if look is None:
        text.append(
            f"(at most {v.max_rounds} rounds): {v.b} − {v.a} is looked at after each whole round; round 1 is under way."
            if v.live
            else f"(at most {v.max_rounds} rounds): no round checked."
        )
    else:
        state = {
            "improvement": "an improvement",
            "regression": "a regression",
            "equivalent": f"equivalent within ±{look.margin:g}" if look.margin else "equivalent",
        }
        if look.decision in state:
            text.append(f"— {state[look.decision]}, decided {decided_where(look)}", style="bold")
        elif look.decision == "futile":
            text.append(f"— stopped for futility {decided_where(look)}", style="bold")
        else:
            text.append("— undecided", style="bold")
        adjusted = adjusted_text(look)
        if adjusted is not None and look.adjusted_estimate is not None:
            text.append(f"\nestimate {look.adjusted_estimate:+.3f}, {adjusted}")
        text.append(f"\n{boundary_text(look)}")
    if look is not None and is_anytime(look):  # task by task: no rounds to count
        if v.live and not v.stopped and look.stopped_early:
            text.append(f"\n{look_text(look)} looked at; the next tasks are under way")
        elif v.stopped and look.stopped_early:
            why = "stopped for futility" if look.decision == "futile" else "decided"
            text.append(f"\nstopped after {look_text(look)}: every candidate was {why}")
        return text
    if v.live and not v.stopped and v.last is not None and v.last.stopped_early:
        now = v.last.rounds + (0 if v.last.within_first_round else 1)
        text.append(f"\nround {now} under way: {v.next_done} of {v.next_total} attempts of {v.a} and {v.b}")
    elif v.stopped and look is not None and look.stopped_early:
        why = "stopped for futility" if look.decision == "futile" else "decided"
        text.append(f"\nstopped after {look_text(look)}: every candidate was {why}")
    return text


def series(v: SequentialView) -> BoundarySeries:
    return BoundarySeries(
        label=f"{v.b} − {v.a}",
        # the last look's: the clustered design recomputes the boundaries at each look from the information seen
        # (the looks already made keep theirs); a fixed design's are the same at every look
        boundaries=list(boundaries_of(v.looks[-1]) if v.looks else round_boundaries(v.max_rounds, v.alpha)),
        observed=[look.z for look in v.looks],
        unit="look" if v.looks and v.looks[0].batches > 1 else "round",
    )


class SequentialPanel(Vertical):
    """Hidden unless the pair shown is a candidate and its baseline of a stop-when-decided launch."""

    def compose(self) -> ComposeResult:
        yield Static("", id="sequential-text")
        yield BoundaryPlot(id="plot-boundary")

    def show(self, view: SequentialView | None) -> None:
        self.display = view is not None
        if view is None:
            return
        self.query_one("#sequential-text", Static).update(view_text(view))
        plot = self.query_one("#plot-boundary", BoundaryPlot)
        anytime = bool(view.looks) and is_anytime(view.looks[0])  # a confidence sequence has no z boundary to plot
        plot.display = not anytime
        plot.show(series(view) if view.looks and not anytime else None)


@dataclass(frozen=True)
class LiveRounds:
    """A running --stop-when-decided launch's looks at the pair shown (read as b - a), from the store."""

    looks: tuple
    max_rounds: int
    alpha: float
    active: bool
    stopped: bool
    tasks: int


def live_rounds(store, a: str | None, b: str | None) -> LiveRounds | None:
    """The store's looks when (a, b) is the running launch's baseline and one of its candidates (either way)."""
    from hermit_tui.core.stats.sequential.replay import negated

    plan = store.sequential
    if plan is None or a is None or b is None or plan.baseline not in (a, b):
        return None
    cand = b if a == plan.baseline else a
    cols = [store.columns.get(k) for k in (a, b)]
    if cand not in plan.candidates or any(c is None or c.source != "live" for c in cols):
        return None
    looks = list(store.sequential_looks.get(cand, []))
    if cand == a:
        looks = [negated(look) for look in looks]
    return LiveRounds(
        tuple(looks),
        plan.max_rounds,
        plan.each_spend,
        store.run_active,
        store.sequential_stopped,
        store.sequential_tasks,
    )


def with_sequential(
    c: Any,
    summaries: tuple[Any, ...],
    records_a: Attempts,
    records_b: Attempts,
    task_ids: Sequence[str] | None,
    live: LiveRounds | None,
) -> Any:
    """``c`` (the compare screen's ``Comparison``) with the sequential test in place of the fixed design's when the
    pair is a candidate and its baseline of a --stop-when-decided launch: recomputed from the records once the
    summaries say so, else (while the launch runs) the looks it reported."""
    from hermit_tui.core.stats.sequential.replay import pair_looks
    from hermit_tui.core.stats.sequential.text import sequential_pair

    looks, notes = pair_looks(c.a, summaries[0], records_a, c.b, summaries[1], records_b, task_ids)
    view = None
    if looks:
        last = looks[-1]
        view = SequentialView(c.a, c.b, tuple(looks), last.max_rounds, last.boundary_alpha, stopped=last.stopped_early)
    elif live is not None:
        seen = live.looks[-1] if live.looks else None
        after = 1 if seen is None else seen.rounds + (0 if seen.within_first_round else 1)
        view = SequentialView(
            c.a,
            c.b,
            live.looks,
            live.max_rounds,
            live.alpha,
            live=live.active,
            stopped=live.stopped,
            next_done=pair_counts(records_a, after) + pair_counts(records_b, after),
            next_total=2 * live.tasks,
        )
    pair = c.pair
    shown = view.last if view is not None else None
    if pair is not None and shown is not None:
        pair = sequential_pair(pair, shown)
    if pair is not None and notes:
        pair = pair.model_copy(update=dict(warnings=[*pair.warnings, *notes]))
    return replace(c, pair=pair, sequential=view)


def pair_counts(records: Attempts, repeat: int) -> int:
    """Attempts of round ``repeat`` among ``records``."""
    count = getattr(records, "count_repeat", None)  # the store's columns
    if count is not None:
        return count(repeat)
    return sum(1 for r in records if r.repeat == repeat)


__all__ = [
    "LiveRounds",
    "SequentialPanel",
    "SequentialView",
    "live_rounds",
    "pair_counts",
    "series",
    "view_text",
    "with_sequential",
]
