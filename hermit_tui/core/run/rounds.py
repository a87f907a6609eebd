"""Stop when decided, in a launch: the plan made from the launch's options, the barrier between rounds, and the
lines the launch logs after each round. The design and its looks are ``core.stats.looks``'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hermit_tui.core.errors import InputError
from hermit_tui.core.run.launch import check_margin
from hermit_tui.core.stats.looks import RoundTracker, SequentialPlan
from hermit_tui.core.stats.sequential import SequentialLook


def plan_for(selectors: Sequence[Any], baseline: str | None, margin: Any, max_rounds: int) -> SequentialPlan:
    """The plan for ``selectors`` (resolved ``Selector`` objects, in launch order): the baseline is the selector
    typed as (or labelled) ``baseline``, by default ``none`` when it is there, else the first one."""
    margin = check_margin(margin)
    if len(selectors) < 2:
        raise InputError("--stop-when-decided compares selectors with a baseline: give at least two --adapter")
    labels = [s.label for s in selectors]
    if baseline is None:
        base = "none" if "none" in labels else labels[0]
    else:
        text = str(baseline).strip()
        found = [s.label for s in selectors if text in (s.text, s.label)]
        if not found:
            raise InputError(f"--baseline {text[:60]!r} is not among the selectors ({', '.join(labels)})")
        base = found[0]
    return SequentialPlan(
        baseline=base, candidates=[lab for lab in labels if lab != base], max_rounds=max_rounds, margin=margin
    )


def round_line(r: int, plan: SequentialPlan, looks: Sequence[SequentialLook]) -> str:
    """What a launch logs when round ``r`` is checked: each candidate's decision against the baseline."""
    parts = []
    for look in looks:
        ci = "" if look.ci_low is None else f" (repeated 95% CI {look.ci_low:+.3f} to {look.ci_high:+.3f})"
        parts.append(f"{look.candidate} vs {plan.baseline}: {look.decision}{ci}")
    return f"round {r} of {plan.max_rounds}: " + "; ".join(parts)


def decided_line(r: int, plan: SequentialPlan) -> str:
    return (
        f"every candidate is decided after round {r} of {plan.max_rounds}: no further round starts (the "
        f"summaries say repeats {r})"
    )


class RoundGate:
    """The runner's round barrier: an attempt of round ``r`` starts only once round ``r - 1`` is checked, and none
    starts once every candidate is decided. Attempts within a round run concurrently; at a round's end the slots
    wait for its last attempts (the price of never paying for a round that turns out not to be needed).

    ``remaining[r]``: the attempts of round ``r`` scheduled and not yet recorded (a resume's recorded rounds have 0).
    Event-loop only, except :meth:`halt`, which the runner calls through ``call_soon_threadsafe``."""

    def __init__(
        self, tracker: RoundTracker, records: Mapping[str, Mapping[tuple[str, int], Any]], remaining: dict[int, int]
    ):
        import asyncio

        self.tracker = tracker
        self.records = records
        self.remaining = dict(remaining)
        self.stopped = False  # every candidate decided: the launch ends with the rounds checked
        self.halted = False  # cancelled, or the cost cap: waiting attempts give up
        self._events = {r: asyncio.Event() for r in range(0, tracker.plan.max_rounds + 1)}
        self._events[0].set()

    @classmethod
    def for_schedule(
        cls,
        plan: SequentialPlan,
        task_ids: Sequence[str],
        records: Mapping[str, Mapping[tuple[str, int], Any]],
        repeats: Sequence[int],
    ) -> RoundGate:
        """The gate of a launch whose scheduled attempts are of rounds ``repeats`` (one entry per attempt)."""
        remaining: dict[int, int] = {}
        for r in repeats:
            remaining[r] = remaining.get(r, 0) + 1
        return cls(RoundTracker(plan, task_ids), records, remaining)

    @property
    def rounds_run(self) -> int:
        """What a sequential summary says for ``repeats``: the rounds run once the launch stopped when decided,
        else the maximum (a running or unfinished launch)."""
        return self.tracker.rounds if self.stopped else self.tracker.plan.max_rounds

    async def admit(self, r: int) -> bool:
        """Wait until round ``r - 1`` is checked; False when the attempt must not start."""
        while not (self.stopped or self.halted) and self.tracker.rounds < r - 1:
            await self._events[r - 1].wait()
        return not (self.stopped or self.halted)

    def finished(self, r: int) -> list[list[SequentialLook]]:
        """An attempt of round ``r`` was recorded: check the rounds that are now complete (their looks)."""
        self.remaining[r] = self.remaining.get(r, 0) - 1
        return self.advance()

    def advance(self) -> list[list[SequentialLook]]:
        """Check every complete round in turn (on their first look at a launch: a resume's recorded rounds)."""
        out = []
        tracker = self.tracker
        while not tracker.finished and not self.halted:
            r = tracker.rounds + 1
            if self.remaining.get(r, 0) > 0 or not tracker.complete(self.records, r):
                break
            out.append(tracker.check(self.records))
            self._events[r].set()
        if tracker.decided:
            self.stopped = True
            self._wake()
        return out

    def halt(self) -> None:
        self.halted = True
        self._wake()

    def _wake(self) -> None:
        for event in self._events.values():
            event.set()


__all__ = ["RoundGate", "decided_line", "plan_for", "round_line"]


def projections(run_dir: Any, plan: SequentialPlan, test_ids: Sequence[str], threshold: float = 1.0) -> list[str]:
    """Before a launch: per candidate, the round by which its earlier evaluation's variance says a true difference
    of ``core.stats.noise.DEFAULT_DELTA`` (and of the difference that evaluation saw, when larger) would be decided,
    with the attempts and known cost up to it (``core.stats.noise.round_projection``); or what cannot be projected."""
    from hermit_tui.core.records.folders import list_evaluations
    from hermit_tui.core.records.scores import tabulate
    from hermit_tui.core.stats.figures import pair_stats
    from hermit_tui.core.stats.noise import DEFAULT_DELTA, CostRate, round_projection

    stored = {s.label: s for s in list_evaluations(run_dir, include_archived=False)}
    every = 2 * len(test_ids) * plan.max_rounds
    lines = []
    tables, costs = {}, {}
    for label in [plan.baseline, *plan.candidates]:
        if label in stored:
            table = stored[label].load_table()
            try:
                tables[label] = tabulate(table.attempt_columns(list(test_ids)), list(test_ids), threshold)
                n = table.n
                unknown = table.unknown_costs()
                costs[label] = CostRate(
                    known_usd=table.known_cost(), known_attempts=n - unknown, unknown_attempts=unknown
                )
            finally:
                table.close()
    for b in plan.candidates:
        a = plan.baseline
        if a not in tables or b not in tables:
            lines.append(
                f"{b} vs {a}: no earlier evaluation of both to project from; all {plan.max_rounds} rounds: "
                f"{every:,} attempts of the pair"
            )
            continue
        pair = pair_stats(a, tables[a], b, tables[b], list(test_ids), threshold)
        deltas = [DEFAULT_DELTA]
        if pair.mean_diff is not None and abs(pair.mean_diff) > DEFAULT_DELTA:
            deltas.append(round(abs(pair.mean_diff), 3))
        made = [
            round_projection(pair, len(test_ids), plan.max_rounds, plan.each_spend, costs[a] + costs[b], d)
            for d in deltas
        ]
        if made[0] is None:
            lines.append(
                f"{b} vs {a}: the earlier evaluations give no variance split to project from (they need 2+ repeats "
                f"and some spread); all {plan.max_rounds} rounds: {every:,} attempts of the pair"
            )
            continue
        lines += [p.text for p in made if p is not None]
    return lines
